"""skquad.nn.quadratic_ridge against scikit-learn's Ridge on PolynomialFeatures(2).

The module never forms the n x D feature matrix; the reference does. Both solve
the same strictly convex problem (alpha > 0), so the solutions agree up to the
rounding of a well-conditioned solve (condition number ~1e3 here): 1e-8
relative for the direct solvers; conjugate gradients run to a relative
residual of 1e-12, which bounds the error by cond * 1e-12, so 1e-7.
"""

import numpy as np
import pytest
import scipy.sparse
from sklearn.linear_model import Ridge
from sklearn.preprocessing import PolynomialFeatures

from skquad.nn.quadratic_ridge import (
    QuadraticRidgeLeaveOneOut,
    coefficients_to_model,
    expansion_size,
    fit_quadratic_ridge,
    quadratic_model_scores,
)


def _data(n=40, d=3, n_targets=2):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(n, d))
    X[rng.uniform(size=X.shape) < 0.3] = 0.0  # zeros, for the sparse case
    Y = X[:, :1] ** 2 - X[:, 1:2] * X[:, 2:3] + rng.normal(scale=0.1, size=(n, n_targets))
    weight = rng.uniform(0.5, 2.0, size=n)
    return X, Y, weight


def _reference(X, Y, weight, alpha, fit_intercept):
    features = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    ridge = Ridge(alpha=alpha, fit_intercept=fit_intercept, solver="cholesky")
    ridge.fit(features, Y, sample_weight=weight)
    return ridge.coef_.T, np.broadcast_to(ridge.intercept_, (Y.shape[1],))


@pytest.mark.parametrize("d", [1, 2, 5])
def test_expansion_size_is_polynomial_features_width(d):
    assert expansion_size(d) == PolynomialFeatures(2, include_bias=False).fit(np.ones((1, d))).n_output_features_


@pytest.mark.parametrize("solver, rtol", [("primal", 1e-8), ("kernel", 1e-8), ("cg", 1e-7)])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("sparse", [False, True])
def test_the_solvers_match_ridge_on_the_expanded_features(solver, rtol, fit_intercept, sparse):
    X, Y, weight = _data()
    expected_coef, expected_intercept = _reference(X, Y, weight, 0.5, fit_intercept)
    coefficients, intercept, n_iter = fit_quadratic_ridge(
        scipy.sparse.csr_matrix(X) if sparse else X, Y, weight, 0.5,
        fit_intercept=fit_intercept, solver=solver, tol=1e-12,
    )
    scale = np.abs(expected_coef).max()
    np.testing.assert_allclose(coefficients, expected_coef, rtol=rtol, atol=rtol * scale)
    np.testing.assert_allclose(intercept, expected_intercept, rtol=rtol, atol=rtol * scale)
    assert (n_iter is None) == (solver != "cg")


def test_the_model_form_reproduces_the_features_scores():
    X, Y, weight = _data()
    coefficients, intercept, _ = fit_quadratic_ridge(X, Y, weight, 0.5)
    coef, Q = coefficients_to_model(coefficients, X.shape[1])
    assert coef.shape == (2, 3) and Q.shape == (2, 3, 3)
    np.testing.assert_array_equal(Q, np.transpose(Q, (0, 2, 1)))
    features = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    np.testing.assert_allclose(
        quadratic_model_scores(X, Q, coef, intercept), features @ coefficients + intercept, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("mode", ["gram", "cov"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_leave_one_out_errors_are_those_of_refits(mode, fit_intercept):
    # n = 15 refits, each without one row; the error is scaled by sqrt(weight), as RidgeCV's
    X, Y, weight = _data(n=15)
    alphas = np.array([0.1, 1.0, 10.0])
    looe = QuadraticRidgeLeaveOneOut(X, Y, weight, fit_intercept=fit_intercept, mode=mode).errors(alphas)
    assert looe.shape == (15, 2, 3)
    expected = np.empty_like(looe)
    features = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    for i in range(15):
        keep = np.arange(15) != i
        for k, alpha in enumerate(alphas):
            coef, intercept = _reference(X[keep], Y[keep], weight[keep], alpha, fit_intercept)
            expected[i, :, k] = np.sqrt(weight[i]) * (Y[i] - features[i] @ coef - intercept)
    np.testing.assert_allclose(looe, expected, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("mode", ["gram", "cov"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_unit_leave_one_out_is_the_leave_one_out_of_repeated_rows(mode, fit_intercept):
    # integer weights, zeros among them: leaving one unit out of row i is leaving one of
    # its copies out of the repeated data (RidgeCV's convention there, weights one)
    X, Y, _ = _data(n=24)
    weight = np.random.RandomState(1).randint(0, 4, size=24).astype(float)
    copies = weight.astype(int)
    alphas = np.array([0.1, 1.0, 10.0])
    unit = QuadraticRidgeLeaveOneOut(X, Y, weight, fit_intercept=fit_intercept, mode=mode,
                                     leave_out="unit").set_quadratic_scale(0.3)
    repeated = QuadraticRidgeLeaveOneOut(np.repeat(X, copies, axis=0), np.repeat(Y, copies, axis=0),
                                         np.ones(copies.sum()), fit_intercept=fit_intercept,
                                         mode=mode).set_quadratic_scale(0.3)
    looe, expected = unit.errors(alphas), repeated.errors(alphas)
    present = weight > 0
    first_copy = np.cumsum(copies)[present] - 1
    np.testing.assert_allclose(looe[present] / np.sqrt(weight[present])[:, None, None],
                               expected[first_copy], rtol=1e-8, atol=1e-10)
    assert np.all(looe[~present] == 0.0)  # rows without weight count for nothing
    # the squared errors weighted by the copies: the repeated data's sum
    np.testing.assert_allclose((looe**2).sum(axis=0), (expected**2).sum(axis=0), rtol=1e-8)


@pytest.mark.parametrize("mode", ["gram", "cov"])
def test_unit_leave_one_out_of_a_row_of_leverage_one_is_zero(mode):
    # one row carries all the weight: its leverage is one at every alpha (the intercept
    # alone fits it); no division by zero, error 0
    X, Y, _ = _data(n=24)
    weight = np.zeros(24)
    weight[3] = 1.0
    with np.errstate(divide="raise", invalid="raise"):
        looe = QuadraticRidgeLeaveOneOut(X, Y, weight, mode=mode, leave_out="unit").errors(
            np.array([0.1, 10.0]))
    assert np.all(looe == 0.0)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_tensor_normal_equations_are_numpys(fit_intercept, monkeypatch):
    # a torch X's normal equations (the primal route off the CPU), over several row blocks,
    # equal NumPy's to round-off
    torch = pytest.importorskip("torch")
    from skquad.nn import quadratic_ridge

    rng = np.random.default_rng(0)
    X, Y, weight = rng.standard_normal((300, 5)), rng.standard_normal((300, 2)), rng.uniform(0, 2, 300)
    rows, cols = quadratic_ridge.pairs_of(5)
    monkeypatch.setattr(quadratic_ridge, "_BLOCK_ELEMENTS", 40 * 20)  # 40 rows of D = 20 a block
    mean = quadratic_ridge._feature_means(X, weight, rows, cols) if fit_intercept else np.zeros(20)
    y_mean = weight @ Y / weight.sum() if fit_intercept else np.zeros(2)
    expected = (*quadratic_ridge.normal_equations(X, Y, weight, mean, y_mean), mean, y_mean)
    found = quadratic_ridge._tensor_normal_equations(torch.asarray(X), Y, weight, rows, cols, fit_intercept)
    for value, reference in zip(found, expected):
        np.testing.assert_allclose(value, reference, rtol=1e-12, atol=1e-12)


def _one_hot_data(n=60, seed=1):
    """Two categoricals one-hot (3 and 2 levels), a constant column and two numeric ones."""
    rng = np.random.RandomState(seed)
    X = np.column_stack([np.eye(3)[rng.randint(0, 3, n)], np.eye(2)[rng.randint(0, 2, n)],
                         np.ones(n), rng.normal(size=(n, 2))])
    Y = X[:, :1] * X[:, 6:7] - X[:, 3:4] + X[:, 7:8] ** 2 + rng.normal(scale=0.1, size=(n, 2))
    return X, Y, rng.uniform(0.5, 2.0, size=n)


def test_the_leave_one_out_keeps_one_column_per_distinct_feature():
    # the dummies' squares are the dummies (the constant's too), the products of two levels
    # of one categorical and the centred constant column and its square are zero: 44
    # features, 33 columns
    from skquad.nn.quadratic_ridge import _distinct_features, pairs_of

    X, Y, weight = _one_hot_data()
    loo = QuadraticRidgeLeaveOneOut(X, Y, weight, mode="cov")
    columns, column_of = loo._columns
    rows, cols = pairs_of(8)
    pair = {(a, b): 8 + k for k, (a, b) in enumerate(zip(rows, cols))}
    assert column_of[pair[0, 0]] == column_of[0] >= 0 and column_of[pair[4, 4]] == column_of[4]
    assert column_of[pair[0, 1]] == column_of[pair[3, 4]] == column_of[5] == -1
    assert column_of[pair[6, 6]] != column_of[6]  # a numeric column's square stays
    assert columns.size == 33 and loo._cov.shape == (33, 33)
    numeric = _distinct_features(X[:, 6:], np.eye(5), *pairs_of(2))  # numeric columns only
    assert numeric[0].tolist() == numeric[1].tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("scale", [1.0, 0.3])
def test_one_hot_leave_one_out_errors_and_coefficients_are_those_of_refits(fit_intercept, scale):
    # merged and dropped features change nothing: the errors of n refits of Ridge on the
    # expanded features (the quadratic ones times the scale), and the coefficients
    X, Y, weight = _one_hot_data()
    n, d = X.shape
    alphas = np.array([0.1, 3.0])
    loo = QuadraticRidgeLeaveOneOut(X, Y, weight, fit_intercept=fit_intercept, mode="cov")
    loo.set_quadratic_scale(scale)
    looe = loo.errors(alphas)
    features = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    features[:, d:] *= scale
    expected = np.empty_like(looe)
    for i in range(n):
        keep = np.arange(n) != i
        for k, alpha in enumerate(alphas):
            ridge = Ridge(alpha=alpha, fit_intercept=fit_intercept, solver="cholesky").fit(
                features[keep], Y[keep], sample_weight=weight[keep])
            expected[i, :, k] = np.sqrt(weight[i]) * (Y[i] - ridge.predict(features[i : i + 1])[0])
    np.testing.assert_allclose(looe, expected, rtol=1e-7, atol=1e-9)
    coefficients, intercept = loo.coefficients(np.array([3.0, 3.0]))
    ridge = Ridge(alpha=3.0, fit_intercept=fit_intercept, solver="cholesky").fit(
        features, Y, sample_weight=weight)
    reference = ridge.coef_.T.copy()
    reference[d:] *= scale
    np.testing.assert_allclose(coefficients, reference, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(intercept, np.broadcast_to(ridge.intercept_, (2,)), rtol=1e-8, atol=1e-10)
