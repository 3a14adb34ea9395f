"""`llc-bench models [NAME]`: the presets and their parameters, generated from the configs,
the estimators' declared constraints and their docstrings."""

from pathlib import Path

import pytest

from llc_bench.cli import main
from llc_bench.experiment.presets import compose_preset, preset_info, preset_names
from llc_bench.experiment.runner import estimator_class
from llc_bench.models._validation import describe

REPO = Path(__file__).resolve().parents[1]


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


def test_a_model_without_its_own_search_shows_no_search(capsys):
    main(["models", "linear"])   # its grid CV is its selection under tune=auto
    out = capsys.readouterr().out
    assert "tune=auto searches" not in out and "paper      Fan et al., 2008" in out


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
            for key in (config.get(group) or {}) if key != "name"]
    rows = {row["key"]: row for row in info["rows"]}
    assert [key for key in rows if key != "coding"] == keys
    constraints = estimator_class(config["trainer"]["name"])._parameter_constraints
    for key in keys:
        assert rows[key]["allowed"] == describe(constraints[key.split(".", 1)[1]], none="null")
        assert rows[key]["description"], key
    assert info["paper"]
