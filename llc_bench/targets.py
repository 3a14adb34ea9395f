"""The classes config files name: a config group file's ``_target_`` (``conf/trainer/*.yaml``
names its estimator, ``conf/coding/*.yaml`` the class that computes the coding).

The package's own ``conf/`` is the list of what llc-bench ships: the estimators a run finds by
``trainer.name``, and the classes a model file may hold (``serving.model_files``).  A config
directory the user names (``hydra.searchpath``, ``predict --config-dir``) adds its own.
``_target_`` is not part of a run's cache key (``store.results.semantic_config``).
"""

from __future__ import annotations

import functools
import importlib
from importlib.resources import files
from pathlib import Path

from llc_bench.errors import ConfigError

KEY = "_target_"


def _read(path) -> dict:
    from omegaconf import OmegaConf

    try:
        raw = OmegaConf.to_container(OmegaConf.create(path.read_text(encoding="utf-8")))
    except Exception as err:  # a broken YAML file in a user's config dir
        raise ConfigError(f"{path}: not a YAML mapping ({' '.join(str(err).split())[:100]})") \
            from None
    return raw if isinstance(raw, dict) else {}


def _group_targets(folder) -> dict[str, str]:
    """``{name: _target_}`` of the files of one config group folder that name a class."""
    out = {}
    if not folder.is_dir():
        return out
    for path in sorted(folder.iterdir(), key=lambda p: p.name):
        if path.name.endswith(".yaml"):
            raw = _read(path)
            if isinstance(raw.get(KEY), str):
                out[str(raw.get("name", path.name[:-5]))] = raw[KEY]
    return out


@functools.cache
def shipped(group: str) -> dict[str, str]:
    """``{name: "module.Class"}`` of the package's ``conf/<group>/*.yaml`` (``trainer``:
    ``{"liblinear": "llc_bench.models.linear.LinearSVMClassifier", ...}``)."""
    return _group_targets(files("llc_bench.conf") / group)


def user(group: str, config_dirs) -> dict[str, str]:
    """``{name: "module.Class"}`` of ``<dir>/<group>/*.yaml`` for config dirs a user named."""
    out = {}
    for folder in config_dirs or ():
        out.update(_group_targets(Path(str(folder).removeprefix("file://")) / group))
    return out


def import_class(target: str, where: str) -> type:
    """The class ``target`` ("package.module.Class") names; a ConfigError naming ``where``
    (the config key) when it names none."""
    module, _, attr = str(target).rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), attr) if module else None
    except ImportError as err:
        raise ConfigError(f"{where}={target}: cannot import {module} ({err})") from None
    except AttributeError:
        cls = None
    if not isinstance(cls, type):
        raise ConfigError(f"{where}={target}: {module or target} has no class {attr}")
    return cls
