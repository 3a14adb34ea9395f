"""Deprecated: the ``trainer=llc_sgd`` SGD now lives in modules named by their job.

* :mod:`llc_bench.models.sgd_schedule` — the rate η_t = 1/(λ(t + t0)), η0, t0, the
  skip and bias-scale defaults;
* :mod:`llc_bench.models.eta0_calibration` — the η0 calibration;
* :mod:`llc_bench.models.sgd_epoch` — one epoch on the numba kernels, decision values
  and the training objective from codes;
* :mod:`llc_bench.models.sgd_batches` — the in-memory and streamed batches;
* :mod:`llc_bench.models.sgd_training` — the epochs (``SGDTraining``, ``train_llc_sgd``).

Importing a name from here still works for one release, with a DeprecationWarning.
"""

from __future__ import annotations

import importlib
import warnings

_MOVED = {
    "sgd_schedule": ("DENSE_SKIP", "SGD_DTYPES", "eta0_of", "t0_of_eta0", "default_t0",
                     "resolve_t0", "auto_bias_scale", "default_skip", "sgd_weights_dtype"),
    "eta0_calibration": ("ETA0_GRID_EXPONENTS", "CALIBRATION_ROWS", "CALIBRATION_REPEATS",
                         "LEARNED_PASSES", "LEARNED_ETA0_EXPONENTS", "CALIBRATION_TIE",
                         "calibrate_eta0", "coarse_to_fine", "nearest_point",
                         "walk_to_minimum"),
    "sgd_epoch": ("labels_matrix", "anchor_major", "run_epoch", "run_epoch_anchors",
                  "decision_from_codes", "sgd_objective"),
    "sgd_batches": ("CODE_CACHE_BYTES", "in_memory_batches", "stream_batches"),
    "sgd_training": ("DIVERGENCE_FACTOR", "RETRY_DIVISOR", "MAX_RETRIES",
                     "AnchorLearningUnavailable", "SGDOptions", "SGDTraining", "Epoch",
                     "train_llc_sgd", "check_finite_fit"),
}
_HOME = {name: module for module, names in _MOVED.items() for name in names}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r} (the numpy "
                             "reference steps are in the tests: tests/models/reference_sgd.py)")
    warnings.warn(f"llc_bench.models.llc_sgd is deprecated: import {name} from "
                  f"llc_bench.models.{module}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(f"{__package__}.{module}"), name)


def __dir__():
    return __all__
