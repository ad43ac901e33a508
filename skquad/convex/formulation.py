"""The convex SDP relaxation of binary-weight bilinear networks (Bartan & Pilanci).

This module is the CVXPY reference formulation (``solver="SCS"`` or
``"CLARABEL"`` of :class:`~skquad.SDPQuantizedClassifier`); the default
solver is the native factor solver of :mod:`skquad.convex.factor_solver`.
CVXPY is imported only when this path runs.

Scalar output (Bartan & Pilanci, eq. 25; one block per output for vector outputs,
Appendix B, eq. 67)::

    minimise    loss(Yhat, y) + 2 * beta * p * sum_k rho_k
    over        Q_k = [[V_k, Z_k], [Z_k^T, W_k]]  (2p x 2p, PSD),  diag(Q_k) = rho_k
    where       Yhat[i, k] = 2 <L(x_i), Z_k>.

``L(x_i)`` is the lifted input (:mod:`skquad.convex.lifting`; ``x x^T`` for
the plain bilinear network) and ``p`` the length of the binary weight vectors.

Penalty factor. The paper writes ``beta * d * rho``. Every network
``f = sum_j alpha_j (x^T u_j)(x^T v_j)`` with ±1 weights gives the feasible
point ``Q = sum_j |alpha_j| / 2 [u_j; s_j v_j][u_j; s_j v_j]^T``
(``s_j = sign(alpha_j)``) with the same predictions and
``rho = sum_j |alpha_j| / 2``, so its training objective
``loss + beta * d * sum_j |alpha_j|`` equals ``loss + 2 beta d rho``. Hence
``2 beta d rho`` is the largest penalty for which the SDP is a lower bound;
the paper's duality derivation (its eq. 51) loses this factor 2 in the dual
of the MaxCut-type relaxation (``max <A, Z>`` over unit-diagonal PSD
matrices has dual ``d * lambda_max([[diag z1, A], [A, diag z2]])``, not
``2 d * lambda_max``). We use ``2 beta d rho``: a valid and tighter
certificate, with ``beta`` meaning exactly what it means in the network's
objective (eq. 24). The paper's SDP with ``beta`` equals ours with ``beta/2``.

Losses are sample-weighted means over the training set, on labels ±1 for a
scalar output and class indices for vector outputs:

* ``"hinge"``: ``max(0, 1 - y f)``; Crammer-Singer ``max_k (f_k + [k != y]) - f_y``
  for vector outputs;
* ``"logistic"``: ``log(1 + exp(-y f))``; multinomial ``logsumexp(f) - f_y``;
* ``"squared"``: ``(f - y)^2``; ``sum_k (f_k - onehot_k)^2`` for vector outputs
  (one-hot targets, as in the paper's vehicle experiment).
"""

import time
import warnings

import numpy as np
import torch
from scipy.special import logsumexp
from sklearn.exceptions import ConvergenceWarning

from .._foundation._reporting import warn_user
from .._foundation._rows import merge_duplicate_samples
from .certificate import dual_bound
from .losses import dual_point, hinge_dual_point
from .problem import LiftedData, encode_targets
from .solution import SDPSolution, SolverFailedError, relative_gap

__all__ = [
    "LOSSES",
    "SDPSolution",
    "SolverFailedError",
    "aggregate_samples",
    "default_solver",
    "installed_solvers",
    "loss_value",
    "network_objective",
    "solve_sdp",
]

LOSSES = ("hinge", "logistic", "squared")

# CVXPY solvers able to solve semidefinite programs.
SDP_SOLVERS = ("CLARABEL", "SCS", "MOSEK", "CVXOPT", "COPT", "SDPA")

# The iteration-limit option of each solver, for the remedies in messages.
_ITERATION_OPTION = {"SCS": "max_iters", "CLARABEL": "max_iter", "MOSEK": "mosek_params"}


def installed_solvers():
    """The installed CVXPY solvers (imports CVXPY; None of it runs otherwise).

    Returns
    -------
    solvers : list of str
    """
    import cvxpy as cp

    return list(cp.installed_solvers())


# Lifted widths up to which CLARABEL beats SCS on the multiclass hinge loss (measured).
_HINGE_CLARABEL_MAX_P = 20


def default_solver(loss="squared", n_lifted=None, n_outputs=1):
    """The CVXPY solver to use when one is needed and none is named.

    (``SDPQuantizedClassifier(solver=None)`` uses the native factor solver;
    this choice serves the CVXPY reference path and the covariance step's
    ``covariance="sdp"``.)

    SCS (first order) for the squared and logistic losses and for the binary
    hinge loss: on Bartan & Pilanci's UCI problems it is several times faster
    than CLARABEL, and the gap grows with ``p``. The multiclass
    (Crammer-Singer) hinge loss is much harder for SCS (thousands of
    iterations), so with more than one output and up to ``p = 20`` it goes to
    CLARABEL (interior point), which also gives the more accurate certificate.
    ``python -m skquad.benchmarks --suite speed`` measures both (figures in
    the CHANGELOG).

    Parameters
    ----------
    loss : {"hinge", "logistic", "squared"}, default="squared"
    n_lifted : int, default=None
        ``p``, the length of the binary weight vectors (None: unknown).
    n_outputs : int, default=1
        Number of network outputs (1 for two classes, else the number of classes).

    Returns
    -------
    solver : str
        A CVXPY solver name.

    Examples
    --------
    >>> from skquad.convex import default_solver
    >>> default_solver("squared", 35)
    'SCS'
    >>> default_solver("hinge", 19, n_outputs=4)
    'CLARABEL'
    """
    if (
        loss == "hinge"
        and n_outputs > 1
        and n_lifted is not None
        and n_lifted <= _HINGE_CLARABEL_MAX_P
    ):
        return "CLARABEL"
    return "SCS"


def aggregate_samples(X, y, sample_weight):
    """Drop zero-weight samples and merge exact duplicates, summing weights.

    The SDP only sees the weighted empirical distribution, so this changes
    no optimum; it makes the problem smaller and makes "weight 2" and
    "sample repeated twice" the very same problem (same data, same order).

    Returns
    -------
    X, y, weight : arrays in a canonical (sorted) order, weights sum to 1.
        (``merge_duplicate_samples()``, then normalised.)
    """
    X, y, weight = merge_duplicate_samples(np.asarray(X, dtype=np.float64), y, sample_weight)
    return X, y, weight / weight.sum()


def _encode_targets(y, n_outputs):
    """The targets as given (±1 labels or reals) for one output; else a matrix."""
    target = encode_targets(y, n_outputs)
    return target[:, 0] if n_outputs == 1 else target


def loss_value(scores, y, weight, loss, n_outputs=1):
    """The weighted training loss of ``scores`` (numpy version of the SDP's loss).

    Parameters
    ----------
    scores : ndarray of shape (n_samples, n_outputs) or (n_samples,)
    y : ndarray of shape (n_samples,)
        For one output: labels in {-1, +1}, or real targets with the squared
        loss (regression). For ``n_outputs > 1``: class indices.
    weight : ndarray of shape (n_samples,)
        Non-negative; normalised to sum to one.
    loss : {"hinge", "logistic", "squared"}
    n_outputs : int

    Returns
    -------
    value : float
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(len(y), -1)
    weight = np.asarray(weight, dtype=np.float64)
    weight = weight / weight.sum()
    target = _encode_targets(y, n_outputs)
    if n_outputs == 1:
        f, t = scores[:, 0], target
        if loss == "hinge":
            per_sample = np.maximum(0.0, 1.0 - t * f)
        elif loss == "logistic":
            per_sample = np.logaddexp(0.0, -t * f)
        else:
            per_sample = (f - t) ** 2
    else:
        true_score = np.sum(scores * target, axis=1)
        if loss == "hinge":
            per_sample = np.max(scores + 1.0 - target, axis=1) - true_score
        elif loss == "logistic":
            per_sample = logsumexp(scores, axis=1) - true_score
        else:
            per_sample = np.sum((scores - target) ** 2, axis=1)
    return float(weight @ per_sample)


def network_objective(scores, y, weight, loss, alpha, beta, n_lifted):
    """Objective of a bilinear network (Bartan & Pilanci, eq. 24 / 57).

    ``loss(scores, y) + beta * p * sum_j ||alpha_j||_1`` with ``p`` the length
    of the binary weight vectors.
    """
    alpha = np.asarray(alpha, dtype=np.float64).reshape(len(alpha), -1)
    penalty = beta * n_lifted * np.abs(alpha).sum()
    return loss_value(scores, y, weight, loss, n_outputs=alpha.shape[1]) + penalty


def _cvxpy_loss(cp, scores, target, weight, loss, n_outputs):
    """The loss expression, and for the hinge losses the constraint whose dual is ``w s``.

    The hinge losses are written with explicit epigraph constraints so that
    their multipliers give the certificate its dual point (``w_i s_i``, or
    ``w_i pi_ik`` for Crammer-Singer).
    """
    n = target.shape[0]
    if n_outputs == 1:
        f = scores[:, 0]
        if loss == "hinge":
            slack = cp.Variable(n)
            margin = slack >= 1.0 - cp.multiply(target, f)
            return weight @ slack, [slack >= 0, margin], margin
        if loss == "logistic":
            per_sample = cp.logistic(-cp.multiply(target, f))
        else:
            per_sample = cp.square(f - target)
        return weight @ per_sample, [], None
    true_score = cp.sum(cp.multiply(scores, target), axis=1)
    if loss == "hinge":
        top = cp.Variable(n)
        margins = cp.reshape(top, (n, 1), order="F") @ np.ones((1, n_outputs)) >= scores + (
            1.0 - target
        )
        return weight @ (top - true_score), [margins], margins
    if loss == "logistic":
        return weight @ (cp.log_sum_exp(scores, axis=1) - true_score), [], None
    return cp.sum(weight @ cp.square(scores - target)), [], None


def relaxed_dual_point(data, scores, hinge_multipliers=None):
    """The certificate's dual point at given relaxed scores.

    ``l'(f)`` for the smooth losses; for the hinge losses the conic solver's
    multipliers of the margin constraints divided by the sample weights
    (projected on the dual domain by the certificate).
    """
    if data.loss != "hinge":
        return dual_point(scores, data.target, data.loss)
    weight = data.weight[:, None]
    dual = torch.where(weight > 0, hinge_multipliers / torch.clamp(weight, min=1e-300), 0.0)
    return hinge_dual_point(dual, data.target)


def solve_sdp(
    lifted,
    y,
    weight,
    *,
    loss="squared",
    beta=1e-3,
    n_outputs=1,
    solver=None,
    solver_options=None,
    tol=None,
):
    """Solve the SDP relaxation with CVXPY (the reference path) and certify it.

    Parameters
    ----------
    lifted : ndarray of shape (n_samples, p, p)
        Symmetric lifted inputs ``L(x_i)``.
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1} or real targets (one output), class indices (more).
    weight : ndarray of shape (n_samples,)
        Non-negative sample weights (normalised internally).
    loss : {"hinge", "logistic", "squared"}
    beta : float
        Weight of ``beta * p * sum_j ||alpha_j||_1`` in the network objective.
    n_outputs : int
    solver : str or None
        A CVXPY solver able to handle SDPs (and exponential cones for the
        logistic loss); None means :func:`default_solver` for this loss and ``p``.
    solver_options : dict or None
        Passed to ``problem.solve``.
    tol : float or None
        When given, a certified relative gap above it gives a
        :class:`~sklearn.exceptions.ConvergenceWarning`.

    Returns
    -------
    solution : SDPSolution
        ``Q`` is the solver's point made exactly feasible (its diagonal
        raised, ``_feasible_block``; ``info["violation"]`` is the solver's
        own point's), ``value`` the relaxed objective there (an upper bound on
        the SDP's optimum) and ``lower_bound`` the certificate of
        :func:`skquad.convex.dual_bound` computed from it: a true lower bound
        on the optimum whatever the solver's accuracy. So ``value -
        lower_bound >= 0`` up to round-off, however loose the solver's
        tolerance.

    Raises
    ------
    ValueError
        For a solver that cannot solve SDPs.
    TypeError
        For ``solver_options`` the solver does not accept.
    SolverFailedError
        When the solver errors out or returns no solution.
    """
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}.")
    n, p, _ = lifted.shape
    solver = default_solver(loss, p, n_outputs) if solver is None else str(solver).upper()
    if solver not in SDP_SOLVERS:
        raise ValueError(
            f"solver={solver!r} cannot solve semidefinite programs. Use solver=None "
            "(the native factor solver) or one of the CVXPY SDP solvers "
            f"{[name for name in SDP_SOLVERS if name in installed_solvers()]}."
        )
    weight = np.asarray(weight, dtype=np.float64)
    weight = weight / weight.sum()
    problem, blocks, hinge_constraint = _cvxpy_problem(lifted, y, weight, loss, beta, n_outputs)
    others = "solver=None (the native factor solver)" + (
        "" if solver == "CLARABEL" else " or solver='CLARABEL' (interior point)"
    )
    iteration_option = _ITERATION_OPTION.get(solver, "the solver's iteration limit")
    elapsed = _solve_cvxpy(problem, blocks, solver, dict(solver_options or {}), others,
                           iteration_option)
    status = problem.status
    returned = np.stack([np.asarray(block.value, dtype=np.float64) for block in blocks])
    returned = 0.5 * (returned + np.transpose(returned, (0, 2, 1)))
    data = LiftedData.from_lifted_matrices(
        lifted, y, weight, loss=loss, beta=beta, n_outputs=n_outputs
    )
    Q, rho, relaxed_scores, value, lower_bound = _certify_point(data, returned, hinge_constraint)
    gap = relative_gap(value, lower_bound)
    if tol is not None and gap > tol:
        warn_user(
            f"The SDP solver {solver!r} stopped (status {status!r}) at a certified "
            f"relative gap of {gap:.1e}, above tol={tol:g}. lower_bound_ still "
            "holds, but the relaxed solution and the sampled network may be off. "
            f"Try {others}, or a tighter solver tolerance / more iterations "
            f"through solver_options (e.g. {{{iteration_option!r}: ...}}).",
            ConvergenceWarning,
        )
    return SDPSolution(
        Q=Q,
        rho=rho,
        value=value,
        scores=relaxed_scores.numpy(),
        status=status,
        solver=solver,
        solve_time=elapsed,
        lower_bound=lower_bound,
        n_iter=int(problem.solver_stats.num_iters or 0),
        converged=tol is None or gap <= tol,
        info={
            # Of the solver's own point, against the diagonal's mean.
            "violation": _relative_violation(
                returned, np.maximum([np.mean(np.diag(block)) for block in returned], 0.0)
            ),
            "cvxpy_value": float(problem.value),
            "n_samples": n,
            "n_lifted": p,
            "compile_time": problem.compilation_time,
            "solver_time": problem.solver_stats.solve_time,
        },
    )


def _cvxpy_problem(lifted, y, weight, loss, beta, n_outputs):
    """The relaxation as a CVXPY problem: ``(problem, blocks, hinge constraint or None)``."""
    import cvxpy as cp

    n, p, _ = lifted.shape
    target = _encode_targets(y, n_outputs)
    design = lifted.reshape(n, p * p)
    blocks = [cp.Variable((2 * p, 2 * p), PSD=True) for _ in range(n_outputs)]
    rhos = cp.Variable(n_outputs)
    constraints = [cp.diag(Q) == rhos[k] for k, Q in enumerate(blocks)]
    columns = [2.0 * (design @ cp.vec(Q[:p, p:], order="F")) for Q in blocks]
    scores = cp.reshape(columns[0], (n, 1), order="F") if n_outputs == 1 else cp.vstack(columns).T
    data_loss, loss_constraints, hinge_constraint = _cvxpy_loss(
        cp, scores, target, weight, loss, n_outputs
    )
    objective = data_loss + 2.0 * beta * p * cp.sum(rhos)
    problem = cp.Problem(cp.Minimize(objective), constraints + loss_constraints)
    return problem, blocks, hinge_constraint


def _solve_cvxpy(problem, blocks, solver, options, others, iteration_option):
    """Solve ``problem`` with ``solver``; the seconds it took. A clear error where
    the options do not fit, the solver fails or it returns no usable point."""
    import cvxpy as cp

    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            # CVXPY's generic "Solution may be inaccurate": the certified gap says more.
            warnings.filterwarnings("ignore", message="Solution may be inaccurate")
            problem.solve(solver=solver, **options)
    except TypeError as exc:
        raise TypeError(
            f"solver_options={options!r} holds an option the {solver} solver does "
            f"not accept ({exc}). See the CVXPY documentation of {solver}'s options."
        ) from exc
    except cp.error.SolverError as exc:
        raise SolverFailedError(
            f"The SDP solver {solver!r} failed ({exc}). Try {others}, and check "
            "that the features are standardised (standardize=True): badly scaled "
            "inputs make the SDP ill-conditioned."
        ) from exc
    elapsed = time.perf_counter() - start
    status = problem.status
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or blocks[0].value is None:
        raise SolverFailedError(
            f"The SDP solver {solver!r} returned status {status!r} without a "
            f"usable solution. Try {others}, or allow more iterations "
            f"(solver_options={{{iteration_option!r}: ...}})."
        )
    return elapsed


def _certify_point(data, returned, hinge_constraint):
    """The solver's blocks made exactly feasible, ``(Q, rho)``, their scores, objective and certified
    lower bound: a conic solver's point is only nearly feasible, and only a feasible point's
    objective is an upper bound on the optimum whatever the solver's accuracy."""
    feasible = [_feasible_block(block) for block in returned]
    Q = np.stack([block for block, _ in feasible])
    rho = np.array([r for _, r in feasible])
    multipliers = None
    if hinge_constraint is not None:
        multipliers = torch.as_tensor(
            np.asarray(hinge_constraint.dual_value, dtype=np.float64).reshape(data.target.shape[0], -1)
        )
    p = data.n_lifted
    Z = [torch.as_tensor(block[:p, p:]) for block in Q]
    relaxed_scores = torch.stack([2.0 * data.matrix_inner(z) for z in Z], dim=1)
    value = float(data.objective(relaxed_scores, float(rho.sum())))
    lam = relaxed_dual_point(data, relaxed_scores, multipliers)
    directions = [_factor_direction(z / r) if r > 0 else None for z, r in zip(Z, rho)]
    lower_bound = dual_bound(data, lam, directions, feasible_value=value,
                             align_iterations=100).lower_bound
    return Q, rho, relaxed_scores, value, lower_bound


def _factor_direction(direction):
    """Unit-row factors ``(F, s)`` with ``F diag(s) Fᵀ`` close to ``direction``.

    From the eigendecomposition of the symmetric part (columns scaled by
    ``sqrt|eigenvalue|``, signs from the eigenvalues, rows normalised): the
    certificate re-optimises them (``align_factor``) to sharpen its ``mu``.
    """
    direction = 0.5 * (direction + direction.T)
    eigenvalues, eigenvectors = torch.linalg.eigh(direction)
    keep = torch.abs(eigenvalues) > 1e-9 * torch.abs(eigenvalues).max()
    F = eigenvectors[:, keep] * torch.sqrt(torch.abs(eigenvalues[keep]))
    norms = torch.linalg.vector_norm(F, dim=1, keepdim=True)
    F[norms[:, 0] <= 1e-150, 0] = 1.0  # a zero row (unused coordinate): any unit row
    F = F / torch.linalg.vector_norm(F, dim=1, keepdim=True)
    return F, torch.sign(eigenvalues[keep])


def _feasible_block(block):
    """The solver's symmetric ``block`` made exactly feasible: ``(Q, rho)``.

    Only the diagonal moves: ``Q = block + Diag(rho - diag(block))`` with
    ``rho = max_j block_jj + max(0, -lambda_min(block))``, a PSD matrix plus a
    non-negative diagonal. The scores stay the solver's own; only the penalty grows.
    """
    shift = max(0.0, -float(np.linalg.eigvalsh(block)[0]))
    diagonal = np.diag(block)
    rho = float(diagonal.max()) + shift
    feasible = block.copy()
    feasible[np.diag_indices_from(feasible)] = rho
    return feasible, rho


def _relative_violation(Q, rho):
    """Largest violation of diag(Q_k) = rho_k and Q_k >= 0, relative to max rho (a block switched
    off, rho_k ~ 0 with only round-off left, does not count as inaccurate)."""
    scale = max(float(np.max(np.abs(rho))), 1e-12)
    worst = 0.0
    for block, r in zip(Q, rho):
        diag_error = np.max(np.abs(np.diag(block) - r))
        eig_error = max(0.0, -np.linalg.eigvalsh(block)[0])
        worst = max(worst, (diag_error + eig_error) / scale)
    return worst
