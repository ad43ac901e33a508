"""QuadraticLogisticRegressionCV: the chosen C, the warm-started path against cold fits, clipping.

scikit-learn's LogisticRegressionCV API tests run against it in test_parity_logistic.py.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.model_selection import StratifiedKFold

from skquad import QuadraticLogisticRegression, QuadraticLogisticRegressionCV


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=240, n_features=5, n_informative=4, n_redundant=0,
                               random_state=0)
    return X, y


def test_the_refit_is_the_model_at_the_chosen_c(data):
    X, y = data
    cv = QuadraticLogisticRegressionCV(Cs=[0.01, 0.1, 1.0], tol=1e-8, max_iter=2000).fit(X, y)
    assert cv.C_ in (0.01, 0.1, 1.0)
    assert cv.C_ == cv.Cs_[np.argmax(cv.scores_.mean(axis=0))]
    single = QuadraticLogisticRegression(C=cv.C_, tol=1e-8, max_iter=2000).fit(X, y)
    # one convex optimum: the warm start changes the path taken, not where it ends
    assert_allclose(cv.predict_proba(X), single.predict_proba(X), atol=1e-4)


def test_each_fold_score_is_the_cold_fit_score(data):
    X, y = data
    Cs = [0.03, 3.0]
    folds = list(StratifiedKFold(3).split(X, y))
    cv = QuadraticLogisticRegressionCV(Cs=Cs, cv=folds, tol=1e-8, max_iter=2000).fit(X, y)
    assert cv.scores_.shape == (3, 2)
    for f, (train, test) in enumerate(folds):
        for c, C in enumerate(Cs):
            cold = QuadraticLogisticRegression(C=C, tol=1e-8, max_iter=2000).fit(X[train], y[train])
            assert abs(cold.score(X[test], y[test]) - cv.scores_[f, c]) <= 1.0 / len(test) + 1e-12


def test_an_integer_cs_is_a_log_grid_as_in_logistic_regression_cv(data):
    X, y = data
    cv = QuadraticLogisticRegressionCV(Cs=3, cv=2).fit(X, y)
    assert_allclose(np.sort(cv.Cs_), np.logspace(-4, 4, 3))


def test_predictions_are_clipped_to_the_training_range(data):
    X, y = data
    cv = QuadraticLogisticRegressionCV(Cs=[1.0], cv=2).fit(X, y)
    far = X[:5] * 1e3
    clipped = np.clip(far, cv.data_min_, cv.data_max_)
    assert_allclose(cv.decision_function(far), cv.decision_function(clipped))
    unclipped = QuadraticLogisticRegressionCV(Cs=[1.0], cv=2, clip_inputs=False).fit(X, y)
    assert not np.allclose(unclipped.decision_function(far), cv.decision_function(far))


@pytest.mark.parametrize("n_classes", [2, 3])
def test_the_path_ends_every_c_where_a_cold_fit_does(n_classes):
    """The path's fits (L-BFGS pairs and the last evaluation carried from C to C) meet each C's
    own gradient test: at a tight tol their models are the cold fits' (one optimum per C)."""
    X, y = make_classification(n_samples=600, n_features=6, n_informative=5, n_redundant=0,
                               n_classes=n_classes, random_state=1)
    Cs = np.logspace(-3, 3, 7)
    settings = dict(tol=1e-9, max_iter=5000, solver="lbfgs")
    path = QuadraticLogisticRegression(warm_start=True, **settings)
    n_iter, cold_iter = [], []
    for C, fitted in zip(Cs, path._fit_path(X, y, None, Cs)):
        cold = QuadraticLogisticRegression(C=C, **settings).fit(X, y)
        n_iter.append(int(fitted.n_iter_[0]))
        cold_iter.append(int(cold.n_iter_[0]))
        scale = max(1.0, np.abs(cold.Q_).max(), np.abs(cold.coef_).max())
        for name in ("Q_", "coef_", "intercept_"):
            assert_allclose(getattr(fitted, name), getattr(cold, name), atol=1e-5 * scale)
    # the warm starts save iterations: the path takes fewer than its cold fits, its first C
    # too (from the intercepts-only model's diagonal Newton step)
    assert 0 < sum(n_iter) < sum(cold_iter) and n_iter[0] < cold_iter[0]
