"""What a result record says about the software and machine that produced it."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path

PACKAGES = ("llc-bench", "numpy", "scipy", "scikit-learn", "liblinear-official", "numba",
            "hydra-core", "omegaconf", "pandas")


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def code_revision() -> dict[str, object] | None:
    """The git commit of the checkout the code runs from (and whether it had local
    changes), or None for an installed copy."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], check=True,
                                capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], check=True, capture_output=True,
                               text=True, timeout=10).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def host_info() -> dict[str, object]:
    return {"node": platform.node(), "platform": platform.platform(),
            "machine": platform.machine(), "cpus": os.cpu_count()}
