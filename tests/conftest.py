"""Test configuration and data fixtures shared by the test modules."""

import os
from pathlib import Path

import pytest

# scikit-learn's estimator checks include an array-API input check that only
# runs when SciPy's array-API mode is on; it must be set before SciPy is imported.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

# Plots in tests and examples are written to files, never shown.
os.environ.setdefault("MPLBACKEND", "Agg")

# The project's tests read the UCI datasets from the shared folder beside the
# checkout (see ../shared/datasets/README.md); users point SKQUAD_DATA elsewhere.
_SHARED_UCI = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "uci"
if "SKQUAD_DATA" not in os.environ and _SHARED_UCI.is_dir():
    os.environ["SKQUAD_DATA"] = str(_SHARED_UCI)


# Data shared by the network test modules (test_neural_network_*.py); a module
# that needs other data defines its own fixture of the same name.
@pytest.fixture(scope="module")
def iris():
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.fixture(scope="module")
def binary_data():
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, random_state=0)
    return X, y

