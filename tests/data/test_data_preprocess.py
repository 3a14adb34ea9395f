"""Split protocols, subsampling, scaling and label encoding."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from llc_bench.data.preprocess import (
    build_coder,
    fit_standard,
    split_indices,
    subsample,
    train_count,
)
from llc_bench.data.spec import LabelSpec, SplitSpec
from llc_bench.errors import ConfigError, DatasetError

PROTOCOLS = {
    "fraction_third": SplitSpec("fraction", test_fraction=Fraction(1, 3)),
    "fraction_half": SplitSpec("fraction", test_fraction=Fraction(1, 2)),
    "count_400": SplitSpec("count", train_size=400),
    "count_both": SplitSpec("count", train_size=300, test_size=500),
}


@pytest.mark.parametrize("n, fraction, n_train", [
    (5300, Fraction(1, 3), 3533), (19020, Fraction(1, 3), 12680), (11055, Fraction(1, 3), 7370),
    (245057, Fraction(1, 2), 122529), (1000, Fraction(33, 100), 670)])
def test_train_count_matches_paper_sizes(n, fraction, n_train):
    assert train_count(n, fraction) == n_train


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_random_split_sizes_determinism_and_disjointness(name):
    split, n = PROTOCOLS[name], 5300
    train, test = split_indices(split, n, seed=0)
    expected_train = {"fraction_third": 3533, "fraction_half": 2650, "count_400": 400,
                      "count_both": 300}[name]
    assert len(train) == expected_train
    assert len(test) == (500 if name == "count_both" else n - expected_train)
    assert not set(train) & set(test)
    if name != "count_both":
        np.testing.assert_array_equal(np.sort(np.concatenate([train, test])), np.arange(n))
    assert np.all(np.diff(train) > 0) and np.all(np.diff(test) > 0)  # file order kept
    again = split_indices(split, n, seed=0)
    np.testing.assert_array_equal(train, again[0])
    np.testing.assert_array_equal(test, again[1])
    other = split_indices(split, n, seed=1)
    assert not np.array_equal(train, other[0])


def test_row_range_split():
    split = SplitSpec("rows", train_rows=(0, 16000), test_rows=(16000, 20000))
    train, test = split_indices(split, 20000, seed=5)
    np.testing.assert_array_equal(train, np.arange(16000))
    np.testing.assert_array_equal(test, np.arange(16000, 20000))
    with pytest.raises(ConfigError, match="exceed"):
        split_indices(split, 19000, seed=0)
    with pytest.raises(ConfigError, match="overlap"):
        split_indices(SplitSpec("rows", train_rows=(0, 10), test_rows=(5, 20)), 20, seed=0)


def test_count_split_that_does_not_fit_is_config_error():
    with pytest.raises(ConfigError, match="does not fit"):
        split_indices(SplitSpec("count", train_size=400), 400, seed=0)


def test_subsample_seeded_and_independent_of_split_stream():
    assert subsample(100, None, 0, 1) is None and subsample(100, 200, 0, 1) is None
    a, b = subsample(1000, 100, 3, 1), subsample(1000, 100, 3, 1)
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a)) == 100 and np.all(np.diff(a) > 0)
    assert not np.array_equal(a, subsample(1000, 100, 4, 1))
    assert not np.array_equal(a, subsample(1000, 100, 3, 2))


def test_standard_scaling_fitted_on_train_only():
    rng = np.random.default_rng(0)
    X_train = rng.normal(5.0, 3.0, (200, 3))
    X_train[:, 2] = 7.0  # constant feature
    X_test = rng.normal(-5.0, 1.0, (50, 3))
    scaler = fit_standard(X_train)
    Z_train, Z_test = scaler.transform(X_train), scaler.transform(X_test)
    np.testing.assert_allclose(Z_train[:, :2].mean(0), 0, atol=1e-12)
    np.testing.assert_allclose(Z_train[:, :2].std(0), 1, atol=1e-12)
    np.testing.assert_allclose(Z_train[:, 2], 0)  # centred, not divided by zero
    assert scaler.constant == 1 and np.all(np.isfinite(Z_test))
    np.testing.assert_allclose(Z_test, (X_test - X_train.mean(0)) / np.where(
        X_train.std(0) > 0, X_train.std(0), 1))
    assert abs(Z_test[:, 0].mean()) > 2  # test set not re-centred
    assert Z_train.flags["C_CONTIGUOUS"] and Z_train is not X_train


def test_sparse_scaling_keeps_sparsity_and_does_not_centre():
    X = sp.random(300, 40, density=0.05, format="csr", random_state=0) * 4.0
    X = sp.csr_matrix(X)
    before = X.toarray()
    scaler = fit_standard(X)
    Z = scaler.transform(X)
    assert sp.isspmatrix_csr(Z) and Z.nnz == X.nnz and scaler.mean is None
    dense_std = Z.toarray().std(0)
    nonconstant = X.toarray().std(0) > 0
    np.testing.assert_allclose(dense_std[nonconstant], 1, rtol=1e-10)
    np.testing.assert_array_equal(X.toarray(), before)  # input untouched


def test_binary_coder_maps_and_rejects_unknown():
    coder = build_coder("binary", LabelSpec(positive=("g",), negative=("h",)), {"g", "h"})
    assert coder.classes == ["h", "g"]
    y, keep = coder.encode(["h", "g"], np.array([0, 1, 1, 0]), "file.csv")
    np.testing.assert_array_equal(y, [-1, 1, 1, -1])
    assert keep.all()
    with pytest.raises(DatasetError, match="file.csv: unknown label 'x' \\(2 rows\\)"):
        coder.encode(["g", "x"], np.array([0, 1, 1]), "file.csv")


def test_binary_coder_drop_and_groups():
    spec = LabelSpec(positive=("1",), negative=("2", "3"), drop=("0",))
    coder = build_coder("binary", spec, {"0", "1", "2", "3"})
    assert coder.classes == ["2|3", "1"]
    y, keep = coder.encode(["0", "1", "2", "3"], np.array([0, 1, 2, 3, 0]), "f")
    np.testing.assert_array_equal(y[keep], [1, -1, -1])
    np.testing.assert_array_equal(keep, [False, True, True, True, False])


def test_open_labels_for_custom_data():
    coder = build_coder("auto", LabelSpec(), {"0", "1"})
    assert coder.task == "binary" and coder.classes == ["0", "1"]
    multi = build_coder("auto", LabelSpec(), {"10", "2", "1"})
    assert multi.task == "multiclass" and multi.classes == ["1", "2", "10"]
    ordered = build_coder("multiclass", LabelSpec(order=("loss", "draw", "win")), {"win"})
    assert ordered.value_of == {"loss": 0, "draw": 1, "win": 2}
