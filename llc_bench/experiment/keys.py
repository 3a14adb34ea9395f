"""The keys of a run config: one that nothing reads is an error, before any data is read.

Hydra's ``+key=value`` adds any key to the composed config; unread, it would change
nothing but the cache key.  ``trainer.*`` and ``coding.*`` are checked against the
estimator's parameters (``runner.build_estimator``), ``dataset.*`` against the dataset
schema (``llc_bench.data.spec`` / ``llc_bench.data.custom``); this module checks the
rest: the top-level keys of ``conf/run.yaml``, its config groups, and the keys of
``data``, ``history`` and ``model``.  ``tune`` is open here (``selection/tune.py`` reads
and checks it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from importlib.resources import files

from llc_bench.errors import ConfigError, did_you_mean

#: the config groups of conf/run.yaml's defaults list
GROUPS = ("dataset", "coding", "trainer", "model", "tune")
#: groups whose keys are checked by the code that reads them
CHECKED_ELSEWHERE = ("dataset", "coding", "trainer", "tune")
#: keys the runner adds itself (``runner.prepare_config``)
ADDED = ("numerics_version",)
#: the keys of every model preset (conf/model/*.yaml)
MODEL_KEYS = ("name",)


@functools.cache
def run_schema() -> dict:
    """Top-level key -> the tuple of its keys (None: a value or a group checked elsewhere),
    from ``conf/run.yaml``."""
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(OmegaConf.create(
        (files("llc_bench.conf") / "run.yaml").read_text()))
    schema = {key: tuple(value) if isinstance(value, Mapping) else None
              for key, value in raw.items() if key not in ("defaults", "hydra")}
    schema.update({group: None for group in GROUPS}, model=MODEL_KEYS)
    schema.update({key: None for key in ADDED})
    return schema


@functools.cache
def group_keys() -> dict:
    """Key -> the first group whose configs (conf/<group>/*.yaml) or run.yaml section has
    it: where a key given at the top level belongs (``n_anchors`` -> ``coding``)."""
    from omegaconf import OmegaConf

    where: dict = {}
    for group in ("coding", "trainer", "dataset"):
        for path in sorted((files("llc_bench.conf") / group).iterdir(), key=lambda p: p.name):
            if path.name.endswith(".yaml"):
                for key in OmegaConf.create(path.read_text()):
                    where.setdefault(str(key), group)
    for group, keys in run_schema().items():
        for key in keys or ():
            where.setdefault(key, group)
    for key in ("name", "defaults", "_target_"):
        where.pop(key, None)
    return where


def _suggest(key: str) -> str:
    """Where a misplaced or misspelt top-level key belongs: the group that has that key
    (``n_anchors`` -> ``coding.n_anchors``), else the closest top-level key."""
    group = group_keys().get(key)
    return f" (did you mean {group}.{key}?)" if group else did_you_mean(key, run_schema())


def check_run_keys(config: Mapping) -> None:
    """A ConfigError naming the first key of ``config`` that no part of llc-bench reads."""
    schema = run_schema()
    for key, value in config.items():
        if key == "hydra":
            continue
        if key not in schema:
            raise ConfigError(f"{key} is not a key of the run config{_suggest(key)} "
                              "(see `llc-bench run --cfg job`)")
        known = schema[key]
        if known is None or key in CHECKED_ELSEWHERE or not isinstance(value, Mapping):
            continue
        for sub in value:
            if sub not in known:
                raise ConfigError(f"{key}.{sub} is not a key of the run config"
                                  f"{did_you_mean(sub, known, f'{key}.')} "
                                  f"({key} has: {', '.join(known)})")
