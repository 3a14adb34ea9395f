"""``dataset=file``: a user's own svmlight or csv files as a dataset spec.

``llc-bench run dataset=file dataset.train=PATH [dataset.test=PATH | dataset.test_fraction=0.33]
dataset.format=svmlight|csv`` — the flat keys of ``conf/dataset/file.yaml`` are turned into
the regular ``sources`` / ``split`` schema here, so the rest of the data layer is the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from llc_bench.errors import ConfigError

CUSTOM_FORMATS = ("csv", "svmlight")


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
    return {"label_column": label, "sep": sep, "header": _auto_or_bool(raw, "header")}


def expand_custom(raw: dict) -> dict:
    """The ``dataset=file`` flat keys as a regular spec mapping."""
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
    options = csv if fmt == "csv" else {"zero_based": zero_based}
    parts = {"train": raw["train"], **({"test": raw["test"]} if has_test else {})}
    files = {role: {"path": absolute_path(path)} for role, path in parts.items()}
    split = ({"protocol": "files"} if has_test
             else {"protocol": "fraction", "test_fraction": fraction})
    labels = dict(raw.get("labels") or {})
    if raw.get("positive") is not None:
        labels["positive"] = [raw["positive"]]
    keep = ("name", "kind", "task", "description", "scaling", "sparse", "max_train", "max_test",
            "notes", "unseen_test_labels")
    return {**{k: raw[k] for k in keep if k in raw},
            "sources": [{"id": "file", "format": fmt, "options": options, "files": files}],
            "labels": labels, "split": split,
            "expected": {"features": raw.get("n_features")}}
