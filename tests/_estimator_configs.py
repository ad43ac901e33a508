"""Small but real configurations of every public estimator, shared by the test modules
that run each estimator once (tests/test_persistence.py, tests/test_cuda.py)."""

SMALL_CONFIGS = {
    "BackpropQuantizedClassifier": dict(n_neurons=20, max_iter=5, random_state=0),
    "BackpropQuantizedRegressor": dict(n_neurons=20, max_iter=5, random_state=0),
    "QNNClassifier": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "QNNRegressor": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "QuadraticLogisticRegression": dict(solver="sgd", max_iter=5, random_state=0),
    "QuadraticLogisticRegressionCV": dict(Cs=[0.1, 1.0], cv=2, max_iter=50),
    "QuadraticRegression": dict(),
    "QuadraticRegressionCV": dict(),
    "RPQNNClassifier": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "RPQNNRegressor": dict(hidden_layer_sizes=(5,), max_iter=5, random_state=0),
    "SDPQuantizedClassifier": dict(n_neurons=20, random_state=0),
    "SDPQuantizedClassifierCV": dict(n_neurons=20, betas=[1e-1, 1e-2], cv=2, random_state=0),
    "SDPQuantizedRegressor": dict(n_neurons=20, random_state=0),
    "SDPQuantizedRegressorCV": dict(n_neurons=20, betas=[1e-1, 1e-2], cv=2, random_state=0),
}
