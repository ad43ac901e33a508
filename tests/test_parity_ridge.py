"""scikit-learn's own Ridge and RidgeCV tests, run against QuadraticRegression(CV).

Adapted from ``sklearn/linear_model/tests/test_ridge.py`` (scikit-learn 1.9):
each test below names its source. ``Ridge`` becomes QuadraticRegression (QR),
``RidgeCV`` QuadraticRegressionCV (QRCV), at Ridge's ``alpha=1.0`` and
RidgeCV's one penalty (``quadratic_ratios=(1.0,)``), with the same data,
parameters and assertions. Where an assertion compares with a linear model's numbers
(``LinearRegression``, ``Ridge`` itself), the reference is that model on the
``PolynomialFeatures(2)`` features, the model QR claims to be; where it reads
``coef_`` only, ``Q_`` is read too. ``gcv_mode="svd"`` becomes ``"eigen"``
(QRCV has no SVD mode: the feature matrix is never formed).

Left out, with the reason:

* solvers QR does not have and their options (svd, lsqr, sparse_cg, sag,
  saga, lbfgs, ``positive``, ``copy_X``, ``random_state``):
  ``test_ridge_regression*`` on ``ols_ridge_dataset`` (parametrized over
  those solvers; the same "QR equals the PolynomialFeatures + Ridge optimum"
  is tests/test_linear_model_regression.py's subject),
  ``test_primal_dual_relationship`` and ``test_ridge_regression_convergence_fail``
  (the private ``ridge_regression`` function), ``test_solver_consistency``,
  ``test_sparse_cg_max_iter``, ``test_ridge_fit_intercept_sparse*``,
  ``test_ridge_regression_check_arguments_validity``,
  ``test_ridge_sag_with_X_fortran``, ``test_ridge_positive_*``,
  ``test_positive_ridge_loss``, ``test_lbfgs_solver_*``,
  ``test_ridge_ground_truth_positive_test``, ``test_dtype_match*`` (Ridge's
  solvers in float32: QR's float32 rules are the runtime work of issue 22),
  ``test_ridge_regression_dtype_stability``;
* private internals: ``test_X_CenterStackOp``, ``test_compute_gram``,
  ``test_compute_covariance`` (``_RidgeGCV``'s helpers),
  ``test_check_gcv_mode_choice`` (``_check_gcv_mode``);
* numbers that belong to a linear model: ``test_regularization_limits_ridge*``
  (at alpha=1e16 Ridge's coefficients vanish at a rate set by the linear
  features' scale; at alpha=1e-16 the degree-2 system of these shapes is
  singular and the limit is a pseudo-inverse the two computations reach
  differently), ``test_ridge_sample_weight_consistency`` (Ridge's solvers on
  sparse and dense float32 data);
* the classifiers (``RidgeClassifier``, ``RidgeClassifierCV``,
  ``test_class_weights*``, ``test_ridgeclassifier_multilabel``,
  ``test_ridge_classifier_*``): skquad's quadratic classifier is
  QuadraticLogisticRegression (tests/test_parity_logistic.py);
* Ridge's array-API solver rules (``test_array_api_error_and_warnings_for_solver_parameter``,
  ``test_array_api_numpy_namespace_no_warning``: every QR solver takes every namespace (a torch
  tensor's normal equations on its device, the rest with numpy on the host), so none is refused), the classifiers' multilabel array-API test, and
  metadata routing (``test_metadata_routing_*``, ``test_set_score_request_with_default_scoring``):
  QR routes ``sample_weight`` only.
"""

import functools

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_almost_equal, assert_array_equal
from scipy import sparse
from sklearn import config_context
from sklearn.datasets import load_diabetes, make_regression
from sklearn.linear_model import LinearRegression, Ridge, RidgeCV
from sklearn.linear_model.tests.test_ridge import (
    _make_sparse_offset_regression,
    check_array_api_attributes,
)
from sklearn.metrics import get_scorer, make_scorer, mean_squared_error
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut
from sklearn.preprocessing import PolynomialFeatures
from sklearn.utils._array_api import (
    _atol_for_type,
    move_to,
    yield_namespace_device_dtype_combinations,
)
from sklearn.utils._testing import _array_api_for_tests
from sklearn.utils.estimator_checks import check_array_api_input_and_values

from skquad import QuadraticRegression, QuadraticRegressionCV

# Ridge's and RidgeCV's problems: one penalty for every coefficient (the
# estimators' defaults choose a separate one for the quadratic block), and
# Ridge's unbounded predictions (the defaults clip them to the targets' range).
QR = functools.partial(QuadraticRegression, alpha=1.0, clip_outputs=False)
QRCV = functools.partial(QuadraticRegressionCV, quadratic_ratios=(1.0,), clip_outputs=False)

diabetes = load_diabetes()
X_diabetes, y_diabetes = diabetes.data, diabetes.target
ind = np.arange(X_diabetes.shape[0])
np.random.RandomState(0).shuffle(ind)
ind = ind[:200]
X_diabetes, y_diabetes = X_diabetes[ind], y_diabetes[ind]


def _expand(X):
    return PolynomialFeatures(2, include_bias=False).fit_transform(X)


def _pipeline_coefficients(model):
    """QR's model as the PolynomialFeatures(2) coefficients: w, then Q_aa and 2 Q_ab."""
    coef = np.atleast_2d(model.coef_)
    d = coef.shape[1]
    Q = np.reshape(model.Q_, (-1, d, d))
    rows, cols = np.triu_indices(d)
    return np.hstack([coef, np.where(rows == cols, 1.0, 2.0) * Q[:, rows, cols]])


def test_ridge_shapes_type():
    # test_ridge.py::test_ridge_shapes_type (Q_ added)
    rng = np.random.RandomState(0)
    n_samples, n_features = 5, 10
    X = rng.randn(n_samples, n_features)
    y = rng.randn(n_samples)
    Y1 = y[:, np.newaxis]
    Y = np.c_[y, 1 + y]
    ridge = QR()

    ridge.fit(X, y)
    assert ridge.coef_.shape == (n_features,)
    assert ridge.Q_.shape == (n_features, n_features)
    assert ridge.intercept_.shape == ()
    assert isinstance(ridge.coef_, np.ndarray)
    assert isinstance(ridge.intercept_, float)

    ridge.fit(X, Y1)
    assert ridge.coef_.shape == (n_features,)
    assert ridge.Q_.shape == (n_features, n_features)
    assert ridge.intercept_.shape == (1,)
    assert isinstance(ridge.intercept_, np.ndarray)

    ridge.fit(X, Y)
    assert ridge.coef_.shape == (2, n_features)
    assert ridge.Q_.shape == (2, n_features, n_features)
    assert ridge.intercept_.shape == (2,)


def test_ridge_intercept():
    # test_ridge.py::test_ridge_intercept
    rng = np.random.RandomState(0)
    X = rng.randn(5, 10)
    y = rng.randn(5)
    Y = np.c_[y, 1.0 + y]
    ridge = QR()
    intercept = ridge.fit(X, y).intercept_
    ridge.fit(X, Y)
    assert_allclose(ridge.intercept_[0], intercept, atol=1e-7)
    assert_allclose(ridge.intercept_[1], intercept + 1.0, atol=1e-7)


def test_ridge_vs_lstsq():
    # test_ridge.py::test_ridge_vs_lstsq: at alpha=0, the least-squares
    # solution of the degree-2 features (the minimum-norm one: 14 features,
    # 5 samples), as LinearRegression finds it on them.
    rng = np.random.RandomState(0)
    y = rng.randn(5)
    X = rng.randn(5, 4)
    ridge = QR(alpha=0.0, fit_intercept=False).fit(X, y)
    ols = LinearRegression(fit_intercept=False).fit(_expand(X), y)
    assert_array_almost_equal(_pipeline_coefficients(ridge)[0], ols.coef_)


def test_ridge_individual_penalties():
    # test_ridge.py::test_ridge_individual_penalties, with 100 samples instead
    # of 20: the penalties include alpha=0, where the 65 degree-2 features
    # need more samples than features to be determined, as the linear test's
    # 10 features are by 20.
    rng = np.random.RandomState(42)
    n_samples, n_features, n_targets = 100, 10, 5
    X = rng.randn(n_samples, n_features)
    y = rng.randn(n_samples, n_targets)
    penalties = np.arange(n_targets)
    coef_cholesky = np.array(
        [QR(alpha=alpha, solver="cholesky").fit(X, target).coef_ for alpha, target in zip(penalties, y.T)]
    )
    for solver in ["cholesky", "kernel", "cg"]:
        coef = QR(alpha=penalties, solver=solver, tol=1e-12).fit(X, y).coef_
        # The dual ("kernel") system is n x n of rank D < n: singular at
        # alpha=0, so it is compared where alpha > 0.
        rows = slice(1, None) if solver == "kernel" else slice(None)
        assert_array_almost_equal(coef_cholesky[rows], coef[rows])
    err_msg = "Number of targets and number of penalties do not correspond: 4 != 5"
    with pytest.raises(ValueError, match=err_msg):
        QR(alpha=penalties[:-1]).fit(X, y)


@pytest.mark.parametrize("gcv_mode", ["eigen"])
# sparse X on the single-target case only: the suite's time (the
# leave-one-out reference refits QR n_samples x 5 times per case)
@pytest.mark.parametrize(
    "X_container, y_shape, noise",
    [
        (np.asarray, (11,), 1.0),
        (sparse.csr_matrix, (11,), 1.0),
        (np.asarray, (11, 1), 30.0),
        (np.asarray, (11, 3), 150.0),
    ],
    ids=["dense-1d", "csr-1d", "dense-1col", "dense-3"],
)
@pytest.mark.parametrize("X_shape", [(11, 8), (11, 20), (25, 3)], ids=["tall", "wide", "tall-D"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_ridge_gcv_vs_ridge_loo_cv(gcv_mode, X_container, X_shape, y_shape, fit_intercept, noise):
    # test_ridge.py::test_ridge_gcv_vs_ridge_loo_cv (float64; "tall-D" has
    # n > D = d(d+3)/2, where the D x D decomposition is the natural one)
    n_samples, n_features = X_shape
    n_targets = y_shape[-1] if len(y_shape) == 2 else 1
    X, y = _make_sparse_offset_regression(
        n_samples=n_samples, n_features=n_features, n_targets=n_targets, random_state=0,
        shuffle=False, noise=noise, n_informative=min(5, n_features),
    )
    y = y.reshape((n_samples, *y_shape[1:]))
    alphas = [1e-3, 0.1, 1.0, 10.0, 1e3]
    gcv = QRCV(gcv_mode=gcv_mode, fit_intercept=fit_intercept, alphas=alphas).fit(X_container(X), y)
    if X_shape == (11, 20):
        # 230 degree-2 features of magnitude up to 1e3 and targets offset by
        # 1e4 (every target shape): the five alphas' leave-one-out errors differ by 1e-8 relative,
        # below the ~1e-6 accuracy of any float64 computation of them (the
        # brute-force refits included), so the reference is RidgeCV on the
        # expanded features, computed as the linear test computes it. Which of
        # the near-tied alphas wins is rounding (it moved with the BLAS calls of
        # the normal equations, and for one target with numpy 2.5 / scipy 1.18),
        # so: the chosen alpha's error is a minimum to that accuracy, and the
        # coefficients are Ridge's at the chosen alpha.
        loo = RidgeCV(alphas=alphas, fit_intercept=fit_intercept, store_cv_results=True).fit(_expand(X), y)
        errors = loo.cv_results_.mean(axis=tuple(range(loo.cv_results_.ndim - 1)))
        # (measured: the chosen alpha's error within 2.9e-6 of RidgeCV's minimum)
        assert errors[alphas.index(gcv.alpha_)] <= errors.min() * (1 + 1e-5)
        chosen = Ridge(alpha=gcv.alpha_, fit_intercept=fit_intercept).fit(_expand(X), y)
        assert_allclose(_pipeline_coefficients(gcv), np.atleast_2d(chosen.coef_), rtol=1e-6,
                        atol=1e-8 * np.abs(chosen.coef_).max())
        return
    loo = QRCV(cv=n_samples, fit_intercept=fit_intercept, alphas=alphas,
               scoring="neg_mean_squared_error").fit(X, y)
    assert gcv.alpha_ == pytest.approx(loo.alpha_)
    # Relative to the coefficients' scale (the linear test's atol=1e-10 is
    # for coefficients of order 1; the degree-2 ones reach 1e3 here).
    scale = max(1.0, np.abs(loo.coef_).max(), np.abs(loo.Q_).max())
    assert_allclose(gcv.coef_, loo.coef_, atol=1e-10 * scale)
    assert_allclose(gcv.Q_, loo.Q_, atol=1e-10 * scale)
    assert_allclose(gcv.intercept_, loo.intercept_, atol=1e-10 * scale)


def test_ridge_loo_cv_asym_scoring():
    # test_ridge.py::test_ridge_loo_cv_asym_scoring
    X, y = _make_sparse_offset_regression(
        n_samples=10, n_features=5, n_targets=1, random_state=0, shuffle=False, noise=1,
        n_informative=5,
    )
    alphas = [1e-3, 0.1, 1.0, 10.0, 1e3]
    loo = QRCV(cv=10, fit_intercept=True, alphas=alphas, scoring="explained_variance").fit(X, y)
    gcv = QRCV(fit_intercept=True, alphas=alphas, scoring="explained_variance").fit(X, y)
    assert gcv.alpha_ == pytest.approx(loo.alpha_)
    assert_allclose(gcv.coef_, loo.coef_, rtol=1e-3)
    assert_allclose(gcv.intercept_, loo.intercept_, rtol=1e-3)


@pytest.mark.parametrize("sparse_container", [None, sparse.csr_matrix])
def test_ridge_loo(sparse_container):
    # test_ridge.py::_test_ridge_loo (through test_dense_sparse)
    n_samples = X_diabetes.shape[0]
    if sparse_container is None:
        X, fit_intercept = X_diabetes, True
    else:
        X, fit_intercept = sparse_container(X_diabetes), False
    ridge_gcv = QRCV(fit_intercept=fit_intercept).fit(X, y_diabetes)
    alpha_ = ridge_gcv.alpha_

    scoring = make_scorer(mean_squared_error, greater_is_better=False)
    assert QRCV(fit_intercept=False, scoring=scoring).fit(X, y_diabetes).alpha_ == pytest.approx(alpha_)

    def func(x, y):
        return -mean_squared_error(x, y)

    assert QRCV(fit_intercept=False, scoring=make_scorer(func)).fit(X, y_diabetes).alpha_ == pytest.approx(alpha_)
    scorer = get_scorer("neg_mean_squared_error")
    assert QRCV(fit_intercept=False, scoring=scorer).fit(X, y_diabetes).alpha_ == pytest.approx(alpha_)
    if sparse_container is None:
        ridge_gcv.fit(X, y_diabetes, sample_weight=np.ones(n_samples))
        assert ridge_gcv.alpha_ == pytest.approx(alpha_)

    Y = np.vstack((y_diabetes, y_diabetes)).T
    Y_pred = ridge_gcv.fit(X, Y).predict(X)
    y_pred = ridge_gcv.fit(X, y_diabetes).predict(X)
    assert_allclose(np.vstack((y_pred, y_pred)).T, Y_pred, rtol=1e-5)


@pytest.mark.parametrize("sparse_container", [None, sparse.csr_matrix])
def test_ridge_cv(sparse_container):
    # test_ridge.py::_test_ridge_cv (through test_dense_sparse)
    X = X_diabetes if sparse_container is None else sparse_container(X_diabetes)
    ridge_cv = QRCV().fit(X, y_diabetes)
    ridge_cv.predict(X)
    assert len(ridge_cv.coef_.shape) == 1
    assert type(ridge_cv.intercept_) is np.float64
    ridge_cv.set_params(cv=KFold(5)).fit(X, y_diabetes)
    ridge_cv.predict(X)
    assert len(ridge_cv.coef_.shape) == 1
    assert type(ridge_cv.intercept_) is np.float64


def test_ridge_gcv_cv_results_not_stored():
    # test_ridge.py::test_ridge_gcv_cv_results_not_stored (the regressor)
    X, y = make_regression(n_samples=6, random_state=42)
    assert not hasattr(QRCV(store_cv_results=False).fit(X, y), "cv_results_")


@pytest.mark.parametrize("cv", [None, 3])
def test_ridge_best_score(cv):
    # test_ridge.py::test_ridge_best_score (the regressor)
    X, y = make_regression(n_samples=6, random_state=42)
    ridge = QRCV(store_cv_results=False, cv=cv).fit(X, y)
    assert isinstance(ridge.best_score_, float)


def test_ridge_cv_individual_penalties():
    # test_ridge.py::test_ridge_cv_individual_penalties
    rng = np.random.RandomState(42)
    n_samples, n_features, n_targets = 20, 5, 3
    y = rng.randn(n_samples, n_targets)
    X = (
        np.dot(y[:, [0]], np.ones((1, n_features)))
        + np.dot(y[:, [1]], 0.05 * np.ones((1, n_features)))
        + np.dot(y[:, [2]], 0.001 * np.ones((1, n_features)))
        + rng.randn(n_samples, n_features)
    )
    alphas = (1, 100, 1000)
    optimal_alphas = [QRCV(alphas=alphas).fit(X, target).alpha_ for target in y.T]
    ridge_cv = QRCV(alphas=alphas, alpha_per_target=True).fit(X, y)
    assert_array_equal(optimal_alphas, ridge_cv.alpha_)
    assert_array_almost_equal(QR(alpha=ridge_cv.alpha_).fit(X, y).coef_, ridge_cv.coef_)
    assert_array_almost_equal(QR(alpha=ridge_cv.alpha_).fit(X, y).Q_, ridge_cv.Q_)

    ridge_cv = QRCV(alphas=alphas, alpha_per_target=True, store_cv_results=True).fit(X, y)
    assert ridge_cv.alpha_.shape == (n_targets,)
    assert ridge_cv.best_score_.shape == (n_targets,)
    assert ridge_cv.cv_results_.shape == (n_samples, len(alphas), n_targets)

    ridge_cv = QRCV(alphas=1, alpha_per_target=True, store_cv_results=True).fit(X, y)
    assert ridge_cv.alpha_.shape == (n_targets,)
    assert ridge_cv.best_score_.shape == (n_targets,)
    assert ridge_cv.cv_results_.shape == (n_samples, n_targets, 1)

    ridge_cv = QRCV(alphas=alphas, alpha_per_target=True, store_cv_results=True).fit(X, y[:, 0])
    assert np.isscalar(ridge_cv.alpha_)
    assert np.isscalar(ridge_cv.best_score_)
    assert ridge_cv.cv_results_.shape == (n_samples, len(alphas))

    ridge_cv = QRCV(alphas=alphas, alpha_per_target=True, scoring="r2").fit(X, y)
    assert_array_equal(optimal_alphas, ridge_cv.alpha_)
    assert_array_almost_equal(QR(alpha=ridge_cv.alpha_).fit(X, y).coef_, ridge_cv.coef_)

    msg = "cv!=None and alpha_per_target=True are incompatible"
    for cv in (LeaveOneOut(), 6):
        with pytest.raises(ValueError, match=msg):
            QRCV(alphas=alphas, cv=cv, alpha_per_target=True).fit(X, y)


@pytest.mark.parametrize("sparse_container", [None, sparse.csr_matrix])
def test_multi_ridge_diabetes(sparse_container):
    # test_ridge.py::_test_multi_ridge_diabetes (through test_dense_sparse)
    X = X_diabetes if sparse_container is None else sparse_container(X_diabetes)
    Y = np.vstack((y_diabetes, y_diabetes)).T
    n_features = X_diabetes.shape[1]
    ridge = QR(fit_intercept=False).fit(X, Y)
    assert ridge.coef_.shape == (2, n_features)
    Y_pred = ridge.predict(X)
    ridge.fit(X, y_diabetes)
    y_pred = ridge.predict(X)
    assert_array_almost_equal(np.vstack((y_pred, y_pred)).T, Y_pred, decimal=3)


@pytest.mark.parametrize("sparse_container", [None, sparse.csr_matrix])
def test_tolerance(sparse_container):
    # test_ridge.py::_test_tolerance (the iterative solver: QR's "cg")
    X = X_diabetes if sparse_container is None else sparse_container(X_diabetes)
    score = QR(tol=1e-5, fit_intercept=False, solver="cg").fit(X, y_diabetes).score(X, y_diabetes)
    score2 = QR(tol=1e-3, fit_intercept=False, solver="cg").fit(X, y_diabetes).score(X, y_diabetes)
    assert score >= score2


@pytest.mark.parametrize("scoring", [None, "neg_mean_squared_error", mean_squared_error])
def test_ridgecv_store_cv_results(scoring):
    # test_ridge.py::test_ridgecv_store_cv_results
    rng = np.random.RandomState(42)
    n_samples, n_features = 8, 5
    x = rng.randn(n_samples, n_features)
    alphas = [1e-1, 1e0, 1e1]
    scoring_ = make_scorer(scoring) if callable(scoring) else scoring
    r = QRCV(alphas=alphas, cv=None, store_cv_results=True, scoring=scoring_)
    r.fit(x, rng.randn(n_samples))
    assert r.cv_results_.shape == (n_samples, len(alphas))
    y = rng.randn(n_samples, 3)
    r.fit(x, y)
    assert r.cv_results_.shape == (n_samples, 3, len(alphas))
    with pytest.raises(ValueError, match="cv!=None and store_cv_results"):
        QRCV(cv=3, store_cv_results=True, scoring=scoring_).fit(x, y)


def test_ridgecv_alphas_conversion():
    # test_ridge.py::test_ridgecv_alphas_conversion
    rng = np.random.RandomState(0)
    alphas = (0.1, 1.0, 10.0)
    y, X = rng.randn(5), rng.randn(5, 5)
    ridge_est = QRCV(alphas=alphas)
    assert ridge_est.alphas is alphas
    ridge_est.fit(X, y)
    assert_array_equal(ridge_est.alphas, np.asarray(alphas))


@pytest.mark.parametrize("cv", [None, 3])
def test_ridgecv_alphas_zero(cv):
    # test_ridge.py::test_ridgecv_alphas_zero
    rng = np.random.RandomState(0)
    y, X = rng.randn(5), rng.randn(5, 5)
    ridge_est = QRCV(alphas=(0.0, 1.0, 10.0), cv=cv)
    if cv is None:
        with pytest.raises(ValueError, match=r"alphas\[0\] == 0.0, must be > 0.0."):
            ridge_est.fit(X, y)
    else:
        ridge_est.fit(X, y)


def test_ridgecv_sample_weight():
    # test_ridge.py::test_ridgecv_sample_weight (GridSearchCV over QR)
    rng = np.random.RandomState(0)
    alphas = (0.1, 1.0, 10.0)
    for n_samples, n_features in ((6, 5), (5, 10)):
        y = rng.randn(n_samples)
        X = rng.randn(n_samples, n_features)
        sample_weight = 1.0 + rng.rand(n_samples)
        cv = KFold(5)
        ridgecv = QRCV(alphas=alphas, cv=cv).fit(X, y, sample_weight=sample_weight)
        gs = GridSearchCV(QR(), {"alpha": alphas}, cv=cv).fit(X, y, sample_weight=sample_weight)
        assert ridgecv.alpha_ == gs.best_estimator_.alpha
        assert_array_almost_equal(ridgecv.coef_, gs.best_estimator_.coef_)


@pytest.mark.parametrize("Estimator", [QR, QRCV])
def test_raises_value_error_if_sample_weights_greater_than_1d(Estimator):
    # test_ridge.py::test_raises_value_error_if_sample_weights_greater_than_1d
    rng = np.random.RandomState(42)
    for n_samples, n_features in zip([2, 3], [3, 2]):
        X = rng.randn(n_samples, n_features)
        y = rng.randn(n_samples)
        sample_weights_OK = rng.randn(n_samples) ** 2 + 1
        ridge = Estimator(**({"alpha": 1} if Estimator is QR else {"alphas": [1.0]}))
        ridge.fit(X, y, sample_weights_OK)
        ridge.fit(X, y, 1.0)
        ridge.fit(X, y, 2.0)
        for not_ok in (sample_weights_OK[:, np.newaxis], sample_weights_OK[np.newaxis, :]):
            with pytest.raises(ValueError, match="Sample weights must be 1D array or scalar"):
                ridge.fit(X, y, not_ok)


@pytest.mark.parametrize("n_samples,n_features", [[2, 3], [3, 2]])
@pytest.mark.parametrize(
    "sparse_container",
    [sparse.coo_matrix, sparse.csc_matrix, sparse.csr_matrix, sparse.dok_matrix, sparse.lil_matrix],
)
def test_sparse_design_with_sample_weights(n_samples, n_features, sparse_container):
    # test_ridge.py::test_sparse_design_with_sample_weights
    rng = np.random.RandomState(42)
    X = rng.randn(n_samples, n_features)
    y = rng.randn(n_samples)
    sample_weights = rng.randn(n_samples) ** 2 + 1
    sparse_ridge = QR(alpha=1.0, fit_intercept=False).fit(sparse_container(X), y, sample_weight=sample_weights)
    dense_ridge = QR(alpha=1.0, fit_intercept=False).fit(X, y, sample_weight=sample_weights)
    assert_array_almost_equal(sparse_ridge.coef_, dense_ridge.coef_, decimal=6)
    assert_array_almost_equal(sparse_ridge.Q_, dense_ridge.Q_, decimal=6)


def test_ridgecv_int_alphas():
    # test_ridge.py::test_ridgecv_int_alphas
    X = np.array([[-1.0, -1.0], [-1.0, 0], [-0.8, -1.0], [1.0, 1.0], [1.0, 0.0]])
    model = QRCV(alphas=(1, 10, 100)).fit(X, [1, 1, 1, -1, -1])
    # integer alphas are taken as the floats they name
    assert model.alpha_ in (1.0, 10.0, 100.0)
    assert isinstance(model.alpha_, float)


@pytest.mark.parametrize(
    "params, err_type, err_msg",
    [
        ({"alphas": (1, -1, -100)}, ValueError, r"alphas\[1\] == -1, must be > 0.0"),
        ({"alphas": (-0.1, -1.0, -10.0)}, ValueError, r"alphas\[0\] == -0.1, must be > 0.0"),
        ({"alphas": (1, 1.0, "1")}, TypeError, r"alphas\[2\] must be an instance of float, not str"),
    ],
)
def test_ridgecv_alphas_validation(params, err_type, err_msg):
    # test_ridge.py::test_ridgecv_alphas_validation
    rng = np.random.RandomState(0)
    X, y = rng.randn(5, 5), rng.randint(0, 2, 5)
    with pytest.raises(err_type, match=err_msg):
        QRCV(**params).fit(X, y)


def test_ridgecv_alphas_scalar():
    # test_ridge.py::test_ridgecv_alphas_scalar
    rng = np.random.RandomState(0)
    model = QRCV(alphas=1).fit(rng.randn(5, 5), rng.randn(5))
    assert model.alpha_ == 1.0


def test_n_iter():
    # test_ridge.py::test_n_iter: the iterative solver ("cg", as Ridge's
    # lsqr) reports max_iter per target when it stops there. Ridge reports
    # None for its direct solvers; QR reports 1 (one exact solve), as
    # scikit-learn's estimator checks want n_iter_ >= 1 wherever max_iter is.
    X, y = X_diabetes, y_diabetes
    y_n = np.tile(y, (2, 1)).T
    for max_iter in range(1, 4):
        reg = QR(solver="cg", max_iter=max_iter, tol=1e-12).fit(X, y_n)
        assert_array_equal(reg.n_iter_, np.tile(max_iter, 2))
    for solver in ("cholesky", "kernel"):
        reg = QR(solver=solver, max_iter=1, tol=1e-1).fit(X, y_n)
        assert_array_equal(reg.n_iter_, [1, 1])


@pytest.mark.parametrize("cv", [None, 3])
def test_ridge_regression_custom_scoring(cv):
    # test_ridge.py::test_ridge_regression_custom_scoring (on the regressor):
    # a constant score; ties keep the first alpha tried.
    def _dummy_score(y_test, y_pred, **kwargs):
        return 0.42

    alphas = np.logspace(-2, 2, num=5)
    clf = QRCV(alphas=alphas, scoring=make_scorer(_dummy_score), cv=cv).fit(X_diabetes, y_diabetes)
    assert clf.best_score_ == pytest.approx(0.42)
    assert clf.alpha_ == pytest.approx(alphas[0])


@pytest.mark.parametrize("X_shape", [(30, 3), (12, 5)], ids=["tall", "wide"])
@pytest.mark.parametrize("with_sample_weight", [False, True])
@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("n_targets", [1, 2])
def test_ridge_cv_results_predictions(X_shape, with_sample_weight, fit_intercept, n_targets):
    # test_ridge.py::test_ridge_cv_results_predictions: the stored
    # predictions equal a naive leave-one-out of QR. The shapes put n above
    # and below D = d(d+3)/2; alphas 1e-3..1e7 (the linear test's 1e-5 lower
    # end makes the degree-2 system of the wide case too ill-conditioned to
    # compare at 1e-6).
    n_samples, n_features = X_shape
    X, y = make_regression(n_samples=n_samples, n_features=n_features, n_targets=n_targets,
                           random_state=0)
    sample_weight = None
    if with_sample_weight:
        sample_weight = np.ones(X.shape[0])
        sample_weight[::2] = 0.5
    alphas = np.logspace(-3, 7, 5)
    ridge_cv = QRCV(alphas=alphas, scoring="neg_mean_squared_error", fit_intercept=fit_intercept,
                    store_cv_results=True).fit(X, y, sample_weight=sample_weight)
    predictions = np.empty(shape=(*y.shape, len(alphas)))
    for alpha_idx, alpha in enumerate(alphas):
        for idx, (train, test) in enumerate(LeaveOneOut().split(X, y)):
            # the left-out row can lie outside the others' range: the leave-one-out
            # that RidgeCV computes is the unclipped model's
            ridge = QR(alpha=alpha, fit_intercept=fit_intercept, clip_inputs=False)
            weight = None if sample_weight is None else sample_weight[train]
            predictions[idx, ..., alpha_idx] = ridge.fit(X[train], y[train], sample_weight=weight).predict(X[test])
    assert_allclose(ridge_cv.cv_results_, predictions, rtol=1e-6)


@pytest.mark.parametrize("X_shape", [(50, 4), (10, 10)], ids=["tall", "wide"])
def test_ridge_cv_multioutput_sample_weight(X_shape):
    # test_ridge.py::test_ridge_cv_multioutput_sample_weight
    n_samples, n_features = X_shape
    X, y = make_regression(n_samples=n_samples, n_features=n_features, n_targets=2, random_state=0)
    sample_weight = np.ones(n_samples)
    ridge_cv = QRCV(scoring="neg_mean_squared_error", store_cv_results=True)
    ridge_cv.fit(X, y, sample_weight=sample_weight)
    ridge = QR(alpha=ridge_cv.alpha_, clip_inputs=False)  # the unclipped leave-one-out, as RidgeCV's
    y_pred_loo = np.squeeze(
        [ridge.fit(X[train], y[train], sample_weight=sample_weight[train]).predict(X[test])
         for train, test in LeaveOneOut().split(X)]
    )
    assert_allclose(ridge_cv.best_score_, -mean_squared_error(y, y_pred_loo))


@pytest.mark.parametrize("X_shape", [(50, 4), (10, 10)], ids=["tall", "wide"])
def test_ridge_cv_custom_multioutput_scorer(X_shape):
    # test_ridge.py::test_ridge_cv_custom_multioutput_scorer
    n_samples, n_features = X_shape
    X, y = make_regression(n_samples=n_samples, n_features=n_features, n_targets=2, random_state=0)

    def custom_error(y_true, y_pred):
        mean_errors = np.mean((y_true - y_pred) ** 2, axis=0)
        return -np.average(mean_errors, weights=[2, 1])

    def custom_multioutput_scorer(estimator, X, y):
        return -custom_error(y, estimator.predict(X))

    ridge_cv = QRCV(scoring=custom_multioutput_scorer).fit(X, y)
    ridge = QR(alpha=ridge_cv.alpha_, clip_inputs=False)  # the unclipped leave-one-out, as RidgeCV's
    y_pred_loo = np.squeeze([ridge.fit(X[train], y[train]).predict(X[test]) for train, test in LeaveOneOut().split(X)])
    assert_allclose(ridge_cv.best_score_, -custom_error(y, y_pred_loo))


def test_ridge_matches_the_pipeline_on_diabetes():
    # test_ridge.py::_test_ridge_diabetes's fit, with the score compared to
    # the pipeline's (the linear test rounds Ridge's own score).
    model = QR(fit_intercept=False).fit(X_diabetes, y_diabetes)
    reference = Ridge(fit_intercept=False).fit(_expand(X_diabetes), y_diabetes)
    assert model.score(X_diabetes, y_diabetes) == pytest.approx(
        reference.score(_expand(X_diabetes), y_diabetes), rel=1e-9
    )


@pytest.mark.parametrize(
    "array_namespace, device_name, dtype_name", list(yield_namespace_device_dtype_combinations())
)
@pytest.mark.parametrize("check", [check_array_api_input_and_values, check_array_api_attributes],
                         ids=lambda check: check.__name__)
@pytest.mark.parametrize("estimator", [QR(), QRCV()], ids=lambda estimator: type(estimator).__name__)
def test_ridge_array_api_compliance(estimator, check, array_namespace, device_name, dtype_name):
    # test_ridge.py::test_ridge_array_api_compliance
    check(type(estimator).__name__, estimator, array_namespace, device_name=device_name,
          dtype_name=dtype_name)


@pytest.mark.parametrize(
    "array_namespace, device_name, dtype_name", list(yield_namespace_device_dtype_combinations())
)
def test_ridge_per_target_alpha_array_api(array_namespace, device_name, dtype_name):
    # test_ridge.py::test_ridge_per_target_alpha_array_api
    xp, device = _array_api_for_tests(array_namespace, device_name, dtype_name)
    X, y = make_regression(n_targets=3, n_features=10, random_state=0)
    X_np, y_np = X.astype(dtype_name), y.astype(dtype_name)
    alphas = np.asarray([1e-2, 0.1, 1.0], dtype=dtype_name)
    pred_np = QR(alpha=alphas).fit(X_np, y_np).predict(X_np)
    with config_context(array_api_dispatch=True):
        X_xp, y_xp = xp.asarray(X_np, device=device), xp.asarray(y_np, device=device)
        for alpha in (alphas, xp.asarray(alphas, device=device)):
            pred_xp = QR(alpha=alpha).fit(X_xp, y_xp).predict(X_xp)
            assert pred_xp.shape == pred_np.shape == y.shape
            assert_allclose(move_to(pred_xp, xp=np, device="cpu"), pred_np,
                            atol=_atol_for_type(dtype_name))
