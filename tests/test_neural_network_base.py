"""Tests of QNNClassifier and RPQNNClassifier (skquad.neural_network)."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError

from skquad import QNNClassifier, RPQNNClassifier
from skquad.nn.fused import FusedNetwork
from skquad._torch_utils import make_generator
from skquad.datasets import make_nonlinear_clusters, make_xor


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def binary_data():
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, random_state=0)
    return X, y


def _network_and_loss(estimator, X, y):
    """The module and per-sample loss an estimator would train, without fitting."""
    estimator.classes_ = np.unique(y)
    hidden, flags = estimator._architecture()
    module = estimator._new_module([X.shape[1], *hidden, estimator._n_scores], flags, make_generator(0))
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    return module, estimator._output_kind()


@pytest.mark.parametrize(
    "estimator",
    [
        QNNClassifier((4, 3), activation="sigmoid", quadratic_layers="all", relinear=False),
        QNNClassifier((4,), activation="tanh", quadratic_layers=[True, False], relinear=False),
        QNNClassifier((3,), activation="relu", output_activation="sigmoid", relinear=False),
        QNNClassifier((), relinear=False),
        RPQNNClassifier((4, 3), activation="tanh", quadratic_layers="all", relinear=False),
        RPQNNClassifier((4,), activation="sigmoid", quadratic_layers="all", power_term=True, relinear=False),
        RPQNNClassifier((4,), activation="identity", output_activation="sigmoid", power_term=True, relinear=False),
    ],
    ids=lambda e: repr(e)[:60],
)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_fused_backward_matches_autograd(estimator, n_classes):
    # The whole network's explicit backward (Algorithms 1 and 2 chained through
    # the activations and the loss) against autograd on the same module.
    rng = np.random.RandomState(0)
    X = torch.as_tensor(rng.randn(17, 5))
    y = torch.as_tensor(rng.randint(0, n_classes, size=17))
    y[:n_classes] = torch.arange(n_classes)
    weights = torch.as_tensor(rng.rand(17))
    weights /= weights.sum()
    module, output = _network_and_loss(estimator, X, y.numpy())
    # random (not ReLinear) quadratic parts must be symmetric, as the layers keep them
    with torch.no_grad():  # as the engine calls it
        fused_loss = FusedNetwork(module, output)(X, y, weights)
    fused = [p.grad.clone() for p in module.parameters()]
    for parameter in module.parameters():
        parameter.grad = None
    loss_function = estimator._per_sample_loss(output)
    autograd_loss = torch.dot(loss_function(module(X), y), weights)
    autograd_loss.backward()
    torch.testing.assert_close(fused_loss, autograd_loss.detach(), rtol=1e-12, atol=1e-12)
    for (name, parameter), gradient in zip(module.named_parameters(), fused):
        torch.testing.assert_close(gradient, parameter.grad, rtol=1e-10, atol=1e-12, msg=name)


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_backward_options_train_the_same_model(iris, Estimator):
    X, y = iris
    probas = []
    for backward in ("fused", "cached", "autograd"):
        clf = Estimator(
            (6,), quadratic_layers="all", backward=backward, dtype="float64", max_iter=30,
            learning_rate_init=0.01, random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            probas.append(clf.fit(X, y).predict_proba(X))
    np.testing.assert_allclose(probas[1], probas[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(probas[2], probas[0], rtol=1e-8, atol=1e-10)


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
        hidden_layer_sizes=(), learning_rate_init=0.05, max_iter=40, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_train, y_train)
    assert clf.score(X_test, y_test) > 0.995


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_partial_fit_on_chunks_matches_fit(iris, Estimator):
    X, y = iris
    order = np.random.RandomState(0).permutation(len(y))
    X, y = X[order], y[order]
    params = dict(
        hidden_layer_sizes=(5,), batch_size=30, shuffle=False, learning_rate_init=0.02,
        random_state=0, n_iter_no_change=1000, tol=0.0,
    )
    whole = Estimator(max_iter=4, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        whole.fit(X, y)
    chunked = Estimator(**params)
    for epoch in range(4):
        for start in range(0, len(y), 30):
            chunked.partial_fit(X[start : start + 30], y[start : start + 30], classes=np.unique(y))
    np.testing.assert_allclose(chunked.predict_proba(X), whole.predict_proba(X), rtol=1e-4, atol=1e-6)
    assert chunked.t_ == whole.t_ == 20


def test_determinism_and_seed_dependence(iris):
    X, y = iris
    fits = [
        QNNClassifier((4,), max_iter=20, random_state=seed).fit(X, y) for seed in (1, 1, 2)
    ]
    for first, second in zip(fits[0].layers_, fits[1].layers_):
        for key in ("weight", "bias", "quadratic"):
            if key in first:
                np.testing.assert_array_equal(first[key], second[key])
    assert not np.array_equal(fits[0].layers_[0]["weight"], fits[2].layers_[0]["weight"])


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_pickle_keeps_numpy_only_and_predicts(iris, Estimator):
    X, y = iris
    clf = Estimator((4,), quadratic_layers="all", max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    expected = clf.predict_proba(X)
    data = pickle.dumps(clf)
    assert b"torch" not in data  # no tensors or modules, only numpy arrays
    restored = pickle.loads(data)
    np.testing.assert_allclose(restored.predict_proba(X), expected, rtol=1e-6)
    # it keeps learning after unpickling (with a fresh optimizer state)
    restored.partial_fit(X, y)
    assert restored.n_iter_ == clf.n_iter_ + 1


def test_relinear_start_is_a_conventional_network(iris):
    X, y = iris
    params = dict(hidden_layer_sizes=(5,), max_iter=15, random_state=0, dtype="float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        frozen = QNNClassifier(quadratic_layers="all", quadratic_learning_rate_scale=0.0, **params).fit(X, y)
        conventional = QNNClassifier(quadratic_layers=[False, False], **params).fit(X, y)
        rp_frozen = RPQNNClassifier(quadratic_layers="all", quadratic_learning_rate_scale=0.0, **params).fit(X, y)
    # Quadratic parts start at zero (U = 0, c = 1) and never move: the network
    # is exactly the conventional one.
    assert all(np.all(layer["quadratic"] == 0) for layer in frozen.layers_)
    np.testing.assert_allclose(frozen.predict_proba(X), conventional.predict_proba(X), rtol=1e-10)
    np.testing.assert_allclose(rp_frozen.predict_proba(X), conventional.predict_proba(X), rtol=1e-10)


def test_relinear_sw_decay_shrinks_quadratic_weights(iris):
    X, y = iris
    params = dict(hidden_layer_sizes=(), max_iter=50, random_state=0, quadratic_learning_rate_scale=1.0,
                  learning_rate_init=0.02)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        free = QNNClassifier(**params).fit(X, y)
        decayed = QNNClassifier(quadratic_l2=50.0, **params).fit(X, y)
        l1 = QNNClassifier(quadratic_l1=10.0, **params).fit(X, y)
    norm = lambda clf: np.abs(clf.layers_[0]["quadratic"]).sum()  # noqa: E731
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


def test_sigmoid_outputs_give_normalised_probabilities(iris):
    X, y = iris
    clf = RPQNNClassifier((5,), output_activation="sigmoid", max_iter=300, learning_rate_init=0.02,
                          random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X), rtol=1e-8, atol=1e-12)
    assert np.array_equal(proba.argmax(1), np.searchsorted(clf.classes_, clf.predict(X)))
    assert clf.score(X, y) > 0.9


def test_early_stopping_and_verbose(iris, capsys):
    X, y = iris
    clf = QNNClassifier((5,), early_stopping=True, validation_fraction=0.2, learning_rate_init=0.02,
                        n_iter_no_change=5, verbose=True, random_state=0, max_iter=500).fit(X, y)
    assert clf.n_iter_ < 500
    assert len(clf.validation_scores_) == clf.n_iter_
    assert clf.best_validation_score_ == max(clf.validation_scores_)
    lines = capsys.readouterr().out.strip().splitlines()
    epoch_lines = [line for line in lines if line.startswith("Iteration")]
    assert len(epoch_lines) == clf.n_iter_
    assert "validation score" in epoch_lines[0] and "elapsed" in epoch_lines[0]


def test_sample_and_class_weight_shift_the_decision(binary_data):
    X, y = binary_data
    params = dict(hidden_layer_sizes=(), solver="lbfgs", random_state=0)
    plain = QNNClassifier(**params).fit(X, y)
    heavy = QNNClassifier(class_weight={0: 20.0, 1: 1.0}, **params).fit(X, y)
    weighted = QNNClassifier(**params).fit(X, y, sample_weight=np.where(y == 0, 20.0, 1.0))
    assert np.mean(heavy.predict(X) == 0) > np.mean(plain.predict(X) == 0)
    np.testing.assert_allclose(heavy.predict_proba(X), weighted.predict_proba(X), rtol=1e-5, atol=1e-6)


def test_dtype_and_float64(iris):
    X, y = iris
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf32 = QNNClassifier((3,), max_iter=5, random_state=0).fit(X, y)
        clf64 = QNNClassifier((3,), max_iter=5, random_state=0, dtype="float64").fit(X, y)
    assert clf32.layers_[0]["weight"].dtype == np.float32
    assert clf64.layers_[0]["weight"].dtype == np.float64
    assert [c.shape for c in clf64.coefs_] == [(4, 3), (3, 3)]
    np.testing.assert_allclose(clf32.predict_proba(X), clf64.predict_proba(X), atol=1e-4)


def test_warm_start_continues(iris):
    X, y = iris
    clf = QNNClassifier((4,), max_iter=5, warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
        first_curve = list(clf.loss_curve_)
        clf.fit(X, y)
    assert clf.n_iter_ == 10 and clf.loss_curve_[:5] == first_curve
    with pytest.raises(ValueError, match="warm_start=True needs the same"):
        clf.fit(X[:, :3], y)


def test_bad_input_and_parameters(iris):
    X, y = iris
    with pytest.raises(ValueError, match="hidden_layer_sizes must contain positive integers"):
        QNNClassifier(hidden_layer_sizes=(3, 0)).fit(X, y)
    with pytest.raises(ValueError, match="one bool per layer"):
        QNNClassifier(hidden_layer_sizes=(3,), quadratic_layers=[True]).fit(X, y)
    with pytest.raises(InvalidParameterError, match="activation"):
        QNNClassifier(activation="softplus").fit(X, y)
    with pytest.raises(InvalidParameterError, match="quadratic_learning_rate_scale"):
        RPQNNClassifier(quadratic_learning_rate_scale=-1).fit(X, y)
    with pytest.raises(ValueError, match="classes must be passed"):
        QNNClassifier().partial_fit(X, y)
    with pytest.raises(ValueError, match="only available for the stochastic solvers"):
        QNNClassifier(solver="lbfgs").partial_fit(X, y, classes=[0, 1, 2])
    with pytest.raises(ValueError, match="at least 2 classes"):
        QNNClassifier().fit(X[:10], np.zeros(10))
    with pytest.raises(ValueError, match="NaN"):
        QNNClassifier().fit(np.full_like(X, np.nan), y)
    clf = QNNClassifier((3,), max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="not seen in the first call"):
        clf.partial_fit(X, y + 10)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            QNNClassifier(device="cuda").fit(X, y)
