"""Bad input through `llc-bench run` (in-process): one error line, no traceback, nothing
written; Ctrl-C and unexpected errors as one line (--debug shows the traceback); a sweep
survives a failed job; cache hits leave no Hydra directory."""

import json
import os

import pytest
from conftest import REPO, compose_run, llc, one_error

from llc_bench import cli
from llc_bench.errors import ConfigError
from llc_bench.experiment import runner
from llc_bench.models.linear import LinearSVMClassifier
from llc_bench.store.results import ResultsStore


@pytest.fixture(autouse=True)
def _isolated(monkeypatch):
    monkeypatch.delenv("LLC_BENCH_DATA", raising=False)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)


def where(tmp_path):
    return [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
            f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false"]


def written(tmp_path):
    """Records, data-cache files and Hydra job files left behind."""
    return sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")
                  if p.is_file() and p.name != "file")


@pytest.mark.parametrize("overrides, words", [
    (["model=llsvm", "coding.n_anchors=0"], ["coding.n_anchors=0", "int >= 1"]),
    (["model=llsvm", "coding.k=0"], ["coding.k=0", "int >= 1"]),
    (["model=sapl", "coding.n_anchors=50", "trainer.kmeans_sample=20"],
     ["coding.n_anchors=50", "trainer.kmeans_sample=20 rows", "at most 20"]),
    (["model=llsvm", "trainer.lambda_=-1"], ["trainer.lambda_=-1", "finite float in [1e-12"]),
    (["model=llsvm", "trainer.epochs=-1"], ["trainer.epochs=-1", "int >= 0"]),
    (["model=llsvm", "trainer.lambda_grid=[0,1]"], ["trainer.lambda_grid=[0,1]", "[1e-12"]),
    (["model=llsvm", "trainer.cv_folds=1"], ["trainer.cv_folds=1", ">= 2"]),
    (["model=llsvm", "trainer.sgd_dtype=float16"], ["trainer.sgd_dtype=float16", "float32"]),
    (["model=sapl", "coding.beta=-1"], ["coding.beta=-1", "> 0", "'auto'"]),
    (["model=llsvm", "coding.power=-1"], ["coding.power=-1", "> 0"]),
    (["model=llsvm", "trainer.learn_anchors=true"], ["trainer.learn_anchors", "soft_knn"]),
    (["model=jo", "trainer.t0=0"], ["trainer.t0=0", "calibrate"]),
    (["model=ldkl", "trainer.depth=-1"], ["trainer.depth=-1", "[0, 20]"]),
    (["model=nystroem", "trainer.n_components=0"], ["trainer.n_components=0", "int >= 1"]),
    (["model=ml3", "trainer.n_models=0"], ["trainer.n_models=0", "int >= 1"]),
    (["model=ml3", "trainer.p=nan"], ["trainer.p=nan", ">= 1"]),
    (["model=ml3", "trainer.p=inf"], ["trainer.p=inf", "finite number"]),
    (["dataset.max_train=nan"], ["dataset.max_train=nan", "finite number"]),
    (["model=kernel", "trainer.gamma=-1"], ["trainer.gamma=-1", "> 0"]),
    (["model=occ_peg_g", "trainer.intercept=shared"], ["trainer.intercept", "liblinear"]),
    (["model=occ_lib_c", "coding.n_basis=0"], ["coding.n_basis=0"]),
    (["model=svm_knn", "trainer.K_grid=[0,5]"], ["trainer.K_grid=[0,5]", "non-empty list"]),
    (["model=csvm", "trainer.n_clusters=0"], ["trainer.n_clusters=0"]),
    (["model=lcc_svm_lcc", "trainer.C_grid=[]"], ["trainer.C_grid=[]", "non-empty"]),
    (["model=lcc_lasso", "coding.mu=0"], ["coding.mu=0", "> 0"]),
    (["trainer.C=nan"], ["trainer.C=nan", "must be a finite float > 0 or null"]),
    (["trainer.C=inf"], ["trainer.C=inf", "finite"]),
    (["trainer.C=0"], ["trainer.C=0", "> 0"]),
    (["trainer.C=abc"], ["trainer.C=abc"]),
    (["trainer.bias=nan"], ["trainer.bias=nan", "finite float"]),
    (["seed=abc"], ["seed=abc", "integer"]),
    (["seed=-1"], ["seed=-1", "integer"]),
    (["seed=1.5"], ["seed=1.5"]),
    (["dataset=file"], ["dataset.train must be set", "dataset.train="]),
    (["trainer.foo=1"], ["trainer.foo"]),
    (["+trainer.foo=1"], ["trainer.foo is not a parameter"]),
    (["model=nope"], ["no such choice", "model=nope"]),
    (["seed=["], ["seed=["]),
])
def test_bad_value_is_one_line_before_any_data_is_read(tmp_path, capsys, overrides, words):
    code, _, err = llc(capsys, "run", *where(tmp_path), *overrides)
    line = one_error(code, err, *words)
    assert "n_anchors" not in line or "n_anchors" in " ".join(overrides)  # csvm: n_clusters
    assert written(tmp_path) == []  # no record, no parsed-data cache, no Hydra directory


def test_liblinear_rejects_its_parameters_in_words():
    """Values that reach LIBLINEAR unchecked (nan, inf, 0) get a ValueError naming them,
    not LIBLINEAR's `Error: b'C <= 0'` (or a silent fit for nan)."""
    import numpy as np

    from llc_bench.models.liblinear_fit import fit_liblinear

    X, y = np.eye(4), np.array([0, 1, 0, 1])
    for C in (0.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"C=.*finite float > 0"):
            fit_liblinear(X, y, C=C)
    for bad in ({"C": 0.0}, {"C": float("nan")}, {"cv_folds": 1}, {"solver": "x"}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            LinearSVMClassifier(**bad).fit(X, y)


def test_every_model_preset_validates_with_every_tuned_preset(tmp_path):
    """The constraints accept every shipped configuration."""
    conf = REPO / "conf"
    pairs = [(m.stem, "banana") for m in (conf / "model").glob("*.yaml")]
    for tuned in (conf / "tuned").glob("*.yaml"):
        model = next(m.stem for m in (conf / "model").glob("*.yaml")
                     if tuned.stem.startswith(m.stem + "_")
                     and (conf / "dataset" / f"{tuned.stem[len(m.stem) + 1:]}.yaml").is_file())
        pairs.append((model, tuned.stem[len(model) + 1:]))
    for model, dataset in pairs:
        runner.build_estimator(compose_run(f"model={model}", f"dataset={dataset}",
                                           tmp_path=tmp_path))


def test_results_dir_that_is_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("not a directory")
    code, _, err = llc(capsys, "run", *where(tmp_path), f"results_dir={tmp_path / 'file'}")
    one_error(code, err, "results_dir=", "not a directory")
    assert written(tmp_path) == []


def test_results_dir_not_writable(tmp_path, monkeypatch):
    store = ResultsStore(tmp_path / "results")
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # root may write anywhere
    with pytest.raises(ConfigError, match="not writable"):
        store.check_writable()


def test_ctrl_c_is_one_line_exit_130(tmp_path, capsys, monkeypatch):
    def interrupted(cfg, output_dir=None, echo=print, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", interrupted)
    code, _, err = llc(capsys, "run", *where(tmp_path))
    assert code == 130 and err.strip() == "llc-bench: error: interrupted"


def test_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    code, _, err = llc(capsys, "run", "--debug", *where(tmp_path), "trainer.C=nan")
    assert code == 1 and "Traceback" in err and "llc-bench: error: trainer.C=nan" in err
    assert cli.DEBUG_ENV not in os.environ
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    code, _, err = llc(capsys, "run", *where(tmp_path), "seed=abc")
    assert code == 1 and "Traceback" in err


def test_unexpected_exception_is_one_line_naming_its_type(tmp_path, capsys, monkeypatch):
    def broken(cfg, output_dir=None, echo=print, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(runner, "run_experiment", broken)
    code, _, err = llc(capsys, "run", *where(tmp_path))
    one_error(code, err, "ZeroDivisionError", "--debug")


def test_sweep_runs_every_job_and_lists_the_failed_ones(tmp_path, capsys):
    code, out, err = llc(capsys, "run", "-m", *where(tmp_path), "trainer.C=1.0",
                         "seed=0,-1,2")
    assert code == 1 and "Traceback" not in err
    records = [json.loads(p.read_text())
               for p in (tmp_path / "results" / "runs").glob("*.json")]
    assert sorted(r["seed"] for r in records) == [0, 2]
    summary = err[err.index("1 job(s) of the sweep failed"):]
    assert "job 1: seed=-1: must be an integer" in summary and "[job: " in summary
    [error_file] = (tmp_path / "results" / "hydra").rglob(cli.FAILED_JOB_FILE)
    assert "seed=-1" in error_file.read_text()


def test_cache_hits_leave_no_hydra_directory(tmp_path, capsys):
    args = ("run", *where(tmp_path), "trainer.C=1.0")
    assert llc(capsys, *args)[0] == 0
    hydra_files = sorted((tmp_path / "results" / "hydra").rglob("*"))
    code, out, _ = llc(capsys, *args)
    assert code == 0 and out.strip().endswith("(cached)")
    assert sorted((tmp_path / "results" / "hydra").rglob("*")) == hydra_files
    code, out, _ = llc(capsys, "run", "-m", *where(tmp_path), "trainer.C=1.0", "seed=0")
    assert code == 0 and "(cached)" in out
    assert sorted((tmp_path / "results" / "hydra").rglob("*")) == hydra_files
