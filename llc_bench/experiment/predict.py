"""``llc-bench predict MODEL_FILE DATA_FILE``: apply a kept model to new rows.

The rows are read with the parser and options the model was trained with, turned into its
features by the saved preprocessing (value scale, the training split's scaler), and scored;
one output row per input row: the predicted label and the decision values.  When the file
has a label column, the accuracy is printed too.
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import numpy as np

from llc_bench.errors import ConfigError, DatasetError
from llc_bench.experiment.model_files import load_model


def _columns(path: Path, options: dict) -> list[str]:
    """The fields of the first line of a delimited file."""
    from llc_bench.data.compression import open_binary
    from llc_bench.data.formats import _separator

    with open_binary(path) as handle:
        first = handle.readline().decode(options.get("encoding") or "utf-8", "replace").strip()
    sep = _separator(options)
    return first.split() if sep is None or sep == r"\s+" else first.split(sep)


def _kind(path: Path, pre: dict) -> str:
    """"xy" when the file has the label column, "x" when it has only the features."""
    if pre["format"] != "csv":
        return "xy"
    fields = _columns(path, pre["options"])
    n, names = pre["n_features"], pre.get("feature_names")
    if names and pre["options"].get("header") is not False:
        missing = [c for c in names if c not in fields]
        extra = [c for c in fields if c not in names]
        if missing:
            raise DatasetError(f"{path}: missing the column(s) {', '.join(missing[:5])} the "
                               "model was trained on")
        if len(extra) > 1:
            raise DatasetError(f"{path}: column(s) {', '.join(extra[:5])} the model was not "
                               "trained on")
        if [c for c in fields if c in names] != names:
            raise DatasetError(f"{path}: the feature columns are in another order than the "
                               f"training file's ({', '.join(names[:5])}, ...)")
        return "xy" if extra else "x"
    if len(fields) not in (n, n + 1):
        raise DatasetError(f"{path}: {len(fields)} columns, the model has {n} features "
                           f"(expected {n}, or {n + 1} with the label column)")
    return "xy" if len(fields) == n + 1 else "x"


def read_rows(path, pre: dict):
    """(features as the model saw them, label values or None) of a data file."""
    from llc_bench.data.formats import parse_file
    from llc_bench.data.load import _as_float
    from llc_bench.data.preprocess import Scaler

    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: no such data file")
    kind = _kind(path, pre)
    options = dict(pre["options"])
    if kind == "x" and pre["format"] == "csv":
        options.pop("label_column", None)
    parsed = parse_file(path, pre["format"], options, kind=kind,
                        n_features=pre["n_features"])
    X = parsed.X
    if X.shape[1] != pre["n_features"]:
        raise DatasetError(f"{path}: {X.shape[1]} features, the model has {pre['n_features']}")
    X = _as_float(X, pre["sparse"], pre["value_scale"])
    if pre.get("scale") is not None:
        mean = None if pre.get("mean") is None else np.asarray(pre["mean"], dtype=np.float64)
        X = Scaler(mean, np.asarray(pre["scale"], dtype=np.float64), 0).transform(X, copy=False)
    labels = None
    if parsed.label_codes is not None:
        labels = np.asarray(parsed.label_names, dtype=object)[parsed.label_codes]
    return X, labels


def predict_file(model_path, data_path, out=None, echo=print) -> dict:
    """Write the predictions of ``model_path`` on ``data_path`` (CSV) to ``out`` (or
    stdout); returns {"rows", "accuracy"}."""
    from llc_bench.experiment.model_files import base_estimator
    from llc_bench.models._validation import labels_from_scores

    model, meta = load_model(model_path)
    estimator = base_estimator(model)
    pre = meta.get("preprocess")
    if not pre:
        raise ConfigError(f"{model_path}: the model file holds no preprocessing (a streamed "
                          "or generated training set); it cannot read new files")
    X, labels = read_rows(data_path, pre)
    scores = np.asarray(estimator.decision_function(X))
    classes = np.asarray(estimator.classes_)
    predicted = labels_from_scores(classes, scores)
    names = pre["names"]
    binary = pre["task"] == "binary"
    name_of = (lambda v: names[int(v > 0)]) if binary else (lambda v: names[int(v)])
    accuracy = None
    if labels is not None:
        value_of = pre["value_of"]
        unseen = sorted({str(v) for v in labels if str(v) not in value_of})
        if unseen:
            raise DatasetError(f"{data_path}: label(s) {', '.join(map(repr, unseen[:5]))} the "
                               f"model never saw (it knows {', '.join(map(repr, value_of))})")
        truth = np.array([value_of[str(v)] for v in labels])
        accuracy = float(np.mean(truth == predicted))
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    columns = (["decision"] if scores.ndim == 1 else
               [f"decision_{names[i] if not binary else i}" for i in range(scores.shape[1])])
    proba = model.predict_proba(X) if model is not estimator else None
    if proba is not None:
        columns += [f"proba_{name_of(c)}" for c in classes]
    writer.writerow(["predicted", *columns, *(["label"] if labels is not None else [])])
    rows = scores.reshape(len(scores), -1)
    if proba is not None:
        rows = np.hstack([rows, proba])
    for i, value in enumerate(predicted):
        writer.writerow([name_of(value), *(repr(float(s)) for s in rows[i]),
                         *([labels[i]] if labels is not None else [])])
    if out is None:
        sys.stdout.write(buffer.getvalue())
    else:
        from llc_bench.files import atomic_write_text

        atomic_write_text(Path(out), buffer.getvalue())
    if accuracy is not None:
        echo(f"accuracy {100 * accuracy:.2f}% on {len(predicted)} rows of {data_path}",
             file=sys.stderr)
    return {"rows": int(len(predicted)), "accuracy": accuracy}
