"""Aggregation over seeds and the Markdown / CSV / LaTeX / summary output, on fake records."""

from __future__ import annotations

import pandas as pd
import pytest

from llc_bench.store.results import ResultsStore, config_hash
from llc_bench.tables.aggregate import aggregate
from llc_bench.tables.plan import CellPlan, RunPlan, TablePlan
from llc_bench.tables.render import render_latex, render_markdown, write_summary, write_table
from llc_bench.tables.spec import NOT_IMPLEMENTED, NOT_REPRODUCIBLE, Profile, table_from_dict

SPEC = table_from_dict({
    "name": "jo_table2", "paper": "jo", "table": "table2", "title": "JO Table 2 (test)",
    "seeds": 3, "metrics": ["accuracy", "test_time_ratio"], "ratio_reference": "linear_svm",
    "datasets": {"magic04": "magic04"},
    "methods": {"linear_svm": {"label": "SVM", "model": "linear"},
                "llsvm": {"label": "LLSVM", "model": "llsvm"},
                "jo": {"label": "LLC-JO", "model": "jo_not_there"},
                "djo": {"label": "LLC-DJO", "status": "not_reproducible",
                        "reason": "LLC-DJO appears only in this table; the paper does not "
                                  "describe it"}},
})


def _record(model, seed, acc, test_time):
    config = {"model": {"name": model}, "dataset": {"name": "magic04"}, "seed": seed}
    return {"record_version": 1, "status": "complete", "config_hash": config_hash(config),
            "config": config, "seed": seed, "dataset": "magic04", "model": model,
            "metrics": {"test_accuracy": acc}, "timings": {"test_total": test_time,
                                                           "train_total": 1.0},
            "versions": {}}


@pytest.fixture()
def result(tmp_path):
    store = ResultsStore(tmp_path)
    cells = {}
    runs = {}
    for model, accs, times in (("linear", [0.7833, 0.7833, 0.7833], [0.01, 0.01, 0.01]),
                               ("llsvm", [0.80, 0.90, None], [0.2, 0.25, 0.3])):
        runs[model] = []
        for seed, (acc, t) in enumerate(zip(accs, times, strict=True)):
            rec = _record(model, seed, acc if acc is not None else 0.5, t)
            if acc is None:   # seed 2 of llsvm: a record whose hash does not match (corrupt)
                path = store.path(rec["config_hash"])
                path.parent.mkdir(parents=True, exist_ok=True)
                rec["config"]["seed"] = 99
                import json
                path.write_text(json.dumps(rec))
            else:
                store.save(rec)
            runs[model].append(RunPlan({"model": model, "dataset": "magic04", "seed": seed},
                                       rec["config"], rec["config_hash"], seed, cached=True))
    cells[("magic04", "linear_svm")] = CellPlan("magic04", "linear_svm", "SVM", "run",
                                                model="linear", dataset_config="magic04",
                                                seeds=3, runs=runs["linear"],
                                                notes=("C by CV on 4000 rows (a cell rule)",))
    cells[("magic04", "llsvm")] = CellPlan("magic04", "llsvm", "LLSVM", "run", model="llsvm",
                                           dataset_config="magic04", seeds=3,
                                           runs=runs["llsvm"])
    cells[("magic04", "jo")] = CellPlan("magic04", "jo", "LLC-JO", NOT_IMPLEMENTED,
                                        reason="not yet implemented (no model preset "
                                               "`jo_not_there`)", model="jo_not_there")
    cells[("magic04", "djo")] = CellPlan("magic04", "djo", "LLC-DJO", NOT_REPRODUCIBLE,
                                         reason=SPEC.methods["djo"].reason)
    plan = TablePlan(SPEC, Profile("full"), tmp_path, cells)
    return aggregate(plan)


def test_mean_std_over_seeds_skips_the_corrupt_record(result):
    llsvm = result.cells[("magic04", "llsvm", "accuracy")]
    assert llsvm.values == pytest.approx([80.0, 90.0])          # seed 2 skipped, not averaged
    assert llsvm.mean == pytest.approx(85.0)
    assert llsvm.std == pytest.approx(7.0710678)
    assert (llsvm.n, llsvm.n_planned) == (2, 3)
    assert any("seed 2" in p and "config_hash does not match" in p for p in result.problems)
    assert llsvm.diff == pytest.approx(85.0 - 79.57)
    # 85 ± 7.07 (n=2) vs 79.57 ± 0.30 (n=3): 5.43 <= 2 sqrt(0.09/3 + 50/2) = 10.0
    assert llsvm.verdict == "within"
    linear = result.cells[("magic04", "linear_svm", "accuracy")]
    assert linear.verdict == "within" and linear.std == pytest.approx(0.0)
    ratio = result.cells[("magic04", "llsvm", "test_time_ratio")]
    assert ratio.values == pytest.approx([20.0, 25.0])          # per seed, / linear's time
    assert ratio.verdict == "within"                            # 22.5 vs 21.56, factor 2


def test_counts(result):
    c = result.counts()
    assert c["cells"] == 8
    assert (c["compared"], c["within"], c["better"], c["worse"]) == (4, 4, 0, 0)
    assert c["paper_only"] == 4        # jo and djo: the paper has numbers, we do not


def test_markdown_cells(result):
    md = render_markdown(result)
    # the skipped record of this cell is a footnote beside ours
    import re
    assert re.search(r"79\.57 ± 0\.30 / 85\.00 ± 7\.07 \(n=2/3\) \[[a-z]\] \(\+5\.43 ✓\)", md)
    assert "banana" not in md and "magic04 / llsvm seed 2: skipped" in md
    # a cell rule's note (where the cell departs from the paper) is the cell's footnote
    key = md.split("78.33 ± 0.13 / 78.33 ± 0.00 (n=3) [")[1][0]
    assert f"- [{key}] C by CV on 4000 rows (a cell rule)" in md
    assert "84.88 ± 0.36 / — [" in md
    assert "not yet implemented (no model preset `jo_not_there`)" in md
    assert "the paper does not describe it" in md
    assert "config_hash does not match" in md           # skipped records are listed


def test_csv_and_latex(result, tmp_path):
    paths = write_table(result, tmp_path / "out")
    frame = pd.read_csv(paths[1], keep_default_na=False)
    row = frame[(frame.method == "llsvm") & (frame.metric == "accuracy")].iloc[0]
    assert (float(row.paper_value), float(row.paper_std)) == (79.57, 0.30)
    assert float(row.ours_mean) == pytest.approx(85.0)
    assert float(row["diff"]) == pytest.approx(5.43)
    assert (int(row.n_runs), int(row.n_planned), row.verdict) == (2, 3, "within")
    assert int(row.n_paper) == 3 and "verdict_old_rule" not in frame
    djo = frame[(frame.method == "djo") & (frame.metric == "accuracy")].iloc[0]
    assert djo.ours_mean == "" and "does not describe it" in djo.reason
    assert djo.status == "not_reproducible"
    tex = render_latex(result)
    assert r"79.57 $\pm$ 0.30 / 85.00 $\pm$ 7.07" in tex
    assert r"\begin{tabular}" in tex and r"\item[" in tex
    summary = write_summary(tmp_path / "out", ["jo_table2"], Profile("full")).read_text()
    table_row = next(line for line in summary.splitlines() if "jo_table2.md" in line)
    cols = [c.strip() for c in table_row.strip("|").split("|")]
    assert cols[1:5] == ["4", "4", "0", "0"]                 # compared, within, better, worse
    assert "not reproducible" in cols[5] and "not yet implemented" in cols[5]


def test_derived_rows_render_their_own_metric(result):
    """A derived row (ML3 Table 2's average rank) holds cells of its own metric."""
    from llc_bench.tables.aggregate import CellResult

    result.spec.derived["average_rank"] = "rank"
    result.rows.append("average_rank")
    result.cells[("average_rank", "llsvm", "rank")] = CellResult(
        "average_rank", "llsvm", "rank", None, values=[1.5], seeds=[0], n_planned=1)
    line = next(x for x in render_markdown(result).splitlines() if x.startswith("| average_rank"))
    assert "1.5" in line
