"""The papers' vectorized backward passes as :class:`torch.autograd.Function`.

Noel et al. derive explicit back-propagation for its two layers; both cache
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

* Algorithm 2 (reduced-parameter layer, :class:`CachedBilinearProduct`, with
  Fan et al.'s power term as an option): the
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
    "CachedBilinearProduct",
    "CachedQuadraticForm",
    "PackedPairIndex",
    "PackedQuadraticForm",
    "cached_bilinear_product",
    "cached_quadratic_form",
    "packed_quadratic_form",
]


def _sum_over_batch(tensor):
    return tensor.sum(dim=0)


class CachedQuadraticForm(torch.autograd.Function):
    """Noel et al., Algorithm 1: ``z_k = b_k + W_k a + a^T Q^(k) a``.

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


class PackedPairIndex:
    """Index tables of the upper triangle ``i <= j`` of an ``n x n`` matrix.

    Entries are numbered row by row (as :func:`torch.triu_indices`), so the
    entries of row ``i`` are the contiguous block ``offsets[i]:offsets[i + 1]``.

    Parameters
    ----------
    n : int
    device : torch.device, optional

    Attributes
    ----------
    rows, cols : torch.LongTensor of shape (n (n + 1) / 2,)
    symmetric_positions : torch.LongTensor of shape (n * n,)
        For every entry ``(i, j)`` of the full matrix (row-major), the packed
        entry that holds ``Q_ij = Q_ji``: ``packed[:, symmetric_positions]``
        unpacks.
    offsets : list of int
    """

    # None: loop over row blocks when torch runs single-threaded, gather
    # otherwise (see _use_row_loop); True/False force one way (tests).
    row_loop = None

    def __init__(self, n, device=None):
        self.n = n
        rows, cols = torch.triu_indices(n, n, device=device)
        self.rows, self.cols = rows, cols
        # Off-diagonal pairs count twice in a^T Q a: index into [a; 2 a].
        self.cols_doubled = cols + n * (rows != cols)
        n_pairs = rows.shape[0]
        positions = torch.empty(n, n, dtype=torch.long, device=device)
        numbers = torch.arange(n_pairs, device=device)
        positions[rows, cols] = numbers
        positions[cols, rows] = numbers
        self.symmetric_positions = positions.reshape(-1)
        self.offsets = [0]
        for i in range(n):
            self.offsets.append(self.offsets[-1] + n - i)

    @property
    def device(self):
        return self.rows.device

    def unpack(self, packed):
        """``(m, n_pairs)`` packed triangles to ``(m, n, n)`` symmetric matrices.

        One gather, differentiable: its backward adds the gradients of
        ``Q_ij`` and ``Q_ji`` into the packed entry.
        """
        return packed.index_select(1, self.symmetric_positions).view(-1, self.n, self.n)

    def pack(self, matrices):
        """``(m, n, n)`` matrices to their ``(m, n_pairs)`` upper triangles."""
        return matrices[:, self.rows, self.cols]


def _use_row_loop(index, tensor):
    """Row-block loops (one pass, ``2 n`` small operations: the fastest on one CPU thread) or a few
    large gathers (with several threads each operation pays a parallel region, on a GPU a launch)?"""
    if index.row_loop is not None:
        return index.row_loop
    return tensor.device.type == "cpu" and torch.get_num_threads() == 1


def pair_products_t(a_t, index):
    """Noel et al.'s ``M(a)`` per sample, transposed: ``(n_pairs, batch)``.

    Row ``p = (i, j)`` holds ``a_i a_j`` for ``i = j`` and ``2 a_i a_j`` for
    ``i < j``, so that ``a^T Q a = M(a) . q`` with ``q`` the packed triangle.
    ``a_t`` is the transposed input ``(n, batch)``.
    """
    if not _use_row_loop(index, a_t):
        doubled = torch.cat((a_t, 2.0 * a_t))
        return a_t.index_select(0, index.rows) * doubled.index_select(
            0, index.cols_doubled
        )
    offsets = index.offsets
    out = a_t.new_empty(offsets[-1], a_t.shape[1])
    twice = 2.0 * a_t
    for i in range(index.n):
        start = offsets[i]
        torch.mul(a_t[i : i + 1], a_t[i], out=out[start : start + 1])
        torch.mul(a_t[i + 1 :], twice[i], out=out[start + 1 : offsets[i + 1]])
    return out


def _symmetric_times_input(g_t, a_t, index):
    """``S_b a_b`` for every sample, ``S_b`` the symmetric matrix packed in
    column ``b`` of ``g_t`` ``(n_pairs, batch)``; returns ``(n, batch)``."""
    n = index.n
    if not _use_row_loop(index, a_t):
        full = g_t.index_select(0, index.symmetric_positions).view(n, n, -1)
        return (full * a_t.unsqueeze(0)).sum(dim=1)
    offsets = index.offsets
    out_t = torch.empty_like(a_t)
    for i in range(n):
        # Row i of S: the block (i, i..n-1) times a_i..a_{n-1}.
        torch.sum(g_t[offsets[i] : offsets[i + 1]] * a_t[i:], 0, out=out_t[i])
    for i in range(n - 1):
        # Column i of S below the diagonal: entries (i, j > i) times a_i.
        out_t[i + 1 :].addcmul_(g_t[offsets[i] + 1 : offsets[i + 1]], a_t[i])
    return out_t


class PackedQuadraticForm(torch.autograd.Function):
    """Algorithm 1 on the packed triangle: ``z = b + W a + M(a) . q``.

    Inputs: ``a`` (batch, n_in), ``weight`` (n_out, n_in), ``bias`` (n_out,) or
    None, ``packed`` (n_out, n_pairs) the upper triangles of the symmetric
    ``Q^(k)`` row by row, and a :class:`~skquad.nn.backward.PackedPairIndex`.

    This is Noel et al.'s quadratic-neuron gradient written for the free entries
    (its ``M(x)``: ``x_i^2`` on the diagonal, ``2 x_i x_j`` off it).  The
    forward pass caches ``M(a)`` (batch x n_pairs, half of Algorithm 1's
    ``V``) and backward is

    - ``dL/dq = delta^T M(a)`` (one product),
    - ``dL/da = W^T delta + 2 Q_delta a`` with ``Q_delta = sum_k delta_k Q^(k)``,
      i.e. Algorithm 1's ``2 V^T delta`` without forming ``V``.

    Forward costs ``n_out n_in (n_in + 1) / 2`` multiply-adds per sample, half
    of Algorithm 1's ``n_out n_in^2``, and neither pass writes an
    ``n_out x n_in`` matrix per sample.  Single-threaded, the pair products and
    ``dL/da`` are computed one row block of the triangle at a time (a python
    loop over ``n_in``), otherwise by gathers.  The bookkeeping pays off for
    wide layers; :class:`~skquad.nn.QuadraticLayer` uses Algorithm 1 on the
    unpacked matrices below ``PACKED_TRIANGLE_MIN_FEATURES`` inputs.
    """

    @staticmethod
    def forward(ctx, a, weight, bias, packed, index):
        a_t = a.t().contiguous()
        pairs_t = pair_products_t(a_t, index)
        z = torch.mm(a, weight.t()) if bias is None else torch.addmm(bias, a, weight.t())
        z.addmm_(pairs_t.t(), packed.t())
        ctx.save_for_backward(a, a_t, weight, packed, pairs_t)
        ctx.index = index
        ctx.has_bias = bias is not None
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, delta):
        a, a_t, weight, packed, pairs_t = ctx.saved_tensors
        grad_a = grad_weight = grad_bias = grad_packed = None
        if ctx.needs_input_grad[0]:
            g_t = torch.mm(packed.t(), delta.t())
            grad_a = torch.mm(delta, weight)
            grad_a.add_(_symmetric_times_input(g_t, a_t, ctx.index).t(), alpha=2.0)
        if ctx.needs_input_grad[1]:
            grad_weight = torch.mm(delta.t(), a)
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_bias = _sum_over_batch(delta)
        if ctx.needs_input_grad[3]:
            grad_packed = torch.mm(delta.t(), pairs_t.t())
        return grad_a, grad_weight, grad_bias, grad_packed, None


class CachedBilinearProduct(torch.autograd.Function):
    """Noel et al., Algorithm 2: ``z = (W a + b) * (U a + c)``, optionally plus
    Fan et al.'s power term ``W_p (a * a) + c_p``.

    Inputs: ``a`` (batch, n_in), ``weight`` ``W`` and ``factor_weight`` ``U``
    (n_out, n_in), ``bias`` ``b`` and ``factor_bias`` ``c`` (n_out,), and
    ``power_weight`` ``W_p`` (n_out, n_in) and ``power_bias`` ``c_p`` (n_out,),
    both None without the power term.  Output ``z`` (batch, n_out).  The
    forward pass caches ``v1 = W a + b`` and ``v2 = U a + c``; backward is
    ``dL/da = W^T (delta * v2) + U^T (delta * v1) [+ 2 a * W_p^T delta]``,
    ``dL/dW = (delta * v2) a^T``, ``dL/dU = (delta * v1) a^T``
    ``[, dL/dW_p = delta (a * a)^T]`` and batch sums for the biases.
    """

    @staticmethod
    def forward(ctx, a, weight, bias, factor_weight, factor_bias, power_weight, power_bias):
        v1 = torch.addmm(bias, a, weight.t())
        v2 = torch.addmm(factor_bias, a, factor_weight.t())
        z = v1 * v2
        squares = None
        if power_weight is not None:
            squares = a * a
            z.addmm_(squares, power_weight.t()).add_(power_bias)
        ctx.save_for_backward(a, weight, factor_weight, v1, v2, power_weight, squares)
        return z

    @staticmethod
    @once_differentiable
    def backward(ctx, delta):
        a, weight, factor_weight, v1, v2, power_weight, squares = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_v1 = delta * v2
        grad_v2 = delta * v1
        grads = [None] * 7
        if needs[0]:
            grad_a = torch.mm(grad_v1, weight).addmm_(grad_v2, factor_weight)
            if power_weight is not None:
                grad_a.addcmul_(torch.mm(delta, power_weight), a, value=2.0)
            grads[0] = grad_a
        if needs[1]:
            grads[1] = torch.mm(grad_v1.t(), a)
        if needs[2]:
            grads[2] = _sum_over_batch(grad_v1)
        if needs[3]:
            grads[3] = torch.mm(grad_v2.t(), a)
        if needs[4]:
            grads[4] = _sum_over_batch(grad_v2)
        if power_weight is not None:
            if needs[5]:
                grads[5] = torch.mm(delta.t(), squares)
            if needs[6]:
                grads[6] = _sum_over_batch(delta)
        return tuple(grads)


def cached_quadratic_form(a, weight, bias, quadratic):
    """Apply :class:`CachedQuadraticForm` (``bias`` may be None)."""
    return CachedQuadraticForm.apply(a, weight, bias, quadratic)


def packed_quadratic_form(a, weight, bias, packed, index):
    """Apply :class:`PackedQuadraticForm` (``bias`` may be None)."""
    return PackedQuadraticForm.apply(a, weight, bias, packed, index)


def cached_bilinear_product(
    a, weight, bias, factor_weight, factor_bias, power_weight=None, power_bias=None
):
    """Apply :class:`CachedBilinearProduct` (no power term by default)."""
    return CachedBilinearProduct.apply(
        a, weight, bias, factor_weight, factor_bias, power_weight, power_bias
    )
