"""The model presets and their parameters, as ``llc-bench models [NAME]`` shows them.

Nothing here is written by hand: a preset's description and paper come from the header
comment of ``conf/model/<name>.yaml`` (the paper: the first citation with a year or "et
al.", else the trainer's), its parameters and defaults from the composed config (without
a per-dataset preset), each parameter's range from the estimator's declared
``_parameter_constraints``, its description from the comment beside it in the config
group's file or else the first sentence of the estimator's numpydoc ``Parameters``, and
what ``tune=auto`` searches from ``conf/search/<name>.yaml``.  ``from_preset`` builds the
estimator a run of a preset would build, from Python.
"""

from __future__ import annotations

import inspect
import re
from importlib.resources import files

from llc_bench.errors import ConfigError, did_you_mean
from llc_bench.experiment.runner import BUILT_IN_CODINGS, _show, estimator_class, preset_class

_CITATION = re.compile(r"\(([^()]*(?:\b(?:19|20)\d\d\b|\bet al\.)[^()]*)\)")
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)\.(?:\s+(?=[A-Z(`])|\s*$)")
_COMMENTED = re.compile(r"^(?P<indent> *)(?P<key>\w+):[^#]*#\s?(?P<comment>.*)$")
_DOC_PARAM = re.compile(r"^(\w+) : ")


def _conf(*parts: str):
    return files("llc_bench.conf").joinpath(*parts)


def preset_names() -> list[str]:
    """The model presets: ``conf/model/*.yaml``."""
    return sorted(p.name[:-5] for p in _conf("model").iterdir() if p.name.endswith(".yaml"))


def header(text: str) -> str:
    """The comment at the top of a YAML file, as one line (without ``@package``)."""
    lines = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if "@package" not in line:
            lines.append(line.lstrip("#").strip())
    return " ".join(lines)


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence ("et al.", "e.g." do not end one)."""
    match = _SENTENCE_END.search(text)
    return text[:match.end()].strip() if match else text.strip()


def paper(*headers: str) -> str | None:
    """The first citation (a parenthesis with a year or "et al.") of the first header that
    has one."""
    for text in headers:
        match = _CITATION.search(text)
        if match:
            return match.group(1)
    return None


def yaml_comments(text: str, block: str | None = None) -> dict[str, str]:
    """``{key: the comment beside it}`` for the top-level keys of a YAML file, or for the
    keys of its top-level ``block`` (``trainer`` in a model preset)."""
    out, inside = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            inside = line.split(":", 1)[0].strip()
        match = _COMMENTED.match(line)
        if match and (not match["indent"] if block is None else
                      inside == block and len(match["indent"]) == 2):
            out[match["key"]] = match["comment"].strip()
    return out


def one_line(text: str, width: int = 110) -> str:
    """``text`` without reST markup, cut at a word before ``width`` characters."""
    text = re.sub(r":\w+:`([^`]*)`", r"\1", text).replace("``", "")
    return text if len(text) <= width else text[:width].rsplit(" ", 1)[0] + " ..."


def doc_parameters(cls) -> dict[str, str]:
    """``{parameter: the first sentence of its description}`` from the numpydoc
    ``Parameters`` section of ``cls``'s docstring, else of the nearest base class's that
    has one (SAPLClassifier: "Same parameters as LLSVMClassifier"; empty when none has)."""
    docs = (inspect.getdoc(c) or "" for c in cls.__mro__ if c.__doc__)
    lines = next((d for d in docs if "\nParameters\n" in d), "").splitlines()
    try:
        start = next(i for i, line in enumerate(lines[:-1])
                     if line.strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        return {}
    out, name, words = {}, None, []
    for line in [*lines[start + 2:], ""]:
        match = _DOC_PARAM.match(line)
        if match or not line.startswith(" "):
            if name:
                out[name] = first_sentence(" ".join(words))
            name, words = (match.group(1), []) if match else (None, [])
            if not match and line.strip() and not line.startswith(" "):
                break  # the next section
        elif name:
            words.append(line.strip())
    return out


def _space_text(spec: dict) -> str:
    if spec["kind"] == "choice":
        return "{" + ", ".join(_show(v) for v in spec["values"]) + "}"
    return f"[{spec['low']:g}, {spec['high']:g}]" + (" log" if spec.get("log") else "")


def compose_preset(name: str) -> tuple[dict, dict]:
    """The run config of ``model=NAME`` with the model's own defaults (no per-dataset
    preset) and Hydra's group choices (``trainer``, ``coding``)."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        cfg = compose("run", overrides=[f"model={name}", "~tuned"], return_hydra_config=True)
    choices = OmegaConf.to_container(cfg.hydra.runtime.choices)
    config = OmegaConf.to_container(cfg, resolve=False)
    config.pop("hydra", None)
    return config, choices


def check_preset(name: str) -> None:
    if name not in preset_names():
        raise ConfigError(f"unknown model preset {name!r}{did_you_mean(name, preset_names())} "
                          "(see `llc-bench models`)")


def preset_info(name: str) -> dict:
    """What ``llc-bench models NAME`` prints: description, paper, estimator and one row per
    trainer and coding key (key, default, allowed, searched, description)."""
    from llc_bench.models._validation import describe
    from llc_bench.selection.tune import search_space

    check_preset(name)
    config, choices = compose_preset(name)
    texts = {group: _conf(group, f"{choices[group]}.yaml").read_text()
             for group in ("model", "trainer", "coding")}
    headers = {group: header(text) for group, text in texts.items()}
    trainer, coding = dict(config["trainer"]), dict(config.get("coding") or {})
    cls = preset_class(estimator_class(trainer["name"]), name)
    documented = doc_parameters(cls)
    comments = {f"{group}.{key}": comment for group in ("coding", "trainer")
                for source in (yaml_comments(texts["model"], group), yaml_comments(texts[group]))
                for key, comment in source.items()}
    own_cv = name in ((config.get("tune") or {}).get("own_cv_models") or ())
    space = {} if own_cv else search_space(name) or {}  # tune=auto keeps their own grid CV
    rows = []
    if coding.get("name", "none") not in ("none", BUILT_IN_CODINGS.get(trainer["name"])):
        rows.append({"key": "coding", "default": coding["name"],
                     "allowed": describe(cls._parameter_constraints.get("coding", []),
                                         none="null"),
                     "searched": "", "description": "the local coding, a config group: "
                     "its keys below change with it"})
    for group, values in (("coding", coding), ("trainer", trainer)):
        for key, value in values.items():
            if key in ("name", "_target_"):
                continue
            dotted = f"{group}.{key}"
            constraints = cls._parameter_constraints.get(key)
            rows.append({"key": dotted, "default": one_line(_show(value), 40),
                         "allowed": describe(constraints, none="null") if constraints else "",
                         "searched": _space_text(space[dotted]) if dotted in space else "",
                         "description": one_line(comments.get(dotted)
                                                 or documented.get(key, ""))})
    return {"name": name, "about": headers["model"],
            "paper": paper(headers["model"], headers["trainer"]),
            "estimator": f"{cls.__name__} ({cls.__module__})", "trainer": trainer["name"],
            "coding": coding.get("name", "none"), "rows": rows}


def from_preset(model: str, dataset: str | None = None, *overrides: str, seed: int = 0):
    """The unfitted estimator of ``llc-bench run model=MODEL dataset=DATASET tune=off
    [overrides]``: the model preset (``conf/model/<model>.yaml``), with the dataset's tuned
    preset (``conf/tuned/<model>_<dataset>.yaml``) when there is one, then ``overrides``
    (``"trainer.lambda_=1e-5"``, ``"coding.n_anchors=20"``).  The data's preprocessing
    (scaling) is the dataset's, not the estimator's: load it with
    ``llc_bench.data.load_dataset(dataset)``.  Its class is the preset's own where the
    package has one (``sapl``: SAPLClassifier), else its trainer's: ``SearchCV(estimator,
    space=model)`` then searches as the run does."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from llc_bench.experiment.runner import build_estimator

    chosen = [f"model={model}", f"seed={seed}", "tune=off"]
    chosen += [f"dataset={dataset}"] if dataset else ["~tuned"]
    with initialize_config_module("llc_bench.conf", version_base="1.3"):
        config = compose("run", overrides=[*chosen, *overrides])
    return build_estimator(OmegaConf.to_container(config, resolve=True))
