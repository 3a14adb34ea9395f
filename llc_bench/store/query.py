"""Query the results store: records as a pandas DataFrame, filters, CSV/Parquet export.

``records_frame(results_dir)`` gives one row per valid record: ``hash``, ``dataset``,
``model``, ``seed``, the metrics, ``scored_on`` (the split that scored ``test_accuracy``: test,
or validation: held-out training rows), ``tune`` (on: the run selected its hyper-parameters,
off: it did not), ``train_seconds`` / ``test_seconds``, ``started``, ``path``,
the run config flattened into dotted columns (``trainer.lambda_``, ``coding.n_anchors``,
``dataset.max_train`` ...) and the timings of every phase (``timings.fit_anchors``, ...).
``llc-bench results`` prints it (with the config columns that differ among the records)
and exports it.
"""

from __future__ import annotations

import difflib
import json
import math
import operator
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from llc_bench.errors import ConfigError, ResultsError
from llc_bench.store.results import NON_SEMANTIC_KEYS, ResultsStore, output_file, with_params

SHOWN = ["hash", "dataset", "model", "seed", "test_accuracy", "test_hinge", "train_seconds"]
#: the columns of a record that are not its config (the config's are dotted keys)
RECORD_COLUMNS = ["hash", "dataset", "model", "seed", "scored_on", "tune", "test_accuracy",
                  "train_accuracy", "test_hinge", "train_hinge", "train_seconds",
                  "test_seconds", "n_train", "n_test", "started", "path"]
#: ``tune``'s values: whether a run selected (its config's ``tune`` holds the resolved
#: settings, a mode no longer) or not (``tune: null``, or no key: a run from before selection)
TUNE_VALUES = {True: "on", False: "off"}
TIMINGS = "timings."
OPERATORS = {"<=": operator.le, ">=": operator.ge, "!=": operator.ne, "=": operator.eq,
             "<": operator.lt, ">": operator.gt}
ORDERING = ("<", "<=", ">", ">=")
_WHERE = re.compile(r"^\s*([^<>=!\s]+)\s*(<=|>=|!=|==|=|<|>)\s*(.*?)\s*$")
#: columns holding a fraction in [0, 1] (a threshold of 95 is a percentage)
FRACTION_COLUMNS = ("test_accuracy", "train_accuracy")


def flatten(config: Mapping, prefix: str = "") -> dict:
    """``{"trainer": {"C": 1}}`` -> ``{"trainer.C": 1}``; lists stay values."""
    out = {}
    for key, value in config.items():
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def record_row(record: Mapping, path: Path | None = None) -> dict:
    """One DataFrame row of a record (the config flattened into dotted keys, without the
    ``_target_`` classes: not settings, and not in the cache key either)."""
    metrics, timings = record.get("metrics") or {}, record.get("timings") or {}
    row = {k: v for k, v in flatten(record.get("config") or {}).items()
           if not k.endswith("._target_")}
    row.update({
        "hash": record["config_hash"], "dataset": record["dataset"], "model": record["model"],
        "seed": record["seed"],
        "scored_on": "validation" if (record.get("data") or {}).get("validation") else "test",
        "tune": TUNE_VALUES[bool((record.get("config") or {}).get("tune"))],
        **{k: metrics.get(k) for k in ("test_accuracy", "train_accuracy", "test_hinge",
                                       "train_hinge")},
        "train_seconds": timings.get("train"), "test_seconds": timings.get("test_total"),
        "n_train": (record.get("data") or {}).get("n_train"),
        "n_test": (record.get("data") or {}).get("n_test"),
        "started": record.get("started"), "path": None if path is None else str(path),
        **{f"{TIMINGS}{k}": v for k, v in timings.items()},
    })
    return row


def records_frame(results_dir="results", *, datasets: Iterable[str] = (),
                  models: Iterable[str] = (), where: Iterable[str] = (), warn=None):
    """The valid records of the store as a DataFrame (filtered; unreadable records are
    skipped and reported through ``warn(message)``)."""
    import pandas as pd

    rows, bad = [], []
    for path, record, problem in ResultsStore(results_dir).records():
        if record is None:
            bad.append(problem)
        else:
            rows.append(record_row(record, path))
    if bad and warn is not None:
        warn(f"{len(bad)} unreadable record(s) skipped, e.g. {bad[0]}")
    frame = pd.DataFrame(rows)
    frame = frame.reindex(columns=RECORD_COLUMNS
                          + sorted(set(frame.columns) - set(RECORD_COLUMNS)))
    datasets, models = list(datasets), list(models)
    if datasets:
        frame = frame[frame["dataset"].isin(datasets)]
    if models:
        frame = frame[frame["model"].isin(models)]
    for condition in where:
        frame = frame[_mask(frame, condition)]
    return frame.sort_values(["dataset", "model", "seed", "hash"]).reset_index(drop=True)


def _value(text: str):
    """A command-line value as Hydra would read it: null, true/false, a number, or text."""
    lowered = text.lower()
    if lowered in ("null", "none", "~"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _matches(cell, want, op) -> bool:
    if want is None or (isinstance(cell, float) and math.isnan(cell)) or cell is None:
        both_null = want is None and (cell is None or (isinstance(cell, float)
                                                       and math.isnan(cell)))
        return both_null if op is operator.eq else (not both_null if op is operator.ne
                                                    else False)
    if isinstance(cell, bool) or isinstance(want, bool):
        return op(cell, want) if op in (operator.eq, operator.ne) else False
    if isinstance(want, int | float) and isinstance(cell, int | float):
        if op in (operator.eq, operator.ne):
            close = math.isclose(cell, want, rel_tol=1e-9, abs_tol=0.0)
            return close if op is operator.eq else not close
        return op(cell, want)
    if isinstance(cell, list | tuple | dict):
        cell = json.dumps(cell)
    return op(str(cell), str(want)) if op in (operator.eq, operator.ne) else False


def _mask(frame, condition: str):
    """A boolean mask of ``frame`` for ``key<op>value`` (op: = != < <= > >=)."""
    match = _WHERE.match(condition)
    if not match:
        raise ConfigError(f"--where {condition!r}: expected KEY=VALUE (or !=, <, <=, >, >=), "
                          "e.g. trainer.lambda_=1e-5")
    key, op_text, text = match.groups()
    if key not in frame.columns:
        near = difflib.get_close_matches(key, [str(c) for c in frame.columns], n=3)
        hint = f" (did you mean {', '.join(near)}?)" if near else ""
        raise ConfigError(f"--where {condition!r}: no column {key!r} in the records{hint}")
    op, want = OPERATORS["=" if op_text == "==" else op_text], _value(text)
    if key == "tune":
        want = _tune_value(condition, want)
    _check_condition(condition, frame[key], key, op_text, text, want)
    return frame[key].map(lambda cell: _matches(cell, want, op)).astype(bool)


def _tune_value(condition: str, want):
    """``tune=off`` / ``tune=on`` (or false / true): whether a run selected its settings."""
    want = TUNE_VALUES.get(want, want) if isinstance(want, bool) else want
    if want not in TUNE_VALUES.values():
        raise ConfigError(f"--where {condition!r}: a record keeps whether its run selected "
                          "its hyper-parameters (tune=on) or not (tune=off), not the mode "
                          "asked (tune=auto selects or not); use tune=on or tune=off")
    return want


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_condition(condition: str, column, key: str, op_text: str, text: str, want) -> None:
    """A condition that could match nothing by its form is a ConfigError: a value that
    starts with an operator (``>>0.5``), an ordering against text or on a text column, text
    against a number column, a percentage against a fraction column."""
    where = f"--where {condition!r}"
    if text[:1] in "<>=!" or text == "":
        raise ConfigError(f"{where}: expected KEY<op>VALUE with one operator (=, !=, <, <=, "
                          ">, >=) and a value (null for none), e.g. test_accuracy>0.9")
    cells = [c for c in column if c is not None and not (isinstance(c, float) and c != c)]
    numeric = bool(cells) and all(_is_number(c) for c in cells)
    if op_text in ORDERING and not _is_number(want):
        raise ConfigError(f"{where}: {op_text} needs a number, got {text!r}")
    if op_text in ORDERING and cells and not any(_is_number(c) for c in cells):
        raise ConfigError(f"{where}: {key} holds no numbers (e.g. {cells[0]!r}): only = and "
                          "!= apply")
    if numeric and want is not None and not _is_number(want):
        raise ConfigError(f"{where}: {key} holds numbers, not {text!r}")
    if key in FRACTION_COLUMNS and _is_number(want) and want > 1:
        hint = f": did you mean {want / 100:g}?" if want <= 100 else ""
        raise ConfigError(f"{where}: {key} is a fraction in [0, 1]{hint}")


def _same(value):
    """A cell as a comparable value: null, NaN and an absent key alike; lists as JSON."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def varying_columns(frame) -> list[str]:
    """The config columns whose values differ among the rows of ``frame``: the keys that
    tell its records apart (not the dataset and model names, shown anyway, nor the keys
    that do not enter the cache key, such as results_dir)."""
    columns = [column for column in frame.columns
               if column not in RECORD_COLUMNS and not column.startswith(TIMINGS)
               and column not in ("dataset.name", "model.name")
               and column.split(".", 1)[0] not in NON_SEMANTIC_KEYS
               and frame[column].map(_same).nunique(dropna=False) > 1]
    return [c for c in columns if not c.startswith("tune.")] + _tune_columns(frame, columns)


def _tune_columns(frame, columns: list[str]) -> list[str]:
    """Of the varying ``tune.*`` keys (a run without selection has none of them), those that
    differ among the runs with selection, not its space (from conf/search); else one key,
    ``tune.trials``, null for the runs without, to tell the two kinds apart."""
    tune = [c for c in columns if c.startswith("tune.")]
    if not tune:
        return []
    on = frame[tune].map(_same).notna().any(axis=1)
    differ = [c for c in tune if not c.startswith("tune.space.")
              and frame.loc[on, c].map(_same).nunique(dropna=False) > 1]
    return differ or ([next((c for c in tune if c == "tune.trials"), tune[0])]
                      if on.any() and not on.all() else [])


def _exportable(frame):
    """Lists and dicts as JSON text (CSV and Parquet need scalar cells)."""
    out = frame.copy()
    for column in out.columns:
        if out[column].map(lambda v: isinstance(v, list | tuple | dict)).any():
            out[column] = out[column].map(
                lambda v: json.dumps(v) if isinstance(v, list | tuple | dict) else v)
    return out


def write_csv(frame, path) -> Path:
    path = output_file(path, "--csv")
    path.parent.mkdir(parents=True, exist_ok=True)
    _exportable(frame).to_csv(path, index=False)
    return path


def write_parquet(frame, path) -> Path:
    path = output_file(path, "--parquet")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ResultsError("--parquet needs pyarrow: pip install pyarrow "
                           "(or use --csv)") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = _exportable(frame)
    for column in frame.columns:  # mixed-type object columns as text
        if frame[column].dtype == object and frame[column].map(type).nunique() > 1:
            frame[column] = frame[column].map(lambda v: None if v is None else str(v))
    frame.to_parquet(path, index=False)
    return path


def _config_text(value) -> str:
    """A config cell as on the command line: null for none (or a key the record lacks), an
    integral number without ".0" (a column with nulls holds floats)."""
    value = _same(value)
    if value is None:
        return "null"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def display_frame(frame, extra: list[str]):
    """The records' columns ``llc-bench results`` lists, formatted for reading."""
    view = frame[[c for c in SHOWN + extra if c in frame.columns]].copy()
    for column in extra:
        if column not in RECORD_COLUMNS and not column.startswith(TIMINGS):  # a config key
            view[column] = view[column].map(_config_text)
    for column in ("test_accuracy", "train_accuracy"):
        if column in view:
            view[column] = view[column].map(lambda v: "" if v is None or v != v
                                            else f"{100 * v:.2f}%")
    for column in ("test_hinge", "train_hinge", "train_seconds", "test_seconds"):
        if column in view:
            view[column] = view[column].map(lambda v: "" if v is None or v != v
                                            else f"{v:.4g}")
    return view


def summary(frame, keys: list[str]):
    """One row per (dataset, model, the split that scored the runs, ``keys``): the seeds
    run, the accuracy's mean and sample standard deviation over them (fractions; in
    ``test_accuracy_*`` or, for runs scored on held-out training rows, in
    ``validation_accuracy_*``: never averaged together), and the mean fit time with
    selection and CV (what a user waits for: ``costs.fit_seconds``).  ``scored_on`` is a
    column only where some run was scored on validation rows."""
    import pandas as pd

    keys = [k for k in keys if k in frame.columns and not k.startswith("dataset.sha256.")
            and frame.groupby(["dataset", "model"])[k].agg(  # differs within a model's runs
                lambda cells: cells.map(_same).nunique(dropna=False)).max() > 1]
    splits = ["test", "validation"] if (frame["scored_on"] == "validation").any() else ["test"]
    by = ["dataset", "model", *(["scored_on"] if len(splits) > 1 else []), *keys]
    work = frame.assign(
        _fit=sum(frame[c].fillna(0.0) if c in frame else 0.0
                 for c in ("timings.train_total", "timings.tune")),
        **{k: frame[k].map(_config_text) for k in keys})
    rows = []
    for values, group in work.groupby(by, dropna=False, sort=True):
        accuracy = group["test_accuracy"].astype(float)
        split = group["scored_on"].iloc[0]
        row = {**dict(zip(by, values, strict=True)),
               "seeds": ",".join(str(s) for s in sorted(group["seed"])), "runs": len(group)}
        for name in splits:
            row[f"{name}_accuracy_mean"] = accuracy.mean() if name == split else None
            row[f"{name}_accuracy_std"] = (accuracy.std(ddof=1) if name == split
                                           and len(group) > 1 else None)
        rows.append({**row, "fit_seconds_mean": group["_fit"].mean()})
    return pd.DataFrame(rows)


def summary_text(table):
    """``summary``'s table as printed: accuracy in percent with its spread, one column per
    split that scored runs."""
    shown = table.drop(columns=[c for c in table.columns if c.endswith(("_mean", "_std"))]
                       + ["runs"])
    for split in ("test", "validation"):
        if f"{split}_accuracy_mean" in table:
            shown[f"{split}_accuracy"] = [
                "" if mean is None or mean != mean else
                f"{100 * mean:.2f}%" + ("" if std is None or std != std
                                        else f" ± {100 * std:.2f}")
                for mean, std in zip(table[f"{split}_accuracy_mean"],
                                     table[f"{split}_accuracy_std"], strict=True)]
    shown["fit_seconds"] = table["fit_seconds_mean"].map(lambda v: f"{v:.3g}")
    return shown.to_string(index=False)


def _seconds(value) -> str:
    return "?" if value is None else f"{value:.2f} s" if value >= 0.01 else f"{value:.3f} s"


def data_line(name: str, data: Mapping, timings: Mapping) -> str:
    """The ``data`` line of a run: split sizes, features, classes, read and preprocessing
    times (``data`` as a record's ``data``)."""
    test_name = "validation" if data.get("validation") else "test"
    dropped = sum(f.get("dropped_rows_missing_values", 0) for f in data.get("files") or ())
    left_out = (f" ({dropped} row{'s' * (dropped != 1)} with a missing value left out)"
                if dropped else "")
    return (f"data    {name}: {data.get('n_train')} train / {data.get('n_test')} {test_name} "
            f"rows{left_out}, {data.get('n_features')} features, "
            f"{len(data.get('classes') or [])} classes "
            f"(read {_seconds(timings.get('load'))}, "
            f"preprocess {_seconds(timings.get('preprocess'))})")


def describe_run(record: Mapping, path=None, data: bool = True) -> list[str]:
    """What a run did, in a few lines: data and split sizes (unless ``data`` is false: a run
    prints that line once its data is loaded), model, phases with times, and (given
    ``path``) where its record went.  The result line itself is ``summary_line``."""
    config, t = record.get("config") or {}, record["timings"]
    test_name = "validation" if (record.get("data") or {}).get("validation") else "test"
    lines = [data_line(record["dataset"], record.get("data") or {}, t)] if data else []
    if record.get("tune"):  # the setting the run chose and trained
        config = with_params(config, record["tune"].get("chosen") or {})
    trainer = dict(config.get("trainer") or {})
    coding = dict(config.get("coding") or {})
    settings = ", ".join(f"{k}={v}" for k, v in trainer.items()
                         if k in ("lambda_", "C", "epochs", "n_anchors", "k") and v is not None)
    coding_text = "" if coding.get("name", "none") == "none" else (
        f", {coding['name']} coding" + "".join(f" {k}={coding[k]}" for k in ("n_anchors", "k")
                                               if coding.get(k) is not None))
    lines.append(f"model   {record['model']}: trainer {trainer.get('name')}{coding_text}"
                 + (f" ({settings})" if settings else "")
                 + (" (tuned)" if record.get("tune") else ""))
    fit = [(k[4:], v) for k, v in t.items()
           if k.startswith("fit_") and k not in ("fit_total", "fit_history") and v is not None]
    phases = ", ".join(f"{name} {_seconds(v)}" for name, v in fit if v >= 0.0005)
    lines.append(f"phases  fit {_seconds(t.get('train_total'))}"
                 + (f" ({phases})" if phases else "")
                 + f"; predict {test_name} {_seconds(t.get('test_total'))}")
    if path is not None:
        lines.append(f"record  {path}")
    return lines
