"""What the SGD epochs read: batches ``(X_b, Y_b, code_b or None, order_b)`` per epoch,
from the rows in memory (:func:`in_memory_batches`) or streamed from a row source
(:func:`stream_batches`); the step counters, W, b and the anchors carry across batches."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..coding.local import LocalCode
from .sgd_epoch import labels_matrix


def in_memory_batches(X, Y, code):
    """The in-memory producer: one batch per epoch, in the order ``rng.permutation(n)``."""
    return lambda rng: [(X, Y, code, rng.permutation(X.shape[0]))]


#: Streamed fixed-anchor codes are kept in memory after the first epoch when all rows'
#: codes (indices + weights) take at most this many bytes (8.1M rows, k = 8: 777 MB).
CODE_CACHE_BYTES = 1 << 30


def stream_batches(source, y_idx: np.ndarray, n_classes: int, encode=None, prefetch=True,
                   code_cache_bytes: int = CODE_CACHE_BYTES, known: dict | None = None):
    """The producer over a row source (``llc_bench.data.rows``): the chunks in a seeded
    order (no draw for a single chunk, so one chunk replays :func:`in_memory_batches`),
    each with ``rng.permutation`` of its rows; targets from ``y_idx`` and codes
    (``encode(X_c)``; None when the anchors are learned) per chunk; ``known`` maps
    chunks to codes computed already (the in-memory rows' codes).

    Fixed anchors give every chunk the same codes in every epoch: they are computed in
    the first epoch and kept (indices and weights only) when all the source's codes fit
    ``code_cache_bytes``, so later epochs only read x (the same numbers: the encoding is
    deterministic), and as stored when stored as bytes (``StoredRows``: uint8 pixels,
    no float64 chunk).  ``prefetch``: read, scale and encode the next chunk in a second
    thread while the (nogil) kernel trains on the current one.  The draws and every
    number are the same as without it (one producer, in order); at most two chunks of x
    are in memory."""
    kept: dict = dict(known or {})

    def code_of(c, Xc):
        if c in kept:
            return kept[c]
        code = encode(Xc)
        slim = LocalCode(code.indices, code.weights, None, code.n_active)
        per_row = sum(a.nbytes for a in (slim.indices, slim.weights, slim.n_active)
                      if a is not None) / max(code.n, 1)
        if per_row * source.n_rows <= code_cache_bytes:
            kept[c] = slim
        return code

    def produce(rng):
        chunks = rng.permutation(source.n_chunks) if source.n_chunks > 1 else [0]
        for c in map(int, chunks):
            lo, hi = source.bounds(c)
            Yc = labels_matrix(y_idx[lo:hi], n_classes)
            stored = source.stored_chunk(c) if c in kept else None
            if stored is not None:  # codes kept, bytes stored: the kernel looks x up
                yield stored, Yc, kept[c], rng.permutation(hi - lo)
                continue
            Xc = source.chunk(c)
            yield Xc, Yc, None if encode is None else code_of(c, Xc), rng.permutation(hi - lo)

    if not prefetch or source.n_chunks == 1:
        return produce
    return lambda rng: _prefetched(produce(rng))


_END = object()


def _prefetched(items: Iterator):
    """Yield from ``items``, computing the next item in a worker thread meanwhile."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="llc-prefetch") as pool:
        pending = pool.submit(next, items, _END)
        while (item := pending.result()) is not _END:
            pending = pool.submit(next, items, _END)
            yield item
            item = None  # let the chunk go before the next one is waited for
