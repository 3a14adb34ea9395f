"""What a result record says about the software and machine that produced it."""

from __future__ import annotations

import os
import platform
from importlib import metadata

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


def host_info() -> dict[str, object]:
    return {"node": platform.node(), "platform": platform.platform(),
            "machine": platform.machine(), "cpus": os.cpu_count()}
