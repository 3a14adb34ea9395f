"""``dataset=file``: a user's own svmlight or csv files as a dataset spec.

``llc-bench run dataset=file dataset.train=PATH [dataset.test=PATH | dataset.test_fraction=0.33]
dataset.format=svmlight|csv`` — the flat keys of ``conf/dataset/file.yaml`` are turned into
the regular ``sources`` / ``split`` schema here, so the rest of the data layer is the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from llc_bench.errors import ConfigError, DatasetError, did_you_mean

CUSTOM_FORMATS = ("csv", "svmlight")
#: the keys of conf/dataset/file.yaml
OWN_KEYS = ("name", "kind", "task", "train", "test", "test_fraction", "format", "label_column",
            "sep", "header", "zero_based", "n_features", "positive", "unseen_test_labels",
            "scaling", "sparse", "max_train", "max_test", "stream", "decimal", "encoding",
            "drop_columns", "na_values", "missing", "stratify", "categorical")
#: options of the built-in datasets that act on own files as they do there
SHARED_KEYS = ("description", "homepage", "papers", "notes", "labels", "expected",
               "paper_sizes", "validation", "stream")
#: set by the runner: the sha256 of the files (``pin_custom_files``, ``pin_identity``)
PINNED_KEYS = ("sha256", "source_sha256")
#: options of the built-in datasets that do not apply to own files, and what to use instead
REFUSED_KEYS = {
    "sources": "the files are dataset.train and dataset.test",
    "split": "set dataset.test=PATH or dataset.test_fraction=F",
    "generator": "it is for the generated datasets",
    "in_memory": "set dataset.stream=true to train from a row store on disk",
}
KNOWN_KEYS = frozenset(OWN_KEYS + SHARED_KEYS + PINNED_KEYS)


def _given(value) -> bool:
    return value is not None and value != "???" and value != ""


def absolute_path(path) -> str:
    """Relative paths are taken from the directory the command was started in."""
    path = Path(os.path.expanduser(str(path)))
    if path.is_absolute():
        return str(path)
    base = Path.cwd()
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            base = Path(HydraConfig.get().runtime.cwd)
    except (ImportError, ValueError):
        pass
    return str((base / path).resolve())


def own_file(role: str, value) -> Path:
    """The path of ``dataset.<role>``: a DatasetError unless it is a regular file (a
    directory or a FIFO would be read forever or not at all)."""
    path = Path(absolute_path(value))
    if path.is_file():
        return path
    problem = ("is a directory" if path.is_dir() else
               "is not a regular file (a FIFO, socket or device)" if path.exists() else
               "no such file")
    raise DatasetError(f"dataset.{role}={value}: {problem} ({path})")


def _auto_or_bool(raw: dict, key: str):
    value = raw.get(key)
    if value is None or value == "auto":
        return "auto"
    if isinstance(value, bool):
        return value
    raise ConfigError(f"dataset.{key}={value!r}: expected true, false or auto")


def _csv_options(raw: dict) -> dict:
    label, sep = raw.get("label_column", -1), raw.get("sep", ",")
    if isinstance(label, bool) or not isinstance(label, int | str) or label == "":
        raise ConfigError(f"dataset.label_column={label!r}: expected a column index (0 = first, "
                          "-1 = last) or a column name")
    if not isinstance(sep, str) or sep == "":
        raise ConfigError(f"dataset.sep={sep!r}: expected a separator: ',' (or comma), "
                          "semicolon, tab, pipe or whitespace")
    return {"label_column": label, "sep": sep, "header": _auto_or_bool(raw, "header"),
            **_decimal(raw.get("decimal"), sep), **_encoding(raw.get("encoding")),
            **_missing_values(raw), **_dropped(raw.get("drop_columns"), label),
            **_categorical(raw.get("categorical"))}


def _categorical(value) -> dict:
    """``dataset.categorical=onehot``: a column of text values becomes one indicator column
    per value of the training file (a value only another file has: all zeros)."""
    if value is None or value == "error":
        return {}
    if value != "onehot":
        raise ConfigError(f"dataset.categorical={value!r}: expected onehot (or null: a text "
                          "value in a feature column is an error)")
    return {"categorical": "onehot"}


def _listed(value) -> list | None:
    """A YAML list, or one value given without brackets, as a list (None: not given)."""
    if value is None:
        return None
    return list(value) if isinstance(value, list | tuple) else [value]


def _dropped(value, label) -> dict:
    """``dataset.drop_columns``: columns (0-based indices or header names) that are neither
    features nor the label, e.g. an id or a text column."""
    columns = _listed(value)
    if columns is None:
        return {}
    for column in columns:
        if isinstance(column, bool) or not isinstance(column, int | str) or column == "":
            raise ConfigError(f"dataset.drop_columns entry {column!r}: expected a column index "
                              "(0 = first, -1 = last) or a column name")
        if column == label:
            raise ConfigError(f"dataset.drop_columns entry {column!r} is dataset.label_column: "
                              "the label cannot be dropped")
    return {"drop_columns": columns}


MISSING = ("error", "drop_rows")


def _missing_values(raw: dict) -> dict:
    """``dataset.na_values``: more marks of a missing feature value than pandas' own (empty,
    NA, NaN, null, ...), e.g. '?'; ``dataset.missing``: error (the default: the file and
    line are named) or drop_rows (rows with a missing feature value are left out, counted
    in the record and said in a warning)."""
    marks, missing = _listed(raw.get("na_values")), raw.get("missing")
    if marks is not None and not all(isinstance(m, str | int | float) and not isinstance(m, bool)
                                      and str(m) != "" for m in marks):
        raise ConfigError(f"dataset.na_values={raw.get('na_values')!r}: expected a list of "
                          "strings, e.g. dataset.na_values=['?','-']")
    if missing is not None and missing not in MISSING:
        raise ConfigError(f"dataset.missing={missing!r}: expected {' or '.join(MISSING)}")
    return {**({"na_values": [str(m) for m in marks]} if marks else {}),
            **({"missing": missing} if missing == "drop_rows" else {})}


DECIMALS = {"comma": ",", ",": ",", "point": ".", "dot": ".", ".": "."}


def _decimal(value, sep) -> dict:
    """``dataset.decimal``: the parser's ``decimal`` option when it is a comma (a point, the
    default, adds nothing: the parsed-data cache keys of earlier runs stay)."""
    if value is None:
        return {}
    if value not in DECIMALS:
        raise ConfigError(f"dataset.decimal={value!r}: expected comma or point")
    if DECIMALS[value] == ".":
        return {}
    if sep in (",", "comma"):
        raise ConfigError("dataset.decimal=comma needs another field separator than the comma: "
                          "set dataset.sep=semicolon (or tab, pipe, whitespace)")
    return {"decimal": ","}


def _encoding(value) -> dict:
    """``dataset.encoding``: a text encoding Python knows (null: UTF-8)."""
    if value is None:
        return {}
    import codecs

    try:
        return {"encoding": codecs.lookup(str(value)).name}
    except LookupError:
        raise ConfigError(f"dataset.encoding={value!r} is not a text encoding Python knows "
                          "(e.g. utf-8, latin-1, cp1252)") from None


def check_keys(raw: dict) -> None:
    """Every key of a ``dataset=file`` config is an option it honours: a built-in dataset's
    option that does not apply, or a typo, is a ConfigError naming it."""
    for key in raw:
        if key in REFUSED_KEYS:
            raise ConfigError(f"dataset.{key} does not apply to dataset=file: "
                              f"{REFUSED_KEYS[key]}")
        if key not in KNOWN_KEYS:
            raise ConfigError(f"dataset.{key} is not an option of dataset=file"
                              f"{did_you_mean(key, OWN_KEYS + SHARED_KEYS, 'dataset.')} "
                              "(see conf/dataset/file.yaml)")


def _check_stream(raw: dict, fmt: str, has_test: bool) -> None:
    """``dataset.stream=true`` converts svmlight train and test files of a known width into
    row stores (``llc_bench.data.stream``): say which of these own files lack."""
    if raw.get("stream") is not True:
        return
    missing = [need for need, ok in (("dataset.format=svmlight (a CSV file is not converted)",
                                      fmt == "svmlight"),
                                     ("a test file, dataset.test=PATH", has_test),
                                     ("dataset.n_features=D", raw.get("n_features") is not None))
               if not ok]
    if missing:
        raise ConfigError(f"dataset.stream=true on own files needs {'; '.join(missing)}")


#: the options of one format only, and their values that mean "not set"
CSV_ONLY = {"label_column": (-1,), "sep": (",", "comma"), "header": ("auto", None),
            "decimal": (None,), "encoding": (None,), "drop_columns": (None,),
            "na_values": (None,), "missing": (None, "error"), "categorical": (None, "error")}
SVMLIGHT_ONLY = {"zero_based": (None, "auto")}


def _check_format_keys(raw: dict, fmt: str) -> None:
    """An option of the other format is refused, not silently ignored."""
    other = CSV_ONLY if fmt == "svmlight" else SVMLIGHT_ONLY
    for key, unset in other.items():
        value = raw.get(key, unset[0])
        if not any(value == u and type(value) is type(u) for u in unset):
            reads = ("'label index:value' lines" if fmt == "svmlight"
                     else "delimited text (dataset.format=svmlight for 'label index:value')")
            shown = str(value).lower() if isinstance(value, bool) else value
            raise ConfigError(f"dataset.{key}={shown} applies to "
                              f"{'csv' if fmt == 'svmlight' else 'svmlight'} files; "
                              f"dataset.format={fmt} reads {reads}")


def expand_custom(raw: dict) -> dict:
    """The ``dataset=file`` flat keys as a regular spec mapping."""
    check_keys(raw)
    if not _given(raw.get("train")):
        raise ConfigError("dataset=file needs dataset.train=PATH")
    has_test, fraction = _given(raw.get("test")), raw.get("test_fraction")
    if has_test == (fraction is not None):
        raise ConfigError("dataset=file needs exactly one of dataset.test=PATH and "
                          "dataset.test_fraction=F")
    fmt = {"libsvm": "svmlight"}.get(raw.get("format", "csv"), raw.get("format", "csv"))
    if fmt not in CUSTOM_FORMATS:
        raise ConfigError(f"dataset.format={fmt!r} is not one of {', '.join(CUSTOM_FORMATS)}")
    csv, zero_based = _csv_options(raw), _auto_or_bool(raw, "zero_based")  # both checked
    _check_format_keys(raw, fmt)
    _check_stream(raw, fmt, has_test)
    options = csv if fmt == "csv" else {"zero_based": zero_based}
    parts = {"train": raw["train"], **({"test": raw["test"]} if has_test else {})}
    files = {role: {"path": absolute_path(path)} for role, path in parts.items()}
    split = ({"protocol": "files"} if has_test
             else {"protocol": "fraction", "test_fraction": fraction})
    if raw.get("stratify") is True and has_test:
        raise ConfigError("dataset.stratify=true splits one file by dataset.test_fraction; "
                          "with dataset.test=PATH the test file is the test split")
    if raw.get("stratify") is not None:  # checked (true or false) by the spec
        split["stratify"] = raw["stratify"]
    labels = dict(raw.get("labels") or {})
    if raw.get("positive") is not None:
        labels["positive"] = [raw["positive"]]
    keep = ("name", "kind", "task", "scaling", "sparse", "max_train", "max_test",
            "unseen_test_labels", *SHARED_KEYS)
    expected = dict(raw.get("expected") or {})
    if raw.get("n_features") is not None or "features" not in expected:
        expected["features"] = raw.get("n_features")
    return {**{k: raw[k] for k in keep if k in raw},
            "sources": [{"id": "file", "format": fmt, "options": options, "files": files}],
            "labels": labels, "split": split, "expected": expected}
