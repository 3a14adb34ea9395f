"""Model files (``.llcm``): a trained estimator kept with what it needs to be applied.

A model file is a zip archive of two members, written atomically:

* ``model.skops``: the fitted estimator in skops' safe format (no pickle: arrays as
  ``.npy``, objects rebuilt from an allow-list of types; loading refuses any other type);
* ``meta.json``: ``format_version``, the estimator's class and parameters, the classes and
  their label names, the preprocessing of the training data (parser options, feature
  count and names, value scale, the scaler's statistics), package versions and the run's
  config hash.

``load_model`` returns ``(estimator, meta)``; a file that is not a model file, is
truncated, or comes from another ``format_version`` is a one-line ``ConfigError``.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError
from llc_bench.files import atomic_write_bytes

FORMAT_VERSION = 1
SUFFIX = ".llcm"
# Types outside llc_bench that a model may hold and skops does not trust by default
# (SVM-KNN's neighbour index; the calibration of calibration=...).
TRUSTED = ("sklearn.metrics._dist_metrics.EuclideanDistance64",
           "sklearn.neighbors._kd_tree.KDTree", "sklearn.neighbors._ball_tree.BallTree",
           "sklearn.calibration._CalibratedClassifier",
           "sklearn.calibration._SigmoidCalibration", "sklearn.isotonic.IsotonicRegression",
           "sklearn.model_selection._split.StratifiedKFold",
           # a model fitted on sparse rows keeps some as CSR (the kernel SVM's support
           # vectors, SVM-KNN's training rows): arrays, no code
           "scipy.sparse._csr.csr_matrix")


def _plain(value):
    """JSON-able: arrays as lists."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def base_estimator(model):
    """The classifier itself: a calibrated model (``calibration=...``) wraps it."""
    wrapped = getattr(model, "calibrated_classifiers_", None)
    return wrapped[0].estimator if wrapped else model


def save_model(estimator, path, *, preprocess: dict | None, config_hash: str | None,
               versions: dict) -> Path:
    """Write ``estimator`` (fitted) and its metadata to ``path`` (atomically)."""
    import skops.io as sio

    base = base_estimator(estimator)
    meta = {
        "format_version": FORMAT_VERSION,
        "estimator": f"{type(base).__module__}.{type(base).__qualname__}",
        "params": _plain({k: v for k, v in base.get_params(deep=False).items()}),
        "probabilities": getattr(estimator, "method", None) if base is not estimator else None,
        "classes": _plain(np.asarray(estimator.classes_)),
        "n_features": int(getattr(estimator, "n_features_in_", 0) or 0),
        "preprocess": _plain(preprocess),
        "config_hash": config_hash,
        "versions": versions,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("meta.json", json.dumps(meta, indent=1, allow_nan=False))
        archive.writestr("model.skops", sio.dumps(estimator))
    path = Path(path)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def _is_run_record(path: Path) -> bool:
    """Whether ``path`` is a run record (JSON with a config hash), a likely mistake for the
    model file beside it."""
    try:
        with open(path, "rb") as fh:
            if fh.read(1) != b"{":
                return False
        return "config_hash" in json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def load_model(path) -> tuple[object, dict]:
    """The fitted estimator of a model file and its metadata."""
    import skops.io as sio

    path = Path(path)
    keep = ("a run keeps its model with save_model=true, in <results_dir>/models/"
            "<config hash>.llcm")
    if not path.is_file():
        raise ConfigError(f"{path}: no such model file ({keep})")
    if _is_run_record(path):
        raise ConfigError(f"{path}: a run record, not a model file: {keep} (the same command "
                          "with save_model=true fits it again: the option is not in the key)")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            if not {"meta.json", "model.skops"} <= names:
                raise ConfigError(f"{path}: not an llc-bench model file (it lacks "
                                  f"{', '.join(sorted({'meta.json', 'model.skops'} - names))})")
            meta = json.loads(archive.read("meta.json"))
            version = meta.get("format_version")
            if version != FORMAT_VERSION:
                raise ConfigError(f"{path}: model file format_version {version!r}; this "
                                  f"llc-bench reads version {FORMAT_VERSION} (refit the model "
                                  "with this version: llc-bench run ... save_model=true)")
            blob = archive.read("model.skops")
    except (zipfile.BadZipFile, EOFError, json.JSONDecodeError, KeyError) as err:
        raise ConfigError(f"{path}: not an llc-bench model file, or a truncated one "
                          f"({' '.join(str(err).split())[:120]})") from None
    try:
        untrusted = sio.get_untrusted_types(data=blob)
        refused = [t for t in untrusted if not t.startswith("llc_bench.") and t not in TRUSTED]
        if refused:
            raise ConfigError(f"{path}: the model holds types that are not trusted: "
                              f"{', '.join(refused[:5])}")
        estimator = sio.loads(blob, trusted=untrusted)
    except ConfigError:
        raise
    except Exception as err:  # a damaged archive member
        raise ConfigError(f"{path}: the model could not be read "
                          f"({type(err).__name__}: {' '.join(str(err).split())[:120]})") from None
    return estimator, meta
