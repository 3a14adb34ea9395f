"""The docs site builds (``mkdocs build --strict``: no broken link or anchor), its generated
references hold what the CLI prints, and every design-note citation in the code names a
section of docs/design.md."""

from __future__ import annotations

import re

import pytest
from conftest import REPO

#: the sections of docs/design.md (any heading level)
DESIGN = (REPO / "docs" / "design.md").read_text(encoding="utf-8")
SECTIONS = set(re.findall(r"^#+ (.+?)\s*$", DESIGN, re.M))


def test_the_site_builds_strictly(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (it is in the dev extra: "
                        "pip install -e '.[dev]')")
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    site = tmp_path / "site"
    build(load_config(str(REPO / "mkdocs.yml"), site_dir=str(site), strict=True))
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    for command in ("run", "tune", "models", "predict", "export", "datasets", "tables",
                    "figures", "results"):
        assert f'<h2 id="llc-bench-{command}">' in cli, command
    assert "--regions" in cli  # a command's options, from its own --help
    models = (site / "reference" / "models" / "index.html").read_text(encoding="utf-8")
    assert "coding.n_anchors" in models and "LLSVMClassifier" in models
    assert (site / "results" / "tables" / "sapl_table2" / "index.html").is_file()
    assert (site / "img" / "regions_banana.png").is_file()
    assert not (site / "hooks.py").exists()


def _citations() -> list[tuple[str, str]]:
    """(file, section) of every ``docs/design.md §Section`` in the code, configs and tests
    (a citation may wrap onto the next comment or docstring line)."""
    out = []
    for root in ("llc_bench", "conf", "tests", "scripts"):
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix not in (".py", ".yaml") or path.name == "test_docs.py":
                continue
            text = re.sub(r"\s*\n\s*#?\s*", " ", path.read_text(encoding="utf-8"))
            for m in re.finditer(r"docs/design\.md`*((?:,? §[A-Za-z][A-Za-z ]*)+)", text):
                for name in re.findall(r"§([A-Za-z][A-Za-z ]*)", m.group(1)):
                    out.append((str(path.relative_to(REPO)), name))
    return out


def test_every_design_citation_names_a_section_of_the_design_notes():
    citations = _citations()
    assert len(citations) >= 28
    unknown = [(f, name) for f, name in citations
               if not any(name.strip() == s or name.startswith(s + " ") for s in SECTIONS)]
    assert not unknown, f"citations of no section of docs/design.md: {unknown}"


def test_no_citation_of_a_document_outside_the_repository():
    stale = [str(p.relative_to(REPO)) for root in ("llc_bench", "conf", "tests", "scripts")
             for p in sorted((REPO / root).rglob("*")) if p.suffix in (".py", ".yaml")
             and p.name != "test_docs.py" and re.search(r"DESIGN(\.md`*)? *§", p.read_text())]
    assert not stale


def test_the_readme_is_a_front_door():
    """The README stays short (what it is, set-up, one run, one table, links); the rest is
    in the docs pages, each of which it links."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.encode()) <= 12_000
    for page in ("getting-started", "guide/runs", "guide/tuning", "guide/data",
                 "guide/results", "guide/keep", "tables", "architecture", "design",
                 "development"):
        assert f"(docs/{page}.md)" in readme, page
