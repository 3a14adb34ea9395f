"""What a second core buys a selection: the fits of a real ``tune=auto`` selection, replayed
one after the other and two at a time.

For each model and data set, a :class:`~llc_bench.selection.SearchCV` at its defaults (the
procedure ``tune=auto`` runs) is fitted once while every estimator fit it makes is
recorded (the setting, the rows).  Those fits are then replayed in this process:

* ``serial 1``: one after the other on one numba thread (the yardstick's convention);
* ``serial 2``: one after the other on every numba thread (today's default: inside a fit
  the η0 grid points and the dual CD init's one-vs-rest problems run one per thread);
* ``pairs``: two at a time in two threads, one numba thread each (the SGD kernels and the
  dual CD init release the GIL), the trial fits alternating between two caches (each its
  own η0 walk and warm duals, as two lanes of trials would have), the fit of the choice
  alone on every thread.

The pairing ignores the pruner's and the budget's order (a trial's next fold waits on its
first two): ``pairs`` is the most two lanes of trials could save.  The RBF kernel SVM's
grid CV (its own fits, recorded the same way) is replayed serially and in pairs too, for
the like-for-like ratio of the two on two cores.  Run with ``OMP_NUM_THREADS=1``
(scikit-learn's k-means and BLAS on one thread in every mode), nothing else running:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python scripts/bench_two_cores.py \
        --mirror ../shared/datasets --out results/bench/two_cores.md
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
import time
from pathlib import Path

import numba
import numpy as np
from sklearn.preprocessing import StandardScaler

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import yardstick  # noqa: E402  (the yardstick's own data sets)

MODELS = ["llsvm", "sapl", "jo", "ml3", "kernel"]


def load(name: str, max_train: int):
    """Standardised training rows and integer labels of a yardstick set."""
    if name in yardstick.BUNDLED:
        X, y, _, _ = yardstick._bundled(name)
    elif name in yardstick.BREIMAN:
        X, y, _, _ = yardstick._breiman(name)
    else:
        X, y, _, _ = yardstick._from_loader(name, max_train, 1)
    X = X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=float)
    return StandardScaler().fit_transform(X), np.unique(y, return_inverse=True)[1]


class Recorder:
    """Every ``fit`` of ``cls`` while open: (its class, the estimator's parameters, X, y, a
    fit that two lanes would pair or not: a trial's, or one without a search's caches, as
    the kernel SVM's; not the fit of the choice), the fit itself run as before."""

    def __init__(self, cls):
        self.cls, self.calls = cls, []

    def __enter__(self):
        original, calls = self.cls.fit, self.calls

        @functools.wraps(original)  # the same signature: the search hands its caches
        def fit(est, X, y, **kw):
            cache = kw.get("trial_cache")
            paired = cache is None or (cache.eta0_walk is not None
                                       or cache.warm_duals is not None)
            calls.append((type(est), est.get_params(deep=False), X, y, paired, kw))
            return original(est, X, y, **kw)

        self.original = original
        self.cls.fit = fit
        return self

    def __exit__(self, *exc):
        self.cls.fit = self.original


def recorded_fits(model: str, X, y, seed: int):
    """The fits of ``model``'s default selection on (X, y): the SearchCV ``tune=auto`` runs
    (its budget, protocol and caches at their defaults), or the kernel SVM's grid CV."""
    from llc_bench.models import KernelSVMClassifier
    from llc_bench.selection import SearchCV
    from llc_bench.selection.presets import from_preset

    if model == "kernel":
        from sklearn.svm import SVC

        with Recorder(SVC) as rec:
            KernelSVMClassifier(random_state=seed).fit(X, y)
        return rec.calls
    estimator = from_preset(model, None, seed=seed)
    with Recorder(type(estimator)) as rec:
        SearchCV(estimator, space=model, random_state=seed).fit(X, y)
    return rec.calls


def replay(calls, mode: str) -> float:
    """Seconds to run ``calls`` again in ``mode`` (module docstring)."""
    from llc_bench.models._base import TrialCache

    caches = [TrialCache(warm_start=True, eta0_walk=True, pass_cap=30, calibration_repeats=1)
              for _ in range(2)]  # two lanes, each its own η0 walk and warm duals

    def job(i, call, threads):
        cls, params, X, y, paired, kw = call
        numba.set_num_threads(threads)
        if "trial_cache" in kw:
            kw = {"trial_cache": caches[i % 2] if paired else TrialCache(
                memo=False, pass_cap=30)}
        cls(**params).fit(X, y, **kw)

    trials = [c for c in calls if c[4]]
    rest = [c for c in calls if not c[4]]
    every = numba.config.NUMBA_NUM_THREADS
    start = time.perf_counter()
    if mode == "pairs":
        for i in range(0, len(trials), 2):
            threads = [threading.Thread(target=job, args=(i + j, c, 1))
                       for j, c in enumerate(trials[i:i + 2])]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    else:
        for i, c in enumerate(trials):
            job(i, c, 1 if mode == "serial 1" else every)
    for i, c in enumerate(rest):
        job(i, c, 1 if mode == "serial 1" else every)
    numba.set_num_threads(every)
    return time.perf_counter() - start


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default="digits,waveform,spambase")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--mirror", type=Path, default=yardstick.MIRROR)
    parser.add_argument("--max-train", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    yardstick.MIRROR = args.mirror
    load_at_start = os.getloadavg()[0]
    lines = ["| set | rows | model | fits | serial 1 (s) | serial 2 (s) | pairs (s) | "
             "serial 2 / serial 1 | pairs / serial 2 |", "|---|---|---|---|---|---|---|---|---|"]
    for name in args.sets.split(","):
        X, y = load(name, args.max_train)
        for model in args.models.split(","):
            calls = recorded_fits(model, X, y, args.seed)  # also compiles the kernels
            s1, s2, p = (replay(calls, mode) for mode in ("serial 1", "serial 2", "pairs"))
            lines.append(f"| {name} | {len(y)} | {model} | {len(calls)} | {s1:.1f} | {s2:.1f} "
                         f"| {p:.1f} | {s2 / s1:.2f} | {p / s2:.2f} |")
            print(lines[-1], flush=True)
    head = (f"{os.cpu_count()} cores, numba {numba.__version__} ({numba.threading_layer()} "
            f"layer, {numba.config.NUMBA_NUM_THREADS} threads), OMP_NUM_THREADS="
            f"{os.environ.get('OMP_NUM_THREADS')}; load average {load_at_start:.2f} at the start, "
            f"{os.getloadavg()[0]:.2f} at the end; seed {args.seed}\n\n")
    text = head + "\n".join(lines) + "\n"
    if args.out is not None:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
