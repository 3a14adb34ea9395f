"""The row store: a chunked copy of a dataset part on disk, and its rows as a row source.

A *row store* is a directory ``<home>/_rows/<dataset>-<part>-<key>/`` with ``X.npy`` (uint8
for pixel data, float32 otherwise; a plain ``.npy``, so it can also be memory-mapped),
``y.npy`` (int32 codes into ``meta.json``'s label names) and ``meta.json``.  The key is the
sha256 of the source files plus the parser settings (or the generator's parameters), so a
changed file is converted again.  A conversion parses the source in line blocks, appends
each block and records its progress, so an interrupted conversion resumes where it stopped.

:class:`StoreSource` is rows of a store as a :class:`~llc_bench.data.rows.RowSource`
(float64 chunks, value-scaled and standardised on read, each read with ``np.fromfile`` so
memory stays bounded by one chunk).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_svmlight_file

from llc_bench.data.compression import open_binary
from llc_bench.data.fetch import sha256_of
from llc_bench.data.formats import IDX_TYPES, labels_from_values
from llc_bench.data.rows import CHUNK_ROWS, RowSource, StoredRows
from llc_bench.errors import DatasetError
from llc_bench.files import atomic_write_json

ROWS_DIR = "_rows"
STORE_VERSION = 1
#: Decompressed bytes per parsed block of a text source.
BLOCK_BYTES = 32 << 20
#: Rows per block of an IDX source.
IDX_BLOCK_ROWS = 100_000
_HEADER = 128  # bytes reserved for the .npy header, rewritten with the final row count


def _npy_header(dtype: np.dtype, shape: tuple[int, int]) -> bytes:
    """A version-1.0 ``.npy`` header padded to exactly ``_HEADER`` bytes."""
    text = repr({"descr": np.dtype(dtype).str, "fortran_order": False, "shape": tuple(shape)})
    pad = _HEADER - 10 - len(text) - 1
    return b"\x93NUMPY\x01\x00" + (_HEADER - 10).to_bytes(2, "little") + \
        (text + " " * pad + "\n").encode("latin1")


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
        atomic_write_json(self.dir / "progress.json", self.progress)

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
        atomic_write_json(self.dir / "meta.json", {
            "version": STORE_VERSION, "n_rows": rows, "n_features": self.n_features,
            "dtype": self.dtype.str, "label_names": self.progress["labels"],
            "source": self.progress["source"], **meta})
        if self.final.exists():  # another process finished first: keep theirs
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


class StoreSource(RowSource):
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
        self._table = None

    def with_options(self, **changes) -> StoreSource:
        kw = {"value_scale": self.value_scale, "mean": self.mean, "scale": self.scale,
              "chunk_rows": self.chunk_rows, **changes}
        return StoreSource(self.store, self.rows, **kw)

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
        for _, X in self.chunks(scaled=False):
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


def file_sha256(path: Path, home: Path) -> str:
    """sha256 of a source file, remembered in ``<home>/_rows/sha256.json`` by path, size
    and mtime (hashing a multi-GB archive once, not at every run)."""
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
            atomic_write_json(memo_path, memo)
        except OSError:  # a read-only home: hash again next time
            pass
    return memo[key]


def _store_key(parts: list) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:20]



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
