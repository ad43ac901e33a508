"""Data shared by the inspection test modules (tests/test_inspection_*.py)."""

import numpy as np
from scipy.special import expit


# ------------------------------------------------------------------ planted interactions
def _planted(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10))
    logit = 2 * X[:, 3] * X[:, 7] - X[:, 1] ** 2 + 0.3 * X[:, 0] - 0.2 * X[:, 5] + 1.0
    y = (rng.random(n) < expit(logit)).astype(int)
    return X, y


# ------------------------------------------------------------------ geometry vs decision_function
def _ellipsoid_data(n=1500, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 3))
    center = np.array([0.5, -0.5, 0.2])
    inside = (((X - center) / np.array([2.0, 1.0, 1.5])) ** 2).sum(axis=1) < 1
    return X, inside.astype(int), center


def _xor_data(n=800, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    # off-center threshold: a hyperbola with two branches, not a cone
    return X, (X[:, 0] * X[:, 1] > 0.3).astype(int)
