"""The networks' ``alpha="auto"``: the penalty chosen on held-out fifths of the rows."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.datasets import make_circles, make_multilabel_classification
from sklearn.model_selection import train_test_split

import skquad.neural_network._classifier as classifier_module
from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier, RPQNNRegressor
from skquad._foundation._held_out import HeldOutMisclassifications, preferred_within_one_standard_error
from skquad.neural_network._classifier import CLASSIFIER_ALPHA_SEARCH, MLP_ALPHA
from skquad.neural_network._regressor import AUTO_ALPHAS


def _noisy(n=300, seed=0):
    """A weak interaction under strong noise: the setting where alpha=1 fits the noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10))
    return X, X[:, 0] * X[:, 1] + X[:, 2] + 2.0 * rng.standard_normal(n)


@pytest.mark.parametrize("Estimator", [QNNRegressor, RPQNNRegressor])
def test_auto_holds_back_a_network_that_would_fit_noise(Estimator):
    X_train, X_test, y_train, y_test = train_test_split(*_noisy(), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = Estimator(random_state=0).fit(X_train, y_train)
        unit = Estimator(alpha=1.0, random_state=0).fit(X_train, y_train)
    assert auto.alpha_ in AUTO_ALPHAS and auto.alpha_ > 1.0
    assert auto.score(X_test, y_test) > unit.score(X_test, y_test) + 0.1


def test_auto_is_the_candidate_fitted_again_on_all_rows():
    X, y = _noisy(n=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = QNNRegressor(hidden_layer_sizes=(8,), random_state=0).fit(X, y)
        fixed = QNNRegressor(hidden_layer_sizes=(8,), alpha=auto.alpha_, random_state=0).fit(X, y)
    np.testing.assert_array_equal(auto.predict(X), fixed.predict(X))


def test_only_the_final_fit_reports_its_convergence():
    X, y = _noisy(n=60)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        QNNRegressor(hidden_layer_sizes=(8,), max_iter=3, random_state=0).fit(X, y)
    assert sum(issubclass(w.category, ConvergenceWarning) for w in caught) == 1


@pytest.mark.parametrize("setting, rows", [
    ({"solver": "adam", "max_iter": 5}, 100),  # one stochastic run: no search
    ({}, 15),  # too few rows to hold out
])
def test_auto_is_one_without_an_lbfgs_fit_to_search(setting, rows):
    X, y = _noisy(n=rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QNNRegressor(hidden_layer_sizes=(4,), random_state=0, **setting).fit(X, y)
    assert model.alpha_ == 1.0


def test_partial_fit_and_a_given_alpha_set_alpha_():
    X, y = _noisy(n=50)
    assert QNNRegressor(hidden_layer_sizes=(4,), solver="adam").partial_fit(X, y).alpha_ == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert QNNRegressor(hidden_layer_sizes=(4,), alpha=0.3, max_iter=5).fit(X, y).alpha_ == 0.3


# ------------------------------------------------------------------ classifiers
def _weak_classes(seed, n=400, n_test=2000, d=20, k=4):
    """Four classes by a weak signal in four of 20 inputs, one class the majority: where a
    network trained to max_iter without early stopping fits the noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n + n_test, d))
    logits = 0.5 * X[:, :k] + rng.gumbel(size=(len(X), k))
    logits[:, 0] += 1.5
    y = logits.argmax(1)
    return X[:n], y[:n], X[n:], y[n:]


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_classifier_auto_holds_back_a_network_that_would_fit_noise(Estimator, seed):
    X_train, y_train, X_test, y_test = _weak_classes(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = Estimator(hidden_layer_sizes=(20,), random_state=0).fit(X_train, y_train)
        mlp = Estimator(hidden_layer_sizes=(20,), alpha=MLP_ALPHA, random_state=0).fit(X_train, y_train)
    assert auto.alpha_ in CLASSIFIER_ALPHA_SEARCH.alphas and auto.alpha_ > MLP_ALPHA
    assert auto.score(X_test, y_test) > mlp.score(X_test, y_test) + 0.02


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_classifier_auto_keeps_mlps_alpha_where_it_holds_up(Estimator):
    X, y = make_circles(300, noise=0.05, factor=0.5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = Estimator(hidden_layer_sizes=(20,), random_state=0).fit(X, y)
        mlp = Estimator(hidden_layer_sizes=(20,), alpha=MLP_ALPHA, random_state=0).fit(X, y)
    assert auto.alpha_ == MLP_ALPHA
    np.testing.assert_array_equal(auto.predict_proba(X), mlp.predict_proba(X))


def test_classifier_auto_offers_mlps_alpha_as_the_preferred_candidate(monkeypatch):
    chosen = []

    def spy(errors, preferred):
        chosen.append((errors.shape, preferred))
        return preferred_within_one_standard_error(errors, preferred)

    monkeypatch.setattr(classifier_module, "preferred_within_one_standard_error", spy)
    X, y, _, _ = _weak_classes(0, n=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QNNClassifier(hidden_layer_sizes=(4,), max_iter=20, random_state=0).fit(X, y)
    # under 125 rows every fifth is held out (to score 100 rows); four candidates
    assert chosen == [((120, 4), 3)] and CLASSIFIER_ALPHA_SEARCH.alphas[3] == MLP_ALPHA
    assert model.alpha_ in CLASSIFIER_ALPHA_SEARCH.alphas


@pytest.mark.parametrize("setting, rows", [
    ({"early_stopping": True}, 100),  # a validation split regularizes: no search
    ({"max_iter": 2}, 1100),  # Adam on more than 1,000 rows stops early by default
    ({}, 99),  # fewer rows than a held-out score needs
])
def test_classifier_auto_is_mlps_alpha_without_a_search(setting, rows, monkeypatch):
    calls = []
    monkeypatch.setattr(HeldOutMisclassifications, "add", lambda self, *args: calls.append(1))
    X, y, _, _ = _weak_classes(0, n=rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QNNClassifier(hidden_layer_sizes=(4,), random_state=0, **setting).fit(X, y)
    assert model.alpha_ == MLP_ALPHA and calls == []


def test_classifier_auto_needs_every_class_in_every_training_part(monkeypatch):
    calls = []
    monkeypatch.setattr(HeldOutMisclassifications, "add", lambda self, *args: calls.append(1))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 3))
    y = np.zeros(150, dtype=int)
    y[:75], y[0] = 1, 2  # a class of one row: the training part without its fifth lacks it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QNNClassifier(hidden_layer_sizes=(4,), max_iter=5, random_state=0).fit(X, y)
    assert model.alpha_ == MLP_ALPHA and calls == []


def test_classifier_partial_fit_and_a_given_alpha_set_alpha_():
    X, y, _, _ = _weak_classes(0, n=50)
    assert QNNClassifier(hidden_layer_sizes=(4,)).partial_fit(X, y, classes=np.arange(4)).alpha_ == MLP_ALPHA
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        assert QNNClassifier(hidden_layer_sizes=(4,), alpha=0.3, max_iter=5).fit(X, y).alpha_ == 0.3


def test_classifier_auto_counts_class_weights_once():
    X, y, _, _ = _weak_classes(2, n=200)
    weights = dict(zip(*np.unique(y, return_counts=True)))
    sample_weight = np.array([len(y) / (len(weights) * weights[label]) for label in y])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        balanced = QNNClassifier(hidden_layer_sizes=(8,), class_weight="balanced", random_state=0).fit(X, y)
        weighted = QNNClassifier(hidden_layer_sizes=(8,), random_state=0).fit(X, y, sample_weight=sample_weight)
    assert balanced.alpha_ == weighted.alpha_
    np.testing.assert_allclose(balanced.predict_proba(X), weighted.predict_proba(X), rtol=1e-6, atol=1e-9)


def test_classifier_auto_searches_a_label_indicator_matrix():
    X, y = make_multilabel_classification(n_samples=150, n_classes=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        auto = QNNClassifier(hidden_layer_sizes=(8,), max_iter=50, random_state=0).fit(X, y)
        fixed = QNNClassifier(hidden_layer_sizes=(8,), max_iter=50, alpha=auto.alpha_, random_state=0).fit(X, y)
    assert auto.alpha_ in CLASSIFIER_ALPHA_SEARCH.alphas
    np.testing.assert_array_equal(auto.predict_proba(X), fixed.predict_proba(X))
