"""Write one table as Markdown, CSV and LaTeX, and the summary ``README.md``.

Every cell shows the paper's value, ours (mean ± std over our n seeds) and the difference
ours - paper, with a verdict mark: ✓ within 2·√(ps²/n_paper + os²/n_ours) (the metric's
tolerance where neither std is known; see ``spec.Metric``), ▲ better, ▼ worse. A cell
without a number of ours carries a footnote key whose note says why (dataset offline,
not described by the paper, not yet implemented, copied from another paper, run failed,
...); a timing cell whose runs were not timed cleanly carries † and a note.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from llc_bench.tables.aggregate import CellResult, TableResult
from llc_bench.tables.plan import reason_kind
from llc_bench.tables.spec import METRICS, RUN

MARKS = {"within": "✓", "better": "▲", "worse": "▼"}
TEX_MARKS = {"within": r"$^{\circ}$", "better": r"$^{+}$", "worse": r"$^{-}$"}
LEGEND = ("Each cell: paper / ours (ours − paper). Ours = mean ± std over our n seeds "
          "(n=k/N when fewer than planned). ✓ within: |ours − paper| ≤ 2·√(ps²/n_paper + "
          "os²/n_ours), twice the standard error of the difference of the two means (ps, os "
          "= the paper's and our std over runs, a missing std counting 0; n_paper = the "
          "paper's runs per cell, given under the title); where that bound is 0 (neither std "
          "known, or both 0) a fixed tolerance: 0.5 points for accuracy/error/rank, 0.005 "
          "for hinge losses. Timings and time ratios: within a factor of 2, as the hardware "
          "differs; † = a timing from runs that overlapped another run, used more than one "
          "thread, included numba JIT compilation or predate the start/stop log (see the "
          "note). ▲ better, ▼ worse. "
          "— = not reported; [a] = see the notes.")
TIMING_MARK = "†"


def fmt(value: float | None, metric: str, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    m = METRICS[metric]
    if m.factor is not None and metric != "test_time_ratio":
        text = f"{value:+.3g}" if signed else f"{value:.3g}"
    else:
        text = f"{value:+.{m.digits}f}" if signed else f"{value:.{m.digits}f}"
    return text.replace("-", "−")


def paper_text(cell: CellResult) -> str:
    p = cell.paper
    if p is None:
        return "—"
    if p.value is None:
        return "n/a"
    text = fmt(p.value, cell.metric)
    if p.lower_bound:
        text = "> " + text
    if p.std is not None:
        text += " ± " + fmt(p.std, cell.metric)
    return text


def ours_text(cell: CellResult) -> str:
    if cell.mean is None:
        return "—"
    text = fmt(cell.mean, cell.metric)
    if cell.std is not None:
        text += " ± " + fmt(cell.std, cell.metric)
    if cell.dataset.startswith("average"):
        return text
    if cell.n_planned and cell.n < cell.n_planned:
        text += f" (n={cell.n}/{cell.n_planned})"
    else:
        text += f" (n={cell.n})"
    if cell.parts is not None:
        num, den = cell.parts
        text += f" [{_seconds(num)} / {_seconds(den)}]"
    return text


def _seconds(value: float) -> str:
    return f"{value * 1000:.3g} ms" if value < 1 else f"{value:.3g} s"


def unclean_text(cell: CellResult) -> str:
    return "timing not clean: " + ", ".join(
        f"{n} of {cell.n} run(s) {why}" if cell.metric != "test_time_ratio" else f"{n} {why}"
        for why, n in sorted(cell.unclean.items()))


class Footnotes:
    """Distinct reasons of a table, keyed a, b, c, ..."""

    def __init__(self):
        self.keys: dict[str, str] = {}

    def key(self, reason: str) -> str:
        if reason not in self.keys:
            i = len(self.keys)
            letters = ""
            while True:
                letters = chr(ord("a") + i % 26) + letters
                i = i // 26 - 1
                if i < 0:
                    break
            self.keys[reason] = letters
        return self.keys[reason]


def _cell_parts(cell: CellResult, notes: Footnotes) -> tuple[str, str, str, str | None]:
    """(paper, ours, diff, verdict) texts; a footnote key on a missing ours."""
    paper = paper_text(cell)
    if cell.paper is not None and cell.paper.value is None and cell.paper.note:
        paper += f" [{notes.key(cell.paper.note)}]"
    ours = ours_text(cell)
    if cell.mean is None:
        ours = f"— [{notes.key(cell.reason or 'no result')}]"
    extra = [*(cell.notes if cell.mean is not None else ()), *cell.problems]  # cell rules' notes
    if cell.edges and cell.mean is not None:
        extra.append("CV chose a grid edge: " + ", ".join(
            f"{param} in {n} of {cell.n} runs" for param, n in sorted(cell.edges.items())))
    for part in dict.fromkeys(extra):  # one key per note: a note shared by cells is listed once
        ours += f" [{notes.key(part)}]"
    if cell.unclean and cell.mean is not None:
        ours += f" {TIMING_MARK} [{notes.key(unclean_text(cell))}]"
    diff = fmt(cell.diff, cell.metric, signed=True) if cell.diff is not None else ""
    return paper, ours, diff, cell.verdict


def _row_label(result: TableResult, dataset: str) -> str:
    config = result.spec.datasets.get(dataset)
    return dataset if config in (None, dataset) else f"{dataset} ({config})"


def matrix(result: TableResult, metric: str, notes: Footnotes, tex: bool = False) -> pd.DataFrame:
    spec = result.spec
    columns = {m: spec.methods[m].label for m in spec.methods}
    data = []
    index = []
    for dataset in result.rows:
        row = []
        row_metric = spec.derived.get(dataset, metric)  # a derived row has its own metric
        for method in spec.methods:
            cell = result.cells.get((dataset, method, row_metric))
            if cell is None:
                row.append("")
                continue
            paper, ours, diff, verdict = _cell_parts(cell, notes)
            if tex:
                text = f"{tex_escape(paper)} / {tex_escape(ours)}"
                if diff:
                    text += f" ({tex_escape(diff)}){TEX_MARKS[verdict]}"
            else:
                text = f"{paper} / {ours}"
                if diff:
                    text += f" ({diff} {MARKS[verdict]})"
            row.append(text)
        data.append(row)
        label = _row_label(result, dataset)
        index.append(tex_escape(label) if tex else label)
    frame = pd.DataFrame(data, index=index,
                         columns=[tex_escape(c) if tex else c for c in columns.values()])
    frame.index.name = "dataset"
    return frame


def _methods_table(result: TableResult) -> pd.DataFrame:
    rows = []
    for method, m in result.spec.methods.items():
        cells = [c for (d, me), c in result.plan.cells.items() if me == method]
        states = sorted({c.status for c in cells})
        status = ", ".join(reason_kind(s) if s != RUN else "run" for s in states)
        how = f"`model={m.model}`" if m.model else ""
        if m.overrides:
            how += " " + " ".join(f"`{k}={v}`" for k, v in m.overrides.items())
        rows.append({"paper method": f"{m.label} (`{method}`)", "ours": how.strip(),
                     "status": status, "reason": m.reason or next(
                         (c.reason for c in cells if c.reason and c.status != RUN), "")})
    return pd.DataFrame(rows)


def _settings_table(result: TableResult) -> pd.DataFrame:
    rows = []
    for (dataset, method), cell in result.plan.cells.items():
        if not cell.runs:
            continue
        run = cell.runs[0]
        extra = {k: v for k, v in run.overrides.items() if k not in ("model", "dataset", "seed")}
        rows.append({"dataset": dataset, "method": method,
                     "run": f"`dataset={cell.dataset_config} model={cell.model}`",
                     "seeds": cell.seeds,
                     "overrides": " ".join(f"`{k}={v}`" for k, v in extra.items()),
                     "config hashes": " ".join(r.hash for r in cell.runs)})
    return pd.DataFrame(rows)


def _paper_runs(result: TableResult) -> str:
    counts = sorted({c.n_paper for c in result.cells.values()
                     if c.paper_value is not None and not c.dataset.startswith("average")})
    return " / ".join(map(str, counts)) if counts else str(result.spec.paper_runs
                                                           or result.spec.seeds)


def render_markdown(result: TableResult) -> str:
    spec, plan = result.spec, result.plan
    notes = Footnotes()
    out = [f"# {spec.title}", ""]
    if plan.profile.name != "full":
        out += [f"> **{plan.profile.name} profile — not a reproduction**: "
                f"{plan.profile.description}", ""]
    out += ([f"Source: {spec.source}.  "] if spec.source else []) + [
            f"Profile: `{plan.profile.name}`; "
            f"seeds per cell: up to {max((c.seeds for c in plan.cells.values()), default=0)}. "
            f"Paper runs per cell (n_paper): {_paper_runs(result)}. "
            "Generated by `llc-bench tables`.", "", LEGEND, ""]
    for metric in spec.metrics:
        out += [f"## {METRICS[metric].label}", ""]
        out += [matrix(result, metric, notes).to_markdown(), ""]
    if notes.keys:
        out += ["## Notes", ""]
        out += [f"- [{k}] {reason}" for reason, k in notes.keys.items()]
        out += [""]
    if spec.notes:
        out += [f"- {n}" for n in spec.notes] + [""]
    out += ["## Methods", "", _methods_table(result).to_markdown(index=False), ""]
    settings = _settings_table(result)
    if len(settings):
        out += ["## Runs", "", "Every run is `llc-bench run dataset=... model=... seed=S "
                "<overrides>`; its record is `runs/<config hash>.json` in the results store.",
                "", settings.to_markdown(index=False), ""]
    c = result.counts()
    out += ["## Summary", "",
            f"{c['compared']} cells compared: {c['within']} within, {c['better']} better, "
            f"{c['worse']} worse; "
            f"{c['paper_only']} paper-only, {c['ours_only']} ours-only. "
            f"This build: {result.wall_seconds:.1f} s wall ({result.executed} runs executed, "
            f"{len(result.failed)} failed). The builds that ran the {result.built_runs} "
            f"runs took {result.build_seconds:.1f} s wall; compute in the records "
            f"{result.compute_seconds:.1f} s.", ""]
    if result.problems:
        out += ["Skipped records:", ""] + [f"- {p}" for p in result.problems] + [""]
    return "\n".join(out)


def render_csv(result: TableResult) -> pd.DataFrame:
    rows = []
    for (dataset, method, metric), cell in result.cells.items():
        plan = result.plan.cells.get((dataset, method))
        p = cell.paper
        rows.append({
            "paper": result.spec.paper, "table": result.spec.table, "dataset": dataset,
            "method": method, "metric": metric,
            "unit": p.unit if p else "",
            "dataset_config": plan.dataset_config if plan else "",
            "model": plan.model if plan else "",
            "paper_value": p.value if p else None, "paper_std": p.std if p else None,
            "ours_mean": cell.mean, "ours_std": cell.std, "n_runs": cell.n,
            "n_planned": cell.n_planned, "n_paper": cell.n_paper, "diff": cell.diff,
            "allowed": cell.allowed if cell.verdict else None,
            "verdict": cell.verdict or "",
            "ratio_numerator": cell.parts[0] if cell.parts else None,
            "ratio_denominator": cell.parts[1] if cell.parts else None,
            "timing_not_clean": unclean_text(cell) if cell.unclean else "",
            "status": cell.status, "reason": "" if cell.mean is not None else cell.reason,
            "problems": "; ".join(cell.problems), "seeds": " ".join(map(str, cell.seeds)),
            "config_hashes": " ".join(cell.hashes), "profile": result.plan.profile.name,
        })
    return pd.DataFrame(rows)


def tex_escape(text: str) -> str:
    table = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
             "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}",
             "^": r"\textasciicircum{}", "±": r"$\pm$", "−": r"$-$", "—": "--", "✓": "",
             "×": r"$\times$", "γ": r"$\gamma$", "ö": r"\"o", "ý": r"\'y", "ı": r"{\i}",
             "†": r"\dag{}"}
    return "".join(table.get(ch, ch) for ch in str(text))


def render_latex(result: TableResult) -> str:
    spec = result.spec
    notes = Footnotes()
    parts = [f"% {spec.title} -- generated by `llc-bench tables` (profile "
             f"{result.plan.profile.name}); needs \\usepackage{{booktabs}}", ""]
    for metric in spec.metrics:
        frame = matrix(result, metric, notes, tex=True)
        caption = (f"{tex_escape(spec.title)}: {tex_escape(METRICS[metric].label)}. Each cell: "
                   "paper / ours (ours $-$ paper), ours over $n$ seeds; $^{\\circ}$ within "
                   "$2\\sqrt{p_s^2/n_{paper} + o_s^2/n_{ours}}$ (a fixed tolerance where "
                   "neither std is known; timings within a factor of 2), "
                   "$^{+}$ better, $^{-}$ worse; \\dag{} timing not clean (see the notes).")
        if result.plan.profile.name != "full":
            caption += f" {tex_escape(result.plan.profile.name)} profile, not a reproduction."
        latex = frame.to_latex(escape=False, caption=caption,
                               label=f"tab:{spec.name}_{metric}",
                               column_format="l" + "l" * len(frame.columns))
        parts.append(latex)
    if notes.keys:
        parts.append("\\begin{itemize}\\footnotesize")
        parts += [f"  \\item[{k}] {tex_escape(r)}" for r, k in notes.keys.items()]
        parts.append("\\end{itemize}")
    return "\n".join(parts) + "\n"


def summary_record(result: TableResult) -> dict:
    counts = result.counts()
    reasons: dict[str, int] = {}
    for cell in result.cells.values():
        if cell.mean is None and cell.paper_value is not None:
            kind = reason_kind(cell.status) if cell.status != RUN else (
                "run failed" if cell.reason.startswith("run failed") else
                "not in profile" if cell.reason.startswith("not in the ") else "not run yet")
            reasons[kind] = reasons.get(kind, 0) + 1
    return {"table": result.spec.name, "title": result.spec.title,
            "profile": result.plan.profile.name, **counts, "unreachable": reasons,
            "timing_cells_not_clean": sum(1 for c in result.cells.values() if c.unclean),
            "wall_seconds": round(result.wall_seconds, 2), "executed": result.executed,
            "build_seconds": round(result.build_seconds, 2), "built_runs": result.built_runs,
            "failed": len(result.failed), "compute_seconds": round(result.compute_seconds, 2),
            "runs_planned": len({r.hash for r in result.plan.runs()}),
            "skipped_records": len(result.problems)}


def write_table(result: TableResult, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = result.spec.name
    summary = out / f".{name}.summary.json"
    _carry_build_time(result, summary)
    paths = [out / f"{name}.md", out / f"{name}.csv", out / f"{name}.tex"]
    paths[0].write_text(render_markdown(result))
    render_csv(result).to_csv(paths[1], index=False)
    paths[2].write_text(render_latex(result))
    summary.write_text(json.dumps(summary_record(result), indent=1) + "\n")
    return paths


def _carry_build_time(result: TableResult, previous_summary: Path) -> None:
    """The wall time of the builds that ran the table's runs, across builds: a build that
    runs every planned run starts the count afresh, a partial one adds to the last count,
    and a build from cache keeps it."""
    try:
        before = json.loads(previous_summary.read_text())
    except (OSError, ValueError):
        before = {}
    planned = len({r.hash for r in result.plan.runs()})
    if result.executed and result.executed >= planned:
        result.build_seconds, result.built_runs = result.wall_seconds, result.executed
        return
    result.build_seconds = float(before.get("build_seconds", 0.0))
    result.built_runs = int(before.get("built_runs", 0))
    if result.executed:
        result.build_seconds += result.wall_seconds
        result.built_runs += result.executed


def _worse_scores(records: list[dict], key: str) -> str:
    if not all(key in r for r in records):
        return ""
    return (f" ({sum(r[key] for r in records)} of the worse are accuracy, error or hinge "
            "cells)")


def write_summary(out_dir: str | Path, order: list[str], profile) -> Path:
    """``README.md`` over every table built into ``out_dir`` (from their summary files)."""
    out = Path(out_dir)
    records = []
    for path in sorted(out.glob(".*.summary.json")):
        try:
            records.append(json.loads(path.read_text()))
        except ValueError:
            continue
    rank = {name: i for i, name in enumerate(order)}
    records.sort(key=lambda r: rank.get(r["table"], len(rank)))
    lines = ["# Paper tables", ""]
    if profile.name != "full":
        lines += [f"> **{profile.name} profile — not a reproduction**: {profile.description}",
                  ""]
    lines += ["Generated by `llc-bench tables` (`make tables`). Per table: the cells where both "
              "the paper and we have a number, how many of ours are within "
              "2·√(ps²/n_paper + os²/n_ours) of the paper's (ps, os: the paper's and our std "
              "over runs; a fixed tolerance, 0.5 points or 0.005 hinge, where neither std is "
              "known; timings within a factor of 2), better or worse; the paper's cells we "
              "cannot fill and why; timing cells whose runs were not timed cleanly (overlapped, "
              "multi-threaded, JIT-compiling or unchecked); the wall time of the builds that "
              "ran the table's runs (a build from the store costs nothing) and the compute "
              "time recorded by the runs.", ""]
    rows = []
    for r in records:
        why = ", ".join(f"{v} {k}" for k, v in sorted(r.get("unreachable", {}).items()))
        rows.append({"table": f"[{r['title']}]({r['table']}.md)", "compared": r["compared"],
                     "within": r["within"], "better": r["better"], "worse": r["worse"],
                     "paper only (why)": f"{r['paper_only']}" + (f" ({why})" if why else ""),
                     "ours only": r["ours_only"],
                     "build wall time (s)": r.get("build_seconds", r["wall_seconds"]),
                     "runs built / planned": f"{r.get('built_runs', r['executed'])} / "
                                             f"{r['runs_planned']}",
                     "run compute (s)": r["compute_seconds"],
                     "timing cells not clean": r.get("timing_cells_not_clean", "—"),
                     "failed / skipped records": f"{r['failed']} / {r['skipped_records']}"})
    if rows:
        lines += [pd.DataFrame(rows).to_markdown(index=False), ""]
        total = {k: sum(r[k] for r in records) for k in ("compared", "within", "better",
                                                         "worse")}
        lines += [f"All tables: {total['compared']} cells compared, {total['within']} within, "
                  f"{total['better']} better, {total['worse']} worse"
                  + _worse_scores(records, "worse_scores") + "."]
        lines += [""]
    path = out / "README.md"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))
    return path
