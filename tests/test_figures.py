"""`llc-bench figures` in the quick profile: a decision-boundary figure fitted in-process and
an accuracy-vs-anchors figure from planned runs (then all cache hits)."""

from __future__ import annotations

import subprocess

import pytest

from llc_bench.experiment.results import ResultsStore
from llc_bench.tables.command import figures_command


@pytest.fixture(scope="module")
def drawn(tmp_path_factory, mirror):
    results = tmp_path_factory.mktemp("figures") / "results"
    args = ["--profile", "quick", "--figure", "sapl_fig1", "--figure", "sapl_fig2",
            "--launcher", "basic", "--results-dir", str(results), "--mirror", str(mirror)]
    lines: list[str] = []
    out = figures_command(args, echo=lines.append)
    return results, args, out, lines


def test_quick_figures_are_written_as_png_and_pdf(drawn):
    results, _, out, lines = drawn
    assert set(out) == {"sapl_fig1", "sapl_fig2"}, lines
    for name in out:
        for suffix in ("png", "pdf"):
            path = results / "figures-quick" / f"{name}.{suffix}"
            assert path.stat().st_size > 1000, (path, lines)
    # sapl_fig2, quick: m in {2, 10, 40} on banana for LL-SVM and SAPL, one seed
    records = [r for _, r, _ in ResultsStore(results).records() if r]
    assert sorted((r["model"], r["config"]["coding"]["n_anchors"]) for r in records) == [
        ("llsvm", 2), ("llsvm", 10), ("llsvm", 40), ("sapl", 2), ("sapl", 10), ("sapl", 40)]


def test_redrawing_runs_nothing(drawn, monkeypatch):
    results, args, _, _ = drawn

    def no_subprocess(*a, **k):
        raise AssertionError(f"a run was launched: {a}")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    out = figures_command(args, echo=lambda s: None)
    assert set(out) == {"sapl_fig1", "sapl_fig2"}


def test_pareto_has_one_point_per_model_and_budget(tmp_path, mirror):
    """The Pareto figure (quick: banana, the linear SVM once, LL-SVM at budgets 1 and 3 s):
    a selecting model runs once per budget with tune=on and no trial cap, a model whose grid
    CV is its selection runs once."""
    results = tmp_path / "results"
    lines: list[str] = []
    out = figures_command(["--profile", "quick", "--figure", "pareto", "--launcher", "basic",
                           "--results-dir", str(results), "--mirror", str(mirror)],
                          echo=lines.append)
    assert (results / "figures-quick" / "pareto.png").stat().st_size > 1000, (out, lines)
    records = [r for _, r, _ in ResultsStore(results).records() if r]
    runs = sorted((r["model"], (r["config"].get("tune") or {}).get("budget_s")) for r in records)
    assert runs == [("linear", None), ("llsvm", 1), ("llsvm", 3)], lines
    for r in records:
        if r["model"] == "llsvm":
            assert r["config"]["tune"]["trials"] is None and r["tune"]["n_trials"] >= 1


def test_pareto_peer_points_are_read_when_measured(tmp_path):
    from llc_bench.tables.figures import _peer_points

    assert _peer_points(tmp_path / "absent.json") == {} and _peer_points(None) == {}
    path = tmp_path / "peer.json"
    path.write_text('{"usps": {"train_seconds": 1.9, "accuracy": 73.5}}')
    assert _peer_points(path)["usps"]["accuracy"] == 73.5
