"""LCC codes (Yu, Zhang & Gong 2009: the weighted LASSO (L1)) and LCCLassoSVMClassifier."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import compose_run, xor
from reference_lcc import lcc_row_reference
from sklearn.linear_model import Lasso

import llc_bench.coding.local as local
from llc_bench.coding.lcc import lcc_codes, lcc_objective, update_anchors
from llc_bench.errors import ConfigError
from llc_bench.experiment.runner import build_estimator
from llc_bench.models.lcc_lasso import LCCLassoSVMClassifier
from llc_bench.models.linear import LinearSVMClassifier

#: converged to rounding: coordinate descent needs many sweeps on these ill-conditioned
#: problems (25 anchors in 6 dimensions)
EXACT = {"tol": 1e-12, "max_sweeps": 200_000}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(40, 6)), rng.normal(size=(25, 6))


def _problem(x, V, mu):
    """(L2) of one row: the Gram matrix, c = B x, the squared distances, the penalties."""
    d = ((V - x) ** 2).sum(axis=1)
    return V @ V.T, V @ x, d, 0.5 * mu * d


@pytest.mark.parametrize("mu,K", [(0.05, 3), (0.3, 8), (2.0, 25)])
def test_kernel_matches_the_numpy_reference(data, mu, K):
    X, V = data
    Z = lcc_codes(X, V, mu, n_candidates=K, tol=1e-9, max_sweeps=1000).toarray()
    for i, x in enumerate(X):
        G, c, d, _ = _problem(x, V, mu)
        ref = lcc_row_reference(G, c, d, np.argsort(d, kind="stable")[:K], np.linalg.norm(x),
                                0.5 * mu, 1e-9, 1000)
        np.testing.assert_allclose(Z[i], ref, rtol=0, atol=1e-10)


@pytest.mark.parametrize("mu", [0.02, 0.3, 3.0])
@pytest.mark.parametrize("sparse", [False, True])
def test_codes_satisfy_the_kkt_conditions_of_the_weighted_lasso(data, mu, sparse):
    X, V = data
    X = np.where(np.abs(X) < 0.3, 0.0, X)
    info = {}
    Z = lcc_codes(sp.csr_matrix(X) if sparse else X, V, mu, n_candidates=4, info=info, **EXACT)
    assert sp.issparse(Z) and Z.shape == (40, 25) and info["not_converged"] == 0
    Z = Z.toarray()
    for x, g in zip(X, Z, strict=True):
        G, c, _, lam = _problem(x, V, mu)
        grad = c - G @ g  # -∇ of the smooth part of (L2)
        on = g != 0
        np.testing.assert_allclose(grad[on], lam[on] * np.sign(g[on]), rtol=0, atol=1e-8)
        assert np.all(np.abs(grad[~on]) <= lam[~on] + 1e-8)
    assert (Z != 0).any() and (Z == 0).any()  # (at mu = 3 some rows code to 0: a valid LASSO)


def test_codes_do_not_change_when_the_candidate_set_grows(data):
    X, V = data
    info = {}
    small = lcc_codes(X, V, 0.1, n_candidates=2, info=info, **EXACT).toarray()
    assert info["rows_expanded"] > 0  # the working set had to grow beyond 2
    for K in (5, 12, 25):
        grown = lcc_codes(X, V, 0.1, n_candidates=K, **EXACT).toarray()
        np.testing.assert_allclose(grown, small, rtol=0, atol=1e-9)
    assert info["not_converged"] == 0


def test_same_problem_as_scikit_learn_lasso_on_rescaled_atoms(data):
    X, V = data
    mu = 0.3
    Z = lcc_codes(X[:5], V, mu, **EXACT).toarray()
    for x, g in zip(X[:5], Z, strict=True):
        _, _, _, lam = _problem(x, V, mu)
        # u_v = λ_v γ_v over atoms v / λ_v: ½||x - A u||² + ||u||_1, scikit-learn's α = 1 / D
        A = (V / lam[:, None]).T
        u = Lasso(alpha=1.0 / len(x), fit_intercept=False, tol=1e-14,
                  max_iter=100_000).fit(A, x).coef_
        np.testing.assert_allclose(u / lam, g, rtol=0, atol=1e-8)


def test_a_point_on_an_anchor_puts_all_weight_there(data):
    _, V = data
    Z = lcc_codes(V, V, 0.3, n_candidates=3).toarray()
    np.testing.assert_array_equal(Z, np.eye(len(V)))


def test_dense_sparse_chunked_agree(data, monkeypatch):
    X, V = data
    ref = lcc_codes(X, V, 0.3).toarray()
    monkeypatch.setattr(local, "CHUNK_ENTRIES", 7 * 25)  # 7-row chunks
    for Xin in (X, sp.csr_matrix(X)):
        np.testing.assert_allclose(lcc_codes(Xin, V, 0.3).toarray(), ref, rtol=0, atol=1e-12)


def test_objective_in_closed_form_matches_the_sum_over_rows(data):
    X, V = data
    Z = lcc_codes(X, V, 0.3)
    brute = sum(((x - z @ V) ** 2).sum() + 0.3 * (np.abs(z) * ((V - x) ** 2).sum(axis=1)).sum()
                for x, z in zip(X, Z.toarray(), strict=True))
    assert lcc_objective(X, Z, V, 0.3) == pytest.approx(brute, rel=1e-12)


def test_alternating_anchor_updates_never_raise_the_objective(data):
    X, V = data
    V = V.copy()
    V[0] = 50.0  # far from every row: no code uses it, so the codebook step keeps it
    last = np.inf
    for _ in range(4):
        Z = lcc_codes(X, V, 0.3, **EXACT)
        assert lcc_objective(X, Z, V, 0.3) <= last * (1 + 1e-12)
        V_new = update_anchors(X, Z, V, 0.3)
        last = lcc_objective(X, Z, V_new, 0.3)
        assert last <= lcc_objective(X, Z, V, 0.3) * (1 + 1e-12)
        np.testing.assert_array_equal(V_new[0], 50.0)
        V = V_new
    est = LCCLassoSVMClassifier(n_anchors=12, n_anchor_updates=3, C=1.0).fit(X, X[:, 0] > 0)
    assert len(est.objective_) == 3 and np.all(np.diff(est.objective_) <= 1e-9)


def test_bad_mu_is_a_config_error(data):
    X, V = data
    with pytest.raises(ConfigError, match="mu must be > 0"):
        lcc_codes(X, V, 0.0)


def test_solves_xor_where_a_linear_svm_cannot():
    X, y = xor(400)
    Xt, yt = xor(400, seed=1)
    linear = LinearSVMClassifier(C=1.0).fit(X, y).score(Xt, yt)
    est = LCCLassoSVMClassifier(n_anchors=32, mu=0.3, C_grid=(0.5, 8.0)).fit(X, y)
    assert linear < 0.7 and est.score(Xt, yt) > 0.9
    info = est.fit_info_
    assert set(info["timings"]) == {"anchors", "encode", "cv", "train"}
    assert info["coding"]["name"] == "lcc" and info["coding"]["train_codes"]["not_converged"] == 0
    assert info["model_size"]["n_anchors"] == 32


def test_runner_passes_the_lcc_coding_keys(tmp_path):
    cfg = compose_run("model=lcc_lasso", "coding.n_anchors=4096", "coding.mu=0.1", "seed=7",
                      tmp_path=tmp_path)
    est = build_estimator(cfg)
    assert isinstance(est, LCCLassoSVMClassifier)
    p = est.get_params()
    assert (p["n_anchors"], p["mu"], p["anchor_method"], p["random_state"]) == (
        4096, 0.1, "kmeans", 7)
    with pytest.raises(ConfigError, match=r"coding.mu=0: must be a finite float > 0"):
        build_estimator(compose_run("model=lcc_lasso", "coding.mu=0", tmp_path=tmp_path))


