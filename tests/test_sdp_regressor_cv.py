"""SDPQuantizedRegressorCV (skquad/quantized/_sdp_regressor_cv.py): beta by cross-validation."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold, train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

import skquad.quantized._sdp_cv as cv_module
from skquad.quantized import SDPQuantizedRegressor, SDPQuantizedRegressorCV


def _data(n=120, n_outputs=None, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, 3))
    y = X[:, 0] * X[:, 1] + 0.5 * X[:, 2] + 0.3 * rng.standard_normal(n)
    if n_outputs is not None:
        y = np.column_stack([y, X[:, 0] ** 2 + 0.3 * rng.standard_normal(n)])
    return X, y


@pytest.fixture(scope="module")
def split():
    X, y = _data(200)
    return train_test_split(X, y, test_size=0.3, random_state=0)


@pytest.fixture(scope="module")
def fitted(split):
    X_train, _, y_train, _ = split
    return SDPQuantizedRegressorCV(n_neurons=100, betas=5, cv=3, random_state=0).fit(X_train, y_train)


def _one_standard_error_by_hand(scores):
    """glmnet's lambda.1se on fold scores (folds, betas from the largest): the first beta whose
    mean is within the standard error of the best beta's fold scores."""
    mean = scores.mean(axis=0)
    best = int(np.argmax(mean))
    standard_error = scores[:, best].std(ddof=1) / np.sqrt(scores.shape[0])
    return next(b for b in range(scores.shape[1]) if mean[b] >= mean[best] - standard_error)


def test_path_scores_and_choice(fitted, split):
    X_train, X_test, y_train, y_test = split
    model = fitted
    assert model.betas_.shape == (5,) and np.all(np.diff(model.betas_) < 0)
    assert model.scores_.shape == (3, 5)
    # the default rule: the largest beta within one standard error of the best mean score
    assert model.beta_ == model.betas_[_one_standard_error_by_hand(model.scores_)]
    best = int(np.argmax(model.scores_.mean(axis=0)))
    by_best = clone(model).set_params(selection_rule="best").fit(X_train, y_train)
    np.testing.assert_allclose(by_best.scores_, model.scores_)
    assert by_best.beta_ == model.betas_[best]
    # The top of the path is the zero network: the linear term alone, which
    # misses x0*x1; the chosen beta fits the x0*x1 + x2/2 signal (noise 0.3:
    # R² near 0.9 is reachable).
    assert model.scores_[:, 0].mean() < model.scores_[:, best].mean() - 0.3
    assert model.scores_[:, best].mean() > 0.7
    assert model.score(X_test, y_test) > 0.7
    # The scores are SDPQuantizedRegressor's R² at each beta on each fold
    # (default folds: KFold without shuffling, as check_cv for a regressor).
    train, test = list(KFold(3).split(X_train))[1]
    single = SDPQuantizedRegressor(n_neurons=100, beta=model.betas_[2], random_state=0)
    single.fit(X_train[train], y_train[train])
    assert single.score(X_train[test], y_train[test]) == pytest.approx(model.scores_[1, 2], rel=1e-6)


def test_the_top_of_the_path_is_the_zero_network(split):
    X_train, _, y_train, _ = split
    model = SDPQuantizedRegressorCV(n_neurons=20, betas=3)
    model._validate_params()
    X_checked, Y, weight = model._validate_training_data(X_train, y_train)
    top = model._path(X_checked, Y, weight)[0]
    with pytest.warns(UserWarning, match="relaxed optimum is the zero network"):
        single = SDPQuantizedRegressor(beta=top, n_neurons=20).fit(X_train, y_train)
    np.testing.assert_array_equal(single.rho_, 0.0)
    # ... and just below it, it is not.
    below = SDPQuantizedRegressor(beta=0.5 * top, n_neurons=20).fit(X_train, y_train)
    assert np.any(below.rho_ != 0.0)


def test_refitted_model_is_the_single_estimator_at_beta(fitted, split):
    X_train, X_test, y_train, _ = split
    single = SDPQuantizedRegressor(n_neurons=100, beta=fitted.beta_, random_state=0).fit(X_train, y_train)
    np.testing.assert_array_equal(fitted.U_, single.U_)
    np.testing.assert_allclose(fitted.predict(X_test), single.predict(X_test))
    assert fitted.lower_bound_ == pytest.approx(single.lower_bound_)
    assert fitted.certified_gap_ == pytest.approx(single.certified_gap_, abs=1e-12)
    resampled = clone(fitted).fit(X_train, y_train).resample(50, random_state=1)
    single.resample(50, random_state=1)
    assert resampled.objective_ == pytest.approx(single.objective_)


def test_multi_output_and_warm_started_path(monkeypatch):
    X, y = _data(80, n_outputs=2)
    seen = []
    original = cv_module.clone

    def recording_clone(estimator, **kwargs):
        copy = original(estimator, **kwargs)
        seen.append(type(copy))
        return copy

    monkeypatch.setattr(cv_module, "clone", recording_clone)
    model = SDPQuantizedRegressorCV(n_neurons=40, betas=[1e-3, 1e-1, 1e-2], cv=2, random_state=0)
    model.fit(X, y)
    np.testing.assert_array_equal(model.betas_, [1e-1, 1e-2, 1e-3])
    assert set(seen) == {SDPQuantizedRegressor}  # the folds fit the regressor itself
    assert model.predict(X).shape == y.shape and model.alpha_.shape[1] == 2


def _r2_unless_large_beta(threshold):
    def score(estimator, X, y):
        if estimator.beta >= threshold:
            return np.nan
        return estimator.score(X, y)

    return score


def test_non_finite_fold_scores_rank_last_and_all_non_finite_raise():
    X, y = _data(60)
    model = SDPQuantizedRegressorCV(
        betas=[1e-1, 1e-2, 1e-3], cv=2, n_neurons=30, scoring=_r2_unless_large_beta(5e-2),
        random_state=0,
    )
    with pytest.warns(UserWarning, match="non-finite cross-validated scores"):
        model.fit(X, y)
    assert model.beta_ < 5e-2 and np.isnan(model.scores_[:, 0]).all()
    failing = SDPQuantizedRegressorCV(betas=[1e-1], cv=2, n_neurons=20, scoring=_r2_unless_large_beta(0.0))
    with pytest.raises(ValueError, match="non-finite"):
        failing.fit(X, y)
    assert not hasattr(failing, "beta_")


def test_bad_betas_and_scoring_refit_false():
    X, y = _data(60)
    with pytest.raises(ValueError, match="betas"):
        SDPQuantizedRegressorCV(betas=[-1.0]).fit(X, y)
    model = SDPQuantizedRegressorCV(
        n_neurons=30, betas=3, cv=2, refit=False, scoring="neg_mean_squared_error", random_state=0
    ).fit(X, y)
    assert model.scores_.shape == (2, 3) and np.all(model.scores_ <= 0.0)
    assert model.predict(X).shape == y.shape


# A short path and solver budget: the checks exercise the API, not the optimum.
@parametrize_with_checks([SDPQuantizedRegressorCV(n_neurons=50, betas=[0.1, 0.01], cv=2, max_iter=200, tol=1e-3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)
