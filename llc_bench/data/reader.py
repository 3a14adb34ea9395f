"""Reading a source's files into parts (train / test / all), checked against the spec.

Per file: parse (or take the parsed-array cache), apply the source's ``relabel`` map, and
check for NaN/inf, the feature count and unknown labels. Per source: the svmlight index
base (``zero_based: auto`` decides it once for all files) and the matrix size. Per part:
row counts and label counts. Every problem is a one-line ``DatasetError`` naming the file.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from llc_bench.data.cache import cache_key, cache_path, load_cached, store
from llc_bench.data.fetch import Located, sha256_of
from llc_bench.data.formats import Parsed, data_line, parse_file
from llc_bench.data.spec import DatasetSpec, FileEntry, Source
from llc_bench.errors import DatasetError, LLCBenchWarning


@dataclass
class Part:
    """Rows of one part with raw (relabelled) label names."""

    X: np.ndarray | sp.csr_matrix
    label_names: list[str]
    label_codes: np.ndarray
    files: list[str] = field(default_factory=list)
    label_source: str | None = None
    feature_names: list[str] | None = None  # a CSV header's names of the feature columns

    @property
    def n_rows(self) -> int:
        return self.X.shape[0]

    def label_counts(self) -> dict[str, int]:
        counts = np.bincount(self.label_codes, minlength=len(self.label_names))
        return {n: int(c) for n, c in zip(self.label_names, counts, strict=True) if c}


def known_labels(spec: DatasetSpec) -> set[str] | None:
    """Every raw label the spec accepts, or None when the spec leaves labels open."""
    labels = spec.labels
    named = (labels.positive or ()) + (labels.negative or ()) if spec.task == "binary" \
        else labels.order or ()
    if spec.task == "auto" or not named or (spec.task == "binary" and not labels.negative):
        return None
    return set(named) | set(labels.drop)


def relabel(parsed: Parsed, mapping) -> Parsed:
    """Rename raw labels (e.g. LIBSVM's 1..10 to USPS digits 0..9), merging duplicates."""
    if parsed.label_names is None or not mapping:
        return parsed
    renamed = [mapping.get(n, n) for n in parsed.label_names]
    merged, remap = np.unique(np.asarray(renamed, dtype=str), return_inverse=True)
    return Parsed(parsed.X, [str(n) for n in merged], remap.astype(np.int32)[parsed.label_codes],
                  parsed.meta)


def _first_bad(X) -> tuple[int, int] | None:
    if sp.issparse(X):
        if X.data.dtype.kind != "f" or np.isfinite(X.data).all():
            return None
        position = int(np.argmax(~np.isfinite(X.data)))
        return int(np.searchsorted(X.indptr, position, side="right") - 1), int(X.indices[position])
    if X.dtype.kind != "f" or np.isfinite(X).all():
        return None
    row, col = np.argwhere(~np.isfinite(X))[0]
    return int(row), int(col)


#: Feature values beyond this magnitude are refused: their squares (in the scaling, the
#: distances of k-means and the codings, the kernels) overflow float64 or come close.
MAX_ABS_VALUE = 1e100


def _first_huge(X) -> tuple[int, int, float] | None:
    data = X.data if sp.issparse(X) else X
    if data.dtype.kind != "f" or data.size == 0 or np.abs(data).max() <= MAX_ABS_VALUE:
        return None
    if sp.issparse(X):
        position = int(np.argmax(np.abs(X.data) > MAX_ABS_VALUE))
        row = int(np.searchsorted(X.indptr, position, side="right") - 1)
        return row, int(X.indices[position]), float(X.data[position])
    row, col = np.argwhere(np.abs(X) > MAX_ABS_VALUE)[0]
    return int(row), int(col), float(X[row, col])


def _in_file(path: Path, meta: dict, row: int, column: int) -> str:
    """Where X[row, column] is in a csv or svmlight file: `` (line L, ...)``, else ``""``."""
    try:
        if meta.get("format") == "svmlight":
            line = data_line(path, row, meta.get("data_skip", 0), b"#")
            return f" (line {line}, feature index {column + meta['index_offset']})"
        if meta.get("format") == "csv":
            line = data_line(path, row, meta["data_skip"])
            columns, names = meta.get("columns"), meta.get("names")
            where = f", column {columns[column]}" if columns else ""
            where += f" {names[column]!r}" if columns and names else ""
            return f" (line {line}{where})"
    except (OSError, KeyError, IndexError, TypeError):
        pass
    return ""


def check_values(path: Path, X, meta: dict, where: str = "", missing_hint: str = "",
                 first_row: int = 0) -> None:
    """A DatasetError naming the first NaN/inf value of X, or the first beyond
    ±MAX_ABS_VALUE, and where it is in ``path`` (``meta``: the parser's; ``where``: a
    prefix such as ``lines 9-16: `` when the rows are a block of the file;
    ``missing_hint``: said after a NaN, a missing value; ``first_row``: the file's data rows
    before X's, which the row number counts)."""
    bad = _first_bad(X)
    if bad is not None:
        hint = missing_hint if np.isnan(X[bad[0], bad[1]]) else ""
        raise DatasetError(f"{path}: {where}NaN/inf value at row {first_row + bad[0] + 1}, "
                           f"column {bad[1] + 1}{_in_file(path, meta, *bad)}{hint}")
    huge = _first_huge(X)
    if huge is not None:
        row, column, value = huge
        raise DatasetError(f"{path}: {where}value {value:g} at row {first_row + row + 1}, "
                           f"column {column + 1}{_in_file(path, meta, row, column)} is beyond "
                           f"±{MAX_ABS_VALUE:g}: its square overflows in the scaling and "
                           "the models; rescale that column in the file (other units)")


def check_file(spec: DatasetSpec, path: Path, parsed: Parsed) -> None:
    """NaN/inf, feature count and unknown labels of one parsed (relabelled) file."""
    if parsed.X is not None:
        own_csv = spec.kind == "custom" and parsed.meta.get("format") == "csv"
        check_values(path, parsed.X, parsed.meta, missing_hint=(
            ": a missing value; set dataset.missing=drop_rows to leave such rows out" * own_csv))
        expected = spec.expected.features
        if parsed.meta.get("raw_indices"):
            pass  # the width depends on the index base, decided for all files together
        elif expected is not None and parsed.X.shape[1] != expected:
            by = "dataset.n_features" if spec.kind == "custom" else f"the spec of {spec.name!r}"
            raise DatasetError(f"{path}: {parsed.X.shape[1]} features, {by} expects {expected}")
    known = known_labels(spec)
    if parsed.label_names is not None and known is not None:
        unknown = [n for n in parsed.label_names if n not in known]
        if unknown:
            counts = np.bincount(parsed.label_codes, minlength=len(parsed.label_names))
            detail = ", ".join(f"{n!r} ({counts[parsed.label_names.index(n)]} rows)"
                               for n in unknown[:5])
            raise DatasetError(f"{path}: unknown label {detail}; the spec of {spec.name!r} "
                               f"expects {', '.join(map(repr, sorted(known)))}")


def read_file(spec: DatasetSpec, source: Source, entry: FileEntry, path: Path,
              home: Path, pending: list | None = None) -> tuple[Parsed, str]:
    """Parsed, relabelled and checked content of one file; second item: cache hit/miss.

    A fresh parse is cached at once, or, with ``pending``, queued there for
    :func:`store_pending` (so that a dataset rejected later leaves no cache file behind).
    """
    n_features = spec.expected.features
    key = cache_key(sha256_of(path), entry.format, entry.options, entry.kind, n_features)
    where = cache_path(home, entry.path, key)
    parsed, status = load_cached(where, path), "hit"
    if parsed is None or (parsed.X is None) != (entry.kind == "y"):
        parsed = parse_file(path, entry.format, entry.options, entry.kind, n_features)
        if pending is None:
            status = "miss" if store(where, parsed) else "miss (home not writable, not cached)"
        else:
            status = "miss"
            pending.append((where, Parsed(parsed.X, parsed.label_names, parsed.label_codes,
                                          dict(parsed.meta))))
    parsed = relabel(parsed, source.relabel)
    check_file(spec, path, parsed)
    return parsed, status


def _widen(X, width: int) -> sp.csr_matrix:
    """The same rows as a CSR matrix with ``width`` columns (extra columns are empty)."""
    X = sp.csr_matrix(X)
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], width))


def _stack(blocks: list):
    if len(blocks) == 1:
        return blocks[0]
    if any(sp.issparse(b) for b in blocks):
        width = max(b.shape[1] for b in blocks)
        return sp.vstack([_widen(b, width) for b in blocks], "csr")
    return np.concatenate(blocks)


def merge_labels(items: list[tuple[list[str], np.ndarray]]) -> tuple[list[str], np.ndarray]:
    """One name list and concatenated codes for several label blocks."""
    names = sorted({n for item_names, _ in items for n in item_names})
    index = {n: i for i, n in enumerate(names)}
    codes = [np.array([index[n] for n in item_names], np.int32)[item_codes]
             for item_names, item_codes in items if len(item_codes)]
    return names, np.concatenate(codes) if codes else np.zeros(0, np.int32)


def _check_counts(spec: DatasetSpec, name: str, where: str, rows: int,
                  counts: dict[str, int]) -> None:
    expected_rows = spec.expected.rows.get(name)
    if expected_rows is not None and rows != expected_rows:
        raise DatasetError(f"{where}: {rows} rows, the spec of {spec.name!r} expects "
                           f"{expected_rows} ({name})")
    expected_counts = spec.expected.label_counts.get(name)
    if expected_counts is not None and counts != expected_counts:
        raise DatasetError(f"{where}: label counts {counts}, the spec of {spec.name!r} "
                           f"expects {dict(expected_counts)} ({name})")


def assemble(spec: DatasetSpec, name: str, files: list[tuple[FileEntry, Path, Parsed]]) -> Part:
    """One part from its files: stacked rows (xy files) or features + labels (x/y files)."""
    paths = [str(path) for _, path, _ in files]
    xs = [p.X for e, _, p in files if e.kind in ("xy", "x")]
    ys = [(p.label_names, p.label_codes) for e, _, p in files if e.kind in ("xy", "y")]
    X = _stack(xs)
    label_names, label_codes = merge_labels(ys)
    if X.shape[0] != len(label_codes):
        raise DatasetError(f"{', '.join(paths)}: {X.shape[0]} feature rows but "
                           f"{len(label_codes)} labels ({name})")
    sources = [p.meta.get("label_source") for e, _, p in files if e.kind in ("xy", "y")]
    names = next((p.meta.get("names") for e, _, p in files
                  if e.kind in ("xy", "x") and p.meta.get("names")), None)
    part = Part(X, label_names, label_codes, paths, next((s for s in sources if s), None),
                names)
    _check_counts(spec, name, ", ".join(paths), part.n_rows, part.label_counts())
    return part


def _check_names(parts: dict[str, Part]) -> None:
    """Files whose headers name the feature columns must name the first such file's, in its
    order: columns are matched by position, so another order or other columns would pair a
    feature with another one's weights (as ``predict`` refuses them)."""
    named = [p for p in parts.values() if p.feature_names]
    for part in named[1:]:
        first = [str(n).strip() for n in named[0].feature_names]
        names = [str(n).strip() for n in part.feature_names]
        if names == first:
            continue
        where, other = ", ".join(part.files), ", ".join(named[0].files)
        missing = [n for n in first if n not in names]
        extra = [n for n in names if n not in first]
        if not missing and not extra:
            raise DatasetError(f"{where}: the feature columns are in another order than in "
                               f"{other} ({', '.join(first[:6])}{', ...' * (len(first) > 6)}): "
                               "write them in that order")
        said = "; ".join(text for text in (
            missing and f"it lacks {', '.join(map(repr, missing[:5]))}",
            extra and f"{', '.join(map(repr, extra[:5]))} {'is' if len(extra) == 1 else 'are'} "
                      f"not in {other}" + (" (the label? set dataset.label_column to its name)"
                                           if len(extra) == 1 and missing else ""))
            if text)
        raise DatasetError(f"{where}: its header names other feature columns than {other}'s: "
                           f"{said}")


def check_dropped(files: list[tuple[FileEntry, Path, Parsed]]) -> None:
    """A drop_columns name may be missing from some files of a dataset (an id column only
    the training file has), not from all."""
    absent = [set(p.meta.get("drop_columns_absent") or ()) for e, _, p in files
              if e.format == "csv" and e.kind in ("xy", "x")]
    nowhere = set.intersection(*absent) if absent else set()
    for column in (c for c in files[0][0].options.get("drop_columns") or () if c in nowhere):
        raise DatasetError(f"{', '.join(str(path) for _, path, _ in files)}: dataset.drop_"
                           f"columns entry {column!r} is in none of their headers")


def _align_widths(spec: DatasetSpec, parts: dict[str, Part]) -> None:
    """Pad sparse parts to a common width (svmlight without a stated feature count)."""
    widths = {name: p.X.shape[1] for name, p in parts.items()}
    width = max(widths.values())
    for name, part in parts.items():
        if widths[name] == width:
            continue
        if not sp.issparse(part.X):
            n = widths[name]
            raise DatasetError(f"{', '.join(part.files)}: {n} feature{'s' * (n != 1)} but the "
                               f"other files of {spec.name!r} have {width}")
        part.X = _widen(part.X, width)


def _shift_down(X: sp.csr_matrix) -> sp.csr_matrix:
    """One-based columns (column 0 unused) as zero-based: every index minus one."""
    return sp.csr_matrix((X.data, X.indices - 1, X.indptr), shape=(X.shape[0], X.shape[1] - 1))


def decide_index_base(spec: DatasetSpec, files: list[tuple[FileEntry, Path, Parsed]]) -> dict:
    """``zero_based: auto`` for all svmlight files of a source at once: zero-based if any of
    them uses feature index 0, else one-based. Shifts the files in place; returns the
    decision for the provenance (``{}`` when no file left the base open)."""
    raw = [(entry, path, parsed) for entry, path, parsed in files
           if parsed.meta.get("raw_indices")]
    if not raw:
        return {}
    with_zero = [(path, parsed.X.shape[1]) for _, path, parsed in raw
                 if parsed.X.nnz and (parsed.X.indices == 0).any()]
    if with_zero:
        first, width = with_zero[0][0], max(w for _, w in with_zero)
        for _, path, parsed in raw:
            if parsed.X.shape[1] > width and all(path != p for p, _ in with_zero):
                raise DatasetError(
                    f"{path} never uses feature index 0 but uses index {parsed.X.shape[1] - 1}, "
                    f"beyond every index of {first}, which uses index 0: the files seem to mix "
                    "zero- and one-based indices; convert one, or set dataset.zero_based=true "
                    "or false if they share a base")
        decision = {"zero_based": True, "decided": f"auto: {first} uses feature index 0"}
    else:
        decision = {"zero_based": False, "decided": "auto: no file uses feature index 0"}
    for _, _, parsed in raw:
        if not decision["zero_based"]:
            parsed.X = _shift_down(parsed.X) if parsed.X.shape[1] else parsed.X
        parsed.meta = {**parsed.meta, "raw_indices": False,
                       "index_offset": 0 if decision["zero_based"] else 1}
    expected = spec.expected.features
    for _, path, parsed in raw:
        width = parsed.X.shape[1]
        if expected is not None and width > expected:
            row = int(np.searchsorted(parsed.X.indptr, int(np.argmax(parsed.X.indices)),
                                      side="right") - 1)
            raise DatasetError(f"{path}: line {data_line(path, row, 0, b'#')} uses feature index "
                               f"{width - 1 + parsed.meta['index_offset']}, beyond the "
                               f"{expected} features of the spec (dataset.n_features)")
        if expected is not None and width < expected:
            parsed.X = _widen(parsed.X, expected)
    return decision


def _memory_bytes() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 16e9


def check_size(spec: DatasetSpec, files: list[tuple[FileEntry, Path, Parsed]]) -> None:
    """Refuse svmlight data whose largest feature index would need more memory than the
    machine has (a dense matrix, or the per-feature arrays of sparse scaling)."""
    sparse = [(path, parsed) for entry, path, parsed in files
              if entry.format == "svmlight" and parsed.X is not None and parsed.X.nnz]
    if not sparse:
        return
    rows = sum(parsed.X.shape[0] for _, _, parsed in files if parsed.X is not None)
    path, parsed = max(sparse, key=lambda item: item[1].X.shape[1])
    width = parsed.X.shape[1]
    need = 8.0 * width * (4 if spec.sparse else rows)
    memory = _memory_bytes()
    if need <= memory:
        return
    position = int(np.argmax(parsed.X.indices))
    row = int(np.searchsorted(parsed.X.indptr, position, side="right") - 1)
    index = int(parsed.X.indices[position]) + parsed.meta.get("index_offset", 0)
    what = "the per-feature arrays" if spec.sparse else f"a dense {rows} x {width} matrix"
    raise DatasetError(f"{path}: line {data_line(path, row, 0, b'#')} uses feature index "
                       f"{index}; {what} would need {need / 1e9:.0f} GB, more than this "
                       f"machine's {memory / 1e9:.0f} GB: is the index a typo?")


def store_pending(pending: list) -> None:
    """Write the parses that :func:`read_file` queued (best effort: a read-only home is fine)."""
    for where, parsed in pending:
        store(where, parsed)
    pending.clear()


def read_source(spec: DatasetSpec, source: Source, located: dict[FileEntry, Located],
                home: Path, pending: list | None = None) -> tuple[dict[str, Part], list[dict]]:
    """All parts of a resolved source and the provenance record of each file (``pending``:
    see :func:`read_file`)."""
    files, records = [], []
    vocabulary: dict = {}  # categorical=onehot: the training file's categories, for all files
    for name in sorted(source.parts, key=lambda part: part != "train"):
        for entry in (e for e in source.files if e.part == name):
            where = located[entry]
            read = entry
            if vocabulary and entry.options.get("categorical") == "onehot":
                read = replace(entry, options={**entry.options,
                                                           "one_hot_columns": vocabulary})
            parsed, status = read_file(spec, source, read, where.path, home, pending)
            files.append((entry, where.path, parsed))
            records.append({**where.describe(), "cache": status})
            if name == "train" and parsed.meta.get("categories"):
                vocabulary = dict(parsed.meta["categories"])
                records[-1]["categories"] = vocabulary
    decision = decide_index_base(spec, files)
    for (entry, path, parsed), record in zip(files, records, strict=True):
        if entry.format == "svmlight" and "zero_based" in entry.options:
            record["zero_based"] = decision or {
                "zero_based": parsed.meta.get("index_offset") == 0, "decided": "set"}
        if parsed.meta.get("header"):
            record["header"] = parsed.meta["header"]
        if parsed.meta.get("row_number_columns"):
            counted = parsed.meta["row_number_columns"]
            warnings.warn(f"{path}: feature column {', '.join(map(repr, counted))} holds the "
                          "row numbers (0, 1, 2, ... or 1, 2, 3, ...): an id, not a feature? "
                          f"dataset.drop_columns=[{','.join(counted)}] leaves it out",
                          LLCBenchWarning, stacklevel=1)
        if parsed.meta.get("dropped_rows_missing_values"):  # dataset.missing=drop_rows
            record["dropped_rows_missing_values"] = parsed.meta["dropped_rows_missing_values"]
    check_size(spec, files)
    check_dropped(files)
    parts = {name: assemble(spec, name, [f for f in files if f[0].part == name])
             for name in source.parts}
    _check_names(parts)
    _align_widths(spec, parts)
    if "all" not in parts:  # "all" = every row of the source, e.g. train + test files
        totals: dict[str, int] = {}
        for part in parts.values():
            for label, count in part.label_counts().items():
                totals[label] = totals.get(label, 0) + count
        _check_counts(spec, "all", ", ".join(f for p in parts.values() for f in p.files),
                      sum(p.n_rows for p in parts.values()), totals)
    return parts, records


def validate_download(spec: DatasetSpec, entry: FileEntry, path: Path, home: Path) -> None:
    """Parse check of a downloaded file whose sha256 is unknown (raises DatasetError)."""
    source = next(s for s in spec.sources if any(e is entry for e in s.files))
    parsed, _ = read_file(spec, source, entry, path, home)
    if entry.kind == "xy" and sum(e.part == entry.part for e in source.files) == 1:
        assemble(spec, entry.part, [(entry, path, parsed)])
