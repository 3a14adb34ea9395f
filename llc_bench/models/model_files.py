"""Deprecated: ``llc_bench.models.model_files`` is now ``llc_bench.serving.model_files``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.serving.model_files as _new

warnings.warn("llc_bench.models.model_files is deprecated: "
              "import llc_bench.serving.model_files",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
