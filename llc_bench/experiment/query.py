"""Deprecated: ``llc_bench.experiment.query`` is now ``llc_bench.store.query``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.store.query as _new

warnings.warn("llc_bench.experiment.query is deprecated: "
              "import llc_bench.store.query",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
