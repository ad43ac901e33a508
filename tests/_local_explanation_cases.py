"""Models whose score is a quadratic form of the input, for the local-explanation tests
(tests/test_inspection_quadratic_form.py, _contributions.py, _shap.py, _local_display.py)."""

import copy
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skquad import (
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    QNNClassifier,
    QNNRegressor,
    QuadraticLogisticRegression,
    QuadraticRegression,
    QuadraticRegressionCV,
    RPQNNClassifier,
    RPQNNRegressor,
    SDPQuantizedClassifier,
    SDPQuantizedClassifierCV,
    SDPQuantizedRegressor,
    SDPQuantizedRegressorCV,
)

# Agreement of the explanations with the estimator's own score (float64).
EXACT = 1e-10


def quadratic_data(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    target = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] ** 2 + X[:, -1]
    return X, target


def binary(target):
    return (target > np.median(target)).astype(int)


def three_classes(target):
    return np.digitize(target, np.quantile(target, [1 / 3, 2 / 3]))


def poisson(target):
    return np.exp(0.3 * target)


# (estimator, target) for every model whose score is a quadratic form of its input
QUADRATIC_MODELS = {
    "QLR binary": (lambda: QuadraticLogisticRegression(), binary),
    "QLR 3 classes": (lambda: QuadraticLogisticRegression(), three_classes),
    "QR": (lambda: QuadraticRegression(), lambda t: t),
    "QR 2 outputs": (lambda: QuadraticRegression(), lambda t: np.column_stack([t, -2 * t + 1])),
    "QRCV": (lambda: QuadraticRegressionCV(), lambda t: t),
    "QNN classifier": (lambda: QNNClassifier(hidden_layer_sizes=(), max_iter=20, random_state=0), three_classes),
    "QNN regressor": (lambda: QNNRegressor(hidden_layer_sizes=(), max_iter=20, random_state=0), lambda t: t),
    "QNN Poisson": (
        lambda: QNNRegressor(hidden_layer_sizes=(), loss="poisson", max_iter=20, random_state=0), poisson
    ),
    "QNN linear layer": (
        lambda: QNNRegressor(hidden_layer_sizes=(), quadratic_layers=[False], max_iter=20, random_state=0),
        lambda t: t,
    ),
    "RPQNN classifier": (lambda: RPQNNClassifier(hidden_layer_sizes=(), max_iter=20, random_state=0), binary),
    "RPQNN regressor power": (
        lambda: RPQNNRegressor(hidden_layer_sizes=(), power_term=True, max_iter=20, random_state=0),
        lambda t: t,
    ),
    "SDP classifier": (lambda: SDPQuantizedClassifier(n_neurons=8, random_state=0), binary),
    "SDP polynomial 3 classes": (
        lambda: SDPQuantizedClassifier(n_neurons=9, activation=(1.0, 0.5, 0.2), random_state=0),
        three_classes,
    ),
    "SDP regressor": (lambda: SDPQuantizedRegressor(n_neurons=8, random_state=0), lambda t: t),
    "SDP classifier CV": (lambda: SDPQuantizedClassifierCV(n_neurons=8, cv=2, random_state=0), binary),
    "SDP regressor CV": (lambda: SDPQuantizedRegressorCV(n_neurons=8, cv=2, random_state=0), lambda t: t),
    "Backprop classifier": (lambda: BackpropQuantizedClassifier(n_neurons=8, max_iter=5, random_state=0), binary),
    "Backprop regressor": (lambda: BackpropQuantizedRegressor(n_neurons=8, max_iter=5, random_state=0), lambda t: t),
}


def fit_quadratic_model(name, X, target):
    make, to_target = QUADRATIC_MODELS[name]
    with warnings.catch_warnings():
        # small, unconverged fits are enough: the explanations are of the fitted form
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        return make().fit(X, to_target(target))


def model_score(model, X):
    """The score the explanations add up to: decision function, prediction, or its log (Poisson).

    A regressor's prediction before ``clip_outputs``: the explanations decompose the
    quadratic model, which the clipping of its output is not.
    """
    if hasattr(model, "classes_"):
        return model.decision_function(X)
    if getattr(model, "clip_outputs", False):
        model = copy.copy(model).set_params(clip_outputs=False)
    prediction = model.predict(X)
    return np.log(prediction) if getattr(model, "out_activation_", None) == "exp" else prediction
