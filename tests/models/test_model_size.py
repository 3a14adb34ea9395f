"""One fitted-model report: every estimator's ``fit_info_["model_size"]`` has
``n_parameters`` (the weights and biases its decision function uses; the points it is
anchored on - anchors, centres, landmarks, support vectors, stored rows - count apart),
``n_outputs`` and ``n_features``."""

import inspect

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.datasets import make_classification

import llc_bench.models as models

#: small settings that fit 60 rows in well under a second
SMALL = {
    "ClusteredSVMClassifier": dict(n_clusters=3, C=1.0),
    "KernelSVMClassifier": dict(C=1.0, gamma=0.5),
    "LCCLassoSVMClassifier": dict(n_anchors=6, C=1.0),
    "LCCLinearSVMClassifier": dict(n_anchors=6, k=3, C=1.0),
    "LDKLClassifier": dict(depth=2, n_iter=200, history=False),
    "LinearSVMClassifier": dict(C=1.0),
    "LLSVMClassifier": dict(n_anchors=6, k=3, epochs=2, history=False, random_state=0),
    "JOClassifier": dict(n_anchors=6, k=3, epochs=2, history=False, random_state=0),
    "LCCSVMClassifier": dict(n_anchors=6, k=3, epochs=2, history=False, random_state=0),
    "SAPLClassifier": dict(n_anchors=6, k=3, epochs=2, history=False, random_state=0),
    "ML3Classifier": dict(n_models=2, n_iter=3, random_state=0),
    "NystroemSVMClassifier": dict(n_components=10, gamma=0.5, C=1.0),
    "OCCClassifier": dict(n_basis=2, random_state=0),
    "SVMKNNClassifier": dict(n_neighbors=5, C=1.0),
}

ESTIMATORS = sorted(name for name, cls in vars(models).items()
                    if inspect.isclass(cls) and issubclass(cls, BaseEstimator))


def _size(a) -> int:
    return int(np.size(a))


#: the fitted arrays of the decision function's weights and biases, where easy to state
COUNTED = {
    "LinearSVMClassifier": lambda m: _size(m.coef_) + _size(m.intercept_),
    "ClusteredSVMClassifier": lambda m: _size(m.coef_) + _size(m.intercept_),
    "LCCLinearSVMClassifier": lambda m: _size(m.coef_) + _size(m.intercept_),
    "LCCLassoSVMClassifier": lambda m: _size(m.coef_) + _size(m.intercept_),
    "NystroemSVMClassifier": lambda m: _size(m.coef_) + _size(m.intercept_),
    "LLSVMClassifier": lambda m: _size(m.W_) + _size(m.b_),
    "JOClassifier": lambda m: _size(m.W_) + _size(m.b_),
    "SAPLClassifier": lambda m: _size(m.W_) + _size(m.b_),
    "LCCSVMClassifier": lambda m: _size(m.b_),  # codes only: use_W=False
    "ML3Classifier": lambda m: _size(m.W_),
    "LDKLClassifier": lambda m: _size(m.W_) + _size(m.theta_) + _size(m.theta_prime_),
    "OCCClassifier": lambda m: _size(m.b_) + _size(m.intercept_)
    + (0 if m.W_ is None else _size(m.W_)),
    "KernelSVMClassifier": lambda m: _size(m.svc_.dual_coef_) + _size(m.svc_.intercept_),
    "SVMKNNClassifier": lambda m: 0,  # lazy: its local SVMs are trained at prediction
}


def test_every_estimator_is_covered():
    assert set(ESTIMATORS) == set(SMALL)
    assert {"LinearSVMClassifier", "LLSVMClassifier", "ML3Classifier"} <= set(COUNTED)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ESTIMATORS)
def test_model_size_has_the_common_keys(name, n_classes):
    X, y = make_classification(n_samples=60, n_features=3, n_informative=3, n_redundant=0,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=0)
    model = getattr(models, name)(**SMALL[name]).fit(X, y)
    size = model.fit_info_["model_size"]
    assert {"n_parameters", "n_outputs", "n_features"} <= set(size)
    assert not {"n_params", "n_weights"} & set(size)
    assert size["n_features"] == 3
    assert all(isinstance(size[k], int) for k in ("n_parameters", "n_outputs"))
    if name in COUNTED:
        assert size["n_parameters"] == COUNTED[name](model)
