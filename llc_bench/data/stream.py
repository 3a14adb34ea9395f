"""Out-of-core data: a chunked row store on disk and the training rows read from it.

A *row store* is a directory ``<home>/_rows/<dataset>-<part>-<key>/`` with ``X.npy`` (uint8
for pixel data, float32 otherwise; a plain ``.npy``, so it can also be memory-mapped),
``y.npy`` (int32 codes into ``meta.json``'s label names) and ``meta.json``.  The key is the
sha256 of the source files plus the parser settings (or the generator's parameters), so a
changed file is converted again.  A conversion parses the source in line blocks, appends
each block and records its progress, so an interrupted conversion resumes where it stopped.

:class:`RowSource` is the training split of a store as the estimators see it: ``n_rows``,
``iter_chunks(order)`` (float64 chunks, value-scaled and standardised on read, each read
with ``np.fromfile`` so memory stays bounded by one chunk), ``take(rows)``, ``sample`` and
one streaming statistics pass (:meth:`RowSource.stats`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
from sklearn.datasets import load_svmlight_file

from llc_bench.data.compression import open_binary
from llc_bench.data.formats import IDX_TYPES, labels_from_values
from llc_bench.errors import ConfigError, DatasetError

ROWS_DIR = "_rows"
STORE_VERSION = 1
#: Rows per chunk of :meth:`RowSource.iter_chunks` (65,536 x 784 float64 = 411 MB).
CHUNK_ROWS = 65_536
#: Decompressed bytes per parsed block of a text source.
BLOCK_BYTES = 32 << 20
#: Rows per block of an IDX source.
IDX_BLOCK_ROWS = 100_000
#: Rows of the seeded sample that anchors (k-means), coding, init, calibration and the
#: kept-epoch objective see when streaming: 100k rows keep the k-means peak (the sample
#: and scikit-learn's centred copy, float64) near 2 GB whatever N.
SAMPLE_ROWS = 100_000
#: A streamed dataset with ``max_train`` x features at most this is loaded in memory.
IN_MEMORY_ENTRIES = 200_000_000
_HEADER = 128  # bytes reserved for the .npy header, rewritten with the final row count


def _npy_header(dtype: np.dtype, shape: tuple[int, int]) -> bytes:
    """A version-1.0 ``.npy`` header padded to exactly ``_HEADER`` bytes."""
    text = repr({"descr": np.dtype(dtype).str, "fortran_order": False, "shape": tuple(shape)})
    pad = _HEADER - 10 - len(text) - 1
    return b"\x93NUMPY\x01\x00" + (_HEADER - 10).to_bytes(2, "little") + \
        (text + " " * pad + "\n").encode("latin1")


def _write_json(path: Path, payload: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(payload, indent=1))
    os.replace(tmp, path)


# ------------------------------------------------------------------------- the store
class RowStore:
    """A finished row store (read-only): raw rows and label codes."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.meta = json.loads((self.path / "meta.json").read_text())
        self.x_path = self.path / "X.npy"
        self.dtype = np.dtype(self.meta["dtype"])
        self.n_rows, self.n_features = int(self.meta["n_rows"]), int(self.meta["n_features"])
        self.label_names: list[str] = list(self.meta["label_names"])
        self.y = np.load(self.path / "y.npy")

    def read(self, start: int, stop: int) -> np.ndarray:
        """Raw rows ``start:stop`` (one ``np.fromfile``: no mapping stays behind)."""
        D, size = self.n_features, self.dtype.itemsize
        X = np.fromfile(self.x_path, self.dtype, count=(stop - start) * D,
                        offset=_HEADER + start * D * size)
        return X.reshape(stop - start, D)

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Raw rows at sorted indices ``rows``: one read when they are dense, else one
        ``preadv`` per run of consecutive rows straight into the result (a memory map
        would count every page it touched, i.e. most of the file, in the process's RSS)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and rows[-1] - rows[0] + 1 <= 4 * rows.size:  # dense: one read
            return self.read(int(rows[0]), int(rows[-1]) + 1)[rows - rows[0]]
        D = self.n_features
        out = np.empty((rows.size, D), dtype=self.dtype)
        row_bytes = D * self.dtype.itemsize
        starts = np.flatnonzero(np.diff(rows, prepend=-2) != 1)  # first row of each run
        ends = np.append(starts[1:], rows.size)
        with open(self.x_path, "rb", buffering=0) as fh:
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                want = (b - a) * row_bytes
                got = os.preadv(fh.fileno(), [memoryview(out[a:b]).cast("B")],
                                _HEADER + int(rows[a]) * row_bytes)
                if got != want:
                    raise DatasetError(f"{self.x_path}: short read at row {int(rows[a])} "
                                       f"({got} of {want} bytes): the row store is damaged")
        return out


class RowStoreWriter:
    """Appends blocks of rows to ``<path>.part/``; :meth:`finish` renames it to ``path``.

    After every block the files are flushed and ``progress.json`` records the rows written,
    the source position and the label names, so a new writer resumes from there."""

    def __init__(self, path: Path, n_features: int, dtype, source: dict):
        self.final, self.dir = Path(path), Path(f"{path}.part")
        self.dtype, self.n_features = np.dtype(dtype), int(n_features)
        self.dir.mkdir(parents=True, exist_ok=True)
        progress_path = self.dir / "progress.json"
        fresh = {"rows": 0, "position": 0, "labels": [], "state": {}, "source": source,
                 "dtype": self.dtype.str, "n_features": self.n_features}
        progress = json.loads(progress_path.read_text()) if progress_path.is_file() else fresh
        if {k: progress.get(k) for k in ("source", "dtype", "n_features")} != \
                {k: fresh[k] for k in ("source", "dtype", "n_features")}:
            progress = fresh
        self.progress = progress
        self.resumed = progress["rows"] > 0
        self._x = open(self.dir / "X.npy", "r+b" if (self.dir / "X.npy").exists() else "w+b")
        self._y = open(self.dir / "y.bin", "r+b" if (self.dir / "y.bin").exists() else "w+b")
        rows = progress["rows"]
        self._x.truncate(_HEADER + rows * self.n_features * self.dtype.itemsize)
        self._y.truncate(rows * 4)
        self._x.seek(0)
        self._x.write(_npy_header(self.dtype, (rows, self.n_features)))
        self._x.seek(0, os.SEEK_END)
        self._y.seek(0, os.SEEK_END)
        self._index = {n: i for i, n in enumerate(progress["labels"])}

    @property
    def rows(self) -> int:
        return int(self.progress["rows"])

    @property
    def position(self):
        return self.progress["position"]

    @property
    def state(self) -> dict:
        return self.progress["state"]

    def append(self, X: np.ndarray, names: list[str], codes: np.ndarray, position,
               state: dict | None = None) -> None:
        """Rows ``X`` with labels ``names[codes]``; ``position`` = where the source resumes."""
        for n in names:
            if n not in self._index:
                self._index[n] = len(self._index)
                self.progress["labels"].append(n)
        remap = np.array([self._index[n] for n in names] or [0], dtype=np.int32)
        self._x.write(np.ascontiguousarray(X, dtype=self.dtype).tobytes())
        self._y.write(remap[np.asarray(codes)].astype("<i4").tobytes())
        for fh in (self._x, self._y):
            fh.flush()
            os.fsync(fh.fileno())
        self.progress.update(rows=self.rows + len(X), position=position, state=state or {})
        _write_json(self.dir / "progress.json", self.progress)

    def finish(self, meta: dict) -> RowStore:
        rows = self.rows
        self._x.seek(0)
        self._x.write(_npy_header(self.dtype, (rows, self.n_features)))
        self._x.close()
        self._y.close()
        y = np.fromfile(self.dir / "y.bin", "<i4")
        np.save(self.dir / "y.npy", y.astype(np.int32))
        (self.dir / "y.bin").unlink()
        (self.dir / "progress.json").unlink()
        _write_json(self.dir / "meta.json", {
            "version": STORE_VERSION, "n_rows": rows, "n_features": self.n_features,
            "dtype": self.dtype.str, "label_names": self.progress["labels"],
            "source": self.progress["source"], **meta})
        if self.final.exists():  # another process finished first: keep theirs
            import shutil
            shutil.rmtree(self.dir, ignore_errors=True)
        else:
            os.replace(self.dir, self.final)
        return RowStore(self.final)

    def close(self) -> None:
        for fh in (self._x, self._y):
            if not fh.closed:
                fh.close()


def progress_bar(total: int | None, desc: str, initial: int = 0):
    """A tqdm bar on a terminal, else a silent stand-in with the same ``update``/``close``."""
    if sys.stderr.isatty():
        from tqdm import tqdm

        return tqdm(total=total, initial=initial, desc=desc, unit="rows", unit_scale=True,
                    file=sys.stderr)

    class _Silent:
        def update(self, n=1):
            pass

        def close(self):
            pass

    return _Silent()


# --------------------------------------------------------------------- conversion
def _pixel_dtype(value_scale: float | None):
    return np.uint8 if value_scale is not None and abs(value_scale * 255 - 1) < 1e-12 \
        else np.float32


def _as_store_dtype(X: np.ndarray, dtype, where: str) -> np.ndarray:
    if dtype == np.uint8:
        bad = (X != np.round(X)) | (X < 0) | (X > 255)
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise DatasetError(f"{where}: value {X[r, c]!r} in column {c + 1} of row {r + 1} "
                               "of this block is not a pixel value 0..255")
    return X.astype(dtype)


def _skip(fh, n: int) -> None:
    """Move ``n`` bytes forward from the current position (reading, if not seekable)."""
    if fh.seekable():
        fh.seek(n, os.SEEK_CUR)
        return
    while n > 0:
        got = len(fh.read(min(n, BLOCK_BYTES)))
        if not got:
            raise DatasetError(f"{fh.name}: shorter than when its conversion started")
        n -= got


def convert_svmlight(path: Path, out: Path, n_features: int, value_scale: float | None,
                     zero_based, source: dict, expected_rows: int | None = None,
                     limit_rows: int | None = None) -> RowStore:
    """Parse an svmlight/LIBLINEAR text file (optionally compressed) in line blocks of
    :data:`BLOCK_BYTES` into a row store at ``out`` (resuming a ``.part`` left behind)."""
    dtype = _pixel_dtype(value_scale)
    writer = RowStoreWriter(out, n_features, dtype, source)
    bar = progress_bar(expected_rows, f"converting {Path(path).name}", writer.rows)
    line = writer.state.get("line", 0)
    base = writer.state.get("zero_based", None if zero_based == "auto" else bool(zero_based))
    try:
        with open_binary(path) as fh:
            _skip(fh, writer.position)  # compressed: decompresses forward, parses nothing
            tail = b""
            while limit_rows is None or writer.rows < limit_rows:
                data = fh.read(BLOCK_BYTES)
                block = tail + data
                cut = block.rfind(b"\n") + 1 if data else len(block)
                block, tail = block[:cut], block[cut:]
                if not block.strip():
                    if not data:
                        break
                    continue
                n_lines = block.count(b"\n") + (not block.endswith(b"\n"))
                where = f"{path}: lines {line + 1}-{line + n_lines}"
                try:
                    if base is None:  # "auto": one-based unless a column 0 occurs
                        probe, _ = load_svmlight_file(io.BytesIO(block), zero_based=True)
                        base = bool(probe.nnz and probe.indices.min() == 0)
                    X, y = load_svmlight_file(io.BytesIO(block), n_features=n_features,
                                              zero_based=base, dtype=np.float64)
                except (ValueError, OverflowError) as exc:
                    raise DatasetError(f"{where}: {str(exc).splitlines()[0]}") from exc
                X = _as_store_dtype(X.toarray(), dtype, where)
                names, codes = labels_from_values(y)
                line += n_lines
                writer.append(X, names, codes, writer.position + len(block),
                              {"line": line, "zero_based": base})
                bar.update(len(X))
                if not data:
                    break
        return writer.finish({"format": "svmlight", "zero_based": base})
    finally:
        bar.close()
        writer.close()


def _idx_header(fh, path: Path) -> tuple[np.dtype, tuple[int, ...], int]:
    head = fh.read(4)
    if len(head) < 4 or head[:2] != b"\0\0" or head[2] not in IDX_TYPES:
        raise DatasetError(f"{path}: not an IDX file (magic bytes {head.hex()})")
    dims = tuple(int(d) for d in np.frombuffer(fh.read(4 * head[3]), ">i4"))
    return np.dtype(IDX_TYPES[head[2]]), dims, 4 + 4 * head[3]


def convert_idx(x_path: Path, y_path: Path, out: Path, value_scale: float | None,
                source: dict) -> RowStore:
    """IDX images + IDX labels (MNIST) into a row store, :data:`IDX_BLOCK_ROWS` at a time."""
    with open_binary(y_path) as fh:
        ydtype, ydims, _ = _idx_header(fh, y_path)
        labels = np.frombuffer(fh.read(), ydtype).astype(np.int64)
    with open_binary(x_path) as fh:
        xdtype, dims, _ = _idx_header(fh, x_path)
        n, D = dims[0], int(np.prod(dims[1:]))
        if len(ydims) != 1 or ydims[0] != n or len(labels) != n:
            raise DatasetError(f"{y_path}: {len(labels)} labels for the {n} rows of {x_path}")
        dtype = np.uint8 if xdtype == np.uint8 else np.float32
        writer = RowStoreWriter(out, D, dtype, source)
        bar = progress_bar(n, f"converting {Path(x_path).name}", writer.rows)
        try:
            _skip(fh, writer.rows * D * xdtype.itemsize)  # past the rows already stored
            while writer.rows < n:
                rows = min(IDX_BLOCK_ROWS, n - writer.rows)
                buf = fh.read(rows * D * xdtype.itemsize)
                if len(buf) != rows * D * xdtype.itemsize:
                    raise DatasetError(f"{x_path}: truncated IDX file (row {writer.rows + 1})")
                X = np.frombuffer(buf, xdtype).reshape(rows, D)
                names, codes = labels_from_values(labels[writer.rows:writer.rows + rows])
                writer.append(X, names, codes, writer.rows + rows)
                bar.update(rows)
            return writer.finish({"format": "idx"})
        finally:
            bar.close()
            writer.close()


# ------------------------------------------------------------------ the training rows
class StoredRows(NamedTuple):
    """A uint8 chunk as stored, with ``table[u, d]``: the float64 value that
    :class:`RowSource` makes of byte ``u`` in feature ``d`` (by the same numpy passes, so
    the same bits).  A kernel that reads the bytes and looks their values up never
    builds the float64 chunk: 8x fewer bytes per epoch (issue 16)."""

    raw: np.ndarray
    table: np.ndarray


class RowSource:
    """Rows ``rows`` (sorted; None = all) of a store as float64, ``x * value_scale``, then
    ``(x - mean) / scale`` when a scaler is set; read in chunks of ``chunk_rows``."""

    def __init__(self, store: RowStore, rows: np.ndarray | None = None, *,
                 value_scale: float | None = None, mean: np.ndarray | None = None,
                 scale: np.ndarray | None = None, chunk_rows: int = CHUNK_ROWS):
        self.store = store
        self.rows = None if rows is None else np.asarray(rows, dtype=np.int64)
        self.value_scale, self.mean, self.scale = value_scale, mean, scale
        self.chunk_rows = int(chunk_rows)
        self.n_rows = store.n_rows if rows is None else len(self.rows)
        self.n_features = store.n_features
        self.shape = (self.n_rows, self.n_features)
        self.n_chunks = max(1, -(-self.n_rows // self.chunk_rows))
        self._table = None

    def __len__(self) -> int:
        return self.n_rows

    def with_options(self, **changes) -> RowSource:
        kw = {"value_scale": self.value_scale, "mean": self.mean, "scale": self.scale,
              "chunk_rows": self.chunk_rows, **changes}
        return RowSource(self.store, self.rows, **kw)

    def bounds(self, c: int) -> tuple[int, int]:
        """Positions ``[start, stop)`` of chunk ``c``."""
        return c * self.chunk_rows, min(self.n_rows, (c + 1) * self.chunk_rows)

    def _finish(self, raw: np.ndarray, scaled: bool = True) -> np.ndarray:
        X = np.array(raw, dtype=np.float64, order="C")
        if self.value_scale is not None:
            X *= self.value_scale
        if scaled and self.mean is not None:
            X -= self.mean
        if scaled and self.scale is not None:
            X /= self.scale
        return X

    def _raw(self, start: int, stop: int) -> np.ndarray:
        if self.rows is None:
            return self.store.read(start, stop)
        return self.store.take(self.rows[start:stop])

    def chunk(self, c: int, scaled: bool = True) -> np.ndarray:
        return self._finish(self._raw(*self.bounds(c)), scaled)

    def stored_chunk(self, c: int) -> StoredRows | None:
        """Chunk ``c`` as stored with its value table, or None unless stored as uint8."""
        if self.store.dtype != np.uint8:
            return None
        if self._table is None:  # every byte value through the chunk's own numpy passes
            levels = np.arange(256, dtype=np.uint8)[:, None]
            self._table = self._finish(np.repeat(levels, self.n_features, axis=1))
        return StoredRows(np.ascontiguousarray(self._raw(*self.bounds(c))), self._table)

    def iter_chunks(self, order=None, scaled: bool = True):
        """``(c, X_c)`` for the chunks in ``order`` (default: 0, 1, ...)."""
        for c in range(self.n_chunks) if order is None else order:
            yield int(c), self.chunk(int(c), scaled)

    def take(self, positions) -> np.ndarray:
        """Rows at sorted ``positions`` (0..n_rows-1) as float64."""
        positions = np.asarray(positions, dtype=np.int64)
        rows = positions if self.rows is None else self.rows[positions]
        return self._finish(self.store.take(rows))

    def sample(self, n: int, seed) -> np.ndarray:
        """Sorted positions of a seeded sample of ``n`` rows (all rows if there are fewer)."""
        if self.n_rows <= n:
            return np.arange(self.n_rows)
        return np.sort(np.random.default_rng(seed).choice(self.n_rows, n, replace=False))

    def stats(self, labels: np.ndarray | None = None) -> dict:
        """One pass over the value-scaled (not standardised) rows: per-feature mean, std
        (ddof 0), mean |x|, and the counts of ``labels`` (aligned with the rows)."""
        D = self.n_features
        count, mean, m2, absum = 0, np.zeros(D), np.zeros(D), np.zeros(D)
        for _, X in self.iter_chunks(scaled=False):
            nb = len(X)
            mb = X.mean(axis=0)
            X -= mb
            m2b = np.einsum("ij,ij->j", X, X)
            X += mb
            absum += np.abs(X).sum(axis=0)
            delta, total = mb - mean, count + nb
            mean += delta * (nb / total)
            m2 += m2b + delta**2 * (count * nb / total)
            count = total
        out = {"n": count, "mean": mean, "std": np.sqrt(m2 / max(count, 1)),
               "mean_abs": absum / max(count, 1)}
        if labels is not None:
            values, counts = np.unique(labels, return_counts=True)
            out["class_counts"] = {int(v): int(c) for v, c in zip(values, counts, strict=True)}
        return out


def is_source(X) -> bool:
    """True for a chunked source (anything with ``iter_chunks``), False for arrays."""
    return hasattr(X, "iter_chunks") and hasattr(X, "take")


# -------------------------------------------------------------- dataset-level wiring
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


def file_sha256(path: Path, home: Path) -> str:
    """sha256 of a source file, remembered in ``<home>/_rows/sha256.json`` by path, size
    and mtime (hashing a multi-GB archive once, not at every run)."""
    from llc_bench.data.fetch import sha256_of

    stat = Path(path).stat()
    key = f"{Path(path).resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    memo_path = Path(home) / ROWS_DIR / "sha256.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if key not in memo:
        memo[key] = sha256_of(Path(path))
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            _write_json(memo_path, memo)
        except OSError:  # a read-only home: hash again next time
            pass
    return memo[key]


def pin_identity(dataset: dict, data: dict, estimator) -> None:
    """Runner hook, before the cache key is computed, for datasets read through a row
    store: refuse a model that cannot stream a streamed dataset (one line, with the way
    out), and put the sha256 of every source file the spec does not pin into
    ``dataset.source_sha256`` (a generator's parameters are in the config already)."""
    from llc_bench.data.fetch import data_home, mirror_dirs, resolve_source
    from llc_bench.data.registry import resolve_spec

    if not (dataset.get("in_memory") is False or dataset.get("stream") is not None
            or (dataset.get("generator") or {}).get("name") == "infimnist"):
        return  # the usual in-memory datasets: nothing to do
    spec = resolve_spec(dataset)
    if spec.kind == "synthetic" or not uses_row_store(spec):
        return
    if streams(spec) and not getattr(estimator, "supports_streaming", False):
        raise ConfigError(
            f"{type(estimator).__name__} cannot stream dataset {spec.name!r}: it needs every "
            "training row in memory (only the llc_sgd models - LL-SVM, LCC+SVM, SAPL, "
            "SAPL-lcc, JO, 1-anchor linear SGD - stream); set dataset.max_train=N (e.g. "
            "100000) to train on a seeded subsample held in memory")
    home = data_home(data.get("home"))
    source, located = resolve_source(spec, home, mirror_dirs(data.get("mirrors") or ()),
                                     bool(data.get("download", True)))
    pins = {e.role: file_sha256(where.path, home) for e, where in located.items()
            if e.sha256 is None}
    if pins:
        dataset["source_sha256"] = pins


def _store_key(parts: list) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]


def part_store(spec, source, located, part: str, home: Path) -> RowStore:
    """The row store of one part of a resolved source, converted on first use."""
    from llc_bench.data.cache import cache_key

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
    from llc_bench.data.fetch import data_home, mirror_dirs, resolve_source
    from llc_bench.data.reader import validate_download
    from llc_bench.data.registry import resolve_spec

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
            from llc_bench.data.infimnist import generated_store

            out[part] = generated_store(spec, source, located, home)
        else:
            out[part] = part_store(spec, source, located, part, home)
    return out


def _row_range(bounds, n: int, what: str) -> np.ndarray:
    if bounds is None:
        return np.arange(n)
    if bounds[1] > n:
        raise ConfigError(f"split.{what} {list(bounds)} exceeds the {n} rows of the file")
    return np.arange(*bounds)


def load_streamed(spec, seed: int, home: Path, mirrors: list[Path], download: bool,
                  policy: str):
    """``load_dataset`` for a dataset read through row stores: the training split as a
    :class:`RowSource` (or, when :func:`streams` is False, in memory), the test split in
    memory; labels, ``max_train``/``max_test``, validation hold-out and scaling as
    ``load_dataset`` does them, with the scaler fitted in one streaming pass."""
    from llc_bench.data.dataset import UNSEEN_LABEL, Dataset
    from llc_bench.data.fetch import resolve_source
    from llc_bench.data.load import _counts, limit_rows
    from llc_bench.data.preprocess import build_coder, split_indices
    from llc_bench.data.reader import validate_download

    start = time.perf_counter()
    source, located = resolve_source(spec, home, mirrors, download,
                                     lambda e, p: validate_download(spec, e, p, home))
    files_split = spec.split.protocol == "files"
    wanted = ("train", "test") if files_split else ("all",)
    if tuple(p for p in source.parts if p in wanted) != wanted or \
            (not files_split and len(source.parts) != 1):
        raise ConfigError(f"dataset {spec.name!r}: streaming needs a train and a test file "
                          "(split protocol 'files') or one file split by rows or fraction; "
                          f"the source has {', '.join(source.parts)}")
    stores = stores_of(spec, source, located, home, wanted)
    tr, te = (stores["train"], stores["test"]) if files_split else (stores["all"],) * 2
    loaded = time.perf_counter()
    names = sorted(set(tr.label_names) | set(te.label_names))
    index = {n: i for i, n in enumerate(names)}

    def codes(store, rows):
        return np.array([index[n] for n in store.label_names] or [0])[store.y[rows]]

    drop = np.array([n in spec.labels.drop for n in names] + [False])

    def kept(store):  # rows without a dropped label (dropped before the split, as in memory)
        y = codes(store, np.arange(store.n_rows))
        keep = ~drop[y]
        return np.flatnonzero(keep), y[keep]

    if files_split:
        (all_tr, yall_tr), (all_te, yall_te) = kept(tr), kept(te)
        rows_tr = _row_range(spec.split.train_rows, len(all_tr), "train_rows")
        rows_te = _row_range(spec.split.test_rows, len(all_te), "test_rows")
    else:  # the same seeded split as in memory
        all_tr, yall_tr = kept(tr)
        all_te, yall_te = all_tr, yall_tr
        rows_tr, rows_te = split_indices(spec.split, len(all_tr), seed)
    rows_tr, y_tr, rows_te, y_te = (all_tr[rows_tr], yall_tr[rows_tr], all_te[rows_te],
                                    yall_te[rows_te])
    rows_tr, y_tr, rows_te, y_te, limits = limit_rows(spec, seed, rows_tr, y_tr, rows_te, y_te)
    test_store = te if limits["validation"] is None else tr  # held-out rows: training's
    coder = build_coder(spec.task, spec.labels, {names[c] for c in np.unique(y_tr)})
    values = np.array([coder.value_of.get(n, UNSEEN_LABEL) for n in names] + [UNSEEN_LABEL],
                      dtype=np.int64)
    y_tr, y_te = values[y_tr], values[y_te]
    if len(np.unique(y_tr)) < 2:
        raise DatasetError(f"the training split of {spec.name!r} has fewer than two classes")
    unseen = ~np.isin(y_te, np.unique(y_tr))
    if unseen.any():
        if policy == "error":
            raise DatasetError(f"{spec.name!r}: {int(unseen.sum())} test rows have a label that "
                               "does not occur in the training split; set dataset."
                               "unseen_test_labels=count_as_errors to count them as errors")
        y_te[unseen] = UNSEEN_LABEL

    src = RowSource(tr, rows_tr, value_scale=source.value_scale)
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
    X_te = RowSource(test_store, rows_te, value_scale=source.value_scale, mean=mean,
                     scale=scale).take(np.arange(len(rows_te)))
    streamed = streams(spec)
    X_tr = src if streamed else src.take(np.arange(src.n_rows))
    done = time.perf_counter()
    notes = list(spec.raw.get("notes") or [])
    paper = spec.paper_sizes
    if paper and (len(y_tr), len(y_te)) != (paper.get("train"), paper.get("test")):
        notes.append(f"train/test sizes {len(y_tr)}/{len(y_te)} differ from the paper's "
                     f"{paper.get('train')}/{paper.get('test')}")
    files = [located[e].describe() for e in source.files]
    info = {
        "dataset": spec.name, "kind": spec.kind, "task": coder.task, "source": source.id,
        "source_note": source.note, "files": files, "home": str(home),
        "mirrors": [str(m) for m in mirrors],
        "labels": {"classes": coder.classes, "mapping": coder.value_of,
                   "dropped": sorted(coder.drop), "classes_from": "training split"},
        "rows": {"train": tr.n_rows, "test": te.n_rows} if files_split else {"all": tr.n_rows},
        "split": {**spec.split.describe(), "seed": seed, "stratified": False,
                  "train": limits["sizes_before"][0], "test": limits["sizes_before"][1]},
        "subsample": limits["subsample"],
        "validation": limits["validation"],
        "n_train": len(y_tr), "n_test": len(y_te), "n_features": tr.n_features,
        "class_counts": {"train": _counts(y_tr, coder), "test": _counts(y_te, coder)},
        "value_scale": source.value_scale, "sparse": False, "scaling": scaling,
        "row_store": {"train": str(tr.path), "test": str(te.path), "dtype": tr.dtype.str,
                      "identity": tr.meta.get("source"), "streamed": streamed,
                      "chunk_rows": src.chunk_rows if streamed else None},
        "paper_sizes": dict(paper) if paper else None, "notes": notes,
        "timings": {"load": loaded - start, "preprocess": done - loaded},
    }
    return Dataset(spec.name, coder.task, X_tr, y_tr.astype(np.int64), X_te,
                   y_te.astype(np.int64), list(coder.classes), tr.n_features, info)


def write_store(path: Path, X: np.ndarray, labels, source: dict | None = None,
                block_rows: int = IDX_BLOCK_ROWS) -> RowStore:
    """An in-memory array (uint8 kept, anything else as float32) and its labels as a store."""
    X = np.asarray(X)
    dtype = np.uint8 if X.dtype == np.uint8 else np.float32
    names, codes = labels_from_values(np.asarray(labels))
    writer = RowStoreWriter(path, X.shape[1], dtype, source or {})
    try:
        for lo in range(writer.rows, len(X), block_rows):
            hi = min(len(X), lo + block_rows)
            writer.append(X[lo:hi], names, codes[lo:hi], hi)
        return writer.finish({"format": "array"})
    finally:
        writer.close()
