"""The road from an estimator's ``fit`` to the SGD kernel: its length, no calls from the
trainer back into the estimator, and the deprecated ``llc_sgd`` module."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import blobs

import llc_bench.models._sgd_kernel as K
from llc_bench.data.rows import ArraySource
from llc_bench.models import LLSVMClassifier, OCCClassifier, SAPLClassifier, sgd_training

#: The most calls from ``fit`` to a kernel (scikit-learn's SGDClassifier takes about 5).
MAX_HOPS = 5
#: The modules of the trainer; the estimators' are llsvm.py, occ.py, history.py.
TRAINER = {"llc_sgd.py", "sgd_training.py", "sgd_epoch.py", "sgd_batches.py",
           "eta0_calibration.py", "sgd_schedule.py"}
ESTIMATOR = {"llsvm.py", "occ.py", "history.py", "progress.py"}


class _Chunks(ArraySource):
    """Arrays read in chunks of ``chunk_rows`` (a streamed source in memory)."""

    streamed = True

    def __init__(self, X, chunk_rows):
        super().__init__(X)
        self.chunk_rows = chunk_rows

    def chunk(self, c, scaled=True):
        lo, hi = self.bounds(c)
        return self.X[lo:hi]


def _hops_to(monkeypatch, kernel: str) -> list:
    """Patch ``_sgd_kernel.<kernel>`` to record, per call from the fitting thread, the
    functions from the kernel up to ``fit``; returns that list of chains."""
    real, chains = getattr(K, kernel), []

    def spy(*args):
        if threading.current_thread() is threading.main_thread():
            frame, chain = sys._getframe(1), [kernel]
            while frame is not None and frame.f_code.co_name != "fit":
                chain.append(frame.f_code.co_name)
                frame = frame.f_back
            chains.append(chain + ["fit"] if frame is not None else None)
        return real(*args)

    monkeypatch.setattr(K, kernel, spy)
    return chains


@pytest.mark.parametrize(("cls", "kernel"), [(LLSVMClassifier, "sgd_epoch_dense"),
                                             (SAPLClassifier, "sgd_epoch_anchors_dense")])
def test_fit_reaches_the_kernel_in_at_most_five_calls(cls, kernel, monkeypatch):
    X, y = blobs(2, n=200, d=3, seed=0)
    chains = _hops_to(monkeypatch, kernel)
    cls(n_anchors=6, k=3, epochs=2, random_state=0).fit(X, y)
    epochs = [c for c in chains if c is not None]
    assert len(epochs) == 2  # the calibration's passes run in worker threads
    for chain in epochs:
        assert len(chain) - 1 <= MAX_HOPS, " <- ".join(chain)


def _calls_back(fit) -> list:
    """(caller, callee) of every call from a trainer module into an estimator module
    while ``fit()`` runs (this thread)."""
    seen = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_back is not None:
            callee = Path(frame.f_code.co_filename).name
            caller = Path(frame.f_back.f_code.co_filename).name
            if caller in TRAINER and callee in ESTIMATOR:
                seen.append((f"{caller}:{frame.f_back.f_code.co_name}",
                             f"{callee}:{frame.f_code.co_name}"))

    sys.setprofile(profile)
    try:
        fit()
    finally:
        sys.setprofile(None)
    return seen


@pytest.mark.parametrize("model", ["llsvm", "sapl", "llsvm_chunks", "occ_sgd"])
def test_the_trainer_never_calls_the_estimator(model):
    X, y = blobs(3, n=240, d=3, seed=1)
    Xt, yt = blobs(3, n=60, d=3, seed=2)
    fits = {
        "llsvm": lambda: LLSVMClassifier(n_anchors=6, k=3, epochs=2, random_state=0).fit(
            X, y, eval_set=(Xt, yt)),
        "sapl": lambda: SAPLClassifier(n_anchors=6, k=3, epochs=2, random_state=0).fit(
            X, y, eval_set=(Xt, yt)),
        "llsvm_chunks": lambda: LLSVMClassifier(n_anchors=6, k=3, epochs=2,
                                                random_state=0).fit(_Chunks(X, 64), y),
        "occ_sgd": lambda: OCCClassifier(solver="sgd", n_basis=4, epochs=2,
                                         random_state=0).fit(X, y, eval_set=(Xt, yt)),
    }
    assert _calls_back(fits[model]) == []


def test_the_epochs_are_reported_as_plain_data():
    X, y = blobs(2, n=150, d=3, seed=3)
    clf = LLSVMClassifier(n_anchors=5, k=2, epochs=0, random_state=0).fit(X, y)
    code = clf.coding_.encode(X, clf.anchors_)
    Y = np.where(y == clf.classes_[1], 1.0, -1.0)[:, None]
    W, b = clf.W_.copy(), clf.b_.copy()
    training = sgd_training.SGDTraining(
        X, Y, code, W, b, sgd_training.SGDOptions(lambda_=0.01, epochs=3, random_state=0),
        objective=True)
    epochs = list(training.epochs())
    assert [e.number for e in epochs] == [0, 1, 2, 3]
    assert all(isinstance(e, sgd_training.Epoch) for e in epochs)
    assert epochs[0].objective == training.info["start_objective"]
    assert [e.objective for e in epochs[1:]] == training.info["epoch_objectives"]
    assert epochs[1].F.shape == (150, 1) and epochs[0].mean_k is None


def test_the_llc_sgd_module_is_a_deprecated_alias():
    import llc_bench.models.llc_sgd as old
    from llc_bench.models import eta0_calibration, sgd_batches, sgd_epoch, sgd_schedule

    for name, module in (("train_llc_sgd", sgd_training), ("calibrate_eta0", eta0_calibration),
                         ("run_epoch", sgd_epoch), ("stream_batches", sgd_batches),
                         ("default_t0", sgd_schedule)):
        with pytest.warns(DeprecationWarning, match=f"import {name} from {module.__name__}"):
            assert getattr(old, name) is getattr(module, name)
    with pytest.raises(AttributeError, match="tests/models/reference_sgd.py"):
        old.sgd_epoch_reference  # noqa: B018
