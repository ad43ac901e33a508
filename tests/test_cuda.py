"""The CUDA path: every estimator with a ``device`` parameter, fitted on a GPU.

These tests run only where torch sees a CUDA device (CI has none; they are
run on a GPU machine before a release). Each GPU fit is compared with the
same fit on the CPU. The initial parameters and the shuffles come from CPU
generators (``skquad._foundation._runtime.spawn_generators``), so in float64 a
GPU fit computes the CPU's arithmetic in another order: a few epochs of Adam
or an L-BFGS run to a tight ``tol`` agree to far below the tolerances used
here (1e-6 relative; TF32 is off by torch's default for float32 products, so
float32 fits agree to float32 rounding, 1e-3 after training). The SDP is
compared through its certificate: each device's lower bound is a proof, so
it must lie below the other device's feasible objective, and both must
bracket CLARABEL's optimum.
"""

import pickle
import warnings

import numpy as np
import pytest
import torch
from scipy import sparse
from sklearn.base import is_classifier
from sklearn.datasets import make_classification, make_regression
from sklearn.exceptions import ConvergenceWarning

import skquad
from skquad.convex import InputLifting, solve_relaxation, solve_sdp
from skquad.convex.routes import cpu_only_names
from skquad.export import to_torch

from _estimator_configs import SMALL_CONFIGS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

X_CLF, Y_CLF = make_classification(n_samples=120, n_features=5, n_informative=4, n_redundant=0,
                                   n_classes=3, random_state=0)
X_REG, Y_REG = make_regression(n_samples=120, n_features=5, noise=1.0, random_state=0)
Y_REG = Y_REG / Y_REG.std()

# The estimators with a device parameter (every one must be listed: the first test), in the
# shared small configurations; QLR's L-BFGS to a tight tol rather than the shared sgd.
NETWORKS = {name: SMALL_CONFIGS[name] for name in (
    "BackpropQuantizedClassifier", "BackpropQuantizedRegressor", "QNNClassifier", "QNNRegressor",
    "RPQNNClassifier", "RPQNNRegressor",
)}
NETWORKS["QuadraticLogisticRegression"] = dict(tol=1e-10, max_iter=500)
SDP = {name: SMALL_CONFIGS[name] for name in (
    "SDPQuantizedClassifier", "SDPQuantizedRegressor", "SDPQuantizedClassifierCV", "SDPQuantizedRegressorCV",
)}
PARTIAL_FIT = ["QNNClassifier", "QNNRegressor", "RPQNNClassifier", "RPQNNRegressor"]


def test_every_estimator_with_a_device_is_covered():
    with_device = {name for name in skquad.__all__ if "device" in getattr(skquad, name)().get_params()}
    assert with_device == set(NETWORKS) | set(SDP)


def _make(name, device, **changes):
    configs = NETWORKS if name in NETWORKS else SDP
    return getattr(skquad, name)(**{**configs[name], **changes, "device": device})


def _data(estimator, dtype=np.float64):
    X, y = (X_CLF, Y_CLF) if is_classifier(estimator) else (X_REG, Y_REG)
    return X.astype(dtype), y


def _fit(estimator, X, y, method="fit"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return getattr(estimator, method)(X, y)


def _outputs(estimator, X):
    if hasattr(estimator, "predict_proba"):
        return estimator.predict_proba(X)
    return estimator.predict(X)


def _assert_state_is_numpy(estimator):
    # The fitted state is numpy: no CUDA tensor or module outlives the fit
    # (pickles then load on machines without CUDA, see test_persistence.py).
    for key, value in vars(estimator).items():
        assert not isinstance(value, (torch.Tensor, torch.nn.Module)), key
        for item in value if isinstance(value, (list, tuple)) else ():
            assert not isinstance(item, (torch.Tensor, torch.nn.Module)), key


def _fitted_on_both(name):
    """The estimator ``name`` fitted on the GPU and on the CPU, and the data."""
    gpu = _make(name, "cuda")
    X, y = _data(gpu)
    _fit(gpu, X, y)
    return gpu, _fit(_make(name, "cpu"), X, y), X, y


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_a_float64_fit_on_cuda_is_the_cpu_fit(name):
    gpu, cpu, X, y = _fitted_on_both(name)
    assert str(gpu.device_).startswith("cuda")
    _assert_state_is_numpy(gpu)
    # The networks: the CPU's arithmetic in another order. QLR: two L-BFGS
    # runs, each stopped at its tol=1e-10, close to the same optimum.
    rtol, atol = (1e-5, 1e-6) if name == "QuadraticLogisticRegression" else (1e-6, 1e-8)
    np.testing.assert_allclose(_outputs(gpu, X), _outputs(cpu, X), rtol=rtol, atol=atol)
    restored = pickle.loads(pickle.dumps(gpu))
    np.testing.assert_array_equal(restored.predict(X), gpu.predict(X))


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_float32_input_trains_in_float32_on_cuda(name):
    gpu = _make(name, "cuda")
    X, y = _data(gpu, np.float32)
    _fit(gpu, X, y)
    cpu = _fit(_make(name, "cpu"), X, y)
    outputs = _outputs(gpu, X)
    assert outputs.dtype == np.float32
    np.testing.assert_allclose(outputs, _outputs(cpu, X), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", PARTIAL_FIT)
def test_partial_fit_and_warm_start_continue_on_cuda(name):
    results = {}
    for device in ("cuda", "cpu"):
        estimator = _make(name, device)
        X, y = _data(estimator)
        classes = {"classes": np.unique(y)} if is_classifier(estimator) else {}
        estimator.partial_fit(X, y, **classes)
        estimator.partial_fit(X, y)
        warm = _fit(_make(name, device, warm_start=True), X, y)
        _fit(warm.set_params(max_iter=3), X, y)
        results[device] = (_outputs(estimator, X), _outputs(warm, X), warm.n_iter_)
    for on_gpu, on_cpu in zip(results["cuda"], results["cpu"]):
        np.testing.assert_allclose(on_gpu, on_cpu, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ["QNNClassifier", "RPQNNRegressor", "QuadraticLogisticRegression"])
def test_sparse_input_on_cuda_gives_the_dense_model(name):
    dense = _make(name, "cuda")
    X, y = _data(dense)
    X = np.where(np.abs(X) < 0.5, 0.0, X)
    _fit(dense, X, y)
    from_sparse = _fit(_make(name, "cuda"), sparse.csr_matrix(X), y)
    # The networks compute the same products; QLR's two L-BFGS runs each stop
    # at its tol=1e-10, close to the same optimum.
    np.testing.assert_allclose(_outputs(from_sparse, sparse.csr_matrix(X)), _outputs(dense, X),
                               rtol=1e-5, atol=1e-6)


def test_large_predictions_on_cuda_come_in_batches_equal_to_the_cpu_model():
    X, y = X_CLF, Y_CLF
    gpu = _fit(_make("QNNClassifier", "cuda", hidden_layer_sizes=(32,)), X, y)
    cpu = _fit(_make("QNNClassifier", "cpu", hidden_layer_sizes=(32,)), X, y)
    big = np.random.default_rng(0).standard_normal((200_000, X.shape[1]))
    np.testing.assert_allclose(gpu.predict_proba(big), cpu.predict_proba(big), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_to_torch_of_a_cuda_fit_computes_its_outputs(name):
    gpu = _make(name, "cuda")
    X, y = _data(gpu)
    _fit(gpu, X, y)
    module = to_torch(gpu)
    scores = module(torch.as_tensor(X)).detach().cpu().numpy()
    expected = gpu.decision_function(X) if is_classifier(gpu) else gpu.predict(X)
    np.testing.assert_allclose(scores, expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name", sorted(SDP))
def test_an_sdp_fit_on_cuda_certifies_the_cpu_optimum(name):
    gpu, cpu, X, y = _fitted_on_both(name)
    # These small problems go to the interior-point methods, on the CPU
    # whatever the device; the factor solver's runs are below.
    assert gpu.solver_ in cpu_only_names() and gpu.device_ == "cpu"
    _assert_state_is_numpy(gpu)
    if name.endswith("CV"):
        assert gpu.beta_ in gpu.betas_
    else:
        # Weak duality on each device, whatever its rounding: a lower bound lies
        # below every feasible objective, the other device's included.
        assert gpu.lower_bound_ <= cpu.relaxed_objective_ * (1 + 1e-9)
        assert cpu.lower_bound_ <= gpu.relaxed_objective_ * (1 + 1e-9)
        assert gpu.certified_gap_ <= gpu.tol
    assert np.all(np.isfinite(_outputs(gpu, X)))
    if is_classifier(gpu):
        assert abs(gpu.score(X, y) - cpu.score(X, y)) <= 0.1
    else:
        assert gpu.score(X, y) >= cpu.score(X, y) - 0.1


@pytest.mark.parametrize("loss, n_outputs, options", [
    ("squared", 1, None), ("squared", 3, None), ("squared", 3, {"rank": 4}), ("logistic", 1, None),
    ("logistic", 3, None), ("logistic", 3, {"rank": 4}), ("hinge", 1, None),
])
def test_the_native_solver_on_cuda_brackets_clarabel(loss, n_outputs, options):
    # solver_options ask for the factor solver, on the GPU; without them the
    # small problems go to the interior-point methods on the CPU.
    rng = np.random.RandomState(3)
    X = rng.standard_normal((60, 4))
    if n_outputs == 1:
        y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(60) > 0, 1.0, -1.0)
    else:
        y = rng.randint(0, n_outputs, size=60)
    weight = np.ones(60)
    lifting = InputLifting()
    reference = solve_sdp(lifting.matrices(X), y, weight, loss=loss, beta=1e-2, n_outputs=n_outputs,
                          solver="CLARABEL")
    solution = solve_relaxation(lifting, X, y, weight, loss=loss, beta=1e-2, n_outputs=n_outputs,
                                device="cuda", solver_options=options)
    if solution.solver in cpu_only_names():
        assert solution.info["device"] == "cpu"
    else:
        assert solution.solver == "native" and solution.info["device"].startswith("cuda")
    # lower bound <= optimum <= objective at the returned point (CLARABEL: about 1e-6 relative)
    assert solution.lower_bound <= reference.value * (1 + 1e-6)
    assert solution.value >= reference.value * (1 - 1e-6)
    assert solution.converged and solution.relative_gap <= 1e-4
