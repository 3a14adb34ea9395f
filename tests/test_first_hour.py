"""A new user's first runs leave the committed files alone (a scratch store by default)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO


def _git(*args, cwd) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(),
                    reason="needs git and a checkout")
def test_first_runs_in_a_fresh_clone_write_nothing_tracked(tmp_path, mirror):
    clone = tmp_path / "clone"
    _git("clone", "-q", str(REPO), str(clone), cwd=tmp_path)
    llc = Path(sys.executable).parent / "llc-bench"
    common = ["data.download=false", f"data.mirrors=[{mirror}]", "progress=off"]
    for args in (["model=linear"],                                   # the default: banana
                 ["dataset=magic04", "model=linear", "trainer.C=1.0"]):  # the README's third
        run = subprocess.run([str(llc), "run", *args, *common], cwd=clone, capture_output=True,
                             text=True, timeout=600)
        assert run.returncode == 0, run.stderr
        result = run.stdout.strip().splitlines()[-1]
        assert "test acc" in result and "(cached)" not in result  # not the committed record
    assert list((clone / "results-scratch" / "runs").glob("*.json"))
    assert _git("status", "--porcelain", cwd=clone) == ""          # nothing tracked changed
