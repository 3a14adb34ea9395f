"""Shared fixtures.

Real-data tests read the read-only dataset mirror ``../shared/datasets`` (next
to the checkout, as in CI) or the directory named by ``$LLC_BENCH_MIRROR``, through
the ``mirror`` fixture.  They skip, saying why, when neither exists, and carry the
``real_data`` marker: ``pytest -m "not real_data"`` is the quick inner loop.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]


def _find_mirror() -> Path | None:
    env = os.environ.get("LLC_BENCH_MIRROR")
    candidates = [Path(p) for p in env.split(os.pathsep)] if env else []
    candidates.append(REPO.parent / "shared" / "datasets")
    for path in candidates:
        if (path / "MANIFEST.tsv").is_file():
            return path
    return None


MIRROR = _find_mirror()


def pytest_collection_modifyitems(items):
    """Every test that uses the ``mirror`` fixture (directly or through another fixture)
    is a ``real_data`` test."""
    for item in items:
        if "mirror" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_data)


@pytest.fixture(autouse=True, scope="module")
def _onnxruntime_stays_out():
    """onnxruntime, once imported, starts a thread that calls the C library's ``rand()``
    some seconds later; LIBLINEAR's seeded shuffles share that state, so a fit running
    then in the same worker changes (an unconverged one completely). Tests run it in a
    child process; this fails the module that imported it here."""
    yield
    assert "onnxruntime" not in sys.modules, "onnxruntime was imported in the test process"


@pytest.fixture(autouse=True)
def _no_hydra_run_left_over():
    """A Hydra app run in the test process (``main(["run", ...])``) leaves its runtime config
    (its working directory, its searchpath) behind for the next test, where relative own
    files would be read from that test's directory: clear it after every test."""
    yield
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().cfg = None


@pytest.fixture(autouse=True, scope="session")
def _committed_files_read_once():
    """The committed results/ (thousands of records) and the table configs are read-only in
    the suite, yet every `llc-bench run -m`, `tables`, `figures` and many-trial selection
    reads them again (the cost estimate; the tables' specs): in each test process they are
    read once per version of the files (the runs directory's, the file's mtime and size)
    and the callers get copies. Any other store or file is read as before."""
    import copy

    from llc_bench.store import costs
    from llc_bench.tables import spec

    committed = REPO / "results"
    medians, load_yaml, cache = costs._medians, spec._load_yaml, {}

    def medians_once(results_dir):
        runs = committed / "runs"
        if not results_dir or Path(results_dir).resolve() != committed or not runs.is_dir():
            return medians(results_dir)
        key = ("medians", runs.stat().st_mtime_ns)
        if key not in cache:
            cache[key] = medians(results_dir)
        return dict(cache[key])

    def load_yaml_once(path):
        real = Path(str(path))
        if not real.is_file():
            return load_yaml(path)
        stat = real.stat()
        key = ("yaml", str(real.resolve()), stat.st_mtime_ns, stat.st_size)
        if key not in cache:
            cache[key] = load_yaml(path)
        return copy.deepcopy(cache[key])

    costs._medians, spec._load_yaml = medians_once, load_yaml_once
    yield
    costs._medians, spec._load_yaml = medians, load_yaml


def _threads_per_worker() -> int | None:
    """Under ``pytest -n N`` (xdist) the N workers share the machine's cores: each gets
    cores // N threads (at least one); None outside xdist."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not os.environ.get("PYTEST_XDIST_WORKER") or not workers:
        return None
    return max(1, (os.cpu_count() or 1) // int(workers))


@pytest.fixture(autouse=True, scope="session")
def _blas_threads_per_worker():
    """BLAS and OpenMP pools limited to the worker's share of the cores: two workers each
    running two spinning BLAS threads on two cores burn the CPU they wait for."""
    threads = _threads_per_worker()
    if threads is None:
        yield
        return
    import scipy.linalg  # noqa: F401  (its own OpenBLAS, loaded before the limit)
    import sklearn.utils  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        yield


@pytest.fixture(autouse=True)
def _numba_threads_per_worker():
    """numba's parallel kernels on the worker's share of the cores (set before every test:
    a test that compares thread counts sets its own and restores numba's default)."""
    threads = _threads_per_worker()
    if threads is not None:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    yield


@pytest.fixture(scope="session")
def mirror() -> Path:
    """The shared dataset mirror, or skip the test."""
    if MIRROR is None:
        pytest.skip("real-data test: no dataset mirror (../shared/datasets or $LLC_BENCH_MIRROR)")
    return MIRROR


@pytest.fixture(scope="session")
def data_home(tmp_path_factory) -> Path:
    """A fresh data home shared by the session (parsed-array cache lives here)."""
    return tmp_path_factory.mktemp("data_home")


@pytest.fixture
def no_env(monkeypatch):
    """No dataset mirror or data home from the environment."""
    monkeypatch.delenv("LLC_BENCH_MIRROR", raising=False)
    monkeypatch.delenv("LLC_BENCH_DATA", raising=False)


def compose_run(*overrides, tmp_path, mirrors=()):
    """A resolved `llc-bench run` config whose files stay under ``tmp_path``."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    paths = ",".join(str(p) for p in (REPO / "datasets", *mirrors))
    # the models' defaults unless a test asks for selection (tune=auto is the CLI default)
    tune = [] if any(o.startswith("tune=") for o in overrides) else ["tune=off"]
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[
            f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
            f"data.mirrors=[{paths}]", "data.download=false", *tune, *overrides])
    return OmegaConf.to_container(cfg, resolve=True)


def run_on_mirror(tmp_path, mirror, *overrides):
    """`llc-bench run OVERRIDES` in-process on the dataset mirror: the record."""
    from llc_bench.experiment.runner import run_experiment

    cfg = compose_run(*overrides, tmp_path=tmp_path, mirrors=(mirror,))
    return run_experiment(cfg, echo=lambda line: None)


@pytest.fixture(scope="session")
def real_run(tmp_path_factory, mirror):
    """`llc-bench run OVERRIDES` on the dataset mirror into one results store and data home
    for the session, shared by the xdist workers: a config that several tests run (the
    same model, data, seed and settings) is fitted once, and the others read its record
    from the store (a worker asking for a run another one is fitting waits for it)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the workers' common temporary directory
    workdir = base / "real_runs"
    workdir.mkdir(exist_ok=True)
    return lambda *overrides: run_on_mirror(workdir, mirror, *overrides)


def blobs(n_classes, n=300, d=4, seed=0, scale=3.0):
    """Gaussian blobs: ``n`` points around ``n_classes`` random centres (spread ``scale``)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=scale, size=(n_classes, d))
    y = rng.integers(0, n_classes, n)
    return centers[y] + rng.normal(size=(n, d)), y


def xor(n=600, seed=0):
    """Uniform points in [-1, 1]^2 labelled by the sign of x1 * x2 (no linear separator)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 2))
    return X, (X[:, 0] * X[:, 1] > 0).astype(int)


def llc(capsys, *args):
    """Run `llc-bench ARGS` in-process: (exit code, stdout, stderr)."""
    from llc_bench import cli

    try:
        cli.main(list(args))
        code = 0
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return code, out, err


def llc_error(capsys, *args) -> str:
    """`llc-bench ARGS` in-process ends with exit 1 and one `llc-bench: error:` line: it."""
    code, _, err = llc(capsys, *args)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("llc-bench: error: "), err
    return lines[0]


def keep_model(tmp_path, train, *overrides, test=None):
    """`llc-bench run dataset=file ... save_model=true` on own files: (model file, record)."""
    import json

    from llc_bench.cli import main

    split = [f"dataset.test={test}"] if test else ["dataset.test_fraction=0.3"]
    store = tmp_path / "store"
    main(["run", "dataset=file", f"dataset.train={train}", *split, "tune=off", *overrides,
          "save_model=true", f"results_dir={store}", "progress=off"])
    runs = sorted((store / "runs").glob("*.json"), key=lambda p: p.stat().st_mtime)
    record = json.loads(runs[-1].read_text())
    return store / record["model_file"], record


def write_csv(path, X, labels, header=("f0", "f1", "f2", "f3", "kind")):
    """Rows of ``X`` and their ``labels`` as a CSV file (with ``header``, unless None),
    written by a csv writer (a label holding a comma or a quote is quoted)."""
    import csv

    with open(path, "w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        if header:
            writer.writerow(header)
        writer.writerows([*map(repr, map(float, row)), label]
                         for row, label in zip(X, labels, strict=True))
    return path


# --- own files through `llc-bench run` in-process: one error line, nothing written ------------

@pytest.fixture
def cli_env(no_env, monkeypatch):
    """No mirror, data home or debug switch from the environment; sys.argv restored."""
    from llc_bench import cli

    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))


def where(tmp_path) -> list[str]:
    """Run overrides keeping the store and the data home under ``tmp_path`` (offline)."""
    return [f"results_dir={tmp_path / 'results'}", f"data.home={tmp_path / 'home'}",
            f"data.mirrors=[{REPO / 'datasets'}]", "data.download=false", "tune=off"]


def written(tmp_path) -> list[str]:
    """What a run left in the results store and the data home."""
    return sorted(str(p.relative_to(tmp_path)) for top in ("results", "home")
                  for p in (tmp_path / top).rglob("*") if p.is_file())


def one_error(code, err, *words) -> str:
    """Exit 1 with exactly one `llc-bench: error:` line holding ``words``, no traceback."""
    assert code == 1, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("llc-bench: error:")]
    assert len(lines) == 1, err
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


def problem(n=200, d=3, seed=0):
    """A linearly separable problem with labels 0/1."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 1] + X[:, 2] > 0).astype(int)


def write_delimited(path: Path, X, y, sep=",", header=None, fmt="{:.5f}") -> Path:
    """Rows of ``X`` (formatted by ``fmt``) then their label, joined by ``sep``."""
    rows = [sep.join([*(fmt.format(v) for v in x), str(label)]) for x, label in zip(X, y,
                                                                                   strict=True)]
    path.write_text("\n".join(([sep.join(header)] if header else []) + rows) + "\n")
    return path


def write_svmlight(path: Path, X, y) -> Path:
    """``X`` and ``y`` as a one-based svmlight file."""
    path.write_text("".join(f"{label} " + " ".join(f"{j + 1}:{v:.5f}" for j, v in enumerate(x))
                            + "\n" for x, label in zip(X, y, strict=True)))
    return path


def own(tmp_path, capsys, train, *overrides, test_fraction="0.3"):
    """``llc-bench run dataset=file`` on ``train`` (the linear SVM at C = 1, no CV)."""
    split = [f"dataset.test_fraction={test_fraction}"] if test_fraction else []
    linear = [] if any(o.startswith("model=") for o in overrides) else ["trainer.C=1.0"]
    return llc(capsys, "run", *where(tmp_path), "dataset=file", *linear,
               f"dataset.train={train}", *split, *overrides)


def refused(tmp_path, capsys, train, *overrides, words=(), **kw) -> str:
    """A refused own-file run: one error line, nothing written."""
    code, _, err = own(tmp_path, capsys, train, *overrides, **kw)
    line = one_error(code, err, *words)
    assert written(tmp_path) == []
    return line


def data_error(tmp_path, capsys, train, *overrides, words=(), **kw) -> str:
    """A problem found in the data: one line, no record and no parsed-data cache."""
    code, _, err = own(tmp_path, capsys, train, *overrides, **kw)
    line = one_error(code, err, *words)
    assert [p for p in written(tmp_path) if p.endswith((".json", ".npz"))] == []
    return line


def record_of(tmp_path, out) -> dict:
    """The record of the run whose last output line is ``out``."""
    import json

    key = out.strip().removesuffix("(cached)").split()[-1]
    return json.loads((tmp_path / "results" / "runs" / f"{key}.json").read_text())


def honoured(tmp_path, capsys, train, *overrides, **kw) -> tuple[dict, str]:
    """A successful own-file run: (its record, its output)."""
    code, out, err = own(tmp_path, capsys, train, *overrides, **kw)
    assert code == 0 and "Traceback" not in err and "error" not in err, err
    return record_of(tmp_path, out), out


@pytest.fixture
def csv_file(tmp_path):
    """``problem()`` as data.csv (no header)."""
    return write_delimited(tmp_path / "data.csv", *problem())


@pytest.fixture
def kept_linear(tmp_path, capsys):
    """A linear SVM kept from a CSV of three labelled blobs: (model file, training CSV, X,
    the rows' label names)."""
    names = np.array(["low", "mid", "high"])
    X, y = blobs(3, n=240)
    train = write_csv(tmp_path / "train.csv", X, names[y])
    model, _ = keep_model(tmp_path, train, "model=linear", "trainer.C=1")
    capsys.readouterr()
    return model, train, X, names[y]
