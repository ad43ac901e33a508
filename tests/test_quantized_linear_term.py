"""The quantized networks' linear term (``linear_term``): ridge by GCV, then the network."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import train_test_split

from skquad import (
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    SDPQuantizedClassifier,
    SDPQuantizedRegressor,
    SDPQuantizedRegressorCV,
)
from skquad.quantized._common import _batched_network_scores
from skquad.quantized._linear_term import (
    ridge_by_leave_one_out,
    RELATIVE_ALPHAS,
    LinearSums,
    ridge_by_gcv,
    rows_less_linear_term,
)


def _data(n=150, d=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X @ rng.standard_normal(d) / np.sqrt(d) + X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n)
    return X, y


def test_the_penalty_minimizes_gcv_over_scikit_learns_ridges():
    """Every candidate refitted by scikit-learn's Ridge, its degrees of freedom
    from an explicit hat matrix: the chosen penalty is the GCV minimizer and the
    coefficients are Ridge's at it."""
    rng = np.random.default_rng(1)
    Z, t = rng.standard_normal((40, 6)), rng.standard_normal(40)
    w = rng.integers(1, 4, size=40).astype(float)
    coef, intercept, alpha = ridge_by_gcv(LinearSums.of_rows(Z, t, w), n_samples=w.sum())
    centred = Z - np.average(Z, axis=0, weights=w)
    gram = centred.T @ (w[:, None] * centred)
    scores = []
    energy = np.trace(gram)
    for a in energy * RELATIVE_ALPHAS:
        ridge = Ridge(alpha=a).fit(Z, t, sample_weight=w)
        rss = w @ (t - ridge.predict(Z)) ** 2
        df = np.trace(np.linalg.solve(gram + a * np.eye(6), gram))
        scores.append(rss / (w.sum() - 1 - df) ** 2)
    best = int(np.argmin(scores))
    assert alpha[0] == pytest.approx(energy * RELATIVE_ALPHAS[best], rel=1e-12)
    ridge = Ridge(alpha=alpha[0]).fit(Z, t, sample_weight=w)
    np.testing.assert_allclose(coef[0], ridge.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(intercept[0], ridge.intercept_, rtol=1e-9, atol=1e-12)


def test_integer_weights_choose_as_repeated_rows():
    rng = np.random.default_rng(2)
    Z, t = rng.standard_normal((30, 4)), rng.standard_normal((30, 2))
    w = rng.integers(1, 4, size=30)
    weighted = rows_less_linear_term(Z, t, w.astype(float), n_samples=float(w.sum()))
    repeated = rows_less_linear_term(np.repeat(Z, w, axis=0), np.repeat(t, w, axis=0),
                                     np.ones(w.sum()), n_samples=float(w.sum()))
    for a, b in zip(weighted[1:], repeated[1:]):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_a_constant_target_has_no_linear_part_exactly():
    Z = np.random.default_rng(3).standard_normal((20, 3))
    residual, coef, intercept, _ = rows_less_linear_term(Z, np.full(20, 7.5), np.ones(20), n_samples=20.0)
    assert np.all(coef == 0.0) and np.all(intercept == 7.5) and np.all(residual == 0.0)


MODELS = [
    lambda: SDPQuantizedRegressor(200, random_state=0),
    lambda: BackpropQuantizedRegressor(200, max_iter=100, random_state=0),
]


def _fit_both(make, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # short trainings; the scores are read
        return make().fit(X, y), make().set_params(linear_term=False).fit(X, y)


@pytest.mark.parametrize("make", MODELS)
def test_the_network_adds_the_interaction_to_the_linear_term(make):
    """A linear target plus x0*x1, 10 inputs, 112 training rows: the model beats the
    linear ridge by the interaction's share."""
    X_train, X_test, y_train, y_test = train_test_split(*_data(d=10), random_state=0)
    ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X_train, y_train).score(X_test, y_test)
    model, _ = _fit_both(make, X_train, y_train)
    assert model.linear_coef_.shape == (1, 10) and model.linear_alpha_.shape == (1,)
    assert model.score(X_test, y_test) > ridge + 0.15


@pytest.mark.parametrize("make", MODELS)
def test_a_linear_target_on_few_rows_is_fitted_as_ridge_fits_it(make):
    """A linear target, 40 inputs, 112 training rows: the ±1 network alone falls far
    below the ridge; with the term the model stays within the robustness suite's
    margin of it (the network fits some of the residuals' noise)."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((150, 40))
    y = X @ rng.standard_normal(40) / np.sqrt(40) + 0.5 * rng.standard_normal(150)
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X_train, y_train).score(X_test, y_test)
    model, alone = _fit_both(make, X_train, y_train)
    assert model.score(X_test, y_test) > ridge - 0.1
    assert alone.score(X_test, y_test) < ridge - 0.2
    assert not hasattr(alone, "linear_coef_")


def test_the_term_is_on_the_original_inputs():
    """Standardized internally: inputs scaled and shifted give the same predictions,
    and ``linear_coef_`` is on the inputs as given (at one beta: "auto"'s held-out rows
    are picked by a hash of the values, which scaling moves)."""
    X, y = _data(n=80, d=5)
    a = SDPQuantizedRegressor(50, beta=0.05, random_state=0).fit(X, y)
    b = SDPQuantizedRegressor(50, beta=0.05, random_state=0).fit(10.0 * X + 3.0, y)
    np.testing.assert_allclose(b.predict(10.0 * X + 3.0), a.predict(X), rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(10.0 * b.linear_coef_, a.linear_coef_, rtol=1e-7)


def test_the_certificate_is_for_the_networks_beside_the_term():
    """The relaxation is solved on the term's residuals: the bound holds for the
    network fitted there, whose objective is the one reported."""
    X, y = _data(n=80, d=5)
    model = SDPQuantizedRegressor(100, random_state=0).fit(X, y)
    assert model.lower_bound_ <= model.relaxed_objective_ + 1e-9
    assert model.certified_gap_ <= 10 * model.tol * max(1.0, abs(model.relaxed_objective_))


def test_the_cv_search_and_the_single_fit_share_the_term():
    X, y = _data(n=90, d=4)
    search = SDPQuantizedRegressorCV(40, betas=3, cv=3, random_state=0).fit(X, y)
    single = SDPQuantizedRegressor(40, beta=search.beta_, random_state=0).fit(X, y)
    np.testing.assert_allclose(search.linear_coef_, single.linear_coef_, rtol=1e-12)
    np.testing.assert_allclose(search.predict(X), single.predict(X), rtol=1e-10)




def _classes(n_classes, n=120, d=6, seed=0):
    """Inputs neither centred nor scaled; classes mostly linear in them, with noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * np.arange(1, d + 1) + 3.0
    scores = X[:, :n_classes] / np.arange(1, n_classes + 1) + rng.standard_normal((n, n_classes))
    return X, (np.argmax(scores, axis=1) if n_classes > 2 else (scores[:, 0] > 3.0).astype(int))


@pytest.mark.parametrize("params, n_classes, fitted", [
    ({}, 2, True),
    ({}, 3, False),                                   # one-vs-rest scores can mask a class
    ({"loss": "hinge"}, 2, False),
    ({"loss": "logistic"}, 2, False),
    ({"refit_output_layer": "logistic"}, 2, False),   # the refit fits the labels themselves
    ({"fit_intercept": False}, 2, False),
    ({"linear_term": False}, 2, False),
    ({"linear_term": True}, 3, True),                 # one per class
])
def test_the_backprop_classifiers_auto_term(params, n_classes, fitted):
    X, y = _classes(n_classes)
    model = BackpropQuantizedClassifier(30, max_iter=20, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert hasattr(model, "linear_coef_") == fitted
    if fitted:
        n_scores = 1 if n_classes == 2 else n_classes
        assert model.linear_coef_.shape == (n_scores, X.shape[1]) and model.linear_alpha_.shape == (n_scores,)


@pytest.mark.parametrize("seed", [0, 1])
def test_the_backprop_classifiers_term_fits_a_noisy_linear_boundary_better(seed):
    """Two classes by the sign of x0 + x1 plus noise among 30 inputs, 300 training rows: the
    network alone weighs all 30 inputs alike; with the term (the default) the model scores
    more than 0.03 higher on 1,000 test rows. (It stays below LogisticRegression: the 1,000
    neurons still fit some of the residuals' noise.)"""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((1300, 30))
    y = (X[:, 0] + X[:, 1] + rng.standard_normal(1300) > 0).astype(int)
    default = BackpropQuantizedClassifier(random_state=0).fit(X[:300], y[:300])
    alone = BackpropQuantizedClassifier(linear_term=False, random_state=0).fit(X[:300], y[:300])
    assert default.score(X[300:], y[300:]) > alone.score(X[300:], y[300:]) + 0.03


@pytest.mark.parametrize("params", [{"loss": "hinge"}, {"refit_output_layer": "logistic"}])
def test_the_backprop_classifier_refuses_a_term_it_cannot_fit(params):
    X, y = _classes(2)
    with pytest.raises(ValueError, match="linear_term=True needs"):
        BackpropQuantizedClassifier(10, linear_term=True, **params).fit(X, y)


@pytest.mark.parametrize("n_classes, refit", [(2, True), (2, False), (3, True)])
def test_the_backprop_classifiers_scores_are_its_network_plus_the_term(n_classes, refit):
    """The term is the SDP classifier's (the same ridge of the same labels), the scores are
    the quantized network's plus it, and the real-weight network's too."""
    X, y = _classes(n_classes)
    common = dict(linear_term=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = BackpropQuantizedClassifier(30, max_iter=20, refit_output_layer=refit, **common).fit(X, y)
    sdp = SDPQuantizedClassifier(5, beta="rule", **common).fit(X, y)
    np.testing.assert_allclose(model.linear_coef_, sdp.linear_coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(model.linear_alpha_, sdp.linear_alpha_, rtol=1e-12)
    term = X @ model.linear_coef_.T
    lifting = model._lifting()
    network = _batched_network_scores(lifting, X, model.U_, model.V_, model.alpha_) + model.intercept_
    scores = np.reshape(model.decision_function(X), network.shape)
    np.testing.assert_allclose(scores, network + term, rtol=1e-10, atol=1e-10)
    # the real-weight network was trained beside the term's constant, which intercept_ holds
    # (with the refit's own intercept added)
    offset = model._score_offset()
    if not refit:
        np.testing.assert_allclose(model.intercept_, offset, rtol=1e-12)
    float_network = _batched_network_scores(lifting, X, model.U_float_, model.V_float_, model.float_alpha_)
    np.testing.assert_allclose(np.reshape(model.float_decision_function(X), network.shape),
                               float_network + offset + term, rtol=1e-10, atol=1e-10)


def test_the_backprop_classifiers_term_is_fixed_by_the_first_partial_fit():
    X, y = _classes(2, n=200)
    model = BackpropQuantizedClassifier(20, random_state=0)
    model.partial_fit(X[:100], y[:100], classes=[0, 1])
    first = model.linear_coef_.copy()
    model.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(model.linear_coef_, first)
    restored = pickle.loads(pickle.dumps(model))
    restored.partial_fit(X[100:], y[100:])
    np.testing.assert_array_equal(restored.linear_coef_, first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X[100:], y[100:])  # fit starts a new network and fits its own term
    assert not np.allclose(model.linear_coef_, first)


def test_the_backprop_classifiers_class_weights_weigh_the_term_as_sample_weights():
    X, y = _classes(2)
    weights = {0: 1.0, 1: 3.0}
    a = BackpropQuantizedClassifier(10, max_iter=5, class_weight=weights, random_state=0)
    b = BackpropQuantizedClassifier(10, max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        a.fit(X, y)
        b.fit(X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    np.testing.assert_allclose(a.linear_coef_, b.linear_coef_, rtol=1e-12)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n, m, k, weighted", [
    (300, 100, 3, True), (2000, 300, 8, False),  # the m x m Gram
    (40, 400, 3, True), (30, 400, 1, False),     # the n x n Gram
])
def test_ridge_by_leave_one_out_is_ridgecv(n, m, k, weighted):
    rng = np.random.default_rng(n + m)
    # ±1 neurons' outputs are strongly correlated: a common factor per row
    H = np.sign(rng.standard_normal((n, m))) * rng.standard_normal((n, 1)) + 0.3 * rng.standard_normal((n, m))
    T = H[:, :5] @ rng.standard_normal((5, k)) + rng.standard_normal((n, k))
    w = rng.uniform(0.5, 2.0, n) if weighted else np.ones(n)
    alphas = np.sum(w @ H**2) * RELATIVE_ALPHAS
    reference = RidgeCV(alphas=alphas).fit(H, T, sample_weight=w)
    coef, intercept, alpha = ridge_by_leave_one_out(H.copy(), T, w, alphas)
    assert alpha == reference.alpha_
    scale = np.max(np.abs(reference.coef_))
    np.testing.assert_allclose(coef, reference.coef_.reshape(k, m), rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(intercept, np.reshape(reference.intercept_, -1), rtol=0, atol=1e-10 * scale)
    # a penalty away from LOO's choice is a different fit: the choice is what is compared
    other = alphas[(list(alphas).index(alpha) + 6) % len(alphas)]
    assert not np.allclose(Ridge(alpha=other).fit(H, T, sample_weight=w).coef_, reference.coef_)
