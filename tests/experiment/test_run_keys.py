"""The keys of a run config: an unknown key (own-file options, run keys) is refused before
anything is written, with a did-you-mean; every bad choice of a sweep list is named before
any job runs."""

from __future__ import annotations

import pytest
from conftest import llc, one_error, refused, where, written

pytestmark = pytest.mark.usefixtures("cli_env")


# --- unknown keys: refused everywhere, with a did-you-mean ------------------------------------

@pytest.mark.parametrize("overrides, words", [
    (["+dataset.max_trian=50"], ["dataset.max_trian", "did you mean dataset.max_train?"]),
    (["+dataset.tset=x.csv"], ["dataset.tset", "did you mean dataset.test?"]),
    (["+dataset.categorial=onehot"], ["dataset.categorial", "not an option of dataset=file",
                                       "did you mean dataset.categorical?"]),
    (["+dataset.labels={postive:[1]}"], ["dataset.labels.postive", "dataset.labels.positive"]),
])
def test_unknown_own_file_key_is_refused(tmp_path, capsys, csv_file, overrides, words):
    refused(tmp_path, capsys, csv_file, *overrides, words=words)


@pytest.mark.parametrize("overrides, words", [
    (["+model.foo=1"], ["model.foo", "not a key of the run config", "model has: name"]),
    (["+foo=1"], ["foo is not a key of the run config"]),
    (["+data.hom=/tmp"], ["data.hom", "did you mean data.home?"]),
    (["+n_anchors=20"], ["n_anchors", "did you mean coding.n_anchors?"]),
    (["+lambda_=1e-3"], ["did you mean trainer.lambda_?"]),
    (["+sed=3"], ["did you mean seed?"]),
    (["+history.tset=true"], ["history.tset", "did you mean history.test?"]),
    (["+dataset.max_trian=50"], ["dataset.max_trian", "did you mean dataset.max_train?"]),
    (["+dataset.split.tset_fraction=0.5"], ["dataset.split.tset_fraction",
                                            "dataset.split.test_fraction"]),
    (["+dataset.sep=semicolon"], ["dataset.sep", "dataset=file"]),
    (["+dataset.validation=1.5"], ["validation", "1.5"]),
])
def test_unknown_run_key_is_refused_before_anything_is_written(tmp_path, capsys, overrides,
                                                               words):
    code, _, err = llc(capsys, "run", *where(tmp_path), *overrides)
    one_error(code, err, *words)
    assert written(tmp_path) == []


def test_tune_keys_are_left_to_the_tune_code(tmp_path, capsys):
    """``tune`` is a known group (its keys are checked by selection/tune.py)."""
    from llc_bench.experiment.keys import check_run_keys

    check_run_keys({"tune": {"mode": "off", "anything": 1}, "seed": 0})


# --- a bad name inside a sweep list -----------------------------------------------------------

def test_every_bad_choice_of_a_sweep_is_named_before_any_job_runs(tmp_path, capsys):
    code, _, err = llc(capsys, "run", "-m", "dataset=banana,nodata",
                       "model=linear,nosuch,llsvm,sapll", *where(tmp_path))
    line = one_error(code, err, "dataset=nodata", "model=nosuch", "model=sapll",
                     "did you mean sapl?")
    assert "banana" not in line and written(tmp_path) == []
