"""The fast LIBLINEAR input paths give bitwise the nodes and models of the slow ones.

Each test computes both paths in the same process: LIBLINEAR's own ``problem()`` on the
Kronecker CSR matrix (the committed path) against the nodes written straight from x and
the codes, and against :func:`csr_nodes`.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from liblinear.liblinearutil import parameter, problem, train

from llc_bench.coding.local import LocalCode
from llc_bench.models.kronecker import build_kronecker, kronecker_nodes
from llc_bench.models.liblinear_fit import csr_nodes, fit_liblinear, make_problem, seed_liblinear


def _code(n, m, k, seed=0):
    rng = np.random.default_rng(seed)
    idx = np.sort(np.argsort(rng.random((n, m)), axis=1)[:, :k], axis=1).astype(np.int32)
    w = rng.random((n, k))
    w[0, 1] = 0.0  # an inactive slot (adaptive_knn) stays an explicit zero entry
    return LocalCode(idx, w / w.sum(axis=1, keepdims=True))


def _same_nodes(nodes, prob):
    """Every node of ``nodes`` equals LIBLINEAR's (terminators: index only)."""
    np.testing.assert_array_equal(nodes.rowptr, prob.rowptr)
    ours, theirs = nodes.x_space, prob.x_space
    np.testing.assert_array_equal(ours["index"], theirs["index"])
    live = theirs["index"] != -1
    assert np.array_equal(ours["value"][live].view(np.int64), theirs["value"][live].view(np.int64))
    assert nodes.shape[1] == prob.n


@pytest.mark.parametrize("kind", ["dense", "csr", "codes", "no_one"])
def test_kronecker_nodes_equal_liblinear_problem(kind):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 6))
    X[3, 2] = 0.0
    if kind == "csr":
        X[rng.random(X.shape) < 0.5] = 0.0
        X = sp.csr_matrix(X)
        X.data[0] = 0.0  # an explicit zero is kept, as LIBLINEAR's problem() keeps it
    code = _code(40, 7, 3)
    include_x, append_one = kind != "codes", kind != "no_one"
    Z = build_kronecker(X, code, 7, include_x=include_x, append_one=append_one)
    prob = problem(np.zeros(40), Z)
    _same_nodes(kronecker_nodes(X, code, 7, include_x, append_one), prob)
    _same_nodes(csr_nodes(Z), prob)


@pytest.mark.parametrize("n_classes,bias", [(2, 1.0), (3, 0.0), (4, 1.0)])
def test_fit_liblinear_bitwise_as_problem(n_classes, bias):
    rng = np.random.default_rng(n_classes)
    X = rng.normal(size=(120, 5))
    y = rng.integers(0, n_classes, 120)
    X[y == 1] += 1.0
    W, b = fit_liblinear(X, y, C=0.7, bias=bias, seed=3)
    labels = np.where(y == 1, 1.0, -1.0) if n_classes == 2 else y.astype(float)
    options = "-s 3 -c 0.7 -q" + (" -B 1" if bias > 0 else "")
    seed_liblinear(3)
    ref = train(problem(labels, sp.csr_matrix(X)), parameter(options))
    seed_liblinear(3)
    ours = train(make_problem(labels, csr_nodes(X)), parameter(options))
    n_w = ref.get_nr_feature() + (1 if bias > 0 else 0)
    n_w *= 1 if n_classes == 2 else n_classes
    a = np.ctypeslib.as_array(ref.w, shape=(n_w,))
    assert np.array_equal(a, np.ctypeslib.as_array(ours.w, shape=(n_w,)))
    assert np.isfinite(W).all() and np.isfinite(b).all()


def test_llsvm_init_bitwise_and_opt_in_speed_parameters():
    """The default init (nodes from x and the codes) equals LIBLINEAR on the built z; the
    opt-in parameters change the anchors / init and say so in fit_info_."""
    from llc_bench.models import LLSVMClassifier
    from llc_bench.models.kronecker import liblinear_init, split_weights

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] * X[:, 1] > 0).astype(int) + (X[:, 2] > 1)
    kw = dict(n_anchors=12, k=3, epochs=1, history=False, random_state=0)
    base = LLSVMClassifier(**kw).fit(X, y)
    code = base.coding_.encode(X, base.anchors_)
    W, b, info = liblinear_init(X, code, y, 3, 12, 1e-4, random_state=5)
    Z = build_kronecker(X, code, 12)
    seed_liblinear(int(np.random.default_rng(5).integers(2**31)))
    ref = train(problem(y.astype(float), Z), parameter(f"-s 3 -c {info['C']:.17g} -q"))
    Wz = np.ctypeslib.as_array(ref.w, shape=(Z.shape[1] * 3,)).reshape(-1, 3).T
    W_ref, b_ref = split_weights(Wz, 12, 4)
    assert np.array_equal(W, W_ref) and np.array_equal(b, b_ref)
    assert len(info["iterations"]) == 3  # one dual CD run per one-vs-rest problem
    assert info["max_iter_reached"] == 2  # C = 1/(λN) = 33: two of them hit the cap

    fast = LLSVMClassifier(**kw, kmeans_sample=100, kmeans_tol=1e-2,
                           init_solver="l2_squared_hinge", init_eps=0.1).fit(X, y)
    assert fast.fit_info_["anchors"]["sample_rows"] == 100
    assert fast.fit_info_["anchors"]["tol"] == 1e-2
    assert "-s 2" in fast.fit_info_["init"]["solver"] and fast.fit_info_["init"]["eps"] == 0.1
    assert not np.array_equal(fast.anchors_, base.anchors_)
    assert fast.score(X, y) > 0.7
