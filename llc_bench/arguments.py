"""Deprecated: ``llc_bench.arguments`` is now ``llc_bench.cli.arguments``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.cli.arguments as _new

warnings.warn("llc_bench.arguments is deprecated: import llc_bench.cli.arguments",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
