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

import concurrent.futures
import dataclasses
import math
import os
import time
from numbers import Integral, Real

import numpy as np

from sklearn.exceptions import ConvergenceWarning

from .._reporting import warn_user
from .._torch_utils import resolve_device
from .._training._threads import limit_threads
from .compact_solver import compact_applies, solve_compact
from .factor_solver import (
    _SINGLE_THREAD_WORK,
    FACTOR_SOLVER_OPTIONS,
    solve_factored,
    solve_squared_block,
    squared_block_applies,
    threads_for,
)
from .formulation import loss_value, solve_sdp
from .hinge_dual import hinge_dual_applies, solve_hinge_dual
from .problem import LiftedData
from .solution import SDPSolution, SolverFailedError, relative_gap, rescale_solution
from .squared_dual import (
    FACTOR_ITERATIONS_BEFORE_DUAL,
    SQUARED_DUAL_FIRST_LIFTED,
    solve_squared_dual,
    squared_dual_applies,
)

__all__ = ["solve_relaxation"]


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


def _check_factor_options(options):
    """Validate the values of ``solver_options`` for the native solver.

    Integers (not bools, not floats such as 2.5) at least the rule's minimum;
    ``hinge_sigma`` and ``time_limit`` finite reals above 0; None leaves
    ``rank``, ``max_rank`` and ``time_limit`` to the solver's defaults.
    """
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


def _solve_blocks_separately(data, init, *, callback=None, use_dual=False, **options):
    """The squared loss's blocks one at a time with the factor solver.

    The objective ``Σ_k [Σ_i w_i (f_ik - t_ik)² + 2 beta p rho_k]`` is a sum
    of independent SDPs, one per output, so the optimum is the sum of the
    blocks' optima and the sum of their certified lower bounds is a lower
    bound of it. Solving them apart gives each block its own rank, its own
    number of iterations and its own stop (measured on iris: 1723 joint
    iterations against 403 in all); a block whose relative gap is at most
    ``tol`` keeps the sum's relative gap at most ``tol``. ``max_iter``
    applies to each block. ``use_dual``: each block is solved by
    :func:`_solve_block_with_dual` (the barrier on its exact dual and the
    numpy factor solver).
    """
    time_limit = options.pop("time_limit", None)
    start_time = time.perf_counter()

    def solve_block(k):
        block = dataclasses.replace(data, target=data.target[:, k : k + 1])
        start = None
        if init is not None and init.factors is not None and len(init.factors) == data.n_outputs:
            start = dataclasses.replace(
                init, factors=[init.factors[k]], rho=np.asarray(init.rho)[k : k + 1], dual=None
            )
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - start_time)
        if remaining is not None and remaining <= 0:
            return None
        if use_dual:
            return _solve_block_with_dual(block, start, callback, remaining, options)
        # Plain CPU blocks go to the numpy L-BFGS-B solver (no autograd, one
        # L-BFGS memory, a rank near the optima's from the start).
        if squared_block_applies(block):
            return solve_squared_block(block, init=start, callback=callback, time_limit=remaining, **options)
        return solve_factored(block, init=start, callback=callback, time_limit=remaining, **options)

    workers = _block_workers(data, callback, options)
    if workers > 1:
        # Independent blocks, each on one torch and one BLAS thread (small
        # problems only, see _block_workers): the matrix products release
        # the GIL, so blocks run side by side on the cores. The one-BLAS-thread
        # limit is taken here, in the calling thread: threadpoolctl lets only
        # one live thread change OpenBLAS's process-wide limit, so the
        # workers' own requests were ignored or, when a worker held that
        # control, the last one's restore was, and the process kept one BLAS
        # thread after the fit.
        with limit_threads(None, blas=1), concurrent.futures.ThreadPoolExecutor(
            max_workers=workers
        ) as pool:
            results = list(pool.map(solve_block, range(data.n_outputs)))
    else:
        results = []
        for k in range(data.n_outputs):
            results.append(solve_block(k))
            if results[-1] is None or results[-1].info.get("stopped_by_callback"):
                break
    parts, stopped, out_of_time = [], False, False
    for part in results:
        if part is None:
            out_of_time = True
            break
        parts.append(part)
        if part.info.get("stopped_by_callback"):
            stopped = True
            break
    if stopped or out_of_time:
        # The remaining blocks keep the zero network: feasible, and certified
        # by the zero network's own value bound 0 <= optimum (losses are >= 0).
        for k in range(len(parts), data.n_outputs):
            block = dataclasses.replace(data, target=data.target[:, k : k + 1])
            parts.append(_zero_block(block))
    value = sum(part.value for part in parts)
    lower_bound = sum(part.lower_bound for part in parts)
    tol = options.get("tol", 1e-4)
    converged = relative_gap(value, lower_bound) <= tol
    return SDPSolution(
        Q=np.concatenate([part.Q for part in parts]),
        rho=np.concatenate([part.rho for part in parts]),
        value=float(value),
        scores=np.column_stack([part.scores for part in parts]),
        status="optimal" if converged else (
            "stopped" if stopped else (
                "time_limit" if out_of_time or any(part.status == "time_limit" for part in parts)
                else ("stalled" if all(part.status in ("optimal", "stalled") for part in parts)
                      else "max_iter")
            )
        ),
        # "squared_dual" where the dual barrier solved every block alone.
        solver="squared_dual" if all(part.solver == "squared_dual" for part in parts) else "native",
        solve_time=sum(part.solve_time for part in parts),
        lower_bound=float(lower_bound),
        factors=[factor for part in parts for factor in part.factors],
        dual=None,
        n_iter=int(sum(part.n_iter for part in parts)),
        converged=bool(converged),
        info={
            "history": [entry for part in parts for entry in part.info.get("history", [])],
            "rank": [part.info.get("rank") for part in parts],
            "stopped_by_callback": stopped,
            "blocks": [{"n_iter": part.n_iter, "gap": part.relative_gap} for part in parts],
        },
    )


def _solve_block_with_dual(block, start, callback, time_limit, options):
    """One squared-loss block by the barrier on its exact dual and the numpy factor solver.

    From ``SQUARED_DUAL_FIRST_LIFTED`` lifted coordinates on the dual goes
    first; below, the factor solver, which is then often faster, gets
    ``FACTOR_ITERATIONS_BEFORE_DUAL`` iterations first (see
    :mod:`~skquad.convex.squared_dual`). A block the dual leaves above
    ``tol`` is continued by the factor solver from the better point met,
    with the best bound met (all bounds hold for the same optimum);
    ``n_iter`` counts the iterations and Newton steps of every stage.
    """
    started = time.perf_counter()
    tol, max_iter = options.get("tol", 1e-4), options.get("max_iter", 3000)

    def remaining():
        return None if time_limit is None else time_limit - (time.perf_counter() - started)

    def finished(part):
        left = remaining()
        return (
            part.converged or part.info["stopped_by_callback"] or part.status == "time_limit"
            or (left is not None and left <= 0)
        )

    def factor_solve(init, iterations, **known):
        # (the torch factor solver for the polynomial lifting, which the
        # numpy block solver does not take; it has no known-bound start)
        if squared_block_applies(block):
            return solve_squared_block(
                block, init=init, callback=callback, time_limit=remaining(), **known,
                **{**options, "max_iter": iterations},
            )
        return solve_factored(
            block, init=init, callback=callback, time_limit=remaining(),
            **{**options, "max_iter": iterations},
        )

    stages = []
    if block.n_lifted < SQUARED_DUAL_FIRST_LIFTED:
        budget = min(FACTOR_ITERATIONS_BEFORE_DUAL, max_iter)
        stages.append(factor_solve(start, budget))
        if finished(stages[-1]) or budget >= max_iter:
            return stages[-1]
    stages.append(solve_squared_dual(
        block, tol=tol, time_limit=remaining(), callback=callback,
        verbose=options.get("verbose", 0),
    ))
    used = sum(part.n_iter for part in stages)
    if not (finished(stages[-1]) or max_iter == 0 or used >= max_iter):
        best = min(stages, key=lambda part: part.value)
        stages.append(factor_solve(
            best, max_iter - used, lower_bound=max(part.lower_bound for part in stages)
        ))
    solution = stages[-1]
    bound = max(part.lower_bound for part in stages)
    if bound > solution.lower_bound:
        solution.lower_bound = bound
        solution.converged = solution.relative_gap <= tol
        if solution.converged:
            solution.status = "optimal"
    solution.n_iter = sum(part.n_iter for part in stages)
    return solution


def _block_workers(data, callback, options):
    """How many blocks to solve at once: one per available core when each
    block runs on one thread (``threads_for``'s small problems), there is no
    callback to call in order, and the problem is on the CPU."""
    if callback is not None or options.get("verbose") or data.features.device.type != "cpu":
        return 1
    rank = options.get("rank") or math.ceil(math.sqrt(2.0 * data.n_lifted))
    work = data.features.shape[0] * data.n_lifted * rank
    if work >= _SINGLE_THREAD_WORK:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, data.n_outputs))


def _zero_block(block):
    p = block.n_lifted
    value = block.zero_network_value()
    return SDPSolution(
        Q=np.zeros((1, 2 * p, 2 * p)), rho=np.zeros(1), value=value,
        scores=np.zeros((block.target.shape[0], 1)), status="stopped", solver="native",
        solve_time=0.0, lower_bound=0.0, factors=[(np.eye(p), np.ones(p))], n_iter=0,
        info={"rank": p},
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
        None: the native solvers, chosen by size. The squared loss with a
        small lifting (``p (p + 1) / 2 <= 300``, or up to 1000 with three rows
        per entry, see ``compact_applies()``)
        is solved block by block in its compact cone form (the hinge losses
        with ``K p (p + 1) / 2 <= 600`` jointly, as a linear program over
        the PSD cones; the multinomial logistic loss likewise, in exponential
        cones, falling back to the factor solver if Clarabel fails)
        (``solve_compact()``, an interior-point
        solve to about 1e-8, then certified), which the factor solver continues from if its
        certified gap is still above ``tol``; the binary hinge loss with at most
        ``HINGE_DUAL_MAX_SAMPLES`` (deduplicated) samples goes first to
        ``solve_hinge_dual()`` (a barrier method on its exact dual, certified
        by the dual it reaches), continued the same way; everything else goes to the
        factor solver (:func:`solve_factored`; the blocks of the squared
        loss one at a time, on the CPU by its numpy form
        ``solve_squared_block()``, except a single block that continues a
        compact solve). A CVXPY
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
        unknown = sorted(set(options) - set(FACTOR_SOLVER_OPTIONS))
        if unknown:
            raise TypeError(
                f"solver_options={options!r} holds options the native solver "
                f"(solver=None) does not accept: {unknown}. It accepts "
                f"{list(FACTOR_SOLVER_OPTIONS)}; CVXPY options go with a CVXPY "
                "solver (solver='SCS' or 'CLARABEL')."
            )
        _check_factor_options(options)
        device = resolve_device(device)
        data = LiftedData.from_lifting(
            lifting, X, y, weight, loss=loss, beta=beta, n_outputs=n_outputs, device=device,
        )
        # The interior-point methods for small problems (the hinge's exact
        # dual, the compact cone form) are CPU algorithms whatever ``device``:
        # their work is a few small dense Newton systems, which a GPU only
        # slows with transfers, and the factor solver's smoothed hinge stalls
        # short of tol at small beta where the dual reaches it (on an H100, a
        # 60-sample hinge problem ran 3000 iterations in 25 s to a gap of
        # 1.3e-4). The factor solver, which continues them when it must, and
        # everything larger run on ``device``.
        cpu_data = data if device.type == "cpu" else LiftedData.from_lifting(
            lifting, X, y, weight, loss=loss, beta=beta, n_outputs=n_outputs, device="cpu",
        )
        compact = None
        if not set(options) - {"time_limit"} and hinge_dual_applies(cpu_data):
            # The binary hinge: a barrier method on its exact dual (n + p
            # unknowns per Newton step) beats both the compact form (credit-
            # approval, beta = 1e-3: 2.8 s against 38 s CPU) and the smoothed
            # factor solver, which stalls short of tol at small beta.
            compact = solve_hinge_dual(
                cpu_data, tol=tol, time_limit=options.get("time_limit"), callback=callback,
                verbose=verbose,
            )
        elif not set(options) - {"time_limit"} and compact_applies(cpu_data):
            # solver_options configure the factor solver: asking for them
            # means asking for it (a time limit applies to either).
            # Small by construction (m <= 600): one torch and one BLAS thread.
            with threads_for(0, cpu_data.features.device):
                try:
                    compact = solve_compact(cpu_data, tol=tol, callback=callback, verbose=verbose)
                except SolverFailedError:
                    if loss != "logistic":
                        raise
                    # The exponential cones can end in InsufficientProgress
                    # (breast cancer's binary logistic at beta = 1e-3): the
                    # factor solver solves it from the start instead.
                    compact = None
        if compact is not None and (
            compact.converged or compact.info["stopped_by_callback"] or max_iter == 0
        ):
            solution = compact
            solution.info["device"] = "cpu"
        else:
            start = compact if compact is not None else init
            if compact is not None and options.get("time_limit") is not None:
                options["time_limit"] = max(options["time_limit"] - compact.solve_time, 1e-9)
            # The squared loss's blocks are independent: one at a time (on the
            # CPU by the numpy block solver; a single block too, unless it
            # continues a compact solve: from such a start on targets of order
            # 1e6 the numpy solver stalled at 9.5e-4 where the torch one, with
            # its aligned certificate, reaches tol; test_sdp_regressor).
            # Where the compact form does not apply, a block on few samples
            # goes to the barrier on its exact dual (a CPU algorithm, as the
            # compact form; solver_options ask for the factor solver).
            use_dual = (
                loss == "squared" and compact is None
                and not set(options) - {"time_limit"} and squared_dual_applies(cpu_data)
            )
            single = compact is None and (squared_block_applies(data) or use_dual)
            if loss == "squared" and (data.n_outputs > 1 or single):
                solution = _solve_blocks_separately(
                    cpu_data if use_dual else data, start, tol=tol, max_iter=max_iter,
                    callback=callback, verbose=verbose, use_dual=use_dual, **options,
                )
            else:
                solution = solve_factored(
                    data, tol=tol, max_iter=max_iter, init=start, callback=callback,
                    verbose=verbose, **options,
                )
            solution.info["device"] = "cpu" if use_dual else str(device)
            if compact is not None and compact.lower_bound > solution.lower_bound:
                # Both bounds hold for the same optimum: keep the larger.
                solution.lower_bound = compact.lower_bound
                solution.converged = solution.relative_gap <= tol
        if not solution.converged and not solution.info.get("stopped_by_callback"):
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
    # (A solve cut short keeps unreached blocks at zero: no statement about beta.)
    finished = solution.status not in ("time_limit", "stopped")
    # The optimum is the zero network when the certified point does no better
    # than the zero network's objective (scores 0, no penalty); a penalty
    # small against the objective says nothing (it is, for every tiny beta).
    zero_value = loss_value(np.zeros((len(y), n_outputs)), y, weight, loss, n_outputs)
    at_zero = solution.value >= zero_value * (1.0 - 1e-7)
    if finished and beta > 0 and at_zero and solution.converged:
        warn_user(
            f"beta={user_beta:g} is so large that the relaxed optimum is the zero "
            "network (rho = 0, certified): the model predicts a constant score. "
            "Use a smaller beta.",
            UserWarning,
        )
    return rescale_solution(solution, target_scale)
