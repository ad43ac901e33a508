""":class:`~skquad.nn.fused.FusedNetwork`'s equations on numpy views, for CPU batches.

Why a second spelling of the same step: at the papers' sizes (optdigits
64-30-10, batches of 200) a training step is a chain of some forty small
operations, and a torch operation's dispatch on the CPU costs several times a
numpy ufunc's before any arithmetic (figures in the CHANGELOG).
The dispatch is the library's, not the machine's, so the saving carries over
to every CPU. numpy also multiplies with the same BLAS as scikit-learn's
``MLPClassifier``, so the two are compared like for like whichever kernels MKL
and OpenBLAS pick on a given CPU (``shared/design/cpu-blas.md``).

The arrays are numpy views of the very tensors :class:`FusedNetwork` reads (the
parameters, their ``.grad`` views into the training engine's flat gradient
buffer, the batch), so nothing is copied and the engine's torch optimizer
steps the same memory. ``tests/test_nn_fused.py`` checks both spellings
against autograd.
"""

import numpy as np
import scipy.special
import torch
from torch import nn

from .._foundation._exp_range import SHIFT_FREE_LIMIT
from .layers import QuadraticLayer

__all__ = ["NumpyStep"]



def _array(tensor):
    return None if tensor is None else tensor.detach().numpy()


class _Layer:
    """numpy views of one layer's parameters and gradients, made once per parameter storage."""

    def __init__(self, layer, activation):
        self.activation = activation
        self.kind = (
            "linear" if isinstance(layer, nn.Linear)
            else "quadratic" if isinstance(layer, QuadraticLayer) else "reduced"
        )
        self.n_out = layer.out_features
        self.weight, self.weight_grad = _array(layer.weight), _array(layer.weight.grad)
        self.weight_t = self.weight.T
        self.bias, self.bias_grad = _array(layer.bias), _array(None if layer.bias is None else layer.bias.grad)
        if self.kind == "quadratic":
            n_in = layer.in_features
            self.n_in = n_in
            # P^(k) is symmetric, so the stacked (n_out*n_in, n_in) matrix read
            # transposed gives V[b, k*n_in + j] = (P^(k) a_b)_j in one product.
            self.stacked_t = _array(layer.quadratic_weight).reshape(self.n_out * n_in, n_in).T
            self.stacked_grad = _array(layer.quadratic_weight.grad).reshape(self.n_out * n_in, n_in)
        elif self.kind == "reduced":
            self.factor_weight, self.factor_weight_grad = _array(layer.factor_weight), _array(layer.factor_weight.grad)
            self.factor_weight_t = self.factor_weight.T
            self.factor_bias, self.factor_bias_grad = _array(layer.factor_bias), _array(layer.factor_bias.grad)
            self.power = bool(layer.power_term)
            if self.power:
                self.power_weight, self.power_weight_grad = _array(layer.power_weight), _array(layer.power_weight.grad)
                self.power_weight_t = self.power_weight.T
                self.power_bias_grad = _array(layer.power_bias.grad)
                self.power_bias = _array(layer.power_bias)


class NumpyStep:
    """One training step of :class:`FusedNetwork` (same arguments, same result) on numpy arrays.

    Parameters
    ----------
    layers : list of [torch.nn.Module, str]
        :class:`FusedNetwork`'s layers with the name of the activation after each.
    output : str
        :class:`FusedNetwork`'s ``output``.
    matmul : {"numpy", "torch"}, default="numpy"
        Which library computes the matrix products (2-D, the step's bulk
        arithmetic); everything else runs in numpy. Which is faster depends
        on the CPU (:func:`skquad._foundation._runtime.cpu_matmul_library`).
    """

    def __init__(self, layers, output, matmul="numpy"):
        if matmul not in ("numpy", "torch"):
            raise ValueError(f"matmul must be 'numpy' or 'torch', got {matmul!r}.")
        self.modules = layers
        self.output = output
        self.matmul = matmul
        self._gemm = np.matmul if matmul == "numpy" else self._torch_matmul
        self._layers = None
        self._key = None
        self._workspace = {}
        self._rows = {}
        self._batch_sizes = set()
        # matmul="torch": id(array) -> (array, torch.from_numpy(array)) for the
        # arrays that live across steps (parameter views, buffers), made once:
        # a torch.from_numpy call per operand is a sizeable share of a small
        # product. The entry holds the array, so its id cannot be reused.
        self._tensors = {}

    def __getstate__(self):
        # numpy views do not follow a deep copy of the tensors they view: a
        # copy makes its own from its own parameters.
        return {
            **self.__dict__, "_layers": None, "_key": None, "_workspace": {}, "_rows": {}, "_batch_sizes": set(),
            "_gemm": None, "_tensors": {},
        }

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._gemm = np.matmul if self.matmul == "numpy" else self._torch_matmul

    def _torch_matmul(self, a, b, out):
        """``np.matmul(a, b, out=out)`` for 2-D arrays, multiplied by torch (MKL) on the same memory."""
        tensors = self._tensors
        a_tensor, b_tensor, out_tensor = tensors.get(id(a)), tensors.get(id(b)), tensors.get(id(out))
        torch.mm(
            torch.from_numpy(a) if a_tensor is None else a_tensor[1],
            torch.from_numpy(b) if b_tensor is None else b_tensor[1],
            out=torch.from_numpy(out) if out_tensor is None else out_tensor[1],
        )
        return out

    def _kept(self, array):
        """``array``, whose torch twin is made once when the products are torch's."""
        if self.matmul == "torch":
            self._tensors[id(array)] = (array, torch.from_numpy(array))
        return array

    def _views(self):
        first = self.modules[0][0].weight
        key = (first.data_ptr(), first.grad.data_ptr(), first.dtype)
        if key != self._key:
            self._layers = [_Layer(layer, activation) for layer, activation in self.modules]
            self._key = key
            self._workspace = {}
            self._tensors = {}
            for layer in self._layers:
                for name in ("weight", "weight_t", "weight_grad", "stacked_t", "stacked_grad", "factor_weight",
                             "factor_weight_t", "factor_weight_grad", "power_weight", "power_weight_t",
                             "power_weight_grad"):
                    if getattr(layer, name, None) is not None:
                        self._kept(getattr(layer, name))
        return self._layers

    def _buffer(self, tag, index, shape, dtype):
        """An array reused across steps (see :meth:`FusedNetwork._buffer`)."""
        key = (tag, index, shape)
        buffer = self._workspace.get(key)
        if buffer is None or buffer.dtype != dtype:
            buffer = self._workspace[key] = self._kept(np.empty(shape, dtype=dtype))
        return buffer

    def _ones(self, n, dtype):
        ones = self._rows.get(("ones", n, dtype))
        if ones is None:
            ones = self._rows[("ones", n, dtype)] = np.ones(n, dtype=dtype)
        return ones

    def _arange(self, n):
        rows = self._rows.get(n)
        if rows is None:
            rows = self._rows[n] = np.arange(n)
        return rows

    def _offsets(self, n, width):
        """``width * arange(n)``: where each row starts in a flattened (n, width) array."""
        offsets = self._rows.get(("offsets", n, width))
        if offsets is None:
            offsets = self._rows[("offsets", n, width)] = width * np.arange(n)
        return offsets

    # -------------------------------------------------------------- forward
    def _forward(self, index, layer, a):
        gemm = self._gemm
        batch, dtype = a.shape[0], a.dtype
        z = self._buffer("z", index, (batch, layer.n_out), dtype)
        if layer.kind == "linear":
            gemm(a, layer.weight_t, z)
            if layer.bias is not None:
                z += layer.bias
            return z, None
        if layer.kind == "quadratic":
            n_out, n_in = layer.n_out, layer.n_in
            v = gemm(a, layer.stacked_t, self._buffer("v", index, (batch, n_out * n_in), dtype))
            v = v.reshape(batch, n_out, n_in)
            gemm(a, layer.weight_t, z)
            if layer.bias is not None:
                z += layer.bias
            # + a_b^T P^(k) a_b = V[b, k, :] . a_b, one stacked matrix-vector product
            quadratic = self._buffer("quadratic", index, (batch, n_out, 1), dtype)
            z += np.matmul(v, a[:, :, None], out=quadratic)[:, :, 0]
            return z, v
        # Reduced layer: v1 = W a + b, v2 = U a + c (Algorithm 2's cache).
        v1 = gemm(a, layer.weight_t, self._buffer("v1", index, (batch, layer.n_out), dtype))
        v1 += layer.bias
        v2 = gemm(a, layer.factor_weight_t, self._buffer("v2", index, (batch, layer.n_out), dtype))
        v2 += layer.factor_bias
        np.multiply(v1, v2, out=z)
        squares = None
        if layer.power:
            squares = np.multiply(a, a, out=self._buffer("squares", index, a.shape, dtype))
            z += gemm(squares, layer.power_weight_t, self._buffer("power", index, z.shape, dtype))
            z += layer.power_bias
        return z, (v1, v2, squares)

    @staticmethod
    def _activate(z, activation):
        if activation == "relu":
            np.maximum(z, 0.0, out=z)
        elif activation == "sigmoid":
            scipy.special.expit(z, out=z)
        elif activation == "tanh":
            np.tanh(z, out=z)
        return z

    @staticmethod
    def _backpropagate_activation(delta, h, activation):
        """``delta * g'(z)`` from the activation's output ``h = g(z)``, in place."""
        if activation == "relu":
            delta *= h > 0
        elif activation == "sigmoid":
            delta *= h * (1 - h)
        elif activation == "tanh":
            delta *= 1 - h * h
        return delta

    # ------------------------------------------------------------- backward
    def _backward(self, index, layer, a, delta, cache):
        """Write parameter gradients; return dL/da (None for the first layer)."""
        gemm = self._gemm
        batch, dtype = a.shape[0], a.dtype
        need_input_gradient = index > 0
        if layer.kind == "reduced":
            return self._reduced_backward(index, layer, a, delta, cache)
        gemm(delta.T, a, layer.weight_grad)
        if layer.bias is not None:
            # column sums as a BLAS product with ones: several times faster than
            # numpy's reduction over a short batch axis
            np.dot(self._ones(batch, dtype), delta, out=layer.bias_grad)
        grad_a = self._buffer("grad_a", index, a.shape, dtype) if need_input_gradient else None
        if layer.kind == "linear":
            return gemm(delta, layer.weight, grad_a) if need_input_gradient else None
        n_out, n_in = layer.n_out, layer.n_in
        if need_input_gradient:
            gemm(delta, layer.weight, grad_a)
            if n_out == 1:  # one output (a regressor's target): 2 delta_b V_b, row by row
                cache = cache[:, 0, :]
                cache *= delta
                cache *= 2.0
                grad_a += cache
            else:
                # Algorithm 1's 2 sum_k delta_bk Q^(k) a_b from the cached V = [Q^(k) a_b]:
                # one stacked (1 x n_out) @ (n_out x n_in) product per sample.
                twice = np.multiply(delta, 2.0, out=self._buffer("twice", index, delta.shape, dtype))
                quadratic = self._buffer("grad_quadratic", index, (batch, 1, n_in), dtype)
                np.matmul(twice[:, None, :], cache, out=quadratic)
                grad_a += quadratic[:, 0, :]
        # dL/dP^(k)_ij = sum_b delta_bk a_bi a_bj as one product (delta (x) a)^T a, whose rows come
        # out in P's (k, i) order: no transposing copy. (delta (x) a)^T is built along the batch
        # from transposed copies, in V's buffer (free now), to keep the working set in L2.
        delta_t = self._buffer("delta_t", index, (n_out, batch), dtype)
        np.copyto(delta_t, delta.T)
        a_t = self._buffer("a_t", index, (n_in, batch), dtype)
        np.copyto(a_t, a.T)
        weighted_t = self._buffer("v", index, (batch, n_out * n_in), dtype).reshape(n_out * n_in, batch)
        np.multiply(delta_t[:, None, :], a_t[None, :, :], out=weighted_t.reshape(n_out, n_in, batch))
        gemm(weighted_t, a, layer.stacked_grad)
        return grad_a

    def _reduced_backward(self, index, layer, a, delta, cache):
        gemm = self._gemm
        v1, v2, squares = cache
        grad_v1 = np.multiply(v2, delta, out=v2)  # the factors are not needed any more
        grad_v2 = np.multiply(v1, delta, out=v1)
        ones = self._ones(a.shape[0], a.dtype)  # column sums as BLAS products (see _backward)
        gemm(grad_v1.T, a, layer.weight_grad)
        np.dot(ones, grad_v1, out=layer.bias_grad)
        gemm(grad_v2.T, a, layer.factor_weight_grad)
        np.dot(ones, grad_v2, out=layer.factor_bias_grad)
        if layer.power:
            gemm(delta.T, squares, layer.power_weight_grad)
            np.dot(ones, delta, out=layer.power_bias_grad)
        if index == 0:
            return None
        grad_a = gemm(grad_v1, layer.weight, self._buffer("grad_a", index, a.shape, a.dtype))
        grad_a += gemm(grad_v2, layer.factor_weight, self._buffer("grad_a2", index, a.shape, a.dtype))
        if layer.power:
            power = gemm(delta, layer.power_weight, self._buffer("grad_a2", index, a.shape, a.dtype))
            power *= a
            power *= 2.0
            grad_a += power
        return grad_a

    # ----------------------------------------------------------------- loss
    def _loss_and_output_delta(self, scores, y, weights):
        """Weighted loss (float, NaN on any overflowed score) and dL/dscores (``scores`` is overwritten)."""
        batch, n_outputs = scores.shape
        ones = self._ones(n_outputs, scores.dtype)  # row sums as BLAS products, faster than short reductions
        flat = scores.ravel()
        if self.output == "softmax":
            # log-softmax and its gradient (softmax - one-hot), weighted by the sample.
            targets = self._offsets(batch, n_outputs) + y  # each sample's true score in the flattened scores
            low, high = flat.min(), flat.max()
            limit = SHIFT_FREE_LIMIT[scores.dtype.type]
            if -limit <= low and high <= limit:
                # No shift needed: exp of every score is a normal number. It
                # saves the row maxima (a reduction over few numbers per
                # row, numpy's slowest kind) at an absolute error of the
                # loss of at most limit * eps, 1.3e-6 in float32.
                overflow_marker = 0.0
            else:
                # The usual shift by the row maximum; 0 * (low + high) makes
                # the loss NaN on any overflowed score (the guard's signal).
                overflow_marker = 0.0 * (low + high)
                scores -= np.maximum.reduce(scores, 1, keepdims=True)
            target_scores = flat.take(targets)
            exponentials = np.exp(scores, out=scores)
            sums = np.dot(exponentials, ones)
            loss = np.dot(weights, np.log(sums)) - np.dot(weights, target_scores)
            exponentials *= (weights / sums)[:, None]
            exponentials.ravel()[targets] -= weights
            return loss + overflow_marker, exponentials
        # a BLAS dot with ones: several times cheaper than numpy's pairwise sum here
        overflow_marker = 0.0 * np.dot(flat, self._ones(flat.size, scores.dtype))
        if self.output == "squared_error":
            residual = np.subtract(scores, y.reshape(scores.shape), out=scores)
            delta = residual * weights[:, None]
            if scores.shape[1] > 1:
                delta /= scores.shape[1]
            return 0.5 * np.dot(delta.ravel(), residual.ravel()) + overflow_marker, delta
        if self.output == "poisson":
            targets = y.reshape(scores.shape).astype(scores.dtype, copy=False)
            predictions = np.exp(scores)
            per_sample = np.dot(scipy.special.xlogy(targets, targets) - targets * scores - targets + predictions, ones)
            predictions -= targets
            predictions *= weights[:, None]
            return np.dot(per_sample, weights) + overflow_marker, predictions
        if self.output == "binary":
            targets = y.astype(scores.dtype)[:, None]
        elif y.ndim == 2:  # multilabel: y is the indicator matrix
            targets = y.astype(scores.dtype, copy=False)
        else:
            targets = np.zeros_like(scores)
            targets[self._arange(batch), y] = 1.0
        # binary cross-entropy with logits: max(s, 0) - s t + log(1 + exp(-|s|))
        per_element = np.logaddexp(0.0, -np.abs(scores))
        per_element += np.maximum(scores, 0.0)
        per_element -= scores * targets
        loss = np.dot(np.dot(per_element, ones), weights)
        delta = scipy.special.expit(scores, out=scores)
        delta -= targets
        delta *= weights[:, None]
        return loss + overflow_marker, delta

    def __call__(self, X, y, weights):
        """Loss (a 0-d array of X's dtype) of the batch; gradients written into the parameters' ``.grad``.

        ``X``, ``y`` and ``weights`` are CPU numpy arrays (views of the
        engine's tensors).
        """
        batch = X.shape[0]
        if batch not in self._batch_sizes:
            # Buffers are kept per batch size: a fit has two (the full batch
            # and the last), but partial_fit calls of ever new sizes must not
            # pile them up (memory stays bounded).
            if len(self._batch_sizes) >= 2:
                self._key = None  # the views are made again, the buffers' torch twins dropped with them
                self._rows.clear()
                self._batch_sizes.clear()
            self._batch_sizes.add(batch)
        layers = self._views()
        activations = [X]
        caches = []
        with np.errstate(all="ignore"):  # an overflow shows as a non-finite loss (the guard's signal)
            for index, layer in enumerate(layers):
                z, cache = self._forward(index, layer, activations[-1])
                caches.append(cache)
                activations.append(self._activate(z, layer.activation))
            loss, delta = self._loss_and_output_delta(activations.pop(), y, weights)
            for index in range(len(layers) - 1, -1, -1):
                delta = self._backward(index, layers[index], activations[index], delta, caches[index])
                if index > 0:
                    delta = self._backpropagate_activation(delta, activations[index], layers[index - 1].activation)
        return np.asarray(loss, dtype=X.dtype)
