"""Orthogonal coordinate coding (Zhang et al., NIPS 2011) and OCCClassifier."""

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import compose_run
from sklearn.datasets import make_classification

from llc_bench.coding.occ import as_local_code, fit_bases, fit_basis, occ_codes
from llc_bench.errors import ConfigError
from llc_bench.experiment.runner import build_estimator
from llc_bench.models.kronecker import build_kronecker
from llc_bench.models.occ import OCCClassifier


def _data(n=300, d=8, classes=3, seed=0):
    X, y = make_classification(n, d, n_informative=min(d, 6), n_redundant=0, n_classes=classes,
                               n_clusters_per_class=2, random_state=seed)
    return X, y


# ------------------------------------------------------------------ basis and codes


def occ_kronecker(X, G):
    """z = γ ⊗ x (eq. 9's features, one shared bias)."""
    return build_kronecker(X, as_local_code(G), G.shape[1], append_one=False)


@pytest.mark.parametrize("svd", ["full", "randomized"])
def test_basis_is_orthogonal_and_scaled_by_singular_values(svd):
    X = np.random.default_rng(0).normal(size=(200, 12))
    b = fit_basis(X, 5, svd=svd, random_state=0)
    np.testing.assert_allclose(b.vectors @ b.vectors.T, np.eye(5), atol=1e-10)
    C = b.planes  # the paper's C = V Σ as rows: orthogonal, norms σ
    np.testing.assert_allclose(C @ C.T, np.diag(b.singular_values**2), atol=1e-8)
    s = np.linalg.svd(X, compute_uv=False)
    np.testing.assert_allclose(b.singular_values, s[:5], rtol=1e-6)
    # feature-space vectors: the right singular vectors of the N x D matrix
    _, _, Vt = np.linalg.svd(X, full_matrices=False)
    np.testing.assert_allclose(np.abs(b.vectors @ Vt[:5].T), np.eye(5), atol=1e-6)


def test_codes_have_unit_l1_norm_and_follow_eq_II():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(100, 6))
    b = fit_basis(X, 4, svd="full")
    G = b.encode(X)
    np.testing.assert_allclose(np.abs(G).sum(axis=1), 1.0)
    assert (G < 0).any()  # signed
    # γ̃ = (CᵀC)⁻¹Cᵀx with C = VΣ (columns), then l1-normalised
    C = b.planes.T
    raw = np.linalg.solve(C.T @ C, C.T @ X.T).T
    np.testing.assert_allclose(G, raw / np.abs(raw).sum(axis=1, keepdims=True), atol=1e-12)
    zero = occ_codes(np.zeros((2, 6)), b.vectors, b.singular_values)
    assert not zero.any()  # γ̃ = 0 -> γ = 0
    np.testing.assert_allclose(occ_codes(sp.csr_matrix(X), b.vectors, b.singular_values), G)


def test_n_basis_capped_at_the_rank():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 3)) @ rng.normal(size=(3, 10))  # rank 3
    b = fit_basis(X, 8, svd="full")
    assert (b.M, b.rank, b.requested) == (3, 3, 8)
    est = OCCClassifier(n_basis=8, random_state=0).fit(X, (X[:, 0] > 0).astype(int))
    assert est.fit_info_["model_size"]["n_basis"] == [3]
    assert "capped" in est.fit_info_["notes"][0]
    with pytest.raises(ConfigError):
        fit_basis(X, 2, svd="qr")


def test_c_occ_uses_only_positive_class_rows():
    X, y = _data()
    bases = fit_bases(X, y, 3, "class", 4, svd="full")
    for c, b in enumerate(bases):
        ref = fit_basis(X[y == c], 4, svd="full")
        np.testing.assert_allclose(b.vectors, ref.vectors)
        assert b.n_rows == np.sum(y == c)
    # changing the other classes' rows leaves class 0's basis (and its codes) alone
    X2 = X.copy()
    X2[y != 0] = np.random.default_rng(3).normal(size=((y != 0).sum(), X.shape[1]))
    est1 = OCCClassifier(variant="class", n_basis=4, random_state=0).fit(X, y)
    est2 = OCCClassifier(variant="class", n_basis=4, random_state=0).fit(X2, y)
    np.testing.assert_allclose(est1.codes(X, 0), est2.codes(X, 0))
    assert not np.allclose(est1.codes(X, 1), est2.codes(X, 1))
    # binary: one problem, its positive class is classes_[1]
    yb = np.where(y == 2, "b", "a")
    est = OCCClassifier(variant="class", n_basis=4, random_state=0).fit(X, yb)
    assert len(est.bases_) == 1 and est.bases_[0].n_rows == np.sum(y == 2)


# ------------------------------------------------------------- features, decision


def test_kronecker_features_dense_and_sparse():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(7, 5))
    X[X < 0.3] = 0.0
    G = rng.normal(size=(7, 3))
    ref = np.stack([np.kron(g, x) for g, x in zip(G, X, strict=True)])
    np.testing.assert_allclose(occ_kronecker(X, G).toarray(), ref)
    Z = occ_kronecker(sp.csr_matrix(X), G)
    np.testing.assert_allclose(Z.toarray(), ref)
    assert Z.nnz == 3 * np.count_nonzero(X)


def _reference_scores(est, X):
    """f_c(x) = γ_c(x)ᵀ (W_c x + b_c) + intercept_c, one sample at a time (dense, slow)."""
    n_out = est.intercept_.shape[0]
    F = np.zeros((X.shape[0], n_out))
    for i, x in enumerate(X):
        for c in range(n_out):
            basis = est.bases_[0 if len(est.bases_) == 1 else c]
            g = (basis.vectors @ x) / basis.singular_values
            g = g / np.abs(g).sum()
            h = est.b_[c, : basis.M].copy()
            if est.W_ is not None:
                h += est.W_[c, : basis.M] @ x
            F[i, c] = g @ h + est.intercept_[c]
    return F


@pytest.mark.parametrize("variant", ["global", "class"])
@pytest.mark.parametrize("features,solver", [("kronecker", "liblinear"), ("kronecker", "sgd"),
                                             ("codes", "liblinear"), ("codes", "sgd")])
def test_decision_values_match_dense_reference(variant, features, solver):
    X, y = _data(120, 5)
    est = OCCClassifier(variant=variant, n_basis=3, features=features, solver=solver, epochs=2,
                        random_state=0).fit(X, y)
    np.testing.assert_allclose(est.decision_function(X[:20]), _reference_scores(est, X[:20]),
                               atol=1e-10)
    if solver == "liblinear":  # eq. (9): one shared bias, no per-basis bias
        assert not est.b_.any() or features == "codes"
        assert est.intercept_.all()
    else:  # PEG: LL-SVM's per-basis biases, no shared one
        assert not est.intercept_.any()


@pytest.mark.parametrize("features", ["kronecker", "codes"])
def test_per_basis_intercept_with_liblinear(features):
    X, y = _data(120, 5)
    est = OCCClassifier(n_basis=3, features=features, intercept="per_basis", random_state=0)
    est.fit(X, y)
    assert not est.intercept_.any() and est.b_.any()
    np.testing.assert_allclose(est.decision_function(X[:20]), _reference_scores(est, X[:20]),
                               atol=1e-10)


def test_liblinear_weights_are_the_model_on_z():
    X, y = _data(150, 4, classes=2)
    est = OCCClassifier(n_basis=3, random_state=0).fit(X, y)
    Z = occ_kronecker(X, est.codes(X)).toarray()
    w = est.W_[0].ravel()
    np.testing.assert_allclose(est.decision_function(X), Z @ w + est.intercept_[0], atol=1e-10)


def test_liblinear_and_sgd_agree_in_accuracy():
    # the same objective: LL-SVM's per-basis biases, hinge, C = 1/(λN)
    X, y = make_classification(3000, 8, n_informative=6, n_redundant=0, n_classes=3,
                               random_state=6)
    Xt, yt, X, y = X[2000:], y[2000:], X[:2000], y[:2000]
    lam = 1e-3
    lib = OCCClassifier(n_basis=6, C=1 / (lam * len(y)), loss="hinge", intercept="per_basis",
                        random_state=0).fit(X, y)
    sgd = OCCClassifier(n_basis=6, solver="sgd", lambda_=lam, epochs=30, random_state=0).fit(X, y)
    a_lib, a_sgd = lib.score(Xt, yt), sgd.score(Xt, yt)
    assert a_lib > 0.8
    assert abs(a_lib - a_sgd) <= 0.01, (a_lib, a_sgd)
    assert lib.fit_info_["solver"]["features"] == "gamma(x) kron [x; 1]"


def test_subsample_when_z_exceeds_max_nnz():
    X, y = _data(400, 6)
    est = OCCClassifier(n_basis=4, max_nnz=2000, random_state=3).fit(X, y)
    info = est.fit_info_["solver"]
    assert info["subsampled"] and info["of_rows"] == 400
    assert info["n_rows"] == 2000 // 24
    assert info["estimated_nnz"] == 400 * 4 * 6
    assert "subsample" in est.fit_info_["notes"][0]
    again = OCCClassifier(n_basis=4, max_nnz=2000, random_state=3).fit(X, y)
    np.testing.assert_array_equal(est.W_, again.W_)


def test_sparse_input_matches_dense():
    X, y = _data(200, 6)
    X[np.abs(X) < 0.5] = 0.0
    kw = dict(n_basis=4, svd="full", skip=16, random_state=0)  # SVMSGD2's skip rule differs for CSR
    for solver in ("liblinear", "sgd"):
        d = OCCClassifier(solver=solver, **kw).fit(X, y)
        s = OCCClassifier(solver=solver, **kw).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(d.decision_function(X), s.decision_function(sp.csr_matrix(X)),
                                   atol=1e-6)


def test_sgd_history_and_fit_info():
    X, y = _data(300, 6)
    est = OCCClassifier(variant="class", n_basis=4, solver="sgd", epochs=3, random_state=0)
    est.fit(X[:200], y[:200], eval_set=(X[200:], y[200:]))
    h = est.fit_info_["history"]
    assert [e["epoch"] for e in h] == [1, 2, 3]
    assert {"objective", "train_accuracy", "test_accuracy", "train_hinge"} <= set(h[-1])
    runs = est.fit_info_["solver"]["runs"]  # one SGD run per class (anchor planes per class)
    for run in runs:  # each keeps its epoch of lowest objective, never worse than its start
        objectives = [run["start_objective"], *run["epoch_objectives"]]
        assert objectives[run["kept_epoch"]] == min(objectives)
    # one class keeps epoch 2, so the model mixes epochs and differs from the history's last
    assert sorted(run["kept_epoch"] for run in runs) == [2, 3, 3]
    t = est.fit_info_["timings"]
    assert t["total"] == pytest.approx(t["basis"] + t["encode"] + t["build"] + t["train"])
    assert len(est.fit_info_["solver"]["runs"]) == 3
    assert est.fit_info_["model_size"]["n_basis"] == [4, 4, 4]


def test_cv_selects_C_from_the_grid():
    X, y = _data(200, 5)
    est = OCCClassifier(n_basis=3, features="codes", C=None, C_grid=(0.1, 10.0), cv_folds=3,
                        random_state=0).fit(X, y)
    cv = est.fit_info_["cv"]
    C = cv["params"][cv["best_index"]]["C"]
    assert C in (0.1, 10.0) and cv["param_C"] == [0.1, 10.0]
    assert est.fit_info_["solver"]["C"] == C == est.fit_info_["selected"]["C"]


def test_variant_coding_and_bad_parameters():
    X, y = _data(100, 4)
    assert len(OCCClassifier(coding="occ_class", n_basis=2).fit(X, y).bases_) == 3
    assert len(OCCClassifier(n_basis=2).fit(X, y).bases_) == 1
    for bad in (dict(variant="class", coding="occ_global"), dict(coding="occ"),
                dict(variant="local"), dict(n_basis=0), dict(features="both"),
                dict(solver="newton"), dict(loss="log"), dict(C=0.0), dict(lambda_=-1.0),
                dict(t0="soon"), dict(bias_scale=-1), dict(skip=0), dict(intercept="none"),
                dict(solver="sgd", intercept="shared")):
        with pytest.raises(ValueError):
            OCCClassifier(**bad).fit(X, y)


def test_sgd_kernel_handles_signed_dense_codes():
    from reference_sgd import sgd_epoch_reference

    from llc_bench.models.sgd_epoch import labels_matrix, run_epoch

    X, y = _data(150, 5)
    code = as_local_code(fit_basis(X, 4, svd="full").encode(X))
    assert (code.weights < 0).any()
    Y = labels_matrix(y, 3)
    Wk, bk = np.zeros((3, 4, 5)), np.zeros((3, 4))
    Wr, br = Wk.copy(), bk.copy()
    order = np.random.default_rng(0).permutation(150)
    kw = dict(lambda_=0.01, t0=20.0, skip=4, bias_scale=0.5)
    assert run_epoch(X, Y, code, order, Wk, bk, 0, 4, **kw) == \
        sgd_epoch_reference(X, Y, code, order, Wr, br, 0, 4, **kw)
    np.testing.assert_allclose(Wk, Wr, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(bk, br, rtol=1e-10, atol=1e-10)
    assert np.abs(Wk).sum() > 0


def test_dense_codes_as_local_code():
    G = np.random.default_rng(6).normal(size=(4, 3))
    code = as_local_code(G)
    assert code.k == 3 and code.indices.dtype == np.int32
    np.testing.assert_array_equal(code.to_dense(3), G)


@pytest.mark.parametrize("model,features,solver,variant", [
    ("occ_lib_g", "kronecker", "liblinear", "occ_global"),
    ("occ_lib_c", "kronecker", "liblinear", "occ_class"),
    ("occ_peg_g", "kronecker", "sgd", "occ_global"),
    ("occ_peg_c", "kronecker", "sgd", "occ_class"),
    ("occ_linear_g", "codes", "liblinear", "occ_global"),
    ("occ_linear_c", "codes", "liblinear", "occ_class"),
])
def test_runner_presets(tmp_path, model, features, solver, variant):
    est = build_estimator(compose_run(f"model={model}", "dataset=banana", tmp_path=tmp_path))
    assert isinstance(est, OCCClassifier)
    assert (est.features, est.solver, est.coding) == (features, solver, variant)


def test_eq9_is_even_in_x():
    X, y = _data(200, 4)
    est = OCCClassifier(n_basis=3, random_state=0).fit(X, y)
    np.testing.assert_allclose(est.decision_function(-X), est.decision_function(X), atol=1e-10)
    odd = OCCClassifier(n_basis=3, intercept="per_basis", random_state=0).fit(X, y)
    assert not np.allclose(odd.decision_function(-X), odd.decision_function(X))


