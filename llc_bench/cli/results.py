"""`llc-bench results`: list, filter and export the run records."""

from __future__ import annotations

import sys

from llc_bench.cli.arguments import command_parser
from llc_bench.errors import ConfigError, did_you_mean
from llc_bench.store.query import (
    display_frame,
    records_frame,
    summary,
    summary_text,
    varying_columns,
    write_csv,
    write_parquet,
)
from llc_bench.store.results import ResultsStore


def results_command(argv: list[str], echo=print) -> None:
    """`llc-bench results`: list, filter and export the run records."""
    parser = command_parser(
        "results", "List the run records of a results store as a table (filtered), or "
        "export them with the run config flattened into dotted columns.")
    parser.add_argument("--results-dir", default="results-scratch",
                        help="results store (default: results-scratch, where `llc-bench run` "
                        "writes; the committed records of the tables: results)")
    parser.add_argument("--dataset", action="append", default=[], metavar="NAME",
                        help="only this dataset (repeatable)")
    parser.add_argument("--model", action="append", default=[], metavar="NAME",
                        help="only this model preset (repeatable)")
    parser.add_argument("--where", action="append", default=[], metavar="KEY=VALUE",
                        help="keep records whose column matches (=, !=, <, <=, >, >=; "
                        "repeatable, all must hold), e.g. trainer.lambda_=1e-5")
    parser.add_argument("--columns", default="", metavar="A,B",
                        help="the config columns to show, e.g. trainer.lambda_,coding.n_anchors "
                        "(default: those whose values differ among the records shown)")
    parser.add_argument("--summary", action="store_true",
                        help="one row per setting: its runs over seeds, test accuracy mean "
                        "and standard deviation (validation accuracy apart, for runs scored "
                        "on held-out training rows), fit time (selection included) mean; "
                        "with --csv/--parquet, written there (accuracies as fractions)")
    parser.add_argument("--csv", metavar="PATH", help="write every column of the selection "
                        "(the whole config, metrics and the timings of every phase; with "
                        "--summary, the summary)")
    parser.add_argument("--parquet", metavar="PATH",
                        help="write every column as Parquet (needs pyarrow)")
    args = parser.parse_args(argv)
    if not ResultsStore(args.results_dir).runs.is_dir():
        raise ConfigError(f"--results-dir {args.results_dir}: no runs/ directory there")
    frame = records_frame(args.results_dir, datasets=args.dataset, models=args.model,
                          where=args.where,
                          warn=lambda m: print(f"llc-bench: warning: {m}", file=sys.stderr))
    extra = [c.strip() for c in args.columns.split(",") if c.strip()]
    unknown = [c for c in extra if c not in frame.columns]
    if unknown:
        raise ConfigError(f"--columns: no column {unknown[0]!r} in the records")
    varying = not extra
    if args.summary and (args.csv or args.parquet):
        table = summary(frame, extra or varying_columns(frame)) if not frame.empty else frame
        what = f"{len(table)} setting(s) of {len(frame)} record(s)"
    else:
        table, what = frame, f"{len(frame)} record(s)"
    if args.csv:
        echo(f"wrote {what} to {write_csv(table, args.csv)}")
    if args.parquet:
        echo(f"wrote {what} to {write_parquet(table, args.parquet)}")
    if args.csv or args.parquet:
        return
    if frame.empty:
        echo(f"no records match{_why_none(args)}")
        return
    extra = extra or varying_columns(frame)
    if args.summary:
        table = summary(frame, extra)
        echo(summary_text(table))
        echo(f"{len(table)} setting(s), {len(frame)} record(s) in {args.results_dir}")
        return
    echo(display_frame(frame, extra).to_string(index=False))
    echo(f"{len(frame)} record(s) in {args.results_dir}"
         + (f"; the config keys that differ among them: {', '.join(extra)} (--columns A,B "
            "shows others)" if varying and extra else ""))


def _why_none(args) -> str:
    """Why a filter matched nothing: a --dataset or --model value no record has (and the
    values there are), else that the filters hold on no record together."""
    every = records_frame(args.results_dir)
    for option, column in (("--dataset", "dataset"), ("--model", "model")):
        present = sorted(map(str, every[column].dropna().unique())) if column in every else []
        for value in getattr(args, column):
            if value not in present:
                hint = did_you_mean(value, present).strip(" ()")
                return (f": no record has {option} {value}"
                        f"{'; ' + hint if hint else ''} (the store holds "
                        f"{', '.join(present[:12]) or 'none'}"
                        f"{', ...' if len(present) > 12 else ''})")
    return f" all of the filters ({len(every)} record(s) in {args.results_dir})"
