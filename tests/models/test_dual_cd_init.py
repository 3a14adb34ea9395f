"""The ``dual_cd`` init: LIBLINEAR -s 3's dual coordinate descent on implicit
z = γ(x) ⊗ [x; 1] reaches the optimum LIBLINEAR reaches on the z it builds."""

import numba
import numpy as np
import pytest

from llc_bench.coding import InverseDistanceCoding
from llc_bench.models import LLSVMClassifier
from llc_bench.models.kronecker import liblinear_init
from llc_bench.models.sgd_epoch import labels_matrix, sgd_objective


def _data(n=300, D=4, m=12, k=3, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    y = (np.abs(X[:, 0] * X[:, 1]) * 2 + X[:, 2]).astype(int) % n_classes  # non-linear
    V = X[rng.choice(n, m, replace=False)]
    return X, y, InverseDistanceCoding(k=k).encode(X, V), m


def _primal(X, y, code, m, lam, W, b, use_W=True):
    return sgd_objective(X, labels_matrix(y, max(int(y.max()) + 1, 2)), code, W, b, lam,
                         use_W)[0]


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("use_W", [True, False])
def test_dual_cd_reaches_liblinears_optimum(n_classes, use_W):
    """Where LIBLINEAR converges at a tight tolerance (λ = 0.1), the weights agree."""
    X, y, code, m = _data(n_classes=n_classes)
    lam = 1e-1
    ref = liblinear_init(X, code, y, n_classes, m, lam, use_W=use_W, eps=1e-6, random_state=0)
    new = liblinear_init(X, code, y, n_classes, m, lam, use_W=use_W, eps=1e-6, random_state=0,
                         solver="dual_cd")
    assert ref[2]["max_iter_reached"] == 0 and new[2]["max_iter_reached"] == 0
    np.testing.assert_allclose(new[0], ref[0], atol=1e-6)
    np.testing.assert_allclose(new[1], ref[1], atol=1e-6)
    f_ref, f_new = (_primal(X, y, code, m, lam, W, b, use_W) for W, b in (ref[:2], new[:2]))
    assert abs(f_new - f_ref) <= 1e-7 * f_ref
    info = new[2]
    assert info["solver"].startswith("dual CD")
    assert len(info["iterations"]) == (1 if n_classes == 2 else n_classes)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_cd_converges_where_liblinear_hits_its_cap(n_classes):
    """At λ = 0.01 LIBLINEAR 2.50 stops at its 300-pass cap; dual_cd converges, to an
    objective no higher than LIBLINEAR's at any tolerance."""
    X, y, code, m = _data(n_classes=n_classes)
    lam = 1e-2
    new = liblinear_init(X, code, y, n_classes, m, lam, eps=1e-6, random_state=0,
                         solver="dual_cd")
    assert new[2]["max_iter_reached"] == 0
    f_new = _primal(X, y, code, m, lam, *new[:2])
    for eps in (1e-2, 1e-6):
        ref = liblinear_init(X, code, y, n_classes, m, lam, eps=eps, random_state=0)
        f_ref = _primal(X, y, code, m, lam, *ref[:2])
        assert f_new <= f_ref + 1e-9 and f_ref - f_new <= 1e-3 * f_ref


def test_dual_cd_default_tolerance_near_liblinear():
    """At LIBLINEAR's default eps both stop near the optimum (within 1% in the objective)."""
    X, y, code, m = _data(n=600, n_classes=4, seed=1)
    lam = 1e-3
    ref = liblinear_init(X, code, y, 4, m, lam, random_state=0)
    new = liblinear_init(X, code, y, 4, m, lam, random_state=0, solver="dual_cd")
    f_ref, f_new = (_primal(X, y, code, m, lam, W, b) for W, b in (ref[:2], new[:2]))
    assert abs(f_new - f_ref) <= 0.01 * f_ref


def test_dual_cd_same_numbers_on_one_and_two_threads():
    X, y, code, m = _data(n_classes=3)
    out = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        out.append(liblinear_init(X, code, y, 3, m, 1e-3, random_state=7, solver="dual_cd"))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_dual_cd_seeded_and_not_stuck_on_the_seed():
    X, y, code, m = _data(n_classes=3)
    a = liblinear_init(X, code, y, 3, m, 1e-3, random_state=1, solver="dual_cd")
    b = liblinear_init(X, code, y, 3, m, 1e-3, random_state=1, solver="dual_cd")
    c = liblinear_init(X, code, y, 3, m, 1e-3, random_state=2, solver="dual_cd")
    np.testing.assert_array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])  # another shuffle, another stopping point


def test_estimator_dual_cd_init_records_and_fits():
    X, y, _, _ = _data(n=400, n_classes=3)
    kw = dict(n_anchors=10, k=3, epochs=2, lambda_=1e-3, random_state=0)
    est = LLSVMClassifier(init_solver="dual_cd", **kw).fit(X, y)
    ref = LLSVMClassifier(**kw).fit(X, y)
    init = est.fit_info_["init"]
    assert init["solver"].startswith("dual CD") and init["n_rows"] == 400
    assert init["max_iter_reached"] == 0 and init["build_seconds"] == 0.0
    start, start_ref = (e.fit_info_["sgd"]["start_objective"] for e in (est, ref))
    assert abs(start - start_ref) <= 0.01 * start_ref
    assert abs(est.score(X, y) - ref.score(X, y)) <= 0.02


@pytest.mark.parametrize("use_W", [True, False])
def test_dual_cd_on_csr_equals_dense(use_W):
    """CSR x (unsorted column indices too) gives the dense numbers to rounding, in the
    same passes: the sparse row visits the same terms minus the zeros; and it reaches
    LIBLINEAR's optimum on the z LIBLINEAR builds from the CSR."""
    import scipy.sparse as sp

    X, y, code, m = _data(n_classes=3, D=6)
    X[np.random.default_rng(1).random(X.shape) < 0.6] = 0.0
    Xs = sp.csr_matrix(X)
    Xs.indices, Xs.data = Xs.indices.copy(), Xs.data.copy()
    for r in range(Xs.shape[0]):  # reverse each row's entries: unsorted indices
        a, b = Xs.indptr[r], Xs.indptr[r + 1]
        Xs.indices[a:b], Xs.data[a:b] = Xs.indices[a:b][::-1], Xs.data[a:b][::-1]
    Xs.has_sorted_indices = False
    kw = dict(use_W=use_W, random_state=3, solver="dual_cd")
    dense = liblinear_init(X, code, y, 3, m, 1e-2, **kw)
    sparse = liblinear_init(Xs, code, y, 3, m, 1e-2, **kw)
    np.testing.assert_allclose(sparse[0], dense[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(sparse[1], dense[1], rtol=0, atol=1e-12)
    assert sparse[2]["iterations"] == dense[2]["iterations"]
    assert sparse[2]["nnz"] < dense[2]["nnz"] or not use_W
    assert not Xs.has_sorted_indices  # the caller's matrix is left as it was
    lam = 1e-1
    ref = liblinear_init(Xs, code, y, 3, m, lam, use_W=use_W, eps=1e-6, random_state=0)
    new = liblinear_init(Xs, code, y, 3, m, lam, use_W=use_W, eps=1e-6, random_state=0,
                         solver="dual_cd")
    np.testing.assert_allclose(new[0], ref[0], atol=1e-6)
    np.testing.assert_allclose(new[1], ref[1], atol=1e-6)


def _dual_cd_reference(X, idx, gam, y, C, eps, max_iter, seed, m):
    """Hsieh et al. 2008 Alg. 1 with shrinking, in plain Python, one anchor's dot product
    at a time (the kernel's terms in the kernel's order: the same floats, bit for bit)."""
    mask = (1 << 64) - 1

    def xorshift(s):
        s ^= (s << 13) & mask
        s ^= s >> 7
        s ^= (s << 17) & mask
        return s

    n, k = idx.shape
    D = X.shape[1]
    Wb = np.zeros((m, D + 1))
    alpha = [0.0] * n
    QD = []
    for i in range(n):
        xx = 1.0
        for d in range(D):
            xx += X[i, d] * X[i, d]
        gg = 0.0
        for a in range(k):
            gg += gam[i, a] * gam[i, a]
        QD.append(gg * xx)
    state = (seed * 2654435761 + 0x9E3779B97F4A7C15) & mask
    index, active, it = list(range(n)), n, 0
    pg_max_old, pg_min_old = np.inf, -np.inf
    while it < max_iter:
        pg_max, pg_min = -np.inf, np.inf
        for s in range(active):
            state = xorshift(state)
            r = s + state % (active - s)
            index[s], index[r] = index[r], index[s]
        s = 0
        while s < active:
            i = index[s]
            f = 0.0
            for a in range(k):
                j, dot = idx[i, a], 0.0
                for d in range(D):
                    dot += Wb[j, d] * X[i, d]
                f += gam[i, a] * (Wb[j, D] + dot)
            G, PG = y[i] * f - 1.0, 0.0
            if alpha[i] == 0.0 and G > pg_max_old or alpha[i] == C and G < pg_min_old:
                active -= 1
                index[s], index[active] = index[active], i
                continue
            if alpha[i] == 0.0:
                PG = min(G, 0.0)
            elif alpha[i] == C:
                PG = max(G, 0.0)
            else:
                PG = G
            pg_max, pg_min = max(pg_max, PG), min(pg_min, PG)
            if abs(PG) > 1e-12:
                old = alpha[i]
                alpha[i] = min(max(old - G / QD[i], 0.0), C)
                step = (alpha[i] - old) * y[i]
                for a in range(k):
                    j, c = idx[i, a], step * gam[i, a]
                    for d in range(D):
                        Wb[j, d] += c * X[i, d]
                    Wb[j, D] += c
            s += 1
        it += 1
        if pg_max - pg_min <= eps:
            if active == n:
                break
            active, pg_max_old, pg_min_old = n, np.inf, -np.inf
            continue
        pg_max_old = pg_max if pg_max > 0.0 else np.inf
        pg_min_old = pg_min if pg_min < 0.0 else -np.inf
    return Wb, it


@pytest.mark.parametrize("k", [3, 8, 13])
def test_dual_cd_kernel_equals_plain_reference(k):
    """The kernel (its sums reassociated, so vectorised) gives the plain algorithm's
    numbers to rounding in the same passes, dense and CSR."""
    import scipy.sparse as sp

    from llc_bench.models._dual_cd_kernel import dual_cd_binary

    X, y_idx, code, m = _data(n=80, D=5, m=16, k=k, n_classes=2, seed=4)
    X[np.random.default_rng(2).random(X.shape) < 0.3] = 0.0
    y = np.where(y_idx == 1, 1.0, -1.0)
    idx, gam = np.ascontiguousarray(code.indices), np.ascontiguousarray(code.weights)
    ref, ref_it = _dual_cd_reference(X, idx, gam, y, 2.0, 0.01, 50, 7, m)
    Xs = sp.csr_matrix(X)
    empty_i, empty_f = np.empty(0, np.int64), np.empty(0)
    for args in [(X, empty_i, empty_i, empty_f),
                 (np.empty((0, 0)), Xs.indptr.astype(np.int64), Xs.indices.astype(np.int64),
                  Xs.data)]:
        Wb = np.zeros((m, X.shape[1] + 1))
        it = dual_cd_binary(*args, idx, gam, y, 2.0, 0.01, 50, 7, Wb, np.zeros(len(y)))
        assert it == ref_it
        np.testing.assert_allclose(Wb, ref, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_dual_cd_warm_start_along_the_c_path(n_classes):
    """With a ``warm`` memo (a search's trials: ``TrialCache.warm_duals``) a problem solved
    before at another C starts from its duals scaled to the new C: at the default tolerance
    (what a search's trials use) it stops in fewer passes at about the cold start's
    objective (2.7-5x fewer here, within 0.1 %); the first solve with the memo, and any
    solve without it, is the cold start."""
    X, y, code, m = _data(n_classes=n_classes)
    kw = dict(random_state=0, solver="dual_cd")
    cold = [liblinear_init(X, code, y, n_classes, m, lam, **kw) for lam in (1e-3, 1.2e-3)]
    memo: dict = {}
    first = liblinear_init(X, code, y, n_classes, m, 1e-3, warm=memo, **kw)
    warm = liblinear_init(X, code, y, n_classes, m, 1.2e-3, warm=memo, **kw)
    other = liblinear_init(X, code, 1 - y if n_classes == 2 else (y + 1) % n_classes,
                           n_classes, m, 1.2e-3, warm=memo, **kw)  # other labels: cold
    np.testing.assert_array_equal(first[0], cold[0][0])
    np.testing.assert_array_equal(other[0], liblinear_init(
        X, code, 1 - y if n_classes == 2 else (y + 1) % n_classes, n_classes, m, 1.2e-3,
        **kw)[0])
    assert "warm_start_from_C" not in first[2] and "warm_start_from_C" not in other[2]
    assert warm[2]["warm_start_from_C"] == pytest.approx(cold[0][2]["C"])
    assert 2 * sum(warm[2]["iterations"]) < sum(cold[1][2]["iterations"])
    f_cold, f_warm = (_primal(X, y, code, m, 1.2e-3, *r[:2]) for r in (cold[1], warm))
    assert abs(f_warm - f_cold) <= 2e-3 * f_cold


def test_dual_cd_pass_cap_stops_the_init_early_where_given_only():
    """With ``pass_cap=n`` (a search's trials: ``TrialCache.pass_cap``) the init stops
    after at most n passes, says so, and reaches a primal objective no lower than the
    uncapped one's; without it the same problem runs to its tolerance as before."""
    X, y, code, m = _data(n_classes=2)
    kw = dict(random_state=0, solver="dual_cd")
    full = liblinear_init(X, code, y, 2, m, 1e-5, **kw)  # a large C: many passes
    assert sum(full[2]["iterations"]) > 5 and "max_iter" not in full[2]
    capped = liblinear_init(X, code, y, 2, m, 1e-5, pass_cap=5, **kw)
    assert capped[2]["iterations"] == [5] and capped[2]["max_iter"] == 5
    assert capped[2]["max_iter_reached"] == 1
    f_full, f_capped = (_primal(X, y, code, m, 1e-5, *r[:2]) for r in (full, capped))
    assert f_capped >= f_full
    after = liblinear_init(X, code, y, 2, m, 1e-5, **kw)
    np.testing.assert_array_equal(after[0], full[0])
