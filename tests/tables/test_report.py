"""results/report.html: every table (verdict colours), every figure (base64 PNG), the notes;
and the run bar of `llc-bench tables`."""

import base64
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import REPO

from llc_bench import progress
from llc_bench.tables.report import build_report, write_report
from llc_bench.tables.spec import Profile

RESULTS = REPO / "results"
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGA"
                       "hKmMIQAAAABJRU5ErkJggg==")


class Page(HTMLParser):
    """Tables (with their cells' classes), images, links and text of a page."""

    def __init__(self, text):
        super().__init__()
        self.tables, self.images, self.links, self.text, self.ids = 0, [], [], [], set()
        self.cells: list[tuple[str | None, str]] = []
        self._cell = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.ids.add(attrs.get("id"))
        if tag == "table":
            self.tables += 1
        elif tag == "img":
            self.images.append(attrs["src"])
        elif tag == "a":
            self.links.append(attrs["href"])
        elif tag == "td":
            self._cell = [attrs.get("class"), ""]

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.cells.append(tuple(self._cell))
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell[1] += data


def _pipe_tables(markdown: str) -> int:
    lines = markdown.splitlines()
    return sum(1 for i, line in enumerate(lines) if line.lstrip().startswith("|")
               and (i == 0 or not lines[i - 1].lstrip().startswith("|")))


def test_tables_figures_notes_and_verdict_colours(tmp_path):
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    tables.mkdir()
    figures.mkdir()
    (tables / "README.md").write_text(
        "# Paper tables\n\n| table | compared |\n|:--|--:|\n| [T one](t1.md) | 3 |\n"
        "| [T two](t2.md) | 0 |\n\nAll tables: 3 cells compared.\n")
    (tables / "t1.md").write_text(
        "# T one: accuracy (%)\n\nSource: a paper.  \nProfile: `full`.\n\n"
        "| dataset | A | B |\n|:--|:--|:--|\n"
        "| banana | 55.29 / 54.95 (−0.34 ✓) | 89.71 / 90.10 (+0.39 ▲) |\n"
        "| usps | 91.87 / 91.13 (−0.74 ▼) | 93.67 / — [a] |\n\n"
        "## Notes\n\n- [a] dataset usps not available offline (`llc-bench datasets fetch usps`)\n")
    (tables / "t2.md").write_text("# T two <b>\n\n| x |\n|:--|\n| 1 < 2 |\n")
    (tables / "t1.csv").write_text("ignored\n")
    for name in ("sapl_fig1", "sapl_fig2"):
        (figures / f"{name}.png").write_bytes(PNG + name.encode())
    (figures / "sapl_fig1.pdf").write_bytes(b"%PDF")
    path = write_report(tables, figures, tmp_path / "out" / "report.html",
                        order=["t2", "t1"], figure_titles={"sapl_fig1": "Fig. 1: boundaries"})
    page = Page(path.read_text())
    assert page.tables == 3
    assert sorted(base64.b64decode(src.split(",", 1)[1]) for src in page.images) == \
        [PNG + b"sapl_fig1", PNG + b"sapl_fig2"]
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    classes = {text.strip(): cls for cls, text in page.cells}
    assert classes["55.29 / 54.95 (−0.34 ✓)"] == "within"
    assert classes["89.71 / 90.10 (+0.39 ▲)"] == "better"
    assert classes["91.87 / 91.13 (−0.74 ▼)"] == "worse"
    assert classes["93.67 / — [a]"] is None and classes["1 < 2"] is None
    text = "".join(page.text)
    assert "dataset usps not available offline" in text and "Fig. 1: boundaries" in text
    assert "T two <b>" in text                        # escaped, not markup
    assert {"#t1", "#t2", "#figures"} <= set(page.links) and {"t1", "t2"} <= page.ids
    assert text.index("T two <b>") < text.index("T one: accuracy")  # the given order


def test_the_committed_tables_and_figures_all_appear(tmp_path):
    tables, figures = RESULTS / "tables", RESULTS / "figures"
    if not any(tables.glob("*.md")):
        pytest.skip("no committed tables")
    path = write_report(tables, figures, tmp_path / "report.html")
    page = Page(path.read_text())
    expected = sum(_pipe_tables(p.read_text()) for p in tables.glob("*.md"))
    assert page.tables == expected
    assert len(page.images) == len(list(figures.glob("*.png")))
    assert {p.stem for p in tables.glob("*.md") if p.name != "README.md"} <= page.ids
    assert {cls for cls, _ in page.cells} >= {"within", "better", "worse"}


def test_report_place_by_profile(tmp_path, monkeypatch):
    monkeypatch.setattr("llc_bench.tables.report.write_report",
                        lambda tables, figures, path, **kw: (Path(tables), Path(figures), path))
    full, quick = Profile("full", "", 10), Profile("quick", "", 1, out="tables-quick",
                                                   figures_out="figures-quick")
    res = tmp_path / "res"
    assert build_report(res, res / "tables", full) == (res / "tables", res / "figures",
                                                       res / "report.html")
    assert build_report(res, res / "tables-quick", quick)[2] == res / "tables-quick" / "report.html"
    assert build_report(res, tmp_path / "x", full, custom_out=True)[2] == tmp_path / "x" / \
        "report.html"


def test_tables_run_bar_counts_result_lines(capsys, monkeypatch):
    for var in (progress.ENV, *progress.CI_VARS):
        monkeypatch.delenv(var, raising=False)
    lines = ["  launch 2 run(s): llc-bench run -m ...", "    banana | llsvm | seed 0 | test acc",
             "    banana | linear | seed 0 | test acc"]
    for mode in ("off", "on"):
        progress.configure(mode)
        seen = []
        with progress.runs_bar(2, "[t] runs", seen.append) as echo:
            for line in lines:
                echo(line)
            assert echo.bar.n == (2 if mode == "on" else 0)
        assert seen == lines
        err = capsys.readouterr().err
        assert ("0/2" in err and "[t] runs" in err) if mode == "on" else err == ""
    progress.configure(None)


class Structure(HTMLParser):
    """Ids, links, the <details> a table or text sits in, and the contents' links."""

    def __init__(self, text):
        super().__init__()
        self.ids, self.links, self.nav_links, self.top_links = set(), [], [], 0
        self.tables_in_details, self.tables_open, self.summaries = [], [], []
        self._details, self._nav, self._table, self._summary = 0, 0, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "details":
            self._details += 1
        elif tag == "nav":
            self._nav += 1
        elif tag == "summary":
            self._summary = ""
        elif tag == "a":
            self.links.append(attrs["href"])
            if self._nav:
                self.nav_links.append(attrs["href"])
            if attrs.get("class") == "top":
                self.top_links += 1
        elif tag == "table":
            self._table = ["", self._details > 0]

    def handle_endtag(self, tag):
        if tag == "details":
            self._details -= 1
        elif tag == "nav":
            self._nav -= 1
        elif tag == "summary":
            self.summaries.append(self._summary)
            self._summary = None
        elif tag == "table" and self._table is not None:
            text, folded = self._table
            (self.tables_in_details if folded else self.tables_open).append(text)
            self._table = None

    def handle_data(self, data):
        if self._table is not None:
            self._table[0] += data
        if self._summary is not None:
            self._summary += data


def _table_md(name, notes):
    rows = "\n".join(f"| d{i} | 1.0 / 2.0 [{k}] (+1.0 ▲) |" for i, k in enumerate(notes))
    return (f"# {name} title\n\nSource: x.\n\n## test accuracy (%)\n\n| dataset | A |\n|:--|:--|\n"
            f"{rows}\n\n## Notes\n\n" + "".join(f"- [{k}] note {k}\n" for k in notes)
            + "\n## Methods\n\n| paper method | ours |\n|:--|:--|\n| A | `model=a` |\n\n"
            "## Runs\n\nEvery run is ...\n\n| dataset | method | config hashes |\n|:--|:--|:--|\n"
            "| d0 | a | 0123456789abcdef fedcba9876543210 |\n| d1 | a | 00112233445566aa |\n\n"
            "## Summary\n\n1 cells compared.\n")


def test_contents_back_links_folded_runs_and_linked_notes(tmp_path):
    tables, figures = tmp_path / "tables", tmp_path / "figures"
    tables.mkdir()
    figures.mkdir()
    (tables / "README.md").write_text("# Paper tables\n\n| table |\n|:--|\n| [one](t1.md) |\n")
    (tables / "t1.md").write_text(_table_md("T one", ["a", "b"]))
    (tables / "t2.md").write_text(_table_md("T two", ["a"]))
    (figures / "f1.png").write_bytes(PNG)
    path = write_report(tables, figures, tmp_path / "report.html",
                        figure_titles={"f1": "Fig. 1: something"})
    page = Structure(path.read_text())
    # a table of contents: the summary, the figures (each one), every table by its title
    assert page.nav_links == ["#summary", "#figures", "#fig-f1", "#t1", "#t2"]
    assert {"top", "summary", "figures", "fig-f1", "t1", "t2"} <= page.ids
    assert page.top_links == 4                      # summary, figures, two tables
    # the runs' hash lists and the methods are folded, the result tables are open
    assert sorted(page.summaries) == ["Methods: the paper's 1 methods and how each is run here",
                                      "Methods: the paper's 1 methods and how each is run here",
                                      "Runs: 2 settings, 3 run records (config hashes)",
                                      "Runs: 2 settings, 3 run records (config hashes)"]
    assert all("config hashes" in t for t in page.tables_in_details if "hashes" in t)
    assert not any("0123456789abcdef" in t for t in page.tables_open)
    assert sum("test accuracy" in t or "1.0 / 2.0" in t for t in page.tables_open) == 2
    # each table's footnote keys link to that table's notes
    assert {"t1-note-a", "t1-note-b", "t2-note-a"} <= page.ids
    assert {"#t1-note-a", "#t1-note-b", "#t2-note-a"} <= set(page.links)


def test_the_committed_report_is_navigable_and_folds_its_hash_lists():
    path = RESULTS / "report.html"
    if not path.is_file():
        pytest.skip("no committed report")
    page = Structure(path.read_text())
    tables = {p.stem for p in (RESULTS / "tables").glob("*.md") if p.name != "README.md"}
    figures = {f"fig-{p.stem}" for p in (RESULTS / "figures").glob("*.png")}
    assert {f"#{n}" for n in tables | figures | {"summary", "figures"}} <= set(page.nav_links)
    assert page.top_links >= len(tables) + 2
    assert any("config hashes" in t for t in page.tables_in_details)
    assert not any("config hashes" in t for t in page.tables_open)
    links = [h[1:] for h in page.links if h.startswith("#") and "-note-" in h]
    assert links and set(links) <= page.ids         # every footnote key lands on its note


def test_the_committed_tables_list_each_note_once():
    """A note shared by several cells (the skin data note, a grid edge) is one footnote that
    those cells cite, never repeated inside a longer note."""
    import re

    for md in (RESULTS / "tables").glob("*.md"):
        notes = re.findall(r"^- \[[a-z]+\] (.*)$", md.read_text(), flags=re.M)
        assert len(notes) == len(set(notes)), md.name
        for a in notes:
            for b in notes:
                assert a == b or not (a.startswith(b + "; ") or f"; {b}" in a), \
                    (md.name, b[:80], a[:80])
