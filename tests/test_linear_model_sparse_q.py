"""Sparse Q (``penalty="l1"``, ``"elasticnet"``, ``"group"``) of the quadratic linear models."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet, Lasso, LassoCV, LogisticRegression
from sklearn.preprocessing import PolynomialFeatures

from skquad import (
    QuadraticLogisticRegression,
    QuadraticLogisticRegressionCV,
    QuadraticRegression,
    QuadraticRegressionCV,
)

N, D = 120, 4


def _data(seed=0, n=N, d=D):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    signal = X[:, 0] * X[:, 1] + X[:, 2]
    return X, signal + 0.3 * rng.standard_normal(n), rng.uniform(0.5, 2.0, n)


def _theta(model):
    """The model's coefficients of ``PolynomialFeatures(2)``'s columns (``2 Q_ab`` off the diagonal)."""
    rows, cols = np.triu_indices(D)
    Q = model.Q_.reshape(-1, D, D)
    return np.hstack([model.coef_.reshape(len(Q), D), np.where(rows == cols, 1, 2) * Q[:, rows, cols]])


@pytest.mark.parametrize("l1_ratio", [None, 0.4])
def test_regression_is_elastic_net_on_the_degree2_features(l1_ratio):
    X, y, weight = _data()
    penalty = "l1" if l1_ratio is None else "elasticnet"
    model = QuadraticRegression(alpha=0.06, penalty=penalty, l1_ratio=l1_ratio, tol=1e-13,
                                max_iter=20000).fit(X, y, sample_weight=weight)
    reference = ElasticNet(alpha=0.06, l1_ratio=l1_ratio or 1.0, tol=1e-14, max_iter=100000).fit(
        PolynomialFeatures(2, include_bias=False).fit_transform(X), y, sample_weight=weight)
    np.testing.assert_allclose(_theta(model)[0], reference.coef_, atol=1e-5)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-5)
    rows, cols = np.triu_indices(D)
    pairs = reference.coef_[D:][rows != cols]
    assert model.solver_ == "proximal" and model.n_interactions_ == np.count_nonzero(pairs) < 6


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_uncentred_features_converge_to_lasso(fit_intercept):
    # FISTA moves the intercept of the centred degree-2 features: features of mean 4
    # (squares of mean 17) converge as fast as centred ones, to Lasso's optimum. Without
    # an intercept the means are part of the model (centred features there)
    X, y, _ = _data(8)
    X += 4.0 * fit_intercept
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model = QuadraticRegression(alpha=0.06, penalty="l1", tol=1e-10, max_iter=5000,
                                    fit_intercept=fit_intercept).fit(X, y)
    reference = Lasso(alpha=0.06, tol=1e-14, max_iter=100000, fit_intercept=fit_intercept).fit(
        PolynomialFeatures(2, include_bias=False).fit_transform(X), y)
    np.testing.assert_allclose(_theta(model)[0], reference.coef_, atol=1e-5)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-4)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_logistic_is_l1_logistic_regression_on_the_degree2_features(n_classes):
    X, signal, _ = _data(1)
    y = np.digitize(signal, [0.0] if n_classes == 2 else [-0.5, 0.5])
    model = QuadraticLogisticRegression(C=0.5, penalty="l1", tol=1e-12, max_iter=20000).fit(X, y)
    reference = LogisticRegression(C=0.5, l1_ratio=1.0, solver="saga", tol=1e-12,
                                   max_iter=100000).fit(
        PolynomialFeatures(2, include_bias=False).fit_transform(X), y)
    if n_classes == 2:  # the multinomial coefficients are unique up to a shift: compare probabilities
        np.testing.assert_allclose(_theta(model), reference.coef_, atol=1e-5)
    P = PolynomialFeatures(2, include_bias=False).fit_transform(X)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(P), atol=1e-5)


def test_interactions_name_the_nonzero_pairs_and_respect_the_constraints():
    X, y, _ = _data(2, d=6)
    model = QuadraticRegression(alpha=0.02, penalty="l1", interaction_cst=[[0, 1, 2], [3, 4, 5]],
                                tol=1e-8).fit(X, y)
    nonzero = {(a, b) for a in range(6) for b in range(a + 1, 6) if model.Q_[a, b] != 0}
    assert {tuple(p) for p in model.interactions_} == nonzero
    assert (0, 1) in nonzero and all((a < 3) == (b < 3) for a, b in nonzero)
    assert model.n_interactions_ == len(nonzero) < 6


def test_group_selects_whole_rows():
    X, y, _ = _data(3, n=300, d=6)
    model = QuadraticRegression(alpha=0.2, penalty="group", tol=1e-6, max_iter=5000).fit(X, y)
    off = model.Q_ - np.diag(np.diag(model.Q_))
    rows = np.flatnonzero(np.any(off != 0, axis=1))
    # every selected pair holds a feature whose row is selected whole: here 0 or 1
    assert {0, 1} <= set(rows) and all(0 in pair or 1 in pair for pair in model.interactions_)
    assert np.all(off[np.ix_([2, 3, 4, 5], [2, 3, 4, 5])] == 0)


def test_warm_start_continues_and_max_iter_warns():
    X, signal, _ = _data(4)
    y = (signal > 0).astype(int)
    model = QuadraticLogisticRegression(C=0.5, penalty="l1", warm_start=True, tol=1e-8)
    first = model.fit(X, y).n_iter_[0]
    assert first > 1 and model.fit(X, y).n_iter_[0] < first
    with pytest.warns(ConvergenceWarning, match="duality gap"):
        QuadraticLogisticRegression(penalty="l1", max_iter=2).fit(X, y)


@pytest.mark.parametrize("model, message", [
    (QuadraticLogisticRegression(penalty="elasticnet"), "l1_ratio"),
    (QuadraticLogisticRegression(penalty="l1", solver="sgd"), "solver='sgd'"),
    (QuadraticLogisticRegression(penalty="l1", rank=2), "rank"),
    (QuadraticRegression(penalty="l1"), "alpha"),
])
def test_unsupported_settings_are_refused(model, message):
    X, signal, _ = _data(5)
    with pytest.raises(ValueError, match=message):
        model.fit(X, (signal > 0).astype(int))


def test_regression_cv_path_is_lasso_cv_on_the_degree2_features():
    X, y, _ = _data(6, n=150)
    model = QuadraticRegressionCV(alphas=8, penalty="l1", cv=3).fit(X, y)
    reference = LassoCV(alphas=8, cv=3, tol=1e-8).fit(
        PolynomialFeatures(2, include_bias=False).fit_transform(X), y)
    np.testing.assert_allclose(model.alphas_, reference.alphas_)
    np.testing.assert_allclose(model.mse_path_, reference.mse_path_, rtol=1e-2)
    assert model.alpha_ == pytest.approx(reference.alpha_) and (0, 1) in map(tuple, model.interactions_)


def test_logistic_cv_l1_ratios_grid():
    X, signal, _ = _data(7, n=150)
    y = (signal > 0).astype(int)
    model = QuadraticLogisticRegressionCV(Cs=[0.1, 1.0], penalty="elasticnet",
                                          l1_ratios=[0.5, 1.0], cv=2).fit(X, y)
    assert model.scores_.shape == model.n_iter_.shape == (2, 2, 2)
    assert model.coefs_paths_.shape == (2, 2, 2, 1, D)
    assert model.l1_ratio_ in (0.5, 1.0) and model.n_interactions_ == len(model.interactions_)
    best = np.unravel_index(np.argmax(model.scores_.mean(0)), (2, 2))
    assert (model.C_, model.l1_ratio_) == ([0.1, 1.0][best[0]], [0.5, 1.0][best[1]])


def test_owlqn_reaches_fistas_optimum_in_fewer_iterations():
    """QLR's entrywise solver (OWL-QN: L-BFGS pairs on the orthant) and FISTA stop on the same
    duality gap at the same objective; on a multiclass problem the pairs save iterations."""
    from sklearn.datasets import make_classification

    from skquad.linear_model._sparse_q import (LogisticLoss, fista, owlqn, sparse_penalty,
                                               sparse_start)

    X, y = make_classification(n_samples=300, n_features=6, n_informative=5, n_redundant=0,
                               n_classes=3, random_state=2)
    loss, penalty = LogisticLoss(y, np.full(300, 1 / 300), 3), sparse_penalty("l1", None, 1 / 300,
                                                                               None, 6)
    runs = [solver(X, loss, penalty, sparse_start(None, penalty, 3, 6), fit_intercept=True,
                   tol=1e-8, max_iter=20000) for solver in (owlqn, fista)]
    (_, quasi_newton, objective, gap, _), (_, first_order, reference, _, _) = runs
    assert gap <= 1e-8 * np.log(3) and abs(objective - reference) <= 1e-10
    assert quasi_newton < first_order / 2


def test_relaxed_cv_refits_the_selected_pairs_with_the_l2_penalty():
    from sklearn.model_selection import StratifiedKFold

    X, signal, _ = _data(8, n=200, d=6)
    y = (signal > 0).astype(int)
    folds = list(StratifiedKFold(3).split(X, y))
    settings = dict(Cs=[0.02, 0.05, 0.2], penalty="l1", cv=folds, tol=1e-8, max_iter=5000)
    model = QuadraticLogisticRegressionCV(relax=True, relax_C=0.5, **settings).fit(X, y)
    selector = QuadraticLogisticRegression(penalty="l1", C=model.C_, tol=1e-8,
                                           max_iter=5000).fit(X, y)
    # the pairs are those of the L1 model at the chosen C, on all the data
    assert 0 < model.n_interactions_ < 15
    np.testing.assert_array_equal(model.interactions_, selector.interactions_)

    def by_hand(pairs, rows):  # each pair a group, every other feature alone
        alone = [[a] for a in range(6) if a not in np.ravel(pairs)]
        return QuadraticLogisticRegression(C=0.5, interaction_cst=[*pairs.tolist(), *alone],
                                           tol=1e-8, max_iter=5000).fit(X[rows], y[rows])

    every = np.arange(len(y))
    np.testing.assert_allclose(model.predict_proba(X),
                               by_hand(selector.interactions_, every).predict_proba(X), atol=1e-5)
    # each fold scores the relaxed refit of its own L1 model
    train, test = folds[1]
    fold_selector = QuadraticLogisticRegression(penalty="l1", C=0.2, tol=1e-8,
                                                max_iter=5000).fit(X[train], y[train])
    relaxed = by_hand(fold_selector.interactions_, train)
    assert model.scores_[1, 2] == pytest.approx(relaxed.score(X[test], y[test]))
    np.testing.assert_allclose(model.coefs_paths_[1, 2], relaxed.coef_, atol=1e-4)
    # without relax the folds score the L1 models themselves
    plain = QuadraticLogisticRegressionCV(**settings).fit(X, y)
    assert plain.scores_[1, 2] == pytest.approx(fold_selector.score(X[test], y[test]))


def test_relax_needs_a_sparse_penalty():
    X, signal, _ = _data(9)
    with pytest.raises(ValueError, match="relax=True .* sparse penalty"):
        QuadraticLogisticRegressionCV(Cs=[1.0], cv=2, relax=True).fit(X, (signal > 0).astype(int))


def test_relaxed_cv_chooses_relax_c_from_a_list_by_the_folds():
    X, signal, _ = _data(10, n=150)
    y = (signal > 0).astype(int)
    model = QuadraticLogisticRegressionCV(Cs=[0.05, 0.3], penalty="elasticnet",
                                          l1_ratios=[0.5, 1.0], relax=True,
                                          relax_C=[0.1, 10.0], cv=2).fit(X, y)
    assert model.scores_.shape == model.n_iter_.shape == (2, 2, 2, 2)
    assert model.coefs_paths_.shape == (2, 2, 2, 2, 1, D)
    best = np.unravel_index(np.argmax(model.scores_.mean(0)), (2, 2, 2))
    assert (model.C_, model.l1_ratio_, model.relax_C_) == (
        [0.05, 0.3][best[0]], [0.5, 1.0][best[1]], [0.1, 10.0][best[2]])
    # the relaxed refits differ by relax_C; the path's iterations do not
    assert not np.allclose(model.scores_[..., 0], model.scores_[..., 1])
    np.testing.assert_array_equal(model.n_iter_[..., 0], model.n_iter_[..., 1])
    # without the refit: the folds' relaxed models at their own best, relax_C_ their mean
    folds = QuadraticLogisticRegressionCV(Cs=[0.05, 0.3], penalty="l1", relax=True,
                                          relax_C=[0.1, 10.0], refit=False, cv=2).fit(X, y)
    per_fold = folds.scores_.reshape(2, -1).argmax(axis=1)
    assert folds.relax_C_ == pytest.approx(np.mean(np.array([0.1, 10.0])[per_fold % 2]))
    chosen = [folds.coefs_paths_.reshape(2, 4, 1, D)[f, b] for f, b in enumerate(per_fold)]
    np.testing.assert_allclose(folds.coef_, np.mean(chosen, axis=0))


def test_relaxed_regression_cv_refits_the_selected_pairs_with_ridge():
    from sklearn.model_selection import KFold

    X, y, weight = _data(11, n=200, d=6)
    folds = list(KFold(3).split(X))
    model = QuadraticRegressionCV(alphas=6, penalty="l1", cv=folds, relax=True,
                                  relax_alpha=2.0).fit(X, y, weight)
    selector = QuadraticRegression(alpha=model.alpha_, penalty="l1").fit(X, y, weight)
    assert 0 < model.n_interactions_ < 15
    np.testing.assert_array_equal(model.interactions_, selector.interactions_)

    def by_hand(pairs, rows):  # each pair a group, every other feature alone; the path's
        alone = [[a] for a in range(6) if a not in np.ravel(pairs)]  # errors do not clip
        return QuadraticRegression(alpha=2.0, interaction_cst=[*pairs.tolist(), *alone],
                                   clip_inputs=False, clip_outputs=False).fit(
            X[rows], y[rows], weight[rows])

    unclipped = model.set_params(clip_outputs=False)  # (read at predict time)
    np.testing.assert_allclose(unclipped.predict(X),
                               by_hand(selector.interactions_, np.arange(len(y))).predict(X),
                               rtol=1e-6, atol=1e-8)
    # each fold's error is that of the relaxed refit of its own L1 model
    train, test = folds[2]
    alpha = model.alphas_[3]
    fold_selector = QuadraticRegression(alpha=alpha, penalty="l1", tol=1e-4).fit(
        X[train], y[train], weight[train])
    relaxed = by_hand(fold_selector.interactions_, train)
    error = np.average((relaxed.predict(X[test]) - y[test]) ** 2, weights=weight[test])
    assert model.mse_path_[3, 2] == pytest.approx(error, rel=1e-3)
    with pytest.raises(ValueError, match="relax=True .* sparse penalty"):
        QuadraticRegressionCV(cv=3, relax=True).fit(X, y)
