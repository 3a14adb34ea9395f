"""Model files (``.llcm``): a trained estimator kept with what it needs to be applied.

A model file is a zip archive of two members, written atomically:

* ``model.skops``: the fitted estimator in skops' format (no pickle: arrays as ``.npy``,
  objects rebuilt from their attributes);
* ``meta.json``: ``format_version``, the estimator's class and parameters, the classes and
  their label names, the preprocessing of the training data (parser options, feature
  count and names, value scale, the scaler's statistics), package versions and the run's
  config hash.

``load_model`` returns ``(estimator, meta)``.  A model file is data: before skops builds
anything, every node of its schema must name a type of an explicit allow-list (the
estimators and codings the package's config files name as ``_target_``, or a config dir the
caller names; the objects they hold, plain containers and numeric arrays; never a function),
its zips must stay under the caps (members, inflated bytes, ratio), its arrays numeric; the
built estimator's fitted arrays are then checked against its ``_fitted_layout`` and the
metadata.  Whatever fails, and a file that is not a model file, is truncated, or comes from
another ``format_version``, is a one-line ``ConfigError`` naming the file.
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


#: A run record is smaller than this (a larger file starting with "{" is not read whole).
RECORD_BYTES = 64 << 20


def _is_run_record(path: Path) -> bool:
    """Whether ``path`` is a run record (JSON with a config hash), a likely mistake for the
    model file beside it."""
    try:
        with open(path, "rb") as fh:
            if fh.read(1) != b"{" or path.stat().st_size > RECORD_BYTES:
                return False
        return "config_hash" in json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return False


# ------------------------------------------------------------------------------ reading
#: Caps on a model file, far above any real model (the largest measured, SVM-KNN on
#: mnist's 60,000 rows: 377 MB in 4 arrays, a 19 MB file): members of either zip, and the
#: bytes its members inflate to (counted while decompressing too: a directory can lie).
MAX_MEMBERS = 100_000
MAX_BYTES = 4 << 30
#: Past MIN_RATIO_BYTES, a zip inflating more than MAX_RATIO times its stored size is a
#: bomb: deflate reaches ~1030x on zeros only; real arrays stay under ~750x (mnist: 20x,
#: a dense 0/1 matrix of 0.1 % ones: 745x).
MAX_RATIO = 1000
MIN_RATIO_BYTES = 64 << 20
#: How deep the schema of the estimator nests (real models: under 20).
MAX_DEPTH = 200
#: numpy dtype kinds an array member may have, or the fields of a structured one (a
#: neighbour tree's nodes): numbers and text (string class labels), no objects (pickle).
ARRAY_KINDS = "fiubU"


class _Refused(ValueError):
    """What is wrong with a model file (the message names no file)."""


def _shipped_types(config_dirs=()) -> dict[str, set[str]]:
    """Qualified type name -> the skops loaders it may come with: the estimators and codings
    the package's config files name (``trusted_classes``; and those of the config dirs the
    caller names), the objects they hold, and the plain containers and arrays."""
    import numpy
    import scipy.sparse
    import sklearn.calibration
    import sklearn.isotonic
    import sklearn.kernel_approximation
    import sklearn.metrics._dist_metrics
    import sklearn.model_selection
    import sklearn.neighbors
    import sklearn.svm

    estimators, codings = trusted_classes(config_dirs)
    objects = [*estimators, *codings,
               sklearn.svm.SVC, sklearn.neighbors.NearestNeighbors,
               sklearn.kernel_approximation.Nystroem,
               sklearn.calibration.CalibratedClassifierCV,
               sklearn.calibration._CalibratedClassifier,
               sklearn.calibration._SigmoidCalibration, sklearn.isotonic.IsotonicRegression,
               sklearn.model_selection.StratifiedKFold, sklearn.neighbors.KDTree,
               sklearn.neighbors.BallTree, sklearn.metrics._dist_metrics.EuclideanDistance64]
    allowed = {_name(t): {"ObjectNode"} for t in objects}
    allowed.update({"builtins.dict": {"DictNode"}, "builtins.list": {"ListNode"},
                    "builtins.tuple": {"TupleNode"},
                    _name(scipy.sparse.csr_matrix): {"SparseMatrixNode"}})
    for t in (numpy.ndarray, numpy.float64, numpy.float32, numpy.int64, numpy.int32,
              numpy.intp, numpy.bool_):
        allowed[_name(t)] = {"NdArrayNode"}
    for t in (str, int, float):  # a dict's key types
        allowed[_name(t)] = {"TypeNode"}
    return allowed


def _estimators_of(module: str) -> list[type]:
    """The public estimator classes ``module`` defines (an estimator's presets too:
    ``llsvm`` defines SAPLClassifier, JOClassifier and LCCSVMClassifier)."""
    import importlib

    from sklearn.base import BaseEstimator

    return [cls for name, cls in sorted(vars(importlib.import_module(module)).items())
            if isinstance(cls, type) and issubclass(cls, BaseEstimator)
            and cls.__module__ == module and not name.startswith("_")]


def trusted_classes(config_dirs=()) -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(estimators, codings) a model file may hold: the public estimator classes of the
    modules the ``_target_`` of ``conf/trainer/*.yaml`` names, and the other classes
    ``conf/coding/*.yaml`` names (the package's own files; with ``config_dirs``, a user's
    config dirs too, e.g. ``predict --config-dir``).  Never what a model file says."""
    from sklearn.base import BaseEstimator

    from llc_bench import targets

    named = {group: [*targets.shipped(group).values(),
                     *targets.user(group, config_dirs).values()]
             for group in ("trainer", "coding")}
    estimators = {cls: None for target in named["trainer"]
                  for cls in _estimators_of(target.rpartition(".")[0])}
    codings = {cls: None for cls in (targets.import_class(t, "coding._target_")
                                     for t in named["coding"])
               if not issubclass(cls, BaseEstimator)}
    return tuple(estimators), tuple(codings)


def shipped_estimators() -> tuple[type, ...]:
    """The estimator classes a model file may hold (``calibration=...`` wraps one)."""
    return trusted_classes()[0]


def _name(t) -> str:
    return f"{t.__module__}.{t.__qualname__}"


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: list,
                 keep: int | None = None) -> bytes:
    """The member's bytes (the first ``keep`` only, when given), counted against
    ``budget[0]`` as they inflate: more than the budget, or than the directory says, is
    refused before it is all read."""
    kept, total = [], 0
    with archive.open(info) as fh:
        while chunk := fh.read(1 << 20):
            total += len(chunk)
            if total > budget[0]:
                raise _Refused(f"{info.filename} inflates past the cap of {MAX_BYTES >> 20} MiB "
                               "a model file may hold (a zip bomb?)")
            if total > info.file_size:
                raise _Refused(f"{info.filename} inflates past the size its zip directory "
                               "gives")
            if keep is None or sum(map(len, kept)) < keep:
                kept.append(chunk)
    budget[0] -= total
    data = b"".join(kept)
    return data if keep is None else data[:keep]


def _check_directory(archive: zipfile.ZipFile, what: str) -> list[zipfile.ZipInfo]:
    """The members, refused when too many or inflating past the caps (by the directory)."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _Refused(f"{what} has {len(infos)} members, more than the {MAX_MEMBERS} a model "
                       "file may hold")
    total = sum(i.file_size for i in infos)
    if total > MAX_BYTES:
        raise _Refused(f"{what} inflates to {total >> 20} MiB, past the cap of "
                       f"{MAX_BYTES >> 20} MiB a model file may hold (a zip bomb?)")
    stored = sum(i.compress_size for i in infos)
    if total > MIN_RATIO_BYTES and total > MAX_RATIO * max(stored, 1):
        raise _Refused(f"{what} inflates {total // max(stored, 1)} times, to {total >> 20} "
                       "MiB (a zip bomb?)")
    return infos


def _check_npy(head: bytes, size: int, name: str) -> None:
    """A ``.npy`` member: a numeric dtype (no object array: no pickle) and as many bytes as
    its header's shape needs."""
    from numpy.lib import format as npy

    fh = io.BytesIO(head)
    try:
        version = npy.read_magic(fh)
        read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, _, dtype = read(fh, max_header_size=10_000)
    except Exception as err:  # not an array
        raise _Refused(f"{name} is not a numpy array ({' '.join(str(err).split())[:80]})") \
            from None
    fields = [dtype] if dtype.fields is None else [f[0] for f in dtype.fields.values()]
    if any(f.kind not in ARRAY_KINDS or f.fields is not None or f.subdtype for f in fields):
        raise _Refused(f"{name} holds an array of dtype {dtype}; a model file holds numbers "
                       "only")
    if fh.tell() + int(np.prod(shape, dtype=object)) * dtype.itemsize != size:
        raise _Refused(f"{name}: its array of shape {shape} does not match its {size} bytes")


def _check_npz(blob: bytes, name: str, budget: list) -> None:
    """A sparse matrix member (scipy's ``.npz``, itself a zip): CSR arrays only."""
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as inner:
            infos = _check_directory(inner, name)
            names = {i.filename for i in infos}
            if not names <= {"data.npy", "indices.npy", "indptr.npy", "format.npy",
                             "shape.npy"} or "format.npy" not in names:
                raise _Refused(f"{name} is not a CSR matrix (members {sorted(names)[:6]})")
            for info in infos:
                if info.filename == "format.npy":
                    data = _read_capped(inner, info, budget)
                    if np.load(io.BytesIO(data), allow_pickle=False).item() not in ("csr", b"csr"):
                        raise _Refused(f"{name} is not a CSR matrix")
                else:
                    _check_npy(_read_capped(inner, info, budget, keep=1 << 16), info.file_size,
                               f"{name}/{info.filename}")
    except (zipfile.BadZipFile, EOFError, ValueError) as err:
        if isinstance(err, _Refused):
            raise
        raise _Refused(f"{name} is not a sparse matrix ({' '.join(str(err).split())[:80]})") \
            from None


def _check_schema(schema, members: set[str], config_dirs=()) -> set[str]:
    """Every node of the estimator's skops schema on the allow-list; returns the types it
    names (what skops is then told to trust, nothing else)."""
    from skops.io._protocol import PROTOCOL

    if not isinstance(schema, dict) or schema.get("protocol") != PROTOCOL:
        raise _Refused(f"the model is not in the skops format this llc-bench writes "
                       f"(protocol {schema.get('protocol') if isinstance(schema, dict) else None}"
                       f", expected {PROTOCOL})")
    allowed, named, ids = _shipped_types(config_dirs), set(), set()
    stack = [(schema, 0, False)]
    while stack:
        node, depth, key_type = stack.pop()
        if depth > MAX_DEPTH:
            raise _Refused(f"the model nests deeper than {MAX_DEPTH} levels")
        if not isinstance(node, dict):
            raise _Refused("the model's schema is malformed")
        loader = node.get("__loader__")
        module, cls = node.get("__module__"), node.get("__class__")
        if loader == "JsonNode" and not key_type:  # a JSON literal (json.loads)
            if not isinstance(node.get("content"), str):
                raise _Refused("the model's schema is malformed")
            continue
        if loader == "CachedNode" and not key_type:  # another reference to an earlier object
            if node.get("__id__") not in ids:
                raise _Refused("the model refers to an object it does not hold")
            continue
        if not isinstance(module, str) or not isinstance(cls, str):
            raise _Refused("the model's schema is malformed")
        qualified = f"{module}.{cls}"
        if loader in ("FunctionNode", "MethodNode", "PartialNode", "OperatorFuncNode"):
            raise _Refused(f"the model names the function {qualified}, which a model file may "
                           "not call")
        if qualified not in allowed:
            raise _Refused(f"the model names the type {qualified}, which is not one a model "
                           "file may hold (not a class llc-bench ships; a class of your own "
                           "is trusted when you name a config dir whose trainer/ or coding/ "
                           "files name it as _target_: --config-dir DIR)")
        if loader not in allowed[qualified] or (loader == "TypeNode") != key_type:
            raise _Refused(f"the model builds {qualified} by {loader}, which a model file may "
                           "not do")
        named.add(qualified)
        if "__id__" in node:
            ids.add(node["__id__"])
        if loader in ("NdArrayNode", "SparseMatrixNode"):
            if node.get("type") != ("numpy" if loader == "NdArrayNode" else "scipy") \
                    or node.get("file") not in members:
                raise _Refused(f"the model's array {qualified} is not one of its members")
            continue
        if loader == "DictNode":
            keys = node.get("key_types")
            if not isinstance(keys, dict) or keys.get("__loader__") != "ListNode" \
                    or not isinstance(keys.get("content"), list):
                raise _Refused("the model's schema is malformed")
            stack.extend((v, depth + 1, True) for v in keys["content"])
        content = node.get("content")
        if loader == "ObjectNode" and content is None:
            continue
        if loader in ("DictNode", "ListNode", "TupleNode") and not isinstance(
                content, dict if loader == "DictNode" else list):
            raise _Refused("the model's schema is malformed")
        items = (content.values() if loader == "DictNode" else content
                 if loader in ("ListNode", "TupleNode") else [content] if content else [])
        stack.extend((v, depth + 1, False) for v in items)
    return named


def _read_skops(blob: bytes, config_dirs=()) -> object:
    """The estimator of the inner skops archive, built only once every member and every node
    of its schema has been checked."""
    import skops.io as sio

    budget = [MAX_BYTES]
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            infos = _check_directory(archive, "model.skops")
            members = {i.filename for i in infos}
            if "schema.json" not in members:
                raise _Refused("model.skops lacks its schema.json")
            schema = json.loads(_read_capped(archive, archive.getinfo("schema.json"), budget))
            for info in infos:
                if info.filename.endswith(".npy"):
                    _check_npy(_read_capped(archive, info, budget, keep=1 << 16),
                               info.file_size, info.filename)
                elif info.filename.endswith(".npz"):
                    _check_npz(_read_capped(archive, info, budget), info.filename, budget)
                elif info.filename != "schema.json":
                    raise _Refused(f"model.skops holds a member {info.filename!r} that is "
                                   "neither an array nor its schema")
    except (zipfile.BadZipFile, EOFError, json.JSONDecodeError, RecursionError) as err:
        raise _Refused(f"model.skops is damaged ({type(err).__name__}: "
                       f"{' '.join(str(err).split())[:100]})") from None
    named = _check_schema(schema, members, config_dirs)
    return sio.loads(blob, trusted=sorted(named))


# --------------------------------------------------------------------------- checking
def _resolve(obj, path: str):
    """``obj``'s attribute at ``path`` ("svc_.support_", "bases_[0].vectors")."""
    for part in path.replace("[", ".[").split("."):
        if part.startswith("["):
            obj = obj[int(part[1:-1])]
        else:
            obj = getattr(obj, part)
    return obj


def _check_entry(path: str, value, spec, dims: dict) -> None:
    """One entry of an estimator's ``_fitted_layout``, against the dimensions bound so far.

    ``spec``: a tuple of classes (the value's exact type), "none", "bool", "number" (finite),
    "count" / "count<=DIM" (an int >= 1), or an array "[KIND:] DIM ...": KIND float (the
    default, finite values), int, index<DIM (ints in [0, DIM)), any (any numeric dtype), with
    "|csr" for a CSR matrix too; a DIM is a number or a name, bound where first seen
    ("features", "classes", "outputs" are the metadata's)."""
    if isinstance(spec, tuple):
        if type(value) not in spec:
            raise _Refused(f"{path} is a {type(value).__name__}, not a "
                           f"{' or '.join(t.__name__ for t in spec)}")
        return
    kind, _, shape = spec.partition(":") if ":" in spec else ("float", "", spec)
    kind = kind.strip()
    if spec == "none":
        if value is not None:
            raise _Refused(f"{path} must be None, it is a {type(value).__name__}")
        return
    if spec == "bool":
        if not isinstance(value, bool | np.bool_):
            raise _Refused(f"{path} must be true or false, it is {value!r:.40}")
        return
    if spec == "number" or spec.startswith("count"):
        number = isinstance(value, int | float | np.integer | np.floating) \
            and not isinstance(value, bool | np.bool_) and np.isfinite(value)
        if spec == "number" and not number:
            raise _Refused(f"{path} must be a finite number, it is {value!r:.40}")
        if spec.startswith("count"):
            top = dims.get(spec.partition("<=")[2]) if "<=" in spec else None
            if not (number and int(value) == value and value >= 1
                    and (top is None or value <= top)):
                raise _Refused(f"{path} must be an int in [1, {top or 'inf'}], it is "
                               f"{value!r:.40}")
        return
    import scipy.sparse as sp

    sparse_ok = kind.endswith("|csr")
    kind = kind.removesuffix("|csr")
    if sp.issparse(value):
        if not sparse_ok or value.format != "csr":
            raise _Refused(f"{path} is a sparse {value.format} matrix, expected an array")
        try:
            value.check_format(full_check=True)
        except ValueError as err:
            raise _Refused(f"{path} is a malformed CSR matrix ({err})") from None
        data = value.data
    elif isinstance(value, np.ndarray | np.generic):
        data = value = np.asarray(value)
    else:
        raise _Refused(f"{path} is a {type(value).__name__}, not an array")
    want = "f" if kind == "float" else "iu" if kind == "int" or kind.startswith("index") \
        else "fiub"
    if data.dtype.kind not in want:
        raise _Refused(f"{path} has dtype {data.dtype}, expected "
                       f"{'floats' if want == 'f' else 'ints' if want == 'iu' else 'numbers'}")
    tokens = shape.split()
    if len(value.shape) != len(tokens):
        raise _Refused(f"{path} has shape {value.shape}, expected {len(tokens)} axes "
                       f"({', '.join(tokens) or 'a scalar'})")
    for size, token in zip(value.shape, tokens, strict=True):
        if token.isdigit() or token.lstrip("-").isdigit():
            if size != int(token):
                raise _Refused(f"{path} has shape {value.shape}, expected {token} along an "
                               f"axis of {', '.join(tokens)}")
        elif token in dims:
            if size != dims[token]:
                raise _Refused(f"{path} has shape {value.shape} but the model has "
                               f"{dims[token]} {token}")
        elif size < 1:
            raise _Refused(f"{path} has shape {value.shape}: no {token}")
        else:
            dims[token] = size
    if kind == "float" and not np.all(np.isfinite(data)):
        raise _Refused(f"{path} holds NaN or infinite values")
    if kind.startswith("index<"):
        top = dims[kind.partition("<")[2]]
        if data.size and (data.min() < 0 or data.max() >= top):
            raise _Refused(f"{path} holds indices outside [0, {top})")


def _default_later_parameters(estimator) -> None:
    """A parameter the estimator's class gained after the file was written takes its
    default (a new parameter's default keeps the behaviour from before it: ML3's
    ``history``, say)."""
    import inspect

    for name, param in inspect.signature(type(estimator).__init__).parameters.items():
        if name != "self" and param.default is not param.empty \
                and name not in vars(estimator):
            setattr(estimator, name, param.default)


def check_fitted(estimator, n_features: int, n_classes: int, config_dirs=()) -> None:
    """Check a loaded estimator's fitted attributes against its own declaration
    (``_fitted_layout``; ``_check_fitted`` for what shapes do not say) and the metadata's
    feature and class counts; raises ``ValueError`` saying what is wrong."""
    from llc_bench.models._validation import validate_params

    layout = getattr(type(estimator), "_fitted_layout", None)
    if layout is None or type(estimator) not in trusted_classes(config_dirs)[0]:
        raise _Refused(f"the model is a {type(estimator).__name__}, not an estimator "
                       "llc-bench ships")
    _default_later_parameters(estimator)
    try:
        validate_params(estimator)
    except ValueError as err:
        raise _Refused(f"the model's parameters are invalid ({err})") from None
    shadowing = sorted(name for name in vars(estimator) if hasattr(type(estimator), name))
    if shadowing:
        raise _Refused(f"the model's attribute {shadowing[0]} hides the "
                       f"{type(estimator).__name__}'s own")
    dims = {"features": n_features, "classes": n_classes,
            "outputs": 1 if n_classes == 2 else n_classes}
    try:
        entries = estimator._fitted_layout()
        for path, spec in entries.items():
            _check_entry(path, _resolve(estimator, path), spec, dims)
        extra = getattr(estimator, "_check_fitted", None)
        if extra is not None:
            extra()
    except (AttributeError, IndexError, KeyError, TypeError) as err:
        raise _Refused(f"the fitted {type(estimator).__name__} is incomplete or malformed "
                       f"({' '.join(str(err).split())[:100]})") from None
    except _Refused:
        raise
    except ValueError as err:
        raise _Refused(str(err)) from None


def _check_calibration(model, n_classes: int) -> None:
    """``calibration=...``: one calibrated classifier around the model, its calibrators'
    numbers finite and as many as the classes need."""
    from sklearn.calibration import (
        CalibratedClassifierCV,
        _CalibratedClassifier,
        _SigmoidCalibration,
    )
    from sklearn.isotonic import IsotonicRegression

    wrapped = getattr(model, "calibrated_classifiers_", None)
    if type(model) is not CalibratedClassifierCV or not isinstance(wrapped, list) \
            or len(wrapped) != 1 or type(wrapped[0]) is not _CalibratedClassifier:
        raise _Refused("the model's calibration is malformed")
    inner = wrapped[0]
    calibrators = getattr(inner, "calibrators", None)
    if inner.method not in ("sigmoid", "isotonic") or not isinstance(calibrators, list) \
            or len(calibrators) != (1 if n_classes == 2 else n_classes):
        raise _Refused("the model's calibration is malformed (method or calibrator count)")
    if not np.array_equal(np.asarray(inner.classes), np.asarray(model.classes_)):
        raise _Refused("the model's calibration has other classes than the model")
    for j, cal in enumerate(calibrators):
        where = f"calibrators[{j}]"
        if type(cal) is _SigmoidCalibration:
            for name in ("a_", "b_"):
                _check_entry(f"{where}.{name}", getattr(cal, name, None), "number", {})
        elif type(cal) is IsotonicRegression:
            dims = {}
            for name in ("X_thresholds_", "y_thresholds_"):
                _check_entry(f"{where}.{name}", getattr(cal, name, None), "thresholds", dims)
            for name in ("X_min_", "X_max_"):
                _check_entry(f"{where}.{name}", getattr(cal, name, None), "number", {})
            if cal.out_of_bounds != "clip":
                raise _Refused(f"{where}.out_of_bounds must be 'clip'")
        else:
            raise _Refused(f"{where} is a {type(cal).__name__}, not a calibrator")


def load_model(path, config_dirs=()) -> tuple[object, dict]:
    """The fitted estimator of a model file and its metadata, checked: the file names no
    function and no type off the allow-list (``trusted_classes``: the package's config
    files', and those of ``config_dirs``, a user's own), inflates under the caps, and its
    arrays agree with each other and with the metadata."""
    path = Path(path)
    keep = ("a run keeps its model with save_model=true, in <results_dir>/models/"
            "<config hash>.llcm")
    if not path.is_file():
        raise ConfigError(f"{path}: no such model file ({keep})")
    if _is_run_record(path):
        raise ConfigError(f"{path}: a run record, not a model file: {keep} (the same command "
                          "with save_model=true fits it again: the option is not in the key)")
    try:
        meta, blob = _read_outer(path)
        model = _read_skops(blob, config_dirs)
        _check_model(model, meta, config_dirs)
    except _Refused as err:
        raise ConfigError(f"{path}: {err}") from None
    except ConfigError:
        raise
    except Exception as err:  # a damaged member skops could not read
        raise ConfigError(f"{path}: the model could not be read "
                          f"({type(err).__name__}: {' '.join(str(err).split())[:120]})") from None
    return model, meta


def _read_outer(path: Path) -> tuple[dict, bytes]:
    """(meta, the skops archive's bytes) of the outer zip, under the caps."""
    budget = [MAX_BYTES]
    try:
        with zipfile.ZipFile(path) as archive:
            names = {i.filename for i in _check_directory(archive, path.name)}
            if not {"meta.json", "model.skops"} <= names:
                raise ConfigError(f"{path}: not an llc-bench model file (it lacks "
                                  f"{', '.join(sorted({'meta.json', 'model.skops'} - names))})")
            meta = json.loads(_read_capped(archive, archive.getinfo("meta.json"), budget))
            version = meta.get("format_version") if isinstance(meta, dict) else None
            if version != FORMAT_VERSION:
                raise ConfigError(f"{path}: model file format_version {version!r}; this "
                                  f"llc-bench reads version {FORMAT_VERSION} (refit the model "
                                  "with this version: llc-bench run ... save_model=true)")
            blob = _read_capped(archive, archive.getinfo("model.skops"), budget)
    except (zipfile.BadZipFile, EOFError, json.JSONDecodeError, KeyError, RecursionError,
            NotImplementedError) as err:
        raise ConfigError(f"{path}: not an llc-bench model file, or a truncated one "
                          f"({' '.join(str(err).split())[:120]})") from None
    return meta, blob


def _check_model(model, meta: dict, config_dirs=()) -> None:
    """The estimator (or its calibration) against the metadata, then its own layout."""
    from sklearn.calibration import CalibratedClassifierCV

    classes = np.asarray(getattr(model, "classes_", []))
    meta_classes = meta.get("classes")
    if not isinstance(meta_classes, list) or len(meta_classes) < 2 or classes.ndim != 1 \
            or classes.tolist() != meta_classes:
        raise _Refused(f"the model's classes {_plain(classes)!r:.60} are not the metadata's "
                       f"{meta_classes!r:.60}")
    base = model
    if type(model) is CalibratedClassifierCV:
        _check_calibration(model, len(classes))
        base = base_estimator(model)
        if not np.array_equal(np.asarray(getattr(base, "classes_", [])), classes):
            raise _Refused("the calibrated model's classes are not its model's")
        if type(model.estimator) is type(base):  # the unfitted template the calibration keeps
            _default_later_parameters(model.estimator)
    name = f"{type(base).__module__}.{type(base).__qualname__}"
    if meta.get("estimator") != name:
        raise _Refused(f"the model is a {name}, the metadata says {meta.get('estimator')!r}")
    n_features = meta.get("n_features")
    if not isinstance(n_features, int) or isinstance(n_features, bool) or n_features < 1 \
            or getattr(base, "n_features_in_", None) != n_features:
        raise _Refused(f"the model has {getattr(base, 'n_features_in_', None)!r:.20} features, "
                       f"the metadata says {n_features!r:.20}")
    _check_preprocess(meta.get("preprocess"), classes, n_features)
    check_fitted(base, n_features, len(classes), config_dirs)


def _check_preprocess(pre, classes: np.ndarray, n_features: int) -> None:
    """The metadata's preprocessing agrees with the model: a label name per class, the
    label values among its classes, a finite mean and scale per feature."""
    if pre is None:
        return
    if not isinstance(pre, dict):
        raise _Refused("the metadata's preprocess is not a mapping")
    names, value_of = pre.get("names"), pre.get("value_of")
    if not isinstance(names, list) or len(names) != len(classes):
        raise _Refused(f"the metadata names {len(names) if isinstance(names, list) else 0} "
                       f"classes, the model has {len(classes)}")
    if not isinstance(value_of, dict) or not set(map(str, value_of.values())) <= set(
            map(str, classes.tolist())):
        raise _Refused("the metadata's label values are not the model's classes")
    if pre.get("n_features") != n_features:
        raise _Refused(f"the metadata's preprocess has {pre.get('n_features')!r:.20} "
                       f"features, the model {n_features}")
    for key in ("mean", "scale"):
        value = pre.get(key)
        if value is not None and not (isinstance(value, list) and len(value) == n_features
                                      and all(isinstance(v, int | float)
                                              and np.isfinite(v) for v in value)):
            raise _Refused(f"the metadata's preprocess {key} is not {n_features} finite "
                           "numbers")
