"""A sweep on a local Ray instance with 2 workers (hydra-ray-launcher, `llc-bench[ray]`)
writes the same records as the basic launcher.  Skipped without the ray extra."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from llc_bench.cli import main

pytest.importorskip("ray")
pytest.importorskip("hydra_plugins.hydra_ray_launcher")

BIN = Path(sys.executable).parent / "llc-bench"
JOBS = ["seed=0,1", "trainer.C=1.0", f"data.mirrors=[{REPO / 'datasets'}]",
        "data.download=false"]


def _hashes(results: Path) -> set[str]:
    return {json.loads(p.read_text())["config_hash"] for p in (results / "runs").glob("*.json")}


@pytest.mark.slow
def test_two_worker_local_ray_sweep(tmp_path):
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "HYDRA_FULL_ERROR": "0"}
    out = subprocess.run(
        [str(BIN), "run", "-m", "hydra/launcher=ray", "hydra.launcher.ray.init.address=local",
         "+hydra.launcher.ray.init.num_cpus=2",
         "+hydra.launcher.ray.init.include_dashboard=false", *JOBS,
         f"results_dir={tmp_path / 'ray'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Ray Launcher is launching 2 jobs" in out.stdout + out.stderr
    main(["run", "-m", *JOBS, f"results_dir={tmp_path / 'basic'}"])
    assert len(_hashes(tmp_path / "ray")) == 2
    assert _hashes(tmp_path / "ray") == _hashes(tmp_path / "basic")
