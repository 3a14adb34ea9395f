"""`python -m llc_bench.cli`: the console script (the package is imported once, and the
state Hydra's callback ``llc_bench.cli.RunCallback`` shares is its own)."""

from llc_bench.cli import main

main()
