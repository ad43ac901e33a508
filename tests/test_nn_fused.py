"""Tests of skquad.nn.fused: the whole network's explicit backward pass against autograd."""

import numpy as np
import pytest
import torch

from skquad import QNNClassifier, RPQNNClassifier
from skquad._foundation._torch_utils import make_generator
from skquad._foundation._threads import limit_threads
from skquad.nn import QuadraticLayer
from skquad.nn.fused import FusedNetwork, supports_fused
from skquad.nn.losses import per_sample_loss
from skquad.nn.network import new_network


# The torch step, and the numpy step with numpy's or torch's matrix products
# (skquad._foundation._runtime.cpu_matmul_library picks one per CPU vendor).
BACKENDS = ["torch", "numpy", "numpy-torch-matmul"]


def _fused(module, output, backend):
    if backend == "numpy-torch-matmul":
        return FusedNetwork(module, output, backend="numpy", matmul="torch")
    return FusedNetwork(module, output, backend=backend)


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
def test_fused_backward_matches_autograd(estimator, n_classes, thread_counts):
    # The whole network's explicit backward (Algorithms 1 and 2 chained through
    # the activations and the loss), in each spelling, against autograd on the
    # same module.
    rng = np.random.RandomState(0)
    X = torch.as_tensor(rng.randn(17, 5))
    y = torch.as_tensor(rng.randint(0, n_classes, size=17))
    y[:n_classes] = torch.arange(n_classes)
    weights = torch.as_tensor(rng.rand(17))
    weights /= weights.sum()
    module, output = _network_and_loss(estimator, X, y.numpy())
    # random (not ReLinear) quadratic parts must be symmetric, as the layers keep them
    fused = {}
    for backend in BACKENDS:
        with torch.no_grad():  # as the engine calls it
            loss = _fused(module, output, backend)(X, y, weights)
        fused[backend] = loss, [p.grad.clone() for p in module.parameters()]
    for parameter in module.parameters():
        parameter.grad = None
    loss_function = per_sample_loss(output)
    autograd_loss = torch.dot(loss_function(module(X), y), weights)
    autograd_loss.backward()
    for backend, (fused_loss, gradients) in fused.items():
        torch.testing.assert_close(fused_loss, autograd_loss.detach(), rtol=1e-12, atol=1e-12, msg=backend)
        for (name, parameter), gradient in zip(module.named_parameters(), gradients):
            torch.testing.assert_close(gradient, parameter.grad, rtol=1e-10, atol=1e-12, msg=f"{backend} {name}")


@pytest.mark.parametrize("kind", ["QuadraticLayer", "ReducedQuadraticLayer"])
@pytest.mark.parametrize("output", ["squared_error", "poisson", "multilabel"])
def test_fused_regression_and_multilabel_losses_match_autograd(kind, output, thread_counts):
    # The regressors' outputs (half squared error, half Poisson deviance with
    # exp) and a multilabel indicator target against autograd of
    # skquad.nn.losses; float64 throughout, so agreement to ~1e-12 relative
    # (a few dozen roundings of O(1) numbers).
    rng = np.random.RandomState(1)
    X = torch.as_tensor(rng.randn(13, 4))
    if output == "multilabel":
        y = torch.as_tensor(rng.randint(0, 2, size=(13, 3))).to(torch.float64)
    elif output == "poisson":
        y = torch.as_tensor(rng.poisson(2.0, size=(13, 3))).to(torch.float64)
    else:
        y = torch.as_tensor(rng.randn(13, 3))
    weights = torch.as_tensor(rng.rand(13))
    weights /= weights.sum()
    options = {"quadratic_storage": "full"} if kind == "QuadraticLayer" else {}
    module = new_network([4, 5, 3], [True, True], "tanh", quadratic_kind=kind, generator=make_generator(0),
                         quadratic_options=options,
                         relinear=False)
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    kind_name = "sigmoid" if output == "multilabel" else output
    fused = {}
    for backend in BACKENDS:
        with torch.no_grad():
            loss = _fused(module, kind_name, backend)(X, y, weights)
        fused[backend] = loss, [p.grad.clone() for p in module.parameters()]
    for parameter in module.parameters():
        parameter.grad = None
    autograd_loss = torch.dot(per_sample_loss(kind_name)(module(X), y), weights)
    autograd_loss.backward()
    for backend, (fused_loss, gradients) in fused.items():
        torch.testing.assert_close(fused_loss, autograd_loss.detach(), rtol=1e-12, atol=1e-12, msg=backend)
        for (name, parameter), gradient in zip(module.named_parameters(), gradients):
            torch.testing.assert_close(gradient, parameter.grad, rtol=1e-10, atol=1e-12, msg=f"{backend} {name}")


def test_supports_fused_only_full_storage_and_known_modules():
    generator = make_generator(0)
    full = new_network([3, 4, 2], [True, True], "relu", quadratic_kind="QuadraticLayer",
                       quadratic_options={"quadratic_storage": "full"}, generator=generator)
    packed = new_network([3, 4, 2], [True, True], "relu", quadratic_kind="QuadraticLayer",
                         quadratic_options={"quadratic_storage": "packed"}, generator=generator)
    assert supports_fused(full)
    assert not supports_fused(packed)
    assert not supports_fused(torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.GELU()))
    with pytest.raises(ValueError, match="FusedNetwork supports"):
        FusedNetwork(packed, "softmax")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("output", ["softmax", "sigmoid", "squared_error"])
def test_fused_loss_is_nan_when_a_score_overflows(backend, output):
    # The engine's divergence guard relies on it: a -inf score leaves the
    # log-loss of the true class finite, but the fused loss must not be.
    layer = QuadraticLayer(2, 3, quadratic_storage="full", dtype=torch.float64)
    module = torch.nn.Sequential(layer)
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    with torch.no_grad():
        layer.bias.copy_(torch.tensor([0.0, -float("inf"), 0.0]))
        y = torch.zeros((4, 3), dtype=torch.float64) if output == "squared_error" else torch.zeros(4, dtype=torch.int64)
        loss = _fused(module, output, backend)(
            torch.ones(4, 2, dtype=torch.float64), y,
            torch.full((4,), 0.25, dtype=torch.float64),
        )
    assert not torch.isfinite(loss)


@pytest.mark.parametrize("backend", BACKENDS)
def test_step_buffers_stay_bounded_over_many_batch_sizes(backend):
    # partial_fit calls of ever new sizes: the reused buffers are kept for at
    # most two batch sizes (a fit's full and last batch), and the gradients
    # stay right after the buffers are dropped.
    estimator = QNNClassifier((4,), relinear=False)
    rng = np.random.RandomState(4)
    X = torch.as_tensor(rng.randn(30, 3))
    y = torch.as_tensor(rng.randint(0, 3, size=30))
    module, output = _network_and_loss(estimator, X, y.numpy())
    fused = _fused(module, output, backend)
    sizes = set()
    with torch.no_grad(), limit_threads(1):  # tiny steps: one thread (2 spin on a busy machine)
        for batch in range(5, 13):
            fused(X[:batch], y[:batch], torch.full((batch,), 1.0 / batch, dtype=torch.float64))
            workspace = fused._workspace if backend == "torch" else fused._numpy_step._workspace
            sizes = {key[2][0] for key in workspace if key[0] in ("z", "v")}
            assert len(sizes) <= 2
        expected = [p.grad.clone() for p in module.parameters()]
        _fused(module, output, backend)(X[:12], y[:12], torch.full((12,), 1.0 / 12, dtype=torch.float64))
    assert sizes == {11, 12}  # sizes 5..12 in turn: every third new size starts afresh
    for gradient, parameter in zip(expected, module.parameters()):
        torch.testing.assert_close(gradient, parameter.grad, rtol=1e-12, atol=1e-14)
