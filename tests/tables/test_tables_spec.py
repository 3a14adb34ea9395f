"""Table configs cover the papers' tables; override formatting; multirun grouping."""

from __future__ import annotations

import itertools
import re
from importlib import resources

import pytest
from conftest import REPO

from llc_bench.errors import ConfigError
from llc_bench.tables.execute import group_runs, launcher_overrides
from llc_bench.tables.plan import RunPlan, hydra_value
from llc_bench.tables.reference import paper_results, table_ids, table_values
from llc_bench.tables.spec import (
    METRICS,
    RUN,
    list_tables,
    load_profile,
    load_table,
    preset_exists,
)


@pytest.mark.real_data
def test_reference_copy_matches_shared_when_present():

    shared = REPO.parent / "shared" / "paper_tables" / "paper_results.csv"
    if not shared.is_file():
        pytest.skip("no shared/paper_tables beside the checkout")
    ours = resources.files("llc_bench.tables") / "reference" / "paper_results.csv"
    assert ours.read_bytes() == shared.read_bytes()


def test_every_paper_table_has_a_config_mapping_every_method_dataset_and_metric():
    specs = {(s.paper, s.table): s for s in map(load_table, list_tables())}
    assert set(table_ids()) <= set(specs)
    for (paper, table), spec in specs.items():
        values = table_values(paper, table)
        for dataset, method, metric in values:
            assert method in spec.methods, (spec.name, method)
            assert metric in spec.metrics or metric in spec.derived.values(), (spec.name, metric)
            assert dataset in spec.datasets or dataset in spec.derived, (spec.name, dataset)


def test_table_configs_name_existing_datasets_and_known_presets():
    conf = resources.files("llc_bench.conf")
    for name in list_tables():
        spec = load_table(name)
        assert spec.name == name
        for dataset in spec.datasets:
            for method in spec.methods:
                cfg = spec.settings(dataset, method).dataset_config
                assert (conf / "dataset" / f"{cfg}.yaml").is_file(), (name, cfg)
        for m in spec.methods.values():
            assert m.label
            if m.status == RUN:
                assert preset_exists(m.model), (name, m.model)  # every method we run has a preset
            else:
                assert m.reason, (name, m.name)


def test_paper_details_the_configs_carry():
    jo = load_table("jo_table2")
    assert jo.seeds == 5 and jo.methods["djo"].status == "not_reproducible"
    assert load_table("sapl_table2").seeds == 10 and load_table("ml3_table2").seeds == 10
    ml3 = load_table("ml3_table1")
    assert ml3.settings("usps", "ml3").overrides["trainer.n_models"] == 80
    assert ml3.settings("mnist", "ml3").overrides["trainer.n_models"] == 90
    assert ml3.settings("mnist", "kernel_svm").dataset_config == "mnist_ml3"  # centred /255
    assert load_table("ml3_table2").settings("banana", "ml3").dataset_config == "banana_ml3"
    occ = load_table("occ_table2")
    assert occ.settings("mnist", "lib_llsvm+g_occ").dataset_config == "mnist_40k"
    assert occ.settings("usps", "linear_svm+g_occ").overrides["coding.n_basis"] == 95
    assert occ.methods["mcsvm"].status == "reported_only"
    # ML3 Table 2: OCC on raw UCI features (its f - b is even in x on centred data),
    # with the per-dataset basis size kept; the other methods standardise
    ml3_2 = load_table("ml3_table2")
    liver = ml3_2.settings("liver", "g_occ")
    assert liver.overrides["dataset.scaling"] == "none" and liver.overrides["coding.n_basis"] == 6
    assert "raw features" in liver.notes[0]
    assert "dataset.scaling" not in ml3_2.settings("liver", "liblinear").overrides
    assert "dataset.scaling" not in ml3_2.settings("banana", "c_occ").overrides


def test_profiles():
    quick, full = load_profile("quick"), load_profile("full")
    assert quick.seeds == 1 and quick.overrides["dataset.max_train"] > 0
    assert quick.trainer["llc_sgd"]["epochs"] < 10 and quick.out != full.out
    assert full.seeds is None and not full.overrides


def test_metrics_verdicts():
    acc, err, t = METRICS["accuracy"], METRICS["error"], METRICS["train_time"]
    assert acc.verdict(90.0, 90.4, None) == "within"       # 0.5 points without a std
    assert acc.verdict(90.0, 90.4, 0.1) == "worse"
    assert acc.verdict(91.0, 90.4, 0.1) == "better"
    assert err.verdict(1.0, 2.0, None) == "better"
    assert t.verdict(3.0, 2.0, None) == "within" and t.verdict(5.0, 2.0, None) == "worse"
    assert len(paper_results()) > 500


@pytest.mark.parametrize("value", [0, 3, -2, 1.5, 1e-05, 1000.0, True, None, "banana",
                                   "mnist_40k", "/tmp/a b/c", "it's", [0.125, 2.0], [1, "x"],
                                   "calibrate", "null", "1.0"])
def test_hydra_value_round_trips(value):
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_override(f"k={hydra_value(value)}").value()
    assert parsed == value


def _run(model, dataset, seed, **rest):
    overrides = {"model": model, "dataset": dataset, "seed": seed, **rest}
    return RunPlan(overrides, {}, f"{model}-{dataset}-{seed}-{sorted(rest.items())}", seed)


def test_group_runs_makes_exact_cartesian_products():
    runs = [_run(m, d, s) for m, d, s in itertools.product(["linear", "llsvm"],
                                                           ["banana", "magic04"], [0, 1, 2])]
    runs = [r for r in runs if not (r.overrides["model"] == "llsvm" and r.seed == 2
                                    and r.overrides["dataset"] == "magic04")]
    runs += [_run("ml3", "usps", 0, **{"trainer.n_models": 80}),
             _run("ml3", "letter", 0, **{"trainer.n_models": 16})]
    launches = group_runs(runs)
    covered = []
    for launch in launches:
        product = set(itertools.product(launch.sweep["model"], launch.sweep["dataset"],
                                        launch.sweep["seed"]))
        members = {(r.overrides["model"], r.overrides["dataset"], r.seed) for r in launch.runs}
        assert product == members and len(members) == len(launch.runs)
        assert all({k: v for k, v in r.overrides.items() if k not in ("model", "dataset",
                                                                       "seed")}
                   == launch.common for r in launch.runs)
        covered += [r.hash for r in launch.runs]
    assert sorted(covered) == sorted(r.hash for r in runs)
    assert len(launches) <= 5
    # Hydra applies shared overrides with the default model first: model-specific keys
    # never share a multirun across models
    eps = group_runs([_run("llsvm", "banana", 0, **{"trainer.epochs": 2}),
                      _run("sapl", "banana", 0, **{"trainer.epochs": 2})])
    assert sorted(len(launch.sweep["model"]) for launch in eps) == [1, 1]
    same = group_runs([_run("llsvm", "banana", 0, **{"dataset.max_train": 9}),
                       _run("sapl", "banana", 0, **{"dataset.max_train": 9})])
    assert len(same) == 1 and same[0].sweep["model"] == ["llsvm", "sapl"]
    args = launches[0].arguments()
    assert args[0].startswith("model=") and any(a.startswith("seed=") for a in args)


def test_launcher_overrides():
    assert launcher_overrides("joblib", 2) == ["hydra/launcher=joblib",
                                               "hydra.launcher.n_jobs=2"]
    assert launcher_overrides("basic", 1) == ["hydra/launcher=basic"]
    assert "hydra.launcher.array_parallelism=8" in launcher_overrides("submitit_slurm", 8)
    with pytest.raises(Exception, match="unknown launcher"):
        launcher_overrides("nope", 1)


def test_sapl_tables_2_and_3_read_the_same_runs():
    """Table 3 (test time) is measured on Table 2's runs: every cell's settings must agree,
    or one table's cells would plan runs the other never builds."""
    t2, t3 = load_table("sapl_table2"), load_table("sapl_table3")
    assert (t2.datasets, t2.methods.keys()) == (t3.datasets, t3.methods.keys())
    for dataset in t2.datasets:
        for method in t2.methods:
            s2, s3 = t2.settings(dataset, method), t3.settings(dataset, method)
            assert (s2.seeds, s2.overrides, s2.dataset_config) == (
                s3.seeds, s3.overrides, s3.dataset_config), (dataset, method)


def test_the_quick_profile_runs_one_row_of_each_table_it_builds():
    quick = load_profile("quick")
    assert quick.datasets and set(quick.datasets) <= set(list_tables())
    for table, rows in quick.datasets.items():
        assert len(rows) <= 1, (table, rows)
        spec = load_table(table)
        for row in rows:
            assert quick.runs_row(table, row, spec.datasets[row])
        left = [d for d in spec.datasets if d not in rows]
        assert all(not quick.runs_row(table, d, spec.datasets[d]) for d in left)
    assert load_profile("full").runs_row("sapl_table2", "mnist8m", "infimnist")
    assert "profiles.quick.datasets.occ_table2" in quick.left_out("occ_table2")


@pytest.mark.parametrize("datasets, message", [
    ({"sapl_tabel2": ["banana"]}, "no such table (did you mean sapl_table2"),
    ({"sapl_table2": ["bananas"]}, "'bananas' is not a row of the table (did you mean banana"),
    (["banana"], "datasets must map a table to its rows"),
])
def test_a_profile_s_rows_name_tables_and_their_rows(monkeypatch, datasets, message):
    import llc_bench.tables.spec as spec_module

    config = spec_module.tables_config()
    profiles = {**config["profiles"], "quick": {**config["profiles"]["quick"],
                                                "datasets": datasets}}
    monkeypatch.setattr(spec_module, "tables_config", lambda: {**config, "profiles": profiles})
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_profile("quick")


def test_rows_a_profile_leaves_out_are_not_composed_and_say_why(tmp_path):
    from llc_bench.tables.aggregate import aggregate
    from llc_bench.tables.build import _not_run
    from llc_bench.tables.plan import Composer, Planner
    from llc_bench.tables.spec import Profile

    profile = Profile("quick", "", 1, overrides={"dataset.max_train": 100},
                      datasets={"llsvm_table2": ["usps"]})
    with Composer() as composer:
        plan = Planner(tmp_path, profile, composer=composer).plan(load_table("llsvm_table2"))
    usps = [c for (d, _), c in plan.cells.items() if d == "usps" and c.status == "run"]
    letter = [c for (d, _), c in plan.cells.items() if d == "letter" and c.status == "run"]
    assert usps and all(c.runs and not c.left_out for c in usps)
    assert letter and all(not c.runs and c.left_out for c in letter)
    reason = profile.left_out("llsvm_table2")
    assert _not_run(plan, plan.to_execute(allow_offline=True), True)[reason] == len(letter)
    result = aggregate(plan)
    assert all(c.reason == reason for c in result.cells.values()
               if c.dataset == "letter" and c.status == "run")
