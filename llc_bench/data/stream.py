"""Datasets read through row stores (``llc_bench.data.rowstore``): which ones stream,
their stores (converted, or generated, on first use) and the identity of their files."""

from __future__ import annotations

import time
from pathlib import Path

from llc_bench.data.cache import cache_key
from llc_bench.data.fetch import data_home, mirror_dirs, resolve_source
from llc_bench.data.infimnist import generated_store
from llc_bench.data.reader import validate_download
from llc_bench.data.registry import resolve_spec
from llc_bench.data.rowstore import (
    ROWS_DIR,
    RowStore,
    _store_key,
    convert_idx,
    convert_svmlight,
    file_sha256,
)
from llc_bench.errors import ConfigError

#: A streamed dataset with ``max_train`` x features at most this is loaded in memory.
IN_MEMORY_ENTRIES = 200_000_000


def streams(spec) -> bool:
    """Whether ``load_dataset`` returns the training split as a :class:`RowSource`:
    ``dataset.stream`` if set, else for ``in_memory: false`` datasets unless ``max_train``
    makes the training rows small enough to hold in memory."""
    stream = spec.raw.get("stream")
    if stream is not None:
        if not isinstance(stream, bool):
            raise ConfigError(f"dataset.stream must be true, false or null, got {stream!r}")
        return stream
    if spec.in_memory:
        return False
    features = spec.expected.features or 1
    return spec.max_train is None or spec.max_train * features > IN_MEMORY_ENTRIES


def uses_row_store(spec) -> bool:
    """Whether the dataset is read through a row store (streamed, too large, or generated)."""
    generator = (spec.generator or {}).get("name") if spec.kind != "synthetic" else None
    return streams(spec) or not spec.in_memory or generator == "infimnist"


def _row_store_spec(dataset: dict):
    """The resolved spec of a dataset config read through a row store, else None (the
    usual in-memory datasets are told apart without resolving their spec)."""
    if not (dataset.get("in_memory") is False or dataset.get("stream") is not None
            or (dataset.get("generator") or {}).get("name") == "infimnist"):
        return None
    spec = resolve_spec(dataset)
    return None if spec.kind == "synthetic" or not uses_row_store(spec) else spec


def streams_training_rows(dataset: dict) -> bool:
    """Whether a run on this dataset config gets its training split as a chunked source
    (the runner refuses an estimator that cannot take one)."""
    spec = _row_store_spec(dataset)
    return spec is not None and streams(spec)


def pin_identity(dataset: dict, data: dict) -> None:
    """Runner hook, before the cache key is computed, for datasets read through a row
    store: put the sha256 of every source file the spec does not pin into
    ``dataset.source_sha256`` (a generator's parameters are in the config already)."""
    spec = _row_store_spec(dataset)
    if spec is None:
        return
    home = data_home(data.get("home"))
    source, located = resolve_source(spec, home, mirror_dirs(data.get("mirrors") or ()),
                                     bool(data.get("download", True)))
    pins = {e.role: file_sha256(where.path, home) for e, where in located.items()
            if e.sha256 is None}
    if pins:
        dataset["source_sha256"] = pins


def part_store(spec, source, located, part: str, home: Path) -> RowStore:
    """The row store of one part of a resolved source, converted on first use."""
    entries = [e for e in source.files if e.part == part]
    files = {e.kind: (e, located[e].path) for e in entries}
    if len(entries) != len(files):
        raise ConfigError(f"dataset {spec.name!r}: streaming reads one file per role "
                          f"({part!r} has {len(entries)})")
    n_features = spec.expected.features
    shas = {e.role: file_sha256(p, home) for e, p in files.values()}
    identity = {"sha256": shas, "value_scale": source.value_scale,
                "parse": [cache_key(shas[e.role], e.format, e.options, e.kind, n_features)
                          for e, _ in files.values()]}
    out = Path(home) / ROWS_DIR / f"{spec.name}-{part}-{_store_key(identity)}"
    if (out / "meta.json").is_file():
        return RowStore(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    expected = spec.expected.rows.get(part)
    if "xy" in files and files["xy"][0].format == "svmlight":
        entry, path = files["xy"]
        if n_features is None:
            raise ConfigError(f"dataset {spec.name!r}: streaming an svmlight file needs "
                              "expected.features (the row width)")
        return convert_svmlight(path, out, n_features, source.value_scale,
                                entry.options.get("zero_based", False), identity, expected)
    if {"x", "y"} <= set(files) and all(e.format == "idx" for e, _ in files.values()):
        return convert_idx(files["x"][1], files["y"][1], out, source.value_scale, identity)
    formats = sorted({e.format for e, _ in files.values()})
    raise ConfigError(f"dataset {spec.name!r}: streaming converts svmlight or IDX files, "
                      f"not {', '.join(formats)}")


def convert_dataset(spec, home=None, mirrors=(), download: bool = True) -> dict:
    """``llc-bench datasets convert NAME``: every part of the dataset as a row store
    (generated ones too); returns part -> {"path", "rows", "seconds"}."""
    spec = resolve_spec(spec)
    home, mirrors = data_home(home), mirror_dirs(mirrors)
    if spec.kind == "synthetic":
        raise ConfigError(f"dataset {spec.name!r} is generated in memory; nothing to convert")
    source, located = resolve_source(spec, home, mirrors, download,
                                     lambda e, p: validate_download(spec, e, p, home))
    out = {}
    for part in source.parts:
        tic = time.perf_counter()
        store = stores_of(spec, source, located, home, parts=(part,))[part]
        out[part] = {"path": str(store.path), "rows": store.n_rows,
                     "seconds": time.perf_counter() - tic}
    return out


def stores_of(spec, source, located, home: Path, parts=None) -> dict[str, RowStore]:
    """Row stores of the source's parts; an ``infimnist`` generator makes the train part."""
    generator = spec.generator or {}
    out = {}
    for part in parts or source.parts:
        if part == "train" and generator.get("name") == "infimnist":
            out[part] = generated_store(spec, source, located, home)
        else:
            out[part] = part_store(spec, source, located, part, home)
    return out
