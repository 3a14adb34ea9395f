"""`llc-bench models [NAME]`: the model presets, or one preset's parameters."""

from __future__ import annotations

from llc_bench.cli.arguments import command_parser
from llc_bench.selection.presets import (
    _conf,
    first_sentence,
    header,
    one_line,
    preset_info,
    preset_names,
)


def _table(rows: list[dict], columns: list[tuple[str, str]]) -> list[str]:
    widths = {key: max(len(title), *(len(str(r[key])) for r in rows)) for key, title in columns}
    lines = ["  ".join(f"{title:<{widths[key]}}" for key, title in columns).rstrip()]
    lines += ["  ".join(f"{r[key]!s:<{widths[key]}}" for key, _ in columns).rstrip()
              for r in rows]
    return lines


def models_command(argv: list[str], echo=print) -> None:
    """`llc-bench models [NAME]`: the model presets, or one preset's parameters."""
    parser = command_parser(
        "models", "List the model presets (conf/model/*.yaml), or show one preset's "
        "parameters: default, allowed values, what tune=auto searches, and what each does.")
    parser.add_argument("name", nargs="?", help="a model preset, e.g. llsvm")
    args = parser.parse_args(argv)
    if args.name is None:
        from omegaconf import OmegaConf

        rows = []
        for name in preset_names():
            text = _conf("model", f"{name}.yaml").read_text()
            groups = {}
            for entry in OmegaConf.create(text).get("defaults") or []:
                for key, value in dict(entry).items():
                    groups[key.rsplit("/", 1)[-1]] = value
            rows.append({"name": name, "trainer": groups.get("trainer", ""),
                         "coding": groups.get("coding", ""),
                         "about": one_line(first_sentence(header(text)))})
        for line in _table(rows, [("name", "model"), ("trainer", "trainer"),
                                  ("coding", "coding"), ("about", "what it is")]):
            echo(line)
        echo("`llc-bench models NAME` shows a preset's parameters; use it with "
             "`llc-bench run model=NAME`.")
        return
    info = preset_info(args.name)
    echo(f"{info['name']}: {info['about']}")
    if info["paper"]:
        echo(f"paper      {info['paper']}")
    echo(f"estimator  {info['estimator']}: trainer {info['trainer']}, coding {info['coding']}")
    echo("")
    columns = [("key", "parameter"), ("default", "default"), ("allowed", "allowed")]
    if any(r["searched"] for r in info["rows"]):
        columns.append(("searched", "tune=auto searches"))
    for line in _table(info["rows"], [*columns, ("description", "description")]):
        echo(line)
    echo("")
    if info["rows"]:
        keys = [r["key"] for r in info["rows"]]
        searched = [r["key"] for r in info["rows"] if r["searched"]]
        key = "coding.n_anchors" if "coding.n_anchors" in keys else (searched or keys)[0]
        echo(f"Set one on the command line: llc-bench run model={info['name']} "
             f"{key}=VALUE. A per-dataset preset conf/tuned/{info['name']}_<dataset>"
             ".yaml, where there is one, replaces some defaults; the command line wins over "
             "both, and tune=auto leaves the keys you set alone.")
