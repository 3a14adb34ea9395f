"""Deprecated: ``llc_bench.experiment.presets`` is now ``llc_bench.selection.presets``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.selection.presets as _new

warnings.warn("llc_bench.experiment.presets is deprecated: "
              "import llc_bench.selection.presets",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
