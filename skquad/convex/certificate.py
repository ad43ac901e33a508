"""A lower bound on the SDP's optimum from any point: the certificate.

The SDP (Bartan & Pilanci, with the ``P - N`` form of the design note)::

    minimise  Σ_i w_i l(f_i) + 2 beta p Σ_k rho_k
    over      P_k, N_k ⪰ 0,  diag(P_k + N_k) = rho_k 1,  f_ik = 2 ⟨L(x_i), P_k - N_k⟩.

Weak duality, for any dual point ``lam`` (n x K, in the domain of ``l*``) and
any vectors ``mu_k`` with ``Diag(mu_k) ± 2 M_k ⪰ 0``, ``M_k = Σ_i w_i lam_ik L(x_i)``:

* Fenchel-Young: ``l(f_i) >= ⟨lam_i, f_i⟩ - l*(lam_i)``, so the loss is at
  least ``Σ_k 2 ⟨M_k, P_k - N_k⟩ - Σ_i w_i l*(lam_i)``;
* ``2 ⟨M_k, P_k⟩ >= -⟨Diag mu_k, P_k⟩`` and ``-2 ⟨M_k, N_k⟩ >= -⟨Diag mu_k, N_k⟩``,
  so ``2 ⟨M_k, P_k - N_k⟩ >= -rho_k 1ᵀ mu_k``;
* ``rho_k >= 0`` and ``2 beta p Σ_k rho_k <= optimum <= U`` for the
  objective ``U`` of any feasible point (the losses are non-negative), so
  ``Σ_k rho_k <= R = U / (2 beta p)``.

Hence, for every ``theta`` in [0, 1] (``theta lam`` stays in the domain and
``theta mu_k`` certifies ``theta M_k``)::

    LB(theta) = -Σ_i w_i l*(theta lam_i) - R max_k (theta 1ᵀmu_k - 2 beta p)_+

is below the SDP's optimum, hence below the training objective of every
binary network. It holds whatever ``lam`` is: the solver's accuracy only
decides how tight it is. ``lam = l'(f)`` at the returned scores (the
proximal dual for the hinge losses) is exact at the optimum. ``mu_k`` is the
first-order guess ``mu_j = -2 (M_k D_k)_jj`` with ``D_k = (P_k - N_k) /
rho_k`` (for factors, ``D_k = F diag(s) Fᵀ`` first re-optimised for the
linear objective ``⟨M_k, D⟩``, which makes the guess exact when the
factors' rank suffices: ``align_factor()``), lifted by the smallest eigenvalue of ``Diag mu_k ± 2 M_k`` (the
*eigenvalue test*; the rank growth of the factor solver adds the negative
eigenvectors as columns), or ``||2 M_k||_2 1`` when that is smaller.
``LB`` is maximised over ``theta`` (it is concave in ``theta``).
"""

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .._foundation._torch_utils import lbfgs_optimizer
from .losses import conjugate, project_dual

__all__ = ["Certificate", "align_factor", "dual_bound", "statistics_dual_bound"]

_GOLDEN = 0.5 * (5.0**0.5 - 1.0)


def golden_minimum(function, low, high, iterations=80):
    """Minimiser of a convex (or unimodal) function of one variable on
    ``[low, high]``: golden-section search, then the best of the bracket's
    points and the two ends. The SDP's 1-D searches (scales of a dual point
    or of a primal direction) all use it."""
    x1 = high - _GOLDEN * (high - low)
    x2 = low + _GOLDEN * (high - low)
    f1, f2 = function(x1), function(x2)
    for _ in range(iterations):
        if f1 > f2:
            low, x1, f1 = x1, x2, f2
            x2 = low + _GOLDEN * (high - low)
            f2 = function(x2)
        else:
            high, x2, f2 = x2, x1, f1
            x1 = high - _GOLDEN * (high - low)
            f1 = function(x1)
    best = min([(function(low), low), (f1, x1), (f2, x2), (function(high), high)])
    return best[1]


def squared_loss_rho(unit_scores, target, weight, penalty):
    """``argmin_{rho >= 0} Σ w (rho g - t)² + penalty rho`` for the scores ``g``
    of fixed directions at ``rho = 1``: a 1-D quadratic, in closed form (0
    when ``g`` is zero). The squared loss's solvers all choose ``rho`` so."""
    curvature = float(weight @ (unit_scores * unit_scores))
    slope = float(weight @ (unit_scores * target)) - 0.5 * penalty
    return max(0.0, slope / curvature) if curvature > 0 else 0.0


@dataclass
class Certificate:
    """A certified lower bound and what it was made of.

    Attributes
    ----------
    lower_bound : float
        ``max_theta LB(theta)``: at most the SDP's optimum.
    theta : float
        The maximiser.
    trace_bounds : list of float
        ``1ᵀ mu_k`` per block.
    eigenvalue_shifts : list of float
        How far below zero the first-order guess's eigenvalue test was, per
        block (0 at a second-order critical point of large enough rank).
    growth_directions : list of tuple
        Per block, ``(plus, minus)``: eigenvectors (columns) of
        ``Diag mu ± 2 M`` with clearly negative eigenvalues, as new factor
        columns for ``P`` (plus) and ``N`` (minus). Only when requested.
    aligned : list
        Per block, the factor directions after ``align_factor()`` (None
        where none were given): the next certificate's starting point.
    """

    lower_bound: float
    theta: float
    trace_bounds: list
    eigenvalue_shifts: list
    growth_directions: list = field(default_factory=list)
    aligned: list = field(default_factory=list)


def align_factor(M, weight, signs, iterations=100):
    """Factor columns minimising ``⟨M, F diag(s) Fᵀ⟩`` over unit rows.

    ``min ⟨2 M, D⟩`` over ``D = P - N``, ``diag(P + N) = 1`` is the dual of
    ``min 1ᵀmu`` subject to ``Diag mu ± 2 M ⪰ 0``; its first-order
    conditions give the certificate's ``mu``. Also the slope of the SDP
    objective in ``rho`` at ``rho = 0`` (a block that is switched off gets
    no gradient in its factors). ``O(p² r)`` per iteration, no pass over the
    samples. The input ``weight`` (p x r) is not modified.
    """
    variable = weight.detach().clone().requires_grad_(True)
    optimizer = lbfgs_optimizer(
        [variable], lr=1.0, max_iter=iterations, tolerance_grad=1e-12,
        tolerance_change=1e-15, history_size=20, line_search_fn="strong_wolfe",
    )

    def closure():
        optimizer.zero_grad()
        F = variable / torch.linalg.vector_norm(variable, dim=1, keepdim=True)
        value = ((M @ F) * F * signs).sum()
        value.backward()
        return value

    with torch.enable_grad():
        optimizer.step(closure)
    with torch.no_grad():
        return variable / torch.linalg.vector_norm(variable, dim=1, keepdim=True)


def _symmetric_eigh(matrix, vectors):
    matrix = 0.5 * (matrix + matrix.T)
    if vectors:
        return torch.linalg.eigh(matrix)
    return torch.linalg.eigvalsh(matrix), None


def _negative_directions(eigenvalues, eigenvectors, threshold, max_columns):
    selected = torch.nonzero(eigenvalues < -threshold).flatten()[:max_columns]
    return eigenvectors[:, selected]


def dual_bound(data, lam, directions=None, *, growth_columns=0, feasible_value=None,
               align_iterations=0, align_starts=None, mu_candidates=None):
    """The certified lower bound of the SDP from a dual point.

    Parameters
    ----------
    data : LiftedData
    lam : tensor of shape (n_samples, n_outputs)
        Dual point; projected into the conjugate's domain first.
    directions : list, default=None
        Per block, ``(P_k - N_k) / rho_k`` of the current point (a p x p
        tensor), or factors ``(F_k, s_k)`` with ``D_k = F_k diag(s_k) F_kᵀ``,
        or None: shapes the first-order guess of ``mu_k``.
    growth_columns : int, default=0
        When positive, also return up to this many negative-eigenvalue
        directions per block and sign (``Certificate.growth_directions``).
    feasible_value : float, default=None
        The objective of a feasible point (``U`` above); None: the zero
        network's. The smaller, the tighter the bound.
    align_iterations : int, default=0
        For factor directions, L-BFGS iterations of ``align_factor()``;
        the aligned directions give a second candidate ``mu``.
    align_starts : list, default=None
        Per block, where the alignment starts (e.g. the previous
        certificate's ``aligned``); None: the factors themselves.
    mu_candidates : list, default=None
        Per block, a vector ``mu_k`` of length p (or None) to try as well,
        e.g. a conic solver's multipliers of ``diag(P_k + N_k) = rho_k 1``;
        lifted by the same eigenvalue test, so any vector is safe.

    Returns
    -------
    certificate : Certificate
    """
    lam = project_dual(lam, data.target, data.loss)
    weight, target = data.weight, data.target
    matrices = [data.weighted_matrix(weight * lam[:, k]) for k in range(data.n_outputs)]

    def dual_value(theta):
        return -float(weight @ conjugate(theta * lam, target, data.loss))

    return _matrices_bound(
        matrices, dual_value, data.zero_network_value(), data.penalty_per_rho,
        data.loss == "squared", directions, growth_columns=growth_columns,
        feasible_value=feasible_value, align_iterations=align_iterations,
        align_starts=align_starts, mu_candidates=mu_candidates,
    )


def statistics_dual_bound(statistics, D, penalty, directions=None, *, feasible_value=None):
    """:func:`dual_bound` of the squared loss from normalized
    :class:`~skquad.convex.LiftedStatistics`, at ``lam = 2 (f - t)``
    of the point ``D`` (m x K, ``f = 2 Φᵀ D``): ``M_k = smat(2 (2 G d_k - b_k))``
    and ``Σ w l*(θ lam) = Σ_k θ a_k + θ² q_k / 4`` with ``a_k = Σ w lam t =
    2 (2 d_kᵀ b_k - T_k)`` and ``q_k = Σ w lam² = 4 loss_k``.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.convex import InputLifting, LiftedStatistics, statistics_dual_bound
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.standard_normal((200, 2)), rng.standard_normal(200)
    >>> rows = LiftedStatistics.of_rows(InputLifting().features(X), y, np.ones(200))
    >>> sums = rows.normalized()
    >>> zero = np.zeros((sums.gram.shape[0], 1))  # the zero network
    >>> bound = statistics_dual_bound(sums, zero, penalty=2e-3 * sums.n_lifted)
    >>> bool(bound.lower_bound <= sums.target_square.sum())
    True
    """
    GD = statistics.gram @ D
    matrices = [
        torch.as_tensor(statistics.matrix(2.0 * (2.0 * GD[:, k] - statistics.cross[:, k])))
        for k in range(statistics.n_outputs)
    ]
    a = 2.0 * (2.0 * np.einsum("ik,ik->k", D, statistics.cross) - statistics.target_square)
    q = 4.0 * np.maximum(statistics.loss(D), 0.0)

    def dual_value(theta):
        return -float(np.sum(theta * a + 0.25 * theta**2 * q))

    return _matrices_bound(
        matrices, dual_value, float(statistics.target_square.sum()), penalty, True, directions,
        feasible_value=feasible_value,
    )


def _matrices_bound(matrices, dual_value, zero_value, penalty, squared, directions=None, *,
                    growth_columns=0, feasible_value=None, align_iterations=0,
                    align_starts=None, mu_candidates=None):
    """The bound of :func:`dual_bound` from the blocks' ``M_k`` and ``θ -> -Σ w l*(θ lam)``."""
    p = matrices[0].shape[0]
    eps = torch.finfo(matrices[0].dtype).eps
    trace_bounds, shifts, growth, aligned = [], [], [], []
    for k, M in enumerate(matrices):
        # Candidate 1: no first-order information, mu = ||2 M||_2 * 1.
        eig_M = torch.linalg.eigvalsh(0.5 * (M + M.T))
        norm = 2.0 * float(torch.max(torch.abs(eig_M)))
        best = p * norm * (1.0 + 64 * eps) if norm > 0 else 0.0
        shift_k = 0.0
        direction = None if directions is None else directions[k]
        candidates, aligned_k = [], None
        if isinstance(direction, tuple):
            F, signs = direction
            candidates.append((F * signs) @ F.T)
            if align_iterations > 0:
                start = F if align_starts is None or align_starts[k] is None else align_starts[k]
                aligned_k = align_factor(M, start, signs, align_iterations)
                candidates.append((aligned_k * signs) @ aligned_k.T)
        elif direction is not None:
            candidates.append(direction)
        aligned.append(aligned_k)
        candidates = [0.5 * (D + D.T) for D in candidates]
        if mu_candidates is not None and mu_candidates[k] is not None:
            candidates.append(torch.as_tensor(mu_candidates[k], dtype=M.dtype, device=M.device))
        for index, candidate in enumerate(candidates):
            # The first candidate (the current point) also gives the eigenvalue
            # test of the rank growth; the aligned one usually the tighter mu.
            first = index == 0
            # A direction D gives the first-order guess; a vector is mu itself.
            mu = candidate if candidate.dim() == 1 else -2.0 * (M * candidate).sum(dim=1)
            wanted = first and growth_columns > 0
            eig_plus, vec_plus = _symmetric_eigh(torch.diag(mu) + 2.0 * M, wanted)
            eig_minus, vec_minus = _symmetric_eigh(torch.diag(mu) - 2.0 * M, wanted)
            scale = max(float(torch.max(torch.abs(eig_plus))), float(torch.max(torch.abs(eig_minus))))
            shift = max(0.0, -float(eig_plus[0]), -float(eig_minus[0]))
            # Round-off of eigh: a backward error of a few eps times the norm.
            guarded = shift + 64 * eps * p * max(scale, 1e-300)
            best = min(best, float(mu.sum()) + p * guarded)
            if first:
                shift_k = shift
            if wanted:
                threshold = 1e-3 * max(shift, 1e-300)
                growth.append((
                    _negative_directions(eig_plus, vec_plus, threshold, growth_columns),
                    _negative_directions(eig_minus, vec_minus, threshold, growth_columns),
                ))
        trace_bounds.append(best)
        shifts.append(shift_k)

    upper = zero_value if feasible_value is None else min(zero_value, float(feasible_value))
    rho_sum_max = upper / penalty if penalty > 0 else float("inf")

    def bound(theta):
        dual = dual_value(theta)
        excess = max(max(0.0, theta * t - penalty) for t in trace_bounds)
        if excess <= 0.0:
            return dual
        if rho_sum_max == float("inf"):
            return -float("inf")
        return dual - rho_sum_max * excess

    # LB is concave in theta: golden-section search on [0, 1], plus the kink.
    candidates = [0.0, 1.0]
    largest = max(trace_bounds) if trace_bounds else 0.0
    if largest > penalty:
        candidates.append(penalty / largest)
    if squared:
        # The squared loss's conjugate is quadratic: LB is -a theta - b theta²
        # up to the kink and that less rho_sum_max (theta largest - penalty)
        # after it, concave quadratics whose maxima on [0, 1] are at an end,
        # the kink or a vertex, all candidates: no search, which would take
        # dozens of evaluations of LB. From dual(1) = -a - b and
        # dual(1/2) = -a/2 - b/4:
        whole = dual_value(1.0)
        b = 2.0 * (2.0 * dual_value(0.5) - whole)
        a = -whole - b
        if b > 0:
            for slope in (a, a + rho_sum_max * largest):
                if math.isfinite(slope):
                    candidates.append(min(max(-slope / (2.0 * b), 0.0), 1.0))
    else:
        candidates.append(golden_minimum(lambda theta: -bound(theta), 0.0, 1.0, iterations=60))
    values = [(bound(theta), theta) for theta in candidates]
    lower_bound, theta = max(values)
    return Certificate(
        lower_bound=float(lower_bound),
        theta=float(theta),
        trace_bounds=trace_bounds,
        eigenvalue_shifts=shifts,
        growth_directions=growth,
        aligned=aligned,
    )
