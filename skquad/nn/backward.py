"""The papers' vectorized backward passes as :class:`torch.autograd.Function`.

Paper 001 derives explicit back-propagation for its two layers; both cache
intermediate products of the forward pass so that backward needs no extra
``n_out * n_in**2`` work beyond the weight gradient:

* Algorithm 1 (full quadratic layer, :class:`CachedQuadraticForm`): the forward
  pass computes ``V[b, k] = Q^(k) a_b`` (an ``n_out x n_in`` matrix per sample)
  and keeps it.  With ``delta = dL/dz`` backward is

  - ``dL/da = (W^T + 2 V^T) delta``  (``V^T delta`` is a cheap contraction),
  - ``dL/dW = delta a^T``, ``dL/db = delta``,
  - ``dL/dQ^(k) = delta_k a a^T``, summed over the batch as one matrix product
    ``delta^T [a (x) a]``.

  Both Functions are differentiable once (no double backward, which no
  supported optimizer needs).  Algorithm 1 assumes every ``Q^(k)`` is symmetric (the layer passes the symmetric part
  of its parameter), which is what makes ``d(a^T Q a)/da = 2 Q a``.

* Algorithm 2 (reduced-parameter layer, :class:`CachedBilinearProduct`): the
  forward pass keeps ``v1 = W a + b`` and ``v2 = U a + c``; with
  ``z = v1 * v2``, backward is ``dL/da = W^T (delta * v2) + U^T (delta * v1)``,
  ``dL/dW = (delta * v2) a^T``, ``dL/dU = (delta * v1) a^T`` and the bias
  gradients are the corresponding batch sums.

Both are checked against plain autograd with :func:`torch.autograd.gradcheck`
in float64 (``tests/test_nn_backward.py``).  Tensors are batched: ``a`` has
shape ``(batch, n_in)``.
"""

import torch
from torch.autograd.function import once_differentiable

__all__ = [
    "CachedQuadraticForm",
    "CachedBilinearProduct",
    "cached_quadratic_form",
    "cached_bilinear_product",
]


def _sum_over_batch(tensor):
    return tensor.sum(dim=0)


class CachedQuadraticForm(torch.autograd.Function):
    """Paper 001, Algorithm 1: ``z_k = b_k + W_k a + a^T Q^(k) a``.

    Inputs: ``a`` (batch, n_in), ``weight`` (n_out, n_in), ``bias`` (n_out,) or
    None, ``quadratic`` (n_out, n_in, n_in) with every slice symmetric.
    Output: ``z`` (batch, n_out).  The forward pass caches
    ``V`` (batch, n_out, n_in) with ``V[b, k] = Q^(k) a_b``.
    """

    @staticmethod
    def forward(ctx, a, weight, bias, quadratic):
        n_out, n_in, _ = quadratic.shape
        batch = a.shape[0]
        # V = a @ [Q^(1) | ... | Q^(K)]: one matrix product (batch x n_in) @
        # (n_in x n_out*n_in); Q symmetric, so row b of the result is Q^(k) a_b.
        stacked = quadratic.reshape(n_out * n_in, n_in)
        cached_v = torch.matmul(a, stacked.t()).reshape(batch, n_out, n_in)
        # a^T Q^(k) a = a . V[b, k], one batched matrix-vector product.
        z = torch.bmm(cached_v, a.unsqueeze(2)).squeeze(2)
        if bias is not None:
            z = z + bias
        z = torch.addmm(z, a, weight.t())
        ctx.save_for_backward(a, weight, quadratic, cached_v)
        ctx.has_bias = bias is not None
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, delta):
        a, weight, quadratic, cached_v = ctx.saved_tensors
        grad_a = grad_weight = grad_bias = grad_quadratic = None
        if ctx.needs_input_grad[0]:
            # (W^T + 2 V^T) delta, batched: V^T delta is a (n_out)-contraction.
            grad_a = torch.mm(delta, weight)
            grad_a.add_(
                torch.bmm(delta.unsqueeze(1), cached_v).squeeze(1), alpha=2.0
            )
        if ctx.needs_input_grad[1]:
            grad_weight = torch.mm(delta.t(), a)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = _sum_over_batch(delta)
        if ctx.needs_input_grad[3]:
            n_out, n_in, _ = quadratic.shape
            # sum_b delta_bk a_b a_b^T for every k, as one product
            # (n_out x batch) @ (batch x n_in*n_in).
            outer = (a.unsqueeze(2) * a.unsqueeze(1)).reshape(a.shape[0], n_in * n_in)
            grad_quadratic = torch.mm(delta.t(), outer).reshape(n_out, n_in, n_in)
        return grad_a, grad_weight, grad_bias, grad_quadratic


class CachedBilinearProduct(torch.autograd.Function):
    """Paper 001, Algorithm 2: ``z = (W a + b) * (U a + c)``.

    Inputs: ``a`` (batch, n_in), ``weight`` ``W`` and ``factor_weight`` ``U``
    (n_out, n_in), ``bias`` ``b`` and ``factor_bias`` ``c`` (n_out,).  Output
    ``z`` (batch, n_out).  The forward pass caches ``v1 = W a + b`` and
    ``v2 = U a + c``; both factors come from one matrix product with the
    stacked weights ``[W; U]``.
    """

    @staticmethod
    def forward(ctx, a, weight, bias, factor_weight, factor_bias):
        n_out = weight.shape[0]
        both = torch.addmm(
            torch.cat((bias, factor_bias)), a, torch.cat((weight, factor_weight)).t()
        )
        v1, v2 = both[:, :n_out], both[:, n_out:]
        ctx.save_for_backward(a, weight, factor_weight, v1, v2)
        return v1 * v2

    @staticmethod
    @once_differentiable
    def backward(ctx, delta):
        a, weight, factor_weight, v1, v2 = ctx.saved_tensors
        # Gradients of the two factors, side by side so that one product
        # handles both the weight gradients and dL/da.
        grad_factors = torch.cat((delta * v2, delta * v1), dim=1)
        grad_a = grad_weight = grad_bias = grad_factor_weight = grad_factor_bias = None
        n_out = weight.shape[0]
        if ctx.needs_input_grad[0]:
            grad_a = torch.mm(grad_factors, torch.cat((weight, factor_weight)))
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[3]:
            grad_both = torch.mm(grad_factors.t(), a)
            grad_weight, grad_factor_weight = grad_both[:n_out], grad_both[n_out:]
        if ctx.needs_input_grad[2] or ctx.needs_input_grad[4]:
            sums = _sum_over_batch(grad_factors)
            grad_bias, grad_factor_bias = sums[:n_out], sums[n_out:]
        return grad_a, grad_weight, grad_bias, grad_factor_weight, grad_factor_bias


def cached_quadratic_form(a, weight, bias, quadratic):
    """Apply :class:`CachedQuadraticForm` (``bias`` may be None)."""
    return CachedQuadraticForm.apply(a, weight, bias, quadratic)


def cached_bilinear_product(a, weight, bias, factor_weight, factor_bias):
    """Apply :class:`CachedBilinearProduct`."""
    return CachedBilinearProduct.apply(a, weight, bias, factor_weight, factor_bias)
