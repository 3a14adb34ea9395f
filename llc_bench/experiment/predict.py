"""Deprecated: ``llc_bench.experiment.predict`` is now ``llc_bench.serving.predict``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.serving.predict as _new

warnings.warn("llc_bench.experiment.predict is deprecated: "
              "import llc_bench.serving.predict",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
