"""Deprecated: ``llc_bench.experiment.onnx_export`` is now ``llc_bench.serving.onnx_export``
(an alias kept for one release)."""

import sys
import warnings

import llc_bench.serving.onnx_export as _new

warnings.warn("llc_bench.experiment.onnx_export is deprecated: "
              "import llc_bench.serving.onnx_export",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _new
