"""Deprecated: ``llc_bench.experiment.selection`` is now ``llc_bench.selection.selection``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.selection.selection as _new

warnings.warn("llc_bench.experiment.selection is deprecated: "
              "import llc_bench.selection.selection",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
