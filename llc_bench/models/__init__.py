"""The estimators, one per method (scikit-learn's ``fit / predict / decision_function``).

The locally linear models: :class:`LLSVMClassifier` (Ladický & Torr 2011),
:class:`SAPLClassifier` (LLC-SAPL), :class:`JOClassifier` (LLC-JO),
:class:`LCCSVMClassifier` (LCC+SVM), :class:`ML3Classifier` (Fornoni et al. 2013),
:class:`OCCClassifier` (OCC anchor planes), :class:`LDKLClassifier` (Jose et al. 2013),
:class:`ClusteredSVMClassifier` (Gu & Han 2013), :class:`SVMKNNClassifier` (Zhang et al.
2006), :class:`LCCLinearSVMClassifier` (a linear SVM on LLC codes),
:class:`LCCLassoSVMClassifier` (a linear SVM on LCC's own codes); the baselines
:class:`LinearSVMClassifier`, :class:`KernelSVMClassifier` and
:class:`NystroemSVMClassifier`.  ``llc_bench.experiment.presets.from_preset`` builds the
estimator a run of a model preset (and a dataset's tuned preset) would build, and
:func:`load` the fitted estimator of a model file (``llc-bench run ... save_model=true``).
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
    """The fitted estimator kept in a model file (``.llcm``).

    The reading (skops' safe format, the format-version and allow-list checks, one-line
    errors) is ``llc_bench.models.model_files.load_model``; its metadata (classes'
    label names, preprocessing, config hash) is ``load_model(path)[1]``.
    """
    from llc_bench.models.model_files import load_model  # the one reader

    return load_model(path)[0]
