"""The squared loss's blocks one at a time, each through a route's stages.

The objective ``Σ_k [Σ_i w_i (f_ik - t_ik)² + 2 beta p rho_k]`` is a sum of
independent SDPs, one per output, so the optimum is the sum of the blocks'
optima and the sum of their certified lower bounds is a lower bound of it.
Solving them apart gives each block its own rank, its own number of
iterations and its own stop; a block whose relative gap is at most ``tol``
keeps the sum's relative gap at most ``tol``. ``max_iter`` applies to each
block.
"""

import concurrent.futures
import contextvars
import dataclasses
import math
import time

import numpy as np

from .._foundation._runtime import parallel_workers
from .._foundation._threads import limit_threads
from .routes import first_route
from .solution import SDPSolution, relative_gap

__all__ = ["solve_blocks"]


def solve_blocks(problem, row):
    """``problem``'s squared-loss blocks apart, each by ``row``'s stages (:func:`solve_staged`).

    The solution's ``solver`` is
    the blocks' common one, else the name of the row that continued some of
    them; ``solver_path`` the longest block's stages.
    """
    data, init = problem.data, problem.init
    time_limit, start_time = problem.time_limit, time.perf_counter()

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
        options = {**problem.options, "time_limit": remaining}
        if remaining is None:
            options.pop("time_limit")
        return solve_staged(row, dataclasses.replace(
            problem, data=block, init=start, options=options, cpu_data=None
        ))

    workers = _block_workers(data, problem.callback, problem.verbose, problem.options)
    if workers > 1:
        # Independent blocks on threads, each on one torch and one BLAS thread (the limit taken
        # here, in the calling thread), each in a copy of this context (routes.use_routes).
        contexts = [contextvars.copy_context() for _ in range(data.n_outputs)]
        with limit_threads(None, blas=1), concurrent.futures.ThreadPoolExecutor(
            max_workers=workers
        ) as pool:
            results = list(pool.map(
                lambda k: contexts[k].run(solve_block, k), range(data.n_outputs)
            ))
    else:
        results = []
        for k in range(data.n_outputs):
            results.append(solve_block(k))
            if results[-1] is None or results[-1].info.get("stopped_by_callback"):
                break
    return _joined(data, row, results, problem.tol)


def _joined(data, row, results, tol):
    """One solution from the blocks' (None: a block out of time)."""
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
            parts.append(_zero_block(block, row.name))
    value = sum(part.value for part in parts)
    lower_bound = sum(part.lower_bound for part in parts)
    converged = relative_gap(value, lower_bound) <= tol
    names = {part.solver for part in parts}
    paths = [part.solver_path for part in parts]
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
        solver=names.pop() if len(names) == 1 else _continuer(row, names),
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
        solver_path=max(paths, key=len),
    )


def _continuer(row, names):
    """Blocks that ended in different stages: the stage that continues ``row``."""
    others = [name for name in names if name != row.name]
    return sorted(others)[0]


def solve_staged(row, problem):
    """One block by ``row``: ``row.lead`` iterations of its ``then`` first, the
    row, then ``then`` again from the better point with the best bound.

    A stage that certifies ``tol``, is stopped by the callback or runs out of
    time ends the solve; ``n_iter`` counts the iterations and Newton steps of
    every stage, ``max_iter`` bounds their sum.
    """
    started = time.perf_counter()
    tol, max_iter, time_limit = problem.tol, problem.max_iter, problem.time_limit

    def remaining():
        return None if time_limit is None else time_limit - (time.perf_counter() - started)

    def finished(part):
        left = remaining()
        return (
            part.converged or part.info["stopped_by_callback"] or part.status == "time_limit"
            or (left is not None and left <= 0)
        )

    def stage(which, **changes):
        options = dict(problem.options)
        options.pop("time_limit", None)
        if time_limit is not None:
            options["time_limit"] = remaining()
        staged = dataclasses.replace(problem, options=options, **changes)
        if which is None:
            which = first_route(staged, row.then)
        solution = which.solve(staged.on(which))
        solution.solver = which.name
        return solution

    stages = []
    lead = row.lead(problem.data) if row.lead is not None else 0
    if lead:
        budget = min(lead, max_iter)
        stages.append(stage(None, max_iter=budget))
        if finished(stages[-1]) or budget >= max_iter:
            return _with_path(stages[-1], stages)
    stages.append(stage(row))
    used = sum(part.n_iter for part in stages)
    if row.then and not (finished(stages[-1]) or max_iter == 0 or used >= max_iter):
        best = min(stages, key=lambda part: part.value)
        stages.append(stage(
            None, init=best, max_iter=max_iter - used, after=row.name,
            lower_bound=max(part.lower_bound for part in stages),
        ))
    solution = stages[-1]
    bound = max(part.lower_bound for part in stages)
    if bound > solution.lower_bound:
        solution.lower_bound = bound
        solution.converged = solution.relative_gap <= tol
        if solution.converged:
            solution.status = "optimal"
    solution.n_iter = sum(part.n_iter for part in stages)
    return _with_path(solution, stages)


def _with_path(solution, stages):
    solution.solver_path = tuple(part.solver for part in stages)
    return solution


def _block_workers(data, callback, verbose, options):
    """How many blocks to solve at once: one per available core when each
    block runs on one thread (the runtime policy's small steps), there is no
    callback to call in order, and the problem is on the CPU."""
    if callback is not None or verbose or data.features.device.type != "cpu":
        return 1
    rank = options.get("rank") or math.ceil(math.sqrt(2.0 * data.n_lifted))
    return parallel_workers(data.n_outputs, data.features.shape[0] * data.n_lifted * rank)


def _zero_block(block, name):
    p = block.n_lifted
    return SDPSolution(
        Q=np.zeros((1, 2 * p, 2 * p)), rho=np.zeros(1), value=block.zero_network_value(),
        scores=np.zeros((block.target.shape[0], 1)), status="stopped", solver=name,
        solve_time=0.0, lower_bound=0.0, factors=[(np.eye(p), np.ones(p))], n_iter=0,
        info={"rank": p},
    )
