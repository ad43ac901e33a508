"""skquad.nn.quadratic_moments: the normal equations from the distinct degree-4 moments.

The reference is the SYRK route of :func:`skquad.nn.quadratic_ridge.normal_equations` (the
centred features' ``Φᵀ Φ``), itself checked against scikit-learn's Ridge on
PolynomialFeatures(2) in test_nn_quadratic_ridge.py. Both sum the same products in another
order, so they agree to a few units of round-off of the Gram's largest entry; the shifted
columns' map back is exact algebra, so it keeps that agreement on offset data.
"""

import numpy as np
import pytest
import scipy.sparse
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from skquad.linear_model import QuadraticRegression
from skquad.nn import quadratic_moments, quadratic_ridge


def _both_routes(monkeypatch, X, Y, weight, fit_intercept=True):
    """``(G, R)`` by the moments and by the SYRK, at the features' weighted mean."""
    d = X.shape[1]
    rows, cols = quadratic_ridge.pairs_of(d)
    mean = (quadratic_ridge._feature_means(X, weight, rows, cols) if fit_intercept
            else np.zeros(quadratic_ridge.expansion_size(d)))
    y_mean = weight @ Y / weight.sum() if fit_intercept else np.zeros(Y.shape[1])
    moments = quadratic_moments.moment_normal_equations(
        X, Y, weight, mean, y_mean, (rows, cols), quadratic_ridge._dense_blocks)
    monkeypatch.setattr(quadratic_ridge, "uses_moments", lambda *args: False)
    syrk = quadratic_ridge.normal_equations(X, Y, weight, mean, y_mean)
    monkeypatch.undo()
    return moments, syrk


def _assert_same(found, expected, rtol=1e-13):
    for value, reference in zip(found, expected):
        np.testing.assert_allclose(value, reference, rtol=0, atol=rtol * np.abs(reference).max())


def _table(n=400, d=12, seed=0, offset=0.0):
    """Standardized columns, a rare and a common dummy, one column far from zero."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, d)
    X[:, 0] = rng.uniform(size=n) < 0.05
    X[:, 1] = rng.uniform(size=n) < 0.8
    X[:, 2] += offset
    Y = X[:, 3:4] * X[:, 4:5] + X[:, 2:3] + 0.1 * rng.standard_normal((n, 2))
    return X, Y, rng.uniform(0.0, 2.0, n)


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("unit_weights", [True, False])
def test_the_moments_give_the_syrks_normal_equations(monkeypatch, offset, fit_intercept, unit_weights):
    X, Y, weight = _table(offset=offset)
    weight = np.ones(X.shape[0]) if unit_weights else weight
    found, expected = _both_routes(monkeypatch, X, Y, weight, fit_intercept)
    assert found[0].shape == expected[0].shape == (90, 90) and found[1].shape == (90, 2)
    _assert_same(found, expected)


def test_the_widest_route_gives_the_syrks_normal_equations(monkeypatch):
    # d = 62, the widest the rule takes: 2016 pairs in 43 groups
    X, Y, weight = _table(n=120, d=62, offset=5.0)
    found, expected = _both_routes(monkeypatch, X, Y, weight)
    _assert_same(found, expected)


def test_offset_columns_are_shifted_and_the_others_are_not():
    # a column shifts where its mean exceeds its spread: the offset one and the common
    # dummy (mean 0.8 > its spread 0.4), not the centred ones or the rare dummy
    X, _, weight = _table(offset=1e3)
    rows, cols = quadratic_ridge.pairs_of(X.shape[1])
    mean = quadratic_ridge._feature_means(X, weight, rows, cols)
    shift = quadratic_moments._shift(mean[:12], mean[12:][rows == cols])
    assert np.flatnonzero(shift).tolist() == [1, 2]
    np.testing.assert_array_equal(shift[[1, 2]], mean[[1, 2]])


def test_the_shift_keeps_the_digits_the_uncentred_sums_lose(monkeypatch):
    # with no column shifted, an offset of 1e4 cancels ~8 of the 16 digits in the centring
    X, Y, weight = _table(offset=1e4)
    found, expected = _both_routes(monkeypatch, X, Y, weight)
    _assert_same(found, expected)
    monkeypatch.setattr(quadratic_moments, "_shift", lambda linear, square: np.zeros_like(linear))
    unshifted, _ = _both_routes(monkeypatch, X, Y, weight)
    error = np.abs(unshifted[0] - expected[0]).max() / np.abs(expected[0]).max()
    assert error > 1e-11


def test_row_blocks_and_sparse_rows_add_up_to_the_whole(monkeypatch):
    X, Y, weight = _table(n=500)
    whole, _ = _both_routes(monkeypatch, X, Y, weight)
    monkeypatch.setattr(quadratic_moments, "_BLOCK_ELEMENTS", 2 * 91 * 64)  # 64 rows a block
    workspaces = []
    allocate = quadratic_moments._Workspace.of
    monkeypatch.setattr(quadratic_moments._Workspace, "of",
                        lambda *args: workspaces.append(args) or allocate(*args))
    blocked, _ = _both_routes(monkeypatch, scipy.sparse.csr_matrix(X), Y, weight)
    _assert_same(blocked, whole)
    # the eight blocks (the last one short) share one workspace, allocated for 64 rows
    assert [args[2] for args in workspaces] == [64]


def test_the_route_rule(monkeypatch):
    assert quadratic_moments.uses_moments(1000, 18, None)
    assert not quadratic_moments.uses_moments(999, 18, None)
    assert not quadratic_moments.uses_moments(1000, 17, None)
    assert not quadratic_moments.uses_moments(10_000, 30, np.ones((30, 30), dtype=bool))
    # the gather's index: P = (d + 1)(d + 2) / 2 = 2016 at d = 62, 2080 at d = 63
    assert quadratic_moments.uses_moments(10_000, 62, None)
    assert not quadratic_moments.uses_moments(10_000, 63, None)


def test_the_regression_on_the_moments_is_the_pipelines_optimum():
    # 1,200 rows of 20 columns take the moments; the pipeline forms the features
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1200, 20))
    X[:, :3] = rng.uniform(size=(1200, 3)) < [[0.1, 0.5, 0.9]]
    y = X[:, 5] * X[:, 6] - X[:, 3] ** 2 + X[:, 0] + 0.1 * rng.standard_normal(1200)
    assert quadratic_moments.uses_moments(*X.shape, None)
    model = QuadraticRegression(alpha=1.0, clip_outputs=False).fit(X, y)
    pipeline = make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge(alpha=1.0)).fit(X, y)
    expected = pipeline.predict(X)
    np.testing.assert_allclose(model.predict(X), expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_the_default_regression_on_the_moments_is_the_one_on_the_syrk(monkeypatch):
    # the default constructor (penalties by leave-one-out, then the fit) takes the moments
    # on 1,200 rows of 20 columns and predicts as it does through the symmetric product
    rng = np.random.default_rng(2)
    X = rng.standard_normal((1200, 20)) + np.r_[3.0, np.zeros(19)]  # one offset column
    y = np.exp(X[:, 1] * X[:, 2] / 4 + 0.2 * rng.standard_normal(1200))
    model = QuadraticRegression().fit(X, y)
    monkeypatch.setattr(quadratic_ridge, "uses_moments", lambda *args: False)
    reference = QuadraticRegression().fit(X, y)
    assert model.alpha_ == reference.alpha_ and model.quadratic_alpha_ == reference.quadratic_alpha_
    expected = reference.predict(X)
    np.testing.assert_allclose(model.predict(X), expected, rtol=0, atol=1e-10 * np.abs(expected).max())


def test_the_centring_correction_is_the_symmetric_rank_two_update_of_the_trailing_block():
    rng = np.random.default_rng(0)
    H = rng.standard_normal((7, 7))
    H = H + H.T
    v, m = rng.standard_normal(6), rng.standard_normal(6)
    expected = H.copy()
    expected[1:, 1:] -= np.outer(v, m) + np.outer(m, v)
    quadratic_moments._subtract_symmetric_outer(H, v, m)  # in place
    np.testing.assert_allclose(H, expected, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(H[0], expected[0])  # the first row and column are not touched
    np.testing.assert_array_equal(H[:, 0], expected[:, 0])
