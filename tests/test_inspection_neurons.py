"""skquad/inspection/_neurons.py: every estimator's neurons read as quadrics that reproduce its scores."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skquad import (
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
)
from skquad.inspection import interaction_table, quadratic_neurons, quadric_analysis
from _inspection_cases import _ellipsoid_data, _xor_data


def test_rpqnn_neurons_are_rank_two_quadrics_equal_to_the_layer():
    X, y = _xor_data()
    X = np.hstack([X, np.random.default_rng(3).standard_normal((X.shape[0], 3))])
    model = RPQNNClassifier(
        hidden_layer_sizes=(4,), quadratic_layers="all", power_term=False, relinear=False,
        solver="lbfgs", dtype="float64", max_iter=500, random_state=0,
    ).fit(X, y)
    neurons = quadratic_neurons(model)
    first = [n for n in neurons if n.layer == 0]
    assert len(first) == 4 and neurons[-1].layer == 1
    for neuron in first:
        assert np.linalg.matrix_rank(neuron.Q, tol=1e-10) <= 2
    # the output neuron composed with the first layer's ReLU is the network
    hidden = np.maximum(np.column_stack([n.value(X) for n in first]), 0)
    np.testing.assert_allclose(neurons[-1].value(hidden), model.decision_function(X), rtol=1e-10, atol=1e-10)
    assert list(neurons[-1].feature_names[:2]) == ["layer 0, unit 0", "layer 0, unit 1"]


def test_sdp_network_and_relaxed_quadrics_reproduce_their_scores():
    X, y, _ = _ellipsoid_data(n=300)
    model = SDPQuantizedClassifier(
        n_neurons=200, loss="squared", beta=1e-3, class_weight="balanced", random_state=0
    ).fit(X * 10 + 3, y)
    for which, function in (("sampled", model.decision_function), ("relaxed", model.relaxed_decision_function)):
        (neuron,) = quadratic_neurons(model, which=which)
        np.testing.assert_allclose(neuron.value(X * 10 + 3), function(X * 10 + 3), rtol=1e-8, atol=1e-8)
    (relaxed,) = quadric_analysis(model, which="relaxed")
    assert relaxed.surface_type == "ellipsoid"
    # within a third of the shortest semi-axis (10 after scaling)
    np.testing.assert_allclose(relaxed.center, np.array([0.5, -0.5, 0.2]) * 10 + 3, atol=3.3)


def test_backprop_float_and_quantized_networks_and_bad_data():
    from skquad import BackpropQuantizedClassifier

    X, y, _ = _ellipsoid_data(n=300)
    model = BackpropQuantizedClassifier(n_neurons=30, max_iter=20, random_state=0).fit(X, y)
    (quantized,) = quadratic_neurons(model)
    (real,) = quadratic_neurons(model, which="float")
    np.testing.assert_allclose(quantized.value(X), model.decision_function(X), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(real.value(X), model.float_decision_function(X), rtol=1e-8, atol=1e-8)
    with pytest.raises(ValueError, match="which='relaxed' is not available"):
        quadratic_neurons(model, which="relaxed")
    X_missing = X.copy()
    X_missing[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite values"):
        interaction_table(model, X_missing)


# ---------------------------------------------------------------- regressors
def test_regressors_are_read_as_quadrics_and_sized():
    from skquad import QuadraticRegression, SDPQuantizedRegressor
    from skquad.inspection import interaction_table, model_size

    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    y = 2.0 * X[:, 0] * X[:, 1] + X[:, 2]
    model = QuadraticRegression(alpha=1e-8).fit(X, y)
    table = interaction_table(model, X)
    top = table.iloc[0]
    assert top["neuron"] == "prediction" and {top["feature_1"], top["feature_2"]} == {"x0", "x1"}
    # d(d+3)/2 coefficients and the intercept, as PolynomialFeatures(2) + Ridge.
    assert model_size(model).n_parameters == 3 * 6 // 2 + 1
    two = QuadraticRegression().fit(X, np.column_stack([y, X[:, 2]]))
    assert set(interaction_table(two, X)["neuron"]) == {"output 0", "output 1"}
    sdp = SDPQuantizedRegressor(n_neurons=50, random_state=0).fit(X, y)
    assert interaction_table(sdp, X).iloc[0][["feature_1", "feature_2"]].tolist() in (["x0", "x1"], ["x1", "x0"])


def _issue19_model():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    return QuadraticLogisticRegression().fit(X, y), X, y


def test_quadratic_neurons_refuses_arguments_that_do_not_apply():
    # Issue 19: which="bogus", layer=99 were ignored where they do not apply.
    from skquad import QNNClassifier

    model, X, y = _issue19_model()
    with pytest.raises(ValueError, match=r"layer=99 applies to the quadratic networks"):
        quadratic_neurons(model, layer=99)
    with pytest.raises(ValueError, match=r"which='bogus' applies to the quantized networks"):
        quadratic_neurons(model, which="bogus")
    network = QNNClassifier(hidden_layer_sizes=(2,), max_iter=5, random_state=0)
    with pytest.warns(ConvergenceWarning):
        network.fit(X, y)
    with pytest.raises(ValueError, match=r"layer=99 is not an index of QNNClassifier.layers_ \(0 to 1\)"):
        quadratic_neurons(network, layer=99)
    with pytest.raises(ValueError, match=r"which='sampled' applies to the quantized"):
        quadratic_neurons(network, which="sampled")
    assert quadratic_neurons(network, layer=1)  # a valid index still reads the layer
