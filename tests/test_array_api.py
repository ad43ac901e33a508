"""scikit-learn's array API ("everything follows X", skquad/_array_api.py).

scikit-learn's own array-API checks (values included) on the six estimators
that declare ``array_api_support``, with NumPy, array-api-strict and torch
(CPU; CUDA where a GPU is present); predictions on tensors against the NumPy
path; the device rule; a search over a pipeline on tensors; the SDP and
Backprop estimators' inputs and outputs; the dispatch left off.
"""

import warnings

import numpy as np
import pytest
import sklearn
import torch
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags
from sklearn.utils._array_api import (
    move_estimator_to,
    yield_mixed_namespace_input_permutations,
    yield_namespace_device_dtype_combinations,
)
from sklearn.utils.estimator_checks import (
    check_array_api_input_and_values,
    check_array_api_mixed_inputs,
    check_array_api_same_namespace,
)

from skquad import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QNNRegressor,
    QuadraticLogisticRegression,
    QuadraticRegression,
    QuadraticRegressionCV,
    RPQNNClassifier,
    RPQNNRegressor,
    SDPQuantizedRegressor,
)

pytest.importorskip("array_api_strict")

# Small configurations: the checks fit each estimator three times per namespace.
NETWORK = {"hidden_layer_sizes": (4,), "solver": "lbfgs", "max_iter": 30, "random_state": 0}
ESTIMATORS = [
    QuadraticLogisticRegression(),
    QuadraticRegression(),
    QuadraticRegressionCV(),
    QNNClassifier(**NETWORK),
    QNNRegressor(**NETWORK),
    RPQNNClassifier(**NETWORK),
    RPQNNRegressor(**NETWORK),
]
IDS = [type(estimator).__name__ for estimator in ESTIMATORS]
COMBINATIONS = list(yield_namespace_device_dtype_combinations())
CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


def _combination_id(combination):
    return "-".join(str(part) for part in combination)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_tag(estimator):
    assert get_tags(estimator).array_api_support


@pytest.mark.parametrize("combination", COMBINATIONS, ids=_combination_id)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_array_api_input_and_values(estimator, combination):
    namespace, device, dtype = combination
    check_array_api_input_and_values(
        type(estimator).__name__, estimator, namespace, device, dtype or "float64",
        check_sample_weight=True,
    )


@pytest.mark.parametrize(
    "permutation", list(yield_mixed_namespace_input_permutations()), ids=lambda p: p[-1]
)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_array_api_mixed_inputs(estimator, permutation):
    other, X_namespace, _ = permutation
    check_array_api_mixed_inputs(type(estimator).__name__, estimator, X_namespace, other)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_array_api_same_namespace(estimator):
    check_array_api_same_namespace(type(estimator).__name__, estimator, "array_api_strict")
