"""The Optuna studies of tuning sweeps (llc_bench/selection/tuning.py): named by what their
trials run on, resumed with new settings, kept where the results are, read with one clear
line when the file is damaged."""

from pathlib import Path

import numpy as np
import pytest

from llc_bench.cli import main
from llc_bench.selection import tuning

pytest.importorskip("hydra_plugins.hydra_optuna_sweeper")
optuna = pytest.importorskip("optuna")


def _own_file(path: Path, seed: int, flip: bool = False) -> Path:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3))
    label = (X[:, 0] + X[:, 1] > 0) ^ flip
    path.write_text("a,b,c,label\n" + "".join(
        f"{a!r},{b!r},{c!r},{'yes' if t else 'no'}\n"
        for (a, b, c), t in zip(X.tolist(), label, strict=True)))
    return path


def _sweep(results, train, *extra):
    main(["run", "-m", "model=linear", "dataset=file", f"dataset.train={train}",
          "dataset.test_fraction=0.25", "+search=linear", "+dataset.validation=0.25",
          "hydra.sweeper.n_trials=2", f"results_dir='{results}'", "progress=off", *extra])


def _studies(results) -> dict:
    url = tuning.storage_url(results)
    return {s.study_name: optuna.load_study(study_name=s.study_name, storage=url)
            for s in optuna.study.get_all_study_summaries(storage=url)}


def test_sweeps_on_two_own_files_never_share_a_study(tmp_path, capsys):
    """Two files under one results_dir: two studies; --from-sweep refuses to guess between
    them and, given the file, writes the best of that file's trials only."""
    a = _own_file(tmp_path / "a.csv", 0)
    b = _own_file(tmp_path / "b.csv", 1, flip=True)
    results = tmp_path / "results"
    _sweep(results, a)
    _sweep(results, b)
    studies = _studies(results)
    assert len(studies) == 2 and all(len(s.trials) == 2 for s in studies.values())
    assert all(name.startswith("linear_file_seed0_") for name in studies)
    capsys.readouterr()

    out = tmp_path / "linear_a.yaml"
    with pytest.raises(SystemExit):
        main(["tune", "linear", "file", "--from-sweep", "--results-dir", str(results),
              "--out", str(out)])
    err = capsys.readouterr().err.strip()
    assert err.startswith("llc-bench: error: 2 studies of linear on file") and "\n" not in err
    assert "dataset.train=PATH" in err and not out.exists()

    main(["tune", "linear", "file", "--from-sweep", "--results-dir", str(results),
          "--out", str(out), f"dataset.train={a}"])
    name = tuning.find_study(results, "linear", "file", overrides=[f"dataset.train={a}"])
    best = studies[name].best_trial
    assert f"trial {best.number}) of study {name!r}" in out.read_text()
    assert f"validation accuracy {100 * best.value:.2f}%" in out.read_text()
    assert str(tmp_path) not in out.read_text()                # no path of this machine
    assert "dataset.train=a.csv" in out.read_text()
    from llc_bench.data.fetch import sha256_of

    assert f"train sha256 {sha256_of(a)}" in out.read_text()
    other = tuning.find_study(results, "linear", "file", overrides=[f"dataset.train={b}"])
    assert other != name and set(studies) == {name, other}


def test_a_resumed_study_proposes_new_settings(tmp_path):
    """`N more trials` of a stored study are new settings (not the first N again: cache
    hits); the same command from scratch proposes the same trials."""
    a = _own_file(tmp_path / "a.csv", 0)
    results = tmp_path / "results"
    _sweep(results, a)
    _sweep(results, a)                                      # resumed: two more trials
    (study,) = _studies(results).values()
    params = [t.params["trainer.C"] for t in study.trials]
    assert len(params) == 4 and len(set(params)) == 4
    again = tmp_path / "again"
    _sweep(again, a)
    (fresh,) = _studies(again).values()
    assert [t.params["trainer.C"] for t in fresh.trials] == params[:2]


def test_a_resumed_study_is_seeded_by_its_trials_so_far():
    assert tuning.resumed_seed(3, 0) == 3                   # a new study: the run seed
    assert tuning.resumed_seed(3, 2) == tuning.resumed_seed(3, 2) != 3
    assert len({tuning.resumed_seed(3, n) for n in range(1, 50)}) == 49


@pytest.mark.parametrize("name", ["a?b", "c#d", "e%20f", "g h"])
def test_the_study_file_lies_in_a_results_dir_of_any_name(tmp_path, name):
    results = tmp_path / name
    results.mkdir()
    optuna.create_study(study_name="s", storage=tuning.storage_url(results))
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert [p.name for p in results.iterdir()] == ["optuna.db"]


def test_a_sweep_into_a_results_dir_with_a_question_mark(tmp_path):
    a = _own_file(tmp_path / "a.csv", 0)
    results = tmp_path / "runs?1 #2 %3"
    _sweep(results, a)
    assert (results / "optuna.db").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.csv", "runs?1 #2 %3"]
    assert len(next(iter(_studies(results).values())).trials) == 2


def _truncated(path: Path) -> None:
    study = optuna.create_study(study_name="s", storage=tuning.storage_url(path.parent))
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _random_bytes(path: Path) -> None:
    path.write_bytes(np.random.default_rng(0).bytes(5000))


@pytest.mark.parametrize("damage", [_random_bytes, _truncated])
def test_a_damaged_study_file_is_one_line_naming_it(tmp_path, capsys, damage):
    a = _own_file(tmp_path / "a.csv", 0)
    results = tmp_path / "results"
    results.mkdir()
    db = results / "optuna.db"
    damage(db)
    before = db.read_bytes()
    for command in (lambda: _sweep(results, a),
                    lambda: main(["tune", "linear", "file", "--from-sweep", "--results-dir",
                                  str(results), "--out", str(tmp_path / "x.yaml"),
                                  f"dataset.train={a}"])):
        capsys.readouterr()
        with pytest.raises(SystemExit):
            command()
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"llc-bench: error: {db}: not a readable Optuna study file")
        assert "delete it" in err and "results_dir" in err and "\n" not in err
        assert db.read_bytes() == before
    assert not (tmp_path / "x.yaml").exists()


def test_a_sweep_on_a_missing_own_file_is_one_line(tmp_path, capsys):
    """The study is named by the files' content: a file that is not there is said as the
    run says it, before the sweep (not wrapped in an interpolation error)."""
    missing = tmp_path / "nosuch.csv"
    with pytest.raises(SystemExit):
        _sweep(tmp_path / "results", missing)
    err = capsys.readouterr().err.strip()
    assert err == f"llc-bench: error: dataset.train={missing}: no such file ({missing})"


def test_a_study_is_named_by_settings_not_by_the_classes_the_config_files_name():
    """A sweep's study keeps its name now that conf/trainer and conf/coding name their
    classes (``_target_``): the same command resumes a study made before."""
    config = {"dataset": {"name": "banana"}, "model": {"name": "llsvm"}, "seed": 0,
              "trainer": {"name": "llc_sgd", "lambda_": 1e-4},
              "coding": {"name": "inverse_distance", "k": 8}}
    targeted = {**config,
                "trainer": {**config["trainer"],
                            "_target_": "llc_bench.models.llsvm.LLSVMClassifier"},
                "coding": {**config["coding"],
                           "_target_": "llc_bench.coding.local.InverseDistanceCoding"}}
    assert tuning.study_name(targeted, {}) == tuning.study_name(config, {})
