"""Deprecated: ``llc_bench.experiment.results`` is now ``llc_bench.store.results``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.store.results as _new

warnings.warn("llc_bench.experiment.results is deprecated: "
              "import llc_bench.store.results",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
