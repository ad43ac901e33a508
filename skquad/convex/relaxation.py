"""One entry point for the SDP relaxation: the native solver or CVXPY, certified.

:func:`solve_relaxation` is what :class:`~skquad.SDPQuantizedClassifier`
(and a regularization path over ``beta``) calls: it builds the lifted data
(:class:`~skquad.convex.problem.LiftedData`) from an
:class:`~skquad.convex.lifting.InputLifting` and raw inputs, runs the chosen
solver, and returns an :class:`~skquad.convex.solution.SDPSolution` whose
``lower_bound`` is the certificate of :mod:`skquad.convex.certificate`.
Messages name the estimator's parameters (``tol``, ``max_iter``, ``solver``,
``solver_options``, ``beta``), which are also this function's.
"""

import dataclasses
import math
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._foundation._reporting import warn_user
from .._foundation._torch_utils import resolve_device
from .blocks import solve_blocks
from .compact_solver import solve_compact_statistics
from .factor_solver import FACTOR_SOLVER_OPTIONS, start_columns_per_sign
from .formulation import loss_value, solve_sdp
from .problem import LiftedData
from .routes import Problem, active_routes, first_route
from .solution import rescale_solution

__all__ = ["relaxation_memory", "solve_relaxation", "solve_relaxation_statistics"]


# The native solver's options: (kind, smallest allowed value).
_OPTION_RULES = {
    "rank": ("int", 1),
    "max_rank": ("int", 1),
    "chunk_size": ("int", 1),
    "history_size": ("int", 1),
    "align_iterations": ("int", 0),
    "hinge_sigma": ("real", 0.0),
    "time_limit": ("real", 0.0),
}


def relaxation_memory(n_samples, n_lifted, n_outputs, *, loss, solver=None, solver_options=None):
    """Bytes a solve holds at its start, all ``O(p²)``: per output the ``2p x 2p`` solution and
    covariance (4 copies); CVXPY's ``n x p x p`` lifted inputs (3), else the factor solver's
    ``2 history_size + 5`` L-BFGS vectors of ``p x rank`` at its start rank and ``p x p`` scratch."""
    p = int(n_lifted)
    # valid solver_options only (they are checked later, with their messages)
    options = {key: value for key, value in (solver_options or {}).items()
               if isinstance(value, Integral) and not isinstance(value, bool) and value >= 1}
    if solver is not None:
        return 8.0 * (4 * n_outputs * (2 * p) ** 2 + 3 * n_samples * p * p)
    # the numpy block solver's (one block at a time), else the torch solver's per output
    squared = loss == "squared"
    rank = options.get("rank") or (2 * start_columns_per_sign(p) if squared else math.ceil(math.sqrt(2 * p)))
    rank *= 1 if squared else n_outputs
    return 8.0 * (4 * n_outputs * (2 * p) ** 2 + (2 * options.get("history_size", 30) + 5) * p * rank + 4 * p * p)


def _check_factor_options(options):
    """Validate ``solver_options`` for the native solver: names of ``FACTOR_SOLVER_OPTIONS``,
    integers (not bools) at least the rule's minimum, ``hinge_sigma`` and ``time_limit`` finite
    and above 0; None leaves ``rank``, ``max_rank`` and ``time_limit`` to the solver."""
    unknown = sorted(set(options) - set(FACTOR_SOLVER_OPTIONS))
    if unknown:
        raise TypeError(
            f"solver_options={options!r} holds options the native solver "
            f"(solver=None) does not accept: {unknown}. It accepts "
            f"{list(FACTOR_SOLVER_OPTIONS)}; CVXPY options go with a CVXPY "
            "solver (solver='SCS' or 'CLARABEL')."
        )
    for key, value in options.items():
        kind, smallest = _OPTION_RULES[key]
        if value is None and key in ("rank", "max_rank", "time_limit"):
            continue
        if kind == "int":
            valid = isinstance(value, Integral) and not isinstance(value, bool) and value >= smallest
            wanted = f"an integer >= {smallest}"
        else:
            valid = (
                isinstance(value, Real) and not isinstance(value, bool)
                and math.isfinite(value) and value > smallest
            )
            wanted = "a finite number > 0"
        if not valid:
            raise ValueError(
                f"solver_options[{key!r}] must be {wanted}, got {value!r}."
            )
    if options.get("rank") is not None and options.get("max_rank") is not None:
        if options["rank"] > options["max_rank"]:
            raise ValueError(
                f"solver_options['rank']={options['rank']} is larger than "
                f"solver_options['max_rank']={options['max_rank']}."
            )


def _solve_by_routes(problem, device):
    """The first route of the table that takes ``problem``, continued by its
    ``then`` when it stops short of ``tol`` (from its point; both bounds hold
    for the same optimum, the larger is kept)."""
    row, solution = _first_solution(problem)
    stopped = solution.converged or solution.info.get("stopped_by_callback")
    if row.splits(problem.on(row).data) or not row.then or stopped or problem.max_iter == 0:
        solution.info["device"] = "cpu" if row.cpu_only else str(device)
        return solution
    options = dict(problem.options)
    if options.get("time_limit") is not None:
        options["time_limit"] = max(options["time_limit"] - solution.solve_time, 1e-9)
    then = dataclasses.replace(problem, init=solution, options=options, after=row.name)
    second_row = first_route(then, row.then)
    second = _solve_row(second_row, then.on(second_row))
    second.solver_path = solution.solver_path + second.solver_path
    second.info["device"] = "cpu" if second_row.cpu_only else str(device)
    if solution.lower_bound > second.lower_bound:
        second.lower_bound = solution.lower_bound
        second.converged = second.relative_gap <= problem.tol
    return second


def _first_solution(problem):
    """The first row that takes ``problem`` and does not decline it, with its solution."""
    for row in active_routes():
        if problem.asks_factor_solver and not row.takes_solver_options:
            continue
        if row.applies(problem.on(row)):
            solution = _solve_row(row, problem.on(row))
            if solution is not None:
                return row, solution
    raise ValueError(
        f"No native solver route takes this problem (loss={problem.data.loss!r}, "
        f"{problem.data.n_outputs} outputs); routes: {[row.name for row in active_routes()]}."
    )


def _solve_row(row, problem):
    if row.splits(problem.data):
        return solve_blocks(problem, row)
    solution = row.solve(problem)
    if solution is not None:
        solution.solver, solution.solver_path = row.name, (row.name,)
    return solution


def _warn_if_short(solution, options, tol, max_iter):
    """The ConvergenceWarning of a native solve that stopped above ``tol``, with its reason."""
    if solution.converged or solution.info.get("stopped_by_callback"):
        return
    if solution.status == "stalled":
        reason = "a point it could not improve (no column left to add)"
        remedy = "a larger solver_options['max_rank'] where it was set"
    elif solution.status == "time_limit":
        reason = f"its time limit (solver_options['time_limit']={options['time_limit']:g} s)"
        remedy = "a larger time limit"
    else:
        reason = f"max_iter={max_iter}"
        remedy = "a larger max_iter"
    warn_user(
        f"The native SDP solver stopped at {reason} after {solution.n_iter} "
        f"iterations at a certified relative gap of {solution.relative_gap:.1e}, "
        f"above tol={tol:g}. lower_bound_ still holds; the relaxed solution (and "
        f"the network sampled from it) may be improved by {remedy}, a larger "
        "tol, or solver='CLARABEL' for small problems.",
        ConvergenceWarning,
    )


def solve_relaxation(
    lifting,
    X,
    y,
    weight,
    *,
    loss,
    beta,
    n_outputs,
    solver=None,
    solver_options=None,
    tol=1e-4,
    max_iter=3000,
    init=None,
    callback=None,
    verbose=0,
    device="auto",
    target_scale=1.0,
):
    """Solve the SDP relaxation of Bartan & Pilanci and certify the result.

    Parameters
    ----------
    lifting : InputLifting
        With the standardization to apply (``center``, ``scale``).
    X : ndarray of shape (n_samples, n_features)
        Raw training inputs (deduplicated, see :func:`aggregate_samples`).
    y : ndarray of shape (n_samples,)
        ±1 labels (one output) or class indices.
    weight : ndarray of shape (n_samples,)
        Non-negative sample weights.
    loss : {"hinge", "logistic", "squared"}
    beta : float
    n_outputs : int
    solver : None or str, default=None
        None: the native solvers, chosen and continued by the solver table
        (:data:`skquad.convex.ROUTES`: the first row that applies solves; a
        row that stops short of ``tol`` is continued by its ``then``). A CVXPY
        solver name (``"SCS"``, ``"CLARABEL"``): the reference formulation
        (:func:`solve_sdp`, which forms the ``n x p x p`` lifted inputs).
    solver_options : dict, default=None
        Native solver: keyword arguments among ``FACTOR_SOLVER_OPTIONS``
        (``rank``, ``max_rank``, ``chunk_size``, ``history_size``,
        ``hinge_sigma``); CVXPY: keyword arguments of ``problem.solve``.
    tol : float, default=1e-4
        Relative certified gap at which the native solver stops (and above
        which either path warns).
    max_iter : int, default=3000
        Native solver: largest number of L-BFGS iterations.
    init : SDPSolution, default=None
        Native solver: warm start from a previous native solution.
    callback : callable, default=None
        Native solver: ``callback(info) -> bool`` after every chunk (see
        :func:`solve_factored`); True stops the solve.
    verbose : int, default=0
        Native solver: print the progress of every chunk.
    device : "auto", str or torch.device, default="auto"
        Native solver: where it computes ("auto" = the CPU).
    target_scale : float, default=1.0
        Squared loss only: ``c > 0``. The solvers see ``y / c`` and
        ``beta / c`` (targets of order 1 for a ``c`` of ``y``'s magnitude)
        and the solution is returned for ``(y, beta)``
        (:func:`~skquad.convex.rescale_solution`: exact, the
        problem is scale-equivariant); ``init`` is given for ``(y, beta)``.
        ``verbose`` prints the scaled problem's objective and bound (``1 /
        c^2`` of ``y``'s; the relative gap is the same).

    Returns
    -------
    solution : SDPSolution
        ``solver`` names the route that produced it, ``solver_path`` every stage.
    """
    user_beta = beta
    if target_scale != 1.0:
        if loss != "squared":
            raise ValueError(f"target_scale applies to the squared loss only, got loss={loss!r}.")
        y = np.asarray(y, dtype=np.float64) / target_scale
        beta = beta / target_scale
        init = None if init is None else rescale_solution(init, 1.0 / target_scale)
    if solver is not None:
        solution = solve_sdp(
            lifting.matrices(X), y, weight, loss=loss, beta=beta, n_outputs=n_outputs,
            solver=solver, solver_options=solver_options, tol=tol,
        )
    else:
        options = dict(solver_options or {})
        _check_factor_options(options)
        device = resolve_device(device)
        data = LiftedData.from_lifting(
            lifting, X, y, weight, loss=loss, beta=beta, n_outputs=n_outputs, device=device,
        )
        # CPU-only routes see the data on the CPU whatever ``device``.
        cpu_data = data if device.type == "cpu" else LiftedData.from_lifting(
            lifting, X, y, weight, loss=loss, beta=beta, n_outputs=n_outputs, device="cpu",
        )
        solution = _solve_by_routes(Problem(
            data, options, tol=tol, max_iter=max_iter, init=init, callback=callback,
            verbose=verbose, cpu_data=cpu_data,
        ), device)
        _warn_if_short(solution, options, tol, max_iter)
    zero_value = loss_value(np.zeros((len(y), n_outputs)), y, weight, loss, n_outputs)
    _warn_if_zero_network(solution, zero_value, beta, user_beta)
    return rescale_solution(solution, target_scale)


# The start of that warning's message, for a caller that picks the zero network on purpose.
ZERO_NETWORK_WARNING = r"beta=\S+ is so large that the relaxed optimum is the zero network"


def _warn_if_zero_network(solution, zero_value, beta, user_beta):
    """The warning of a certified optimum at the zero network (the model is its offset alone)."""
    # (A solve cut short keeps unreached blocks at zero: no statement about beta.)
    finished = solution.status not in ("time_limit", "stopped")
    # The optimum is the zero network when the certified point does no better
    # than the zero network's objective (scores 0, no penalty); a penalty
    # small against the objective says nothing (it is, for every tiny beta).
    at_zero = solution.value >= zero_value * (1.0 - 1e-7)
    if finished and beta > 0 and at_zero and solution.converged:
        warn_user(
            f"beta={user_beta:g} is so large that the relaxed optimum is the zero "
            "network (rho = 0, certified): the network adds nothing to the model's offset "
            "(its constant, or its linear term). "
            "Use a smaller beta.",
            UserWarning,
        )


def solve_relaxation_statistics(statistics, *, beta, tol=1e-4, target_scale=1.0):
    """:func:`solve_relaxation` of the squared loss from its sufficient statistics.

    ``statistics``: normalized :class:`~skquad.convex.LiftedStatistics`
    of the targets ``y``; solved as ``(y / c, beta / c)`` for ``c =
    target_scale`` by ``compact_solver.solve_compact_statistics``
    (the compact form, whose cost does not depend on the number of rows) and
    returned for ``(y, beta)``. Warns as :func:`solve_relaxation` does.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.convex import (InputLifting, LiftedStatistics,
    ...                            solve_relaxation_statistics)
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((200, 2))
    >>> y = X[:, 0] * X[:, 1]
    >>> sums = LiftedStatistics.of_rows(InputLifting().features(X), y, np.ones(200))
    >>> solution = solve_relaxation_statistics(sums.normalized(), beta=1e-3)
    >>> bool(solution.lower_bound <= solution.objective), solution.solver
    (True, 'compact')
    """
    scaled = statistics.scaled(target_scale)
    solution = solve_compact_statistics(scaled, beta / target_scale, tol=tol)
    solution.solver_path = ("compact",)
    if not solution.converged:
        warn_user(
            f"The compact SDP solve from the sufficient statistics stopped at a certified "
            f"relative gap of {solution.relative_gap:.1e}, above tol={tol:g}. lower_bound_ "
            "still holds; a larger beta or tol gives a better-conditioned problem.",
            ConvergenceWarning,
        )
    _warn_if_zero_network(solution, float(scaled.target_square.sum()), beta, beta)
    return rescale_solution(solution, target_scale)
