"""Refitting the second layer of a binary network: a convex problem (beyond Bartan & Pilanci).

Once the ±1 first layer ``(u_j, v_j)`` is fixed, the network's output is
linear in its second layer: with the neuron outputs
``H[i, j] = u_j^T L(x_i) v_j``, the scores are ``H @ alpha`` and the training
objective (Bartan & Pilanci, eq. 24 / 57)

    minimise over alpha in R^(m x K)    loss(H @ alpha, y) + beta * p * sum_j ||alpha_j||_1

is convex: an L1-penalised generalised linear model whose "features" are the
neurons. Algorithm 1 of the paper gives every neuron of class ``k`` the same
weight ``rho_k pi / (gamma m_k)``, which is right in expectation over the sign
draws but not the best second layer for the neurons actually drawn. Solving
this problem from that point can only lower the objective, and since every
``alpha`` (each neuron may feed every class) is a network of the SDP's
architecture, the SDP's lower bound still holds for the result.

Logistic and hinge losses: accelerated proximal gradient (FISTA, Beck &
Teboulle 2009) with backtracking and adaptive restart (O'Donoghue & Candès
2015), the L1 penalty by soft-thresholding; the hinge loss by its Moreau
envelope with a decreasing smoothing ``mu``, each stage warm-started. The
returned point is the best one seen by the true objective, the start
included, so the result is never worse than the starting ``alpha``. These
losses also take a fixed part of the scores (``score_offset``: the SDP
classifier keeps its intercept so) and the outputs as their factors
``H = Φ S`` (:class:`FactoredColumns`), whose products cost less where the
lifted coordinates are fewer than the rows and neurons.

Squared loss: the loss depends on ``alpha`` only through ``W^(1/2) H alpha``,
whose range has at most ``p (p + 1) / 2`` dimensions (the outputs are linear
in the entries of the symmetric ``L(x)``). With an orthonormal basis ``B`` of
it, ``||W^(1/2)(H alpha - t)||^2 = ||B^T W^(1/2) (H alpha - t)||^2 +
||(I - B B^T) W^(1/2) t||^2`` exactly: an ``r``-row lasso (on all ``n`` rows
when ``r`` is above ``_REDUCE_BELOW_FRACTION`` of them). It is solved by an
interior point on its ``r``-variable dual (``_lasso_interior_point``), certified
by a feasible dual point, while its steps are cheap, or where the rows are no
more than the columns and the penalty is small (``_interior_point_applies``),
else by scikit-learn's coordinate descent on working sets
(``_lasso_coordinate_descent``). The caller may pass ``span``, columns that
span every neuron's outputs: the basis then comes from their Gram matrix.

Neurons equal or opposite on the training rows are merged first, for every
loss: scores depend on the sum of their signed weights only, and the L1
penalty of a split is at least that of the sum, so the optimum is the same.

Threads: each iteration is a few thin products ``H @ alpha`` and ``H^T g``;
BLAS runs them on one thread where the runtime policy gives such a product one.
"""

import dataclasses
import math
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import scipy.linalg.blas
import scipy.linalg.lapack
from scipy.special import expit

from .._foundation._exp_range import SHIFT_FREE_LIMIT
from .._foundation._runtime import thread_count
from .._foundation._thin_products import ThinProducts
from .._foundation._threads import limit_threads
from .formulation import LOSSES, loss_value
from .problem import encode_targets

__all__ = ["FactoredColumns", "SecondLayerFit", "refit_from_statistics", "refit_second_layer",
           "statistics_objective"]


@dataclass(frozen=True)
class SecondLayerFit:
    """Result of :func:`refit_second_layer`.

    Attributes
    ----------
    alpha : ndarray of shape (n_neurons, n_outputs)
        The second layer with the lowest objective found.
    objective : float
        Its objective, ``loss + beta * p * ||alpha||_1``.
    initial_objective : float
        The objective of the starting ``alpha`` (with its best intercept
        when one is fitted).
    n_iter : int
        Proximal-gradient iterations run (all smoothing stages together).
    intercept : ndarray of shape (n_outputs,)
        The unpenalised intercept ``b`` added to ``H @ alpha`` (zeros unless
        ``fit_intercept=True``).
    """

    alpha: np.ndarray
    objective: float
    initial_objective: float
    n_iter: int
    intercept: np.ndarray = None


def _targets(y, n_outputs):
    target = encode_targets(y, n_outputs)
    return target[:, 0] if n_outputs == 1 else target


def _weighted_log_sum_exp(z, weight, gradient=True):
    """``(Σ_i w_i logsumexp(z_i), w_i softmax(z_i) row by row or None)``; ``z`` (n, K) is overwritten.

    The rows are shifted by their maxima only where some ``|z|`` passes ``SHIFT_FREE_LIMIT``
    (:mod:`skquad._foundation._exp_range`); row sums are BLAS products with ones.
    """
    shift, limit = 0.0, SHIFT_FREE_LIMIT[np.float64]
    if not -limit <= z.min() <= z.max() <= limit:
        maxima = z.max(axis=1)
        z -= maxima[:, None]
        shift = float(weight @ maxima)
    exponentials = np.exp(z, out=z)
    sums = exponentials @ np.ones(z.shape[1])
    value = float(weight @ np.log(sums)) + shift
    if not gradient:
        return value, None
    exponentials *= (weight / sums)[:, None]
    return value, exponentials


def _smooth_loss(scores, target, weight, loss, n_outputs, mu, gradient=True, weighted_target=None):
    """``(value, gradient (n_samples, n_outputs) or None)`` of the weighted loss (hinge: smoothed
    by ``mu``). ``weighted_target``: ``weight[:, None] * target`` where the caller keeps it.
    With several outputs and the logistic loss ``scores`` is overwritten."""
    if n_outputs == 1:
        f = scores[:, 0]
        if loss == "squared":
            residual = f - target
            return float(weight @ residual**2), (2.0 * weight * residual)[:, None]
        margin = target * f
        if loss == "logistic":
            value = float(weight @ np.logaddexp(0.0, -margin))
            return value, (-weight * target * expit(-margin))[:, None]
        # Moreau envelope of max(0, 1 - margin): quadratic on [0, mu], linear beyond.
        slack = 1.0 - margin
        ramp = np.clip(slack / mu, 0.0, 1.0)
        per_sample = np.where(slack > mu, slack - 0.5 * mu, 0.5 * np.maximum(slack, 0.0) ** 2 / mu)
        return float(weight @ per_sample), (-weight * target * ramp)[:, None]
    if loss == "squared":
        residual = scores - target
        return float(weight @ np.sum(residual**2, axis=1)), 2.0 * weight[:, None] * residual
    if weighted_target is None:
        weighted_target = weight[:, None] * target
    target_term = float(np.vdot(scores, weighted_target))
    if loss == "logistic":
        value, probabilities = _weighted_log_sum_exp(scores, weight, gradient)
    else:
        # Crammer-Singer max_k (f_k + [k != y]) - f_y, smoothed: mu * logsumexp(./mu).
        value, probabilities = _weighted_log_sum_exp((scores + 1.0 - target) / mu, weight, gradient)
        value *= mu
    if probabilities is not None:
        probabilities -= weighted_target
    return value - target_term, probabilities


def _soft_threshold(values, threshold):
    # sign(v) max(|v| - t, 0) in two array operations (bit for bit the same).
    return values - np.clip(values, -threshold, threshold)


def _top_curvature(H, weight, n_iter=30, seed=0):
    """Largest eigenvalue of ``H^T diag(w) H`` by power iteration (a step-size guess)."""
    vector = np.random.default_rng(seed).standard_normal(H.shape[1])
    value = 0.0
    for _ in range(n_iter):
        image = H.T @ (weight * (H @ vector))
        value = float(np.linalg.norm(image))
        if value == 0.0 or not np.isfinite(value):
            return 1.0
        vector = image / value
    return value


# Upper bounds on the second derivative of each loss in the scores (mu: smoothing).
_CURVATURE = {"squared": lambda mu: 2.0, "logistic": lambda mu: 0.5, "hinge": lambda mu: 1.0 / mu}


# The squared loss is refitted on its range-reduced form (module docstring) when the
# caller's bound on rank(H) is at most this fraction of the rows.
_REDUCE_BELOW_FRACTION = 0.75


class FactoredColumns(ThinProducts):
    """Neuron outputs ``H = Φ S`` kept as their factors: ``Φ`` (n, q), the rows' lifted
    coordinates, and ``S`` (q, m), the neurons'. The products the proximal gradient takes,
    ``H @ a`` and ``Hᵀ @ g``, then cost ``(n + m) q`` flops a column instead of ``n m``
    (taken as :class:`~skquad._foundation._thin_products.ThinProducts` takes them)."""

    def __init__(self, rows, neurons):
        super().__init__(rows, neurons)
        # flops of one product with a column of the second layer
        self.product_flops = 2.0 * (rows.shape[0] + neurons.shape[1]) * rows.shape[1]


def refit_second_layer(
    H, y, weight, *, loss, beta, n_lifted, alpha, max_iter=500, tol=1e-7, rank_bound=None,
    span=None, fit_intercept=False, score_offset=None,
):
    """Minimise ``loss(H @ alpha + b) + beta * p * ||alpha||_1`` starting from ``alpha``.

    Parameters
    ----------
    H : ndarray of shape (n_samples, n_neurons) or FactoredColumns
        Neuron outputs ``u_j^T L(x_i) v_j`` (factored: the hinge and logistic
        losses only, without merging equal neurons).
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1} (one output; real targets also work with the
        squared loss) or class indices (``n_outputs > 1``).
    weight : ndarray of shape (n_samples,)
        Non-negative sample weights (normalised here to sum to one, as in
        :func:`skquad.convex.formulation.loss_value`).
    loss : {"hinge", "logistic", "squared"}
    beta : float
        Regularization; the penalty is ``beta * n_lifted * sum |alpha|``.
    n_lifted : int
        ``p``, the length of the binary weight vectors.
    alpha : ndarray of shape (n_neurons, n_outputs)
        Starting point (Algorithm 1's shared weights); ``n_outputs`` is read
        from its shape.
    max_iter : int, default=500
        Total proximal-gradient iterations (split over the hinge loss's
        smoothing stages).
    tol : float, default=1e-7
        Stop a stage when the relative decrease of its objective over 10
        iterations falls below ``tol``.
    rank_bound : int, default=None
        An upper bound on the rank of ``H`` (the SDP network's: ``p (p + 1)
        / 2``). Squared loss: when it is well below ``n_samples``, the
        problem is solved on its exact range-reduced form (same optimum,
        cheaper iterations). None: no reduction (unless ``span`` is given).
    span : ndarray of shape (n_samples, q) or callable, default=None
        Squared loss: columns whose span holds every column of ``H`` (the
        SDP network's: ``InputLifting.monomials``, ``q <= p (p + 1) / 2``),
        or a function that returns them (called only when the reduction
        applies, ``rank_bound`` small). The range-reduced form's basis is
        then found from the ``q x q`` Gram matrix of ``span`` (``n q^2``)
        instead of ``H``'s (``n m^2`` and an ``m x m`` eigendecomposition),
        when ``rank_bound`` is below ``H``'s columns (else ``H``'s).
    fit_intercept : bool, default=False
        Squared loss only: also fit an unpenalised intercept ``b`` per
        output (else ``b = 0``). As scikit-learn's linear models do, the
        columns of ``H`` and the targets are centred at their weighted means
        and ``b = mean(t) - mean(H) @ alpha``: for every ``alpha`` the best
        ``b`` leaves exactly the centred problem.
    score_offset : ndarray of shape (n_outputs,), default=None
        Hinge and logistic losses: a fixed ``b`` (not fitted), so that the
        scores are ``H @ alpha + score_offset``. None: ``b = 0``.

    Returns
    -------
    result : SecondLayerFit
        ``result.objective <= result.initial_objective`` always.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    if isinstance(H, FactoredColumns):
        if loss == "squared":
            raise ValueError("factored neuron outputs apply to the hinge and logistic losses only.")
    else:
        H = np.asarray(H, dtype=np.float64)
    alpha = np.array(alpha, dtype=np.float64, copy=True).reshape(H.shape[1], -1)
    n_outputs = alpha.shape[1]
    weight = np.asarray(weight, dtype=np.float64)
    weight = weight / weight.sum()
    if score_offset is not None and (loss == "squared" or fit_intercept):
        raise ValueError("score_offset applies to the hinge and logistic losses only.")
    if not fit_intercept:
        fit = _refit_network(H, y, weight, loss, beta, n_lifted, alpha, max_iter, tol,
                             rank_bound, span, score_offset)
        return dataclasses.replace(fit, intercept=np.zeros(n_outputs))
    if loss != "squared":
        raise ValueError(f"fit_intercept applies to the squared loss only, got loss={loss!r}.")
    target = encode_targets(y, n_outputs)
    target_mean, column_mean = weight @ target, weight @ H
    centred_target = target - target_mean

    def centred_span():
        columns = np.asarray(span() if callable(span) else span, dtype=np.float64)
        return columns - weight @ columns

    fit = _refit_network(
        H - column_mean, centred_target[:, 0] if n_outputs == 1 else centred_target, weight,
        loss, beta, n_lifted, alpha, max_iter, tol, rank_bound,
        None if span is None else centred_span,
    )
    return dataclasses.replace(fit, intercept=target_mean - column_mean @ fit.alpha)


def refit_from_statistics(S, statistics, *, beta, n_lifted, alpha, max_iter=500, tol=1e-7,
                          fit_intercept=False):
    """:func:`refit_second_layer` of the squared loss for the outputs ``H = Φ S`` from
    normalized :class:`~skquad.convex.LiftedStatistics` alone.

    ``S`` (m x n_neurons): ``neuron_svecs``. The
    range-reduced form (module docstring) comes from ``G = V Λ Vᵀ``: rows
    ``Λ^(1/2) Vᵀ S``, targets ``Λ^(-1/2) Vᵀ B`` and offset ``T - ||c||²``
    (of the centred statistics with ``fit_intercept``); then the same lasso.
    """
    alpha = np.array(alpha, dtype=np.float64, copy=True).reshape(S.shape[1], -1)
    centred = statistics.centred() if fit_intercept else statistics
    values, vectors = np.linalg.eigh(centred.gram)
    keep = values > 1e-13 * max(values[-1], 1e-300)
    root = np.sqrt(values[keep])
    A = root[:, None] * (vectors[:, keep].T @ S)
    c = (vectors[:, keep].T @ centred.cross) / root[:, None]
    offset = max(float(centred.target_square.sum() - np.sum(c**2)), 0.0)
    # The lasso on (A, c) is _refit_network's on rows of weight 1 / r, scaled by √r.
    r = max(A.shape[0], 1)
    fit = _refit_network(
        math.sqrt(r) * A, math.sqrt(r) * (c[:, 0] if c.shape[1] == 1 else c), np.full(A.shape[0], 1.0 / r),
        "squared", beta, n_lifted, alpha, max_iter, tol, None, None,
    )
    intercept = np.zeros(alpha.shape[1])
    if fit_intercept:
        intercept = statistics.target_mean - (statistics.mean @ S) @ fit.alpha
    return dataclasses.replace(
        fit, objective=fit.objective + offset, initial_objective=fit.initial_objective + offset,
        intercept=intercept,
    )


def statistics_objective(S, statistics, alpha, beta, n_lifted):
    """``Σ w ||Φ S alpha - t||² + beta p ||alpha||_1`` from the statistics (scores ``2 Φᵀ (S alpha / 2)``)."""
    alpha = np.asarray(alpha, dtype=np.float64).reshape(S.shape[1], -1)
    return float(statistics.loss(0.5 * (S @ alpha)).sum() + beta * n_lifted * np.abs(alpha).sum())


def _refit_network(H, y, weight, loss, beta, n_lifted, alpha, max_iter, tol, rank_bound, span,
                   score_offset=None):
    """:func:`refit_second_layer` without a fitted intercept (weights normalized)."""
    n_outputs = alpha.shape[1]
    penalty = float(beta) * int(n_lifted)
    score_offset = np.zeros(n_outputs) if score_offset is None else np.asarray(score_offset, float)
    # One BLAS thread where the runtime policy gives a product of this size one thread.
    flops = getattr(H, "product_flops", 2.0 * H.shape[0] * H.shape[1])
    small = thread_count("auto", "cpu", flops * n_outputs) == 1

    def true_objective(point, scores):
        value = loss_value(scores + score_offset, y, weight, loss, n_outputs)
        value += penalty * np.abs(point).sum()
        return value if np.isfinite(value) else np.inf

    with limit_threads(None, blas=1) if small else nullcontext():
        merged = None if isinstance(H, FactoredColumns) else _merged_columns(H)
        if merged is None:
            return _refit_columns(
                H, y, weight, loss, penalty, alpha, max_iter, tol, rank_bound, true_objective,
                span, score_offset,
            )
        # Equal (or opposite) neurons: solve on one column per group, then
        # give each group's weight to its first member (module docstring).
        columns, first, group, signs = merged
        start = np.zeros((columns.shape[1], n_outputs))
        np.add.at(start, group, signs[:, None] * alpha)
        fit = _refit_columns(
            columns, y, weight, loss, penalty, start, max_iter, tol, rank_bound, true_objective,
            span, score_offset,
        )
        full = np.zeros_like(alpha)
        full[first] = fit.alpha * signs[first][:, None]
        initial = true_objective(alpha, H @ alpha)
        objective = true_objective(full, H @ full)
        if objective > initial:  # rounding only: the merged start is never worse
            return SecondLayerFit(alpha=alpha, objective=initial, initial_objective=initial,
                                  n_iter=fit.n_iter)
        return SecondLayerFit(alpha=full, objective=objective, initial_objective=initial,
                              n_iter=fit.n_iter)


def _merged_columns(H):
    """``H``'s distinct columns up to sign (bitwise), or None when no two columns agree.

    Returns ``(columns, first, group, signs)``: ``H[:, j] = signs[j] * columns[:, group[j]]``
    and ``first[g]`` the first ``j`` of group ``g`` (increasing).
    """
    if H.shape[1] < 2:
        return None
    if np.all(H[0] != 0):
        leading = np.zeros(H.shape[1], dtype=np.intp)  # the common case: no scan
    else:
        leading = np.argmax(H != 0, axis=0)
    signs = np.where(H[leading, np.arange(H.shape[1])] < 0, -1.0, 1.0)
    # +0.0 turns -0.0 into 0.0, so that the bytes compare as the values do.
    normalized = H * signs
    normalized += 0.0
    # Grouped by an exact integer hash of the bytes (cheaper than sorting
    # them), then every member is checked bitwise against its group's first.
    words = normalized.view(np.uint64)
    _, first, group = np.unique(_column_hashes(words), return_index=True, return_inverse=True)
    group = group.ravel()
    if first.size == H.shape[1]:
        return None
    representative = first[group]
    copies = np.flatnonzero(representative != np.arange(H.shape[1]))
    if not np.array_equal(words[:, copies], words[:, representative[copies]]):
        # A hash collision (never seen): group by the bytes themselves.
        columns = np.ascontiguousarray(normalized.T)
        keys = columns.view(np.dtype((np.void, columns.dtype.itemsize * columns.shape[1])))
        _, first, group = np.unique(keys.ravel(), return_index=True, return_inverse=True)
        group = group.ravel()
        if first.size == H.shape[1]:
            return None
    # Groups in the order of their first columns (whatever the hash order).
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    first, group = first[order], rank[group]
    # np.take along an axis copies row by row where the fancy index ``[:, first]``
    # gathers element by element: the same bytes, at a fraction of the cost.
    return np.take(normalized, first, axis=1), first, group, signs


def _column_hashes(words):
    """One 64-bit hash per column of ``words`` (uint64): equal columns, equal hashes."""
    multipliers = np.random.default_rng(0).integers(
        0, 2**63, size=words.shape[0], dtype=np.uint64
    ) * np.uint64(2) + np.uint64(1)
    return multipliers @ words


def _refit_columns(
    H, y, weight, loss, penalty, alpha, max_iter, tol, rank_bound, true_objective, span=None,
    score_offset=0.0,
):
    """:func:`refit_second_layer` on distinct columns (weights normalized; ``score_offset``:
    the hinge and logistic losses' fixed part of the scores)."""
    n_outputs = alpha.shape[1]
    target = _targets(y, n_outputs)
    if loss != "squared":
        return _refit(H, weight, target, loss, penalty, alpha, max_iter, tol, true_objective,
                      score_offset)
    reduced = None
    if rank_bound is not None and rank_bound <= _REDUCE_BELOW_FRACTION * H.shape[0]:
        # The span's q x q Gram pays only when its size bound is below the number of neurons.
        if span is not None and rank_bound < H.shape[1]:
            span = np.asarray(span() if callable(span) else span, dtype=np.float64)
        else:
            span = None
        reduced = _range_reduced(H, target, weight, span)
    if reduced is None:
        # The range is not small: the same lasso on all n rows (module docstring).
        reduced = (*_weighted_rows(H, target, weight), 0.0)
    A, reduced_target, offset = reduced
    # A lasso on r rows: an interior point on its r-variable dual where it pays,
    # else coordinate descent (module docstring).
    point, n_iter = None, 0
    if _interior_point_applies(A, reduced_target, penalty):
        point, n_iter = _lasso_interior_point(A, reduced_target, penalty, tol, offset)
    if point is None:
        # From zero, not from the dense alpha: the optimum is sparse (compared with alpha below).
        start = np.zeros_like(alpha)
        point, n_iter = _lasso_coordinate_descent(A, reduced_target, penalty, start, max_iter, tol)
    # The reported objectives are the true ones, on H itself.
    initial = true_objective(alpha, H @ alpha)
    objective = true_objective(point, H @ point)
    if objective > initial:  # CD descends from the start: rounding only
        return SecondLayerFit(alpha=alpha, objective=initial, initial_objective=initial,
                              n_iter=n_iter)
    return SecondLayerFit(alpha=point, objective=objective, initial_objective=initial,
                          n_iter=n_iter)


# Working sets of the reduced lasso (see _lasso_coordinate_descent): sweeps
# over every column before the first working set, columns added beyond the support.
_FIRST_SWEEPS = 50
_WORKING_EXTRA = 50
# Up to this many columns the lasso is solved on all of them at once.
_WORKING_MIN_COLUMNS = 200


def _lasso_coordinate_descent(A, target, penalty, alpha, max_iter, tol):
    """``min ||A a_k - c_k||² + penalty ||a_k||_1`` per output by scikit-learn's
    coordinate descent, warm-started at ``alpha``, on working sets.

    ``Lasso``'s ``a' = penalty / (2 r)``, stopped at a duality gap below
    ``1000 tol ||c||²`` or after ``10 max_iter`` sweeps. As celer: ``_FIRST_SWEEPS``
    sweeps over every column, then over the support plus the columns most correlated
    with the residual, until no column outside violates ``2 |A_jᵀ (c - A a)| <= penalty``.

    Returns the point and the number of sweeps of the slowest output.
    """
    n_outputs = alpha.shape[1]
    if A.shape[1] <= _WORKING_MIN_COLUMNS:
        # Few columns: one call over all of them solves every output.
        start = alpha.T if n_outputs > 1 else alpha[:, 0]
        point, iterations = _lasso_fit(A, target, penalty, start, 10 * int(max_iter), tol)
        return point.T.reshape(alpha.shape), iterations
    targets = target.reshape(A.shape[0], n_outputs)
    point = np.array(alpha, dtype=np.float64, copy=True)
    iterations = 0
    for k in range(n_outputs):
        point[:, k], used = _lasso_working_sets(A, targets[:, k], penalty, point[:, k], max_iter, tol)
        iterations = max(iterations, used)
    return point, iterations


# The reduced lasso goes to the interior point while one output's normal matrix costs
# at most the first number of flops (r² m), or, with no more rows than columns, while one
# step's K matrices cost at most the second and the penalty is below the third fraction
# of the smallest that zeroes every output. Columns outnumbering rows are correlated:
# coordinate descent's sweeps then grow into the thousands as the penalty shrinks, while
# the interior point's steps hardly depend on it; above that fraction coordinate descent
# was as fast or faster on the UCI sets (the CHANGELOG's figures).
_INTERIOR_POINT_SMALL_WORK = 4e7
_INTERIOR_POINT_MAX_WORK = 3e9
_INTERIOR_POINT_MAX_PENALTY = 0.05


def _interior_point_applies(A, target, penalty):
    """Whether the reduced lasso ``min ||A a_k - c_k||² + penalty ||a_k||_1`` goes to the interior point."""
    r, m = A.shape
    C = target.reshape(r, -1)
    if r * r * m <= _INTERIOR_POINT_SMALL_WORK:
        return True
    if r > m or C.shape[1] * r * r * m > _INTERIOR_POINT_MAX_WORK:
        return False
    # each output's zeroing penalty is 2 max_j |A_jᵀ c_k|
    return penalty < _INTERIOR_POINT_MAX_PENALTY * 2.0 * float(np.max(np.abs(A.T @ C), initial=0.0))


# Interior-point steps before giving the lasso to coordinate descent.
_INTERIOR_POINT_MAX_STEPS = 60

_syrk = scipy.linalg.blas.get_blas_funcs("syrk", (np.zeros(1),))
_potrf, _potrs = scipy.linalg.lapack.get_lapack_funcs(("potrf", "potrs"), (np.zeros(1),))


def _lasso_interior_point(A, target, penalty, tol, offset=0.0):
    """``min ||A a_k - c_k||² + penalty ||a_k||_1`` per output through its dual, certified.

    The dual is ``max_s cᵀs - ||s||²/4`` subject to ``|A_jᵀ s| <= penalty``; the
    multipliers ``z⁺, z⁻`` of its constraints give ``a = z⁺ - z⁻``. Mehrotra's
    predictor-corrector interior point factors the ``r x r`` matrix
    ``I / 2 + A diag(z⁺/t⁺ + z⁻/t⁻) Aᵀ`` per step, the ``K`` outputs together. It
    stops at ``P(a) - D(θ s) <= tol (P(a) + offset)`` (``θ`` the best feasible scaling
    of ``s``) for the sparse point returned (entries below ``1e-6`` of an output's
    largest zeroed where no worse).

    Returns ``(a of shape (m, K), the most steps of an output)``, or ``(None, steps)``
    when an output misses ``tol`` in ``_INTERIOR_POINT_MAX_STEPS`` steps or its matrix
    is not positive definite in floating point (the caller then runs coordinate descent).
    """
    r, m = A.shape
    C = target.reshape(r, -1).T  # (K, r): one output a row
    K = C.shape[0]
    if penalty <= 0:
        return None, 0
    # A K-th of the offset in each output's test: the gaps add up to at most tol times the total.
    share = offset / K
    point = np.zeros((K, m))
    steps = np.zeros(K, dtype=int)
    # The outputs still stepping, a row each: targets c, dual points s, slacks
    # t = penalty ∓ Aᵀ s (s = 0 is strictly feasible) and multipliers z (K, 2, m), which
    # start where Σ z t equals the zero point's duality gap ||c||², the problem's own scale.
    active = np.arange(K)
    c = C
    s_ = np.zeros((K, r))
    t = np.full((K, 2, m), float(penalty))
    z = np.empty((K, 2, m))
    z[...] = (np.maximum(np.sum(C * C, axis=1), 1e-300) / (2 * m * penalty))[:, None, None]
    for step in range(1, _INTERIOR_POINT_MAX_STEPS + 1):
        correlation = s_ @ A
        dual_residual = 0.5 * s_ - c + (z[:, 0] - z[:, 1]) @ A.T
        primal_residual = t - penalty
        primal_residual[:, 0] += correlation
        primal_residual[:, 1] -= correlation
        candidate, primal = _lasso_candidates(A, c, penalty, z[:, 0] - z[:, 1])
        gaps = _relative_gaps(c, penalty, primal, s_, correlation, share)
        done = gaps <= tol
        if done.any():
            point[active[done]] = candidate[done]
            steps[active[done]] = step - 1
            if done.all():
                return point.T, int(steps.max())
            keep = ~done
            active, c, s_, t, z = active[keep], c[keep], s_[keep], t[keep], z[keep]
            dual_residual, primal_residual = dual_residual[keep], primal_residual[keep]
        factors = _normal_factors(A, z / t)
        if factors is None:
            return None, step
        s_, t, z = _predictor_corrector(A, factors, s_, t, z, dual_residual, primal_residual)
    return None, _INTERIOR_POINT_MAX_STEPS


def _lasso_candidates(A, c, penalty, a):
    """The sparse points the interior point's multipliers ``a`` give (entries
    below ``1e-6`` of a row's largest zeroed; zero where zero is no worse, as
    for a penalty so large that the multipliers only tend to 0) and their lasso
    objectives."""
    largest = np.max(np.abs(a), axis=1, keepdims=True)
    candidate = np.where(np.abs(a) > 1e-6 * largest, a, 0.0)
    residual = candidate @ A.T - c
    primal = np.sum(residual * residual, axis=1) + penalty * np.sum(np.abs(candidate), axis=1)
    zero_value = np.sum(c * c, axis=1)
    zero = zero_value <= primal
    candidate[zero] = 0.0
    primal[zero] = zero_value[zero]
    return candidate, primal


def _normal_factors(A, ratio):
    """Cholesky factors of each output's ``I / 2 + A diag(z⁺/t⁺ + z⁻/t⁻) Aᵀ``,
    or None where one is not positive definite in floating point."""
    diagonal = np.diag_indices(A.shape[0])
    weights = np.sqrt(ratio[:, 0] + ratio[:, 1])
    factors = []
    for row in range(weights.shape[0]):
        # One triangle of A D Aᵀ (SYRK: half a general product's flops).
        normal = _syrk(1.0, (A * weights[row]).T, trans=1, lower=1)
        normal[diagonal] += 0.5
        factor, info = _potrf(normal, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            return None
        factors.append(factor)
    return factors


def _predictor_corrector(A, factors, s_, t, z, dual_residual, primal_residual):
    """One Mehrotra predictor-corrector step of every output: the new ``(s, t, z)``."""
    m = A.shape[1]

    def newton(complementarity):
        # Eliminate the slacks and multipliers: (I/2 + A D Aᵀ) Δs = rhs.
        v = (-complementarity + z * primal_residual) / t
        rhs = -dual_residual - (v[:, 0] - v[:, 1]) @ A.T
        ds = np.stack([_potrs(factors[row], rhs[row], lower=1)[0] for row in range(len(factors))])
        image = ds @ A
        d_slack = -primal_residual
        d_slack[:, 0] -= image
        d_slack[:, 1] += image
        d_dual = (-complementarity - z * d_slack) / t
        return ds, d_slack, d_dual

    def longest(d_slack, d_dual):
        # Per output, the largest step in [0, 1] keeping slacks and multipliers nonnegative:
        # 1 / max(1, max(-direction / value)) over every entry (cheaper than a masked division).
        worst = -np.minimum(np.min(d_slack / t, axis=(1, 2)), np.min(d_dual / z, axis=(1, 2)))
        return 1.0 / np.maximum(worst, 1.0)

    product = t * z
    mu = np.sum(product, axis=(1, 2)) / (2 * m)
    ds, d_slack, d_dual = newton(product)
    length = longest(d_slack, d_dual)[:, None, None]
    predicted = np.sum((t + length * d_slack) * (z + length * d_dual), axis=(1, 2)) / (2 * m)
    centering = ((predicted / mu) ** 3 * mu)[:, None, None]
    ds, d_slack, d_dual = newton(product + d_slack * d_dual - centering)
    length = 0.99 * longest(d_slack, d_dual)[:, None, None]
    return s_ + length[:, :, 0] * ds, t + length * d_slack, z + length * d_dual


def _relative_gaps(C, penalty, primal, S, correlations, offset):
    """The relative gaps ``(P(a) - D(θ s)) / (P(a) + offset)`` of :func:`_lasso_interior_point`,
    one a row of ``C``, ``S`` and ``correlations = S @ A`` given each row's ``P(a)``
    (``primal``): 1 where ``s = 0``, 0 where ``P(a) = 0``."""
    largest = np.max(np.abs(correlations), axis=1)
    squared = np.sum(S * S, axis=1)
    inner = np.sum(C * S, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        # D(θ s) = θ cᵀs - θ² ||s||² / 4 on 0 <= θ <= penalty / ||Aᵀ s||_∞.
        theta = np.minimum(
            np.where(squared > 0, 2.0 * inner / squared, 0.0),
            np.where(largest > 0, penalty / largest, np.inf),
        )
        theta = np.maximum(theta, 0.0)
        lower = theta * inner - 0.25 * theta**2 * squared
        gaps = (primal - lower) / (primal + offset)
    gaps = np.where(squared == 0.0, 1.0, gaps)
    return np.where(primal <= 0, 0.0, gaps)


def _lasso_fit(A, target, penalty, start, sweeps, tol, gram=None):
    """scikit-learn's ``Lasso`` from ``start`` (one output, or ``(n_outputs, n_columns)``),
    at most ``sweeps`` sweeps per output: ``(coef_, the most sweeps of an output)``.
    ``gram``: ``AᵀA`` when the caller has it (else Lasso forms it)."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import Lasso

    model = Lasso(
        alpha=penalty / (2.0 * A.shape[0]), fit_intercept=False,
        precompute=True if gram is None else gram,
        warm_start=True, tol=1000.0 * tol, max_iter=int(sweeps),
    )
    model.coef_ = np.array(start, dtype=np.float64, copy=True)
    with warnings.catch_warnings():
        # Not converged within the budget: the point is still a descent.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(A, target)
    return np.asarray(model.coef_, dtype=np.float64), int(np.max(np.atleast_1d(model.n_iter_)))


def _lasso_working_sets(A, target, penalty, start, max_iter, tol):
    """One output of :func:`_lasso_coordinate_descent`: ``(point, sweeps)``.

    Each round solves on the support plus the columns most correlated with the
    residual, chosen afresh, so the sets stay near the support's size. A round that
    converges on its set while a column outside violates the condition (Lasso's inner
    point is not exact, and a fresh choice may take in the same columns again) is
    followed by one on that set grown by the outside columns most correlated with the
    residual. A round that ends on its sweeps doubles them, so at most
    ``log2(10 max_iter / _FIRST_SWEEPS) + 1`` rounds end on their sweeps, and between
    two of them the stalled rounds' sets grow strictly: the rounds are bounded.
    """
    budget = 10 * int(max_iter)
    n_columns = A.shape[1]
    # The optimality condition's bound, with a margin for rounding: a
    # violation this small changes the dual point's scaling by 1e-6.
    limit = 0.5 * penalty * (1.0 + 1e-6)
    point = np.array(start, dtype=np.float64, copy=True)
    correlation = np.abs(A.T @ (target - A @ point))
    used, sweeps, growing = 0, _FIRST_SWEEPS, False
    inside = np.zeros(n_columns, dtype=bool)
    while True:
        size = np.count_nonzero(point) + _WORKING_EXTRA
        if growing:
            outside = np.flatnonzero(~inside)
            inside[outside[np.argsort(-correlation[outside])[:size]]] = True
        else:
            inside[:] = point != 0
            inside[np.argsort(-correlation)[:size]] = True
        working = np.flatnonzero(inside)
        cap = max(min(sweeps, budget - used), 1)
        solved, done = _lasso_fit(A[:, working], target, penalty, point[working], cap, tol)
        used += max(done, 1)  # (a round that starts converged still counts)
        point = np.zeros(n_columns)
        point[working] = solved
        correlation = np.abs(A.T @ (target - A @ point))
        violated = bool(np.any(correlation[~inside] > limit))
        if (done < cap and not violated) or used >= budget:
            return point, used
        # Converged on the set (a stall): the next set grows from it. Ended on its sweeps:
        # a fresh set, twice the sweeps.
        growing = done < cap
        if not growing:
            sweeps *= 2


def _weighted_rows(H, target, weight):
    """``(W^(1/2) H, W^(1/2) t)``, the rows of the same loss:
    ``Σ_i w_i ||H_i alpha - t_i||^2 = ||W^(1/2) H alpha - W^(1/2) t||^2``."""
    root_weight = np.sqrt(weight)
    return H * root_weight[:, None], _row_scaled(target, root_weight)


def _row_scaled(values, scale):
    """``values`` (a vector or a matrix) with row ``i`` times ``scale[i]``."""
    return values * (scale if values.ndim == 1 else scale[:, None])


def _range_reduced(H, target, weight, span=None):
    """The squared loss's exact ``r``-row form (module docstring), or None if ``r`` is not small.

    Returns ``(A, c, offset)`` with ``Σ_i w_i ||H_i alpha - t_i||^2 = ||A alpha - c||^2 + offset``;
    with ``span``, the basis is that of ``W^(1/2) span``'s range, which holds ``W^(1/2) H``'s.
    """
    root_weight = np.sqrt(weight)
    n, m = H.shape
    if span is not None:
        # W^(1/2) span = U S Vᵀ (V, S² from the q x q Gram): the rows
        # Uᵀ W^(1/2) H = S⁻¹ Vᵀ (W span)ᵀ H keep the loss exact, without forming W^(1/2) H.
        weighted_target = _row_scaled(target, root_weight)
        weighted_span = _row_scaled(span, root_weight)
        values, vectors = np.linalg.eigh(weighted_span.T @ weighted_span)
        keep = values > 1e-13 * max(values[-1], 1e-300)
        if keep.sum() > _REDUCE_BELOW_FRACTION * n:
            return None
        right = vectors[:, keep] / np.sqrt(values[keep])
        reduced = right.T @ (_row_scaled(span, weight).T @ H)
        reduced_target = right.T @ (weighted_span.T @ weighted_target)
        offset = float(np.sum(weighted_target**2) - np.sum(reduced_target**2))
        return reduced, reduced_target, max(offset, 0.0)
    weighted, weighted_target = _weighted_rows(H, target, weight)
    # The smaller Gram matrix has the same nonzero eigenvalues, at the lower cost.
    gram = weighted.T @ weighted if m < n else weighted @ weighted.T
    values, vectors = np.linalg.eigh(gram)
    # Directions below 1e-13 of the top eigenvalue carry under 3e-7 of H's norm: rounding, not rank.
    keep = values > 1e-13 * max(values[-1], 1e-300)
    if keep.sum() > _REDUCE_BELOW_FRACTION * n:
        return None
    if m < n:
        # W^(1/2) H = U S Vᵀ with V, S² from the m x m Gram: the reduced rows
        # are Uᵀ W^(1/2) H = S Vᵀ and Uᵀ c = S⁻¹ Vᵀ (W^(1/2) H)ᵀ c.
        right = vectors[:, keep]
        singular = np.sqrt(values[keep])
        reduced = singular[:, None] * right.T
        projected = right.T @ (weighted.T @ weighted_target)
        reduced_target = projected / (singular if projected.ndim == 1 else singular[:, None])
    else:
        basis = vectors[:, keep]
        reduced = basis.T @ weighted
        reduced_target = basis.T @ weighted_target
    offset = float(np.sum(weighted_target**2) - np.sum(reduced_target**2))
    return reduced, reduced_target, max(offset, 0.0)


def _refit(H, weight, target, loss, penalty, alpha, max_iter, tol, true_objective,
           score_offset):
    n_outputs = alpha.shape[1]
    if not isinstance(H, ThinProducts):
        H = ThinProducts(H)  # the iterations' products have n_outputs columns
    initial = true_objective(alpha, H @ alpha)
    best = {"alpha": alpha.copy(), "objective": initial}
    curvature = _top_curvature(H, weight)
    stages = [1e-1, 1e-2, 1e-3] if loss == "hinge" else [None]
    iterations_per_stage = max(1, int(max_iter) // len(stages))
    n_iter = 0
    start = alpha
    for mu in stages:
        step = 1.0 / (_CURVATURE[loss](mu) * curvature)
        start, used = _fista(
            H, target, weight, loss, n_outputs, mu, penalty, start, step,
            iterations_per_stage, tol, true_objective, best, score_offset,
        )
        n_iter += used
    return SecondLayerFit(
        alpha=best["alpha"], objective=float(best["objective"]),
        initial_objective=float(initial), n_iter=n_iter,
    )


def _fista(H, target, weight, loss, n_outputs, mu, penalty, start, step, max_iter, tol,
           true_objective, best, score_offset):
    """One FISTA run (backtracking, adaptive restart); updates ``best`` in place. The momentum
    point's scores combine the iterates' (linear in ``alpha``): two products per iteration.
    ``score_offset``: the fixed part of the scores, ``H @ alpha + score_offset``."""

    weighted_target = weight[:, None] * target if n_outputs > 1 else None

    def smooth(scores, gradient=True):
        return _smooth_loss(scores + score_offset, target, weight, loss, n_outputs, mu,
                            gradient, weighted_target)

    x = start.copy()
    scores_x = H @ x
    objective_x = smooth(scores_x, gradient=False)[0] + penalty * np.abs(x).sum()
    momentum_point, scores_y, t = x.copy(), scores_x.copy(), 1.0
    history = [objective_x]
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        value_y, gradient_scores = smooth(scores_y)
        gradient = H.T @ gradient_scores
        while True:
            candidate = _soft_threshold(momentum_point - step * gradient, step * penalty)
            difference = candidate - momentum_point
            scores_c = H @ candidate
            value_c = smooth(scores_c, gradient=False)[0]
            # Sufficient decrease of the smooth part (the standard backtracking test).
            flat = difference.ravel()
            bound = value_y + np.dot(gradient.ravel(), flat) + np.dot(flat, flat) / (2.0 * step)
            if value_c <= bound + 1e-12 * abs(bound) or step < 1e-300:
                break
            step *= 0.5
        objective_c = value_c + penalty * np.abs(candidate).sum()
        exact = true_objective(candidate, scores_c) if loss == "hinge" else objective_c
        if exact < best["objective"]:
            best["alpha"], best["objective"] = candidate.copy(), exact
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        if objective_c > objective_x:
            # Adaptive restart: momentum pushed uphill; drop it.
            momentum_point, scores_y, t = x.copy(), scores_x.copy(), 1.0
        else:
            coefficient = (t - 1.0) / t_next
            momentum_point = candidate + coefficient * (candidate - x)
            scores_y = scores_c + coefficient * (scores_c - scores_x)
            x, scores_x, objective_x, t = candidate, scores_c, objective_c, t_next
        history.append(objective_x)
        if len(history) > 10:
            old = history[-11]
            if old - objective_x <= tol * max(abs(objective_x), 1e-12):
                break
    return x, n_iter
