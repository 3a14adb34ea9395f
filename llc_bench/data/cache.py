"""Parsed-array cache: one ``.npz`` per source file in ``<home>/_cache/``.

The key is the file's sha256 plus the parser settings, so a changed file (or a changed
parser option) is parsed again. Each entry stores a sha256 digest of its arrays, checked
on read: an entry that is unreadable, altered or inconsistent is reported (one warning
line on stderr), ignored and rebuilt from the source file. Writes go to a temporary file
that is renamed into place (``os.replace``), so readers never see a partial file.
Features keep their parsed dtype (MNIST stays uint8).
"""

from __future__ import annotations

import hashlib
import json
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from llc_bench.data.formats import Parsed
from llc_bench.files import atomic_open

CACHE_VERSION = 2
CACHE_DIR = "_cache"


def cache_key(sha256: str, fmt: str, options: Mapping, kind: str, n_features) -> str:
    """Hex key naming the parse of one file content with one set of parser settings."""
    settings = json.dumps({"v": CACHE_VERSION, "format": fmt, "options": dict(options),
                           "kind": kind, "n_features": n_features}, sort_keys=True, default=str)
    return f"{sha256[:24]}-{hashlib.sha256(settings.encode()).hexdigest()[:12]}"


def cache_path(home: Path, relative: str, key: str) -> Path:
    """``<home>/_cache/<dir>/<name>.<key>.npz`` (user files by absolute path: ``_cache/custom``)."""
    source = Path(relative)
    folder = Path("custom") if source.is_absolute() else source.parent
    return Path(home) / CACHE_DIR / folder / f"{source.name}.{key}.npz"


def digest(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over the names, dtypes, shapes and bytes of ``arrays`` (key order fixed)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{array.dtype.str}|{array.shape}|".encode())
        h.update(array.tobytes())
    return h.hexdigest()


def _parsed(arrays: Mapping[str, np.ndarray]) -> Parsed:
    """The arrays of a verified entry as a Parsed; ValueError if they do not fit together."""
    kind = str(arrays["x_kind"])
    if kind == "dense":
        X = arrays["X"]
        if X.ndim != 2:
            raise ValueError(f"X has {X.ndim} dimensions")
    elif kind == "csr":
        X = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]),
                          shape=tuple(int(n) for n in arrays["shape"]))
        X.check_format(full_check=True)
    elif kind == "none":
        X = None
    else:
        raise ValueError(f"unknown x_kind {kind!r}")
    names = codes = None
    if "label_names" in arrays:
        names, codes = [str(n) for n in arrays["label_names"]], arrays["label_codes"]
        if codes.ndim != 1 or (len(codes) and not 0 <= codes.min() <= codes.max() < len(names)):
            raise ValueError("label codes do not fit the label names")
        if X is not None and X.shape[0] != len(codes):
            raise ValueError(f"{X.shape[0]} feature rows but {len(codes)} labels")
    elif X is None:
        raise ValueError("neither features nor labels")
    meta = json.loads(str(arrays["meta"])) if "meta" in arrays else {}
    return Parsed(X, names, codes, meta)


def load_cached(path: Path, source: str | Path | None = None) -> Parsed | None:
    """The cached arrays, or None when absent or not trustworthy (it will be rebuilt).

    An entry that exists but is unreadable, fails its digest or is inconsistent is reported
    on stderr (one line) before it is ignored.
    """
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        stored = str(arrays.pop("digest", ""))
        if stored != digest(arrays):
            raise ValueError("digest mismatch" if stored else "no digest")
        return _parsed(arrays)
    except (OSError, ValueError, KeyError, EOFError, TypeError, IndexError,
            zipfile.BadZipFile) as exc:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]
        print(f"llc-bench: warning: ignoring the parsed-data cache {path} ({reason}); "
              f"rebuilding it from {source or 'the source file'}", file=sys.stderr)
        return None


def store(path: Path, parsed: Parsed) -> bool:
    """Write atomically; returns False (and leaves nothing behind) if the home is read-only."""
    arrays: dict[str, np.ndarray] = {}
    if parsed.X is None:
        arrays["x_kind"] = np.array("none")
    elif sp.issparse(parsed.X):
        X = parsed.X.tocsr()
        arrays.update(x_kind=np.array("csr"), data=X.data, indices=X.indices, indptr=X.indptr,
                      shape=np.array(X.shape))
    else:
        arrays.update(x_kind=np.array("dense"), X=np.asarray(parsed.X))
    if parsed.label_names is not None:
        arrays["label_names"] = np.array(parsed.label_names, dtype=str)
        arrays["label_codes"] = np.asarray(parsed.label_codes)
    if parsed.meta:
        arrays["meta"] = np.array(json.dumps(parsed.meta, sort_keys=True))
    arrays["digest"] = np.array(digest(arrays))
    try:
        with atomic_open(path) as fh:
            np.savez(fh, **arrays)
        return True
    except OSError:
        return False
