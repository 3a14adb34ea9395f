"""SGD steps checked against numbers worked out by hand from the papers' equations.

The kernel-vs-reference tests (test_llsvm.py, test_sapl.py) cannot see a mistake made the
same way in both; here the expectations are written out from the equations, not taken
from either implementation.  Notation: η_t = 1/(λ(t + t0)); skip decay (LL-SVM eq. 13)
W *= r every ``skip`` steps with r = 1 - skip/(t + t0), replaced by SVMSGD2's
(1 - 1/(t + t0))^skip when r < 0.8.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from reference_sgd import sgd_step_anchors_reference, sgd_step_reference

from llc_bench.coding import AdaptiveKNNCoding, LocalCode, SoftKNNCoding
from llc_bench.models import _sgd_kernel as K
from llc_bench.models.sgd_epoch import run_epoch, run_epoch_anchors

# ------------------------------------------------------------ the decay rule


@pytest.mark.parametrize(
    "t, t0, skip, r",
    [
        (18, 2, 7, (1 - 1 / 20) ** 7),   # 1 - 7/20 = 0.65 < 0.8: safeguard
        (28, 2, 7, (1 - 1 / 30) ** 7),   # 1 - 7/30 = 0.767 < 0.8: safeguard
        (33, 2, 7, 1 - 7 / 35),          # exactly 0.8: not below, eq. (13)
        (98, 2, 7, 1 - 7 / 100),         # 0.93: eq. (13)
        (0, 2, 30, 0.5**30),             # 1 - 30/2 < 0: safeguard (1/2)^30
        (10, 10, 1, 1 - 1 / 20),         # skip 1: both rules agree
    ],
)
def test_decay_closed_form(t, t0, skip, r):
    assert K._decay(t, t0, skip) == pytest.approx(r, rel=1e-14)


# ------------------------------------------------------------ decay through a whole run

# skip 4, t0 8, step counter from 0: the decay runs at t = 3, 7, 11, 15 with t + t0 =
# 11, 15, 19, 23; 1 - 4/(t + t0) = 7/11, 11/15, 15/19 (< 0.8: safeguard), 19/23 (>= 0.8).
SKIP, T0 = 4, 8.0
DECAYS = {3: (10 / 11) ** 4, 7: (14 / 15) ** 4, 11: (18 / 19) ** 4, 15: 19 / 23}


def _quiet_problem(n=16):
    """Every margin satisfied all the time (b = 5 on both anchors, |W x| < 1): no update."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, 2))
    Y = np.ones((n, 1))
    V = np.array([[0.0, 0.0], [0.5, 0.5]])
    gam = rng.uniform(0.2, 0.8, size=(n, 1))
    code = LocalCode(np.tile(np.array([0, 1], np.int32), (n, 1)), np.hstack([gam, 1 - gam]))
    W = np.array([[[0.1, -0.2], [0.3, 0.05]]])
    b = np.array([[5.0, 5.0]])
    return X, Y, V, code, W, b


def _epoch(impl, X, Y, V, code, order, W, b, t, count, use_W):
    kw = dict(lambda_=0.1, t0=T0, skip=SKIP, bias_scale=0.5, use_W=use_W)
    if impl == "dense":
        return run_epoch(X, Y, code, order, W, b, t, count, **kw)
    if impl == "csr":
        return run_epoch(sp.csr_matrix(X), Y, code, order, W, b, t, count, **kw)
    if impl == "anchors":  # learned anchors: no violation, so the anchors stay put too
        t, count, _ = run_epoch_anchors(X, Y, order, V, W, b, t, count,
                                        SoftKNNCoding(k=2, beta=1.0), anchor_scale=1.0, **kw)
        return t, count
    for i in order:  # the numpy reference
        t, count = sgd_step_reference(W, b, X[i], Y[i], code.indices[i].astype(np.intp),
                                      code.weights[i], t, count, **kw)
    return t, count


@pytest.mark.parametrize("use_W", [True, False], ids=["W", "lcc-b"])
@pytest.mark.parametrize("impl", ["dense", "csr", "anchors", "reference"])
def test_no_violation_run_decays_every_skip_steps_only(impl, use_W):
    """One step per call: the decayed array is unchanged for skip - 1 steps, then
    multiplied by r (b instead of W for LCC+SVM); nothing else moves."""
    X, Y, V, code, W0, b0 = _quiet_problem()
    W, b, V1 = W0.copy(), b0.copy(), V.copy()
    t, count = 0, SKIP
    expect = 1.0
    for step in range(16):
        before = (W if use_W else b).copy()
        t, count = _epoch(impl, X, Y, V1, code, np.array([step]), W, b, t, count, use_W)
        assert t == step + 1
        after = W if use_W else b
        if step in DECAYS:
            expect *= DECAYS[step]
            np.testing.assert_allclose(after, before * DECAYS[step], rtol=1e-14, atol=0)
            assert count == SKIP
        else:
            np.testing.assert_array_equal(after, before)
            assert count == SKIP - 1 - step % SKIP
    np.testing.assert_allclose(W if use_W else b, (W0 if use_W else b0) * expect, rtol=1e-13)
    np.testing.assert_array_equal(b if use_W else W, b0 if use_W else W0)
    np.testing.assert_array_equal(V1, V)
    # the same 16 steps as one epoch (the kernels' deferred scale): same end point
    W2, b2, V2 = W0.copy(), b0.copy(), V.copy()
    assert _epoch(impl, X, Y, V2, code, np.arange(16), W2, b2, 0, SKIP, use_W) == (16, SKIP)
    np.testing.assert_allclose(W2, W, rtol=1e-13)
    np.testing.assert_allclose(b2, b, rtol=1e-13)


@pytest.mark.parametrize("use_W", [True, False], ids=["W", "lcc-b"])
@pytest.mark.parametrize("impl", ["dense", "csr", "anchors"])
def test_tiny_scale_is_folded_into_the_array(impl, use_W):
    """A decay below _FOLD_BELOW (t + t0 = 2, skip 30: r = 2^-30 ≈ 9e-10) is folded into
    W (b for LCC+SVM) at once: the array must come out multiplied by exactly 2^-30."""
    assert 0.5**30 < K._FOLD_BELOW
    X, Y, V, code, W0, b0 = _quiet_problem(n=1)
    W, b = W0.copy(), b0.copy()
    kw = dict(lambda_=0.1, t0=2.0, skip=30, bias_scale=0.5, use_W=use_W)
    order = np.array([0])
    if impl == "anchors":
        run_epoch_anchors(X, Y, order, V.copy(), W, b, 0, 1, SoftKNNCoding(k=2, beta=1.0), **kw)
    else:
        run_epoch(sp.csr_matrix(X) if impl == "csr" else X, Y, code, order, W, b, 0, 1, **kw)
    np.testing.assert_array_equal(W if use_W else b, (W0 if use_W else b0) * 0.5**30)
    np.testing.assert_array_equal(b if use_W else W, b0 if use_W else W0)


# ------------------------------------------------------------ one step by hand

# Two anchors v1 = (1, 1), v2 = (-1, 1), one sample x = (1, 2), y = +1, one output.
# Squared distances d1 = ||x - v1||² = 1, d2 = 5.  W1 = (0.5, 0), W2 = (0, -0.5),
# b = (0, 0.25): h_j = W_j·x + b_j gives h1 = 0.5, h2 = -0.75.
# λ = 0.5, t0 = 4, t = 0: η = 1/(λ(t + t0)) = 0.5; bias_scale 0.5; skip 100 (no decay).
X1 = np.array([[1.0, 2.0]])
Y1 = np.array([[1.0]])
V1 = np.array([[1.0, 1.0], [-1.0, 1.0]])
W1 = np.array([[[0.5, 0.0], [0.0, -0.5]]])
B1 = np.array([[0.0, 0.25]])
ETA, BIAS_SCALE = 0.5, 0.5
STEP = dict(lambda_=0.5, t0=4.0, skip=100, bias_scale=BIAS_SCALE)


def _wb_update(gam):
    """LL-SVM eq. (11)-(12) on a violated margin: W_j += η y γ_j x, b_j += η·bs·y γ_j."""
    W = W1.copy()
    b = B1.copy()
    for j in range(2):
        W[0, j] += ETA * 1.0 * gam[j] * X1[0]
        b[0, j] += ETA * BIAS_SCALE * 1.0 * gam[j]
    return W, b


@pytest.mark.parametrize("impl", ["dense", "csr", "reference"])
def test_llsvm_step_by_hand(impl):
    """Fixed anchors, code γ = (3/4, 1/4): f = 3/4·0.5 + 1/4·(-0.75) = 0.1875 < 1, so
    W1 = (0.5, 0) + 0.5·3/4·(1, 2) = (0.875, 0.75), W2 = (0.125, -0.25),
    b1 = 0.5·0.5·3/4 = 0.1875, b2 = 0.25 + 0.5·0.5·1/4 = 0.3125."""
    code = LocalCode(np.array([[0, 1]], np.int32), np.array([[0.75, 0.25]]))
    W, b = W1.copy(), B1.copy()
    if impl == "reference":
        t, count = sgd_step_reference(W, b, X1[0], Y1[0], np.array([0, 1]), code.weights[0],
                                      0, 100, **STEP)
    else:
        Xin = sp.csr_matrix(X1) if impl == "csr" else X1
        t, count = run_epoch(Xin, Y1, code, np.array([0]), W, b, 0, 100, **STEP)
    assert (t, count) == (1, 99)
    np.testing.assert_allclose(W, [[[0.875, 0.75], [0.125, -0.25]]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(b, [[0.1875, 0.3125]], rtol=0, atol=1e-15)
    W_exp, b_exp = _wb_update([0.75, 0.25])  # the same numbers from the equations
    np.testing.assert_allclose(W, W_exp, rtol=0, atol=1e-15)
    np.testing.assert_allclose(b, b_exp, rtol=0, atol=1e-15)


def _anchor_step(impl, coding, scale):
    V, W, b = V1.copy(), W1.copy(), B1.copy()
    if impl == "reference":
        t, count, ks = sgd_step_anchors_reference(W, b, V, X1[0], Y1[0], 0, 100, coding,
                                                  anchor_scale=scale, **STEP)
    else:
        t, count, ks = run_epoch_anchors(X1, Y1, np.array([0]), V, W, b, 0, 100, coding,
                                         anchor_scale=scale, **STEP)
        ks = int(ks[0])
    assert (t, count, ks) == (1, 99, 2)
    return V, W, b


@pytest.mark.parametrize("impl", ["kernel", "reference"])
def test_sapl_step_by_hand(impl):
    """LLC-SAPL, soft_knn β = ln(3)/4: γ_j ∝ exp(-β d_j) = (3/4, 1/4) (eq. 2), f = 0.1875.
    Anchors first (eq. 16): v_j += η·scale·y·2β γ_j (h_j - f)(x - v_j), then W, b with
    the same γ (eq. 17-18)."""
    beta, scale = math.log(3) / 4, 2.0
    gam = np.array([0.75, 0.25])
    f = 0.75 * 0.5 + 0.25 * -0.75
    assert f == 0.1875
    c1 = ETA * scale * 2 * beta * 0.75 * (0.5 - f)     # = 0.46875 β
    c2 = ETA * scale * 2 * beta * 0.25 * (-0.75 - f)   # = -0.46875 β
    V_exp = np.array([[1.0, 1.0 + c1 * 1.0],              # x - v1 = (0, 1)
                      [-1.0 + c2 * 2.0, 1.0 + c2 * 1.0]])  # x - v2 = (2, 1)
    V, W, b = _anchor_step(impl, SoftKNNCoding(k=2, beta=beta), scale)
    np.testing.assert_allclose(V, V_exp, rtol=1e-13, atol=1e-15)
    assert c1 == pytest.approx(0.46875 * beta) and c2 == pytest.approx(-0.46875 * beta)
    W_exp, b_exp = _wb_update(gam)
    np.testing.assert_allclose(W, W_exp, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(b, b_exp, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("impl", ["kernel", "reference"])
def test_jo_step_by_hand(impl):
    """LLC-JO, adaptive_knn μ = 0.05, cap k = 2: η_j = μ d_j = (0.05, 0.25); with both
    active λ solves (λ - η1)² + (λ - η2)² = 1: λ = (0.3 + √(2 - 0.2²))/2 = 0.85 > η2, so
    k* = 2; γ_j = (λ - η_j)/Σ(λ - η_l) = (0.8, 0.6)/1.4 = (4/7, 3/7) (JO eq. 19);
    ∂f/∂v_j = 2μ (h_j - f)(x - v_j)/1.4 (eq. 22, λ frozen).  f = 4/7·0.5 - 3/7·0.75 = -1/28."""
    mu, scale = 0.05, 2.0
    lam = (0.3 + math.sqrt(2 - 0.2**2)) / 2
    assert lam == pytest.approx(0.85) and lam > 0.25
    gam = np.array([4 / 7, 3 / 7])
    f = -1 / 28
    assert gam @ [0.5, -0.75] == pytest.approx(f)
    c1 = ETA * scale * (2 * mu / 1.4) * (0.5 - f)      # = 15/392
    c2 = ETA * scale * (2 * mu / 1.4) * (-0.75 - f)    # = -20/392
    assert (c1, c2) == pytest.approx((15 / 392, -20 / 392))
    V_exp = np.array([[1.0, 1.0 + c1], [-1.0 + 2 * c2, 1.0 + c2]])
    V, W, b = _anchor_step(impl, AdaptiveKNNCoding(k=2, mu=mu), scale)
    np.testing.assert_allclose(V, V_exp, rtol=1e-13, atol=1e-15)
    W_exp = np.array([[[0.5 + 2 / 7, 4 / 7], [3 / 14, -0.5 + 3 / 7]]])
    b_exp = np.array([[1 / 7, 0.25 + 3 / 28]])
    W_eq, b_eq = _wb_update(gam)
    np.testing.assert_allclose(W_exp, W_eq, rtol=1e-14)
    np.testing.assert_allclose(b_exp, b_eq, rtol=1e-14)
    np.testing.assert_allclose(W, W_exp, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(b, b_exp, rtol=1e-13, atol=1e-15)
