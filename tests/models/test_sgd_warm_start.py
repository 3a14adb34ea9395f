"""SGD that keeps what LIBLINEAR found: the warm-start η0 calibration, the kept epoch and
the divergence restart, on a problem where SVMSGD2's η0 = λ^(-1/4) diverges."""

import numpy as np
import pytest

from llc_bench.coding import SoftKNNCoding
from llc_bench.models import LLSVMClassifier, eta0_calibration, sgd_epoch, sgd_training
from llc_bench.models.eta0_calibration import (
    LEARNED_ETA0_EXPONENTS,
    LEARNED_PASSES,
    calibrate_eta0,
)

PRESETS = {  # the four llc_sgd models of the tables, at small m
    "llsvm": dict(),
    "lcc_svm": dict(coding="soft_knn", use_W=False),
    "sapl": dict(coding="soft_knn", learn_anchors=True, anchor_scale=0.01),
    "jo": dict(coding="adaptive_knn", learn_anchors=True, anchor_scale=0.01),
}


@pytest.fixture(scope="module")
def standardised():
    """Standardised data with D = 60: ||x||² ≈ D, where SVMSGD2's rule (made for
    ||x|| ≈ 1) takes first steps ~D times too large."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 60))
    y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int)
    return (X - X.mean(0)) / X.std(0), y


def _fit(X, y, preset, **kw):
    params = dict(n_anchors=10, k=4, lambda_=1e-4, epochs=3, random_state=0)
    params.update(PRESETS[preset], **kw)
    return LLSVMClassifier(**params).fit(X, y)


@pytest.mark.parametrize("preset", PRESETS)
def test_default_never_ends_above_the_liblinear_init(standardised, preset):
    X, y = standardised
    objectives = [e["objective"] for e in _fit(X, y, preset).fit_info_["history"]]
    assert max(objectives[1:]) <= 2 * objectives[0]  # no epoch-1 blow-up
    sgd = _fit(X, y, preset).fit_info_["sgd"]
    kept = ([sgd["start_objective"], *sgd["epoch_objectives"]])[sgd["kept_epoch"]]
    assert kept <= sgd["start_objective"] and kept == min(objectives)
    assert "t0_calibration" in sgd and sgd["retries"] == []


@pytest.mark.parametrize("preset", ["llsvm", "sapl"])
def test_the_old_rule_blows_up_here_and_the_kept_epoch_is_the_init(standardised, preset):
    """The same problem with the SVMSGD2 schedule (as written): epoch 1 is > 2x the init,
    so the test above is not vacuous; the best-epoch rule then keeps the init itself."""
    X, y = standardised
    clf = _fit(X, y, preset, t0="svmsgd2")
    objectives = [e["objective"] for e in clf.fit_info_["history"]]
    assert objectives[1] > 2 * objectives[0]
    assert clf.fit_info_["sgd"]["kept_epoch"] == 0 and clf.fit_info_["sgd"]["retries"] == []
    init = _fit(X, y, preset, epochs=0)
    np.testing.assert_array_equal(clf.W_, init.W_)
    np.testing.assert_array_equal(clf.anchors_, init.anchors_)


def test_calibration_is_stable_across_seeds(standardised):
    X, y = standardised
    steps = []
    for seed in (0, 1, 2):
        clf = _fit(X, y, "sapl", epochs=1, random_state=seed)
        cal = clf.fit_info_["sgd"]["t0_calibration"]
        assert set(cal["grid"]) <= {f"{clf.fit_info_['sgd']['lambda'] ** -0.25 * 2.0 ** j:.6g}"
                                    for j in LEARNED_ETA0_EXPONENTS}
        assert len(cal["grid"]) == 9 and cal["repeats"] >= 2  # coarse-to-fine, step 2
        assert cal["passes"] == LEARNED_PASSES  # learned anchors: 10 passes per η0
        steps.append(np.log2(cal["eta0"]))
    assert max(steps) - min(steps) <= 2.0 + 1e-9  # within one grid step (a factor of 4)


def test_calibration_keeps_the_grid_argmin_and_leaves_the_start_alone():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    y = (X[:, 0] > 0).astype(int)
    clf = LLSVMClassifier(n_anchors=5, k=2, epochs=0, random_state=0).fit(X, y)
    code = clf.coding_.encode(X, clf.anchors_)
    Y = sgd_epoch.labels_matrix(y, 2)
    W, b = clf.W_.copy(), clf.b_.copy()
    t0, info = calibrate_eta0(X, Y, code, W, b, lambda_=1e-3, skip=16, bias_scale=0.5,
                              random_state=0)
    np.testing.assert_array_equal(W, clf.W_)  # nothing moved
    costs = {float(k): v for k, v in info["grid"].items()}
    best = min(costs.values())
    tie = eta0_calibration.CALIBRATION_TIE
    tied = [eta for eta, c in costs.items() if c <= best + tie * abs(best)]
    assert info["eta0"] == pytest.approx(max(tied), rel=1e-5)
    assert t0 == pytest.approx(1 / (1e-3 * info["eta0"]))


def _xor_warm_start(seed, n, d, m):
    """(X, LIBLINEAR-initialised LL-SVM, its codes, Y) on an XOR-like problem."""
    X = np.random.default_rng(seed).normal(size=(n, d))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    clf = LLSVMClassifier(n_anchors=m, k=3, epochs=0, random_state=0).fit(X, y)
    return X, clf, clf.coding_.encode(X, clf.anchors_), sgd_epoch.labels_matrix(y, 2)


@pytest.mark.parametrize("learned", [False, True])
def test_multi_pass_calibration_costs_are_the_objective_after_that_many_epochs(learned):
    """calibration_passes: each grid cost is the subsample objective after ``passes``
    epochs of the real schedule (step counter and skip count carried, one seeded order
    per pass), checked against the epochs run by hand; one pass is the default."""
    X, clf, code, Y = _xor_warm_start(seed=5, n=300, d=4, m=6)
    coding = SoftKNNCoding(k=3, beta=1.0)
    extra = dict(anchors=clf.anchors_, coding=coding) if learned else {}
    kw = dict(lambda_=1e-3, skip=16, bias_scale=0.5)
    _, two = calibrate_eta0(X, Y, code, clf.W_, clf.b_, repeats=1, passes=2, random_state=0,
                            **kw, **extra)
    _, one = calibrate_eta0(X, Y, code, clf.W_, clf.b_, repeats=1, random_state=0, **kw,
                            **extra)
    assert two["passes"] == 2 and one["passes"] == 1 and two["grid"] != one["grid"]
    order_rng = np.random.default_rng(0)
    orders = [order_rng.permutation(300), order_rng.permutation(300)]
    eta0 = 1e-3 ** -0.25 * 2.0 ** -6  # a point of the grid (exponent -6)
    W, b, V = clf.W_.copy(), clf.b_.copy(), clf.anchors_.copy()
    t, count = 0, 16
    step = dict(kw, t0=1.0 / (1e-3 * eta0))
    for order in orders:
        if learned:
            t, count, _ = sgd_epoch.run_epoch_anchors(X, Y, order, V, W, b, t, count, coding,
                                                   **step)
        else:
            t, count = sgd_epoch.run_epoch(X, Y, code, order, W, b, t, count, **step)
    code_now = coding.encode(X, V) if learned else code
    expected = sgd_epoch.sgd_objective(X, Y, code_now, W, b, 1e-3)[0]
    assert two["grid"][f"{eta0:.6g}"] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("learned", [False, True])
def test_coarse_to_fine_grid_runs_a_subset_of_the_same_costs(learned):
    """calibration_coarse_step n: every n-th η0 and the points within n - 1 steps of the
    best of them, on the same subsamples as the whole grid (the same cost at every point
    it runs), and the argmin of what it ran; None runs the whole grid."""
    X, clf, code, Y = _xor_warm_start(seed=5, n=300, d=4, m=6)
    coding = SoftKNNCoding(k=3, beta=1.0)
    extra = dict(anchors=clf.anchors_, coding=coding) if learned else {}
    kw = dict(lambda_=1e-3, skip=16, bias_scale=0.5, n_sub=200, random_state=3)
    t_full, full = calibrate_eta0(X, Y, code, clf.W_, clf.b_, **kw, **extra)
    t_fine, fine = calibrate_eta0(X, Y, code, clf.W_, clf.b_, coarse_step=4, **kw, **extra)
    keys = list(full["grid"])
    assert len(keys) == 27 and set(fine["grid"]) < set(keys)
    assert all(fine["grid"][g] == full["grid"][g] for g in fine["grid"])
    coarse = keys[::4]
    assert set(coarse) <= set(fine["grid"]) and len(fine["grid"]) <= len(coarse) + 6
    best_coarse = min(coarse, key=lambda g: full["grid"][g])
    near = {keys[i] for i in range(27) if abs(i - keys.index(best_coarse)) < 4}
    assert set(fine["grid"]) == set(coarse) | near
    def chosen(grid):  # the lowest cost; ties (1e-4 relative): the largest η0
        low = min(grid.values())
        return next(g for g in keys if g in grid and grid[g] <= low + 1e-4 * abs(low))
    assert fine["eta0"] == pytest.approx(float(chosen(fine["grid"])), rel=1e-5)
    assert full["eta0"] == pytest.approx(float(chosen(full["grid"])), rel=1e-5)
    if chosen(full["grid"]) in fine["grid"]:
        assert t_fine == t_full


@pytest.mark.parametrize("start", [0, 5, 13, 26])
def test_walk_finds_the_minimum_of_a_unimodal_grid_from_anywhere(start):
    """The walk evaluates the start, its neighbours and one point per step toward the
    lowest cost, and stops at the grid's minimum (ties: the largest η0, the first point)."""
    cost = np.array([abs(i - 9) for i in range(27)], dtype=float)
    cost[9:12] = 0.0  # three tied minima: the first (the largest η0) is chosen
    asked = []

    def costs_at(points):
        asked.append(list(points))
        return np.vstack([cost[points], cost[points]])

    points = eta0_calibration.walk_to_minimum(27, start, costs_at)
    assert sorted(sum(asked, [])) == points  # no point run twice
    assert points[eta0_calibration._best_eta0(np.vstack([cost[points]] * 2))] == 9
    assert len(points) == len(range(max(0, min(start, 9) - 1), min(27, max(start, 9) + 2)))


def test_a_walk_after_the_first_calibration_with_a_walk_memo(monkeypatch):
    """With a ``walk`` memo (a search's trials: ``TrialCache.eta0_walk``) the first
    calibration runs coarse-to-fine, the next ones walk from the η0 chosen last on a few
    points of the same costs and (on this unimodal grid) choose the same η0; without it
    nothing is remembered."""
    X, clf, code, Y = _xor_warm_start(seed=5, n=300, d=4, m=6)
    kw = dict(skip=16, bias_scale=0.5, n_sub=200, random_state=3, coarse_step=4)
    alone = [calibrate_eta0(X, Y, code, clf.W_, clf.b_, lambda_=lam, **kw)
             for lam in (1e-3, 3e-3)]
    assert all(info["method"] == "warm-start grid" for _, info in alone)
    walk: dict = {}
    walked = [calibrate_eta0(X, Y, code, clf.W_, clf.b_, lambda_=lam, walk=walk, **kw)
              for lam in (1e-3, 3e-3)]
    assert walked[0] == alone[0]
    t0, info = walked[1]
    assert info["method"].startswith("warm-start grid, walked from ")
    assert 3 <= len(info["grid"]) < len(alone[1][1]["grid"])
    assert all(info["grid"][g] == alone[1][1]["grid"][g]
               for g in set(info["grid"]) & set(alone[1][1]["grid"]))
    assert t0 == alone[1][0]
    assert calibrate_eta0(X, Y, code, clf.W_, clf.b_, lambda_=3e-3, **kw) == alone[1]


@pytest.mark.parametrize("learned", [False, True])
def test_calibration_same_on_one_and_two_threads(learned):
    """The grid's passes run one per numba thread; the costs do not depend on how many."""
    import numba

    X, clf, code, Y = _xor_warm_start(seed=4, n=500, d=5, m=8)
    extra = dict(anchors=clf.anchors_, coding=SoftKNNCoding(k=3, beta=1.0)) if learned else {}
    out = []
    for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
        numba.set_num_threads(threads)
        out.append(calibrate_eta0(X, Y, code, clf.W_, clf.b_, lambda_=1e-3, skip=16,
                                  bias_scale=0.5, random_state=0, **extra))
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    assert out[0] == out[1]


def test_divergence_restarts_with_a_smaller_step(standardised, monkeypatch):
    """A calibration that picks SVMSGD2's huge η0: the guard sees the objective jump,
    restarts from the init with η0 / 4 until it stops diverging, and says so."""
    X, y = standardised
    monkeypatch.setattr(sgd_training, "calibrate_eta0",
                        lambda *a, lambda_, **k: (1.0 / (lambda_ * lambda_**-0.25), {}))
    clf = _fit(X, y, "llsvm")
    sgd = clf.fit_info_["sgd"]
    retries = sgd["retries"]
    assert 1 <= len(retries) <= sgd_training.MAX_RETRIES
    etas = [r["eta0"] for r in retries] + [sgd["eta0"]]
    np.testing.assert_allclose(np.array(etas[:-1]) / etas[1:], sgd_training.RETRY_DIVISOR)
    assert all(r["objective"] > sgd_training.DIVERGENCE_FACTOR * r["start_objective"]
               for r in retries)
    history = clf.fit_info_["history"]  # the restarted run's epochs replace the aborted ones
    assert [e["epoch"] for e in history] == [0, 1, 2, 3]
    assert max(e["objective"] for e in history[1:]) <= 2 * history[0]["objective"]


def test_fixed_and_learned_anchors_default_to_their_coarse_grids():
    """v5 defaults: a fixed-anchor fit calibrates η0 on the coarse-to-fine grid (13 of
    27 points), ``calibration_coarse_step=1`` on the whole grid; v6: learned anchors run
    their (halved) grid coarse-to-fine with step 2 (9 of 14 points, the whole grid's
    choice here) and float64 weights."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    kw = dict(n_anchors=8, k=3, epochs=2, random_state=0)
    fixed = LLSVMClassifier(**kw).fit(X, y).fit_info_["sgd"]
    whole = LLSVMClassifier(**kw, calibration_coarse_step=1).fit(X, y).fit_info_["sgd"]
    assert len(whole["t0_calibration"]["grid"]) == 27
    assert len(fixed["t0_calibration"]["grid"]) < 27
    assert set(fixed["t0_calibration"]["grid"]) < set(whole["t0_calibration"]["grid"])
    assert fixed["sgd_dtype"] == "float32"
    learn = dict(kw, coding="soft_knn", learn_anchors=True)
    info = LLSVMClassifier(**learn).fit(X, y).fit_info_["sgd"]
    full = LLSVMClassifier(**learn, calibration_coarse_step=1).fit(X, y).fit_info_["sgd"]
    assert len(full["t0_calibration"]["grid"]) == len(LEARNED_ETA0_EXPONENTS)
    assert len(info["t0_calibration"]["grid"]) == 9
    assert set(info["t0_calibration"]["grid"]) < set(full["t0_calibration"]["grid"])
    assert info["eta0"] == full["eta0"]
    assert info["sgd_dtype"] == "float64"

def test_numerics_version_enters_the_cache_key():
    from llc_bench.experiment.runner import add_numerics_version
    from llc_bench.store.results import config_hash

    base = {"trainer": {"name": "llc_sgd"}, "coding": {"name": "inverse_distance"},
            "seed": 0, "dataset": {"name": "banana"}}
    llc = add_numerics_version({**base})
    assert llc["numerics_version"] == 5  # 5: vectorised dual CD, float32 SGD, coarse η0 grid
    sapl = add_numerics_version({**base, "trainer": {"name": "llc_sgd", "learn_anchors": True},
                                 "coding": {"name": "soft_knn"}})
    assert sapl["numerics_version"] == 6  # 6: the coarse-to-fine η0 grid for learned anchors
    lin = add_numerics_version({**base, "trainer": {"name": "liblinear"}, "coding": None})
    assert lin["numerics_version"] is None  # version 1 stays out: old keys unchanged
    assert config_hash(llc) != config_hash({**llc, "numerics_version": None})
    occ = {"trainer": {"name": "occ", "solver": "liblinear"}, "seed": 0}
    assert add_numerics_version(dict(occ))["numerics_version"] is None
    occ["trainer"] = {"name": "occ", "solver": "sgd"}
    assert add_numerics_version(dict(occ))["numerics_version"] == 2
