"""The README's examples run, and its sample output is what a real run prints."""

from __future__ import annotations

import os
import re

import pytest
from conftest import REPO, llc

README = (REPO / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.S)
#: examples that need files a reader makes first (the model file of the predict example,
#: the wine files): run in a scratch directory by test_the_keep_and_apply_sample_is_a_real_run
NEEDS_FILES = ("scratch/models/", "wine.")


def _masked(line: str) -> str:
    """A result line with its timings blanked (they vary from run to run)."""
    return re.sub(r"\d+\.\d+s", "#s", line)


@pytest.mark.parametrize("code", [body for lang, body in BLOCKS if lang == "python"
                                  and not any(n in body for n in NEEDS_FILES)])
def test_python_examples_run(code, monkeypatch):
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README


def test_the_quick_start_output_is_a_real_run(tmp_path, capsys):
    """`make run`'s sample: the same result lines (hash, accuracy, hinge), timings aside."""
    sample = next(body for lang, body in BLOCKS if "#0 : model=linear" in body)
    expected = [_masked(line) for line in sample.splitlines() if " | seed " in line]
    code, out, err = llc(capsys, "run", "-m", "model=linear,llsvm",
                         f"results_dir={tmp_path / 'scratch'}", "data.download=false",
                         f"data.home={tmp_path / 'home'}", f"data.mirrors=[{REPO / 'datasets'}]",
                         "progress=off")
    assert code == 0, err
    got = [_masked(line) for line in out.splitlines() if " | seed " in line]
    assert got == expected
    for line in sample.splitlines():  # the phase lines name the same phases
        if line.startswith(("data ", "model ")):
            assert re.sub(r"\d+\.\d+ s", "# s", line) in re.sub(r"\d+\.\d+ s", "# s", out)


@pytest.mark.parametrize("command", ["llc-bench run --cfg job", "llc-bench run --help",
                                     "llc-bench models llsvm"])
def test_cheap_commands_of_the_readme_run(command, capsys, tmp_path, monkeypatch):
    assert command in README
    monkeypatch.chdir(tmp_path)
    code, out, err = llc(capsys, *command.split()[1:])
    assert code == 0 and out, err


def test_every_llc_bench_subcommand_in_the_readme_exists():
    from llc_bench.cli import USAGE

    used = set(re.findall(r"^\s*llc-bench (\w+)", "\n".join(
        body for lang, body in BLOCKS if lang == "bash"), re.M))
    listed = set(re.findall(r"^  (\w+) ", USAGE, re.M))
    assert used and used <= listed, used - listed
    assert os.path.exists(REPO / "Makefile")


def test_the_keep_and_apply_sample_is_a_real_run(tmp_path, capsys, monkeypatch):
    """"Keep and apply a model": its commands, run in order, print its sample output."""
    section = README[README.index("## Keep and apply a model"):]
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)[:6]
    (_, write), (_, commands), (_, printed), (_, preds), (_, python), (_, shown) = blocks
    monkeypatch.chdir(tmp_path)
    exec(compile(write, "README.md", "exec"), {})  # noqa: S102 - our own README
    out = []
    for command in commands.replace("\\\n", " ").splitlines():
        extra = ["progress=off"] if command.startswith("llc-bench run") else []
        code, stdout, err = llc(capsys, *command.split()[1:], *extra)
        assert code == 0, err
        out += [line for line in (stdout + err).splitlines()
                if " | seed " in line or line.startswith(("accuracy", "wrote"))]
    assert [_masked(line) for line in out] == [_masked(line) for line in printed.splitlines()]
    assert (tmp_path / "preds.csv").read_text().splitlines()[:3] == preds.splitlines()
    exec(compile(python, "README.md", "exec"), {})  # noqa: S102
    assert capsys.readouterr().out.splitlines() == shown.splitlines()
