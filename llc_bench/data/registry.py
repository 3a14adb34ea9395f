"""Dataset specs: the packaged ``conf/dataset/*.yaml`` files, looked up by name.

A variant YAML may start with a Hydra defaults list naming other configs of the
same group (``defaults: [banana, _self_]``); it is composed here exactly as Hydra
composes it (later entries override, lists are replaced), so ``load_dataset("banana_ml3")``
and ``llc-bench run dataset=banana_ml3`` see the same spec.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from importlib.resources import files

from omegaconf import DictConfig, OmegaConf

from llc_bench.data.custom import expand_custom
from llc_bench.data.spec import DatasetSpec, parse_spec
from llc_bench.errors import ConfigError

GROUP = "dataset"
LISTED_KINDS = ("benchmark", "synthetic")


def _group_dir():
    return files("llc_bench.conf") / GROUP


def _all_names() -> list[str]:
    return sorted(p.name[:-5] for p in _group_dir().iterdir() if p.name.endswith(".yaml"))


def _compose(name: str, chain: tuple[str, ...] = ()) -> DictConfig:
    if name in chain:
        raise ConfigError(f"dataset config {name!r}: defaults loop {' -> '.join(chain + (name,))}")
    if not isinstance(name, str) or name not in _all_names():  # never a path: '../run'
        raise ConfigError(f"unknown dataset {name!r} (known: {', '.join(_all_names())})")
    path = _group_dir() / f"{name}.yaml"
    try:
        own = OmegaConf.create(path.read_text())
    except Exception as exc:  # YAML syntax errors: report one line
        detail = " ".join(str(exc).split())[:300]
        raise ConfigError(f"dataset config {name!r} is not valid YAML: {detail}") from exc
    defaults = list(own.pop("defaults", None) or [])
    if "_self_" not in defaults:
        defaults.append("_self_")
    merged = OmegaConf.create()
    for item in defaults:
        if not isinstance(item, str):
            raise ConfigError(f"dataset config {name!r}: only plain names are supported in its "
                              f"defaults list, got {item!r}")
        part = own if item == "_self_" else _compose(item, chain + (name,))
        merged = OmegaConf.merge(merged, part)
    return merged


def dataset_spec(name: str) -> dict:
    """The composed spec mapping of a packaged dataset config (a plain dict)."""
    return OmegaConf.to_container(_compose(name), resolve=True)


def list_datasets(include_custom: bool = False) -> list[str]:
    """Sorted names of the packaged dataset configs (``file`` only with ``include_custom``)."""
    names = _all_names()
    if include_custom:
        return names
    return [n for n in names if dataset_spec(n).get("kind", "benchmark") in LISTED_KINDS]


def spec_mapping(spec) -> dict:
    """A plain dict from a name, an OmegaConf DictConfig or any mapping."""
    if isinstance(spec, str):
        return dataset_spec(spec)
    if isinstance(spec, DictConfig):
        return OmegaConf.to_container(spec, resolve=True, throw_on_missing=False)
    if isinstance(spec, Mapping):
        return copy.deepcopy(dict(spec))
    raise ConfigError(f"dataset spec must be a name or a mapping, got {type(spec).__name__}")


def resolve_spec(spec) -> DatasetSpec:
    """A checked :class:`DatasetSpec` from a name, a DictConfig, a mapping or a spec."""
    if isinstance(spec, DatasetSpec):
        return spec
    raw = spec_mapping(spec)
    if raw.get("kind") == "custom":
        raw = expand_custom(raw)
    return parse_spec(raw)
