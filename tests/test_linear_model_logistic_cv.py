"""QuadraticLogisticRegressionCV: the chosen C, the warm-started path against cold fits, clipping.

scikit-learn's LogisticRegressionCV API tests run against it in test_parity_logistic.py.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
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
    single = QuadraticLogisticRegression(C=cv.C_, tol=1e-8, max_iter=2000, quadratic_C=None).fit(X, y)
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
            cold = QuadraticLogisticRegression(C=C, tol=1e-8, max_iter=2000,
                                               quadratic_C=None).fit(X[train], y[train])
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
    path = QuadraticLogisticRegression(warm_start=True, **settings, quadratic_C=None)
    n_iter, cold_iter = [], []
    for C, fitted in zip(Cs, path._fit_path(X, y, None, Cs)):
        cold = QuadraticLogisticRegression(C=C, **settings, quadratic_C=None).fit(X, y)
        n_iter.append(int(fitted.n_iter_[0]))
        cold_iter.append(int(cold.n_iter_[0]))
        scale = max(1.0, np.abs(cold.Q_).max(), np.abs(cold.coef_).max())
        for name in ("Q_", "coef_", "intercept_"):
            assert_allclose(getattr(fitted, name), getattr(cold, name), atol=1e-5 * scale)
    # the warm starts save iterations: the path takes fewer than its cold fits, its first C
    # too (from the intercepts-only model's diagonal Newton step)
    assert 0 < sum(n_iter) < sum(cold_iter) and n_iter[0] < cold_iter[0]


@pytest.mark.parametrize("n_scores, fit_intercept", [(1, True), (1, False), (3, True), (3, False)])
def test_the_null_models_gradient_in_closed_form_is_the_objectives(n_scores, fit_intercept):
    """The path's first start reads the gradient where every row has the same scores from
    the residuals' moments (no evaluation); it is the objective's gradient there."""
    from skquad.nn.quadratic_form import (
        SymmetricPacking, _constant_scores_gradient, _null_model_moments, packed_logistic_objective)

    rng = np.random.RandomState(0)
    n, d = 300, 5
    X, y = rng.randn(n, d), rng.randint(0, max(n_scores, 2), n)
    weights = rng.rand(n)
    weights /= weights.sum()  # (the moments are of the weights summing to 1)
    packing = SymmetricPacking(d)
    objective = packed_logistic_objective(X, y, weights, packing, n_scores, 0.0,
                                          fit_intercept=fit_intercept)
    scores = rng.randn(n_scores) if fit_intercept else np.zeros(n_scores)
    theta = np.zeros(n_scores * (packing.rows.size + d) + (n_scores if fit_intercept else 0))
    if fit_intercept:
        theta[-n_scores:] = scores
    moments = _null_model_moments(X, y, weights, n_scores)
    gradient = _constant_scores_gradient(moments, packing, n_scores, scores)
    if not fit_intercept:
        gradient = gradient[:-n_scores]
    # (the moments' differences p_k M - M_k round at M's scale)
    assert_allclose(gradient, objective(theta)[1], rtol=0, atol=1e-14)


def test_a_paths_fits_share_one_trainer_and_policy_and_keep_their_own_models(monkeypatch):
    """The fits of a path differ by the penalty only: one module, trainer and runtime policy
    serve them all. Each fit's published arrays are its own (a later fit on the same
    trainer does not change them), and each equals the fit continued from the last one."""
    from skquad.linear_model import _qlr_drivers, _qlr_problem

    X, y = make_classification(n_samples=400, n_features=5, n_informative=4, n_redundant=0,
                               random_state=3)
    built = {"trainers": 0, "policies": 0}
    trainer_class, decide = _qlr_drivers.Trainer, _qlr_problem._decide_policy

    def counting_trainer(*args, **kwargs):
        built["trainers"] += 1
        return trainer_class(*args, **kwargs)

    def counting_policy(*args, **kwargs):
        built["policies"] += 1
        return decide(*args, **kwargs)

    monkeypatch.setattr(_qlr_drivers, "Trainer", counting_trainer)
    monkeypatch.setattr(_qlr_problem, "_decide_policy", counting_policy)
    Cs = [0.01, 0.1, 1.0, 10.0]
    settings = dict(solver="lbfgs", tol=1e-8, max_iter=1000)
    path = QuadraticLogisticRegression(warm_start=True, **settings, quadratic_C=None)
    published, copies = [], []
    for fitted in path._fit_path(X, y, None, Cs):
        published.append(fitted.Q_)
        copies.append(fitted.Q_.copy())
    assert built == {"trainers": 1, "policies": 1}
    for array, copy in zip(published, copies):
        assert_allclose(array, copy, rtol=0, atol=0)
    assert not np.allclose(copies[0], copies[-1])
    step = QuadraticLogisticRegression(warm_start=True, **settings, quadratic_C=None)
    for C, expected in zip(Cs, copies):
        step.set_params(C=C).fit(X, y)
        scale = max(1.0, np.abs(expected).max())
        assert_allclose(step.Q_, expected, atol=1e-6 * scale)


def test_an_sgd_paths_fits_each_draw_their_own_shuffles(monkeypatch):
    """SGD's fits on a path do not share a runtime policy: each draws its own generators."""
    from skquad.linear_model import _qlr_problem

    X, y = make_classification(n_samples=200, n_features=4, random_state=2)
    seeds, decide = [], _qlr_problem._decide_policy

    def recording(*args, **kwargs):
        policy = decide(*args, **kwargs)
        seeds.append(policy.shuffle_generator.initial_seed())
        return policy

    monkeypatch.setattr(_qlr_problem, "_decide_policy", recording)
    model = QuadraticLogisticRegression(warm_start=True, solver="sgd", max_iter=2, tol=-np.inf,
                                        random_state=0)
    with pytest.warns(ConvergenceWarning):
        for _ in model._fit_path(X, y, None, [0.1, 1.0, 10.0]):
            pass
    # one policy per fit, each seeded as a fit of its own with that random_state
    assert len(seeds) == 3 and len(set(seeds)) == 1


def test_the_path_starts_moments_by_row_chunks_are_one_passs(monkeypatch):
    """The path's start reads the rows in float64 a chunk at a time (float32 or gathered rows
    are never converted whole): by chunks of a few rows, the same moments and curvature."""
    from skquad.nn import quadratic_form
    from skquad._foundation._rows import OrderedRows

    rng = np.random.RandomState(1)
    X = rng.randn(50, 4).astype(np.float32)
    y, weights = rng.randint(0, 3, 50), rng.rand(50)
    packing = quadratic_form.SymmetricPacking(4)
    moments_of = lambda rows: quadratic_form._null_model_moments(rows, y, weights, 3)
    curvature_of = lambda moments: quadratic_form._null_model_curvature(moments, packing, 3, True)
    whole = moments_of(X)
    one_pass = (whole, curvature_of(whole))
    from skquad._foundation import _rows

    monkeypatch.setattr(_rows, "ROW_CHUNK_ELEMENTS", 12)  # 3 rows a chunk
    shuffled = rng.permutation(50)
    gathered = OrderedRows(X[shuffled], np.argsort(shuffled))  # the rows of X, gathered
    for rows in (X, gathered):
        moments = moments_of(rows)
        for name in ("totals", "means", "seconds", "fourth"):
            assert_allclose(getattr(moments, name), getattr(one_pass[0], name), rtol=1e-12, atol=1e-14)
        curvature = curvature_of(moments)
        assert_allclose(curvature, one_pass[1], rtol=1e-12, atol=1e-14)
