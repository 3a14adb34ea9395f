"""Parsers for the file formats the papers' datasets come in.

Each parser returns a :class:`Parsed` (features and/or labels) without any
dataset-specific logic: label mapping, checks against the spec and scaling happen
later. Labels are kept as canonical strings (``"1"``, ``"g"``, ``"A"``) encoded as
``label_names`` + integer ``label_codes`` so that big files stay cheap.

Formats: ``svmlight`` (LIBSVM), ``csv`` (UCI delimited text), ``idx`` (MNIST),
``mat`` (MATLAB, banana), ``ldkl`` (LDKL text: a ``n d`` line, then ``label x1 .. xd``).
Library errors are re-raised as one-line ``DatasetError`` naming the file (and the line,
where the problem is on one). ``Parsed.meta`` keeps what later messages need to point into
the file (label column, header, column numbers, svmlight index base).
"""

from __future__ import annotations

import io
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.io
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from llc_bench.data.compression import compression_of, open_binary, read_bytes
from llc_bench.data.spec import canonical_label
from llc_bench.errors import DatasetError, LLCBenchWarning

#: a CSV of at least this many columns is warned about (with the size it will take) before
#: it is parsed: pandas parses it into a dense table, and the models' cost grows with it
WIDE_CSV_COLUMNS = 10_000
#: a text column one-hot encoded into at least this many indicator columns is warned about
#: (with the size of its dense block) before the block is made
MANY_CATEGORIES = 1_000
#: the first line read to count a CSV's columns is cut here (a line of 10,000 numbers takes
#: some 100 kB)
FIRST_LINE_BYTES = 1 << 24

IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


@dataclass
class Parsed:
    """Rows of one file: features ``X`` (dense or CSR) and/or labels (names + codes)."""

    X: np.ndarray | sp.csr_matrix | None = None
    label_names: list[str] | None = None
    label_codes: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

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


class FileProblem(ValueError):
    """A problem in the file's content; ``parse_file`` prefixes only the path."""


SEPARATORS = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe", " ": "whitespace"}
SEP_ALIASES = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|",
               "whitespace": None, " ": None}
MAX_INDEX = 2**31 - 2  # scipy's int32 sparse indices


def data_line(path: Path, row: int, skip: int = 0, comment: bytes | None = None) -> int | None:
    """1-based file line of data row ``row`` (0-based): after ``skip`` raw lines, blank lines
    (and ``comment`` tails) are not rows. None if the file has fewer rows."""
    count = -1
    with open_binary(path) as fh:
        for number, raw in enumerate(fh, 1):
            if number <= skip:
                continue
            text = raw.split(comment, 1)[0] if comment else raw
            if text.strip():
                count += 1
                if count == row:
                    return number
    return None


def _shown(token: bytes) -> str:
    text = token.decode(errors="replace")
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _svmlight_line_problem(tokens: list[bytes], minimum: int) -> str | None:
    try:
        float(tokens[0])
    except ValueError:
        hint = (" (the line has commas/semicolons/tabs: is it a CSV file? then set "
                "dataset.format=csv)" if any(c in tokens[0] for c in b",;\t") else "")
        return f"label {_shown(tokens[0])} is not a number{hint}"
    previous = None
    for token in tokens[1:]:
        key, colon, value = token.partition(b":")
        if key == b"qid":
            continue
        try:
            index, _ = int(key), float(value)
        except ValueError:
            return f"{_shown(token)} is not 'index:value'"
        if not colon:
            return f"{_shown(token)} is not 'index:value'"
        if index > MAX_INDEX:
            return f"feature index {index} is too large (at most {MAX_INDEX})"
        if index < minimum:
            return (f"feature index {index} in a file read as one-based (set "
                    "dataset.zero_based=true if the indices start at 0)" if index == 0
                    else f"negative feature index {index}")
        if previous is not None and index <= previous:
            return f"feature indices must increase along a line ({previous} then {index})"
        previous = index
    return None


def svmlight_problem(path: Path, minimum: int = 0) -> str | None:
    """``line N: reason`` for the first malformed svmlight line, or None."""
    with open_binary(path) as fh:
        for number, raw in enumerate(fh, 1):
            tokens = raw.split(b"#", 1)[0].split()
            problem = tokens and _svmlight_line_problem(tokens, minimum)
            if problem:
                return f"line {number}: {problem}"
    return None


def parse_svmlight(path: Path, options: Mapping, n_features: int | None) -> Parsed:
    """LIBSVM/svmlight text (one-based indices unless ``zero_based``).

    ``zero_based: auto`` keeps the indices as written (column = index): the reader decides
    the base once for all files of the dataset and shifts the columns then.
    """
    zero_based = options.get("zero_based", False)
    raw = zero_based == "auto"
    try:
        with open_binary(path) as fh:
            X, y = load_svmlight_file(fh, n_features=None if raw else n_features,
                                      dtype=np.float64, zero_based=True if raw else zero_based)
    except (ValueError, OverflowError) as exc:
        problem = svmlight_problem(path, 1 if zero_based is False else 0)
        if problem is None:
            raise
        raise FileProblem(problem) from exc
    names, codes = labels_from_values(y)
    meta = {"format": "svmlight", "index_offset": 0 if raw or zero_based else 1,
            "raw_indices": raw, "label_source": "the first field of each svmlight line"}
    return Parsed(sp.csr_matrix(X), names, codes, meta)


def _column_index(index, columns, what: str) -> int:
    """Position of a column given by number (negative from the end) or header name."""
    n_columns = len(columns)
    if isinstance(index, str):
        names = [str(c) for c in columns]
        if index not in names:
            try:
                return _column_index(int(index), columns, what)
            except ValueError:
                pass
            if all(isinstance(c, int | np.integer) for c in columns):
                raise FileProblem(f"dataset.{what} {index!r}: the file has no header row with "
                                  "column names (set dataset.header=true if its first line "
                                  "has them)")
            raise FileProblem(f"dataset.{what} {index!r} is not a column name "
                              f"({', '.join(names)})")
        return names.index(index)
    if not -n_columns <= index < n_columns:
        raise FileProblem(f"dataset.{what} {index} is out of range for {n_columns} columns "
                          f"(0 to {n_columns - 1}, or -1 to -{n_columns} from the end)")
    return index % n_columns


def present(column, names: list[str]) -> bool:
    """Whether a drop_columns entry names one of a header's ``names`` (an index always
    counts as present: its range is checked where it is used)."""
    return (not isinstance(column, str) or column in names
            or re.fullmatch(r"-?\d+", column) is not None)


def _separator(options: Mapping):
    sep = options.get("sep", ",")
    return SEP_ALIASES.get(sep, sep) if isinstance(sep, str) or sep is None else sep


def _read_table(fh, options: Mapping, header: bool) -> pd.DataFrame:
    sep = _separator(options)
    whitespace = sep is None
    return pd.read_csv(fh, sep=r"\s+" if whitespace else sep, header=0 if header else None,
                       skiprows=options.get("skip_rows", 0) or None,
                       na_values=options.get("na_values") or None,
                       decimal=options.get("decimal", "."), encoding=_encoding(options),
                       skipinitialspace=not whitespace, engine="c", low_memory=False)


def _encoding(options: Mapping) -> str:
    return options.get("encoding") or "utf-8"


def undecodable_line(path: Path, encoding: str) -> tuple[int, bytes] | None:
    """(1-based line, the first bytes that are not ``encoding`` text) of ``path``, or None."""
    with open_binary(path) as fh:
        for number, raw in enumerate(fh, 1):
            try:
                raw.decode(encoding)
            except UnicodeDecodeError as exc:
                return number, raw[exc.start:exc.end]
    return None


_DECIMAL_COMMA = re.compile(r"[+-]?\d*,\d+(?:[eE][+-]?\d+)?")


def decimal_commas(values) -> bool:
    """Whether some of ``values`` (and every one of them that is not a plain number) are
    numbers written with a decimal comma: ``0,5``, ``-1,25e3``."""
    texts = [str(v).strip() for v in values if str(v).strip()]
    commas = [bool(_DECIMAL_COMMA.fullmatch(t)) for t in texts]
    return any(commas) and all(c or _is_number(t) for c, t in zip(commas, texts, strict=True))


def _is_number(value) -> bool:
    if isinstance(value, int | float | np.number):
        return True
    try:
        float(str(value))
        return True
    except ValueError:
        return False


def looks_like_header(frame: pd.DataFrame) -> bool:
    """Heuristic header detection: every field of the first row is a non-numeric name (the
    first may be empty, as pandas' ``to_csv`` writes above its index), and either some
    column is numeric below it or no name recurs in its own column."""
    if len(frame) < 1 or frame.shape[1] < 1:
        return False
    first = frame.iloc[0]
    unnamed_index = frame.shape[1] > 1 and pd.isna(first.iloc[0])
    names = first.iloc[1:] if unnamed_index else first
    if names.isna().any() or any(_is_number(v) for v in names):
        return False
    rest = frame.iloc[1:]
    numeric_below = any(pd.to_numeric(rest[c].dropna(), errors="coerce").notna().all()
                        and rest[c].notna().any() for c in frame.columns)
    if unnamed_index:
        return numeric_below
    recurring = any((rest[c].astype(str).str.strip() == str(v).strip()).any()
                    for c, v in zip(frame.columns, first, strict=True))
    return numeric_below or not recurring


def _row_numbers(series: pd.Series) -> bool:
    """Whether a column holds the row numbers 0, 1, 2, ... (or from 1): an index."""
    if len(series) < 2:
        return False
    head = pd.to_numeric(series.iloc[:2], errors="coerce")  # most columns stop here
    if head.isna().any() or head.iloc[0] not in (0, 1) or head.iloc[1] != head.iloc[0] + 1:
        return False
    values = pd.to_numeric(series, errors="coerce")
    if values.isna().any():
        return False
    steps = np.diff(values.to_numpy(dtype=np.float64))
    return bool(np.all(steps == 1.0) and values.iloc[0] in (0, 1))


def _size(n_bytes: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.3g} {unit}"
    return f"{n_bytes:.0f} bytes"


def warn_if_wide(path: Path, options: Mapping) -> None:
    """Warn, before it is parsed, about a delimited file of ``WIDE_CSV_COLUMNS`` columns or
    more: its columns, size and the memory of its dense float64 matrix."""
    skip = options.get("skip_rows", 0) or 0
    with open_binary(path) as fh:
        for number, raw in enumerate(iter(lambda: fh.readline(FIRST_LINE_BYTES), b""), 1):
            if number > skip and raw.strip():
                break
        else:
            return
    text = raw.decode(_encoding(options), errors="replace")
    sep = _separator(options)
    columns = len(text.split()) if sep is None else text.count(sep) + 1
    if columns < WIDE_CSV_COLUMNS:
        return
    size = path.stat().st_size
    compressed = compression_of(path) != "none"
    per_row = 8.0 * columns
    if compressed or not raw.endswith(b"\n"):
        rows, memory = "", f"{_size(1000 * per_row)} per 1,000 rows"
    else:
        n_rows = max(1, round(size / len(raw)))
        rows, memory = f", about {n_rows:,} rows", f"about {_size(n_rows * per_row)}"
    warnings.warn(f"{path}: {columns:,} columns in a {_size(size)}"
                  f"{' compressed' if compressed else ''} file{rows}: its dense float64 "
                  f"matrix will take {memory} (8 bytes a value; parsing takes more), and every "
                  "model's cost grows with the columns; a sparse file (dataset.format=svmlight) "
                  "holds only the non-zero values", LLCBenchWarning, stacklevel=2)


def _warn_many_categories(path, column, position: int, n_categories: int, n_rows: int):
    """Warn about a text column to be one-hot encoded into ``MANY_CATEGORIES`` or more
    indicator columns, before its dense block is made."""
    warnings.warn(f"{path or 'the data'}: feature column {str(column)!r} (column "
                  f"{position + 1} of the features) holds {n_categories:,} distinct values: "
                  f"one-hot encoded, {n_categories:,} columns, a dense {n_rows:,} x "
                  f"{n_categories:,} block of {_size(8.0 * n_rows * n_categories)}, and every "
                  "model's cost grows with the columns; an id or free text? "
                  f"dataset.drop_columns=[{column}] leaves it out", LLCBenchWarning,
                  stacklevel=3)


def _may_hold_row_numbers(frame: pd.DataFrame, columns: list[int]) -> list[int]:
    """Of ``columns``, those ``_row_numbers`` must look at: a number column is left out at
    once (all together, not one by one: a file of 10,000 columns) unless its first two
    values are 0, 1 or 1, 2."""
    if len(frame) < 2:
        return []
    dtypes = frame.dtypes.to_numpy()
    number = [c for c in columns if dtypes[c].kind in "iuf"]
    head = frame.iloc[:2, number].to_numpy(dtype=np.float64)
    starts = np.isin(head[0], (0.0, 1.0)) & (head[1] == head[0] + 1)
    left_out = set(number) - set(np.asarray(number, dtype=np.int64)[starts].tolist())
    return [c for c in columns if c not in left_out]


def _one_hot(frame: pd.DataFrame, categories, unknown: str = "error") -> np.ndarray:
    """Indicator columns, one block per column, in the order of ``categories``; a value not
    among them is an error, or (``unknown="zeros"``: categories learned from other rows)
    a row of zeros."""
    wanted = [canonical_label(c) for c in categories]
    blocks = []
    for position, column in enumerate(frame.columns):
        codes, uniques = pd.factorize(frame[column], sort=False)
        lookup = np.array([wanted.index(canonical_label(u)) if canonical_label(u) in wanted
                           else -1 for u in uniques] + [-1], dtype=np.int64)
        index = lookup[codes]
        if unknown == "zeros":
            index = np.where((index < 0) & (codes >= 0), len(wanted), index)  # a spare column
        if (index < 0).any():
            row = int(np.argmax(index < 0))
            raise ValueError(f"value {frame[column].iloc[row]!r} in row {row + 1}, feature "
                             f"column {position + 1} is not one of the categories {wanted}")
        block = np.zeros((len(frame), len(wanted) + 1), dtype=np.float64)
        block[np.arange(len(frame)), index] = 1.0
        blocks.append(block[:, :-1])  # the spare column (an unknown value) is dropped
    return np.hstack(blocks) if blocks else np.zeros((len(frame), 0))


def input_columns(names, vocabulary, n_features: int, options: Mapping) -> list[str] | None:
    """The columns of X, in order, of a delimited file read with ``options``: its feature
    columns' names (``column N`` without a header), a one-hot column (``vocabulary``:
    categories by name, or by position as text) as one ``name=category`` indicator per
    category. None when they are unknown (no header and no one-hot column)."""
    vocabulary = vocabulary or {}
    if names is None:
        if not vocabulary:
            return None
        wide = sum(len(v) - 1 for v in vocabulary.values())  # the extra indicator columns
        label = options.get("label_column", -1)
        dropped = [c for c in options.get("drop_columns") or () if isinstance(c, int)]
        total = n_features - wide + (label is not None) + len(dropped)
        skipped = {c % total for c in [*dropped, *([label] if isinstance(label, int) else [])]}
        positions = [c for c in range(total) if c not in skipped]
        keys, names = [str(c) for c in positions], [f"column {c + 1}" for c in positions]
    else:
        keys = names = [str(n) for n in names]
    columns = [c for key, name in zip(keys, names, strict=True)
               for c in ([f"{name}={v}" for v in vocabulary[key]] if key in vocabulary
                         else [name])]
    return columns if len(columns) == n_features else None


class _BadCell(ValueError):
    def __init__(self, row: int, position: int, value):
        super().__init__(f"non-numeric value {value!r} in row {row + 1}, feature column "
                         f"{position + 1}")
        self.row, self.position, self.value = row, position, value


def _numeric(frame: pd.DataFrame, categorical: str, vocabulary: Mapping | None = None,
             path: Path | None = None) -> tuple[np.ndarray, bool, dict]:
    """Numeric feature matrix; string columns are one-hot encoded (``categorical: onehot``)
    or rejected. Second item: whether X's columns are the frame's columns one to one; third:
    the categories of each one-hot column, by column name (or position as text).
    ``vocabulary``: those of the training file, which a column named there keeps (a value
    it lacks is a row of zeros), so that every file of a dataset has the same columns."""
    blocks, expanded, learned = [], False, {}
    for position, column in enumerate(frame.columns):
        series = frame[column]
        if categorical == "onehot" and str(column) in (vocabulary or {}):
            categories = vocabulary[str(column)]
            blocks.append(_one_hot(series.to_frame(), categories, unknown="zeros"))
            expanded, learned[str(column)] = True, list(categories)
            continue
        if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
            blocks.append(series.to_numpy(dtype=np.float64)[:, None])
            continue
        numbers = pd.to_numeric(series, errors="coerce")
        bad = numbers.isna() & series.notna()
        if not bad.any():
            blocks.append(numbers.to_numpy(dtype=np.float64)[:, None])
        elif categorical == "onehot":
            categories = sorted({canonical_label(v) for v in series.dropna().unique()})
            if len(categories) >= MANY_CATEGORIES:
                _warn_many_categories(path, column, position, len(categories), len(series))
            blocks.append(_one_hot(series.to_frame(), categories))
            expanded, learned[str(column)] = True, categories
        else:
            row = int(np.argmax(bad.to_numpy()))
            raise _BadCell(row, position, series.iloc[row])
    X = np.hstack(blocks) if blocks else np.zeros((len(frame), 0))
    return X, not expanded, learned


def _first_data_text(path: Path, skip: int) -> str | None:
    line = data_line(path, 0, skip)
    if line is None:
        return None
    with open_binary(path) as fh:
        return next(t for i, t in enumerate(fh, 1) if i == line).decode(errors="replace").strip()


def _other_separator(path: Path, skip: int, sep) -> str | None:
    """The option value of a separator the first data line seems to use instead of ``sep``
    (a comma between digits counts as a decimal comma when another separator is there)."""
    text = _first_data_text(path, skip)
    if text is None:
        return None
    counts = {name: text.count(char) for char, name in SEPARATORS.items()
              if SEP_ALIASES.get(name, name) != sep and char != sep}
    if counts.get("comma") and any(counts[n] for n in counts if n != "comma") \
            and re.search(r"\d,\d", text):
        counts["comma"] = 0  # 0,5;1,25: the semicolons separate
    best = max(counts, key=counts.get, default=None)
    return best if best is not None and counts[best] else None


def _separator_hint(path: Path, skip: int, sep, other: str) -> str:
    """``; the lines look X-separated: set dataset.sep=X`` (and ``dataset.decimal=comma``
    when the fields it separates are decimal-comma numbers)."""
    text = _first_data_text(path, skip) or ""
    fields = text.split() if other == "whitespace" else text.split(SEP_ALIASES[other] or " ")
    decimal = " dataset.decimal=comma" if other != "comma" and decimal_commas(fields) else ""
    return f"; the lines look {other}-separated: set dataset.sep={other}{decimal}"


def _describe_column(index: int, columns, header: bool) -> str:
    name = f" {str(columns[index])!r}" if header else ""
    return f"column {index + 1}{name}"


def _bad_cell_message(exc: _BadCell, path: Path, frame, feature_columns, skip: int,
                      header: bool, sep, label) -> str:
    column = feature_columns[exc.position]
    line = data_line(path, int(frame.index[exc.row]), skip)  # the file's row (rows dropped)
    where = f"line {line}, {_describe_column(column, frame.columns, header)}"
    value = str(exc.value)
    if sep != "," and decimal_commas([value]):
        return (f"{where}: non-numeric value {value!r}: the numbers have decimal commas: set "
                "dataset.decimal=comma")
    if exc.row == 0 and not header and looks_like_header(frame.iloc[:, feature_columns]):
        return (f"{where}: non-numeric value {value!r}: the first row looks like a header: "
                "set dataset.header=true")
    other = _other_separator(path, skip, sep) if any(c in value for c in ",;\t| ") else None
    cells = frame.iloc[:, column].dropna()
    numbers = pd.to_numeric(cells, errors="coerce").notna().to_numpy()
    name = str(frame.columns[column]) if header else column
    if other:
        hint = _separator_hint(path, skip, sep, other)
    elif exc.row == 0 and not header and numbers[1:].all() and len(numbers) > 1:
        hint = "; the rest of the column is numbers: if the first line names the columns, set " \
               "dataset.header=true"
    elif numbers.mean() >= 0.5:  # a mostly numeric column: the odd value marks a missing one
        marks = sorted({str(v) for v in cells[~numbers]}, key=str)[:5]
        hint = (f"; the rest of the column is numbers: if {', '.join(map(repr, marks))} "
                f"mark{'s' * (len(marks) == 1)} a missing value, set "
                f"dataset.na_values=[{','.join(map(repr, marks))}] and "
                "dataset.missing=drop_rows (or fill the values in)")
    elif label is not None:
        hint = (f"; features must be numbers: if this column holds the labels, set "
                f"dataset.label_column={column} (counted from 0) or its header name; the "
                f"label is now {_describe_column(label, frame.columns, header)}; to leave "
                f"the column out, set dataset.drop_columns=[{name}]; to encode its values, "
                "dataset.categorical=onehot")
    else:
        hint = ""
    return f"{where}: non-numeric value {value!r} in a feature column{hint}"


def _numbered(columns: list[int], names: list[str] | None = None) -> str:
    """``columns 4 and 5`` / ``column 2 'b'`` (1-based numbers)."""
    shown = [f"{c + 1}" + (f" {names[c]!r}" if names and names[c] else "") for c in columns]
    text = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    return f"column{'s' if len(shown) > 1 else ''} {text}"


def _header_names(path: Path, line: int, sep, options: Mapping) -> list[str]:
    """The names of the header line ``line`` (1-based) as written, unquoted, without a
    byte-order mark (pandas renames a repeated name)."""
    import csv

    with open_binary(path) as fh:
        raw = next(t for i, t in enumerate(fh, 1) if i == line)
    text = raw.decode(_encoding(options), errors="replace").rstrip("\r\n")
    text = text.removeprefix("\ufeff") if line == 1 else text  # a byte-order mark, as pandas
    fields = (text.split() if sep is None else text.split(sep) if len(sep) != 1
              else next(csv.reader([text], delimiter=sep)))
    return [f.strip() for f in fields]


def _check_columns(path: Path, frame: pd.DataFrame, dropped: set, header: bool, data_skip: int,
                   options: Mapping) -> None:
    """Columns empty on every line (``a,b,,``: trailing separators) and a header naming two
    columns alike are errors that name the columns."""
    if frame.empty:
        return  # no data rows: parse_file says so
    names = None
    if header:  # data_skip: the header's line
        names = _header_names(path, data_skip, _separator(options), options)
        names = names if len(names) == frame.shape[1] else None
    none = frame.isna().all(axis=0).to_numpy()
    empty = [c for c in range(frame.shape[1]) if c not in dropped and none[c]]
    named = [names[c] for c in empty if names and names[c]]
    if named:  # a named column without a value (all empty, NA or a dataset.na_values mark)
        raise FileProblem(f"{_numbered(empty, names)} of {frame.shape[1]} "
                          f"{'has' if len(empty) == 1 else 'have'} no value on any line "
                          "(every field empty or a missing-value mark): leave "
                          f"{'it' if len(empty) == 1 else 'them'} out with "
                          f"dataset.drop_columns=[{','.join(named)}]")
    if empty:
        raise FileProblem(f"{_numbered(empty, names)} of {frame.shape[1]} "
                          f"{'is' if len(empty) == 1 else 'are'} empty on every line (trailing "
                          "separators, as in 'a,b,,'?): remove "
                          f"{'it' if len(empty) == 1 else 'them'} from the file")
    seen: dict[str, int] = {}
    for c, name in enumerate(names or ()):
        if name and name in seen:
            raise FileProblem(f"line {data_skip}: the header names two columns {name!r} "
                              f"({_numbered([seen[name], c])}): rename one")
        seen.setdefault(name, c)


def _no_feature_left(frame: pd.DataFrame, label, header: bool, options: Mapping) -> str:
    """``dataset.drop_columns`` leaving no feature column: which columns the file has."""
    given = ",".join(map(str, options.get("drop_columns") or ()))
    held = "" if label is None else (f" ({_describe_column(label, frame.columns, header)} "
                                     "the label)")
    return (f"dataset.drop_columns=[{given}] leaves no feature column of the file's "
            f"{frame.shape[1]}{held}: drop fewer columns")


def _every_row_missing(features: pd.DataFrame) -> str:
    """``dataset.missing=drop_rows`` dropping every row: the columns missing most often."""
    counts = features.isna().sum().sort_values(ascending=False, kind="stable")
    counts = counts[counts > 0]
    shown = ", ".join(f"{str(name)!r} on {count} rows" for name, count in counts.iloc[:5].items())
    return (f"every one of its {len(features)} rows misses a feature value, so "
            f"dataset.missing=drop_rows leaves none (missing: {shown}"
            f"{', ...' if len(counts) > 5 else ''}): leave the columns missing most often out "
            f"with dataset.drop_columns=[{','.join(map(str, counts.index[:2]))}], or fill in "
            "the values")


def parse_delimited(path: Path, options: Mapping, kind: str = "xy", fh=None,
                    lines_before: int = 0) -> Parsed:
    """UCI-style delimited text: label in any column, optional header, string labels.

    ``header``: true, false or ``auto`` (a first row of non-numeric names is a header).
    ``lines_before``: lines of ``fh``'s file already consumed (for line numbers).
    """
    if fh is None:
        warn_if_wide(path, options)
        with open_binary(path) as handle:
            return parse_delimited(path, options, kind, handle)
    header = options.get("header", False)
    meta: dict = {"format": "csv"}
    if header == "auto":
        content = io.BytesIO(fh.read())
        if not content.getvalue().strip():
            raise FileProblem("the file is empty")
        frame = _read_table(content, options, False)
        header = looks_like_header(frame)
        meta["header"] = "detected" if header else "none detected"
        if header:
            content.seek(0)
            frame = _read_table(content, options, True)
    else:
        header = bool(header)
        frame = _read_table(fh, options, header)
    skip = lines_before + (options.get("skip_rows", 0) or 0)
    data_skip = data_line(path, 0, skip) if header else skip
    n_columns = frame.shape[1]
    if kind == "y":
        if n_columns != 1:
            raise ValueError(f"a labels file must have one column, found {n_columns}")
        return Parsed(None, *labels_from_values(frame.iloc[:, 0].to_numpy()))
    sep = _separator(options)
    if kind == "xy" and n_columns == 1:
        other = _other_separator(path, skip, sep)
        first = str(frame.iloc[0, 0]) if len(frame) else ""
        if re.fullmatch(r"\S+(\s+\d+:\S+)+", first.strip()):
            hint = ("; the lines look like svmlight ('label index:value ...'): set "
                    "dataset.format=svmlight")
        elif other:
            hint = _separator_hint(path, skip, sep, other)
        else:
            hint = "; check dataset.sep"
        raise FileProblem(f"1 column per line with sep {options.get('sep', ',')!r}, so no "
                          f"feature column{hint}")
    names = [str(c) for c in frame.columns] if header else None
    absent = [c for c in options.get("drop_columns") or () if names and not present(c, names)]
    dropped = {_column_index(c, frame.columns, "drop_columns entry")
               for c in options.get("drop_columns") or () if c not in absent}
    if absent:  # a name another file of the dataset may have (reader.check_dropped)
        meta["drop_columns_absent"] = absent
    _check_columns(path, frame, dropped, header, data_skip, options)
    label = options.get("label_column", -1) if kind == "xy" else None
    label = None if label is None else _column_index(label, frame.columns, "label_column")
    feature_columns = [c for c in range(n_columns) if c != label and c not in dropped]
    if not feature_columns and dropped:
        raise FileProblem(_no_feature_left(frame, label, header, options))
    if header and feature_columns and str(frame.columns[feature_columns[0]]).startswith(
            "Unnamed: ") and _row_numbers(frame.iloc[:, feature_columns[0]]):
        column = feature_columns[0]
        raise FileProblem(f"column {column + 1} has no name and holds the row numbers "
                          f"{', '.join(map(str, frame.iloc[:3, column]))}, ...: an index "
                          "(pandas' to_csv or R's write.csv writes one), not a feature: set "
                          f"dataset.drop_columns=[{column}]")
    features = frame.iloc[:, feature_columns]
    counted = [str(frame.columns[c]) if header else str(c)
               for c in _may_hold_row_numbers(frame, feature_columns)
               if _row_numbers(frame.iloc[:, c])]
    if counted:  # an id column taken for a feature (reader.read_source warns)
        meta["row_number_columns"] = counted
    if options.get("missing") == "drop_rows":   # rows with a missing feature (na_values)
        keep = features.notna().all(axis=1).to_numpy()
        if len(keep) and not keep.any():
            raise FileProblem(_every_row_missing(features))
        frame, features = frame[keep], features[keep]
        meta["dropped_rows_missing_values"] = int((~keep).sum())
    categories = options.get("one_hot_categories")
    try:
        X, one_to_one, learned = ((_one_hot(features, categories), False, {}) if categories
                                  else _numeric(features, options.get("categorical", "error"),
                                                options.get("one_hot_columns"), path))
    except _BadCell as exc:
        raise FileProblem(_bad_cell_message(exc, path, frame, feature_columns, data_skip,
                                            header, sep, label)) from exc
    if learned:
        meta["categories"] = learned
    meta.update(data_skip=data_skip,
                columns=[c + 1 for c in feature_columns] if one_to_one else None,
                names=[str(frame.columns[c]) for c in feature_columns] if header else None)
    if label is None:
        return Parsed(np.ascontiguousarray(X), meta=meta)
    values = frame.iloc[:, label]
    if values.isna().any():
        row = int(values.index[np.argmax(values.isna().to_numpy())])
        raise FileProblem(f"line {data_line(path, row, data_skip)}: missing label "
                          f"({_describe_column(label, frame.columns, header)})")
    given = options.get("label_column", -1)
    meta["label_source"] = (f"dataset.label_column={given!r} "
                            f"({_describe_column(label, frame.columns, header)} of {n_columns})")
    return Parsed(np.ascontiguousarray(X), *labels_from_values(values.to_numpy()), meta)


def parse_ldkl(path: Path, options: Mapping) -> Parsed:
    """LDKL text: first line ``n d``, then ``label x1 ... xd`` per row."""
    with open_binary(path) as fh:
        header = fh.readline().split()
        if len(header) != 2 or not all(h.isdigit() for h in header):
            raise ValueError(f"first line must be 'n d', got {b' '.join(header)!r}")
        n_rows, n_features = int(header[0]), int(header[1])
        parsed = parse_delimited(path, {"sep": "whitespace", "label_column": 0}, "xy", fh, 1)
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


def not_text_where(path: Path, options: Mapping, exc: UnicodeDecodeError) -> tuple[str, str]:
    """(encoding, ``line N: bytes b'..'``): where the file stops being text in its
    encoding."""
    encoding = _encoding(options)
    found = undecodable_line(path, encoding)
    where = (f"line {found[0]}: bytes {found[1]!r}" if found else
             f"bytes {exc.object[exc.start:exc.end]!r}")
    return encoding, where


def _not_text(path: Path, options: Mapping, exc: UnicodeDecodeError) -> str:
    """Where the file stops being text in its encoding, and the option that reads it."""
    encoding, where = not_text_where(path, options, exc)
    return (f"{where} are not {encoding} text: set dataset.encoding=latin-1 (or the "
            "encoding the file was written in, e.g. cp1252)")


def parse_file(path: Path, fmt: str, options: Mapping, kind: str = "xy",
               n_features: int | None = None, fh=None, lines_before: int = 0) -> Parsed:
    """Parse one file; any library error becomes a one-line ``DatasetError`` naming it.
    ``fh``, ``lines_before``: a delimited file's lines read from ``fh`` (see
    ``parse_delimited``)."""
    try:
        if fmt == "svmlight":
            if kind != "xy":
                raise ValueError("svmlight files hold features and labels (role train/test/all)")
            parsed = parse_svmlight(path, options, options.get("n_features", n_features))
        elif fmt == "csv":
            parsed = parse_delimited(path, options, kind, fh, lines_before)
        elif fmt == "idx":
            parsed = parse_idx(path, kind)
        elif fmt == "mat":
            parsed = parse_mat(path, options)
        elif fmt == "ldkl":
            parsed = parse_ldkl(path, options)
        else:
            raise ValueError(f"unknown format {fmt!r}")
        if parsed.n_rows == 0:
            raise FileProblem("no data rows (is the file empty?)")
        return parsed
    except pd.errors.EmptyDataError as exc:
        raise DatasetError(f"{path}: the file is empty") from exc
    except (DatasetError, MemoryError, KeyboardInterrupt):
        raise
    except FileProblem as exc:
        raise DatasetError(f"{path}: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}: {_not_text(path, options, exc)}") from exc
    except pd.errors.ParserError as exc:  # pandas counts the lines of what it was given
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
        if found is None:
            detail = (str(exc).strip().splitlines() or ["no detail"])[0][:300]
            raise DatasetError(f"{path}: cannot parse as {fmt} (ParserError: {detail})") \
                from exc
        expected, line, saw = map(int, found.groups())
        raise DatasetError(f"{path}: line {line + lines_before}: {saw} fields where the lines "
                           f"above have {expected}") from exc
    except Exception as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise DatasetError(f"{path}: cannot parse as {fmt} "
                           f"({type(exc).__name__}: {detail})") from exc
