"""One self-contained HTML page of a table build: ``report.html``.

It holds a table of contents, the summary, every figure of the figures directory embedded
as a base64 PNG, and every table with its verdict colours (✓ within green, ▲ better blue,
▼ worse red) and its notes, each footnote key a link to its note.  A table's methods and
runs (the config hashes behind every cell) are folded in ``<details>`` sections, and every
section has a link back to the contents.  It is made from the Markdown the build wrote
(``<out>/README.md`` and ``<out>/<table>.md``), so the page and the files never disagree;
open it in a browser, nothing else is needed.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import re
from pathlib import Path

from llc_bench.files import atomic_write_text

VERDICT_CLASSES = {"✓": "within", "▲": "better", "▼": "worse"}
STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1400px;
       padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 12.5px; }
th, td { border: 1px solid #ccc; padding: 3px 6px; vertical-align: top; }
th { background: #f3f3f3; text-align: left; }
td.within { background: #e3f5e1; } td.better { background: #e1ecfa; }
td.worse { background: #fbe3e1; }
.legend span { padding: 1px 6px; margin-right: 6px; }
.wrap { overflow-x: auto; }
figure { display: inline-block; margin: 0.5em 1em 1em 0; vertical-align: top; }
figure img { max-width: 640px; border: 1px solid #ddd; }
code { background: #f5f5f5; padding: 0 2px; }
nav ol { margin: 0.3em 0; } nav li { margin: 0.1em 0; }
a.top { font-size: 12px; font-weight: normal; margin-left: 1em; }
details { margin: 0.6em 0; } summary { cursor: pointer; font-weight: 600; }
td a.note { text-decoration: none; }
"""
#: sections of a table's Markdown folded away: long lists a reader opens on demand
FOLDED = ("Methods", "Runs")
TOP = '<a class="top" href="#top">↑ contents</a>'
NOTE_KEY = re.compile(r"\[([a-z]{1,3})\]")


def _inline(text: str, anchors: dict[str, str]) -> str:
    """Inline Markdown of the generated files: `code`, **bold**, [text](link)."""
    out, pos = [], 0
    pattern = re.compile(r"`([^`]*)`|\*\*(.+?)\*\*|\[([^\]]+)\]\(([^)\s]+)\)")
    for match in pattern.finditer(text):
        out.append(html.escape(text[pos:match.start()]))
        code, bold, label, link = match.groups()
        if code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{html.escape(bold)}</strong>")
        else:
            target = anchors.get(link, link)
            out.append(f'<a href="{html.escape(target, quote=True)}">{html.escape(label)}</a>')
        pos = match.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _verdict(cell: str) -> str:
    marks = [cls for mark, cls in VERDICT_CLASSES.items() if mark in cell]
    return f' class="{marks[0]}"' if len(marks) == 1 else ""


def _note_keys(text: str) -> set[str]:
    return set(re.findall(r"^- \[([a-z]{1,3})\] ", text, flags=re.M))


def _link_keys(cell_html: str, prefix: str, keys: set[str]) -> str:
    """A table cell's footnote keys ``[a]`` as links to their notes."""
    return NOTE_KEY.sub(lambda m: (f'<a class="note" href="#{prefix}-note-{m.group(1)}">'
                                   f"[{m.group(1)}]</a>" if m.group(1) in keys
                                   else m.group(0)), cell_html)


def markdown_to_html(text: str, anchors: dict[str, str] | None = None,
                     shift: int = 0, notes_prefix: str | None = None,
                     note_keys: set[str] | None = None) -> str:
    """The Markdown subset the table writers produce: headings, paragraphs (a trailing
    double space breaks the line), '- ' lists, '> ' quotes and pipe tables.  With
    ``notes_prefix``, a list item ``- [k] text`` gets the id ``<prefix>-note-k`` and a
    table cell's ``[k]`` links to it (``note_keys``: the keys of the notes, by default
    those of ``text``)."""
    anchors = anchors or {}
    keys = set() if not notes_prefix else note_keys if note_keys is not None else \
        _note_keys(text)
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith("#"):
            level = min(6, len(line) - len(line.lstrip("#")) + shift)
            out.append(f"<h{level}>{_inline(line.lstrip('#').strip(), anchors)}</h{level}>")
            i += 1
        elif line.lstrip().startswith("|"):
            block = []
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                block.append(lines[i])
                i += 1
            header, rows = _cells(block[0]), [_cells(r) for r in block[2:]]
            head = "".join(f"<th>{_inline(c, anchors)}</th>" for c in header)
            body = "".join("<tr>" + "".join(
                f"<td{_verdict(c)}>{_link_keys(_inline(c, anchors), notes_prefix, keys)}</td>"
                if keys else f"<td{_verdict(c)}>{_inline(c, anchors)}</td>"
                for c in row) + "</tr>" for row in rows)
            out.append(f'<div class="wrap"><table><thead><tr>{head}</tr></thead>'
                       f"<tbody>{body}</tbody></table></div>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                key = re.match(r"- \[([a-z]{1,3})\] ", lines[i])
                ident = (f' id="{notes_prefix}-note-{key.group(1)}"'
                         if key and key.group(1) in keys else "")
                items.append(f"<li{ident}>{_inline(lines[i][2:], anchors)}</li>")
                i += 1
            out.append(f"<ul>{''.join(items)}</ul>")
        else:
            para, quote = [], line.startswith("> ")
            while i < len(lines) and lines[i].strip() and not lines[i].startswith(("#", "|",
                                                                                   "- ")):
                part = lines[i][2:] if quote and lines[i].startswith("> ") else lines[i]
                para.append(_inline(part.rstrip(), anchors)
                            + ("<br>" if part.endswith("  ") else ""))
                i += 1
            body = "<p>" + "\n".join(para) + "</p>"
            out.append(f"<blockquote>{body}</blockquote>" if quote else body)
    return "\n".join(out)


def _figures(figures_dir: Path, titles: dict[str, str]) -> list[str]:
    out = []
    for png in sorted(Path(figures_dir).glob("*.png")):
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        title = titles.get(png.stem, png.stem)
        out.append(f'<figure id="fig-{html.escape(png.stem)}"><img alt="{html.escape(title)}" '
                   f'src="data:image/png;base64,{data}"><figcaption>'
                   f"<code>{html.escape(png.name)}</code>: {html.escape(title)}"
                   "</figcaption></figure>")
    return out


def _sections(text: str) -> list[tuple[str | None, str]]:
    """(``## `` heading or None for the part before the first, Markdown) of a table file."""
    out: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in text.splitlines():
        if line.startswith("## "):
            out.append((line[3:].strip(), [line]))
        else:
            out[-1][1].append(line)
    return [(head, "\n".join(lines)) for head, lines in out if head or any(lines)]


def _folded_summary(heading: str, text: str) -> str:
    """The one line of a folded section: what it holds, counted."""
    rows = sum(1 for line in text.splitlines() if line.startswith("|")) - 2
    if heading == "Runs":
        hashes = sum(len(re.findall(r"\b[0-9a-f]{16}\b", line.rsplit("|", 2)[-2]))
                     for line in text.splitlines()[1:] if line.startswith("|"))
        return f"Runs: {rows} settings, {hashes} run records (config hashes)"
    if heading == "Methods":
        return f"Methods: the paper's {rows} methods and how each is run here"
    return f"{heading}: {rows} rows"


def _table_section(name: str, text: str, anchors: dict[str, str]) -> str:
    """One table: its title with a link back to the contents, the matrices and notes open,
    the methods and runs folded."""
    parts, keys = [], _note_keys(text)
    for heading, body in _sections(text):
        page = markdown_to_html(body, anchors, shift=1, notes_prefix=name, note_keys=keys)
        if heading is None:  # the title: the section's heading, with the way back up
            page = re.sub(r"</h2>", f" {TOP}</h2>", page, count=1)
        if heading in FOLDED:
            page = re.sub(r"^<h3>.*?</h3>\n?", "", page, count=1)
            page = (f"<details><summary>{html.escape(_folded_summary(heading, body))}"
                    f"</summary>{page}</details>")
        parts.append(page)
    return f'<section id="{html.escape(name)}">' + "\n".join(parts) + "</section>"


def _title(text: str, default: str) -> str:
    return next((line.lstrip("#").strip() for line in text.splitlines()
                 if line.startswith("# ")), default)


def write_report(tables_dir, figures_dir, path, order: list[str] | None = None,
                 figure_titles: dict[str, str] | None = None) -> Path:
    """Write the page for the tables in ``tables_dir`` and the PNGs in ``figures_dir``."""
    tables_dir, path = Path(tables_dir), Path(path)
    names = [p.stem for p in sorted(tables_dir.glob("*.md")) if p.name != "README.md"]
    rank = {name: i for i, name in enumerate(order or [])}
    names.sort(key=lambda n: (rank.get(n, len(rank)), n))
    anchors = {f"{n}.md": f"#{n}" for n in names}
    texts = {n: (tables_dir / f"{n}.md").read_text() for n in names}
    contents = []
    parts = []
    summary = tables_dir / "README.md"
    if summary.is_file():
        page = markdown_to_html(summary.read_text(), anchors, shift=1)
        page = re.sub(r"</h2>", f" {TOP}</h2>", page, count=1)
        parts.append(f'<section id="summary">{page}</section>')
        contents.append('<li><a href="#summary">Summary</a></li>')
    parts.append('<p class="legend">Verdicts: <span class="within">✓ within</span>'
                 '<span class="better">▲ better</span><span class="worse">▼ worse</span></p>')
    titles = figure_titles or {}
    figures = _figures(figures_dir, titles) if Path(figures_dir).is_dir() else []
    if figures:
        parts.append(f'<section id="figures"><h2>Figures {TOP}</h2>' + "".join(figures)
                     + "</section>")
        stems = [p.stem for p in sorted(Path(figures_dir).glob("*.png"))]
        contents.append('<li><a href="#figures">Figures</a><ol>' + "".join(
            f'<li><a href="#fig-{html.escape(s)}">{html.escape(titles.get(s, s))}</a></li>'
            for s in stems) + "</ol></li>")
    for name in names:
        parts.append(_table_section(name, texts[name], anchors))
        contents.append(f'<li><a href="#{html.escape(name)}">'
                        f"{html.escape(_title(texts[name], name))}</a></li>")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>llc-bench: paper tables and figures</title>"
            f"<style>{STYLE}</style></head><body>"
            '<h1 id="top">llc-bench: paper tables and figures</h1>'
            f"<p>Generated by <code>llc-bench tables</code> on {stamp} from "
            f"<code>{html.escape(str(tables_dir))}</code> and "
            f"<code>{html.escape(str(figures_dir))}</code>.</p>"
            f'<nav id="contents"><h2>Contents</h2><ol>{"".join(contents)}</ol></nav>'
            + "\n".join(parts) + "</body></html>\n")
    atomic_write_text(path, page)
    return path


def build_report(results_dir, out_dir, profile, custom_out: bool = False) -> Path:
    """``<results_dir>/report.html`` for a full build into its usual place, else
    ``<out_dir>/report.html`` (a quick build never replaces the full report)."""
    from llc_bench.tables.figures import list_figures
    from llc_bench.tables.spec import tables_config

    results_dir, out_dir = Path(results_dir), Path(out_dir)
    path = (results_dir / "report.html" if profile.name == "full" and not custom_out
            else out_dir / "report.html")
    titles = {name: str(spec.get("title", "")) for name, spec in list_figures().items()}
    return write_report(out_dir, results_dir / profile.figures_out, path,
                        order=list(tables_config().get("tables") or []), figure_titles=titles)
