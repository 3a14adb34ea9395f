"""Public entry points: ``load_dataset``, ``dataset_status`` and ``fetch_dataset``."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from llc_bench.data.dataset import UNSEEN_LABEL, Dataset
from llc_bench.data.fetch import (
    Located,
    data_home,
    mirror_dirs,
    places_looked,
    resolve_source,
    source_files,
)
from llc_bench.data.formats import input_columns, labels_from_values
from llc_bench.data.preprocess import (
    build_coder,
    fit_center,
    fit_standard,
    label_sort_key,
    split_indices,
    subsample,
)
from llc_bench.data.reader import Part, read_source, store_pending, validate_download
from llc_bench.data.registry import resolve_spec
from llc_bench.data.rowstore import StoreSource
from llc_bench.data.spec import DatasetSpec
from llc_bench.data.stream import stores_of, streams, uses_row_store
from llc_bench.data.synthetic import generate
from llc_bench.errors import ConfigError, DatasetError

UNSEEN_POLICIES = ("error", "count_as_errors")
MAX_CLASSES = 1000


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _read(spec: DatasetSpec, seed: int, home: Path, mirrors: list[Path], download: bool,
          pending: list):
    """Parts of the dataset (raw rows), provenance for ``info``, the source and, for a
    dataset read through row stores, the stores (then each part's ``X`` holds the row
    positions in its store).  Fresh parses are queued in ``pending`` and cached once the
    whole dataset has passed its checks."""
    if uses_row_store(spec):  # streamed, too large for memory, or generated into a store
        return _read_stores(spec, home, mirrors, download)
    if spec.kind == "synthetic":
        X, y = generate(spec.generator, seed)
        part = Part(X, *labels_from_values(y), [f"generator:{spec.generator.get('name')}"])
        return {"all": part}, {"source": "generator", "generator": dict(spec.generator),
                               "files": []}, None, None
    source, located = resolve_source(spec, home, mirrors, download,
                                     lambda entry, path: validate_download(spec, entry, path, home))
    parts, records = read_source(spec, source, located, home, pending)
    return parts, {"source": source.id, "source_note": source.note, "files": records}, source, \
        None


def _read_stores(spec: DatasetSpec, home: Path, mirrors: list[Path], download: bool):
    """:func:`_read` through row stores (converted or generated on first use): a train and
    a test store (split protocol 'files') or one store split by rows or fraction."""
    source, located = resolve_source(spec, home, mirrors, download,
                                     lambda entry, path: validate_download(spec, entry, path, home))
    files_split = spec.split.protocol == "files"
    wanted = ("train", "test") if files_split else ("all",)
    if tuple(p for p in source.parts if p in wanted) != wanted or \
            (not files_split and len(source.parts) != 1):
        raise ConfigError(f"dataset {spec.name!r}: streaming needs a train and a test file "
                          "(split protocol 'files') or one file split by rows or fraction; "
                          f"the source has {', '.join(source.parts)}")
    stores = stores_of(spec, source, located, home, wanted)
    parts = {name: Part(np.arange(store.n_rows), list(store.label_names), store.y,
                        [str(located[e].path) for e in source.files if e.part == name])
             for name, store in stores.items()}
    files = [located[e].describe() for e in source.files]
    return parts, {"source": source.id, "source_note": source.note, "files": files}, source, \
        stores


def _raw_labels(spec: DatasetSpec, parts: dict[str, Part]):
    """Per part ``(X, codes)`` with codes into one sorted name list, without the rows of
    ``labels.drop``; returns names, parts and the number of dropped rows."""
    names = sorted({n for p in parts.values() for n in p.label_names})
    index = {n: i for i, n in enumerate(names)}
    drop = np.array([n in spec.labels.drop for n in names] + [False])
    out, dropped = {}, 0
    for name, part in parts.items():
        codes = np.array([index[n] for n in part.label_names] + [0], np.int64)[part.label_codes]
        keep = ~drop[codes]
        dropped += int((~keep).sum())
        out[name] = (part.X if keep.all() else part.X[keep], codes[keep])
    return names, out, dropped


def _files(parts: dict[str, Part], names=("train", "test", "all")) -> str:
    return ", ".join(dict.fromkeys(f for n in names if n in parts for f in parts[n].files))


def _check_label_column(spec: DatasetSpec, parts: dict[str, Part], y_raw: np.ndarray) -> None:
    """A label column with mostly distinct values is a feature taken as the label, unless
    the task is said to be multi-class (``dataset.task=multiclass``: they are classes)."""
    n, k = len(y_raw), len(np.unique(y_raw))
    if spec.task == "multiclass" or (k <= MAX_CLASSES and (n < 20 or k <= n / 2)):
        return
    where = _files(parts, ("train",) if "train" in parts and spec.split.protocol == "files"
                   else ("train", "test", "all"))
    source = next((p.label_source for p in parts.values() if p.label_source), "the label column")
    hint = ("set dataset.label_column to the label's column (an index: 0 = first, -1 = last, "
            "or its header name)" if source.startswith("dataset.label_column")
            else "llc-bench needs class labels")
    raise DatasetError(f"{where}: {k} distinct labels in {n} training rows, taken from {source}: "
                       f"that looks like a feature, not a class label; {hint}; if they are "
                       "the classes, set dataset.task=multiclass")


def _check_classes(spec: DatasetSpec, parts: dict[str, Part], names: list[str],
                   raw_parts: dict, coder) -> None:
    expected = spec.expected.classes
    if expected is None:
        return
    present = np.unique(np.concatenate([codes for _, codes in raw_parts.values()]))
    mapped = {coder.value_of.get(names[i], names[i]) for i in present}
    if len(mapped) != expected:
        raise DatasetError(f"{_files(parts)}: {len(mapped)} classes after label mapping, the "
                           f"spec of {spec.name!r} expects {expected}")


def _unseen_policy(spec: DatasetSpec) -> str:
    policy = spec.raw.get("unseen_test_labels") or "error"
    if policy not in UNSEEN_POLICIES:
        raise ConfigError(f"dataset.unseen_test_labels={policy!r} is not one of "
                          f"{', '.join(UNSEEN_POLICIES)}")
    return policy


def _unseen(spec, parts, names, y_tr_raw, y_te_raw, y_tr, y_te, policy) -> dict[str, int]:
    """Test rows whose class has no training row: an error, or (``count_as_errors``) kept
    with the label ``UNSEEN_LABEL`` so that every metric counts them as wrong."""
    unseen = ~np.isin(y_te, np.unique(y_tr))
    if not unseen.any():
        return {}
    codes, counts = np.unique(y_te_raw[unseen], return_counts=True)
    found = {names[c]: int(n) for c, n in zip(codes, counts, strict=True)}
    if policy == "error":
        where = (_files(parts, ("test",)) if spec.split.protocol == "files" and "test" in parts
                 else f"the test split of {_files(parts)}")
        detail = ", ".join(f"{n!r} ({c} row{'s' * (c != 1)})"
                           for n, c in list(found.items())[:5])
        if len(found) > 5:
            detail += f" and {len(found) - 5} more labels ({int(unseen.sum())} rows in all)"
        train = sorted({names[c] for c in np.unique(y_tr_raw)}, key=label_sort_key)
        shown = ", ".join(map(repr, train[:10])) + (", ..." if len(train) > 10 else "")
        labels = "labels" if len(found) > 1 else "label"
        verb = "do" if len(found) > 1 else "does"
        raise DatasetError(f"{where}: test {labels} {detail} {verb} not occur in the training "
                           f"split (training labels: {shown}); the classes come from the training "
                           "data: remove those rows, or set dataset.unseen_test_labels="
                           "count_as_errors to count them as errors"
                           + ("; or split each label apart: dataset.stratify=true"
                              if spec.kind == "custom" and spec.split.protocol == "fraction"
                              and not spec.split.stratify else ""))
    y_te[unseen] = UNSEEN_LABEL
    return found


def _split(spec: DatasetSpec, encoded: dict, seed: int, names: list | None = None):
    split = spec.split
    if split.protocol == "files":
        if not {"train", "test"} <= set(encoded):
            raise ConfigError(f"dataset {spec.name!r}: split protocol 'files' needs train and "
                              f"test files (the source has: {', '.join(encoded)})")
        (X_tr, y_tr), (X_te, y_te) = encoded["train"], encoded["test"]
        if split.train_rows:
            X_tr, y_tr = X_tr[slice(*split.train_rows)], y_tr[slice(*split.train_rows)]
        if split.test_rows:
            X_te, y_te = X_te[slice(*split.test_rows)], y_te[slice(*split.test_rows)]
        return X_tr, y_tr, X_te, y_te
    blocks = [encoded[p] for p in ("train", "test", "all") if p in encoded]
    X = blocks[0][0] if len(blocks) == 1 else (
        sp.vstack([b[0] for b in blocks], "csr") if sp.issparse(blocks[0][0])
        else np.concatenate([b[0] for b in blocks]))
    y = np.concatenate([b[1] for b in blocks])
    train, test = split_indices(split, len(y), seed, y, names)
    return X[train], y[train], X[test], y[test]


def _hold_out(X, y, fraction, seed: int):
    """Split the training rows into train and a held-out validation set (seeded stream 3);
    the test split is dropped, so hyper-parameters tuned on these runs never see it."""
    n = len(y)
    n_val = round(n * fraction)
    if not 0 < n_val < n:
        raise ConfigError(f"validation={fraction}: holds out {n_val} of {n} training rows")
    perm = np.random.default_rng([seed, 3]).permutation(n)
    val, keep = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    info = {"fraction": str(fraction), "train": int(n - n_val), "validation": int(n_val),
            "stream": "default_rng([seed, 3])",
            "note": "test metrics are on held-out training rows; the test split is unused"}
    return X[keep], y[keep], X[val], y[val], info


def limit_rows(spec: DatasetSpec, seed: int, X_tr, y_tr, X_te, y_te):
    """``max_train`` / ``max_test`` seeded subsamples (streams 1, 2), then the validation
    hold-out (stream 3).  ``X_*`` may be arrays or row positions (in a row store).
    Returns (X_tr, y_tr, X_te, y_te, info) with the split sizes before the subsamples
    and the "subsample" and "validation" provenance of the record."""
    before = (len(y_tr), len(y_te))
    keep_tr = subsample(len(y_tr), spec.max_train, seed, 1)
    keep_te = subsample(len(y_te), spec.max_test, seed, 2)
    if keep_tr is not None:
        X_tr, y_tr = X_tr[keep_tr], y_tr[keep_tr]
    if keep_te is not None:
        X_te, y_te = X_te[keep_te], y_te[keep_te]
    validation = None
    if spec.validation is not None:  # tuning: evaluate on held-out training rows only
        X_tr, y_tr, X_te, y_te, validation = _hold_out(X_tr, y_tr, spec.validation, seed)
    subsampled = {"max_train": spec.max_train, "max_test": spec.max_test,
                  "train": [before[0], len(y_tr)], "test": [before[1], len(y_te)],
                  "streams": "default_rng([seed, 1]) / default_rng([seed, 2])"}
    return X_tr, y_tr, X_te, y_te, {
        "sizes_before": before, "validation": validation,
        "subsample": subsampled if keep_tr is not None or keep_te is not None else None}


#: The largest dense float64 feature array a sparse file is turned into (dataset.sparse
#: false); above it the load stops and says to keep the data sparse.
DENSE_LIMIT_BYTES = 1 << 30


def _as_float(X, sparse: bool, value_scale: float | None, name: str = "the data"):
    """float64 copy (C-contiguous array, or CSR when ``sparse``), times ``value_scale``."""
    if sp.issparse(X) and not sparse:
        need = X.shape[0] * X.shape[1] * 8
        if need > DENSE_LIMIT_BYTES:
            raise DatasetError(
                f"{name}: {X.shape[0]} rows x {X.shape[1]} features are "
                f"{need / 2**30:.1f} GiB as a dense array (more than the "
                f"{DENSE_LIMIT_BYTES / 2**30:.0f} GiB limit; {X.nnz} of the values are not "
                "zero): set dataset.sparse=true to keep them sparse")
    if sp.issparse(X) and sparse:
        X = sp.csr_matrix(X, dtype=np.float64, copy=True)
        X.sort_indices()
        if value_scale is not None:
            X.data *= value_scale
        return X
    X = X.toarray() if sp.issparse(X) else np.array(X, dtype=np.float64, order="C")
    X = np.ascontiguousarray(X, dtype=np.float64)  # a fresh array: scaled in place
    if value_scale is not None:
        X *= value_scale
    return X


def _counts(y: np.ndarray, coder) -> dict[str, int]:
    values = [-1, 1] if coder.task == "binary" else range(len(coder.classes))
    return {name: int((y == v).sum()) for name, v in zip(coder.classes, values, strict=True)}


def load_dataset(spec, seed: int = 0, home: str | Path | None = None,
                 mirrors: Iterable[str | Path] = (), download: bool = True) -> Dataset:
    """Load, split and scale a dataset.

    ``spec`` is a dataset name (a packaged ``conf/dataset/<name>.yaml``), the composed
    ``cfg.dataset`` mapping, or a plain dict of the same schema. Files are looked up in
    the data home, then the mirrors, then downloaded (unless ``download=False``).
    """
    spec, seed = resolve_spec(spec), _check_seed(seed)
    policy = _unseen_policy(spec)
    home_dir, mirror_list = data_home(home), mirror_dirs(mirrors)
    try:
        return _load(spec, seed, home_dir, mirror_list, download, policy)
    except MemoryError as exc:
        raise DatasetError(f"dataset {spec.name!r}: out of memory while loading it "
                           f"({str(exc)[:200]})") from exc


def _load(spec: DatasetSpec, seed: int, home_dir: Path, mirror_list: list[Path],
          download: bool, policy: str) -> Dataset:
    start = time.perf_counter()
    pending: list = []
    parts, provenance, source, stores = _read(spec, seed, home_dir, mirror_list, download,
                                              pending)
    names, raw_parts, dropped = _raw_labels(spec, parts)
    loaded = time.perf_counter()

    X_tr, y_tr, X_te, y_te, limits = limit_rows(spec, seed, *_split(spec, raw_parts, seed, names))
    # the classes and the task come from the training rows only
    _check_label_column(spec, parts, y_tr)
    coder = build_coder(spec.task, spec.labels, {names[c] for c in np.unique(y_tr)})
    _check_classes(spec, parts, names, raw_parts, coder)
    values = np.array([coder.value_of.get(n, UNSEEN_LABEL) for n in names] + [UNSEEN_LABEL],
                      dtype=np.int64)
    y_tr_raw, y_te_raw = y_tr, y_te
    y_tr, y_te = values[y_tr], values[y_te]
    present = np.unique(y_tr)
    if len(present) < 2:
        only = [n for n, c in _counts(y_tr, coder).items() if c] or ["none"]
        raise DatasetError(f"{_files(parts, ('train', 'all'))}: the "
                           f"training split of {spec.name!r} has {len(present)} class "
                           f"({only[0]!r}, {len(y_tr)} rows); a classifier needs two")
    unseen = _unseen(spec, parts, names, y_tr_raw, y_te_raw, y_tr, y_te, policy)
    store_pending(pending)  # every check passed: now cache the fresh parses
    value_scale = source.value_scale if source is not None else None
    if stores is None:
        X_tr, X_te, scaling, scaler = _scaled_arrays(spec, X_tr, X_te, value_scale)
        extra = {}
    else:
        X_tr, X_te, scaling, extra = _scaled_stores(spec, stores, X_tr, X_te, value_scale,
                                                    held_out=limits["validation"] is not None)
        scaler = None
    done = time.perf_counter()

    notes = list(spec.raw.get("notes") or [])
    paper = spec.paper_sizes
    if paper and (len(y_tr), len(y_te)) != (paper.get("train"), paper.get("test")):
        notes.append(f"train/test sizes {len(y_tr)}/{len(y_te)} differ from the paper's "
                     f"{paper.get('train')}/{paper.get('test')}")
    info = {
        "dataset": spec.name, "kind": spec.kind, "task": coder.task, **provenance,
        "home": str(home_dir), "mirrors": [str(m) for m in mirror_list],
        "labels": {"classes": coder.classes, "mapping": coder.value_of,
                   "dropped": sorted(coder.drop), "dropped_rows": dropped,
                   "classes_from": "training split",
                   **({"unseen_test": unseen, "unseen_test_labels": policy,
                       "unseen_value": UNSEEN_LABEL} if unseen else {})},
        "rows": {name: int(p.n_rows) for name, p in parts.items()},
        "split": {**spec.split.describe(), "seed": seed, "stratified": False,
                  "train": limits["sizes_before"][0], "test": limits["sizes_before"][1]},
        "subsample": limits["subsample"],
        "validation": limits["validation"],
        "n_train": len(y_tr), "n_test": len(y_te), "n_features": int(X_tr.shape[1]),
        "class_counts": {"train": _counts(y_tr, coder), "test": _counts(y_te, coder)},
        "value_scale": value_scale, "sparse": bool(sp.issparse(X_tr)), "scaling": scaling,
        **extra,
        "paper_sizes": dict(paper) if paper else None, "notes": notes,
        "timings": {"load": loaded - start, "preprocess": done - loaded},
    }
    return Dataset(spec.name, coder.task, X_tr, y_tr.astype(np.int64), X_te,
                   y_te.astype(np.int64), list(coder.classes), int(X_tr.shape[1]), info,
                   None if stores is not None else
                   _preprocess(source, provenance, parts, X_tr, value_scale, scaler, coder))


def _scaled_arrays(spec: DatasetSpec, X_tr, X_te, value_scale):
    """The in-memory backend: float64 arrays (or CSR), value-scaled, then the scaler fitted
    on the training rows.  Returns (X_tr, X_te, scaling info, scaler or None)."""
    X_tr, X_te = (_as_float(X, spec.sparse, value_scale, f"dataset {spec.name!r} ({part})")
                  for X, part in ((X_tr, "training split"), (X_te, "test split")))
    scaling = {"method": spec.scaling, "fitted_on": "train"}
    scaler = None
    if spec.scaling != "none":
        scaler = (fit_standard if spec.scaling == "standard" else fit_center)(X_tr)
        X_tr, X_te = scaler.transform(X_tr, copy=False), scaler.transform(X_te, copy=False)
        scaling.update(centered=scaler.mean is not None, constant_features=scaler.constant)
    return X_tr, X_te, scaling, scaler


def _scaled_stores(spec: DatasetSpec, stores: dict, rows_tr, rows_te, value_scale, held_out):
    """The row-store backend: the training rows as a :class:`StoreSource` (streamed when
    :func:`streams`, else read into memory), the test rows in memory, with the scaler
    fitted in one streaming pass.  Returns (X_tr, X_te, scaling info, info extras)."""
    train, test = (stores["train"], stores["test"]) if "train" in stores else \
        (stores["all"],) * 2
    src = StoreSource(train, rows_tr, value_scale=value_scale)
    stats = src.stats()
    scaling = {"method": spec.scaling, "fitted_on": "train", "pass": "streaming"}
    mean = scale = None
    if spec.scaling == "standard":
        constant = stats["std"] <= 1e-12 * np.maximum(1.0, np.abs(stats["mean"]))
        mean, scale = stats["mean"], np.where(constant, 1.0, stats["std"])
        scaling.update(centered=True, constant_features=int(constant.sum()))
    elif spec.scaling == "center":
        mean, scale = stats["mean"], np.ones_like(stats["mean"])
        scaling.update(centered=True, constant_features=0)
    src = src.with_options(mean=mean, scale=scale)
    X_te = StoreSource(train if held_out else test, rows_te, value_scale=value_scale,
                       mean=mean, scale=scale).take(np.arange(len(rows_te)))
    streamed = streams(spec)
    X_tr = src if streamed else src.take(np.arange(src.n_rows))
    row_store = {"train": str(train.path), "test": str(test.path), "dtype": train.dtype.str,
                 "identity": train.meta.get("source"), "streamed": streamed,
                 "chunk_rows": src.chunk_rows if streamed else None}
    return X_tr, X_te, scaling, {"row_store": row_store}


def _preprocess(source, provenance, parts, X_tr, value_scale, scaler, coder) -> dict | None:
    """What ``llc-bench predict`` needs to turn a new file's rows into these features (one
    file source only: own files, and the built-in datasets read from one format)."""
    if source is None or len({e.format for e in source.files}) != 1:
        return None
    options = dict(source.files[0].options)
    for record in provenance.get("files") or ():
        if isinstance(record.get("zero_based"), dict):  # the index base decided at load
            options["zero_based"] = bool(record["zero_based"].get("zero_based"))
        if record.get("categories"):  # categorical=onehot: the training file's categories
            options["one_hot_columns"] = record["categories"]
    names = next((p.feature_names for p in parts.values()
                  if getattr(p, "feature_names", None)), None)
    columns = (input_columns(names, options.get("one_hot_columns"), int(X_tr.shape[1]),
                             options) if source.files[0].format == "csv" else None)
    return {"format": source.files[0].format, "options": options,
            "n_features": int(X_tr.shape[1]), "feature_names": names,
            "input_columns": columns,
            "value_scale": value_scale, "sparse": bool(sp.issparse(X_tr)),
            "mean": None if scaler is None else scaler.mean,
            "scale": None if scaler is None else scaler.scale,
            "names": list(coder.classes), "value_of": dict(coder.value_of),
            "task": coder.task}


def dataset_status(spec, home: str | Path | None = None,
                   mirrors: Iterable[str | Path] = ()) -> dict:
    """Offline availability of a dataset, without reading or downloading anything.

    Returns ``{"name", "kind", "available", "source", "home", "mirrors", "places",
    "sources": [{"id", "complete", "files": [{"role", "path", "found_in", "location",
    "urls", "sha256"}]}], "missing": [...]}``; ``source`` is the source ``load_dataset``
    would use offline and ``missing`` lists the relative paths absent for the first source.
    """
    spec = resolve_spec(spec)
    home_dir, mirror_list = data_home(home), mirror_dirs(mirrors)
    sources = []
    for source in spec.sources:
        found = source_files(source, home_dir, mirror_list)
        files = [{"role": e.role, "path": e.path, "found_in": w.found_in if w else None,
                  "location": str(w.path) if w else None, "urls": list(e.urls),
                  "sha256": e.sha256} for e, w in found.items()]
        sources.append({"id": source.id, "note": source.note,
                        "complete": all(found.values()), "files": files})
    complete = [s["id"] for s in sources if s["complete"]]
    missing = [f["path"] for f in sources[0]["files"] if f["found_in"] is None] if sources else []
    return {"name": spec.name, "kind": spec.kind, "task": spec.task,
            "available": spec.kind == "synthetic" or bool(complete),
            "source": "generator" if spec.kind == "synthetic" else (complete or [None])[0],
            "home": str(home_dir), "mirrors": [str(m) for m in mirror_list],
            "places": places_looked(home_dir, mirror_list), "sources": sources,
            "missing": [] if complete or spec.kind == "synthetic" else missing,
            "homepage": spec.homepage, "in_memory": spec.in_memory}


def fetch_dataset(spec, home: str | Path | None = None, mirrors: Iterable[str | Path] = (),
                  download: bool = True) -> dict[str, list[Path]]:
    """Make a dataset available: resolve (and download what is missing) its files.

    Returns role -> file paths of the source that will be used (``{}`` for synthetic
    data). Downloads land in the data home and are checked (sha256, else parsed shape)
    before they get their final name. Raises a one-line ``DatasetError`` if impossible.
    """
    spec = resolve_spec(spec)
    if spec.kind == "synthetic":
        return {}
    home_dir, mirror_list = data_home(home), mirror_dirs(mirrors)
    _, located = resolve_source(spec, home_dir, mirror_list, download,
                                lambda entry, path: validate_download(spec, entry, path, home_dir))
    paths: dict[str, list[Path]] = {}
    for where in located.values():
        assert isinstance(where, Located)
        paths.setdefault(where.entry.role, []).append(where.path)
    return paths
