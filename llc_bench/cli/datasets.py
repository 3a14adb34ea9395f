"""`llc-bench datasets [list | info NAME | fetch NAME | convert NAME]`."""

from __future__ import annotations

from llc_bench.cli import fail
from llc_bench.cli.arguments import command_parser
from llc_bench.errors import did_you_mean


def datasets_command(argv: list[str]) -> None:
    """`llc-bench datasets [list | info NAME | fetch NAME | convert NAME]`."""
    import json

    from llc_bench.data import dataset_spec, dataset_status, fetch_dataset, list_datasets

    parser = command_parser("datasets", "List, describe or fetch the datasets.")
    parser.add_argument("action", nargs="?", default="list", choices=["list", "info", "fetch",
                                                                  "convert"])
    parser.add_argument("name", nargs="?", help="a dataset name (see `llc-bench datasets list`)")
    parser.add_argument("--home", help="data home (default: $LLC_BENCH_DATA, ./datasets in a "
                        "checkout, else ~/.cache/llc-bench)")
    parser.add_argument("--mirror", action="append", default=[],
                        help="a read-only directory to look in before downloading (repeatable)")
    parser.add_argument("--no-download", action="store_true", help="never use the network")
    args = parser.parse_args(argv)
    if args.action != "list" and not args.name:
        parser.error(f"`{args.action}` needs a dataset NAME")
    if args.name == "file":
        fail("dataset=file is your own files, which this command does not read: `llc-bench "
             "run dataset=file dataset.train=PATH dataset.test=PATH ...` prints their sizes "
             "(conf/dataset/file.yaml lists the options)")
    if args.name and args.name not in list_datasets():
        fail(f"unknown dataset {args.name!r}{did_you_mean(args.name, list_datasets())} (see "
             "`llc-bench datasets list`)")
    where = {"home": args.home, "mirrors": tuple(args.mirror)}
    if args.action == "list":
        rows = [dataset_status(name, **where) for name in list_datasets()]
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            state = ("offline ok" if r["available"] else
                     "generated" if r["kind"] == "synthetic" else "download needed")
            print(f"{r['name']:<{width}}  {r['task']:<10}  {state:<15}  "
                  f"{dataset_spec(r['name']).get('description', '')}")
    elif args.action == "info":
        status = dataset_status(args.name, **where)
        print(json.dumps({"spec": dataset_spec(args.name), "status": status}, indent=1,
                         default=str))
    elif args.action == "convert":  # out-of-core datasets: once, resumable (data.stream)
        from llc_bench.data.stream import convert_dataset

        for part, done in convert_dataset(args.name, download=not args.no_download,
                                          **where).items():
            print(f"{part}: {done['rows']} rows in {done['path']} ({done['seconds']:.1f} s)")
    else:
        files = fetch_dataset(args.name, download=not args.no_download, **where)
        for role, paths in files.items():
            for path in paths:
                print(f"{role}: {path}")
