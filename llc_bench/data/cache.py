"""Parsed-array cache: one ``.npz`` per source file in ``<home>/_cache/``.

The key is the file's sha256 plus the parser settings, so a changed file (or a changed
parser option) is parsed again. A corrupt cache file is ignored and rewritten; writes go
to a temporary file that is renamed into place (``os.replace``), so readers never see a
partial file. Features keep their parsed dtype (MNIST stays uint8).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from llc_bench.data.formats import Parsed

CACHE_VERSION = 1
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


def load_cached(path: Path) -> Parsed | None:
    """The cached arrays, or None when absent or unreadable (it will be rewritten)."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as npz:
            kind = str(npz["x_kind"])
            if kind == "dense":
                X = npz["X"]
            elif kind == "csr":
                X = sp.csr_matrix((npz["data"], npz["indices"], npz["indptr"]),
                                  shape=tuple(npz["shape"]))
            else:
                X = None
            names = [str(n) for n in npz["label_names"]] if "label_names" in npz else None
            codes = npz["label_codes"] if "label_codes" in npz else None
        return Parsed(X, names, codes)
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
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
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=path.name, suffix=".tmp",
                                         delete=False) as fh:
            tmp = Path(fh.name)
            np.savez(fh, **arrays)
        os.replace(tmp, path)
        return True
    except OSError:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        return False
