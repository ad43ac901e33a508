"""QuadraticRegression against PolynomialFeatures(2) + Ridge, the model it claims to be."""

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

import skquad.nn.quadratic_ridge as ridge_module
from skquad import QuadraticRegression

SOLVERS = ["cholesky", "kernel", "cg"]


def _pipeline(alpha, fit_intercept=True):
    return make_pipeline(
        PolynomialFeatures(2, include_bias=False), Ridge(alpha=alpha, fit_intercept=fit_intercept)
    )


def _data(n, d, n_targets=None, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) + 0.5  # not centred: the intercept's centring matters
    y = rng.randn(n) if n_targets is None else rng.randn(n, n_targets)
    return X, y, rng.uniform(0.5, 2.0, n)


def _relative_error(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


# Both sides solve the same well-conditioned (alpha > 0) linear system in
# float64, in different orders: agreement to ~1e-12 relative; cg stops at
# tol=1e-12 on the residual, which with condition numbers below 1e3 here
# keeps the predictions within 1e-8.
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("shape", [(120, 4, None), (40, 9, 3), (200, 6, 2)])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_predictions_are_the_pipelines(solver, shape, fit_intercept):
    n, d, n_targets = shape
    X, y, w = _data(n, d, n_targets)
    reference = _pipeline(0.7, fit_intercept).fit(X, y, ridge__sample_weight=w)
    model = QuadraticRegression(
        alpha=0.7, solver=solver, fit_intercept=fit_intercept, tol=1e-12
    ).fit(X, y, sample_weight=w)
    assert model.solver_ == solver
    assert model.predict(X).shape == y.shape
    tolerance = 1e-8 if solver == "cg" else 1e-10
    assert _relative_error(model.predict(X), reference.predict(X)) < tolerance
    # The coefficients are the pipeline's: Q_aa for x_a², 2 Q_ab for x_a x_b.
    ridge = reference[-1]
    coefficients = np.atleast_2d(ridge.coef_)
    rows, cols = np.triu_indices(d)
    Q = model.Q_.reshape(-1, d, d)
    expected_cross = np.where(rows == cols, 1.0, 2.0) * Q[:, rows, cols]
    np.testing.assert_allclose(expected_cross, coefficients[:, d:], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(model.coef_.reshape(-1, d), coefficients[:, :d], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("shape", [(120, 4, None), (40, 9, 3)])
def test_two_penalties_are_ridge_with_a_weighted_penalty(solver, shape):
    # alpha on w, quadratic_alpha on the quadratic coefficients: Ridge(alpha=1)
    # on the explicit features, the quadratic ones divided by sqrt(ratio).
    n, d, n_targets = shape
    X, y, w = _data(n, d, n_targets)
    alpha, quadratic_alpha = 0.7, 40.0
    scale = np.ones(d * (d + 3) // 2)
    scale[d:] = np.sqrt(alpha / quadratic_alpha)
    features = PolynomialFeatures(2, include_bias=False).fit_transform(X) * scale
    reference = Ridge(alpha=alpha).fit(features, y, sample_weight=w)
    model = QuadraticRegression(
        alpha=alpha, quadratic_alpha=quadratic_alpha, solver=solver, tol=1e-12
    ).fit(X, y, sample_weight=w)
    assert _relative_error(model.predict(X), reference.predict(features)) < 1e-8
    assert (model.alpha_, model.quadratic_alpha_) == (alpha, quadratic_alpha)


def test_auto_is_the_leave_one_out_pair_and_scales_it_on_a_subsample(monkeypatch):
    from skquad import QuadraticRegressionCV
    from skquad.linear_model import _regression
    from skquad.linear_model._regression_cv import UnitLeaveOneOutCV

    X, y, w = _data(80, 5)
    y = y + X[:, 0] * X[:, 1]
    model = QuadraticRegression().fit(X, y, sample_weight=w)
    search = UnitLeaveOneOutCV(
        _regression.AUTO_ALPHAS, quadratic_ratios=_regression.QUADRATIC_RATIOS
    ).fit(X, y, sample_weight=w)
    assert (model.alpha_, model.quadratic_alpha_) == (search.alpha_, search.quadratic_alpha_)
    fixed = QuadraticRegression(alpha=model.alpha_, quadratic_alpha=model.quadratic_alpha_)
    assert _relative_error(model.predict(X), fixed.fit(X, y, sample_weight=w).predict(X)) < 1e-12
    # More rows than the selection sees: every other row, the penalties times n / m.
    monkeypatch.setattr(_regression, "_AUTO_MAX_ROWS", 40)
    model = QuadraticRegression().fit(X, y)
    half = QuadraticRegressionCV(
        _regression.AUTO_ALPHAS, quadratic_ratios=_regression.QUADRATIC_RATIOS
    ).fit(X[::2], y[::2])
    assert model.alpha_ == pytest.approx(2 * half.alpha_)
    assert model.quadratic_alpha_ == pytest.approx(2 * half.quadratic_alpha_)


@pytest.mark.parametrize("shape", [(30, 3), (12, 4)])  # the "cov" and the "gram" leave-one-out
def test_auto_with_integer_weights_is_auto_on_the_repeated_rows(shape):
    X, y, _ = _data(*shape)
    y = y + X[:, 0] * X[:, 1]
    weight = np.random.RandomState(2).randint(0, 4, size=shape[0]).astype(float)
    copies = weight.astype(int)
    weighted = QuadraticRegression().fit(X, y, sample_weight=weight)
    repeated = QuadraticRegression().fit(np.repeat(X, copies, axis=0), np.repeat(y, copies))
    assert (weighted.alpha_, weighted.quadratic_alpha_) == (repeated.alpha_, repeated.quadratic_alpha_)
    assert _relative_error(weighted.predict(X), repeated.predict(X)) < 1e-9


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(quadratic_alpha=2.0), "alpha='auto' chooses quadratic_alpha too"),
        (dict(alpha=0.0, quadratic_alpha=2.0), "quadratic_alpha needs a positive alpha"),
        (dict(alpha=1.0, quadratic_alpha=0.0), "quadratic_alpha"),
    ],
)
def test_penalty_refusals_name_the_parameter(params, message):
    X, y, _ = _data(30, 3)
    with pytest.raises(ValueError, match=message):
        QuadraticRegression(**params).fit(X, y)


def test_auto_chooses_by_shape():
    X, y, _ = _data(30, 10)  # D = 65 > n
    assert QuadraticRegression().fit(X, y).solver_ == "kernel"
    X, y, _ = _data(300, 5)  # D = 20 < n
    assert QuadraticRegression().fit(X, y).solver_ == "cholesky"


def test_per_target_alpha_and_its_validation():
    X, y, _ = _data(80, 4, 2)
    model = QuadraticRegression(alpha=[0.1, 10.0]).fit(X, y)
    for k, alpha in enumerate([0.1, 10.0]):
        single = QuadraticRegression(alpha=alpha).fit(X, y[:, k])
        np.testing.assert_allclose(model.predict(X)[:, k], single.predict(X), rtol=1e-10)
    with pytest.raises(ValueError, match="number of penalties"):
        QuadraticRegression(alpha=[1.0, 2.0, 3.0]).fit(X, y)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_sparse_input_gives_the_dense_model(solver, fmt, thread_counts, perturb_ulps):
    X, y, w = _data(60, 5)
    X[np.abs(X) < 0.8] = 0.0
    X = perturb_ulps(X)
    dense = QuadraticRegression(solver=solver, tol=1e-12).fit(X, y, sample_weight=w)
    sparse = QuadraticRegression(solver=solver, tol=1e-12).fit(
        scipy.sparse.csr_matrix(X).asformat(fmt), y, sample_weight=w
    )
    assert _relative_error(sparse.predict(scipy.sparse.csr_matrix(X)), dense.predict(X)) < 1e-9


def test_row_blocks_do_not_change_the_result(monkeypatch):
    """A tiny block size (many blocks) gives the one-block model: the streaming is exact."""
    X, y, w = _data(150, 5, 2)
    whole = QuadraticRegression(solver="cholesky").fit(X, y, sample_weight=w)
    monkeypatch.setattr(ridge_module, "_BLOCK_ELEMENTS", 64)
    # the normal equations' SYRK: 4 rows of D + 2 = 22 a block, the last one short
    monkeypatch.setattr(ridge_module, "_GRAM_BLOCK_ELEMENTS", 4 * 22)
    blocked = QuadraticRegression(solver="cholesky").fit(X, y, sample_weight=w)
    assert _relative_error(blocked.predict(X), whole.predict(X)) < 1e-11


def test_float32_input_keeps_float32_fitted_arrays():
    X, y, _ = _data(100, 4)
    model = QuadraticRegression().fit(X.astype(np.float32), y)
    assert model.Q_.dtype == np.float32 and model.coef_.dtype == np.float32
    reference = QuadraticRegression().fit(X, y)
    # float32 rounding of the inputs and of the stored coefficients: ~1e-6.
    assert _relative_error(model.predict(X.astype(np.float32)), reference.predict(X)) < 1e-4


def test_bad_targets_are_refused_and_the_previous_model_kept():
    X, y, _ = _data(50, 3)
    model = QuadraticRegression().fit(X, y)
    Q = model.Q_.copy()
    with pytest.raises(ValueError, match="NaN"):
        model.fit(X, np.where(np.arange(50) == 0, np.nan, y))
    with pytest.raises(ValueError, match="must be numeric"):
        model.fit(X, np.array(["a", "b"] * 25))
    np.testing.assert_array_equal(model.Q_, Q)


# The regression sets lie beside the UCI sets that conftest.py points SKQUAD_DATA at.
DATA = Path(os.environ.get("SKQUAD_DATA", "missing")).parent / "regression"


@pytest.mark.skipif(not (DATA / "concrete.csv").exists(), reason="the shared regression data is not beside the checkout")
def test_concrete_matches_the_pipeline_to_1e_6():
    import pandas as pd
    from sklearn.preprocessing import StandardScaler

    frame = pd.read_csv(DATA / "concrete.csv")
    y = frame.pop("compressive_strength").to_numpy()
    X = StandardScaler().fit_transform(frame.to_numpy(dtype=np.float64))
    reference = _pipeline(1.0).fit(X, y)
    model = QuadraticRegression(alpha=1.0, clip_outputs=False).fit(X, y)
    assert _relative_error(model.predict(X), reference.predict(X)) < 1e-6
    assert model.score(X, y) == pytest.approx(reference.score(X, y), abs=1e-9)


def test_features_whose_degree_4_products_overflow_are_a_clear_error():
    # Issue 19 (found by tests/test_properties.py): X ~ 1e77 overflowed the
    # normal equations (x^4 > 1e308) and the fit returned NaN coefficients.
    rng = np.random.RandomState(0)
    X = rng.randn(20, 2)
    y = X[:, 0] * X[:, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the error, not numpy's overflow warnings
        with pytest.raises(ValueError, match=r"largest entry, 2.\d+e\+77.*Scale the features"):
            QuadraticRegression().fit(X * 1e77, y)
    assert np.all(np.isfinite(QuadraticRegression().fit(X * 1e30, y).coef_))
