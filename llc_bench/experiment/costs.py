"""Deprecated: ``llc_bench.experiment.costs`` is now ``llc_bench.store.costs``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.store.costs as _new

warnings.warn("llc_bench.experiment.costs is deprecated: "
              "import llc_bench.store.costs",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
