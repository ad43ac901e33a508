"""Every regressor on targets with a large offset (issue 38, item 1).

y = 1e4 + x0 x1 + x2 + noise: an intercept fitted as scikit-learn's linear
models fit it (unpenalised) leaves the problem of the centred targets, so the
held-out R² must be that of the same data without the offset.
"""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

import skquad

REGRESSORS = [
    "QuadraticRegression", "QuadraticRegressionCV", "QNNRegressor", "RPQNNRegressor",
    "BackpropQuantizedRegressor", "SDPQuantizedRegressor", "SDPQuantizedRegressorCV",
]


def _offset_data(offset):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((200, 3))
    y = offset + X[:, 0] * X[:, 1] + X[:, 2] + 0.1 * rng.standard_normal(200)
    return X[:100], y[:100], X[100:], y[100:]


@pytest.mark.parametrize("name", REGRESSORS)
def test_an_offset_in_the_targets_costs_nothing(name):
    cls = getattr(skquad, name)
    params = {"random_state": 0} if "random_state" in cls().get_params() else {}
    scores = []
    for offset in (0.0, 1e4):
        X, y, X_test, y_test = _offset_data(offset)
        with warnings.catch_warnings():
            # The path's top (the zero network) and the networks' iteration limit
            # are routine here; the score is the test.
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = cls(**params).fit(X, y)
        scores.append(model.score(X_test, y_test))
    # the offset costs nothing: the same held-out R² as without it, and a good one
    assert scores[1] >= scores[0] - 0.02, scores
    assert scores[1] > 0.8, scores


def test_sdp_intercept_is_the_offset_plus_the_refit():
    X, y, _, _ = _offset_data(1e4)
    shifted = skquad.SDPQuantizedRegressor(n_neurons=200, random_state=0).fit(X, y)
    plain = skquad.SDPQuantizedRegressor(n_neurons=200, random_state=0).fit(X, y - 1e4)
    # The same centred problem: the same network, the intercept moved by the offset.
    np.testing.assert_allclose(shifted.alpha_, plain.alpha_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(shifted.intercept_ - 1e4, plain.intercept_, atol=1e-6)
    np.testing.assert_allclose(shifted.lower_bound_, plain.lower_bound_, rtol=1e-6)
