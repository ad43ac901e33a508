"""Tests of RPQNNClassifier (skquad.neural_network._rpqnn)."""

import inspect

import numpy as np
import pytest
from numpydoc.validate import validate
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier, RPQNNClassifier


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y



def test_sigmoid_outputs_give_normalised_probabilities(iris):
    X, y = iris
    clf = RPQNNClassifier((5,), output_activation="sigmoid", max_iter=300, learning_rate_init=0.02,
                          random_state=0)
    clf.fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X), rtol=1e-8, atol=1e-12)
    assert np.array_equal(proba.argmax(1), np.searchsorted(clf.classes_, clf.predict(X)))
    assert clf.score(X, y) > 0.9


