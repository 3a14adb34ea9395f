"""``llc-bench predict MODEL_FILE DATA_FILE``: apply a kept model to new rows.

The rows are read with the parser and options the model was trained with, turned into its
features by the saved preprocessing (value scale, the training split's scaler), and scored;
one output row per input row: the predicted label, the decision values and, for a
calibrated model, the probabilities and the class of the highest one (each label column
named by its rule).  When the file has a label column, the accuracy is
printed too.

The file is read in blocks of whole lines (:data:`BLOCK_BYTES` of text, as the row-store
conversion reads it), each parsed by the dataset readers' own parsers (scikit-learn's
svmlight reader, ``parse_delimited`` for CSV with the training file's options) and
scored and written before the next is read, so memory stays bounded by one block however
large the file.  ``--out`` appears whole or not at all (a temporary file replaced at the
end); a bad row in a late block leaves no partial output.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError, DatasetError
from llc_bench.serving.model_files import load_model

#: Bytes of text per parsed block (decompressed): 32 MiB, the row-store conversion's.
BLOCK_BYTES = 32 << 20


def _skipped(options: dict) -> int:
    return int(options.get("skip_rows", 0) or 0)


def _columns(path: Path, options: dict) -> list[str]:
    """The fields of the first line (after ``skip_rows``) of a delimited file, read as the
    training file's header was (quotes, a byte-order mark)."""
    from llc_bench.data.formats import _header_names, _separator

    sep = _separator(options)
    try:
        return _header_names(path, _skipped(options) + 1, None if sep == r"\s+" else sep,
                             options)
    except StopIteration:  # an empty file
        return []


def _has_header(pre: dict) -> bool:
    """Whether files of this model start with a header line (the training file had one)."""
    header = pre["options"].get("header", False)
    return bool(pre.get("feature_names")) if header == "auto" else bool(header)


def _kind(path: Path, pre: dict) -> str:
    """"xy" when the file has the label column, "x" when it has only the features."""
    if pre["format"] != "csv":
        return "xy"
    fields = _columns(path, pre["options"])
    if not fields:
        raise DatasetError(f"{path}: the file is empty")
    n, names = pre["n_features"], pre.get("feature_names")
    if names and pre["options"].get("header") is not False:
        dropped = {fields[i] for i in _dropped(path, fields, pre)}
        missing = [c for c in names if c not in fields]
        if len(missing) == len(names) and _values(fields) and not _values(names):
            raise DatasetError(f"{path}: the header line is missing: the first line holds "
                               f"values ({_joined(fields)}), and the model reads a file's "
                               "columns by their names, as its training file had them: add "
                               f"the header line ({_joined(names)}, and the label column's "
                               "name when the file has labels)")
        extra = [c for c in fields if c not in names and c not in dropped]
        if missing:
            raise DatasetError(f"{path}: missing the column(s) {', '.join(missing[:5])} the "
                               f"model was trained on{_separator_note(path, pre)}")
        if len(extra) > 1:  # one is the label column
            raise DatasetError(f"{path}: {len(extra)} columns the model was not trained on "
                               f"({', '.join(extra[:5])}); at most one, the label, may be "
                               "beside the training file's features")
        if [c for c in fields if c in names] != names:
            raise DatasetError(f"{path}: the feature columns are in another order than the "
                               f"training file's ({', '.join(names[:5])}, ...)")
        return "xy" if extra else "x"
    if len(fields) not in (n, n + 1):
        raise DatasetError(f"{path}: {len(fields)} columns, the model has {n} features "
                           f"(expected {n}, or {n + 1} with the label column)"
                           f"{_separator_note(path, pre)}")
    return "xy" if len(fields) == n + 1 else "x"


def _values(fields: list) -> bool:
    """Whether most of a line's fields are numbers (data, not names)."""
    from llc_bench.data.formats import _is_number

    return sum(map(_is_number, fields)) * 2 >= len(fields) > 0


def _joined(fields: list, limit: int = 5) -> str:
    """The first ``limit`` fields as a line shows them."""
    return ",".join(fields[:limit]) + (f",... ({len(fields)} fields)" if len(fields) > limit
                                       else "")


def _dropped(path: Path, columns: list, pre: dict) -> list[int]:
    """The positions of ``dataset.drop_columns`` among a file's ``columns`` (header names,
    or positions): a name the file lacks is skipped, and so is an index that falls on one of
    the model's features (the training file had a column there that this one lacks)."""
    from llc_bench.data.formats import _column_index, present

    features = set(pre.get("feature_names") or ())
    names = [str(c) for c in columns]
    try:
        positions = [_column_index(c, columns, "drop_columns entry")
                     for c in pre["options"].get("drop_columns") or () if present(c, names)]
    except ValueError as exc:
        raise DatasetError(f"{path}: {exc}") from None
    return [i for i in positions if names[i] not in features]


def _separator_note(path: Path, pre: dict) -> str:
    """``; its lines look X-separated, ...`` when the file seems to use another separator
    than the model's training file (which fixes it: predict has no dataset options)."""
    from llc_bench.data.formats import SEPARATORS, _other_separator, _separator

    sep = _separator(pre["options"])
    other = _other_separator(path, _skipped(pre["options"]), sep)
    if other is None:
        return ""
    return (f"; its lines look {other}-separated, the model reads its files "
            f"{SEPARATORS.get(sep, repr(sep))}-separated as the training file was: "
            "write the file with that separator")


def _not_text(path: Path, options: dict, exc: UnicodeDecodeError) -> DatasetError:
    """Bytes that are not text in the training file's encoding, which the model fixes."""
    from llc_bench.data.formats import not_text_where

    encoding, where = not_text_where(path, options, exc)
    return DatasetError(f"{path}: {where} are not {encoding} text, the encoding the model "
                        f"reads (its training file's): write the file in {encoding} (e.g. "
                        f"iconv -f latin-1 -t {encoding})")


def _block_options(path: Path, pre: dict, kind: str) -> dict:
    """The CSV options for a block of data lines: no header, no skipped lines, the label
    and dropped columns by position (a header names them only in the file's first lines)."""
    from llc_bench.data.formats import _column_index

    options = dict(pre["options"])
    columns = _columns(path, options) if _has_header(pre) else None
    if columns is None:  # positions count the fields of the first data line
        columns = list(range(len(_columns(path, options))))
    try:
        if kind == "x":
            options.pop("label_column", None)
        else:
            options["label_column"] = _column_index(options.get("label_column", -1), columns,
                                                    "label_column")
    except ValueError as exc:
        raise DatasetError(f"{path}: {exc}") from None
    options["drop_columns"] = _dropped(path, columns, pre)
    vocabulary = options.get("one_hot_columns")
    if vocabulary and _has_header(pre):  # categorical=onehot: by the position of each name
        names = [str(c) for c in columns]
        options["one_hot_columns"] = {str(names.index(k)): v for k, v in vocabulary.items()
                                      if k in names}
    options.update(header=False, skip_rows=0)
    options.pop("missing", None)  # one output row per input row: a missing value is an error
    return options


def _line_blocks(path: Path, skip_lines: int, block_bytes: int):
    """``(lines before the block, block)``: the file after ``skip_lines`` lines, in blocks
    of whole lines of about ``block_bytes`` bytes (a longer line is one block)."""
    from llc_bench.data.compression import open_binary

    with open_binary(path) as fh:
        for _ in range(skip_lines):
            fh.readline()
        line, tail = skip_lines, b""
        while True:
            data = fh.read(block_bytes)
            block = tail + data
            cut = block.rfind(b"\n") + 1 if data else len(block)
            block, tail = block[:cut], block[cut:]
            if block.strip():
                yield line, block
            line += block.count(b"\n")
            if not data:
                return


def _svmlight_problem(block: bytes, line: int, n: int, zero_based: bool) -> str | None:
    """``line N: reason`` for the first line of a block (after ``line`` lines of the file)
    that the model's svmlight reader refuses, or None."""
    from llc_bench.data.formats import _shown, _svmlight_line_problem

    reads = ("the model reads svmlight files ('label index:value ...'), the format of its "
             "training file")
    for number, raw in enumerate(block.splitlines(), line + 1):
        tokens = raw.split(b"#", 1)[0].split()
        if not tokens:
            continue
        if any(c in tokens[0] for c in b",;\t"):
            return (f"line {number} looks like CSV ({_shown(tokens[0])}), and {reads}: write "
                    "the rows in that format (e.g. sklearn.datasets.dump_svmlight_file)")
        problem = _svmlight_line_problem(tokens, 0)
        if problem:
            return f"line {number}: {problem}; {reads}"
        low = 0 if zero_based else 1
        for token in tokens[1:]:
            key = token.partition(b":")[0]
            if key != b"qid" and not low <= int(key) <= n - 1 + low:
                return (f"line {number}: feature index {int(key)}, beyond the model's {n} "
                        f"features (indices {low} to {n - 1 + low}, as in its training file)")
    return None


def _parse_block(path: Path, pre: dict, kind: str, options: dict, line: int, block: bytes,
                 rows_before: int = 0):
    """(X, label values or None) of one block (after ``line`` lines of the file and
    ``rows_before`` data rows), as the dataset readers parse the file."""
    from llc_bench.data.formats import labels_from_values, parse_file
    from llc_bench.data.reader import check_values

    n = pre["n_features"]
    if pre["format"] == "svmlight":
        from sklearn.datasets import load_svmlight_file

        n_lines = block.count(b"\n") + (not block.endswith(b"\n"))
        try:
            X, y = load_svmlight_file(io.BytesIO(block), n_features=n, dtype=np.float64,
                                      zero_based=options.get("zero_based", False) is True)
        except (ValueError, OverflowError) as exc:
            problem = _svmlight_problem(block, line, n, options.get("zero_based") is True)
            if problem:
                raise DatasetError(f"{path}: {problem}") from None
            detail = str(exc).splitlines()[0]
            if "n_features" in detail:
                detail = f"a feature index beyond the model's {n} features ({detail})"
            raise DatasetError(f"{path}: lines {line + 1}-{line + n_lines}: {detail}") from None
        check_values(path, X, {"format": "svmlight", "data_skip": line, "index_offset":
                               0 if options.get("zero_based") is True else 1},
                     first_row=rows_before)
        names, codes = labels_from_values(y)
        return X, np.asarray(names, dtype=object)[codes]
    try:
        parsed = parse_file(path, "csv", options, kind=kind, fh=io.BytesIO(block),
                            lines_before=line)
    except DatasetError as exc:
        if isinstance(exc.__cause__, UnicodeDecodeError):
            raise _not_text(path, options, exc.__cause__) from None
        raise
    return _checked(path, parsed, n, rows_before)


def _parse_whole(path: Path, pre: dict):
    """(X, label values or None) of a file in a format that is not read in line blocks."""
    from llc_bench.data.compression import open_binary
    from llc_bench.data.formats import parse_file

    try:
        parsed = parse_file(path, pre["format"], pre["options"], kind="xy",
                            n_features=pre["n_features"])
    except DatasetError:
        with open_binary(path) as fh:
            head = fh.read(6)
        if pre["format"] != "mat" or head == b"MATLAB":  # a .mat file: its own error
            raise
        options = pre["options"]
        keys = f"{options.get('x_key', 'X')!r} and {options.get('y_key', 'y')!r}"
        raise DatasetError(f"{path}: not a MATLAB .mat file (it starts with {head!r}), and "
                           "the model reads .mat files, the format of its training file: "
                           f"write the rows and labels as its variables {keys} (e.g. "
                           "scipy.io.savemat)") from None
    return _checked(path, parsed, pre["n_features"])


def _checked(path: Path, parsed, n: int, rows_before: int = 0):
    """(X, label values or None) of parsed rows (after ``rows_before`` rows of the file),
    which must have the model's ``n`` features and finite values of a size the scaling can
    square."""
    from llc_bench.data.reader import check_values

    if parsed.X.shape[1] != n:
        raise DatasetError(f"{path}: {parsed.X.shape[1]} features, the model has {n}")
    check_values(path, parsed.X, parsed.meta, missing_hint=": a missing value (a row is "
                 "predicted from all its features: fill it in or leave the row out)",
                 first_row=rows_before)
    labels = None
    if parsed.label_codes is not None:
        labels = np.asarray(parsed.label_names, dtype=object)[parsed.label_codes]
    return parsed.X, labels


def iter_rows(path, pre: dict, block_bytes: int = BLOCK_BYTES):
    """(features as the model saw them, label values or None) of a data file, a block of
    lines at a time."""
    from llc_bench.data.load import _as_float
    from llc_bench.data.preprocess import Scaler

    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: " + ("a directory: give a data file" if path.is_dir() else
                                          "not a regular file" if path.exists() else
                                          "no such data file"))
    kind = _kind(path, pre)
    options = _block_options(path, pre, kind) if pre["format"] == "csv" else pre["options"]
    skip = _skipped(pre["options"]) + (pre["format"] == "csv" and _has_header(pre))
    scaler = None
    if pre.get("scale") is not None:
        mean = None if pre.get("mean") is None else np.asarray(pre["mean"], dtype=np.float64)
        scaler = Scaler(mean, np.asarray(pre["scale"], dtype=np.float64), 0)
    if pre["format"] in ("csv", "svmlight"):
        blocks = _parsed_blocks(path, pre, kind, options, skip, block_bytes)
    else:  # a binary format (.mat, ...): the whole file, by its parser
        blocks = [_parse_whole(path, pre)]
    for X, labels in blocks:
        X = _as_float(X, pre["sparse"], pre["value_scale"])
        yield (X if scaler is None else scaler.transform(X, copy=False)), labels


def _parsed_blocks(path: Path, pre: dict, kind: str, options: dict, skip: int,
                   block_bytes: int):
    """(X, label values or None) of each block of lines, its errors naming file lines and
    rows."""
    rows = 0
    for line, block in _line_blocks(path, skip, block_bytes):
        X, labels = _parse_block(path, pre, kind, options, line, block, rows)
        rows += X.shape[0]
        yield X, labels


class _Output:
    """The CSV of predictions: to ``out`` (atomically, at the end), or to stdout when ``out``
    is None or ``-``."""

    def __init__(self, out):
        from llc_bench.files import atomic_open

        to_stdout = out is None or str(out) == "-"
        self._writer = None if to_stdout else atomic_open(Path(out))
        self.handle = None

    def __enter__(self):
        if self._writer is None:
            self.handle = sys.stdout
        else:
            self.handle = io.TextIOWrapper(self._writer.__enter__(), encoding="utf-8",
                                           newline="")
        return self

    def rows(self, rows) -> None:
        """Write ``rows`` (lists of fields) as CSV lines."""
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="\n").writerows(rows)
        self.handle.write(buffer.getvalue())

    def __exit__(self, *exc):
        if self._writer is None:
            self.handle.flush()
            return False
        self.handle.flush()
        self.handle.detach()
        return self._writer.__exit__(*exc)


def _header(names, binary: bool, scores, classes, calibrated: bool, has_labels: bool) -> list:
    """The column names.  A calibrated model has two predicted labels, each named by its
    rule: ``predicted_by_decision`` (the model's own, which the run's accuracy counts) and
    ``predicted_by_proba`` (the class of the highest probability)."""
    columns = (["decision"] if scores.ndim == 1 else
               [f"decision_{names[i] if not binary else i}" for i in range(scores.shape[1])])
    if calibrated:
        name_of = _name_of(names, binary)
        columns = ["predicted_by_decision", *columns,
                   *(f"proba_{name_of(c)}" for c in classes), "predicted_by_proba"]
    else:
        columns = ["predicted", *columns]
    return columns + (["label"] if has_labels else [])


def _name_of(names, binary: bool):
    """The label name of a class value of the estimator."""
    return (lambda v: names[int(v > 0)]) if binary else (lambda v: names[int(v)])


def predict_file(model_path, data_path, out=None, echo=print,
                 block_bytes: int = BLOCK_BYTES, config_dirs=()) -> dict:
    """Write the predictions of ``model_path`` on ``data_path`` (CSV) to ``out`` (or
    stdout), a block of input lines at a time; returns {"rows", "accuracy"} (and, for a
    calibrated model, "accuracy_by_proba").  ``config_dirs``: a user's config dirs, whose
    classes the model file may hold (``model_files.trusted_classes``)."""
    from llc_bench.files import check_not_input
    from llc_bench.models._validation import labels_from_scores
    from llc_bench.serving.model_files import base_estimator

    if out is not None and str(out) != "-":
        check_not_input(out, {"data file": data_path, "model file": model_path}, "--out")
    model, meta = load_model(model_path, config_dirs)
    estimator = base_estimator(model)
    pre = meta.get("preprocess")
    if not pre:
        raise ConfigError(f"{model_path}: the model file holds no preprocessing (a streamed "
                          "or generated training set); it cannot read new files")
    classes = np.asarray(estimator.classes_)
    names = pre["names"]
    binary = pre["task"] == "binary"
    name_of = _name_of(names, binary)
    value_of = pre["value_of"]
    calibrated = model is not estimator
    rows = correct = correct_by_proba = 0
    has_labels = None
    with _Output(out) as output:
        for X, labels in iter_rows(data_path, pre, block_bytes):
            scores = np.asarray(estimator.decision_function(X))
            predicted = labels_from_scores(classes, scores)
            if has_labels is None:  # the header, from the first block
                has_labels = labels is not None
                output.rows([_header(names, binary, scores, classes, calibrated, has_labels)])
            values = scores.reshape(len(scores), -1)
            by_proba = None
            if calibrated:
                proba = model.predict_proba(X)
                by_proba = classes[np.argmax(proba, axis=1)]
                values = np.hstack([values, proba])
            if labels is not None:
                unseen = sorted({str(v) for v in labels if str(v) not in value_of})
                if unseen:
                    raise DatasetError(
                        f"{data_path}: label(s) {', '.join(map(repr, unseen[:5]))} the model "
                        f"never saw (it knows {', '.join(map(repr, value_of))})")
                truth = np.array([value_of[str(v)] for v in labels])
                correct += int(np.sum(truth == predicted))
                if by_proba is not None:
                    correct_by_proba += int(np.sum(truth == by_proba))
            output.rows([name_of(value), *(repr(float(s)) for s in values[i]),
                         *([name_of(by_proba[i])] if by_proba is not None else []),
                         *([labels[i]] if labels is not None else [])]
                        for i, value in enumerate(predicted))
            rows += len(predicted)
        if has_labels is None:  # inside the block: an existing --out is kept as it was
            raise DatasetError(f"{data_path}: no data rows (is the file empty?)")
    result = {"rows": rows, "accuracy": correct / rows if has_labels else None}
    if result["accuracy"] is not None:
        line = f"accuracy {100 * result['accuracy']:.2f}% on {rows} rows of {data_path}"
        if calibrated:
            result["accuracy_by_proba"] = correct_by_proba / rows
            line += (f" (predicted_by_decision, as the run's test accuracy; "
                     f"predicted_by_proba: {100 * result['accuracy_by_proba']:.2f}%)")
        echo(line, file=sys.stderr)
    return result
