"""Typed view of a ``cfg.dataset`` mapping (the YAML schema of ``conf/dataset/*.yaml``).

The YAML stays declarative; this module only checks types and fills defaults, raising
``ConfigError`` (one line) for a bad value. The schema is documented in
``datasets/README.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import PurePosixPath
from urllib.parse import urlparse

from llc_bench.data.checksums import UNKNOWN, upstream_sha256
from llc_bench.errors import ConfigError, DatasetError, did_you_mean

TASKS = ("binary", "multiclass", "auto")
KINDS = ("benchmark", "synthetic", "custom")
FORMATS = ("svmlight", "csv", "idx", "mat", "ldkl")
PROTOCOLS = ("files", "fraction", "count", "rows")
SCALINGS = ("standard", "center", "none")  # center: minus the training mean, no rescaling
PART_ROLES = ("train", "test", "all")
FILE_ROLES = PART_ROLES + tuple(f"{p}_{k}" for p in PART_ROLES for k in ("x", "y"))

TOP_KEYS = {
    "name", "kind", "task", "description", "homepage", "papers", "sources", "labels",
    "expected", "paper_sizes", "split", "scaling", "sparse", "max_train", "max_test",
    "validation", "in_memory", "generator", "notes",
    # any dataset: test labels unseen in training (llc_bench.data.load)
    "unseen_test_labels",
    # out-of-core (llc_bench.data.stream): null = auto (in_memory: false datasets stream)
    "stream", "source_sha256",
}
# custom data (dataset=file, llc_bench.data.custom): its keys are turned into the above
CUSTOM_ONLY_KEYS = {"train", "test", "test_fraction", "format", "label_column", "sep", "header",
                    "n_features", "positive", "zero_based", "decimal", "encoding",
                    "drop_columns", "na_values", "missing", "stratify", "categorical"}
# the keys of the nested mappings
LABEL_KEYS = ("positive", "negative", "order", "drop", "names")
EXPECTED_KEYS = ("features", "classes", "rows", "label_counts")
SPLIT_KEYS = ("protocol", "test_fraction", "train_size", "test_size", "train_rows", "test_rows",
              "stratify")


def canonical_label(value) -> str:
    """One spelling per label: ``1``, ``1.0``, ``+1`` and ``"1"`` all become ``"1"``."""
    if isinstance(value, bytes):
        value = value.decode()
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    if math.isfinite(number) and number == int(number):
        return str(int(number))
    return repr(number) if math.isfinite(number) else text


def as_fraction(value, what: str) -> Fraction:
    """A number or an ``"a/b"`` string (YAML has no exact 2/3) as an exact fraction."""
    try:
        return Fraction(str(value).strip()) if not isinstance(value, int) else Fraction(value)
    except (ValueError, ZeroDivisionError) as exc:
        raise ConfigError(f"{what}: expected a number or 'a/b', got {value!r}") from exc


def _labels(values, what: str) -> tuple[str, ...] | None:
    if values is None:
        return None
    if isinstance(values, str | int | float):
        values = [values]
    if not isinstance(values, list | tuple):
        raise ConfigError(f"{what}: expected a list of labels, got {values!r}")
    return tuple(canonical_label(v) for v in values)


def _scaling(raw, name: str) -> str:
    """``scaling``; centring would densify a sparse dataset, so that pair is refused."""
    scaling = _choice(raw, "scaling", SCALINGS, "standard", name)
    if scaling == "center" and raw.get("sparse"):
        raise ConfigError(f"dataset {name!r}: scaling='center' would densify sparse data; "
                          "use scaling='standard' (scales without centring) or 'none'")
    return scaling


def _int_or_none(value, what: str, minimum: int = 0) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{what}: expected an integer >= {minimum}, got {value!r}")
    return value


def _validation(value, name: str) -> Fraction | None:
    """``validation``: the fraction of the training split held out as the evaluation set."""
    if value is None:
        return None
    frac = as_fraction(value, f"dataset {name!r} validation")
    if not 0 < frac < 1:
        raise ConfigError(f"dataset {name!r}: validation must be null or in (0, 1), got {value!r}")
    return frac


def _rows(value, what: str) -> tuple[int, int] | None:
    if value is None:
        return None
    if (not isinstance(value, list | tuple) or len(value) != 2
            or not all(isinstance(v, int) and v >= 0 for v in value) or value[0] >= value[1]):
        raise ConfigError(f"{what}: expected [start, stop) with 0 <= start < stop, got {value!r}")
    return int(value[0]), int(value[1])


@dataclass(frozen=True, eq=False)
class FileEntry:
    """One file of a source: where it lives (mirror/home path) and where it comes from.

    ``sha256`` pins the upstream bytes; when it is None, ``sha256_note`` says why.
    """

    role: str
    path: str
    urls: tuple[str, ...]
    sha256: str | None
    format: str
    options: Mapping
    download_as: str | None = None
    sha256_note: str | None = None

    @property
    def download_path(self) -> str | None:
        """Relative path a download is saved to (the URL's file name next to ``path``)."""
        if self.download_as:
            return self.download_as
        if not self.urls:
            return None
        name = PurePosixPath(urlparse(self.urls[0]).path).name or PurePosixPath(self.path).name
        return str(PurePosixPath(self.path).parent / name)

    @property
    def candidates(self) -> tuple[str, ...]:
        """Relative paths under which this file is accepted in a home or mirror."""
        alt = self.download_path
        return (self.path,) if alt in (None, self.path) else (self.path, alt)

    @property
    def part(self) -> str:
        return self.role.split("_")[0]

    @property
    def kind(self) -> str:
        """``xy`` (features and labels), ``x`` (features only) or ``y`` (labels only)."""
        return self.role.split("_")[1] if "_" in self.role else "xy"


@dataclass(frozen=True, eq=False)
class Source:
    """One complete way of obtaining the data; sources are tried in order."""

    id: str
    files: tuple[FileEntry, ...]
    relabel: Mapping[str, str]
    value_scale: float | None
    note: str | None

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in PART_ROLES if any(f.part == p for f in self.files))


@dataclass(frozen=True)
class LabelSpec:
    positive: tuple[str, ...] | None = None
    negative: tuple[str, ...] | None = None
    order: tuple[str, ...] | None = None
    drop: tuple[str, ...] = ()
    names: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SplitSpec:
    protocol: str
    test_fraction: Fraction | None = None
    train_size: int | None = None
    test_size: int | None = None
    train_rows: tuple[int, int] | None = None
    test_rows: tuple[int, int] | None = None
    stratify: bool = False  # fraction/count: each label's share kept in both splits

    def describe(self) -> dict:
        out = {"protocol": self.protocol}
        if self.test_fraction is not None:
            out["test_fraction"] = str(self.test_fraction)
        if self.stratify:
            out["stratify"] = True
        for key in ("train_size", "test_size", "train_rows", "test_rows"):
            value = getattr(self, key)
            if value is not None:
                out[key] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class Expected:
    features: int | None = None
    classes: int | None = None
    rows: Mapping[str, int] = field(default_factory=dict)
    label_counts: Mapping[str, Mapping[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    kind: str
    task: str
    sources: tuple[Source, ...]
    labels: LabelSpec
    expected: Expected
    split: SplitSpec
    scaling: str
    sparse: bool
    max_train: int | None
    max_test: int | None
    validation: Fraction | None
    in_memory: bool
    generator: Mapping | None
    paper_sizes: Mapping | None
    homepage: str | None
    raw: Mapping

    @property
    def urls(self) -> tuple[str, ...]:
        return tuple(u for s in self.sources for f in s.files for u in f.urls)


def _check_inside(path: str, field_: str) -> None:
    """A spec's file path is relative to the data home or a mirror and stays inside it."""
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
        raise DatasetError(f"{field_}={path!r}: must be a relative path inside the data home "
                           "or a mirror (no '..', not absolute)")


def _sha256(value, urls: tuple[str, ...], field_: str) -> tuple[str | None, str | None]:
    """``(digest, None)`` or ``(None, why unknown)`` from the spec, else the checksum table.

    A spec says ``sha256: <64 hex>``, ``sha256: "unknown — <reason>"`` or nothing (null):
    then the table of ``checksums.py`` decides, and a URL missing there is "not pinned".
    """
    table_sha, table_note = upstream_sha256(urls, field_)
    if value is None:
        if table_sha or table_note:
            return table_sha, table_note
        return None, ("not pinned in the spec" if urls else None)
    text = str(value).strip()
    if text.lower().startswith(UNKNOWN):
        return None, text[len(UNKNOWN):].strip(" :—–-") or "no reason given"
    if len(text) != 64 or set(text) - set("0123456789abcdef"):
        raise ConfigError(f"{field_}.sha256 must be 64 lowercase hex digits or "
                          f"'unknown — <reason>', got {value!r}")
    if table_sha not in (None, text):
        raise ConfigError(f"{field_}.sha256 {text[:12]}… disagrees with the checksum table "
                          f"({table_sha[:12]}…)")
    return text, None


def _file_entries(role: str, value, source: Mapping, where: str) -> list[FileEntry]:
    if role not in FILE_ROLES:
        raise ConfigError(f"{where}: unknown file role {role!r} "
                          f"(use one of {', '.join(FILE_ROLES)})")
    items = value if isinstance(value, list | tuple) else [value]
    entries = []
    for item in items:
        if isinstance(item, str):
            item = {"path": item}
        if not isinstance(item, Mapping) or not item.get("path"):
            raise ConfigError(f"{where}.{role}: each file needs a 'path'")
        urls = item.get("url") or ()
        urls = (urls,) if isinstance(urls, str) else tuple(urls)
        fmt = item.get("format") or source.get("format")
        if fmt not in FORMATS:
            raise ConfigError(f"{where}.{role}: format {fmt!r} is not one of {', '.join(FORMATS)}")
        options = {**(source.get("options") or {}), **(item.get("options") or {})}
        field_ = f"{where}: files.{role}"
        for url in urls:
            if not isinstance(url, str) or urlparse(url).scheme not in ("https", "http"):
                raise DatasetError(f"{field_}.url={url!r}: downloads must be https:// URLs")
        sha, note = _sha256(item.get("sha256"), urls, field_)
        entry = FileEntry(role, str(item["path"]), urls, sha, fmt, options,
                          item.get("download_as"), note)
        if not PurePosixPath(entry.path).is_absolute() or urls or entry.download_as:
            _check_inside(entry.path, f"{field_}.path")  # absolute: a user's own local file
        if entry.download_path is not None:
            key = "download_as" if entry.download_as else "url"
            _check_inside(entry.download_path, f"{field_}.{key} (saved as)")
        entries.append(entry)
    return entries


def _source(raw: Mapping, index: int, name: str) -> Source:
    where = f"dataset {name!r} source {index}"
    if not isinstance(raw, Mapping) or not isinstance(raw.get("files"), Mapping):
        raise ConfigError(f"{where}: needs a 'files' mapping of role -> file")
    files = [e for role, v in raw["files"].items() for e in _file_entries(role, v, raw, where)]
    roles = {f.role for f in files}
    for part in PART_ROLES:
        has_x, has_y = f"{part}_x" in roles, f"{part}_y" in roles
        if has_x != has_y or (part in roles and has_x):
            raise ConfigError(f"{where}: part {part!r} needs either '{part}' or both "
                              f"'{part}_x' and '{part}_y'")
    relabel = {canonical_label(k): canonical_label(v)
               for k, v in (raw.get("relabel") or {}).items()}
    scale = raw.get("value_scale")
    scale = None if scale is None else float(as_fraction(scale, f"{where}.value_scale"))
    return Source(str(raw.get("id") or f"source{index}"), tuple(files), relabel, scale,
                  raw.get("note"))


def _split(raw: Mapping | None, name: str) -> SplitSpec:
    raw = dict(raw or {})
    protocol = raw.get("protocol")
    if protocol not in PROTOCOLS:
        raise ConfigError(f"dataset {name!r}: split.protocol {protocol!r} is not one of "
                          f"{', '.join(PROTOCOLS)}")
    frac = raw.get("test_fraction")
    frac = None if frac is None else as_fraction(frac, f"dataset {name!r} split.test_fraction")
    if frac is not None and not 0 < frac < 1:
        raise ConfigError(f"dataset {name!r}: split.test_fraction must be in (0, 1), got "
                          f"{raw['test_fraction']!r}")
    split = SplitSpec(
        protocol, frac,
        _int_or_none(raw.get("train_size"), f"dataset {name!r} split.train_size", 1),
        _int_or_none(raw.get("test_size"), f"dataset {name!r} split.test_size", 1),
        _rows(raw.get("train_rows"), f"dataset {name!r} split.train_rows"),
        _rows(raw.get("test_rows"), f"dataset {name!r} split.test_rows"),
        _flag(raw, "stratify", False, name),
    )
    if split.stratify and protocol not in ("fraction", "count"):
        raise ConfigError(f"dataset {name!r}: split.stratify applies to a split by fraction "
                          f"or count, not to protocol {protocol!r}")
    needs = {"fraction": split.test_fraction, "count": split.train_size}
    if protocol in needs and needs[protocol] is None:
        key = "test_fraction" if protocol == "fraction" else "train_size"
        raise ConfigError(f"dataset {name!r}: split protocol {protocol!r} needs split.{key}")
    if protocol == "rows" and (split.train_rows is None or split.test_rows is None):
        raise ConfigError(f"dataset {name!r}: split protocol 'rows' needs train_rows and test_rows")
    return split


def _expected(raw: Mapping | None, name: str) -> Expected:
    raw = dict(raw or {})
    rows = {k: v for k, v in (raw.get("rows") or {}).items() if v is not None}
    counts = {k: {canonical_label(c): int(n) for c, n in v.items()}
              for k, v in (raw.get("label_counts") or {}).items() if v}
    for key in list(rows) + list(counts):
        if key not in PART_ROLES:
            raise ConfigError(f"dataset {name!r}: expected rows/label_counts key {key!r} "
                              f"is not one of {', '.join(PART_ROLES)}")
    return Expected(_int_or_none(raw.get("features"), f"dataset {name!r} expected.features", 1),
                    _int_or_none(raw.get("classes"), f"dataset {name!r} expected.classes", 2),
                    rows, counts)


def _choice(raw: Mapping, key: str, choices, default, name: str):
    value = raw.get(key, default)
    if value not in choices:
        raise ConfigError(f"dataset {name!r}: {key}={value!r} is not one of "
                          f"{', '.join(map(str, choices))}")
    return value


def _flag(raw: Mapping, key: str, default: bool, name: str) -> bool:
    """A true/false option (null: ``default``); anything else is a ConfigError, not a
    truthy string taken as true."""
    value = raw.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ConfigError(f"dataset {name!r}: {key}={value!r} is not true or false")
    return value


def _check_keys(raw: Mapping, name: str) -> None:
    """Every key of the spec, and of its ``labels``, ``expected`` and ``split`` mappings, is
    one this module reads: an unknown one is a ConfigError with a did-you-mean."""
    for key in raw:
        if key in CUSTOM_ONLY_KEYS and raw.get("kind") != "custom":
            raise ConfigError(f"dataset.{key} is an option of own files (dataset=file, "
                              f"dataset.kind=custom), not of dataset {name!r} "
                              f"(dataset.kind={raw.get('kind', 'benchmark')})")
        if key not in TOP_KEYS | CUSTOM_ONLY_KEYS:
            raise ConfigError(f"dataset {name!r}: unknown key dataset.{key}"
                              f"{did_you_mean(key, sorted(TOP_KEYS), 'dataset.')}")
    for group, known in (("labels", LABEL_KEYS), ("expected", EXPECTED_KEYS),
                         ("split", SPLIT_KEYS)):
        value = raw.get(group)
        for key in value if isinstance(value, Mapping) else ():
            if key not in known:
                raise ConfigError(f"dataset {name!r}: unknown key dataset.{group}.{key}"
                                  f"{did_you_mean(key, known, f'dataset.{group}.')} (known: "
                                  f"{', '.join(known)})")


def parse_spec(raw: Mapping) -> DatasetSpec:
    """Check a plain (already composed and resolved) ``cfg.dataset`` mapping."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"dataset spec must be a mapping, got {type(raw).__name__}")
    name = str(raw.get("name") or "")
    if not name:
        raise ConfigError("dataset spec has no 'name'")
    _check_keys(raw, name)
    kind = _choice(raw, "kind", KINDS, "benchmark", name)
    task = _choice(raw, "task", TASKS, "binary", name)
    if task == "auto" and kind != "custom":
        raise ConfigError(f"dataset {name!r}: task 'auto' is only for custom data")
    labels = dict(raw.get("labels") or {})
    label_spec = LabelSpec(
        _labels(labels.get("positive"), f"dataset {name!r} labels.positive"),
        _labels(labels.get("negative"), f"dataset {name!r} labels.negative"),
        _labels(labels.get("order"), f"dataset {name!r} labels.order"),
        _labels(labels.get("drop"), f"dataset {name!r} labels.drop") or (),
        _labels(labels.get("names"), f"dataset {name!r} labels.names"),
    )
    if task == "binary" and kind != "custom" and not (label_spec.positive and label_spec.negative):
        raise ConfigError(f"dataset {name!r}: a binary task needs labels.positive and "
                          "labels.negative")
    sources = raw.get("sources") or []
    if kind == "benchmark" and not sources:
        raise ConfigError(f"dataset {name!r}: no sources")
    if kind == "synthetic" and not isinstance(raw.get("generator"), Mapping):
        raise ConfigError(f"dataset {name!r}: a synthetic dataset needs a 'generator' mapping")
    return DatasetSpec(
        name=name, kind=kind, task=task,
        sources=tuple(_source(s, i, name) for i, s in enumerate(sources)),
        labels=label_spec,
        expected=_expected(raw.get("expected"), name),
        split=_split(raw.get("split"), name),
        scaling=_scaling(raw, name),
        sparse=_flag(raw, "sparse", False, name),
        max_train=_int_or_none(raw.get("max_train"), f"dataset {name!r} max_train", 1),
        max_test=_int_or_none(raw.get("max_test"), f"dataset {name!r} max_test", 1),
        validation=_validation(raw.get("validation"), name),
        in_memory=_flag(raw, "in_memory", True, name),
        generator=raw.get("generator"),
        paper_sizes=raw.get("paper_sizes"),
        homepage=raw.get("homepage"),
        raw=raw,
    )
