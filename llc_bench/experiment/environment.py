"""What a result record says about the software and machine that produced it."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
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
            "machine": platform.machine(), "cpus": os.cpu_count(), "cpu": _cpu_model()}


def _cpu_model() -> str | None:
    """The processor's name (Linux: /proc/cpuinfo's "model name"; else ``platform``'s)."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def host_of(record: dict) -> str | None:
    """What tells two runs' machines apart in every record: the platform string (OS and
    kernel build; two virtual machines differ there).  The processor (``cpu``) is recorded
    beside it in records written since 2026-11-28; older records have none."""
    return (record.get("host") or {}).get("platform")


def peak_rss_mb() -> float | None:
    """The process's peak resident set size so far, in MB (None where unsupported)."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return round(kib / 1024 * (1 / 1024 if sys.platform == "darwin" else 1), 1)


#: Environment variables that set the thread count of BLAS, OpenMP and numba
#: (``llc-bench tables`` sets each to 1 for every run it launches).
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
               "NUMBA_NUM_THREADS")


def thread_settings() -> dict[str, object]:
    """The thread settings a run computes with: the environment variables, the thread
    pools in effect (threadpoolctl, when installed: BLAS / OpenMP libraries loaded so
    far) and numba's thread count; ``single`` says whether every known count is 1."""
    env = {var: os.environ.get(var) for var in THREAD_VARS}
    pools = None
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        pass
    else:
        pools = [{"api": p.get("internal_api"), "num_threads": p.get("num_threads")}
                 for p in threadpool_info()]
    numba_threads = None
    try:
        import numba
    except ImportError:
        pass
    else:
        numba_threads = int(numba.get_num_threads())
    counts = [p["num_threads"] for p in pools or ()] + [numba_threads]
    if pools is None:   # no threadpoolctl: the variables are all we know
        counts += [env[v] for v in THREAD_VARS[:-1]]
    single = all(c is not None and str(c) == "1" for c in counts)
    return {"env": env, "pools": pools, "numba": numba_threads, "single": single}
