"""The examples of the README and of the docs pages (docs/**/*.md) run, and their sample
output is what a real run prints."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import MIRROR, REPO, llc

#: the README and every docs page, by path relative to the repository
DOCS = {path.relative_to(REPO).as_posix(): path.read_text(encoding="utf-8")
        for path in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]}
README = DOCS["README.md"]
#: (page, language, body) of every fenced block
BLOCKS = [(page, lang, body) for page, text in DOCS.items()
          for lang, body in re.findall(r"```(\w*)\n(.*?)```", text, re.S)]
#: the page whose examples make files and run in order (the wine files, the model file):
#: test_the_keep_and_apply_sample_is_a_real_run
KEEP_PAGE = "docs/guide/keep.md"
#: examples that need files a reader makes first: run by that test
NEEDS_FILES = ("scratch/models/", "wine.")


def _masked(line: str) -> str:
    """A result line with its timings blanked (they vary from run to run)."""
    return re.sub(r"\d+\.\d+s", "#s", line)


def _python_examples() -> dict:
    """Each distinct ```python block (but those that need files) -> the first page showing it."""
    out: dict = {}
    for page, lang, body in BLOCKS:
        if lang == "python" and not any(n in body for n in NEEDS_FILES):
            out.setdefault(body, page)
    return out


@pytest.mark.parametrize("code,page", list(_python_examples().items()),
                         ids=[f"{page}:{i}" for i, page in
                              enumerate(_python_examples().values())])
def test_python_examples_run(code, page, monkeypatch):
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    exec(compile(code, page, "exec"), namespace)  # noqa: S102 - our own docs


@pytest.fixture(scope="module")
def make_run(tmp_path_factory):
    """`make run` (`llc-bench run -m model=linear,llsvm`, banana) once for the module, in a
    scratch working directory: (that directory, exit code, stdout, stderr)."""
    import contextlib
    import io

    from llc_bench import cli

    cwd = tmp_path_factory.mktemp("make_run")
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        patch.chdir(cwd)
        try:
            cli.main(["run", "-m", "model=linear,llsvm", "data.download=false",
                      f"data.home={cwd / 'home'}", f"data.mirrors=[{REPO / 'datasets'}]",
                      "progress=off"])
            code = 0
        except SystemExit as stop:
            code = stop.code
    return cwd, code, out.getvalue(), err.getvalue()


def test_the_quick_start_output_is_a_real_run(make_run):
    """`make run`'s sample: the same result lines (hash, accuracy, hinge), timings aside."""
    _, code, out, err = make_run
    assert code == 0, err
    sample = next(body for _, lang, body in BLOCKS if "#0 : model=linear" in body)
    expected = [_masked(line) for line in sample.splitlines() if " | seed " in line]
    got = [_masked(line) for line in out.splitlines() if " | seed " in line]
    assert got == expected
    for line in sample.splitlines():  # the phase lines name the same phases
        if line.startswith(("data ", "model ")):
            assert re.sub(r"\d+\.\d+ s", "# s", line) in re.sub(r"\d+\.\d+ s", "# s", out)


def _shell_commands(pages=None) -> list[str]:
    """Every command of the bash blocks (of ``pages``, default all), continuation lines
    joined, comments cut."""
    out = []
    for page, lang, body in BLOCKS:
        if lang != "bash" or (pages is not None and page not in pages):
            continue
        for command in re.sub(r"\\\n\s*", "", body).splitlines():
            command = re.sub(r"\s+#.*$", "", command).strip()
            if command:
                out.append(command)
    return out


#: commands of the docs a test runs (cheap: seconds, offline); each runs in a scratch directory
CHEAP = ("llc-bench run --cfg job", "llc-bench run --help", "llc-bench models llsvm",
         "llc-bench tables --list")
#: commands that read the scratch store `make run` fills (the test fills it first)
AFTER_MAKE_RUN = (
    "llc-bench results --dataset banana --model llsvm --columns trainer.lambda_,trainer.t0",
    'llc-bench results --where trainer.lambda_=1e-5 --where "test_accuracy>0.95"',
    "llc-bench results --model sapl --csv sapl.csv", "llc-bench results --summary")
#: cheap with the dataset mirror: one LIBLINEAR fit at a fixed C
WITH_MIRROR = ("llc-bench run dataset=magic04 model=linear trainer.C=1.0",)
#: the others, by how they begin, and why no test runs them here
EXPENSIVE = {
    "make ": "builds a virtualenv or runs the suite, tables or figures (`make run`'s runs "
             "are the quick-start test above and tests/test_first_hour.py's clone)",
    "ray ": "starts or stops a Ray cluster",
    "llc-bench run -m": "a sweep: minutes to hours (its estimate: tests/test_first_hour.py)",
    "llc-bench run dataset=ijcnn": "CV over 50,000 rows (about a minute)",
    "llc-bench run dataset=banana model=kernel": "RBF grid CV (tens of seconds)",
    "llc-bench run dataset=file": "needs the reader's own files",
    "llc-bench predict": "needs the model file of the example before it",
    "llc-bench tune": "a selection of 30-60 trials (minutes)",
    "llc-bench tables --table": ("builds a table (tests/tables/test_tables.py builds two quick "
                                  "cells)"),
    "llc-bench tables --launcher": "a SLURM cluster",
    "llc-bench tables --dry-run": "plans every table of the full profile (about a minute)",
    "llc-bench figures --dry-run": ("plans every figure of the full profile (about a minute; "
                                    "tests/tables/test_figures.py plans two quick ones)"),
}


def test_every_shell_command_of_the_docs_is_run_or_marked_expensive():
    commands = _shell_commands()
    assert len(commands) > 30
    keep = _shell_commands([KEEP_PAGE])  # run in order by test_the_keep_and_apply_sample_...
    unmarked = [c for c in commands if c not in CHEAP + AFTER_MAKE_RUN + WITH_MIRROR
                and c not in keep
                and not any(c.startswith(prefix) for prefix in EXPENSIVE)]
    assert not unmarked, f"commands of the docs neither run by a test nor marked expensive: " \
                         f"{unmarked}"
    text = "\n".join(DOCS.values())
    missing = [c for c in CHEAP + AFTER_MAKE_RUN + WITH_MIRROR if c not in text]
    assert not missing, f"commands tested here that the docs no longer show: {missing}"


@pytest.mark.parametrize("command", CHEAP)
def test_cheap_commands_of_the_readme_run(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = llc(capsys, *command.split()[1:])
    assert code == 0 and out, err


def test_the_results_examples_run_on_the_store_make_run_fills(make_run, capsys, monkeypatch):
    """`make run` writes results-scratch/; the docs' `llc-bench results` lines read it."""
    import shlex

    cwd, code, _, err = make_run
    assert code == 0, err
    monkeypatch.chdir(cwd)
    assert (cwd / "results-scratch" / "runs").is_dir()
    for command in AFTER_MAKE_RUN:
        code, out, err = llc(capsys, *shlex.split(command)[1:])
        assert code == 0, (command, err)
        if "--csv" in command:
            assert (cwd / "sapl.csv").is_file()  # no sapl records: the header alone
        elif "--where" in command:  # banana stays below 95 %
            assert out.strip().startswith("no records match all of the filters"), out
        elif "--summary" in command:  # linear and llsvm on banana, seed 0 each
            assert out.splitlines()[-1].startswith("2 setting(s), 2 record(s)"), out
        else:
            assert "banana" in out and "llsvm" in out, (command, out)


@pytest.mark.skipif(MIRROR is None, reason="real-data test: no dataset mirror")
@pytest.mark.parametrize("command", WITH_MIRROR)
def test_the_readme_runs_that_need_the_mirror(command, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = llc(capsys, *command.split()[1:], f"data.mirrors=[{MIRROR}]",
                         "data.download=false", "progress=off")
    assert code == 0, err
    assert re.search(r"^magic04 \| linear \| seed 0 \| test acc ", out, re.M), out


def test_every_llc_bench_subcommand_in_the_docs_exists():
    from llc_bench.cli import USAGE

    used = set(re.findall(r"^\s*llc-bench (\w+)", "\n".join(
        body for _, lang, body in BLOCKS if lang == "bash"), re.M))
    listed = set(re.findall(r"^  (\w+) ", USAGE, re.M))
    assert used and used <= listed, used - listed
    assert os.path.exists(REPO / "Makefile")


def _cells(line: str) -> list:
    """A CSV line's cells, numbers to 12 significant digits: the last bits of a decision
    value differ between processors (BLAS kernels), not between runs on one machine."""
    out = []
    for cell in line.split(","):
        try:
            out.append(f"{float(cell):.12g}")
        except ValueError:
            out.append(cell)
    return out


def test_the_keep_and_apply_sample_is_a_real_run(tmp_path, capsys, monkeypatch):
    """"Keep and apply a model": its commands, run in order, print its sample output."""
    blocks = [(lang, body) for page, lang, body in BLOCKS if page == KEEP_PAGE][:6]
    (_, write), (_, commands), (_, printed), (_, preds), (_, python), (_, shown) = blocks
    monkeypatch.chdir(tmp_path)
    exec(compile(write, KEEP_PAGE, "exec"), {})  # noqa: S102 - our own docs
    out = []
    for command in commands.replace("\\\n", " ").splitlines():
        extra = ["progress=off"] if command.startswith("llc-bench run") else []
        code, stdout, err = llc(capsys, *command.split()[1:], *extra)
        assert code == 0, err
        out += [line for line in (stdout + err).splitlines()
                if " | seed " in line or line.startswith(("accuracy", "wrote"))]
    assert [_masked(line) for line in out] == [_masked(line) for line in printed.splitlines()]
    got = [_cells(line) for line in (tmp_path / "preds.csv").read_text().splitlines()[:3]]
    assert got == [_cells(line) for line in preds.splitlines()]
    # in a child process: onnxruntime's thread calls rand(), LIBLINEAR's shuffles' state
    done = subprocess.run([sys.executable, "-c", python], cwd=tmp_path, capture_output=True,
                          text=True, check=True)
    assert done.stdout.splitlines() == shown.splitlines()


#: a row of the table of what the committed build reproduces, as the README and the tables
#: page show it
COUNTS_ROW = r"^\| \[.+?\]\(results/tables/(\w+)\.md\) \|(.*)\|$"


@pytest.mark.parametrize("page", ["README.md", "docs/tables.md"])
def test_the_counts_shown_are_those_of_the_committed_summary(page):
    """The table of what the committed build reproduces is results/tables/README.md's
    (compared, within, better, worse, paper only), and so is its all-tables line."""
    summary = (REPO / "results" / "tables" / "README.md").read_text()
    ours, theirs = {}, {}
    for line in summary.splitlines():
        m = re.match(r"\| \[.+?\]\((\w+)\.md\)\s*\|(.*)", line)
        if m:
            cells = [c.strip() for c in m.group(2).split("|")]
            theirs[m.group(1)] = [*cells[:4], cells[4].split()[0]]
    for m in re.finditer(COUNTS_ROW, DOCS[page], re.M):
        ours[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    assert ours and ours == theirs
    total = r"All tables: \d+ cells compared, \d+ within, \d+ better, \d+ worse \(\d+ of the worse"
    assert re.search(total, summary).group(0) == re.search(total, DOCS[page]).group(0)


def test_every_page_showing_the_counts_is_checked():
    showing = {page for page, text in DOCS.items() if re.search(COUNTS_ROW, text, re.M)}
    assert showing == {"README.md", "docs/tables.md"}
