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
