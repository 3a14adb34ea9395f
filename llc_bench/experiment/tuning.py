"""Deprecated: ``llc_bench.experiment.tuning`` is now ``llc_bench.selection.tuning``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.selection.tuning as _new

warnings.warn("llc_bench.experiment.tuning is deprecated: "
              "import llc_bench.selection.tuning",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
