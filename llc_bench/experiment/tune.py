"""Deprecated: ``llc_bench.experiment.tune`` is now ``llc_bench.selection.tune``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.selection.tune as _new

warnings.warn("llc_bench.experiment.tune is deprecated: "
              "import llc_bench.selection.tune",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
