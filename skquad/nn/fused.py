"""Whole-network forward and backward without autograd (the estimators' fast path).

Noel et al. write back-propagation for its layers out by hand (Algorithm 1 caches
``V = [Q^(1) a, ..., Q^(K) a]``, Algorithm 2 caches ``v1 = W a + b`` and
``v2 = U a + c``). :mod:`skquad.nn.backward` packages each as a
:class:`torch.autograd.Function`, which still pays autograd's graph bookkeeping
for every operation. For the small networks of the papers (64-30-10 on
optdigits) that bookkeeping costs more than the arithmetic, so the estimators
train through :class:`FusedNetwork`: the same equations for the whole stack of
layers, the output non-linearity and the loss in one function, which writes the
gradient straight into the parameters' ``.grad`` tensors (views into the
training engine's flat gradient buffer, see :mod:`skquad._training`).

It reads the parameters of the very :class:`torch.nn.Sequential` module that
autograd would differentiate (``nn.Linear``, :class:`~skquad.nn.QuadraticLayer`
with full storage, :class:`~skquad.nn.ReducedQuadraticLayer`, followed by an
activation module), so the two paths can be compared number for number
(``tests/test_nn_fused.py`` checks the gradient against autograd).

Quadratic layers rely on symmetric ``Q^(k)`` (then ``d(a^T Q a)/da = 2 Q a``,
Algorithm 1). The full-storage parameter ``P`` enters the forward pass as
``a^T P a``; its gradient ``sum_b delta_bk a_b a_b^T`` is symmetric, so a
symmetric ``P`` stays exactly symmetric under every optimizer step of the engine
(elementwise updates of symmetric tensors).
"""

import torch
from torch import nn

from ._fused_numpy import NumpyStep
from .layers import QuadraticLayer, ReducedQuadraticLayer

__all__ = ["REGRESSION_LOSSES", "FusedNetwork", "regression_loss", "supports_fused"]

_ACTIVATIONS = {nn.Identity: "identity", nn.ReLU: "relu", nn.Sigmoid: "sigmoid", nn.Tanh: "tanh"}


def supports_fused(module):
    """Whether :class:`FusedNetwork` can train ``module`` (else use autograd)."""
    for layer in module:
        if isinstance(layer, QuadraticLayer) and layer.quadratic_storage != "full":
            return False
        if not isinstance(layer, (nn.Linear, QuadraticLayer, ReducedQuadraticLayer)) and (
            type(layer) not in _ACTIVATIONS
        ):
            return False
    return True


REGRESSION_LOSSES = ("squared_error", "poisson")


def regression_loss(loss, scores, y, *, with_delta=False):
    """MLPRegressor's per-sample losses on raw output scores ``s`` (n, k).

    ``"squared_error"``: ``sum_k (s_k - y_k)² / (2 k)`` (scikit-learn averages
    over the outputs and halves); ``"poisson"``: the half Poisson deviance of
    the prediction ``exp(s)``, ``sum_k y_k log(y_k / e^{s_k}) - y_k + e^{s_k}``.
    With ``with_delta``, also ``d loss / d s`` per sample, (n, k).
    """
    y = y.reshape(scores.shape).to(scores.dtype)
    if loss == "squared_error":
        residual = scores - y
        per_sample = residual.square().sum(1) / (2.0 * scores.shape[1])
        return (per_sample, residual / scores.shape[1]) if with_delta else per_sample
    predictions = scores.exp()
    per_sample = (torch.xlogy(y, y) - y * scores - y + predictions).sum(1)
    return (per_sample, predictions - y) if with_delta else per_sample


class FusedNetwork:
    """``loss_and_gradient`` callable for :class:`skquad._training.Trainer`.

    Parameters
    ----------
    module : torch.nn.Sequential
        Layers alternating with activation modules; the last layer gives the
        class scores (no activation after it).
    output : {"softmax", "sigmoid", "binary", "squared_error", "poisson"}
        The output non-linearity and loss (:data:`skquad.nn.losses.OUTPUT_LOSSES`):
        "softmax": cross-entropy of the softmax of the scores; "sigmoid": one
        binary cross-entropy per class score (Noel et al.'s output layer; the
        targets are class indices, or an indicator matrix for multilabel
        problems); "binary": one score, binary cross-entropy of its sigmoid.
        The regression losses are MLPRegressor's (:func:`regression_loss`).
    inputs : callable, default=None
        Applied to each batch first, e.g. :class:`~skquad.nn.sparse.SparseRowsInput`
        (then the first layer may receive a sparse COO batch: a ``torch.nn.Linear``
        first layer multiplies it as it is).
    backend : {"auto", "torch", "numpy"}, default="auto"
        "numpy" computes the step on numpy views of the same tensors
        (:mod:`skquad.nn._fused_numpy`; at the papers' sizes, where torch's
        per-operation dispatch dominates, it takes less CPU time than the
        torch step);
        "auto" does so for dense float32/float64 CPU batches (after
        ``inputs``) and uses torch otherwise (GPU, sparse batches, other dtypes).
    matmul : {"numpy", "torch"}, default="numpy"
        The numpy step's library for matrix products (the estimators pass
        :func:`skquad._foundation._runtime.cpu_matmul_library`'s choice).
    """

    def __init__(self, module, output, inputs=None, backend="auto", matmul="numpy"):
        if not supports_fused(module):
            raise ValueError("FusedNetwork supports Linear, full-storage quadratic and reduced layers.")
        if backend not in ("auto", "torch", "numpy"):
            raise ValueError(f"backend must be 'auto', 'torch' or 'numpy', got {backend!r}.")
        self.module = module
        self.output = output
        self.inputs = inputs
        self.backend = backend
        self.layers = []
        for item in module:
            if type(item) in _ACTIVATIONS:
                self.layers[-1][1] = _ACTIVATIONS[type(item)]
            else:
                self.layers.append([item, "identity"])
        self._workspace = {}
        self._batch_sizes = set()
        self._views = None
        self._numpy_step = NumpyStep(self.layers, output, matmul)

    def products_library(self, device):
        """The library that multiplies this network's training batches on ``device``: "torch" or "numpy".

        The numpy step's ``matmul`` where :meth:`_runs_in_numpy` sends the batches (sparse
        first-layer batches are not dense: torch), else torch (the trainer gives this library
        the step's threads).
        """
        sparse_batches = getattr(self.inputs, "matrix", None) is not None and not self.inputs.densify
        on_cpu, dtype = torch.device(device).type == "cpu", self.layers[0][0].weight.dtype
        return self._numpy_step.matmul if self._numpy_step_runs(on_cpu, not sparse_batches, dtype) else "torch"

    def _runs_in_numpy(self, X):
        return self._numpy_step_runs(X.is_cpu, X.layout == torch.strided, X.dtype)

    def _numpy_step_runs(self, on_cpu, dense, dtype):
        """The backend's rule: "auto" takes the numpy step for dense float32/float64 CPU batches."""
        if self.backend != "auto":
            return self.backend == "numpy"
        return on_cpu and dense and dtype in (torch.float32, torch.float64)

    def _parameter_views(self):
        """Transposed and stacked views of every layer's parameters, made once: the parameters are
        views into the flat buffer, updated in place, so their views stay current."""
        if self._views is None:
            views = []
            for layer, _ in self.layers:
                entry = {"weight_t": layer.weight.t()}
                if isinstance(layer, QuadraticLayer):
                    n_out, n_in = layer.out_features, layer.in_features
                    entry["stacked"] = layer.quadratic_weight.view(n_out * n_in, n_in)
                    entry["stacked_t"] = entry["stacked"].t()
                    entry["stacked_grad"] = layer.quadratic_weight.grad.view(n_out * n_in, n_in)
                elif isinstance(layer, ReducedQuadraticLayer):
                    entry["factor_weight_t"] = layer.factor_weight.t()
                    if layer.power_term:
                        entry["power_weight_t"] = layer.power_weight.t()
                views.append(entry)
            self._views = views
        return self._views

    def _buffer(self, tag, index, shape, like):
        """A tensor reused across steps (per layer, tag and batch size): fresh ones every step cost page
        faults that outweigh the arithmetic at the papers' sizes."""
        key = (tag, index, shape)
        buffer = self._workspace.get(key)
        if buffer is None or buffer.dtype != like.dtype or buffer.device != like.device:
            buffer = torch.empty(shape, dtype=like.dtype, device=like.device)
            self._workspace[key] = buffer
        return buffer

    # -------------------------------------------------------------- forward
    def _layer_forward(self, index, layer, a):
        """Pre-activation ``z`` and the cache the backward pass needs."""
        views = self._parameter_views()[index]
        batch, n_out = a.shape[0], layer.out_features
        z = self._buffer("z", index, (batch, n_out), a)
        if isinstance(layer, nn.Linear):
            return torch.addmm(layer.bias, a, views["weight_t"], out=z), None
        if isinstance(layer, QuadraticLayer):
            n_in = layer.in_features
            # V[b, k] = P^(k) a_b, one (batch x n_in) @ (n_in x n_out*n_in) product.
            cached_v = self._buffer("v", index, (batch, n_out * n_in), a)
            torch.mm(a, views["stacked_t"], out=cached_v)
            cached_v = cached_v.view(batch, n_out, n_in)
            if layer.bias is not None:
                torch.addmm(layer.bias, a, views["weight_t"], out=z)
            else:
                torch.mm(a, views["weight_t"], out=z)
            z.unsqueeze(2).baddbmm_(cached_v, a.unsqueeze(2))  # + a_b^T P^(k) a_b
            return z, cached_v
        # Reduced layer: v1 = W a + b, v2 = U a + c (Algorithm 2's cache).
        v1 = torch.addmm(layer.bias, a, views["weight_t"], out=self._buffer("v1", index, (batch, n_out), a))
        v2 = torch.addmm(
            layer.factor_bias, a, views["factor_weight_t"], out=self._buffer("v2", index, (batch, n_out), a)
        )
        torch.mul(v1, v2, out=z)
        if layer.power_term:
            z.addmm_(a * a, views["power_weight_t"]).add_(layer.power_bias)
        return z, (v1, v2)

    @staticmethod
    def _activate(z, activation):
        if activation == "relu":
            return z.clamp_(min=0)
        if activation == "sigmoid":
            return z.sigmoid_()
        if activation == "tanh":
            return z.tanh_()
        return z

    @staticmethod
    def _backpropagate_activation(delta, h, activation):
        """``delta * g'(z)`` from the activation's output ``h = g(z)``."""
        if activation == "relu":
            # One fused kernel: zero where h <= 0 (several times faster than a mask multiply).
            return torch.ops.aten.threshold_backward(delta, h, 0)
        if activation == "sigmoid":
            return delta.mul_(h * (1 - h))
        if activation == "tanh":
            return delta.mul_(1 - h * h)
        return delta

    # ------------------------------------------------------------- backward
    def _layer_backward(self, index, layer, a, delta, cache):
        """Write parameter gradients; return dL/da (None for the first layer)."""
        if isinstance(layer, ReducedQuadraticLayer):
            return self._reduced_backward(index, layer, a, delta, cache)
        need_input_gradient = index > 0
        if a.is_sparse:  # a sparse first-layer batch: torch has no out= for dense @ sparse
            layer.weight.grad.copy_(torch.mm(delta.t(), a))
        else:
            torch.mm(delta.t(), a, out=layer.weight.grad)
        if layer.bias is not None:
            torch.sum(delta, 0, out=layer.bias.grad)
        grad_a = self._buffer("grad_a", index, a.shape, a) if need_input_gradient else None
        if isinstance(layer, nn.Linear):
            return torch.mm(delta, layer.weight, out=grad_a) if need_input_gradient else None
        n_out, n_in = layer.out_features, layer.in_features
        batch = a.shape[0]
        views = self._parameter_views()[index]
        # dL/dP^(k) = sum_b delta_bk a_b a_b^T as one product a^T (delta (x) a), put in place by a
        # transposing copy: the other order's short n_in columns run slower in BLAS.
        weighted = self._buffer("weighted", index, (batch, n_out * n_in), a)
        torch.mul(delta.unsqueeze(2), a.unsqueeze(1), out=weighted.view(batch, n_out, n_in))
        gradient_by_row = self._buffer("gradient_by_row", index, (n_in, n_out * n_in), a)
        torch.mm(a.t(), weighted, out=gradient_by_row)
        views["stacked_grad"].view(n_out, n_in, n_in).copy_(gradient_by_row.view(n_in, n_out, n_in).transpose(0, 1))
        if not need_input_gradient:
            return None
        # Algorithm 1's 2 V^T delta = 2 sum_k delta_k Q^(k) a from the cached V = [Q^(k) a]:
        # n_in times less arithmetic than (delta (x) a) @ stacked Q. One output: V scaled by row.
        if n_out == 1:
            torch.mm(delta, layer.weight, out=grad_a)
            return grad_a.addcmul_(cache[:, 0, :], delta, value=2.0)
        scaled = weighted.view(batch, n_out, n_in)  # free again: reused for delta_k V_k
        torch.mul(cache, delta.unsqueeze(2), out=scaled)
        torch.sum(scaled, 1, out=grad_a)
        return grad_a.addmm_(delta, layer.weight, beta=2.0)  # 2 sum_k delta_k V_k + W^T delta

    def _reduced_backward(self, index, layer, a, delta, cache):
        v1, v2 = cache
        grad_v1 = v2.mul_(delta)  # the factors are not needed any more
        grad_v2 = v1.mul_(delta)
        torch.mm(grad_v1.t(), a, out=layer.weight.grad)
        torch.sum(grad_v1, 0, out=layer.bias.grad)
        torch.mm(grad_v2.t(), a, out=layer.factor_weight.grad)
        torch.sum(grad_v2, 0, out=layer.factor_bias.grad)
        if layer.power_term:
            torch.mm(delta.t(), a * a, out=layer.power_weight.grad)
            torch.sum(delta, 0, out=layer.power_bias.grad)
        if index == 0:
            return None
        grad_a = torch.mm(grad_v1, layer.weight, out=self._buffer("grad_a", index, a.shape, a))
        grad_a.addmm_(grad_v2, layer.factor_weight)
        if layer.power_term:
            grad_a.addcmul_(torch.mm(delta, layer.power_weight), a, value=2.0)
        return grad_a

    # ----------------------------------------------------------------- loss
    def _loss_and_output_delta(self, scores, y, weights):
        """Weighted loss (0-d) and dL/dscores (``scores`` may be overwritten); the loss is NaN when any
        score overflowed, even a -inf one the log-loss ignores, for the divergence guard."""
        if self.output == "softmax":
            # log_softmax, one gather for the loss and one scatter_add_ for the
            # gradient (softmax - one-hot, weighted): 8 dispatches, fewer than a
            # written-out softmax needs. 0 * sum(scores) makes the loss NaN on
            # any overflowed score.
            targets, row_weights = y.unsqueeze(1), weights.unsqueeze(1)
            log_probabilities = torch.log_softmax(scores, 1)
            loss = torch.dot(log_probabilities.gather(1, targets).view(-1), weights).neg_()
            delta = log_probabilities.exp_().mul_(row_weights)
            delta.scatter_add_(1, targets, row_weights.neg())
            return loss.add_(scores.sum(), alpha=0.0), delta
        if self.output == "squared_error":
            # sum_b w_b sum_k r_bk^2 / (2k) as one dot of the weighted residuals
            # with the residuals (an overflowed score makes it inf or NaN by itself).
            residual = scores.sub_(y.reshape_as(scores).to(scores.dtype))
            delta = torch.mul(residual, weights.unsqueeze(1))
            if scores.shape[1] > 1:
                delta.div_(scores.shape[1])
            return torch.dot(delta.view(-1), residual.view(-1)).mul_(0.5), delta
        overflow_marker = scores.sum() * 0.0
        if self.output in REGRESSION_LOSSES:
            per_sample, delta = regression_loss(self.output, scores, y, with_delta=True)
            return torch.dot(per_sample, weights) + overflow_marker, delta.mul_(weights.unsqueeze(1))
        if self.output == "binary":
            targets = y.to(scores.dtype).unsqueeze(1)
        elif y.dim() == 2:  # multilabel: y is the indicator matrix
            targets = y.to(scores.dtype)
        else:
            targets = torch.zeros_like(scores)
            targets[torch.arange(y.shape[0], device=y.device), y] = 1.0
        per_sample = nn.functional.binary_cross_entropy_with_logits(scores, targets, reduction="none")
        loss = torch.dot(per_sample.sum(1), weights) + overflow_marker
        delta = scores.sigmoid_().sub_(targets)
        return loss, delta.mul_(weights.unsqueeze(1))

    def __call__(self, X, y, weights):
        if self.inputs is not None:
            X = self.inputs.forward(X)  # skip nn.Module.__call__: a step costs tens of microseconds
        if self._runs_in_numpy(X):
            return torch.from_numpy(self._numpy_step(X.numpy(), y.numpy(), weights.numpy()))
        if X.shape[0] not in self._batch_sizes:
            # Buffers are kept per batch size: a fit has two (the full batch and
            # the last), but partial_fit calls of ever new sizes must not pile
            # them up (memory stays bounded).
            if len(self._batch_sizes) >= 2:
                self._workspace.clear()
                self._batch_sizes.clear()
            self._batch_sizes.add(X.shape[0])
        activations = [X]
        caches = []
        for index, (layer, activation) in enumerate(self.layers):
            z, cache = self._layer_forward(index, layer, activations[-1])
            caches.append(cache)
            activations.append(self._activate(z, activation))
        loss, delta = self._loss_and_output_delta(activations.pop(), y, weights)
        for index in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[index][0]
            delta = self._layer_backward(index, layer, activations[index], delta, caches[index])
            if index > 0:
                delta = self._backpropagate_activation(delta, activations[index], self.layers[index - 1][1])
        return loss
