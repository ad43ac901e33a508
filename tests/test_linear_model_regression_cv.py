"""QuadraticRegressionCV against RidgeCV on PolynomialFeatures(2)-expanded data."""

import functools

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse
from sklearn.linear_model import RidgeCV
from sklearn.model_selection import KFold
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skquad import QuadraticRegression, QuadraticRegressionCV
from skquad.datasets import load_regression

EPS = np.finfo(np.float64).eps
ALPHAS = np.logspace(-3, 3, 7)


def _expanded(X):
    return PolynomialFeatures(2, include_bias=False).fit_transform(X)


@functools.cache
def _real(name):
    X, y = load_regression(name, return_X_y=True)
    X = StandardScaler().fit_transform(np.asarray(X, dtype=np.float64))
    return X, (np.log(y) if name == "cpus" else y)


@functools.cache
def _expanded_real(name):
    return _expanded(_real(name)[0])


def _condition(P, alpha):
    """Condition number of the centred (K + alpha I): what bounds the two solutions' gap."""
    centred = P - P.mean(axis=0)
    small = centred @ centred.T if P.shape[0] < P.shape[1] else centred.T @ centred
    top = scipy.linalg.eigvalsh(small, subset_by_index=[small.shape[0] - 1] * 2)[0]
    return (top + alpha) / alpha


# Both sides solve the same ridge systems exactly in float64 but from
# differently rounded matrices (RidgeCV's from the expanded features, ours
# from X alone): the solutions agree to about eps times the condition number
# of (Φ_cᵀΦ_c + alpha I) at the chosen alpha (3e8 on meats at alpha=0.01, so
# 1e-7 there; 2e5 on concrete, 1e-10). The factor 20 covers the few roundings
# of each side.
@pytest.mark.parametrize(
    "name, options",
    [
        ("concrete", {}),  # n > D: the D x D normal matrix
        ("concrete", {"scoring": "r2"}),
        ("cpus", {"fit_intercept": False}),
        ("car_prices", {}),  # rank-deficient one-hot columns
        ("meats", {}),  # n < D, three targets: the n x n kernel
        ("meats", {"alpha_per_target": True}),
        ("cpus", {"scoring": "neg_mean_absolute_error"}),
    ],
)
def test_matches_ridgecv_on_expanded_real_data(name, options):
    X, y = _real(name)
    P = _expanded_real(name)
    reference = RidgeCV(ALPHAS, **options).fit(P, y)
    model = QuadraticRegressionCV(ALPHAS, quadratic_ratios=(1.0,), clip_outputs=False,
                                  **options).fit(X, y)
    np.testing.assert_array_equal(model.alpha_, reference.alpha_)
    tolerance = 20 * EPS * _condition(P, np.min(reference.alpha_))
    np.testing.assert_allclose(model.best_score_, reference.best_score_, rtol=max(tolerance, 1e-12))
    expected = reference.predict(P)
    assert model.predict(X).shape == expected.shape
    assert np.max(np.abs(model.predict(X) - expected)) <= tolerance * np.max(np.abs(expected))
    # The coefficients are the pipeline's: Q_aa for x_a², 2 Q_ab for x_a x_b.
    d = X.shape[1]
    rows, cols = np.triu_indices(d)
    Q = model.Q_.reshape(-1, d, d)
    mapped = np.hstack([model.coef_.reshape(-1, d), np.where(rows == cols, 1.0, 2.0) * Q[:, rows, cols]])
    coefficients = np.atleast_2d(reference.coef_)
    assert np.max(np.abs(mapped - coefficients)) <= tolerance * np.max(np.abs(coefficients))


@pytest.mark.parametrize("shape", [(60, 4, None), (25, 5, 2)])  # cov, then gram mode
@pytest.mark.parametrize("scoring", [None, "r2"])
def test_weighted_cv_results_are_ridgecvs(shape, scoring):
    n, d, n_targets = shape
    rng = np.random.RandomState(0)
    X = rng.randn(n, d) + 0.5
    y = rng.randn(n) if n_targets is None else rng.randn(n, n_targets)
    weight = rng.uniform(0.5, 2.0, n)
    options = {"scoring": scoring, "store_cv_results": True}
    reference = RidgeCV(ALPHAS, **options).fit(_expanded(X), y, sample_weight=weight)
    model = QuadraticRegressionCV(ALPHAS, quadratic_ratios=(1.0,), **options).fit(X, y, sample_weight=weight)
    assert model.cv_results_.shape == reference.cv_results_.shape
    # Well-conditioned random data, condition numbers below 1e6: 1e-8.
    np.testing.assert_allclose(model.cv_results_, reference.cv_results_, rtol=1e-8, atol=1e-10)
    assert model.alpha_ == reference.alpha_


@pytest.mark.parametrize("shape", [(40, 3), (12, 4)])
def test_errors_are_the_brute_force_leave_one_out(shape):
    # The definition: refit without sample i, weighted squared error on i.
    n, d = shape
    rng = np.random.RandomState(1)
    X, y, weight = rng.randn(n, d), rng.randn(n), rng.uniform(0.5, 2.0, n)
    model = QuadraticRegressionCV(
        [0.3], quadratic_ratios=(1.0,), store_cv_results=True
    ).fit(X, y, sample_weight=weight)
    brute = np.empty(n)
    for i in range(n):
        keep = np.arange(n) != i
        # row i can lie outside the others' range: the leave-one-out is the unclipped model's
        single = QuadraticRegression(alpha=0.3, clip_inputs=False, clip_outputs=False).fit(
            X[keep], y[keep], sample_weight=weight[keep]
        )
        brute[i] = weight[i] * (y[i] - single.predict(X[i : i + 1])[0]) ** 2
    np.testing.assert_allclose(model.cv_results_[:, 0], brute, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("shape", [(40, 3), (12, 4)])  # cov, then gram mode
def test_two_penalty_errors_are_the_brute_force_leave_one_out(shape):
    # A quadratic ratio of 30: the leave-one-out of the problem with
    # quadratic_alpha = 30 alpha, refitted without each sample.
    n, d = shape
    rng = np.random.RandomState(3)
    X, y, weight = rng.randn(n, d), rng.randn(n), rng.uniform(0.5, 2.0, n)
    model = QuadraticRegressionCV(
        [0.3], quadratic_ratios=(30.0,), store_cv_results=True
    ).fit(X, y, sample_weight=weight)
    assert model.alpha_ == 0.3 and model.quadratic_alpha_ == pytest.approx(9.0)
    brute = np.empty(n)
    for i in range(n):
        keep = np.arange(n) != i
        # the unclipped model: a left-out row may lie outside the others' range
        single = QuadraticRegression(alpha=0.3, quadratic_alpha=9.0, clip_inputs=False,
                                     clip_outputs=False).fit(X[keep], y[keep], weight[keep])
        brute[i] = weight[i] * (y[i] - single.predict(X[i : i + 1])[0]) ** 2
    np.testing.assert_allclose(model.cv_results_[:, 0], brute, rtol=1e-8, atol=1e-12)
    refit = QuadraticRegression(alpha=0.3, quadratic_alpha=9.0).fit(X, y, sample_weight=weight)
    np.testing.assert_allclose(model.predict(X), refit.predict(X), rtol=1e-8, atol=1e-12)


def test_the_pair_is_the_best_of_every_ratio_and_alpha():
    # The chosen (alpha, ratio) has the smallest leave-one-out error of the
    # grid: each ratio alone (one-ratio searches) scores no better.
    rng = np.random.RandomState(4)
    X = rng.randn(50, 6)
    y = X[:, 0] + 0.3 * X[:, 1] * X[:, 2] + 0.3 * rng.randn(50)
    ratios = (1.0, 10.0, 100.0)
    model = QuadraticRegressionCV(ALPHAS, quadratic_ratios=ratios).fit(X, y)
    alone = [QuadraticRegressionCV(ALPHAS, quadratic_ratios=(r,)).fit(X, y) for r in ratios]
    best = max(alone, key=lambda m: m.best_score_)
    assert model.best_score_ == pytest.approx(best.best_score_)
    assert (model.alpha_, model.quadratic_alpha_) == (best.alpha_, best.quadratic_alpha_)
    assert model.quadratic_alpha_ != model.alpha_  # the data favour a separate penalty


def test_gram_and_cov_modes_agree_and_sparse_input_gives_the_dense_model():
    rng = np.random.RandomState(2)
    X, y = rng.randn(50, 4), rng.randn(50, 2)  # n = 50 > D = 14
    gram = QuadraticRegressionCV(ALPHAS, gcv_mode="gram", store_cv_results=True).fit(X, y)
    cov = QuadraticRegressionCV(ALPHAS, gcv_mode="cov", store_cv_results=True).fit(X, y)
    np.testing.assert_allclose(gram.cv_results_, cov.cv_results_, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(gram.predict(X), cov.predict(X), rtol=1e-9, atol=1e-12)
    sparse = QuadraticRegressionCV(ALPHAS).fit(scipy.sparse.csr_matrix(X), y)
    np.testing.assert_allclose(sparse.predict(X), cov.predict(X), rtol=1e-9, atol=1e-12)


def test_k_fold_is_ridgecvs_grid_search():
    X, y = _real("concrete")
    folds = KFold(4, shuffle=True, random_state=0)
    alphas = [0.0, 0.1, 10.0]  # alpha = 0 is allowed with folds, as in RidgeCV
    reference = RidgeCV(alphas, cv=folds).fit(_expanded(X), y)
    model = QuadraticRegressionCV(alphas, quadratic_ratios=(1.0,), cv=folds,
                                  clip_outputs=False).fit(X, y)
    assert model.alpha_ == reference.alpha_
    np.testing.assert_allclose(model.best_score_, reference.best_score_, rtol=1e-9)
    np.testing.assert_allclose(model.predict(X), reference.predict(_expanded(X)), rtol=1e-8)


def test_refusals_name_the_parameter():
    X, y = np.random.RandomState(0).randn(30, 3), np.arange(30.0)
    with pytest.raises(ValueError, match=r"alphas\[1\] == 0.0, must be > 0"):
        QuadraticRegressionCV([1.0, 0.0]).fit(X, y)
    with pytest.raises(ValueError, match="store_cv_results=True are incompatible"):
        QuadraticRegressionCV(cv=3, store_cv_results=True).fit(X, y)
    with pytest.raises(ValueError, match="alpha_per_target=True are incompatible"):
        QuadraticRegressionCV(cv=3, alpha_per_target=True).fit(X, y)


def test_the_leave_one_out_threads_follow_its_largest_call(monkeypatch):
    # 1,500 x 23 (D = 299): every call is under PARALLEL_CALL_FLOPS, so the search runs its
    # BLAS on one thread, though its calls add up to more than a threaded training step
    import skquad._foundation._runtime as runtime
    from skquad._foundation._threads import PARALLEL_CALL_FLOPS, PARALLEL_FLOPS

    asked = []
    rule = runtime.thread_count
    monkeypatch.setattr(runtime, "thread_count",  # what separate_calls_blas asks
                        lambda *args, **kwargs: asked.append((args, kwargs)) or rule(*args, **kwargs))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((1500, 23))
    QuadraticRegressionCV().fit(X, X[:, 0] * X[:, 1] + rng.standard_normal(1500))
    (args, kwargs), = asked
    assert kwargs == {"separate_calls": True}
    assert args[2] == max(10.0 * 299**3, 2.0 * 1500 * 299**2)  # the eigendecomposition's
    assert PARALLEL_FLOPS < args[2] < PARALLEL_CALL_FLOPS
    assert rule(*args, **kwargs) == 1


def test_too_large_a_decomposition_is_refused_before_allocating(monkeypatch):
    import skquad._foundation._memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    X, y = np.random.RandomState(0).randn(30, 3), np.arange(30.0)
    with pytest.raises(MemoryError, match="cv=None.*pass cv=5"):
        QuadraticRegressionCV().fit(X, y)
