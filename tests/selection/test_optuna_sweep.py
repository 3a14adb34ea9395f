"""Tuning with Hydra's Optuna sweeper: a seeded 4-trial study on banana scored on held-out
training rows, stored beside the results, and its winner written as a tuned preset."""


import pytest
from conftest import REPO
from omegaconf import OmegaConf

from llc_bench.cli import main
from llc_bench.selection import tuning
from llc_bench.store.query import records_frame

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
optuna = pytest.importorskip("optuna")

SMALL = ["coding.n_anchors=20", "trainer.epochs=2", "dataset.max_train=600"]  # fast trials


def _sweep(results, *extra):
    main(["run", "-m", "model=llsvm", "dataset=banana", "+search=llsvm", *extra, *SMALL,
          f"results_dir={results}", f"data.mirrors=[{REPO / 'datasets'}]",
          "data.download=false"])


def _trials(results):
    from llc_bench.selection.tuning import find_study, storage_url

    study = optuna.load_study(study_name=find_study(results, "llsvm", "banana"),
                              storage=storage_url(results))
    return study, [t for t in study.trials if t.state.name == "COMPLETE"]


def test_four_trial_study_and_its_winner(tmp_path, capsys):
    from llc_bench.selection.tuning import write_tuned

    results = tmp_path / "results"
    _sweep(results, "+dataset.validation=0.25", "hydra.sweeper.n_trials=4")
    study, trials = _trials(results)
    assert len(trials) == 4
    frame = records_frame(results)
    assert len(frame) == 4                                   # every trial is a stored run
    assert (frame["n_test"] == 150).all() and (frame["n_train"] == 450).all()  # 25% held out
    assert set(frame["dataset.validation"].astype(str)) == {"0.25"}
    assert sorted(t.value for t in trials) == sorted(frame["test_accuracy"])  # objective
    assert study.best_value == frame["test_accuracy"].max()

    out = write_tuned(results, "llsvm", "banana", out=tmp_path / "tuned" / "llsvm_banana.yaml")
    text = out.read_text()
    assert text.startswith("# @package _global_\n# Chosen by Optuna (TPESampler")
    assert f"validation accuracy {100 * study.best_value:.2f}%" in text
    assert "+dataset.validation=0.25" in text and "conf/search/llsvm.yaml" in text
    preset = OmegaConf.to_container(OmegaConf.load(out))
    best = study.best_params
    assert preset["trainer"]["lambda_"] == best["trainer.lambda_"]
    assert preset["coding"] == {"k": best["coding.k"], "power": best["coding.power"],
                                "anchor_method": best["coding.anchor_method"]}

    # the same through the command line: `llc-bench tune MODEL DATASET --from-sweep`
    capsys.readouterr()
    cli_out = tmp_path / "tuned" / "cli.yaml"
    main(["tune", "llsvm", "banana", "--from-sweep", "--results-dir", str(results),
          "--out", str(cli_out)])
    assert cli_out.read_text() == text
    assert f"wrote {cli_out}" in capsys.readouterr().out
    assert "llc-bench tune llsvm banana --seed 0 --from-sweep" in text
    # the header says the trials saw a subsample, and its commands give the sweep's overrides
    # (no path of this machine): the --from-sweep one names this very study
    assert "# On a seeded subsample of 600 training rows (dataset.max_train=600)" in text
    assert "data.mirrors" not in text and str(tmp_path) not in text
    for line in (line for line in text.splitlines() if line.startswith("#   llc-bench")):
        assert all(o in line for o in SMALL) and "+dataset.validation=0.25" in line
    from_sweep = next(line for line in text.splitlines() if "--from-sweep" in line)
    given = [o for o in from_sweep.split() if "=" in o]
    assert tuning.sweep_study_name("llsvm", "banana", 0, given) == study.study_name

    # seeded: the same command on a fresh store proposes the same first trials
    again = tmp_path / "again"
    _sweep(again, "+dataset.validation=0.25", "hydra.sweeper.n_trials=2")
    assert [t.params for t in _trials(again)[1]] == [t.params for t in trials[:2]]
    capsys.readouterr()

    # tuning without held-out rows would score on the test set: refused before any trial
    with pytest.raises(SystemExit):
        _sweep(tmp_path / "no_validation", "hydra.sweeper.n_trials=1")
    err = capsys.readouterr().err.strip()
    assert err.startswith("llc-bench: error: tuning with the Optuna sweeper needs "
                          "+dataset.validation") and "\n" not in err
    assert not (tmp_path / "no_validation" / "optuna.db").exists()


def test_a_sweep_on_own_files_scores_held_out_training_rows(tmp_path, capsys):
    """On own files the trials score the held-out quarter of the training
    rows, never the test file."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    lines = ["a,b,c,label"] + [f"{a!r},{b!r},{c!r},{'yes' if a + b > 0 else 'no'}"
                               for a, b, c in X.tolist()]
    train = tmp_path / "train.csv"
    train.write_text("\n".join(lines) + "\n")
    test = tmp_path / "test.csv"
    test.write_text("\n".join(lines[:41]) + "\n")
    results = tmp_path / "results"
    main(["run", "-m", "model=linear", "dataset=file", f"dataset.train={train}",
          f"dataset.test={test}", "+search=linear", "+dataset.validation=0.25",
          "hydra.sweeper.n_trials=2", f"results_dir={results}", "progress=off"])
    frame = records_frame(results)
    assert len(frame) == 2
    assert (frame["n_test"] == 50).all() and (frame["n_train"] == 150).all()
    assert set(frame["dataset.validation"].astype(str)) == {"0.25"}
    capsys.readouterr()


def test_a_sweep_whose_trials_all_fail_lists_them_and_exits_1(tmp_path, capsys):
    """No trial completes: the sweeper has no best trial to report, and the command lists
    the failed jobs (one line each) instead of ending in an unexpected error."""
    with pytest.raises(SystemExit) as stop:
        main(["run", "-m", "model=llsvm", "dataset=banana", "+search=llsvm", "trainer.t0=-1",
              "+dataset.validation=0.25", "hydra.sweeper.n_trials=2", *SMALL,
              f"results_dir={tmp_path / 'results'}", f"data.mirrors=[{REPO / 'datasets'}]",
              "data.download=false"])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert "2 job(s) of the sweep failed" in err and "trainer.t0=-1" in err
    assert "unexpected" not in err
