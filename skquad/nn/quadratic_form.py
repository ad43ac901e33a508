"""Quadratic-form class scores, their log-loss and its closed-form gradient.

Pure torch, no scikit-learn: this is the math of quadratic logistic regression
(Noel et al., section 2; ``SPEC.md`` section 1). With ``K`` class scores

.. math::

    z_{ik} = x_i^T Q_k x_i + w_k^T x_i + b_k, \\qquad Q_k = Q_k^T,

the weighted objective is

.. math::

    J = \\sum_i s_i \\, \\ell_i(z_i)
        + \\frac{\\lambda}{2} \\sum_k \\left(\\lVert Q_k \\rVert_F^2
        + \\lVert w_k \\rVert^2\\right),

with the logistic loss for one score (binary) and the multinomial (softmax)
loss for ``K > 2`` scores. With residuals ``r_{ik} = s_i (p_{ik} - y_{ik})``
its gradient with respect to the symmetric matrix ``Q_k`` is

.. math::

    \\partial J / \\partial Q_k = X^T \\operatorname{diag}(r_{:k}) X + \\lambda Q_k,

one ``d x d`` product per class: the ``n x d(d+1)/2`` matrix of degree-2
features that ``PolynomialFeatures(2)`` would build is never formed, so the
memory stays ``O(n d + K d^2)``.

Flops matter here (``n = 100 000, d = 200`` is a target problem): the scores
cost one GEMM ``X Q_k`` per class, the gradient one *symmetric* rank-``n``
product per class. The residual ``r_{ik}`` is ``<= 0`` exactly on the samples
of class ``k`` (and ``>= 0`` elsewhere), so with the rows sorted by class,
``X^T diag(r) X = A_+^T A_+ - A_-^T A_-`` with ``A = diag(sqrt|r|) X`` split
into contiguous row blocks: ``A^T A`` products that the BLAS computes as SYRK,
at half the flops of a general ``(r X)^T X`` GEMM (on the CPU only for wide
rows, see ``_add_chunk_terms``).

Sparse data: every function here also takes ``X`` as sparse rows (an object
with ``dense_chunks()`` and ``matmul()``, :class:`skquad._training.SparseRows`):
the products that need dense rows then run over row chunks of bounded size,
so the data are never densified as a whole.
"""

import concurrent.futures
import dataclasses
import contextlib
import functools
import queue

import numpy as np
import torch
import torch.nn.functional as F

from .._foundation._blas import gram_update, upper_product_in_place
from .._foundation._memory import available_memory
from .._foundation._pair_products import write_pair_products
from .._foundation._rows import OrderedRows, row_chunks

__all__ = [
    "PATH_MEMORY",
    "QuadraticScores",
    "chunked_quadratic_form_scores",
    "column_magnitudes",
    "cpu_chunk_rows",
    "float32_twin",
    "log_loss",
    "log_loss_per_sample",
    "log_loss_residuals",
    "low_rank_frobenius_sq",
    "low_rank_log_loss",
    "low_rank_quadratic_scores",
    "low_rank_to_dense",
    "packed_logistic_objective",
    "packed_penalty_weight",
    "quadratic_form_scores",
    "quadratic_log_loss_gradient",
    "quadratic_logistic_loss_and_gradient",
    "quadratic_penalty",
    "SymmetricPacking",
    "weighted_gram",
    "weighted_row_scale",
]

# Rows per chunk (times n_features) that keeps the n x d scratch of the score
# computation at about 128 MiB in float64 when scoring large inputs.
_SCRATCH_ELEMENTS = 1 << 24

# Rows per chunk (times n_features) of the CPU loss and gradient: 512 Ki numbers, so that
# memory stays the data plus O(chunk d) per thread and the chunk's elementwise passes
# (copy, row dots, residual scaling) between its TRMM and SYRK run from cache.
_CPU_CHUNK_ELEMENTS = 1 << 19
# Rows of at most this many features take their CPU gradient grams as stacked GEMMs
# (:func:`_add_stacked_grams`), wider ones as SYRKs on the class-sorted sign blocks,
# half the flops, which win only once the rows are wide.
_GEMM_GRAM_MAX_FEATURES = 64
# The stacked GEMM grams' blocks of ``m`` rows keep ``K d m`` at most this many numbers,
# so that the stacked factor stays in the core's cache.
_GRAM_BLOCK_ELEMENTS = 1 << 18
# The largest transposed copy of the rows kept for those grams (:func:`_transposed_rows`);
# larger rows are transposed a chunk at a time, so that memory is not doubled.
_TRANSPOSED_COPY_BYTES = 1 << 27
# Problems with n * d * d * n_scores up to this take the two-GEMM path,
# :func:`_small_log_loss_gradient`.
_SMALL_PROBLEM_PRODUCT = 1 << 22
# Packed L-BFGS problems whose degree-2 design matrix has at most this many numbers
# are fitted on it (:func:`packed_logistic_objective`), where the calls dominate.
_DESIGN_MATRIX_ELEMENTS = 1 << 20
#: The key of a full-batch objective's ``cache`` under which a regularisation
#: path puts the L-BFGS pairs its fits share (a ``PathMemory``, see
#: :func:`quadratic_logistic_loss_and_gradient`); without it every fit starts
#: with an empty memory.
PATH_MEMORY = "lbfgs_path_memory"
# How many times faster the matrix form's BLAS products run per multiply-add than the
# streamed design's (:func:`_pairs_are_cheaper`).
_PAIRS_RATE = 16


def _is_sparse_rows(X):
    return hasattr(X, "dense_chunks")


def _rowwise_dot(A, B):
    """``(A * B).sum(1)`` without the ``n x d`` temporary."""
    return torch.einsum("ij,ij->i", A, B)


def quadratic_form_scores(X, Q, coef, intercept, *, scratch=None):
    """Scores ``z[:, k] = x^T Q_k x + coef_k . x + intercept_k``.

    Parameters
    ----------
    X : Tensor of shape (n_samples, n_features)
    Q : Tensor of shape (n_scores, n_features, n_features)
        Symmetric matrices (symmetry is assumed, not enforced).
    coef : Tensor of shape (n_scores, n_features)
    intercept : Tensor of shape (n_scores,)
    scratch : Tensor of shape (n_samples, n_features), optional
        Reused buffer for ``X @ Q_k`` (avoids one allocation per class).

    Returns
    -------
    scores : Tensor of shape (n_samples, n_scores)
    """
    if _is_sparse_rows(X):
        return torch.cat([quadratic_form_scores(rows, Q, coef, intercept) for *_, rows in X.dense_chunks()])
    scores = torch.addmm(intercept.unsqueeze(0), X, coef.T)
    for k in range(Q.shape[0]):
        if scratch is None:
            XQ = X @ Q[k]
        else:
            XQ = torch.mm(X, Q[k], out=scratch)
        scores[:, k] += _rowwise_dot(XQ, X)
    return scores


def chunked_quadratic_form_scores(X, Q, coef, intercept):
    """:func:`quadratic_form_scores` over row chunks of bounded scratch memory."""
    n_samples, n_features = X.shape
    chunk = max(1, _SCRATCH_ELEMENTS // max(1, n_features))
    if n_samples <= chunk or _is_sparse_rows(X):  # sparse rows come in chunks
        return quadratic_form_scores(X, Q, coef, intercept)
    return torch.cat(
        [
            quadratic_form_scores(X[start : start + chunk], Q, coef, intercept)
            for start in range(0, n_samples, chunk)
        ]
    )


def low_rank_quadratic_scores(X, vectors, scales, coef, intercept):
    """Scores with ``Q_k = sum_j scales[k, j] v_kj v_kj^T`` in ``O(n d r)``.

    Parameters
    ----------
    X : Tensor of shape (n_samples, n_features)
    vectors : Tensor of shape (n_scores, n_features, rank)
        Column ``j`` of ``vectors[k]`` is ``v_kj``.
    scales : Tensor of shape (n_scores, rank)
    coef : Tensor of shape (n_scores, n_features)
    intercept : Tensor of shape (n_scores,)

    Returns
    -------
    scores : Tensor of shape (n_samples, n_scores)
    """
    if _is_sparse_rows(X):
        projections = torch.stack([X.matmul(vectors[k]) for k in range(vectors.shape[0])])
        linear = X.matmul(coef.T) + intercept.unsqueeze(0)
    else:
        projections = torch.matmul(X, vectors)  # (n_scores, n_samples, rank)
        linear = torch.addmm(intercept.unsqueeze(0), X, coef.T)
    quadratic = (projections.square() * scales.unsqueeze(1)).sum(-1)
    return linear + quadratic.T


def low_rank_to_dense(vectors, scales):
    """``Q_k = V_k diag(s_k) V_k^T`` for every score: shape (n_scores, d, d)."""
    return torch.matmul(vectors * scales.unsqueeze(1), vectors.transpose(1, 2))


def low_rank_frobenius_sq(vectors, scales):
    """``sum_k ||V_k diag(s_k) V_k^T||_F^2`` from the factors, in ``O(d r^2)``."""
    gram = torch.matmul(vectors.transpose(1, 2), vectors)  # (n_scores, r, r)
    return torch.einsum("kj,kjl,kl->", scales, gram.square(), scales)


def weighted_gram(X, weights, *, negative_rows=None, scratch=None):
    """``X^T diag(weights) X``, exploiting symmetry where the signs allow.

    Parameters
    ----------
    X : Tensor of shape (n_samples, n_features)
    weights : Tensor of shape (n_samples,)
    negative_rows : tuple (start, stop), optional
        If given, ``weights <= 0`` on rows ``start:stop`` and ``>= 0`` on all
        other rows. The product is then computed as a difference of
        ``A^T A`` products of contiguous row blocks of
        ``A = diag(sqrt|weights|) X`` (SYRK, half the flops of a GEMM).
        Without it, one general GEMM ``(weights * X)^T X``.
    scratch : Tensor of shape (n_samples, n_features), optional
        Reused buffer for the scaled rows.

    Returns
    -------
    gram : Tensor of shape (n_features, n_features)
    """
    if negative_rows is None:
        scaled = torch.mul(X, weights.unsqueeze(1), out=scratch) if scratch is not None else X * weights.unsqueeze(1)
        return scaled.T @ X
    root = weights.abs().sqrt_().unsqueeze(1)
    scaled = torch.mul(X, root, out=scratch) if scratch is not None else X * root
    start, stop = negative_rows
    gram = None
    for begin, end, sign in ((0, start, 1.0), (stop, X.shape[0], 1.0), (start, stop, -1.0)):
        if end <= begin:
            continue
        block = scaled[begin:end]
        product = block.T @ block
        if gram is None:
            gram = product if sign > 0 else product.neg_()
        elif sign > 0:
            gram += product
        else:
            gram -= product
    if gram is None:
        gram = X.new_zeros((X.shape[1], X.shape[1]))
    return gram


def log_loss(scores, y, sample_weight):
    """Weighted log-loss ``sum_i s_i l_i`` (autograd-friendly, no residuals).

    Same conventions as :func:`log_loss_residuals`.
    """
    if scores.shape[1] == 1:
        z = scores[:, 0]
        return -(sample_weight * F.logsigmoid(torch.where(y == 1, z, -z))).sum()
    log_proba = torch.log_softmax(scores, dim=1)
    return -(sample_weight * log_proba.gather(1, y.unsqueeze(1)).squeeze(1)).sum()


def log_loss_per_sample(scores, y):
    """Per-sample log-loss ``l_i`` (shape ``(n,)``): logistic for one score, else softmax."""
    if scores.shape[1] == 1:
        z = scores[:, 0]
        return -F.logsigmoid(torch.where(y == 1, z, -z))
    return -torch.log_softmax(scores, dim=1).gather(1, y.unsqueeze(1)).squeeze(1)


def log_loss_residuals(scores, y, sample_weight):
    """Weighted log-loss and its derivative with respect to the scores.

    Parameters
    ----------
    scores : Tensor of shape (n_samples, n_scores)
        One column: binary log-odds of class 1. Else one logit per class.
    y : Tensor of shape (n_samples,), int64
        Class indices.
    sample_weight : Tensor of shape (n_samples,)

    Returns
    -------
    loss : Tensor (scalar)
        ``sum_i s_i l_i``.
    residuals : Tensor of shape (n_samples, n_scores)
        ``s_i (p_ik - y_ik)``: the gradient of ``loss`` with respect to the scores.
    """
    if scores.shape[1] == 1:
        z = scores[:, 0]
        positive = y == 1
        loss = -(sample_weight * F.logsigmoid(torch.where(positive, z, -z))).sum()
        residuals = sample_weight * (torch.sigmoid(z) - positive.to(z.dtype))
        return loss, residuals.unsqueeze(1)
    log_proba = torch.log_softmax(scores, dim=1)
    loss = -(sample_weight * log_proba.gather(1, y.unsqueeze(1)).squeeze(1)).sum()
    residuals = log_proba.exp_()
    residuals[torch.arange(y.shape[0], device=y.device), y] -= 1.0
    residuals *= sample_weight.unsqueeze(1)
    return loss, residuals


def quadratic_log_loss_gradient(
    X, y, sample_weight, Q, coef, intercept, l2, *, cross_weight=1.0, quadratic_weight=1.0,
    class_blocks=None, scratch=None,
):
    """Objective ``J`` and its closed-form gradient for full (dense) ``Q``.

    Parameters
    ----------
    X : Tensor of shape (n_samples, n_features)
    y : Tensor of shape (n_samples,), int64
        Class indices in ``0 .. n_classes - 1``.
    sample_weight : Tensor of shape (n_samples,)
        Non-negative weights ``s_i``.
    Q : Tensor of shape (n_scores, n_features, n_features)
        Symmetric. ``n_scores`` is 1 (binary, logistic loss) or the number of
        classes (softmax loss).
    coef : Tensor of shape (n_scores, n_features)
    intercept : Tensor of shape (n_scores,)
    l2 : float
        ``lambda``: the L2 strength on ``Q`` and ``coef`` (not the intercept).
    cross_weight : float, default=1.0
        Weight of the off-diagonal entries in the penalty on ``Q``, see
        :func:`quadratic_penalty`: 1 for ``||Q||_F^2``, 2 for the penalty of
        ``PolynomialFeatures(2)`` + ``LogisticRegression``.
    quadratic_weight : float, default=1.0
        Multiplies the penalty on ``Q`` (``l2 * quadratic_weight * P(Q)``):
        the ratio ``C / quadratic_C`` of the estimator.
    class_blocks : list of (start, stop), optional
        Row range of each class when the rows of ``X`` are sorted by class:
        enables the symmetric (SYRK) gradient products of :func:`weighted_gram`.
    scratch : Tensor of shape (n_samples, n_features), optional
        Reused ``n x d`` buffer for the score GEMMs and the gradient products.

    Returns
    -------
    loss : Tensor (scalar)
    grad_Q : Tensor of shape (n_scores, n_features, n_features), symmetric
    grad_coef : Tensor of shape (n_scores, n_features)
    grad_intercept : Tensor of shape (n_scores,)
    """
    if _is_sparse_rows(X):
        data_loss, grad_Q, grad_coef, grad_intercept = _streamed_log_loss_gradient(
            X, y, sample_weight, Q, coef, intercept
        )
    else:
        data_loss, grad_Q, grad_coef, grad_intercept = _log_loss_gradient(
            X, y, sample_weight, Q, coef, intercept, class_blocks, scratch
        )
    loss = data_loss
    if l2 > 0 and Q.device.type == "cpu" and not (torch.is_grad_enabled() and Q.requires_grad):
        return _add_numpy_penalty(loss, grad_Q, grad_coef, grad_intercept, Q, coef, l2,
                                  cross_weight, quadratic_weight)
    if l2 > 0:
        l2_Q = l2 * quadratic_weight
        loss = loss + 0.5 * (l2_Q * quadratic_penalty(Q, cross_weight) + l2 * coef.square().sum())
        grad_Q.add_(Q, alpha=l2_Q * cross_weight)
        if cross_weight != 1.0:
            diagonal = torch.diagonal(grad_Q, dim1=1, dim2=2)
            diagonal.add_(torch.diagonal(Q, dim1=1, dim2=2), alpha=l2_Q * (1.0 - cross_weight))
        grad_coef.add_(coef, alpha=l2)
    return loss, grad_Q, grad_coef, grad_intercept


def _add_numpy_penalty(loss, grad_Q, grad_coef, grad_intercept, Q, coef, l2, cross_weight,
                       quadratic_weight):
    """The penalty's value and gradient of :func:`quadratic_log_loss_gradient`, added in numpy to the
    CPU gradients' memory: the torch branch's arithmetic without its small operations' overhead."""
    Q_np, coef_np = Q.detach().numpy(), coef.detach().numpy()
    grad_Q_np, grad_coef_np = grad_Q.numpy(), grad_coef.numpy()
    diagonal = np.arange(Q_np.shape[-1])
    with np.errstate(all="ignore"):  # an overflow is the divergence guard's to report
        squares = np.vdot(Q_np, Q_np)
        if cross_weight != 1.0:
            on_diagonal = Q_np[:, diagonal, diagonal]
            squares = cross_weight * squares + (1.0 - cross_weight) * np.vdot(on_diagonal, on_diagonal)
        l2_Q = l2 * quadratic_weight
        penalty = 0.5 * (l2_Q * squares + l2 * np.vdot(coef_np, coef_np))
        grad_Q_np += (l2_Q * cross_weight) * Q_np
        if cross_weight != 1.0:
            grad_Q_np[:, diagonal, diagonal] += (l2_Q * (1.0 - cross_weight)) * on_diagonal
        grad_coef_np += l2 * coef_np
        return loss + float(penalty), grad_Q, grad_coef, grad_intercept


@functools.lru_cache(maxsize=8)
def _half_upper_mask(n_features, dtype):
    """The read-only ``d x d`` mask of :func:`_upper_halves`: 1 above the diagonal, 0.5 on it."""
    mask = np.triu(np.ones((n_features, n_features), dtype=dtype))
    np.fill_diagonal(mask, 0.5)
    mask.setflags(write=False)
    return mask


def _upper_halves(Q):
    """``U_k`` with ``x^T Q_k x = 2 x^T U_k x``: the upper triangle, its diagonal halved, in C order."""
    mask = _half_upper_mask(Q.shape[-1], Q.dtype)
    return np.ascontiguousarray(np.multiply(Q, mask))


# Row chunks of the CPU objective are summed in this many parts (or one per thread), each into
# its own gradient, added in a fixed order: the result does not depend on the thread count.
_CPU_PARTS = 16


class _ChunkTerms:
    """One part's sums over its row chunks: the loss and the gradients' data terms (SYRK grams upper triangle only)."""

    def __init__(self, n_scores, n_features, dtype):
        self.loss = 0.0
        self.grad_Q = np.zeros((n_scores, n_features, n_features), dtype=dtype)
        self.grad_coef = np.zeros((n_scores, n_features), dtype=dtype)
        self.grad_intercept = np.zeros(n_scores, dtype=dtype)


def _syrk_grams(n_features, class_blocks):
    """Whether the CPU grams are SYRKs on the class-sorted sign blocks (else the stacked GEMMs, :func:`_add_stacked_grams`)."""
    return class_blocks is not None and n_features > _GEMM_GRAM_MAX_FEATURES


def _add_chunk_terms(terms, rows, start, y, weight, positive, halves, coef, intercept,
                     class_blocks, buffer, columns=None, gram_buffer=None):
    """Add the rows ``start : start + len(rows)``'s loss and gradient terms to ``terms``.

    One pass while the chunk is in cache: ``x^T Q_k x = 2 x^T U_k x`` by an
    in-place TRMM (half the flops of ``X Q_k``), and the grams either as SYRKs
    ``A_+^T A_+ - A_-^T A_-`` on the class-sorted sign blocks or as the stacked
    GEMMs (:func:`_syrk_grams` chooses). The BLAS calls release the GIL, so parts
    run on threads. ``buffer`` is ``rows``-shaped scratch; ``columns`` the rows
    transposed (else transposed into ``buffer``); ``gram_buffer`` the stacked
    factor's. ``halves``, ``coef``, ``intercept`` are the computed scores'
    (:func:`_independent_scores`); the caller completes the last gram.
    """
    n_rows = rows.shape[0]
    stop = start + n_rows
    n_computed = halves.shape[0]
    n_scores = n_computed + (terms.grad_Q.shape[0] > n_computed)
    work = buffer[:n_rows]
    scores = np.empty((n_scores, n_rows), dtype=rows.dtype)
    computed = scores[:n_computed]
    for k in range(n_computed):
        if not halves[k].any():
            # Q_k = 0 (every fit's first evaluation, from Q_init="zeros"): no
            # product; the TRMMs were a third of optdigits' first evaluation
            computed[k] = 0.0
            continue
        np.copyto(work, rows)
        upper_product_in_place(halves[k], work)
        np.einsum("ij,ij->i", work, rows, out=computed[k])
    computed *= 2.0
    computed += coef @ rows.T
    computed += intercept[:, None]
    if n_computed < n_scores:
        np.negative(computed.sum(axis=0), out=scores[-1])
    with np.errstate(all="ignore"):  # an overflow is the divergence guard's to report
        loss, residuals = _residuals_by_score(
            scores, y[start:stop], weight[start:stop], np.arange(n_rows), positive[start:stop]
        )
    terms.loss += float(loss)
    terms.grad_coef += residuals @ rows
    terms.grad_intercept += residuals.sum(axis=1)
    if not _syrk_grams(rows.shape[1], class_blocks):
        if columns is None:
            # the chunk's rows transposed into the scores' scratch, free again
            columns = work.reshape(-1)[: rows.size].reshape(rows.shape[::-1])
            np.copyto(columns, rows.T)
        _add_stacked_grams(terms.grad_Q[:n_computed], rows, columns, residuals[:n_computed],
                           gram_buffer)
        return
    for k in range(n_computed):
        # the residual of score k is <= 0 exactly on the rows of class k
        # (binary: the single score's residual is negative on class 1)
        first, last = class_blocks[1 if n_scores == 1 else k]
        first, last = min(max(first, start), stop) - start, min(max(last, start), stop) - start
        np.multiply(rows, np.sqrt(np.abs(residuals[k]))[:, None], out=work)
        for begin, end, sign in ((0, first, 1.0), (last, n_rows, 1.0), (first, last, -1.0)):
            if end > begin:
                gram_update(terms.grad_Q[k], work[begin:end], sign)


def _add_stacked_grams(grams, rows, columns, residuals, buffer):
    """``grams[k] += X^T diag(r_k) X`` for every score ``k``: one GEMM per block of rows, the stacked
    factor ``[r_1 X_b^T; ...; r_K X_b^T]`` built in ``buffer`` (``columns``: ``rows`` transposed)."""
    n_scores, n_features = grams.shape[0], grams.shape[1]
    n_rows = rows.shape[0]
    stacked_grams = grams.reshape(n_scores * n_features, n_features)
    step = max(1, _GRAM_BLOCK_ELEMENTS // (n_scores * n_features))
    for begin in range(0, n_rows, step):
        end = min(begin + step, n_rows)
        factor = buffer[: n_scores * n_features * (end - begin)].reshape(
            n_scores, n_features, end - begin
        )
        np.multiply(columns[None, :, begin:end], residuals[:, None, begin:end], out=factor)
        stacked_grams += factor.reshape(n_scores * n_features, end - begin) @ rows[begin:end]


def _independent_scores(Q, coef, intercept):
    """The parameters of the scores that the CPU engine computes, for :func:`_add_chunk_terms`.

    One score: its own. ``K > 1`` (softmax): the first ``K - 1`` centred
    parameters ``Q_k - mean_j Q_j`` (and ``coef``, ``intercept``). Exact: the
    softmax does not change when every score of a sample moves by the same
    number, and the residuals sum to zero over ``k``, so the last score is minus
    the others' sum and so is its gram (:func:`_completed_grams`). One score
    product and one gram in ``K`` saved.

    Returns
    -------
    halves : ndarray of shape (n_computed, d, d)
        :func:`_upper_halves` of the computed scores' ``Q``.
    coef : ndarray of shape (n_computed, d)
    intercept : ndarray of shape (n_computed,)
    """
    if Q.shape[0] == 1:
        return _upper_halves(Q), coef, intercept
    centred = [block[:-1] - block.mean(axis=0) for block in (Q, coef, intercept)]
    return _upper_halves(centred[0]), np.ascontiguousarray(centred[1]), centred[2]


def _completed_grams(grams, n_computed):
    """Write the last gram as minus the sum of the computed ones (softmax loss, :func:`_independent_scores`), in place."""
    if n_computed < grams.shape[0]:
        np.negative(grams[:n_computed].sum(axis=0), out=grams[-1])
    return grams


def _symmetrised(grams):
    """Fill the lower triangles of ``grams`` (n_scores, d, d) from their upper ones, in place (SYRK grams hold only the upper one)."""
    lower = np.tril_indices(grams.shape[-1], -1)
    for gram in grams:
        gram[lower] = gram.T[lower]
    return grams


def _one_blas_thread(n_workers):
    """BLAS held at one thread (through the thread policy) while ``n_workers > 1`` threads call it:
    the parts of the rows are the parallelism, BLAS threads inside them gain little."""
    if n_workers <= 1:
        return contextlib.nullcontext()
    from .._foundation._threads import limit_threads  # (the foundation's thread policy)

    return limit_threads(None, blas=1)


def _scalar_tensor(value):
    """A 0-d tensor of a numpy scalar, cheaper than ``torch.as_tensor``."""
    return torch.from_numpy(np.asarray(value))


def _cpu_log_loss_gradient(X, y, sample_weight, Q, coef, intercept, class_blocks, scratch=None):
    """:func:`_log_loss_gradient` on CPU tensors: :func:`_numpy_log_loss_gradient`'s, as tensors."""
    loss, grad_Q, grad_coef, grad_intercept = _numpy_log_loss_gradient(
        X.numpy(), y.numpy(), sample_weight.numpy(), Q.detach().numpy(), coef.detach().numpy(),
        intercept.detach().numpy(), class_blocks, scratch,
    )
    return (
        _scalar_tensor(loss), torch.from_numpy(grad_Q), torch.from_numpy(grad_coef),
        torch.from_numpy(grad_intercept),
    )


def cpu_chunk_rows(n_features):
    """Rows per chunk of the CPU loss and gradient, about a million numbers.

    The packed objective reads the rows a chunk at a time, so its memory is
    the data plus a chunk's products per thread (what QLR's memory check counts).

    Parameters
    ----------
    n_features : int

    Returns
    -------
    n_rows : int
    """
    return max(1, _CPU_CHUNK_ELEMENTS // max(1, n_features))


def _numpy_log_loss_gradient(rows_all, y_np, weight_np, Q_np, coef_np, intercept_np,
                             class_blocks, scratch=None, *, symmetric=True):
    """The data part of the objective and its gradient through numpy and the BLAS, in row chunks.

    Numpy in and out (the loss a 0-d array of the rows' dtype). The chunks
    (:func:`_add_chunk_terms`) are grouped into at most ``_CPU_PARTS`` parts that
    torch's thread count of threads take in turn, each summed into its own
    gradient and the parts added in order: the same numbers on any thread count
    up to ``_CPU_PARTS``. ``scratch`` (a dict) keeps a chunk buffer per thread,
    and for GEMM grams a transposed copy of the rows (:func:`_transposed_rows`),
    from one call to the next. ``rows_all`` is an array or
    :class:`~skquad._foundation._rows.OrderedRows`. ``symmetric=False`` leaves
    GEMM grams symmetric only up to rounding, for a caller that averages the two
    triangles anyway (:class:`SymmetricPacking`'s gradient).
    """
    n_samples, n_features = rows_all.shape
    n_scores = Q_np.shape[0]
    dtype = rows_all.dtype
    if n_samples * n_features * n_features * n_scores <= _SMALL_PROBLEM_PRODUCT:
        return _small_log_loss_gradient(
            np.asarray(rows_all), y_np, weight_np, Q_np, coef_np, intercept_np)
    halves, coef_np, intercept_np = _independent_scores(Q_np, coef_np, intercept_np)
    step = cpu_chunk_rows(n_features)
    chunks = [(start, min(start + step, n_samples)) for start in range(0, n_samples, step)]
    n_threads = torch.get_num_threads()
    n_parts = min(len(chunks), max(_CPU_PARTS, n_threads))
    # part p's chunks end at round(p * len(chunks) / n_parts) (integers, cheaper than np.linspace)
    edges = [(2 * part * len(chunks) + n_parts) // (2 * n_parts) for part in range(n_parts + 1)]
    n_workers = max(1, min(n_threads, n_parts))
    # (a transposed copy of the rows pays off over calls that share ``scratch``)
    kept = scratch is not None
    scratch = {} if scratch is None else scratch
    stacked = not _syrk_grams(n_features, class_blocks)
    shape = (min(step, n_samples), n_features)
    # the stacked grams' factor, K d numbers per row of a block (_add_stacked_grams)
    gram_size = max(_GRAM_BLOCK_ELEMENTS, halves.shape[0] * n_features) if stacked else 0
    # rows gathered by chunks (OrderedRows): each chunk into a buffer of its own
    gathered = isinstance(rows_all, OrderedRows)
    buffers = scratch.get("rows")
    if not buffers or buffers[0][0].shape != shape or buffers[0][0].dtype != dtype or (
        buffers[0][1].size < gram_size
    ) or (buffers[0][2] is None) == gathered:
        buffers = scratch["rows"] = []
    while len(buffers) < n_workers:
        buffers.append((np.empty(shape, dtype=dtype), np.empty(gram_size, dtype=dtype),
                        np.empty(shape, dtype=dtype) if gathered else None))
    free = queue.SimpleQueue()
    for buffer in buffers[:n_workers]:
        free.put(buffer)
    labels = scratch.get("positive")
    if labels is None or labels[0] is not y_np or labels[1].dtype != dtype:
        # the binary loss's labels as numbers, kept while the caller's y is the same array
        labels = scratch["positive"] = (y_np, (y_np == 1).astype(dtype))
    positive = labels[1]
    columns = _transposed_rows(rows_all, scratch) if stacked and kept else None

    def part_terms(part):
        terms = _ChunkTerms(n_scores, n_features, dtype)
        buffers = free.get()
        buffer, gram_buffer, row_buffer = buffers
        try:
            for start, stop in chunks[edges[part] : edges[part + 1]]:
                rows = rows_all[start:stop] if row_buffer is None else rows_all.gather(
                    start, stop, out=row_buffer[: stop - start])
                _add_chunk_terms(
                    terms, rows, start, y_np, weight_np, positive, halves,
                    coef_np, intercept_np, class_blocks, buffer,
                    None if columns is None else columns[:, start:stop], gram_buffer,
                )
        finally:
            free.put(buffers)
        return terms

    def in_order(parts):
        total = next(parts)
        for terms in parts:
            total.loss += terms.loss
            total.grad_Q += terms.grad_Q
            total.grad_coef += terms.grad_coef
            total.grad_intercept += terms.grad_intercept
        return total

    with _one_blas_thread(n_workers):
        if n_workers == 1:
            total = in_order(part_terms(part) for part in range(n_parts))
        else:
            with concurrent.futures.ThreadPoolExecutor(max_workers=n_workers) as pool:
                total = in_order(pool.map(part_terms, range(n_parts)))
    _completed_grams(total.grad_Q, halves.shape[0])
    return (
        np.asarray(total.loss, dtype=dtype),
        _symmetrised(total.grad_Q)
        if symmetric or _syrk_grams(n_features, class_blocks) else total.grad_Q,
        total.grad_coef, total.grad_intercept,
    )


def _transposed_rows(rows_all, scratch):
    """``rows_all.T`` in C order, kept in ``scratch`` for the fit; None (each chunk transposed where
    used) beyond ``_TRANSPOSED_COPY_BYTES``, half the available memory, or for OrderedRows."""
    cached = scratch.get("columns")
    if cached is None or cached[0] is not rows_all:
        copy = None
        if not isinstance(rows_all, OrderedRows) and rows_all.nbytes <= _TRANSPOSED_COPY_BYTES \
                and _copy_fits_in_memory(rows_all.nbytes):
            copy = np.ascontiguousarray(rows_all.T)
        cached = scratch["columns"] = (rows_all, copy)
    return cached[1]


def _small_log_loss_gradient(rows, y, sample_weight, Q, coef, intercept):
    """:func:`_numpy_log_loss_gradient` for small problems: one GEMM for all scores' ``X Q_k``
    and one for all their grams, at twice the flops of TRMM and SYRK per score but
    in two BLAS calls, where the calls' overhead outweighs their arithmetic."""
    n_samples, n_features = rows.shape
    n_scores = Q.shape[0]
    # [X Q_1 | ... | X Q_K] in one product
    stacked = rows @ Q.transpose(1, 0, 2).reshape(n_features, n_scores * n_features)
    # scores as (n_scores, n) rows, the layout of the other CPU paths' residuals
    scores = np.einsum("nkd,nd->kn", stacked.reshape(n_samples, n_scores, n_features), rows)
    scores += coef @ rows.T
    scores += intercept[:, None]
    with np.errstate(all="ignore"):  # an overflow is the divergence guard's to report
        data_loss, residuals = _residuals_by_score(
            scores, y, sample_weight, np.arange(n_samples), (y == 1).astype(rows.dtype)
        )
    # rows k * d + i of the product: sum_n r_kn x_ni x_n, the grams of all scores at once
    # (an explicit width: a Dask fit's block may have no rows)
    weighted = (residuals.T[:, :, None] * rows[:, None, :]).reshape(n_samples, n_scores * n_features)
    grad_Q = (weighted.T @ rows).reshape(n_scores, n_features, n_features)
    grad_coef = residuals @ rows
    return np.asarray(data_loss), grad_Q, grad_coef, residuals.sum(axis=1)


def _log_loss_gradient(X, y, sample_weight, Q, coef, intercept, class_blocks=None, scratch=None):
    """Data part of :func:`quadratic_log_loss_gradient` on dense rows."""
    if X.device.type == "cpu" and not (torch.is_grad_enabled() and Q.requires_grad):
        return _cpu_log_loss_gradient(X, y, sample_weight, Q, coef, intercept, class_blocks)
    n_scores = Q.shape[0]
    scores = quadratic_form_scores(X, Q, coef, intercept, scratch=scratch)
    data_loss, residuals = log_loss_residuals(scores, y, sample_weight)
    grads = []
    for k in range(n_scores):
        negative_rows = None
        if class_blocks is not None:
            # the residual of score k is <= 0 exactly on the rows of class k
            # (binary: the single score's residual is negative on class 1)
            negative_rows = class_blocks[1 if n_scores == 1 else k]
        grads.append(
            weighted_gram(X, residuals[:, k], negative_rows=negative_rows, scratch=scratch)
        )
    return data_loss, torch.stack(grads), residuals.T @ X, residuals.sum(0)


def _streamed_log_loss_gradient(X, y, sample_weight, Q, coef, intercept):
    """Data part of :func:`quadratic_log_loss_gradient` summed over dense row chunks."""
    totals = None
    for start, stop, rows in X.dense_chunks():
        part = _log_loss_gradient(
            rows, y[start:stop], sample_weight[start:stop], Q, coef, intercept
        )
        totals = list(part) if totals is None else [a + b for a, b in zip(totals, part)]
    return tuple(totals)


def quadratic_penalty(Q, cross_weight=1.0):
    """``sum_k sum_i Q_kii^2 + cross_weight * sum_k sum_{i != j} Q_kij^2``.

    ``cross_weight=1`` is ``||Q||_F^2`` (invariant under rotations of the
    features). ``cross_weight=2`` puts the same weight on every coefficient of
    the degree-2 features: the coefficient of ``x_i x_j`` (``i < j``) is
    ``2 Q_ij``, and ``(2 Q_ij)^2 = 2 (Q_ij^2 + Q_ji^2)``. That is the penalty
    of ``PolynomialFeatures(2)`` followed by ``LogisticRegression``.
    """
    total = Q.square().sum()
    if cross_weight == 1.0:
        return total
    diagonal = torch.diagonal(Q, dim1=-2, dim2=-1).square().sum()
    return cross_weight * total + (1.0 - cross_weight) * diagonal


def low_rank_log_loss(
    X, y, sample_weight, vectors, scales, coef, intercept, l2, *, cross_weight=1.0,
    quadratic_weight=1.0,
):
    """Objective ``J`` with ``Q_k = V_k diag(s_k) V_k^T`` (differentiate with autograd).

    The penalty on ``Q_k`` is computed from the factors in ``O(d r^2)``, so a
    low-rank model and a full one are penalised alike (see
    :func:`quadratic_penalty` for ``cross_weight``; ``quadratic_weight`` multiplies
    it, as in :func:`quadratic_log_loss_gradient`). Non-convex in ``(V, s)``.
    """
    scores = low_rank_quadratic_scores(X, vectors, scales, coef, intercept)
    data_loss = log_loss(scores, y, sample_weight)
    if l2 > 0:
        penalty_Q = cross_weight * low_rank_frobenius_sq(vectors, scales)
        if cross_weight != 1.0:
            # diag(V diag(s) V^T)_i = sum_j s_j V_ij^2
            diagonal = torch.einsum("kij,kj->ki", vectors.square(), scales)
            penalty_Q = penalty_Q + (1.0 - cross_weight) * diagonal.square().sum()
        data_loss = data_loss + 0.5 * l2 * (quadratic_weight * penalty_Q + coef.square().sum())
    return data_loss


class SymmetricPacking:
    """The packed coordinates of symmetric ``d x d`` matrices.

    The packed vector holds the ``d(d+1)/2`` entries ``i <= j`` (row-major
    upper triangle): ``v_ii = Q_ii`` and ``v_ij = sqrt(2) Q_ij`` for ``i < j``.
    With that scale the packing is an isometry of the symmetric matrices
    (``||v||^2 = ||Q||_F^2``), so L-BFGS on ``v`` takes the steps it takes on
    the full matrix (whose iterates stay symmetric: every gradient is), on
    half the numbers.

    The index maps are built once; CPU tensors are packed and unpacked through
    numpy (a gather each: torch's advanced indexing cost more than scipy's
    work saved on ionosphere's 34 features), other devices' by torch's
    indexing (``_pack_torch``, ``_unpack_torch``, ``_gradient_torch``).

    ``allowed`` (a symmetric boolean ``d x d`` matrix) packs only the
    entries it allows (interaction constraints): the others are no
    coordinates at all, so every solver on the packed vector keeps them at
    zero exactly, and the packed work falls with the allowed entries.

    Attributes
    ----------
    rows, cols : ndarray of shape (n_packed,)
        The packed entries' positions, ``rows <= cols`` (``n_packed =
        d(d+1)/2`` without ``allowed``).
    scale : ndarray of shape (n_packed,), float64
        1 on the diagonal, ``sqrt(2)`` off it.
    restricted : bool
        Whether some entries are not packed (``unpack`` writes zeros there).
    """

    def __init__(self, n_features, allowed=None):
        d = int(n_features)
        self.n_features = d
        self.rows, self.cols = np.triu_indices(d)
        self.restricted = allowed is not None
        if self.restricted:
            keep = np.asarray(allowed, dtype=bool)[self.rows, self.cols]
            self.rows, self.cols = self.rows[keep], self.cols[keep]
        self.scale = np.where(self.rows == self.cols, 1.0, np.sqrt(2.0))
        self._inverse = 1.0 / self.scale
        self._half = 0.5 * self.scale
        self._upper = self.rows * d + self.cols
        self._lower = self.cols * d + self.rows
        # the packed index of every full entry (i, j) and (j, i); entries not
        # packed read index rows.size, a zero appended by ``_with_zero``
        self._full = np.full(d * d, self.rows.size, dtype=np.intp)
        self._full[self._upper] = np.arange(self.rows.size)
        self._full[self._lower] = np.arange(self.rows.size)
        self._tensors = {}
        # packed_penalty_weight's weights at l2 = 1, by (n_scores, cross_weight, fit_intercept,
        # quadratic_weight)
        self.penalty_patterns = {}

    def _with_zero(self, entries):
        """``entries`` (n_scores, n_packed) with a zero column appended when entries are not packed."""
        if not self.restricted:
            return entries
        if isinstance(entries, torch.Tensor):
            return torch.cat([entries, entries.new_zeros(entries.shape[0], 1)], dim=1)
        return np.concatenate([entries, np.zeros((entries.shape[0], 1), entries.dtype)], axis=1)

    def full_matrix(self, entries):
        """The ``(n_scores, d, d)`` numpy matrices of packed entries (already divided by ``scale``)."""
        d = self.n_features
        return np.take(self._with_zero(entries), self._full, axis=1).reshape(-1, d, d)

    def _indices(self, device):
        key = str(device)
        if key not in self._tensors:
            as_t = lambda a: torch.as_tensor(a, device=device)
            self._tensors[key] = (as_t(self._upper), as_t(self._lower), as_t(self._full))
        return self._tensors[key]

    def _numbers(self, values, like):
        return torch.as_tensor(values, device=like.device, dtype=like.dtype)

    def pack(self, Q):
        """``v`` of shape ``(n_scores, d(d+1)/2)`` of symmetric ``Q`` (n_scores, d, d)."""
        flat = Q.reshape(Q.shape[0], -1)
        if Q.device.type == "cpu":
            values = flat.detach().numpy()
            return torch.from_numpy(values[:, self._upper] * self.scale.astype(values.dtype))
        return self._pack_torch(flat)

    def _pack_torch(self, flat):
        upper, _, _ = self._indices(flat.device)
        return flat[:, upper] * self._numbers(self.scale, flat)

    def unpack(self, v):
        """The symmetric ``Q`` of shape ``(n_scores, d, d)`` of packed ``v``."""
        d = self.n_features
        if v.device.type == "cpu":
            entries = v.detach().numpy() * self._inverse.astype(v.numpy().dtype)
            return torch.from_numpy(self._with_zero(entries)[:, self._full].reshape(v.shape[0], d, d))
        return self._unpack_torch(v)

    def _unpack_torch(self, v):
        _, _, full = self._indices(v.device)
        entries = self._with_zero(v * self._numbers(self._inverse, v))
        return entries[:, full].reshape(v.shape[0], self.n_features, self.n_features)

    def gradient(self, grad_Q):
        """The gradient with respect to ``v`` of a gradient ``G`` with respect to symmetric ``Q``.

        ``dJ/dv_ij = (G_ij + G_ji) / sqrt(2)``, ``dJ/dv_ii = G_ii``: the
        gradient test reads the full matrix's entries again by dividing by
        ``scale``.
        """
        flat = grad_Q.reshape(grad_Q.shape[0], -1)
        if grad_Q.device.type == "cpu":
            G = flat.numpy()
            packed = (G[:, self._upper] + G[:, self._lower]) * self._half.astype(G.dtype)
            return torch.from_numpy(packed)
        return self._gradient_torch(flat)

    def _gradient_torch(self, flat):
        upper, lower, _ = self._indices(flat.device)
        return (flat[:, upper] + flat[:, lower]) * self._numbers(self._half, flat)


def packed_penalty_weight(packing, n_scores, l2, *, cross_weight=1.0, fit_intercept=True,
                          quadratic_weight=1.0):
    """The penalty of :func:`packed_logistic_objective` as weights on ``theta``.

    The penalty is ``0.5 * sum(weight * theta**2)`` and its gradient
    ``weight * theta``, with ``weight`` ``l2`` on the diagonal entries of
    each packed ``Q_k`` and on ``coef``, ``l2 * cross_weight`` off the
    diagonal (the packing is an isometry), 0 on the intercepts (present when
    ``fit_intercept``); the entries of ``Q`` times ``quadratic_weight``.
    """
    key = (int(n_scores), float(cross_weight), bool(fit_intercept), float(quadratic_weight))
    if key not in packing.penalty_patterns:  # (a path's fits differ by l2 only)
        packing.penalty_patterns[key] = np.concatenate([
            np.tile(quadratic_weight * np.where(packing.rows == packing.cols, 1.0, cross_weight),
                    n_scores),
            np.ones(n_scores * packing.n_features),
            np.zeros(n_scores if fit_intercept else 0),
        ])
    return packing.penalty_patterns[key] * l2


def _null_model_step(moments, packing, n_scores, memory, fit_intercept):
    """A regularisation path's first start: the intercepts-only optimum, then a Newton-like step.

    The intercepts-only model's optimum is the log of the classes' weights
    (binary: their log-odds; centred for the softmax). From it the penalised
    parameters take the step ``-memory.scale() * gradient`` (their optimum
    to first order as ``C -> 0``); every row has the same probabilities
    there, so the intercepts' Newton step for the step's change of the scores
    subtracts its weighted mean. ``moments``: :func:`_null_model_moments`.
    """
    theta = np.zeros(memory.weight.shape[0])
    scores = np.zeros(n_scores)
    if fit_intercept:
        logs = np.log(np.maximum(moments.totals, np.finfo(np.float64).tiny))
        scores = np.atleast_1d(logs[1] - logs[0] if n_scores == 1 else logs - logs.mean())
        theta[-n_scores:] = scores
    gradient = _constant_scores_gradient(moments, packing, n_scores, scores)
    if not fit_intercept:
        gradient = gradient[:-n_scores]
    penalised = memory.weight > 0
    theta[penalised] -= (memory.scale() * (gradient + memory.weight * theta))[penalised]
    if fit_intercept:
        n_packed = n_scores * packing.rows.size
        Q = packing.full_matrix(theta[:n_packed].reshape(n_scores, -1) * packing._inverse)
        coef = theta[n_packed:-n_scores].reshape(n_scores, -1)
        theta[-n_scores:] -= (np.einsum("kab,ab->k", Q, moments.seconds.sum(axis=0))
                              + coef @ moments.means.sum(axis=0))
    return theta


@dataclasses.dataclass
class _NullModelMoments:
    """Per class: the weight, the weighted sums of ``x`` and ``x x^T``; ``fourth``: ``E_w[x_a^2 x_b^2]``."""

    totals: np.ndarray
    means: np.ndarray
    seconds: np.ndarray
    fourth: np.ndarray


def _null_model_moments(rows, labels, weights, n_scores):
    """What the path's first start reads of the rows (weights summing to 1), in one float64 pass by chunks."""
    weights = np.asarray(weights, dtype=np.float64) / float(np.sum(weights))
    n_classes, d = max(n_scores, 2), rows.shape[1]
    moments = _NullModelMoments(np.zeros(n_classes), np.zeros((n_classes, d)),
                                np.zeros((n_classes, d, d)), np.zeros((d, d)))
    for start, stop, chunk in row_chunks(rows, np.float64):
        weight, classes = weights[start:stop], labels[start:stop]
        roots = np.sqrt(weight)[:, None]
        for c in range(n_classes):
            members = np.flatnonzero(classes == c)
            own = chunk[members]  # (a gathered copy)
            moments.totals[c] += weight[members].sum()
            moments.means[c] += weight[members] @ own
            own *= roots[members]
            moments.seconds[c] += own.T @ own
        squares = chunk * chunk * roots
        moments.fourth += squares.T @ squares
    return moments


def _constant_scores_gradient(moments, packing, n_scores, scores):
    """The data term's gradient (``theta``'s layout) where every row scores ``scores``:
    ``p_k M - M_k`` from the classes' moments ``M_k`` (``M`` their sum)."""
    if n_scores == 1:
        probabilities, own = 1.0 / (1.0 + np.exp(-scores)), slice(1, 2)
    else:
        exp = np.exp(scores - scores.max())
        probabilities, own = exp / exp.sum(), slice(0, n_scores)
    blocks = [(probabilities.reshape((-1,) + (1,) * (moment.ndim - 1)) * moment.sum(axis=0)
               - moment[own]) for moment in (moments.seconds, moments.means, moments.totals)]
    packed = blocks[0][:, packing.rows, packing.cols] * packing.scale
    return np.concatenate([packed.ravel(), blocks[1].ravel(), blocks[2]])


def _null_model_curvature(moments, packing, n_scores, fit_intercept):
    """The diagonal of the data term's Hessian at the intercepts-only model, in ``theta``'s layout.

    Entry of score ``k`` for a feature ``phi`` (``x_a x_b`` times its packed factor,
    ``x_a``, or 1): ``p_k (1 - p_k) E_w[phi^2]``, a Jacobi model of the curvature
    (see :meth:`PathMemory.scale`). Binary: ``p`` is the positive class's.
    """
    p = moments.totals
    spread = (p * (1.0 - p))[-n_scores:]
    second = np.diagonal(moments.seconds.sum(axis=0))  # E_w[x_a^2]
    factor = packing._inverse * np.where(packing.rows == packing.cols, 1.0, 2.0)
    blocks = [np.outer(spread, factor**2 * moments.fourth[packing.rows, packing.cols]),
              np.outer(spread, second)]
    return np.concatenate([block.ravel() for block in blocks] + ([spread] if fit_intercept else []))


def packed_logistic_objective(X, y, sample_weight, packing, n_scores, l2, *, cross_weight=1.0,
                              quadratic_weight=1.0, fit_intercept=True, class_blocks=None,
                              cache=None):
    """The objective of :func:`quadratic_log_loss_gradient` on a flat packed vector, in numpy.

    ``theta`` is ``[v_1 .. v_K, coef_1 .. coef_K, intercept]`` (float64; the
    intercepts only when ``fit_intercept``): the packed ``Q_k`` of
    ``packing`` (:class:`SymmetricPacking`), the layout of a packed
    :class:`QuadraticScores`' trainable parameters. In the packed coordinates
    the penalty is diagonal (``||v||^2 = ||Q||_F^2``: weight 1 on ``v_ii``,
    ``cross_weight`` on ``v_ij``), so value and gradient are one product each.

    For full-batch L-BFGS on the CPU: the same numbers as the module's path
    (the data products are the same functions), without its per-evaluation
    torch operations, which cost more than the products on small problems.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Rows in the computation dtype; the parameters are cast to it.
    y : ndarray of shape (n_samples,), int64
    sample_weight : ndarray of shape (n_samples,)
        In ``X``'s dtype.
    packing : SymmetricPacking
    n_scores : int
    l2, cross_weight, quadratic_weight, class_blocks
        As in :func:`quadratic_log_loss_gradient`.
    fit_intercept : bool, default=True
        False: no intercepts in ``theta`` (they stay 0).

    Returns
    -------
    objective : callable
        ``objective(theta) -> (loss, gradient)``: a float and a new float64
        ndarray of ``theta``'s shape.
    """
    n_features = X.shape[1]
    dtype = X.dtype
    n_packed = n_scores * packing.rows.size
    n_coef = n_scores * n_features
    penalty_weight = packed_penalty_weight(
        packing, n_scores, l2, cross_weight=cross_weight, fit_intercept=fit_intercept,
        quadratic_weight=quadratic_weight,
    )
    width = packing.rows.size + n_features + 1
    if X.shape[0] * width <= _DESIGN_MATRIX_ELEMENTS or _pairs_are_cheaper(packing, n_scores):
        return _design_matrix_objective(
            X, y, sample_weight, packing, n_scores, penalty_weight, fit_intercept, cache
        )
    zeros = np.zeros(n_scores, dtype=dtype)
    inverse = packing._inverse.astype(dtype)
    # (the fits that share a cache share the buffers and the transposed rows)
    scratch = {} if cache is None else cache.setdefault(("scratch", dtype.str), {})

    def objective(theta):
        params = theta.astype(dtype, copy=False)
        entries = params[:n_packed].reshape(n_scores, -1) * inverse
        Q = packing.full_matrix(entries)
        coef = params[n_packed : n_packed + n_coef].reshape(n_scores, n_features)
        intercept = params[n_packed + n_coef :] if fit_intercept else zeros
        data_loss, grad_Q, grad_coef, grad_intercept = _numpy_log_loss_gradient(
            X, y, sample_weight, Q, coef, np.ascontiguousarray(intercept), class_blocks, scratch,
            symmetric=False,
        )
        G = grad_Q.reshape(n_scores, -1)
        gradient = np.empty(theta.shape[0])
        packed_gradient = gradient[:n_packed].reshape(n_scores, -1)
        np.add(np.take(G, packing._upper, axis=1), np.take(G, packing._lower, axis=1),
               out=packed_gradient)
        packed_gradient *= packing._half
        gradient[n_packed : n_packed + n_coef] = grad_coef.ravel()
        if fit_intercept:
            gradient[n_packed + n_coef :] = grad_intercept
        weighted = penalty_weight * theta
        gradient += weighted
        return float(data_loss) + 0.5 * float(weighted @ theta), gradient

    return objective


def _pairs_are_cheaper(packing, n_scores):
    """Whether a restricted packing's streamed design (``n_pairs + d + 1`` multiply-adds each way per
    score and row) beats the matrix form's ``3 K d^2`` at ``_PAIRS_RATE`` times the rate."""
    if not packing.restricted:
        return False
    width = packing.rows.size + packing.n_features + 1
    return _PAIRS_RATE * width * (1 + 2 * n_scores) <= 3 * n_scores * packing.n_features**2


def _centred_scores(theta, n_scores, n_packed, n_coef):
    """``theta`` with the mean over the scores subtracted from each parameter, for the softmax loss.

    The softmax loss does not change when one function is added to every score,
    and the penalty is smallest when the scores' parameters sum to zero: a float32
    iterate drifts off that by rounding, and centring it lowers the objective. Each
    block ``[v_1..v_K]``, ``[coef_1..coef_K]``, ``[b_1..b_K]`` is centred over its ``K`` rows.
    """
    centred = theta.copy()
    for block in np.split(centred, [n_packed, n_packed + n_coef]):
        if block.size:
            rows = block.reshape(n_scores, -1)  # a view: centred in place
            rows -= rows.mean(axis=0)
    return centred


# Column magnitudes whose squares and their products stay far inside
# float32's normal range (1e-38 to 3e38): a float32 twin of the objective
# computes on such data what float64 does, to float32's precision.
_FLOAT32_MAGNITUDES = (1e-8, 1e8)


def column_magnitudes(X):
    """The largest ``|x_ij|`` of each column, by two reductions (no ``n x d`` temporary)."""
    return np.maximum(X.max(axis=0, initial=0.0), -X.min(axis=0, initial=0.0))


def _row_largest(X):
    """``max(1, max_j |x_ij|)`` of each row."""
    return np.maximum(X.max(axis=1, initial=1.0), -X.min(axis=1, initial=-1.0))


def weighted_row_scale(X, sample_weight):
    """``sum_i s_i max(1, max_j x_ij^2)``: summed over row blocks, the input of :func:`float32_twin`."""
    return float(sample_weight @ np.square(_row_largest(X)))


def _twin_scales(rows, weights):
    """:func:`column_magnitudes` and :func:`weighted_row_scale` of the rows, a chunk at a time (no copy)."""
    magnitudes = np.zeros(rows.shape[1], dtype=rows.dtype)
    largest = np.empty(rows.shape[0], dtype=rows.dtype)
    for start, stop, chunk in row_chunks(rows):
        np.maximum(magnitudes, column_magnitudes(chunk), out=magnitudes)
        largest[start:stop] = _row_largest(chunk)
    return magnitudes, float(weights @ np.square(largest))


def _float32_inputs(rows, weights, n_scores, packing, cache):
    """``(twin attributes, float32 rows, float32 weights)`` of a float32 twin, kept in ``cache``; None
    where :func:`float32_twin` declines or the copy does not fit in memory."""
    if "float32" not in cache:
        twin = float32_twin(*_twin_scales(rows, weights), n_scores, packing)
        cache["float32"] = None if twin is None or not _copy_fits_in_memory(rows.nbytes // 2) \
            else (twin, np.asarray(rows, dtype=np.float32), weights.astype(np.float32))
    return cache["float32"]


def _copy_fits_in_memory(n_bytes):
    """Whether an optional copy of ``n_bytes`` leaves at least as much again of the available memory."""
    available = available_memory()
    return available is None or 2 * n_bytes <= available


def float32_twin(magnitudes, row_scale, n_scores, packing):
    """What ``minimize_lbfgs`` needs of a float32 twin of :func:`packed_logistic_objective`, or None.

    For a float64 fit on data whose nonzero column ``magnitudes`` (the
    largest ``|x_ij|`` of each) lie in ``_FLOAT32_MAGNITUDES``: a dict of
    the twin's attributes, ``gradient_floor`` and, for the softmax loss,
    ``settle`` (``_centred_scores``). None where float32 would overflow
    or flush the data, which the fit then leaves to float64 throughout.

    The floor: a gradient entry of ``Q_k`` is ``sum_i r_ik x_ij x_il`` with
    ``|r_ik| <= s_i`` (weights summing to 1), so its terms sum in absolute
    value to at most ``row_scale = sum_i s_i max(1, max_j x_ij^2)``
    (:func:`weighted_row_scale`; the 1 for the linear and intercept
    entries), and float32 rounds each product and partial sum (and the
    residuals, through the scores) at ``eps32`` relative: the floor is
    ``eps32 * row_scale``, below which a float32 gradient test or line
    search reads rounding. It is an estimate for the switch, not a bound
    that the fit relies on (every fit ends on a float64 test); measured at
    the optimum and at half of it, the float32 gradient's error stays a
    small fraction of it (rounding errors partly cancel).

    Parameters
    ----------
    magnitudes : array-like of shape (n_features,)
        The largest ``|x_ij|`` of each column (:func:`column_magnitudes`).
    row_scale : float
        :func:`weighted_row_scale` of the rows, with weights summing to 1.
    n_scores : int
    packing : SymmetricPacking

    Returns
    -------
    twin : dict or None
        ``{"gradient_floor": float}``, with ``"settle": callable`` when
        ``n_scores > 1``.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    magnitudes = magnitudes[magnitudes > 0]
    low, high = _FLOAT32_MAGNITUDES
    if not np.all((magnitudes >= low) & (magnitudes <= high)):
        return None
    twin = {"gradient_floor": float(np.finfo(np.float32).eps) * float(row_scale)}
    if n_scores > 1:
        n_packed, n_coef = n_scores * packing.rows.size, n_scores * packing.n_features
        twin["settle"] = lambda theta: _centred_scores(theta, n_scores, n_packed, n_coef)
    return twin


def _write_design(columns, packing, out, fit_intercept):
    """The transposed design of :func:`_design_matrix_objective` of rows given as ``columns`` (d, m)."""
    n_pairs, n_features = packing.rows.size, columns.shape[0]
    write_pair_products(columns, out[:n_pairs], (packing.rows, packing.cols) if packing.restricted else None)
    out[:n_pairs] *= packing.scale.astype(out.dtype)[:, None]
    out[n_pairs : n_pairs + n_features] = columns
    if fit_intercept:
        out[-1] = 1.0
    return out


def _design_matrix_objective(X, y, sample_weight, packing, n_scores, penalty_weight,
                             fit_intercept, cache=None):
    """:func:`packed_logistic_objective` on the explicit degree-2 design matrix.

    Columns ``sqrt(2)^[i<j] x_i x_j`` (the packing's pairs), ``x`` and 1: logistic
    regression on rescaled ``PolynomialFeatures(2)`` columns, one product each way. A
    design of at most ``_DESIGN_MATRIX_ELEMENTS`` numbers is built once; a larger one
    is rebuilt a row chunk at a time in every evaluation.
    """
    n_samples, n_features = X.shape
    n_pairs = packing.rows.size
    width = n_pairs + n_features + int(bool(fit_intercept))
    # theta's blocks (all v_k, all coef_k, all b_k) as rows of (n_scores, width)
    blocks = np.concatenate(
        [
            np.arange(n_scores * n_pairs).reshape(n_scores, n_pairs),
            n_scores * n_pairs + np.arange(n_scores * n_features).reshape(n_scores, n_features),
            n_scores * (n_pairs + n_features) + np.arange(n_scores).reshape(n_scores, 1),
        ],
        axis=1,
    )[:, :width]
    gather = blocks.ravel()
    order = np.empty_like(gather)
    order[gather] = np.arange(gather.size)  # flat position -> row-major (score, column)
    step = max(1, _DESIGN_MATRIX_ELEMENTS // width)
    chunks = [(start, min(start + step, n_samples)) for start in range(0, n_samples, step)]
    positive = (y == 1).astype(X.dtype)
    # one chunk: built once (its transpose, one contiguous row per feature)
    kept = None
    key = ("design", X.dtype.str, bool(fit_intercept))
    if len(chunks) <= 1:
        kept = None if cache is None else cache.get(key)
        if kept is None:
            kept = _write_design(np.ascontiguousarray(np.asarray(X).T), packing,
                                 np.empty((width, n_samples), dtype=X.dtype), fit_intercept)
        if cache is not None:
            cache[key] = kept
    buffer = None if kept is not None else np.empty((width, step), dtype=X.dtype)

    def objective(theta):
        weights = theta[gather].astype(X.dtype, copy=False).reshape(n_scores, -1)
        loss, gradient = 0.0, np.zeros((n_scores, width), dtype=X.dtype)
        for start, stop in chunks:
            design_T = kept if kept is not None else _write_design(
                np.ascontiguousarray(X[start:stop].T), packing, buffer[:, : stop - start],
                fit_intercept,
            )
            scores = weights @ design_T
            with np.errstate(all="ignore"):  # an overflow is the divergence guard's to report
                part, residuals = _residuals_by_score(
                    scores, y[start:stop], sample_weight[start:stop],
                    np.arange(stop - start), positive[start:stop],
                )
            loss += part
            gradient += residuals @ design_T.T
        gradient = gradient.ravel()[order].astype(np.float64, copy=False)
        weighted = penalty_weight * theta
        gradient += weighted
        return float(loss) + 0.5 * float(weighted @ theta), gradient

    return objective


def _residuals_by_score(scores, y, weight, samples, positive):
    """The loss and residuals of scores laid out ``(n_scores, n)``, in numpy (torch's overhead
    dominates small problems; the softmax's reductions run across contiguous rows)."""
    if scores.shape[0] == 1:
        # one exp for both, e = exp(-|z|): softplus(s) = max(s, 0) + log1p(e) (s = -z on
        # class 1, z on class 0) and the sigmoid 1 / (1 + e) or e / (1 + e), without overflow
        z = scores[0]
        e = np.exp(-np.abs(z))
        softplus = np.where(positive > 0, -z, z)
        np.maximum(softplus, 0.0, out=softplus)
        softplus += np.log1p(e)
        loss = weight @ softplus
        residuals = np.where(z >= 0, 1.0, e).astype(z.dtype, copy=False)
        e += 1.0
        residuals /= e
        residuals -= positive
        residuals *= weight
        return loss, residuals[None, :]
    largest = np.maximum.reduce(scores, axis=0)
    shifted = scores - largest
    proba = np.exp(shifted)
    normaliser = np.add.reduce(proba, axis=0)
    loss = weight @ (np.log(normaliser) - shifted[y, samples])
    proba /= normaliser
    proba[y, samples] -= 1.0
    proba *= weight
    return loss, proba


class QuadraticScores(torch.nn.Module):
    """The class scores of quadratic logistic regression as a torch module.

    Full ``Q`` (parameters ``Q``, ``coef``, ``intercept``) or low rank
    ``Q_k = V_k diag(s_k) V_k^T`` (parameters ``vectors``, ``scales``,
    ``coef``, ``intercept``). ``forward(X)`` gives the ``(n, n_scores)``
    scores, in row chunks of bounded scratch memory for a full ``Q``.

    Parameters
    ----------
    tensors : list of Tensor
        ``[Q, coef, intercept]`` or ``[vectors, scales, coef, intercept]``.
    fit_intercept : bool, default=True
        False freezes ``intercept`` (``requires_grad=False``).
    packed : bool, default=False
        Full ``Q`` only: hold each ``Q_k`` as its packed upper triangle
        ``Q_packed`` (:class:`SymmetricPacking`), ``d(d+1)/2`` numbers instead
        of ``d^2``. For full-batch L-BFGS: the same iterates as on the full
        matrices, at half scipy's per-iteration work (which grows with the
        number of parameters). ``tensors()`` still returns the full ``Q``;
        ``forward`` unpacks it without autograd (the packed module is trained
        through :func:`quadratic_logistic_loss_and_gradient`'s closed form).
    allowed : ndarray of shape (d, d), bool, optional
        Full ``Q`` only: the entries that may be nonzero (interaction
        constraints). Packed, the others are not parameters; unpacked, their
        gradient is zeroed (``Q``'s start must be zero there).
    """

    def __init__(self, tensors, fit_intercept=True, packed=False, allowed=None):
        super().__init__()
        self.low_rank = len(tensors) == 4
        self.packed = bool(packed) and not self.low_rank
        self.allowed = None if allowed is None or self.low_rank else torch.as_tensor(allowed)
        names = ("vectors", "scales", "coef", "intercept") if self.low_rank else (
            "Q_packed" if self.packed else "Q", "coef", "intercept"
        )
        if self.packed:
            self.packing = SymmetricPacking(tensors[0].shape[-1], allowed)
            tensors = [self.packing.pack(tensors[0])] + list(tensors[1:])
        for name, tensor in zip(names, tensors):
            trainable = name != "intercept" or fit_intercept
            setattr(self, name, torch.nn.Parameter(tensor.clone(), requires_grad=trainable))
        self.names = names

    def assign(self, tensors):
        """Set the parameters in place to ``tensors`` (constructor order, full ``Q``)."""
        if self.packed:
            tensors = [self.packing.pack(tensors[0])] + list(tensors[1:])
        with torch.no_grad():
            for name, tensor in zip(self.names, tensors):
                getattr(self, name).copy_(tensor)

    def full_Q(self):
        """``Q`` of shape (n_scores, d, d), unpacked when the module holds it packed."""
        if self.packed:
            return self.packing.unpack(self.Q_packed.detach())
        return self.Q

    def tensors(self):
        """The parameters in constructor order (detached), with the full ``Q``."""
        if self.packed:
            return [self.full_Q(), self.coef.detach(), self.intercept.detach()]
        return [getattr(self, name).detach() for name in self.names]

    def lbfgs_gradient_scales(self):
        """Per parameter name, what its gradient is divided by for the stopping test.

        Packed: ``sqrt(2)`` off the diagonal, so that the test reads the
        entries of the full matrix's gradient, as without packing.
        """
        if not self.packed:
            return {}
        scale = torch.from_numpy(self.packing.scale)
        return {"Q_packed": scale.expand(self.Q_packed.shape)}

    def forward(self, X):
        if self.low_rank:
            return low_rank_quadratic_scores(X, self.vectors, self.scales, self.coef, self.intercept)
        return chunked_quadratic_form_scores(X, self.full_Q(), self.coef, self.intercept)


def quadratic_logistic_loss_and_gradient(module, l2, *, cross_weight=1.0, quadratic_weight=1.0,
                                         class_blocks=None, free_entry_gradient=False,
                                         cache=None):
    """The training engine's ``loss_and_gradient`` for a :class:`QuadraticScores`.

    Returns ``fn(X, y, w) -> loss``: the weighted log-loss ``sum_i w_i l_i``
    plus ``0.5 * l2 * (quadratic_weight * P(Q) + ||coef||^2)``, with the gradient written into the
    parameters' ``.grad``: in closed form (:func:`quadratic_log_loss_gradient`,
    no autograd) for a full ``Q``, by autograd for the low-rank factors.

    Parameters
    ----------
    module : QuadraticScores
    l2 : float
        Penalty strength (the estimator's ``1 / (C * sum(sample_weight))``).
    cross_weight : float, default=1.0
        See :func:`quadratic_penalty`.
    quadratic_weight : float, default=1.0
        Multiplies the penalty on ``Q`` (see :func:`quadratic_log_loss_gradient`).
    class_blocks : list of (start, stop), optional
        Row range of each class when every call gets the same class-sorted
        rows (full-batch L-BFGS): enables the symmetric Gram products.
    free_entry_gradient : bool, default=False
        Write ``2 G - diag(G)`` for ``Q``: the gradient with respect to the
        ``d(d+1)/2`` free entries of the symmetric matrix (Noel et al.'s
        stochastic update, their equation 21) instead of ``G``.
    cache : dict, optional
        Shared by the fits of one path on the same rows: the float32 rows and
        the degree-2 design, built once; where it holds a ``PathMemory`` under
        ``PATH_MEMORY``, the flat objective's L-BFGS starts from the pairs of
        the path's last fit, moved to this fit's penalty.
    """
    scratch = {}

    def full_rank(X, y, weight):
        buffer = None
        # (the CPU products run in row chunks of their own, without it)
        if not _is_sparse_rows(X) and X.device.type != "cpu":
            key = (X.shape, X.dtype, X.device)
            if key not in scratch:
                # one n x d buffer reused by the score and gradient products
                scratch.clear()
                scratch[key] = torch.empty_like(X)
            buffer = scratch[key]
        loss, grad_Q, grad_coef, grad_intercept = quadratic_log_loss_gradient(
            X, y, weight, module.full_Q(), module.coef, module.intercept, l2,
            cross_weight=cross_weight, quadratic_weight=quadratic_weight,
            class_blocks=class_blocks, scratch=buffer,
        )
        if module.packed:
            module.Q_packed.grad.copy_(module.packing.gradient(grad_Q))
        else:
            if free_entry_gradient:
                grad_Q = 2.0 * grad_Q - torch.diag_embed(torch.diagonal(grad_Q, dim1=1, dim2=2))
            if module.allowed is not None:
                grad_Q = grad_Q * module.allowed.to(grad_Q.device)
            module.Q.grad.copy_(grad_Q)
        module.coef.grad.copy_(grad_coef)
        if module.intercept.requires_grad:
            module.intercept.grad.copy_(grad_intercept)
        return loss

    def flat_objective(X, y, weight):
        """The fast numpy objective on the flat vector (:func:`packed_logistic_objective`), or None
        (a module not packed, or rows neither dense on the CPU nor OrderedRows)."""
        gathered = isinstance(X, OrderedRows)
        if not module.packed or (not gathered and (_is_sparse_rows(X) or X.device.type != "cpu")):
            return None
        rows, labels, weights = X if gathered else X.numpy(), y.numpy(), weight.numpy()
        if cache is not None:
            # the first fit's arrays, so that what is kept per array is kept for all fits
            rows, labels, weights = cache.setdefault(
                ("inputs", rows.dtype.str), (rows, labels, weights))
        build = lambda rows, weights: packed_logistic_objective(
            rows, labels, weights, module.packing, module.coef.shape[0], l2,
            cross_weight=cross_weight, quadratic_weight=quadratic_weight,
            fit_intercept=module.intercept.requires_grad, class_blocks=class_blocks, cache=cache,
        )
        objective = build(rows, weights)
        memory = None if cache is None else cache.get(PATH_MEMORY)
        if memory is not None:
            if memory.weight is None:  # the path's first fit
                n_scores, fitted = module.coef.shape[0], module.intercept.requires_grad
                moments = _null_model_moments(rows, labels, weights, n_scores)
                memory.curvature = _null_model_curvature(moments, module.packing, n_scores, fitted)
                memory.cold_start = functools.partial(
                    _null_model_step, moments, module.packing, n_scores, memory, fitted)
            # a regularisation path's fits: the L-BFGS pairs go on from the last penalty's
            objective.memory = memory.for_penalty(packed_penalty_weight(
                module.packing, module.coef.shape[0], l2, cross_weight=cross_weight,
                fit_intercept=module.intercept.requires_grad, quadratic_weight=quadratic_weight))
        coarse = None if rows.dtype != np.float64 else _float32_inputs(
            rows, weights, module.coef.shape[0], module.packing, {} if cache is None else cache)
        if coarse is not None:
            twin, rows32, weights32 = coarse
            objective.coarse = build(rows32, weights32)
            vars(objective.coarse).update(twin)
        return objective

    full_rank.flat_objective = flat_objective

    def low_rank(X, y, weight):
        parameters = [getattr(module, name) for name in module.names]
        leaves = [p.detach().requires_grad_(p.requires_grad) for p in parameters]
        with torch.enable_grad():
            loss = low_rank_log_loss(X, y, weight, *leaves, l2, cross_weight=cross_weight,
                                     quadratic_weight=quadratic_weight)
            trainable = [leaf for leaf in leaves if leaf.requires_grad]
            grads = torch.autograd.grad(loss, trainable)
        for parameter, grad in zip([p for p in parameters if p.requires_grad], grads):
            parameter.grad.copy_(grad)
        return loss.detach()

    return low_rank if module.low_rank else full_rank
