"""Training rows as the estimators see them: the row-source protocol.

A :class:`RowSource` is ``n_rows`` rows of ``n_features`` float64 features, cut into
``n_chunks`` chunks of ≤ ``chunk_rows`` consecutive rows:

* ``chunks(order)`` yields ``(c, X_c)`` for the chunks in ``order`` (default 0, 1, ...);
  ``chunk(c)`` is one of them and ``bounds(c)`` its positions ``[start, stop)``;
* ``sample(n, seed)``: sorted positions of the rows that the in-memory steps of a fit
  (λ CV, anchors, coding, init, η0 calibration, the kept-epoch objective) see;
* ``take(positions)``: those rows in memory (an array, or CSR for sparse arrays);
* ``stats()``: one pass of per-feature mean, std and mean |x|;
* ``stored_chunk(c)``: chunk ``c`` as stored bytes with their value table
  (:class:`StoredRows`), or None.

:class:`ArraySource` wraps arrays already in memory as one chunk: its sample is all its
rows and ``take`` of all of them is the array itself, so a fit through it makes the same
draws and the same numbers as the plain in-memory fit.  The on-disk row store implements
the same protocol (``llc_bench.data.stream.StoreSource``).  The models import this
module only, never the store.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

#: Rows per chunk of an on-disk source (65,536 x 784 float64 = 411 MB).
CHUNK_ROWS = 65_536
#: Rows of the seeded sample that the in-memory steps of a fit see when streaming: 100k
#: rows keep the k-means peak (the sample and scikit-learn's centred copy, float64) near
#: 2 GB whatever N.
SAMPLE_ROWS = 100_000


class StoredRows(NamedTuple):
    """A uint8 chunk as stored, with ``table[u, d]``: the float64 value that the source
    makes of byte ``u`` in feature ``d`` (by the same numpy passes, so the same bits).  A
    kernel that reads the bytes and looks their values up never builds the float64
    chunk: 8x fewer bytes per epoch."""

    raw: np.ndarray
    table: np.ndarray


class RowSource:
    """The protocol (see the module docstring); subclasses set ``n_rows``,
    ``n_features``, ``chunk_rows`` and implement ``chunk``, ``take``, ``sample`` and
    ``stats``."""

    n_rows: int
    n_features: int
    chunk_rows: int
    #: Rows read chunk by chunk (False: all of them in memory already).
    streamed = True

    @property
    def shape(self) -> tuple[int, int]:
        return self.n_rows, self.n_features

    @property
    def n_chunks(self) -> int:
        return max(1, -(-self.n_rows // self.chunk_rows))

    def __len__(self) -> int:
        return self.n_rows

    def bounds(self, c: int) -> tuple[int, int]:
        """Positions ``[start, stop)`` of chunk ``c``."""
        return c * self.chunk_rows, min(self.n_rows, (c + 1) * self.chunk_rows)

    def chunks(self, order=None, scaled: bool = True):
        """``(c, X_c)`` for the chunks in ``order`` (default: 0, 1, ...)."""
        for c in range(self.n_chunks) if order is None else order:
            yield int(c), self.chunk(int(c), scaled)

    def stored_chunk(self, c: int) -> StoredRows | None:
        return None


def as_source(X) -> RowSource:
    """``X`` itself when it is a row source, else the arrays wrapped as one."""
    return X if isinstance(X, RowSource) else ArraySource(X)


class ArraySource(RowSource):
    """A dense array or a CSR matrix already in memory, as one chunk."""

    streamed = False

    def __init__(self, X):
        self.X = X
        self.n_rows, self.n_features = X.shape
        self.chunk_rows = max(1, self.n_rows)

    def chunk(self, c: int, scaled: bool = True):
        return self.X

    def take(self, positions):
        positions = np.asarray(positions, dtype=np.int64)
        return self.X if len(positions) == self.n_rows else self.X[positions]

    def sample(self, n: int, seed) -> np.ndarray:
        """All rows: they are in memory already."""
        return np.arange(self.n_rows)

    def stats(self) -> dict:
        X = self.X
        mean = np.asarray(X.mean(axis=0)).ravel()
        square = np.asarray((X.multiply(X) if sp.issparse(X) else X * X).mean(axis=0)).ravel()
        return {"n": self.n_rows, "mean": mean, "std": np.sqrt(np.maximum(square - mean**2, 0)),
                "mean_abs": np.asarray(abs(X).mean(axis=0)).ravel()}
