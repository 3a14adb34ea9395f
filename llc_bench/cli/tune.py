"""`llc-bench tune MODEL DATASET`: select a model's hyper-parameters, write the preset."""

from __future__ import annotations

from llc_bench.cli import check_choices
from llc_bench.cli.arguments import command_parser
from llc_bench.errors import ConfigError


def tune_command(argv: list[str]) -> None:
    """Select a model's hyper-parameters on a dataset's training split (the procedure of
    tune=auto, space conf/search/MODEL.yaml) and write them as the preset
    conf/tuned/MODEL_DATASET.yaml, with the command, space, budget, seed and scores in its
    header. An existing preset is the first trial and is replaced only by a setting that
    scores at least as well. With --from-sweep, the best trial of the Optuna study of a
    sweep (llc-bench run -m model=MODEL dataset=DATASET +search=MODEL
    +dataset.validation=F) is written instead."""
    from llc_bench.selection.tuning import tune_preset, write_tuned

    parser = command_parser("tune", tune_command.__doc__)
    parser.add_argument("model", help="a model preset, e.g. llsvm")
    parser.add_argument("dataset", help="a dataset config, e.g. usps")
    parser.add_argument("overrides", nargs="*", default=[],
                        help="run overrides, e.g. tune.trials=60 data.mirrors=[DIR]")
    parser.add_argument("--seed", type=int, default=0, help="split and search seed (0)")
    parser.add_argument("--out", help="write here instead of conf/tuned/")
    parser.add_argument("--force", action="store_true", help="replace an existing --out file")
    parser.add_argument("--preset-keys", action="store_true",
                        help="search only the keys the existing preset sets (a table preset: "
                        "the paper's fixed settings stay fixed)")
    parser.add_argument("--from-sweep", action="store_true",
                        help="search nothing: write the best trial of the sweep's Optuna study "
                        "(the overrides: the sweep's, where several studies of the model on "
                        "the dataset are stored; --force replaces an existing preset)")
    parser.add_argument("--results-dir", default="results-scratch",
                        help="with --from-sweep: the store holding optuna.db "
                        "(default: results-scratch)")
    args = parser.parse_intermixed_args(argv)
    check_choices([f"model={args.model}", f"dataset={args.dataset}", *args.overrides])
    if args.dataset == "file" and args.out is None:
        raise ConfigError(f"dataset=file stands for every own file: conf/tuned/{args.model}_"
                          "file.yaml would apply to all of them; a run on own files selects "
                          "its settings itself (tune=auto, the default), or write this "
                          "selection elsewhere with --out FILE and give its values as overrides")
    if args.from_sweep:
        if args.preset_keys:
            raise ConfigError("--from-sweep writes the study's best trial as it is: no "
                              "--preset-keys")
        path = write_tuned(args.results_dir, args.model, args.dataset, args.seed, args.out,
                           args.force, overrides=tuple(args.overrides))
    else:
        path, _ = tune_preset(args.model, args.dataset, seed=args.seed,
                              overrides=tuple(args.overrides), out=args.out, force=args.force,
                              preset_keys=args.preset_keys)
    print(path.read_text(), end="")
    print(f"wrote {path}")
