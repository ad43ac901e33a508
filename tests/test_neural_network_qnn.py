"""Tests of QNNClassifier (skquad.neural_network._qnn): what the full quadratic neuron learns."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier
from skquad.datasets import make_nonlinear_clusters, make_xor



def test_xor_with_one_quadratic_neuron():
    X, y = make_xor()
    clf = QNNClassifier(hidden_layer_sizes=(), solver="lbfgs", random_state=0).fit(X, y)
    assert clf.predict(X).tolist() == y.tolist()
    assert clf.n_outputs_ == 1 and clf.layers_[0]["weight"].shape == (1, 2)
    # XOR needs the product term x1 * x2: the learned Q has an off-diagonal
    # entry that dominates, a hyperbolic decision boundary.
    Q = clf.layers_[0]["quadratic"][0]
    assert abs(Q[0, 1]) > 5 * max(abs(Q[0, 0]), abs(Q[1, 1]), 1e-3)
    # A linear neuron cannot separate XOR.
    linear = QNNClassifier(hidden_layer_sizes=(), quadratic_layers=[False], solver="lbfgs").fit(X, y)
    assert linear.score(X, y) < 1.0


@pytest.fixture(scope="module")
def six_clusters():
    # Paper 001's data set at full size: 2000 train + 500 test points per class.
    X_train, X_test, y_train, y_test = make_nonlinear_clusters(2000, 500, random_state=0)
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def test_six_clusters_one_layer_of_six_quadratic_neurons(six_clusters):
    X_train, X_test, y_train, y_test = six_clusters
    # One layer of 6 quadratic neurons with paper 001's per-class sigmoid
    # outputs, so that neuron k is trained as "cluster k against the rest".
    clf = QNNClassifier(
        hidden_layer_sizes=(), output_activation="sigmoid", solver="lbfgs", max_iter=300, random_state=0
    ).fit(X_train, y_train)
    assert clf.score(X_test, y_test) > 0.995
    scores = clf.decision_function(X_test)
    conventional = QNNClassifier(
        hidden_layer_sizes=(), quadratic_layers=[False], output_activation="sigmoid",
        solver="lbfgs", max_iter=300, random_state=0,
    ).fit(X_train, y_train)
    linear_scores = conventional.decision_function(X_test)
    for k in range(6):
        # each single quadratic neuron separates its own cluster from the rest
        one_vs_rest = np.mean((scores[:, k] > 0) == (y_test == k))
        assert one_vs_rest > 0.99, (k, one_vs_rest)
    # the middle clusters (-8, 0) and (-8, 10) sit between two others: a
    # linear neuron cannot cut them out (5/6 = 83 % for "never this class").
    for k in (1, 4):
        linear_one_vs_rest = np.mean((linear_scores[:, k] > 0) == (y_test == k))
        assert linear_one_vs_rest < 0.88, (k, linear_one_vs_rest)


def test_six_clusters_with_adam(six_clusters):
    X_train, X_test, y_train, y_test = six_clusters
    clf = QNNClassifier(
        hidden_layer_sizes=(), learning_rate_init=0.05, max_iter=40, early_stopping=False,
        random_state=0,
    )
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        clf.fit(X_train, y_train)
    assert clf.score(X_test, y_test) > 0.995


def test_relinear_sw_decay_shrinks_quadratic_weights(iris):
    X, y = iris
    params = dict(hidden_layer_sizes=(), max_iter=50, random_state=0, quadratic_learning_rate_scale=1.0,
                  learning_rate_init=0.02)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        free = QNNClassifier(**params).fit(X, y)
        decayed = QNNClassifier(quadratic_l2=50.0, **params).fit(X, y)
        l1 = QNNClassifier(quadratic_l1=10.0, **params).fit(X, y)
    norm = lambda clf: np.abs(clf.layers_[0]["quadratic"]).sum()
    assert norm(decayed) < 0.5 * norm(free)
    assert norm(l1) < 0.5 * norm(free)


def test_weight_transfer(iris):
    X, y = iris
    clf = QNNClassifier((5,), quadratic_layers="all", weight_transfer=True, max_iter=200,
                        learning_rate_init=0.01, random_state=0).fit(X, y)
    assert clf.weight_transfer_n_iter_ > 0
    assert clf.score(X, y) > 0.9


def test_diverging_learning_rate_is_caught(binary_data):
    X, y = binary_data
    X = X * 50  # unscaled inputs make quadratic terms explode
    clf = QNNClassifier(
        (8, 8), quadratic_layers="all", relinear=False, quadratic_learning_rate_scale=1.0,
        solver="sgd", learning_rate_init=10.0, max_iter=50, random_state=0, dtype="float32",
    )
    with pytest.warns(ConvergenceWarning, match="diverged.*learning_rate_init.*ReLinear"):
        clf.fit(X, y)
    assert clf.diverged_
    for layer in clf.layers_:
        assert all(np.all(np.isfinite(v)) for v in layer.values() if isinstance(v, np.ndarray))
    proba = clf.predict_proba(X[:20] / 50)
    assert np.all(np.isfinite(proba))


