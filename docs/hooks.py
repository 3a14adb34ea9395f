"""MkDocs hooks (mkdocs.yml: ``hooks``): pages made from the code when the site is built.

* ``reference/cli.md``: ``llc-bench --help`` and every command's ``--help``;
* ``reference/models.md``: ``llc-bench models`` and ``llc-bench models NAME`` per preset;
* ``results/tables/*.md`` and ``results/figures/*.png``: the committed tables and figures,
  at the paths the pages (and the README) link them by.

The text is what the installed ``llc-bench`` prints (``llc_bench.cli.main``), so the
references cannot drift from the code.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[1]


def llc_bench(*args: str) -> str:
    """What ``llc-bench ARGS`` prints on stdout (a ``--help`` exits: that is its end)."""
    from llc_bench.cli import main

    out, argv = io.StringIO(), sys.argv[:]
    try:
        with contextlib.redirect_stdout(out):
            main(list(args))
    except SystemExit as stop:
        if stop.code not in (0, None):
            raise RuntimeError(f"llc-bench {' '.join(args)} exited {stop.code}") from None
    finally:
        sys.argv = argv
    return out.getvalue()


def _block(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```\n"


def commands() -> list[str]:
    """The subcommands ``llc-bench --help`` lists."""
    return re.findall(r"^  (\w+) ", llc_bench("--help"), re.M)


def cli_page() -> str:
    parts = ["# Command-line reference\n",
             "Generated when the site is built from what `llc-bench --help` and each command's "
             "`--help` print. The [user guide](../guide/runs.md) explains the commands with "
             "examples.\n", "## llc-bench\n", _block(llc_bench("--help"))]
    for name in commands():
        parts += [f"## llc-bench {name}\n", _block(llc_bench(name, "--help"))]
    return "\n".join(parts)


def presets() -> list[str]:
    """The model presets ``llc-bench models`` lists (its first column)."""
    lines = llc_bench("models").splitlines()
    return [line.split()[0] for line in lines[1:] if line.strip() and line[0].isalnum()]


def models_page() -> str:
    parts = ["# Model reference\n",
             "Generated when the site is built from what `llc-bench models` and "
             "`llc-bench models NAME` print: every preset's paper, estimator, and each "
             "`coding.*` and `trainer.*` key with its default, the values it accepts, what "
             "`tune=auto` searches and what it does. Set a key with `llc-bench run "
             "model=NAME KEY=VALUE`; the same names are the estimators' parameters in "
             "Python ([runs and sweeps](../guide/runs.md)).\n",
             "## The presets\n", _block(llc_bench("models"))]
    for name in presets():
        parts += [f"## {name}\n", _block(llc_bench("models", name))]
    return "\n".join(parts)


def _committed(config) -> list[File]:
    """The committed tables and figures, published under their repository paths."""
    out = []
    for path in sorted((REPO / "results" / "tables").glob("*.md")):
        uri = f"results/tables/{'index' if path.stem == 'README' else path.stem}.md"
        out.append(File.generated(config, uri, content=path.read_text(encoding="utf-8")))
    for path in sorted((REPO / "results" / "figures").glob("*.png")):
        out.append(File.generated(config, f"results/figures/{path.name}",
                                  abs_src_path=str(path)))
    return out


def on_files(files, config):
    files.append(File.generated(config, "reference/cli.md", content=cli_page()))
    files.append(File.generated(config, "reference/models.md", content=models_page()))
    for file in _committed(config):
        files.append(file)
    return files
