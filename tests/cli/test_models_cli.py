"""`llc-bench models [NAME]`: the presets and their parameters, generated from the configs,
the estimators' declared constraints and their docstrings."""


import pytest
from conftest import REPO

from llc_bench.cli import main
from llc_bench.experiment.runner import estimator_class
from llc_bench.models._validation import describe
from llc_bench.selection.presets import compose_preset, preset_info, preset_names


def test_models_lists_every_preset_with_its_trainer_and_coding(capsys):
    main(["models"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "trainer", "coding", "what", "it", "is"]
    rows = {line.split()[0]: line.split()[1:3] for line in lines[1:-1]}
    assert sorted(rows) == sorted(p.stem for p in (REPO / "conf" / "model").glob("*.yaml"))
    assert rows["llsvm"] == ["llc_sgd", "inverse_distance"] and rows["linear"][0] == "liblinear"
    assert "LL-SVM (Ladicky & Torr, ICML 2011)" in next(x for x in lines if x.startswith("llsvm "))


def test_models_name_shows_defaults_ranges_searches_descriptions_and_the_paper(capsys):
    main(["models", "llsvm"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("llsvm: LL-SVM (Ladicky & Torr, ICML 2011)")
    assert "paper      Ladicky & Torr, ICML 2011" in lines
    anchors = next(x for x in lines if x.startswith("coding.n_anchors "))
    assert anchors.split()[1] == "100" and "an int >= 1" in anchors
    assert "{1, 4, 8, 16, 32, 64, 100, 200}" in anchors                   # tune=auto's space
    assert "m, the number of anchors" in anchors                           # the docstring
    lam = next(x for x in lines if x.startswith("trainer.lambda_ "))
    assert lam.split()[1] == "0.0001"   # the model's default, not banana's preset (1e-05)
    assert "a finite float in [1e-12, 1e+12]" in lam
    t0 = next(x for x in lines if x.startswith("trainer.t0 "))
    assert "null = calibrate" in t0                                        # the YAML comment
    assert "llc-bench run model=llsvm coding.n_anchors=VALUE" in out


def test_the_range_shown_is_the_one_a_run_enforces(tmp_path, capsys):
    main(["models", "llsvm"])
    shown = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("coding.k "))
    with pytest.raises(SystemExit):
        main(["run", "model=llsvm", "coding.k=0", f"results_dir={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert err == "llc-bench: error: coding.k=0: must be an int >= 1"
    assert f"  {err.rsplit('must be ', 1)[1]}  " in shown


def _run_error(capsys, tmp_path, *overrides) -> str:
    with pytest.raises(SystemExit):
        main(["run", *overrides, f"results_dir={tmp_path}"])
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    return err


def test_a_huge_n_anchors_is_refused_naming_it_and_agreeing_with_models(tmp_path, capsys):
    """`llc-bench models llsvm` says n_anchors is capped at the training rows and at most
    kmeans_sample; a run asked for 1e9 anchors says which of the two stops it, naming
    coding.n_anchors and the way out (1e9 itself is a float: the integer is named)."""
    main(["models", "llsvm"])
    shown = next(x for x in capsys.readouterr().out.splitlines()
                 if x.startswith("coding.n_anchors "))
    assert "capped at the number of training rows; at most kmeans_sample" in shown
    err = _run_error(capsys, tmp_path, "model=llsvm", "coding.n_anchors=1e9")
    assert err == ("llc-bench: error: coding.n_anchors=1000000000.0: must be an int >= 1 (a "
                   "number written with an exponent or a decimal point is read as a float: "
                   "write 1000000000)")
    err = _run_error(capsys, tmp_path, "model=llsvm", "coding.n_anchors=1000000000")
    assert err == ("llc-bench: error: coding.n_anchors=1000000000: more anchors than the "
                   "trainer.kmeans_sample=20000 rows k-means places them on: at most 20000, or "
                   "trainer.kmeans_sample=null to place them on every training row (n_anchors "
                   "is capped at the number of training rows)")


def test_n_anchors_above_the_training_rows_is_capped_and_said(tmp_path, capsys):
    """With no k-means sample (or a model without one), more anchors than training rows run
    on as many anchors as rows, as `llc-bench models` promises, and the run says so."""
    main(["run", "model=lcc_svm_lcc", "dataset=banana", "dataset.max_train=60", "tune=off",
          "coding.n_anchors=1000000000", "trainer.C=1", f"results_dir={tmp_path}",
          f"data.home={tmp_path / 'home'}", f"data.mirrors=[{REPO / 'datasets'}]",
          "data.download=false"])
    captured = capsys.readouterr()
    assert ("llc-bench: warning: coding.n_anchors=1000000000: the model has 60 anchors "
            "(capped at the number of training rows, 60)") in captured.err


def test_a_baseline_shows_the_search_tune_auto_runs_for_it(capsys):
    main(["models", "linear"])   # a baseline: tune=auto searches its grid's range
    out = capsys.readouterr().out
    assert "tune=auto searches" in out and "paper      Fan et al., 2008" in out


def test_an_unknown_preset_is_a_one_line_error(capsys):
    with pytest.raises(SystemExit):
        main(["models", "llsvn"])
    err = capsys.readouterr().err.strip()
    assert err == ("llc-bench: error: unknown model preset 'llsvn' (did you mean llsvm?) "
                   "(see `llc-bench models`)")


@pytest.mark.parametrize("name", preset_names())
def test_every_key_of_every_preset_has_its_range_a_description_and_the_preset_a_paper(name):
    info = preset_info(name)
    config, _ = compose_preset(name)
    keys = [f"{group}.{key}" for group in ("coding", "trainer")
            for key in (config.get(group) or {}) if key not in ("name", "_target_")]
    rows = {row["key"]: row for row in info["rows"]}
    assert [key for key in rows if key != "coding"] == keys
    constraints = estimator_class(config["trainer"]["name"])._parameter_constraints
    for key in keys:
        assert rows[key]["allowed"] == describe(constraints[key.split(".", 1)[1]], none="null")
        assert rows[key]["description"], key
    assert info["paper"]
