"""The CV estimators' selection_rule="one_standard_error": Breiman's rule on the folds' scores."""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification, make_regression

from skquad import (
    QuadraticLogisticRegression,
    QuadraticLogisticRegressionCV,
    QuadraticRegression,
    QuadraticRegressionCV,
)


def _rule_by_hand(errors):
    """glmnet's lambda.1se: the first column (most penalised first) whose mean error is within
    the standard error of the best column's fold errors; ``errors`` (folds, candidates)."""
    mean = errors.mean(axis=0)
    best = int(np.argmin(mean))
    standard_error = errors[:, best].std(ddof=1) / np.sqrt(errors.shape[0])
    return next(c for c in range(errors.shape[1]) if mean[c] <= mean[best] + standard_error)


def test_the_logistic_cv_takes_the_smallest_c_within_one_standard_error():
    X, y = make_classification(n_samples=300, n_features=6, n_informative=3, n_redundant=0,
                               flip_y=0.1, random_state=0)
    Cs = list(np.logspace(-1.5, 0.5, 9))[::-1]  # from the largest: the rule orders them by C
    common = dict(Cs=Cs, penalty="l1", cv=5, scoring="neg_log_loss", tol=1e-6, max_iter=3000)
    best = QuadraticLogisticRegressionCV(**common).fit(X, y)
    model = QuadraticLogisticRegressionCV(selection_rule="one_standard_error", **common).fit(X, y)
    assert_allclose(model.scores_, best.scores_)
    order = np.argsort(Cs)
    expected = np.asarray(Cs)[order][_rule_by_hand(-best.scores_[:, order])]
    assert model.C_ == expected
    assert model.C_ < best.C_  # the folds cannot tell a sparser model from the best here
    assert model.n_interactions_ <= best.n_interactions_
    single = QuadraticLogisticRegression(C=expected, penalty="l1", tol=1e-6, max_iter=3000)
    assert_allclose(model.predict_proba(X), single.fit(X, y).predict_proba(X), atol=1e-4)


def test_the_regression_cv_takes_the_largest_alpha_within_one_standard_error():
    X, y = make_regression(n_samples=200, n_features=6, n_informative=3, noise=20.0,
                           random_state=0)
    best = QuadraticRegressionCV(alphas=20, penalty="l1", cv=5).fit(X, y)
    model = QuadraticRegressionCV(alphas=20, penalty="l1", cv=5,
                                  selection_rule="one_standard_error").fit(X, y)
    assert_allclose(model.mse_path_, best.mse_path_)
    expected = best.alphas_[_rule_by_hand(best.mse_path_.T)]  # alphas_ from the largest down
    assert model.alpha_ == expected and model.alpha_ > best.alpha_
    assert model.n_interactions_ <= best.n_interactions_
    single = QuadraticRegression(alpha=expected, penalty="l1").fit(X, y)
    assert_allclose(model.predict(X), single.predict(X), rtol=1e-8, atol=1e-8)


def test_with_several_l1_ratios_the_rule_steps_down_the_grids_together():
    X, y = make_regression(n_samples=150, n_features=5, n_informative=3, noise=10.0,
                           random_state=1)
    model = QuadraticRegressionCV(alphas=8, penalty="elasticnet", l1_ratio=[0.5, 1.0], cv=4,
                                  selection_rule="one_standard_error").fit(X, y)
    errors = model.mse_path_  # (n_l1_ratios, n_alphas, n_folds)
    flat = errors.transpose(2, 1, 0).reshape(errors.shape[2], -1)  # alpha-major, ratio-minor
    a, r = divmod(_rule_by_hand(flat), 2)
    assert model.alpha_ == model.alphas_[r][a] and model.l1_ratio_ == [0.5, 1.0][r]


def test_the_ridge_leave_one_out_takes_the_simplest_model_within_one_standard_error():
    from sklearn.preprocessing import PolynomialFeatures

    X, y = make_regression(n_samples=40, n_features=3, n_informative=2, noise=30.0,
                           random_state=0)
    alphas = np.logspace(-2, 4, 13)
    common = dict(alphas=alphas, quadratic_ratios=[1.0], store_cv_results=True)
    best = QuadraticRegressionCV(**common).fit(X, y)
    model = QuadraticRegressionCV(selection_rule="one_standard_error", **common).fit(X, y)
    # ratio 1 is Ridge on PolynomialFeatures(2): degrees of freedom from its centred spectrum
    features = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    spectrum = np.linalg.svd(features - features.mean(axis=0), compute_uv=False) ** 2
    dfs = (spectrum[:, None] / (spectrum[:, None] + alphas)).sum(axis=0)
    order = np.argsort(dfs)
    expected = alphas[order][_rule_by_hand(best.cv_results_[:, order])]
    assert model.alpha_ == expected and model.alpha_ > best.alpha_
    single = QuadraticRegression(alpha=expected).fit(X, y)
    assert_allclose(model.predict(X), single.predict(X), rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("model, message", [
    (QuadraticLogisticRegressionCV(Cs=3, refit=False, selection_rule="one_standard_error"),
     "needs refit=True"),
    (QuadraticRegressionCV(selection_rule="one_standard_error", cv=3), "needs cv=None"),
    (QuadraticRegressionCV(selection_rule="one_standard_error", scoring="r2"), "scoring=None"),
])
def test_the_rule_is_refused_where_it_has_no_standard_error(model, message):
    X, y = make_classification(n_samples=60, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y)
