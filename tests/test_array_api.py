"""scikit-learn's array API ("everything follows X", skquad/_array_api.py).

scikit-learn's own array-API checks (values included) on the six estimators
that declare ``array_api_support``, with NumPy, array-api-strict and torch
(CPU; CUDA where a GPU is present); predictions on tensors against the NumPy
path; the device rule; a search over a pipeline on tensors; the SDP and
Backprop estimators' inputs and outputs; the dispatch left off.
"""

import contextlib
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


def _data(dtype, classifier, n_samples=40, n_features=4):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_samples, n_features)).astype(dtype)
    y = X[:, 0] * X[:, 1] + X[:, 2]
    return X, ((y > 0).astype(np.int64) if classifier else y.astype(dtype))


PARITY = [*ESTIMATORS, SDPQuantizedRegressor(), BackpropQuantizedClassifier(max_iter=5, random_state=0)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("estimator", PARITY, ids=lambda e: type(e).__name__)
def test_tensor_predictions_equal_numpy(estimator, dtype):
    # The model fitted on tensors predicts on tensors what it predicts, moved to NumPy, on
    # NumPy (bit for bit, both dtypes; probabilities computed in torch to the last bits of
    # torch's exp); a fit on NumPy gives the same model (bit for bit where the fit takes
    # tensors; to the SDP solver's reproducibility from fit to fit elsewhere).
    classifier = hasattr(estimator, "predict_proba")
    X, y = _data(dtype, classifier)
    steps = getattr(estimator, "_computes_on_tensors", ())
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(torch.asarray(X), torch.asarray(y))
        on_numpy = move_estimator_to(fitted, np, "cpu")
        refitted = clone(estimator).fit(X, y)
        for method in ("predict", "predict_proba", "predict_log_proba", "decision_function"):
            if hasattr(fitted, method):
                result = getattr(fitted, method)(torch.asarray(X))
                assert isinstance(result, torch.Tensor)
                expected = getattr(on_numpy, method)(X)
                if steps and "proba" in method:
                    np.testing.assert_array_max_ulp(result.numpy(), expected, maxulp=4)
                else:
                    np.testing.assert_array_equal(result.numpy(), expected)
                if "fit" in steps:
                    np.testing.assert_array_equal(expected, getattr(refitted, method)(X))
                else:
                    np.testing.assert_allclose(expected, getattr(refitted, method)(X), rtol=1e-6)
        score = fitted.score(torch.asarray(X), torch.asarray(y))
        # (scikit-learn's metrics on tensors compute in torch's default float32)
        assert score == pytest.approx(on_numpy.score(X, y), rel=1e-6 if steps else 0)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_cpu_tensors_without_a_numpy_view_are_validated_in_torch(estimator):
    # A CPU tensor is validated as its NumPy view; one NumPy cannot view (bfloat16) and one
    # that the view's checks refuse (inf) are validated in torch: the predictions of the same
    # values in float64 through the view, and torch's error message.
    classifier = hasattr(estimator, "predict_proba")
    X, y = _data(np.float64, classifier)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(torch.asarray(X), torch.asarray(y))
        narrow = torch.asarray(X).to(torch.bfloat16)
        torch.testing.assert_close(fitted.predict(narrow), fitted.predict(narrow.to(torch.float64)),
                                   rtol=0, atol=0)
        # a tensor that requires grad (no NumPy view) predicts as its values do, without one
        tracked = torch.asarray(X).requires_grad_()
        predicted = fitted.predict(tracked)
        assert not predicted.requires_grad
        torch.testing.assert_close(predicted, fitted.predict(torch.asarray(X)), rtol=0, atol=0)
        X[0, 0] = np.inf
        with pytest.raises(ValueError, match=r"infinity .* torch\.float64"):
            fitted.predict(torch.asarray(X))


def test_dispatch_off_takes_tensors_as_numpy():
    X, y = _data(np.float64, True)
    fitted = QuadraticLogisticRegression().fit(torch.asarray(X), torch.asarray(y))
    assert isinstance(fitted.coef_, np.ndarray)
    np.testing.assert_array_equal(
        fitted.predict_proba(torch.asarray(X)), QuadraticLogisticRegression().fit(X, y).predict_proba(X)
    )


def test_moved_to_numpy_pickles_and_predicts():
    import pickle

    X, y = _data(np.float64, False)
    with sklearn.config_context(array_api_dispatch=True):
        fitted = QNNRegressor(**NETWORK).fit(torch.asarray(X), torch.asarray(y))
        expected = fitted.predict(torch.asarray(X)).numpy()
        moved = pickle.loads(pickle.dumps(move_estimator_to(fitted, np, "cpu")))
        assert isinstance(moved.data_min_, np.ndarray)
        np.testing.assert_array_equal(moved.predict(X), expected)


def test_device_other_than_the_tensors_is_refused(monkeypatch):
    X, y = _data(np.float64, True)
    with sklearn.config_context(array_api_dispatch=True):
        QNNClassifier(**NETWORK, device="CPU").fit(torch.asarray(X), torch.asarray(y))
        # As on a GPU machine: device="cuda" names a device, not the tensors'.
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
        model = QNNClassifier(**NETWORK, device="cuda")
        with pytest.raises(ValueError, match="device='cuda', but X is on cpu"):
            model.fit(torch.asarray(X), torch.asarray(y))
    assert not hasattr(model, "data_min_")


@CUDA
def test_cuda_tensor_trains_and_predicts_on_its_device():
    X, y = _data(np.float32, True)
    X_cuda, y_cuda = torch.asarray(X, device="cuda"), torch.asarray(y, device="cuda")
    with sklearn.config_context(array_api_dispatch=True):
        fitted = QNNClassifier(**NETWORK).fit(X_cuda, y_cuda)
        assert fitted.device_.startswith("cuda")
        assert fitted.predict_proba(X_cuda).device == X_cuda.device
        with pytest.raises(ValueError, match="device='cpu', but X is on cuda"):
            QNNClassifier(**NETWORK, device="cpu").fit(X_cuda, y_cuda)


def test_grid_search_over_a_pipeline_on_tensors():
    X, y = _data(np.float32, True, n_samples=60)
    search = GridSearchCV(
        make_pipeline(StandardScaler(), QuadraticLogisticRegression()),
        {"quadraticlogisticregression__C": [0.1, 1.0]}, cv=3,
    )
    with sklearn.config_context(array_api_dispatch=True):
        search.fit(torch.asarray(X), torch.asarray(y))
        proba = search.predict_proba(torch.asarray(X))
    assert isinstance(proba, torch.Tensor) and proba.dtype == torch.float32
    assert isinstance(search.best_estimator_[-1].coef_, torch.Tensor)
    reference = clone(search).fit(X, y)
    assert search.best_params_ == reference.best_params_
    np.testing.assert_array_max_ulp(proba.numpy(), reference.predict_proba(X), maxulp=4)


@pytest.mark.parametrize("estimator", PARITY[-2:], ids=lambda e: type(e).__name__)
def test_convex_and_backprop_estimators_return_the_input_namespace(estimator):
    import array_api_strict as xp

    classifier = hasattr(estimator, "predict_proba")
    X, y = _data(np.float64, classifier)
    assert not get_tags(estimator).array_api_support  # their solves compute with NumPy
    with sklearn.config_context(array_api_dispatch=True):
        fitted = clone(estimator).fit(xp.asarray(X), xp.asarray(y))
        prediction = fitted.predict(xp.asarray(X))
    assert isinstance(prediction, type(xp.asarray(X)))
    # (to the SDP solver's reproducibility from fit to fit)
    np.testing.assert_allclose(np.asarray(prediction), clone(estimator).fit(X, y).predict(X), rtol=1e-6)


def test_partial_fit_continues_on_tensors():
    X, y = _data(np.float64, True)
    network = {"hidden_layer_sizes": (4,), "random_state": 0}
    reference = QNNClassifier(**network)
    for _ in range(2):
        reference.partial_fit(X, y, classes=np.array([0, 1]))
    model = QNNClassifier(**network)
    with sklearn.config_context(array_api_dispatch=True):
        for _ in range(2):
            model.partial_fit(torch.asarray(X), torch.asarray(y), classes=torch.asarray([0, 1]))
            assert isinstance(model.data_min_, torch.Tensor)
        proba = model.predict_proba(torch.asarray(X))
    np.testing.assert_array_max_ulp(proba.numpy(), reference.predict_proba(X), maxulp=4)
    np.testing.assert_array_equal(move_estimator_to(model, np, "cpu").decision_function(X), reference.decision_function(X))
    assert model.t_ == reference.t_


def test_numpy_X_takes_y_and_weights_of_another_namespace():
    # Everything follows X: a NumPy X makes a NumPy model whatever y's namespace.
    X, y = _data(np.float64, True)
    with sklearn.config_context(array_api_dispatch=True):
        model = QuadraticLogisticRegression().fit(X, torch.asarray(y), sample_weight=torch.ones(len(y)))
    assert isinstance(model.coef_, np.ndarray)
    np.testing.assert_array_equal(model.coef_, QuadraticLogisticRegression().fit(X, y).coef_)


@contextlib.contextmanager
def _refusing_conversion(*tensors):
    # A NumPy or DLPack view of these tensors' memory, or a copy to the host (.cpu()), raises:
    # what goes to NumPy is a copy of something else (a parameter, a reduction), never the data.
    storages = {tensor.untyped_storage().data_ptr() for tensor in tensors}
    originals = {name: getattr(torch.Tensor, name) for name in ("__array__", "numpy", "__dlpack__", "cpu")}

    def refusing(name):
        def method(self, *args, **kwargs):
            if self.untyped_storage().data_ptr() in storages:
                raise AssertionError(f"the input tensor went to NumPy or the host ({name})")
            return originals[name](self, *args, **kwargs)

        return method

    for name in originals:
        setattr(torch.Tensor, name, refusing(name))
    try:
        yield
    finally:
        for name, method in originals.items():
            setattr(torch.Tensor, name, method)


ON_TENSORS = [estimator for estimator in ESTIMATORS if estimator._computes_on_tensors]


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=CUDA)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("estimator", ON_TENSORS, ids=lambda e: type(e).__name__)
def test_torch_estimators_never_convert_the_tensor(estimator, dtype, device, monkeypatch):
    # fit (QLR, QR, the networks), every prediction method and score read X as a tensor only.
    # The validation, the networks' fused step and QR's normal equations and scores compute on
    # NumPy views of CPU tensors (zero-copy, the NumPy path's kernels); here they take their
    # torch routes, a GPU's.
    from skquad import _base
    from skquad.linear_model import _regression
    from skquad.nn import quadratic_ridge
    from skquad.nn.fused import FusedNetwork

    monkeypatch.setattr(_base, "host_view", lambda X: None)
    monkeypatch.setattr(FusedNetwork, "_runs_in_numpy", lambda self, X: False)
    for module in (quadratic_ridge, _regression):
        monkeypatch.setattr(module, "computes_in_torch", lambda X: hasattr(X, "aminmax"))
    classifier = hasattr(estimator, "predict_proba")
    X, y = (torch.asarray(array, device=device) for array in _data(dtype, classifier))
    assert len(ON_TENSORS) == 7
    if isinstance(estimator, QuadraticRegression):  # alpha="auto"'s leave-one-out goes to the host
        estimator = clone(estimator).set_params(alpha=1.0)
    fitting = _refusing_conversion(X) if "fit" in estimator._computes_on_tensors else contextlib.nullcontext()
    with sklearn.config_context(array_api_dispatch=True):
        with fitting:
            fitted = clone(estimator).fit(X, y)
        with _refusing_conversion(X):
            for method in ("predict", "predict_proba", "predict_log_proba", "decision_function"):
                if hasattr(fitted, method):
                    assert getattr(fitted, method)(X).device == X.device
            fitted.score(X, y)
    with pytest.raises(AssertionError, match="went to NumPy"), _refusing_conversion(X):
        np.asarray(X.cpu())
