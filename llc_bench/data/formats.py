"""Parsers for the file formats the papers' datasets come in.

Each parser returns a :class:`Parsed` (features and/or labels) without any
dataset-specific logic: label mapping, checks against the spec and scaling happen
later. Labels are kept as canonical strings (``"1"``, ``"g"``, ``"A"``) encoded as
``label_names`` + integer ``label_codes`` so that big files stay cheap.

Formats: ``svmlight`` (LIBSVM), ``csv`` (UCI delimited text), ``idx`` (MNIST),
``mat`` (MATLAB, banana), ``ldkl`` (LDKL text: a ``n d`` line, then ``label x1 .. xd``).
Library errors are re-raised as one-line ``DatasetError`` naming the file.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from llc_bench.data.compression import open_binary, read_bytes
from llc_bench.data.spec import canonical_label
from llc_bench.errors import DatasetError

IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclass
class Parsed:
    """Rows of one file: features ``X`` (dense or CSR) and/or labels (names + codes)."""

    X: np.ndarray | sp.csr_matrix | None = None
    label_names: list[str] | None = None
    label_codes: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return self.X.shape[0] if self.X is not None else len(self.label_codes)


def labels_from_values(values) -> tuple[list[str], np.ndarray]:
    """Canonical label names and int32 codes for a 1-D array of raw labels."""
    codes, uniques = pd.factorize(pd.Series(values), sort=False)
    if (codes < 0).any():
        raise ValueError(f"missing label in row {int(np.argmax(codes < 0)) + 1}")
    names = [canonical_label(u) for u in uniques]
    merged, remap = np.unique(np.asarray(names, dtype=str), return_inverse=True)
    return [str(n) for n in merged], remap.astype(np.int32)[codes]


def parse_svmlight(path: Path, options: Mapping, n_features: int | None) -> Parsed:
    """LIBSVM/svmlight text (one-based indices unless ``zero_based``)."""
    with open_binary(path) as fh:
        X, y = load_svmlight_file(fh, n_features=n_features, dtype=np.float64,
                                  zero_based=options.get("zero_based", False))
    names, codes = labels_from_values(y)
    return Parsed(sp.csr_matrix(X), names, codes)


def _column_index(index, columns, what: str) -> int:
    """Position of a column given by number (negative from the end) or header name."""
    n_columns = len(columns)
    if isinstance(index, str):
        names = [str(c) for c in columns]
        if index not in names:
            raise ValueError(f"{what} {index!r} is not a column name ({', '.join(names)})")
        return names.index(index)
    if not -n_columns <= index < n_columns:
        raise ValueError(f"{what} {index} is out of range for {n_columns} columns")
    return index % n_columns


def _read_table(fh, options: Mapping) -> pd.DataFrame:
    sep = options.get("sep", ",")
    whitespace = sep in (None, "whitespace", " ")
    return pd.read_csv(fh, sep=r"\s+" if whitespace else sep,
                       header=0 if options.get("header", False) else None,
                       skiprows=options.get("skip_rows", 0) or None,
                       skipinitialspace=not whitespace, engine="c", low_memory=False)


def _one_hot(frame: pd.DataFrame, categories) -> np.ndarray:
    """Indicator columns, one block per column, in the order of ``categories``."""
    wanted = [canonical_label(c) for c in categories]
    blocks = []
    for position, column in enumerate(frame.columns):
        codes, uniques = pd.factorize(frame[column], sort=False)
        lookup = np.array([wanted.index(canonical_label(u)) if canonical_label(u) in wanted
                           else -1 for u in uniques] + [-1], dtype=np.int64)
        index = lookup[codes]
        if (index < 0).any():
            row = int(np.argmax(index < 0))
            raise ValueError(f"value {frame[column].iloc[row]!r} in row {row + 1}, feature "
                             f"column {position + 1} is not one of the categories {wanted}")
        block = np.zeros((len(frame), len(wanted)), dtype=np.float64)
        block[np.arange(len(frame)), index] = 1.0
        blocks.append(block)
    return np.hstack(blocks) if blocks else np.zeros((len(frame), 0))


def _numeric(frame: pd.DataFrame, categorical: str) -> np.ndarray:
    """Numeric feature matrix; string columns are one-hot encoded or rejected."""
    blocks = []
    for position, column in enumerate(frame.columns):
        series = frame[column]
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            blocks.append(series.to_numpy(dtype=np.float64)[:, None])
            continue
        numbers = pd.to_numeric(series, errors="coerce")
        bad = numbers.isna() & series.notna()
        if not bad.any():
            blocks.append(numbers.to_numpy(dtype=np.float64)[:, None])
        elif categorical == "onehot":
            categories = sorted({canonical_label(v) for v in series.dropna().unique()})
            blocks.append(_one_hot(series.to_frame(), categories))
        else:
            row = int(np.argmax(bad.to_numpy()))
            raise ValueError(f"non-numeric value {series.iloc[row]!r} in row {row + 1}, feature "
                             f"column {position + 1} (set options.categorical: onehot to encode)")
    return np.hstack(blocks) if blocks else np.zeros((len(frame), 0))


def parse_delimited(path: Path, options: Mapping, kind: str = "xy", fh=None) -> Parsed:
    """UCI-style delimited text: label in any column, optional header, string labels."""
    if fh is None:
        with open_binary(path) as handle:
            return parse_delimited(path, options, kind, handle)
    frame = _read_table(fh, options)
    n_columns = frame.shape[1]
    if kind == "y":
        if n_columns != 1:
            raise ValueError(f"a labels file must have one column, found {n_columns}")
        return Parsed(None, *labels_from_values(frame.iloc[:, 0].to_numpy()))
    label = options.get("label_column", -1) if kind == "xy" else None
    label = None if label is None else _column_index(label, frame.columns, "label_column")
    dropped = {_column_index(c, frame.columns, "drop_columns entry")
               for c in options.get("drop_columns") or ()}
    features = frame.iloc[:, [c for c in range(n_columns) if c != label and c not in dropped]]
    categories = options.get("one_hot_categories")
    X = (_one_hot(features, categories) if categories
         else _numeric(features, options.get("categorical", "error")))
    if label is None:
        return Parsed(np.ascontiguousarray(X))
    return Parsed(np.ascontiguousarray(X), *labels_from_values(frame.iloc[:, label].to_numpy()))


def parse_ldkl(path: Path, options: Mapping) -> Parsed:
    """LDKL text: first line ``n d``, then ``label x1 ... xd`` per row."""
    with open_binary(path) as fh:
        header = fh.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise ValueError(f"first line must be 'n d', got {b' '.join(header)!r}")
        n_rows, n_features = int(header[0]), int(header[1])
        parsed = parse_delimited(path, {"sep": "whitespace", "label_column": 0}, "xy", fh)
    if parsed.X.shape != (n_rows, n_features):
        raise ValueError(f"header says {n_rows} x {n_features}, data is "
                         f"{parsed.X.shape[0]} x {parsed.X.shape[1]}")
    return parsed


def parse_idx(path: Path, kind: str) -> Parsed:
    """IDX (MNIST): big-endian header, then raw values; images become one row each."""
    buffer = read_bytes(path)
    if len(buffer) < 4 or buffer[:2] != b"\0\0" or buffer[2] not in IDX_TYPES:
        raise ValueError(f"not an IDX file (magic bytes {buffer[:4].hex()})")
    n_dims, dtype = buffer[3], np.dtype(IDX_TYPES[buffer[2]])
    if len(buffer) < 4 + 4 * n_dims:
        raise ValueError("truncated IDX header")
    dims = np.frombuffer(buffer, ">i4", count=n_dims, offset=4).astype(np.int64)
    offset, count = 4 + 4 * n_dims, int(np.prod(dims))
    if len(buffer) - offset != count * dtype.itemsize:
        raise ValueError(f"IDX header says {'x'.join(map(str, dims))} ({count * dtype.itemsize} "
                         f"bytes of data) but the file has {len(buffer) - offset} (truncated?)")
    values = np.frombuffer(buffer, dtype, count=count, offset=offset)
    values = values.astype(dtype.newbyteorder("="), copy=True).reshape(dims)
    if kind == "y":
        if n_dims != 1:
            raise ValueError(f"an IDX labels file must be 1-D, found {n_dims} dimensions")
        return Parsed(None, *labels_from_values(values))
    if kind != "x":
        raise ValueError("an IDX file holds either features (role *_x) or labels (role *_y)")
    return Parsed(values.reshape(int(dims[0]), -1))


def parse_mat(path: Path, options: Mapping) -> Parsed:
    """MATLAB .mat with a feature matrix (either orientation) and a label vector."""
    content = scipy.io.loadmat(io.BytesIO(read_bytes(path)))
    x_key, y_key = options.get("x_key", "X"), options.get("y_key", "y")
    present = sorted(k for k in content if not k.startswith("__"))
    for key in (x_key, y_key):
        if key not in content:
            raise ValueError(f"variable {key!r} not found (file has: {', '.join(present)})")
    X, y = content[x_key], np.asarray(content[y_key]).ravel()
    X = sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.asarray(X, np.float64)
    if X.ndim != 2:
        raise ValueError(f"variable {x_key!r} is not a matrix")
    if X.shape[0] != y.size and X.shape[1] == y.size:
        X = X.T.tocsr() if sp.issparse(X) else np.ascontiguousarray(X.T)
    if X.shape[0] != y.size:
        raise ValueError(f"{x_key!r} has shape {X.shape} but {y_key!r} has {y.size} labels")
    return Parsed(X, *labels_from_values(y))


def parse_file(path: Path, fmt: str, options: Mapping, kind: str = "xy",
               n_features: int | None = None) -> Parsed:
    """Parse one file; any library error becomes a one-line ``DatasetError`` naming it."""
    try:
        if fmt == "svmlight":
            if kind != "xy":
                raise ValueError("svmlight files hold features and labels (role train/test/all)")
            return parse_svmlight(path, options, options.get("n_features", n_features))
        if fmt == "csv":
            return parse_delimited(path, options, kind)
        if fmt == "idx":
            return parse_idx(path, kind)
        if fmt == "mat":
            return parse_mat(path, options)
        if fmt == "ldkl":
            return parse_ldkl(path, options)
        raise ValueError(f"unknown format {fmt!r}")
    except (DatasetError, MemoryError, KeyboardInterrupt):
        raise
    except Exception as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise DatasetError(f"{path}: cannot parse as {fmt} "
                           f"({type(exc).__name__}: {detail})") from exc
