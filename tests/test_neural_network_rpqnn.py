"""Tests of RPQNNClassifier (skquad.neural_network._rpqnn)."""

import inspect

import numpy as np
import pytest
from numpydoc.validate import validate
from sklearn.base import clone

from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier, RPQNNRegressor



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


def _numpydoc_errors(name, is_method):
    # scikit-learn's own filter (sklearn/tests/test_docstrings.py): RT02, GL01
    # and GL02 are ignored everywhere, EX01/SA01/ES01 on methods.
    ignored = {"RT02", "GL01", "GL02"} | ({"EX01", "SA01", "ES01"} if is_method else set())
    return [(code, message) for code, message in validate(name)["errors"] if code not in ignored]


@pytest.mark.parametrize(
    ("Estimator", "method"),
    [(E, m) for E in (QNNClassifier, RPQNNClassifier) for m in (None, "fit", "partial_fit", "predict_log_proba")]
    + [(E, m) for E in (QNNRegressor, RPQNNRegressor) for m in (None, "fit", "partial_fit", "predict")],
)
def test_docstrings_pass_numpydoc_validation(Estimator, method):
    name = f"skquad.{Estimator.__name__}" + (f".{method}" if method else "")
    assert _numpydoc_errors(name, method is not None) == []


def test_power_term_is_a_parameter_in_signature_order():
    parameters = list(inspect.signature(RPQNNClassifier).parameters)
    shared = list(inspect.signature(QNNClassifier).parameters)
    assert parameters == shared[:4] + ["power_term"] + shared[4:]
    clf = RPQNNClassifier(power_term=True, solver="lbfgs")
    assert clf.get_params()["power_term"] is True
    assert clone(clf).power_term is True
    assert repr(clf) == "RPQNNClassifier(power_term=True, solver='lbfgs')"
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        RPQNNClassifier(bogus=1)


def test_power_term_network(iris):
    X, y = iris
    clf = RPQNNClassifier((6,), quadratic_layers="all", power_term=True, solver="lbfgs", max_iter=300,
                          random_state=0).fit(X, y)
    assert {"factor_weight", "factor_bias", "power_weight", "power_bias"} <= set(clf.layers_[0])
    assert clf.layers_[0]["power_weight"].shape == (6, 4)
    assert clf.score(X, y) > 0.95
