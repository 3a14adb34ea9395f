"""`llc-bench figures` in the quick profile: a decision-boundary figure fitted in-process and
an accuracy-vs-anchors figure from planned runs (then all cache hits)."""

from __future__ import annotations

import subprocess

import pytest

from llc_bench.cli.tables import figures_command
from llc_bench.errors import ConfigError
from llc_bench.store.results import ResultsStore
from llc_bench.tables.figures import own_files_label


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
    """The planned runs of sapl_fig2 are all cache hits the second time (sapl_fig1 plans
    none: its boundaries are fitted in-process at each drawing, so it is not redrawn here)."""
    results, args, _, _ = drawn

    def no_subprocess(*a, **k):
        raise AssertionError(f"a run was launched: {a}")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    args = [a for a in args if a != "sapl_fig1"]
    args.remove("--figure")
    out = figures_command(args, echo=lambda s: None)
    assert set(out) == {"sapl_fig2"}


def test_a_dry_run_says_each_figure_s_runs_and_draws_nothing(tmp_path, mirror, monkeypatch):
    """figures --dry-run: per figure the runs planned, in the store and to run (the
    launches' command lines), nothing launched and nothing written; a boundary figure is
    fitted when drawn and plans none.  Against an empty store, sapl_fig2 plans its six
    runs, one launch each (a launch does not sweep m)."""

    def no_subprocess(*a, **k):
        raise AssertionError(f"a run was launched: {a}")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)
    empty = tmp_path / "results"
    lines: list[str] = []
    out = figures_command(["--profile", "quick", "--figure", "sapl_fig1", "--figure",
                           "sapl_fig2", "--dry-run", "--results-dir", str(empty),
                           "--mirror", str(mirror)], echo=lines.append)
    assert out == {"sapl_fig1": "planned: fitted in-process when drawn, no runs",
                   "sapl_fig2": "planned"}
    assert "  6 runs planned, 0 in the store, 6 to run (quick profile): " in "\n".join(lines)
    launches = [line for line in lines if line.startswith("  llc-bench run -m ")]
    assert len(launches) == 6 and all("dataset=banana" in line for line in launches)
    assert not empty.exists() or not any(empty.rglob("*.png"))


def budget(record) -> str:
    """A Pareto run's point: "grid" (no selection), the seconds budget, or "default"."""
    tune = record["config"].get("tune") or {}
    return "grid" if not tune else str(tune["budget_s"] or "default")


def test_pareto_has_one_point_per_model_and_budget(tmp_path, mirror):
    """The Pareto figure (quick: the linear SVM once, LL-SVM at budgets 1 and 3 s and at
    its default selection), drawn on another dataset than its own (banana) into a file of
    its own: a selecting model runs once per budget with tune=on and no trial cap and once
    with tune=on as it is, a model whose grid CV is its selection runs once."""
    results = tmp_path / "results"
    lines: list[str] = []
    out = figures_command(["--profile", "quick", "--figure", "pareto", "--launcher", "basic",
                           "--dataset", "xor", "--results-dir", str(results),
                           "--mirror", str(mirror)], echo=lines.append)
    assert out["pareto"].endswith("pareto_xor.png"), (out, lines)
    assert (results / "figures-quick" / "pareto_xor.png").stat().st_size > 1000, (out, lines)
    records = [r for _, r, _ in ResultsStore(results).records() if r]
    runs = sorted((r["dataset"], r["model"], budget(r)) for r in records)
    assert runs == [("xor", "linear", "grid"), ("xor", "llsvm", "1"), ("xor", "llsvm", "3"),
                    ("xor", "llsvm", "default")], lines
    for r in records:
        if budget(r) in ("1", "3"):
            assert r["config"]["tune"]["trials"] is None and r["tune"]["n_trials"] >= 1
        elif budget(r) == "default":  # the default procedure: 30 trials, a counted budget
            assert r["config"]["tune"]["trials"] == 30
            assert r["config"]["tune"]["budget_rows"] == 500000
    # without --dataset, the figure's own dataset (nothing run here: nothing to draw)
    out = figures_command(["--profile", "quick", "--figure", "pareto", "--no-run",
                           "--results-dir", str(results)], echo=lines.append)
    assert "llsvm on banana: no record" in out["pareto"], out
    with pytest.raises(ConfigError, match="unknown dataset 'nosuch'"):
        figures_command(["--figure", "pareto", "--dataset", "nosuch", "--no-run",
                         "--results-dir", str(results)], echo=lines.append)


def test_pareto_peer_points_are_read_when_measured(tmp_path):
    from llc_bench.tables.figures import _peer_points

    assert _peer_points(tmp_path / "absent.json") == {} and _peer_points(None) == {}
    path = tmp_path / "peer.json"
    path.write_text('{"usps": {"train_seconds": 1.9, "accuracy": 73.5}}')
    assert _peer_points(path)["usps"]["accuracy"] == 73.5
    from llc_bench.errors import ConfigError

    for bad in ('{"usps": {"accuracy": 73.5}}', "not json", '{"usps": 3}'):
        path.write_text(bad)
        with pytest.raises(ConfigError, match="not the peer benchmark's points"):
            _peer_points(path)


def test_a_model_may_have_its_own_overrides_on_some_datasets():
    """The Pareto figure's kernel SVM runs its CV on a subsample of ijcnn and mnist (the runs
    of LLC-SAPL Tables 2-3), its full CV elsewhere; the figure's own overrides come first."""
    from llc_bench.tables.figures import _models, _run_overrides

    spec = {"overrides": {"a": 1}, "dataset_overrides": {"ijcnn": {"b": 2}},
            "models": {"kernel": {"overrides": {"c": 3},
                                  "dataset_overrides": {"ijcnn": {"trainer.cv_max_rows": 10}}},
                       "fast": {"model": "llsvm", "overrides": {"trainer.init": "zeros"}}}}
    models = _models(spec, [])
    assert _run_overrides(spec, "ijcnn", models["kernel"][2]) == {
        "a": 1, "b": 2, "c": 3, "trainer.cv_max_rows": 10}
    assert _run_overrides(spec, "usps", models["kernel"][2]) == {"a": 1, "c": 3}
    assert models["fast"][0] == "llsvm"
    assert _run_overrides(spec, "usps", models["fast"][2]) == {"a": 1, "trainer.init": "zeros"}


# -- layout and legends, drawn from made-up records (no mirror, nothing trained) -------------

class _Planner:
    """Plans one run per call; the run is its overrides (the fake store reads them)."""

    def plan_runs(self, preset, dataset, seeds, overrides):
        return [(preset, dataset, seed, tuple(sorted(overrides.items())))
                for seed in range(seeds)]


def _builder(tmp_path, monkeypatch, record_of):
    from llc_bench.tables.figures import FigureBuilder
    from llc_bench.tables.spec import Profile

    builder = FigureBuilder(Profile("full", "", 1), tmp_path, executor=None,
                            results_dir=tmp_path, run=False, planner=_Planner())
    monkeypatch.setattr(builder, "_datasets", lambda spec, skipped: list(spec["datasets"]))
    monkeypatch.setattr(builder, "_records", lambda runs, name: {
        key: [record_of(run) for run in plan] for key, plan in runs.items()})
    return builder


def _boxes_apart(fig, first, second) -> bool:
    """True when the rendered boxes of two artists do not overlap."""
    renderer = fig.canvas.get_renderer()
    a, b = first.get_window_extent(renderer), second.get_window_extent(renderer)
    return not a.overlaps(b)


def test_history_twin_axes_get_their_own_colour_and_stay_clear_of_the_next_panel(
        tmp_path, monkeypatch):
    history = [{"epoch": e, "objective": 0.04 - 0.001 * e, "test_accuracy": 0.98 + 0.001 * e}
               for e in range(11)]
    builder = _builder(tmp_path, monkeypatch, lambda run: {"history": history})
    spec = {"datasets": ["ijcnn", "usps"], "models": {"sapl": {"label": "LLC-SAPL"}},
            "series": [{"key": "objective", "label": "objective"},
                       {"key": "test_accuracy", "label": "test accuracy (%)", "scale": 100,
                        "right": True}]}
    fig = builder.history("sapl_fig3", spec, [])
    fig.suptitle("LLC-SAPL Fig. 3: objective and test accuracy per epoch")
    fig.canvas.draw()
    left, twin = fig.axes[0], fig.axes[2]  # panel 1, panel 2, then panel 1's twin
    assert twin.get_shared_x_axes().joined(left, twin)
    (objective,), (accuracy,) = left.get_lines(), twin.get_lines()
    assert objective.get_color() != accuracy.get_color()
    assert left.yaxis.label.get_color() == objective.get_color()
    assert twin.yaxis.label.get_color() == accuracy.get_color()
    # the twin's label and ticks end before the next panel's y label begins
    assert _boxes_apart(fig, twin.yaxis.label, fig.axes[1].yaxis.label)
    renderer = fig.canvas.get_renderer()
    twin_right = max(t.get_window_extent(renderer).x1 for t in twin.get_yticklabels()
                     if t.get_text())
    assert twin_right < fig.axes[1].yaxis.label.get_window_extent(renderer).x0
    assert _boxes_apart(fig, fig._suptitle, left.title)


def test_history_panels_labels_do_not_collide(tmp_path, monkeypatch):
    history = [{"iteration": i, "test_error": 0.2 / i} for i in range(1, 31)]
    builder = _builder(tmp_path, monkeypatch, lambda run: {"history": history})
    spec = {"datasets": ["usps", "letter", "mnist"], "x": "iteration",
            "models": {"ml3": {"label": "ML3"}},
            "series": [{"key": "test_error", "label": "test error (%)", "scale": 100}]}
    fig = builder.history("ml3_fig2_iter", spec, [])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax, right in zip(fig.axes, fig.axes[1:], strict=False):
        assert ax.get_window_extent(renderer).x1 < \
            right.yaxis.label.get_window_extent(renderer).x0


@pytest.mark.parametrize("seeds, caption", [(3, "mean over 3 seeds; error bars: ± 1 std"),
                                            (1, "one seed per point")])
def test_vs_param_says_what_its_error_bars_are(tmp_path, monkeypatch, seeds, caption):
    def record(run):
        preset, dataset, seed, overrides = run
        return {"metrics": {"test_accuracy": 0.9 + 0.001 * seed}}

    builder = _builder(tmp_path, monkeypatch, record)
    spec = {"datasets": ["banana"], "models": {"llsvm": {"label": "LL-SVM"}},
            "metric": "accuracy", "seeds": seeds,
            "x": {"key": "coding.n_anchors", "label": "m", "values": [2, 10, 40]}}
    fig = builder.vs_param("sapl_fig2", spec, [])
    assert fig.axes[0].get_legend().get_title().get_text() == caption


def test_vs_param_log_axis_ticks_every_value_and_labels_those_with_room(tmp_path, monkeypatch):
    builder = _builder(tmp_path, monkeypatch,
                       lambda run: {"metrics": {"test_accuracy": 0.95}})
    values = [1.0, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0]
    spec = {"datasets": ["usps"], "models": {"ml3": {"label": "ML3"}}, "metric": "error",
            "x": {"key": "trainer.p", "label": "p", "scale": "log", "values": values},
            "series": {"key": "trainer.n_models", "label": "m", "values": [10, 50]}}
    fig = builder.vs_param("ml3_fig2_p", spec, [])
    fig.suptitle("ML3 Fig. 2 (top left): USPS test error vs p")
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert list(ax.get_xticks()) == values
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["1", "", "1.5", "2", "3", "5", "10"]
    shown = [t for t in ax.get_xticklabels() if t.get_text()]
    assert all(_boxes_apart(fig, a, b) for a, b in zip(shown, shown[1:], strict=False))
    assert _boxes_apart(fig, fig._suptitle, ax.title)


def _own_files(folder, stem: str, seed: int) -> None:
    """A user's two CSV files ``<stem>.csv`` (200 rows) and ``<stem>_test.csv`` (100): the
    sign of x * y, two named classes."""
    import numpy as np

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 2))
    y = np.where(X[:, 0] * X[:, 1] > 0, "same", "other")
    rows = ["u,v,sign"] + [f"{a:.4f},{b:.4f},{t}" for (a, b), t in zip(X, y, strict=True)]
    (folder / f"{stem}.csv").write_text("\n".join(rows[:201]) + "\n")
    (folder / f"{stem}_test.csv").write_text("\n".join([rows[0], *rows[201:]]) + "\n")


def test_pareto_on_own_files_runs_them_into_the_scratch_store(tmp_path, monkeypatch):
    """`figures --figure pareto --dataset file dataset.train=... dataset.test=...`: the runs
    read the user's files (their sha256 in the key, so a redraw finds them), go to
    results-scratch (not the committed results/), and the figure is named after the file."""
    monkeypatch.chdir(tmp_path)
    _own_files(tmp_path, "mine", seed=0)
    args = ["--profile", "quick", "--figure", "pareto", "--launcher", "basic", "--dataset",
            "file", "dataset.train=mine.csv", "dataset.test=mine_test.csv"]
    echoed: list[str] = []
    out = figures_command(args, echo=echoed.append)
    label = own_files_label({"dataset.train": str(tmp_path / "mine.csv"),
                             "dataset.test": str(tmp_path / "mine_test.csv")})
    png = tmp_path / "results-scratch" / "figures-quick" / f"pareto_{label}.png"
    assert out["pareto"] == str(png.relative_to(tmp_path)) and png.stat().st_size > 1000, echoed
    records = [r for _, r, _ in ResultsStore(tmp_path / "results-scratch").records() if r]
    assert sorted((r["model"], budget(r)) for r in records) == [
        ("linear", "grid"), ("llsvm", "1"), ("llsvm", "3"), ("llsvm", "default")]
    assert all(r["config"]["dataset"]["train"] == str(tmp_path / "mine.csv") for r in records)

    def no_subprocess(*a, **k):
        raise AssertionError(f"a run was launched: {a}")

    monkeypatch.setattr(subprocess, "Popen", no_subprocess)       # a redraw: all cached
    assert figures_command(args, echo=echoed.append)["pareto"] == out["pareto"]
    for bad, words in ((args[:-2], "--dataset file needs your files"),
                       ([*args[:6], "xor", *args[7:]], "describe own files, for --dataset file"),
                       ([*args, "train=x.csv"], "expected dataset.KEY=VALUE")):
        with pytest.raises(ConfigError, match=words):
            figures_command(bad, echo=echoed.append)


def test_a_second_own_file_of_the_same_name_gets_a_figure_of_its_own(tmp_path):
    """Figures of own files are named by the training file's stem and a hash of the files'
    contents and options: another folder's mine.csv does not overwrite the first's figure;
    the same files and options find the same name (a redraw replaces it)."""
    for folder, rows in (("a", "1,2,x\n3,4,y\n"), ("b", "1,2,x\n5,6,y\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "mine.csv").write_text("u,v,c\n" + rows)
    first, second = ({"dataset.train": str(tmp_path / f / "mine.csv"),
                      "dataset.test_fraction": 0.3} for f in "ab")
    assert own_files_label(first).startswith("file-mine-")
    assert own_files_label(first) != own_files_label(second)
    assert own_files_label(first) == own_files_label(dict(first))
    assert own_files_label(first) != own_files_label({**first, "dataset.test_fraction": 0.5})


def test_pareto_files_draws_counted_budgets_and_only_on_own_files(tmp_path, monkeypatch):
    """The large-file Pareto figure: without own files it is skipped (nothing run); on them
    each selecting model runs the default procedure under each counted budget
    (``tune.budget_rows``: quick, 2,000 rows) and at the default (500,000); a budget key
    that is not a budget is one error naming it."""

    from llc_bench.tables.figures import _budget_key

    monkeypatch.chdir(tmp_path)
    lines: list[str] = []
    out = figures_command(["--profile", "quick", "--figure", "pareto_files", "--no-run",
                           "--results-dir", str(tmp_path / "results")], echo=lines.append)
    assert out["pareto_files"].startswith("skipped: it draws your own files: llc-bench "
                                          "figures --figure pareto_files --dataset file")
    _own_files(tmp_path, "big", seed=1)
    out = figures_command(["--profile", "quick", "--figure", "pareto_files", "--launcher",
                           "basic", "--dataset", "file", "dataset.train=big.csv",
                           "dataset.test=big_test.csv"], echo=lines.append)
    assert out["pareto_files"].endswith(".png"), (out, lines)
    records = [r for _, r, _ in ResultsStore(tmp_path / "results-scratch").records() if r]
    budgets = sorted((r["model"], r["config"]["tune"]["budget_rows"],
                      r["config"]["tune"]["budget_s"]) for r in records)
    assert budgets == [("llsvm", 2000, None), ("llsvm", 500000, None)], lines
    small = next(r for r in records if r["config"]["tune"]["budget_rows"] == 2000)
    assert small["config"]["tune"]["trials"] == 30 and small["tune"]["n_trials"] < 30
    for bad in ("budget_s", "tune.trials", "tune.budget_rowz"):
        with pytest.raises(ConfigError, match=f"figures.pareto_files.budget_key={bad}: "
                                              "must be one of tune.budget_s"):
            _budget_key("pareto_files", {"budget_key": bad})
