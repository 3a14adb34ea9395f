"""The papers' figures (``conf/tables.yaml: figures``), drawn with matplotlib (Agg) to PNG + PDF.

``vs_param`` and ``history`` figures are made of ordinary runs, planned (config hashes),
cached and launched exactly like table cells; ``boundary`` figures fit their estimators
in-process (they are pictures, not numbers). A model whose preset does not exist yet, a
dataset that is not available offline or a history key a model does not record is
skipped with a message; a figure with nothing left to draw is skipped, never an error.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from llc_bench.store.costs import CostModel, build_seconds, describe, fit_seconds
from llc_bench.store.results import ResultsStore
from llc_bench.tables.execute import COMMITTED, cost_keys, group_runs
from llc_bench.tables.spec import METRICS, Profile, preset_exists, tables_config


def list_figures() -> dict:
    return dict(tables_config().get("figures") or {})


def _effective(spec: dict, profile: Profile) -> dict:
    spec = dict(spec)
    quick = dict(spec.pop("quick", None) or {})
    if profile.name == "quick":  # the quick profile's one seed, whatever the full one uses
        spec["seeds"] = int(quick.get("seeds", 1))
    if profile.name == "quick" and quick:
        if "datasets" in quick:
            spec["datasets"] = quick["datasets"]
        if "values" in quick:
            spec["x"] = {**spec["x"], "values": quick["values"]}
        if "budgets" in quick:
            spec["budgets"] = quick["budgets"]
        if "models" in quick:
            spec["models"] = {m: v for m, v in spec["models"].items() if m in quick["models"]}
        if "series_values" in quick and isinstance(spec.get("series"), dict):
            spec["series"] = {**spec["series"], "values": quick["series_values"]}
    return spec


class _ModelOverrides(dict):
    """A model's overrides, and ``per_dataset``: its own ones for some datasets."""

    def __init__(self, overrides, per_dataset):
        super().__init__(overrides or {})
        self.per_dataset = dict(per_dataset or {})


def _run_overrides(spec: dict, dataset: str, model_overrides: dict) -> dict:
    """A run's config overrides: the figure's, then its dataset's, then its model's (and
    the model's for that dataset)."""
    return {**(spec.get("overrides") or {}),
            **((spec.get("dataset_overrides") or {}).get(dataset) or {}), **model_overrides,
            **(getattr(model_overrides, "per_dataset", {}).get(dataset) or {})}


def _models(spec: dict, skipped: list) -> dict:
    """name -> (preset, label, overrides) of the models whose preset exists."""
    out = {}
    for name, raw in (spec.get("models") or {}).items():
        raw = dict(raw or {})
        preset = raw.get("model", name)
        if not preset_exists(preset):
            skipped.append(f"{name}: no model preset `{preset}` yet")
            continue
        out[name] = (preset, raw.get("label", name),
                     _ModelOverrides(raw.get("overrides"), raw.get("dataset_overrides")))
    return out


def _kind(draw):
    """A figure kind ``draw(self, name, spec, skipped, models, datasets)``, called as
    ``(name, spec, skipped)``: with the models whose preset exists and the datasets
    available offline, or None (nothing to draw) when either is empty."""

    @functools.wraps(draw)
    def kind(self, name: str, spec: dict, skipped: list):
        models = _models(spec, skipped)
        datasets = self._datasets(spec, skipped)
        if not models or not datasets:
            return None
        return draw(self, name, spec, skipped, models, datasets)

    return kind


def _save(fig, out_dir: Path, name: str) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{name}.png"
    fig.savefig(png, dpi=120, bbox_inches="tight")
    fig.savefig(out_dir / f"{name}.pdf", bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return png


def _axes(n: int, width: float = 4.2, height: float = 3.4):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # constrained layout keeps each panel's labels, a twin axis's ticks and the panel titles
    # clear of the next panel and of the figure's title
    fig, axes = plt.subplots(1, n, figsize=(width * n, height), squeeze=False,
                             layout="constrained")
    return fig, list(axes[0])


def _color(i: int) -> str:
    """The i-th colour of matplotlib's default cycle (a twin axis restarts the cycle, so
    lines on two axes of one panel get their colours from one counter)."""
    return f"C{i % 10}"


def error_bar_caption(n_seeds: int) -> str:
    """What a vs_param figure's points and error bars are."""
    if n_seeds > 1:
        return f"mean over {n_seeds} seeds; error bars: ± 1 std"
    return "one seed per point"


def _x_axis(ax, x: dict) -> None:
    """The swept key's axis: its label, and ``scale: log`` with a tick at every value."""
    ax.set_xlabel(x.get("label", x["key"]))
    if x.get("scale") == "log":
        from matplotlib.ticker import NullFormatter, NullLocator

        ax.set_xscale("log")
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_minor_formatter(NullFormatter())
        labels, last = [], None  # a tick at every value, a label where there is room
        for v in sorted(x["values"]):
            room = last is None or np.log10(v / last) >= 0.1
            labels.append(f"{v:g}" if room else "")
            last = v if room else last
        ax.set_xticks(sorted(x["values"]), labels)


class _Planned(Exception):
    """A dry run's figure: its runs said, nothing drawn."""


class FigureBuilder:
    def __init__(self, profile, out_dir, executor, results_dir, mirrors=(), run=True,
                 echo=print, planner=None, dry_run=False):
        self.profile, self.out_dir = profile, Path(out_dir)
        self.executor, self.run, self.dry_run = executor, run, dry_run
        self._costs = None  # a dry run's cost model, made at its first run to estimate
        self.results_dir = Path(results_dir)
        self.store = ResultsStore(self.results_dir)
        self.mirrors = tuple(mirrors)
        self.echo = echo
        self.planner = planner
        self._offline: dict[str, str] = {}

    def _offline_reason(self, dataset: str) -> str:
        from llc_bench.tables.plan import _status_of_dataset

        if dataset == "file":  # own files: the runs read them (and name a problem with them)
            return ""
        return _status_of_dataset(dataset, None, self.mirrors, self._offline)

    def _datasets(self, spec: dict, skipped: list) -> list[str]:
        out = []
        for d in spec.get("datasets") or []:
            why = self._offline_reason(d)
            if why:
                skipped.append(why)
            else:
                out.append(d)
        return out

    def _records(self, runs_by_key: dict, name: str) -> dict:
        """Plan -> run the missing ones -> {key: [records]} (failed runs reported)."""
        todo = {r.hash: r for runs in runs_by_key.values() for r in runs
                if not self.store.has(r.hash)}
        if self.dry_run:
            self._say_plan({r.hash for runs in runs_by_key.values() for r in runs},
                           list(todo.values()))
            raise _Planned()
        if todo and self.run:
            report = self.executor.run(list(todo.values()), tag=name)
            for key, why in report.failed.items():
                self.echo(f"  failed: {todo[key].label}: {why}")
        out = {}
        for key, runs in runs_by_key.items():
            recs = []
            for r in runs:
                try:
                    recs.append(self.store.load(r.hash))
                except Exception:  # missing, corrupt or partial: reported by the store
                    continue
            out[key] = recs
        return out

    def _say_plan(self, planned: set, todo: list) -> None:
        """A dry run's lines for one figure, as ``tables --dry-run`` says a table's: the
        runs planned, in the store and to run with their estimate, then each launch."""
        launches, cost = group_runs(todo), "nothing"
        if todo:  # the cost model reads the stores once per build
            self._costs = self._costs or CostModel(self.results_dir, fallbacks=[COMMITTED])
            seconds, unknown = self._costs.total(cost_keys(todo))
            cost = describe(build_seconds(seconds, len(launches)), unknown)
        self.echo(f"  {len(planned)} runs planned, {len(planned) - len(todo)} in the store, "
                  f"{len(todo)} to run ({self.profile.name} profile): {cost}")
        for launch in launches:
            self.echo("  llc-bench run -m " + " ".join(self.executor.arguments(launch)))

    # -- kinds ---------------------------------------------------------------------------
    @_kind
    def vs_param(self, name: str, spec: dict, skipped: list, models: dict, datasets: list):
        x = spec["x"]
        series = spec.get("series") or {}
        s_values = series.get("values") or [None]
        seeds = int(spec.get("seeds", 1))
        metric = METRICS[spec.get("metric", "accuracy")]
        runs = {}
        for d in datasets:
            for m, (preset, _, over) in models.items():
                for sv in s_values:
                    for xv in x["values"]:
                        o = {**_run_overrides(spec, d, over), x["key"]: xv}
                        if sv is not None:
                            o[series["key"]] = sv
                        runs[(d, m, sv, xv)] = self.planner.plan_runs(preset, d, seeds, o)
        records = self._records(runs, name)
        fig, axes = _axes(len(datasets))
        drawn, most = 0, 0
        for ax, d in zip(axes, datasets, strict=True):
            for m, (_, label, _) in models.items():
                for sv in s_values:
                    xs, ys, es = [], [], []
                    for xv in x["values"]:
                        vals = [metric.read(r) for r in records[(d, m, sv, xv)]]
                        vals = [v for v in vals if v is not None]
                        if vals:
                            xs.append(xv)
                            ys.append(float(np.mean(vals)))
                            es.append(float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0)
                            most = max(most, len(vals))
                    if xs:
                        lab = label if sv is None else f"{label}, {series.get('label', '')}={sv}"
                        ax.errorbar(xs, ys, yerr=es if seeds > 1 else None, marker="o", ms=3,
                                    capsize=2 if seeds > 1 else 0, label=lab)
                        drawn += 1
            ax.set_title(d)
            _x_axis(ax, x)
            ax.set_ylabel(metric.label)
            ax.grid(alpha=0.3)
            legend = ax.legend(fontsize=7, title=error_bar_caption(most), title_fontsize=7)
            legend.set_alignment("left")
        return fig if drawn else None

    @_kind
    def history(self, name: str, spec: dict, skipped: list, models: dict, datasets: list):
        runs = {(d, m): self.planner.plan_runs(p, d, int(spec.get("seeds", 1)),
                                                _run_overrides(spec, d, o))
                for d in datasets for m, (p, _, o) in models.items()}
        records = self._records(runs, name)
        xkey = spec.get("x", "epoch")
        fig, axes = _axes(len(datasets))
        drawn = 0
        for ax, d in zip(axes, datasets, strict=True):
            twin, lines, axis_colors = None, 0, {}
            for m, (_, label, _) in models.items():
                recs = records[(d, m)]
                if not recs:
                    skipped.append(f"{m} on {d}: no record")
                    continue
                history = recs[0].get("history") or []
                for s in spec.get("series") or []:
                    keys = s["key"] if isinstance(s["key"], list) else [s["key"]]
                    key = next((k for k in keys if any(k in h for h in history)), None)
                    if key is None:
                        skipped.append(f"{m} on {d}: its history has no {'/'.join(keys)}")
                        continue
                    pts = [(h.get(xkey, i), h[key] * float(s.get("scale", 1)))
                           for i, h in enumerate(history) if h.get(key) is not None]
                    target, color = ax, _color(lines)
                    if s.get("right"):
                        twin = twin or ax.twinx()
                        target = twin
                    target.set_ylabel(s.get("label", key))
                    style = "--" if s.get("right") else "-"
                    target.plot([p[0] for p in pts], [p[1] for p in pts], style, marker="o",
                                ms=3, color=color, label=f"{label}: {s.get('label', key)}")
                    axis_colors.setdefault(target, []).append(color)
                    drawn += 1
                    lines += 1
            if twin is not None:  # two y-axes: each axis in the colour of its one line
                for axis, side in ((ax, "left"), (twin, "right")):
                    colors = axis_colors.get(axis, [])
                    if len(colors) == 1:
                        axis.yaxis.label.set_color(colors[0])
                        axis.tick_params(axis="y", colors=colors[0])
                        axis.spines[side].set_color(colors[0])
            ax.set_title(d)
            ax.set_xlabel(xkey)
            ax.grid(alpha=0.3)
            handles, labels = ax.get_legend_handles_labels()
            if twin is not None:
                h2, l2 = twin.get_legend_handles_labels()
                handles, labels = handles + h2, labels + l2
            if handles:
                ax.legend(handles, labels, fontsize=7)
        return fig if drawn else None

    @_kind
    def pareto(self, name: str, spec: dict, skipped: list, models: dict, datasets: list):
        """Test accuracy against total fit time (selection and CV included), one point per
        model and selection budget (``tune=on tune.budget_s=B``; ``one_run: true``, a model
        whose own grid CV is its selection or a fixed setting, is one point), with
        ``default_point`` each selecting model's point at the default procedure (``tune=on``:
        30 trials or the counted budget, ``tune.budget_rows``; a diamond), and the released
        C++ LL-SVM's measured points (``peer``: the JSON ``scripts/bench_llsvm.py --peer``
        writes)."""
        one_run = {m for m, raw in (spec.get("models") or {}).items() if (raw or {}).get("one_run")}
        seeds = int(spec.get("seeds", 1))
        default = [DEFAULT_POINT] if spec.get("default_point") else []
        budget_key = _budget_key(name, spec)
        runs = {}
        for d in datasets:
            for m, (preset, _, over) in models.items():
                for b in [None] if m in one_run else [*spec["budgets"], *default]:
                    o = _run_overrides(spec, d, over)
                    # the default procedure's points on one core (one thread, as every
                    # time in the figures): the choice of any number of processes
                    if b == DEFAULT_POINT:  # the selection a user's own data gets
                        o = {**o, "tune": "on", "tune.workers": 1}
                    elif b is not None and budget_key != "tune.budget_s":
                        o = {**o, "tune": "on", budget_key: b, "tune.workers": 1}
                    elif b is not None:  # the budget alone ends the selection, in the
                        # procedure its points were measured with (their keys)
                        o = {**o, "tune": "on", "tune.budget_s": b, "tune.trials": None,
                             "tune.budget_rows": None, "tune.calibration_repeats": None,
                             "tune.trial_params": {}, "tune.init_max_iter": 100,
                             "tune.choice_init_max_iter": None, "tune.folds": 5,
                             "tune.sample_digits": None, "tune.second_stage_min_rows": None,
                             "tune.batch": None, "tune.workers": 1}
                    runs[(d, m, b)] = self.planner.plan_runs(preset, d, seeds, o)
        records = self._records(runs, name)
        peer = _peer_points(spec.get("peer"))
        # one panel: its legend beside it, the figure wider by as much
        fig, axes = _axes(len(datasets), width=4.6 if len(datasets) > 1 else 7.2, height=3.6)
        drawn = 0
        for ax, d in zip(axes, datasets, strict=True):
            for m, (_, label, _) in models.items():
                def point(recs):
                    return (float(np.mean([fit_seconds(r) for r in recs])),
                            float(np.mean([METRICS["accuracy"].read(r) for r in recs])))

                pts = sorted((*point(recs), b) for (dd, mm, b), recs in records.items()
                             if dd == d and mm == m and recs and b != DEFAULT_POINT)
                if not pts:
                    skipped.append(f"{m} on {d}: no record")
                    continue
                line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=4,
                                label=label if m in one_run else f"{label} ({len(pts)} budgets)")
                if budget_key == "tune.budget_rows":  # a counted budget: each point says it
                    for i, (x, y, b) in enumerate(pts):
                        if b is not None:
                            ax.annotate(f"{b / 1000:g}k rows", (x, y),
                                        xytext=(3, -8 if i % 2 == 0 else 4),
                                        textcoords="offset points", fontsize=5,
                                        color=line.get_color())
                drawn += 1
                if records.get((d, m, DEFAULT_POINT)):
                    x, y = point(records[(d, m, DEFAULT_POINT)])
                    ax.plot([x], [y], marker="D", ms=6, ls="none", color=line.get_color(),
                            markeredgecolor="k", label=f"{label}, default selection")
            if d in peer:
                ax.plot([peer[d]["train_seconds"]], [peer[d]["accuracy"]], "k*", ms=11,
                        label=peer[d].get("label", "released C++ LL-SVM"))
            ax.set_xscale("log")
            ax.set_title((spec.get("titles") or {}).get(d, d))
            ax.set_xlabel("total fit time, selection included (s)")
            ax.set_ylabel("test accuracy (%)")
            ax.grid(alpha=0.3, which="both")
            if ax.get_legend_handles_labels()[0]:  # a panel of its own: the legend beside it
                ax.legend(fontsize=6, **({} if len(datasets) > 1 else
                                         {"loc": "upper left", "bbox_to_anchor": (1.02, 1)}))
        return fig if drawn else None

    @_kind
    def boundary(self, name: str, spec: dict, skipped: list, models: dict, datasets: list):
        from llc_bench.data import load_dataset
        from llc_bench.experiment.runner import build_estimator

        only = spec.get("only") or {}
        panels = [(d, m) for d in datasets for m in models if m in only.get(d, list(models))]
        fig, axes = _axes(len(panels), width=3.6, height=3.4)
        drawn = 0
        for ax, (d, m) in zip(axes, panels, strict=True):
            preset, label, over = models[m]
            o = _run_overrides(spec, d, over)
            overrides = {"model": preset, "dataset": d, "seed": 0, **o}
            try:
                config = self.planner.composer.compose(overrides)
                ds = load_dataset(config["dataset"], seed=0, mirrors=self.mirrors,
                                  download=False)
                est = build_estimator(config).fit(ds.X_train, ds.y_train)
            except Exception as err:  # a model being written may not fit yet
                skipped.append(f"{m} on {d}: {type(err).__name__}: {err}")
                ax.set_axis_off()
                continue
            X, y = ds.X_train, np.asarray(ds.y_train)
            pad = 0.3
            lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
            gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], 250), np.linspace(lo[1], hi[1], 250))
            grid = np.c_[gx.ravel(), gy.ravel()]
            f = np.asarray(est.decision_function(grid)).reshape(gx.shape)
            classes = list(np.unique(y))
            for c, color in zip(classes, ("#1f77b4", "#d62728"), strict=False):
                pts = X[y == c]
                ax.scatter(pts[:, 0], pts[:, 1], s=3, c=color, alpha=0.35, label=str(c))
            ax.contour(gx, gy, f, levels=[0.0], colors="k", linewidths=1.5)
            anchors = getattr(est, "anchors_", None)
            if anchors is not None and np.asarray(anchors).shape[1:] == (2,):
                a = np.asarray(anchors)
                ax.scatter(a[:, 0], a[:, 1], marker="*", s=120, c="gold", edgecolors="k",
                           label="anchors", zorder=5)
                start = getattr(est, "initial_anchors_", None)
                if start is not None:
                    s0 = np.asarray(start)
                    ax.scatter(s0[:, 0], s0[:, 1], marker="x", s=40, c="k",
                               label="initial anchors", zorder=4)
            acc = 100 * float(np.mean(est.predict(ds.X_test) == np.asarray(ds.y_test)))
            ax.set_title(f"{label} on {d} (test acc {acc:.1f}%)", fontsize=9)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.legend(fontsize=6, loc="lower right")
            drawn += 1
        return fig if drawn else None


#: the Pareto figure's point of a model's default selection procedure (``tune=on``)
DEFAULT_POINT = "default"


def _budget_key(name: str, spec: Mapping) -> str:
    """A Pareto figure's ``budget_key``: what its ``budgets`` set, ``tune.budget_s`` (the
    default: seconds, in the procedure those points were measured with) or a counted budget
    (``tune.budget_rows``, ``tune.budget_fits``: the default procedure with that budget)."""
    from llc_bench.selection.search import BUDGETS

    key = str(spec.get("budget_key", "tune.budget_s"))
    if key.removeprefix("tune.") not in BUDGETS or not key.startswith("tune."):
        from llc_bench.errors import ConfigError

        raise ConfigError(f"conf/tables.yaml: figures.{name}.budget_key={key}: must be one of "
                          + ", ".join(f"tune.{b}" for b in BUDGETS))
    return key


def _peer_points(path) -> dict:
    """{dataset: {"train_seconds", "accuracy", "label"}} from the peer benchmark's JSON,
    or {} when it has not been written on this machine."""
    import json

    if not path or not Path(path).is_file():
        return {}
    try:
        points = json.loads(Path(path).read_text())
        return {d: {"train_seconds": float(p["train_seconds"]), "accuracy": float(p["accuracy"]),
                    "label": str(p.get("label", "released C++ LL-SVM"))}
                for d, p in points.items()}
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        from llc_bench.errors import ConfigError

        raise ConfigError(f"{path}: not the peer benchmark's points ({type(err).__name__}: "
                          f"{err}); rewrite it with scripts/bench_llsvm.py --peer-json") from None


def own_files_label(own: dict) -> str:
    """The part of a figure's file name that stands for ``dataset=file``'s files:
    ``file-<training file's stem>-<8 hex digits>``, a hash of the files' contents and the
    other ``dataset.*`` options, so that another ``mine.csv`` (another folder, other rows) or
    the same file read otherwise does not overwrite the figure of the first."""
    import hashlib
    import json

    from llc_bench.data.custom import own_file
    from llc_bench.data.fetch import sha256_of

    identity = {key: (sha256_of(own_file(key.split(".", 1)[1], value))
                      if key in ("dataset.train", "dataset.test") else value)
                for key, value in own.items()}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    return f"file-{Path(str(own.get('dataset.train'))).stem}-{digest.hexdigest()[:8]}"


def build_figures(names, profile: Profile, out_dir, executor, results_dir, mirrors=(),
                  run=True, echo=print, datasets=(), own=None, dry_run=False) -> dict:
    """Draw the figures ``names``; ``datasets`` (dataset configs) replace each figure's own
    datasets, and the file is then ``<figure>_<datasets>``: the committed figure stays.
    ``own``: the ``dataset.*`` overrides of ``dataset=file`` (its files), whose part of the
    file name is ``own_files_label``'s (``file-<training file's stem>-<hash>``).
    ``dry_run``: say each figure's runs (planned, in the store, to run and the launches)
    and draw nothing."""
    from llc_bench.tables.plan import Composer, Planner

    figures = list_figures()
    unknown = [n for n in names if n not in figures]
    if unknown:
        from llc_bench.errors import ConfigError

        raise ConfigError(f"unknown figure(s) {unknown} (choose from: {', '.join(figures)})")
    from llc_bench.data.registry import dataset_spec

    for d in datasets:
        dataset_spec(d)  # --dataset NAME: a ConfigError naming it when there is no such config
    out: dict = {}
    with Composer() as composer:
        planner = Planner(results_dir, profile, mirrors=mirrors, composer=composer)
        builder = FigureBuilder(profile, out_dir, executor, results_dir, mirrors, run, echo,
                                planner, dry_run)
        for name in names:
            spec = _effective(figures[name], profile)
            if datasets:
                spec["datasets"] = list(datasets)
            if own:
                by_dataset = dict(spec.get("dataset_overrides") or {})
                spec["dataset_overrides"] = {**by_dataset,
                                             "file": {**(by_dataset.get("file") or {}), **own}}
                train = Path(str(own.get("dataset.train")))  # its folder too: data/x/train.csv
                spec["titles"] = {"file": f"file {train.parent.name}/{train.name}"}
            kind = spec.get("kind")
            echo(f"[{name}] {spec.get('title', '')}")
            if "file" in (spec.get("datasets") or []) and not own:
                out[name] = (f"skipped: it draws your own files: llc-bench figures --figure "
                             f"{name} --dataset file dataset.train=PATH dataset.test=PATH")
                echo(f"  {out[name]}")
                continue
            skipped: list[str] = []
            draw = getattr(builder, kind, None) if kind in ("vs_param", "history", "boundary",
                                                            "pareto") else None
            if draw is None:
                out[name] = f"skipped: unknown kind {kind!r}"
                echo(f"  {out[name]}")
                continue
            if dry_run and kind == "boundary":
                out[name] = "planned: fitted in-process when drawn, no runs"
                echo(f"  {out[name]}")
                continue
            try:
                fig = draw(name, spec, skipped)
            except _Planned:
                out[name] = "planned"
                continue
            for s in skipped:
                echo(f"  skip {s}")
            if fig is None:
                out[name] = "skipped: nothing to draw (" + ("; ".join(skipped) or "no data") + ")"
                echo(f"  {out[name]}")
                continue
            fig.suptitle(spec.get("title", name) + ("" if profile.name == "full" else
                                                   f"  [{profile.name} profile]"), fontsize=10)
            label = own_files_label(own) if own else None
            path = _save(fig, Path(out_dir), "_".join(
                [name, *(label if d == "file" and label else d for d in datasets)]))
            out[name] = str(path)
            echo(f"  wrote {path} (+ .pdf)")
    return out
