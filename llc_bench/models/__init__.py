"""The estimators, one per method (scikit-learn's ``fit / predict / decision_function``).

The locally linear models: :class:`LLSVMClassifier` (Ladický & Torr 2011),
:class:`SAPLClassifier` (LLC-SAPL), :class:`JOClassifier` (LLC-JO),
:class:`LCCSVMClassifier` (LCC+SVM), :class:`ML3Classifier` (Fornoni et al. 2013),
:class:`OCCClassifier` (OCC anchor planes), :class:`LDKLClassifier` (Jose et al. 2013),
:class:`ClusteredSVMClassifier` (Gu & Han 2013), :class:`SVMKNNClassifier` (Zhang et al.
2006), :class:`LCCLinearSVMClassifier` (a linear SVM on LLC codes),
:class:`LCCLassoSVMClassifier` (a linear SVM on LCC's own codes); the baselines
:class:`LinearSVMClassifier`, :class:`KernelSVMClassifier` and
:class:`NystroemSVMClassifier`.  ``llc_bench.selection.presets.from_preset`` builds the
estimator a run of a model preset (and a dataset's tuned preset) would build, and
``llc_bench.serving.load`` the fitted estimator of a model file (``llc-bench run ...
save_model=true``).
"""

from .csvm import ClusteredSVMClassifier  # noqa: F401
from .kernel import KernelSVMClassifier  # noqa: F401
from .lcc_lasso import LCCLassoSVMClassifier  # noqa: F401
from .lcc_linear import LCCLinearSVMClassifier  # noqa: F401
from .ldkl import LDKLClassifier  # noqa: F401
from .linear import LinearSVMClassifier  # noqa: F401
from .llsvm import JOClassifier, LCCSVMClassifier, LLSVMClassifier, SAPLClassifier  # noqa: F401
from .ml3 import ML3Classifier, select_lambda  # noqa: F401
from .nystroem import NystroemSVMClassifier  # noqa: F401
from .occ import OCCClassifier  # noqa: F401
from .svm_knn import SVMKNNClassifier  # noqa: F401


def load(path):
    """Deprecated (kept for one release): use :func:`llc_bench.serving.load`."""
    import warnings

    from llc_bench.serving import load as _load  # the alias's one edge up (tests/test_layers)

    warnings.warn("llc_bench.models.load is deprecated: use llc_bench.serving.load",
                  DeprecationWarning, stacklevel=2)
    return _load(path)
