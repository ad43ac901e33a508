"""The fitted Pipelines shared by the export test modules (tests/test_export_*.py)."""

import numpy as np

# skquad's light import: the estimators load when a fixture first builds one
# (tests/conftest.py reads ESTIMATORS' names at collection).
import skquad

ESTIMATORS = {
    "qlr": lambda: skquad.QuadraticLogisticRegression(C=10.0),
    "qlr-rank": lambda: skquad.QuadraticLogisticRegression(rank=2, Q_init="random", random_state=0),
    "qnn": lambda: skquad.QNNClassifier((4,), quadratic_layers="all", solver="lbfgs", max_iter=300, random_state=0),
    "rpqnn": lambda: skquad.RPQNNClassifier(
        (4,), activation="tanh", quadratic_layers="all", power_term=True, output_activation="sigmoid",
        relinear=False, solver="lbfgs", max_iter=300, random_state=0,
    ),
    "sdp": lambda: skquad.SDPQuantizedClassifier(n_neurons=40, random_state=0),
    "sdp-poly": lambda: skquad.SDPQuantizedClassifier(
        n_neurons=40, weight_levels=2, activation=(1.0, 0.5, 0.25), random_state=0
    ),
    "backprop": lambda: skquad.BackpropQuantizedClassifier(n_neurons=40, max_iter=20, random_state=0),
    "sdp-cv": lambda: skquad.SDPQuantizedClassifierCV(n_neurons=30, betas=[1e-1, 1e-2], cv=2, random_state=0),
}


def with_rows_outside(X):
    """``X`` and 10 rows 4 times as far from its mean: outside its range, where ``clip_inputs`` clips."""
    center = X.mean(axis=0)
    outside = center + 4.0 * (X[:10] - center)
    assert np.any(outside < X.min(axis=0)) and np.any(outside > X.max(axis=0))
    return np.vstack([X, outside])


def _data(problem):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 4)) * [1.0, 10.0, 0.1, 3.0] + [0.0, 50.0, 1.0, -2.0]
    Z = (X - X.mean(0)) / X.std(0)
    if problem == "binary":
        y = np.where(Z[:, 0] * Z[:, 1] + 0.3 * Z[:, 2] > 0, "yes", "no")  # string labels
    else:
        y = np.digitize(Z[:, 0] * Z[:, 1] + Z[:, 3], [-0.5, 0.5])  # 0, 1, 2
    return X, y
