"""The network regressors' ``alpha="auto"``: the penalty chosen on a held-out fifth of the rows."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from skquad import QNNRegressor, RPQNNRegressor
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
