"""Deprecated: ``llc_bench.tables.command`` is now ``llc_bench.cli.tables``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.cli.tables as _new

warnings.warn("llc_bench.tables.command is deprecated: import llc_bench.cli.tables",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
