"""The yardstick of the tables: |ours - paper| <= 2 sqrt(ps²/n_paper + os²/n_ours), by hand."""

from __future__ import annotations

import math

import pytest

from llc_bench.errors import ConfigError
from llc_bench.store.results import ResultsStore, config_hash
from llc_bench.tables.aggregate import aggregate
from llc_bench.tables.plan import CellPlan, RunPlan, TablePlan
from llc_bench.tables.render import render_markdown, write_summary, write_table
from llc_bench.tables.spec import METRICS, Profile, table_from_dict

ACC, ERR, HINGE, TIME = (METRICS[m] for m in ("accuracy", "error", "test_hinge", "train_time"))


def test_both_stds_make_the_allowed_difference():
    # 2 sqrt(1.0²/10 + 2.0²/4) = 2 sqrt(1.1) = 2.0976
    assert ACC.allowed(1.0, 2.0, n_paper=10, n_ours=4) == pytest.approx(2 * math.sqrt(1.1))
    assert ACC.verdict(91.0, 90.0, 1.0, 2.0, n_paper=10, n_ours=4) == "within"
    assert ACC.verdict(92.2, 90.0, 1.0, 2.0, n_paper=10, n_ours=4) == "better"
    assert ACC.verdict(87.8, 90.0, 1.0, 2.0, n_paper=10, n_ours=4) == "worse"


def test_one_std_alone():
    # the paper's only (one run of ours): 2 sqrt(0.5²/5) = 0.4472
    assert ERR.verdict(2.44, 2.0, 0.5, None, n_paper=5, n_ours=1) == "within"
    assert ERR.verdict(2.45, 2.0, 0.5, None, n_paper=5, n_ours=1) == "worse"
    # ours only (no std in the paper): 2 * 0.3 / sqrt(9) = 0.2
    assert ACC.allowed(None, 0.3, n_paper=1, n_ours=9) == pytest.approx(0.2)
    assert ACC.verdict(80.19, 80.0, None, 0.3, n_ours=9) == "within"
    assert ACC.verdict(80.21, 80.0, None, 0.3, n_ours=9) == "better"
    # one run of ours has no std, whatever it says
    assert ACC.allowed(None, 5.0, n_ours=1) == 0.5


def test_fixed_tolerance_only_when_no_spread_is_known():
    assert ACC.allowed(None, None) == 0.5 and HINGE.allowed(None, None) == 0.005
    assert ACC.allowed(0.0, 0.0, n_paper=10, n_ours=10) == 0.5   # both 0: deterministic
    assert HINGE.verdict(0.304, 0.300, None) == "within"
    assert HINGE.verdict(0.306, 0.300, None) == "worse"


def test_timings_keep_the_factor_of_two():
    assert TIME.verdict(3.9, 2.0, 0.1, 0.1, n_paper=10, n_ours=10) == "within"
    assert TIME.verdict(4.1, 2.0, None) == "worse"


def _spec(**extra):
    return table_from_dict({
        "name": "t", "paper": "sapl", "table": "table2", "seeds": 4,
        "metrics": ["accuracy"], "datasets": {"banana": "banana", "usps": "usps"},
        "methods": {"llsvm": {"model": "llsvm"}, "sapl": {"model": "sapl"}}, **extra})


def test_paper_runs_from_the_table_spec():
    assert _spec().settings("banana", "llsvm").paper_runs == 4          # its seeds
    spec = _spec(paper_runs=10, cells=[{"dataset": "usps", "method": "sapl", "seeds": 1,
                                        "paper_runs": 3}])
    assert spec.settings("banana", "sapl").paper_runs == 10
    assert (spec.settings("usps", "sapl").paper_runs, spec.settings("usps", "sapl").seeds) \
        == (3, 1)
    for bad in (0, "5", True):
        with pytest.raises(ConfigError, match="paper_runs"):
            _spec(paper_runs=bad)


def _record(model, seed, acc):
    config = {"model": {"name": model}, "dataset": {"name": "banana"}, "seed": seed}
    return {"record_version": 1, "status": "complete", "config_hash": config_hash(config),
            "config": config, "seed": seed, "dataset": "banana", "model": model,
            "metrics": {"test_accuracy": acc}, "timings": {"train": 1.0}, "versions": {}}


def test_cells_counts_and_summary_by_both_rules(tmp_path):
    # SAPL Table 2 banana: LLSVM 89.71 ± 0.09, LLC-SAPL 90.82 ± 0.13 (10 repetitions)
    spec = _spec(paper_runs=10, datasets={"banana": "banana"})
    store = ResultsStore(tmp_path)
    cells = {}
    for method, accs in (("llsvm", [0.8965, 0.8965]), ("sapl", [0.9040, 0.9160])):
        runs = []
        for seed, acc in enumerate(accs):
            rec = _record(method, seed, acc)
            store.save(rec)
            runs.append(RunPlan({"model": method, "dataset": "banana", "seed": seed},
                                rec["config"], rec["config_hash"], seed, cached=True))
        cells[("banana", method)] = CellPlan("banana", method, method, "run", model=method,
                                             dataset_config="banana", seeds=2, runs=runs)
    result = aggregate(TablePlan(spec, Profile("full"), tmp_path, cells))
    llsvm = result.cells[("banana", "llsvm", "accuracy")]
    sapl = result.cells[("banana", "sapl", "accuracy")]
    assert (llsvm.n_paper, llsvm.n) == (10, 2)
    # llsvm: 89.65 ± 0 vs 89.71: 0.06 > 2 sqrt(0.09²/10) = 0.0569
    assert llsvm.allowed == pytest.approx(2 * 0.09 / math.sqrt(10))
    assert llsvm.verdict == "worse"
    # sapl: 91.00 ± 0.849 vs 90.82: 0.18 <= 2 sqrt(0.13²/10 + 0.72/2) = 1.2028
    assert sapl.allowed == pytest.approx(2 * math.sqrt(0.13 ** 2 / 10 + 0.72 / 2))
    assert sapl.verdict == "within"
    new = result.counts()
    assert (new["within"], new["better"], new["worse"], new["worse_scores"]) == (1, 0, 1, 1)
    md = render_markdown(result)
    assert "89.71 ± 0.09 / 89.65 ± 0.00 (n=2) (−0.06 ▼)" in md
    assert "Paper runs per cell (n_paper): 10" in md and "2·√(ps²/n_paper" in md
    write_table(result, tmp_path / "out")
    summary = write_summary(tmp_path / "out", ["t"], Profile("full")).read_text()
    assert "1 within, 0 better, 1 worse (1 of the worse are accuracy" in summary
