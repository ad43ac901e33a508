"""The result of an SDP solve, whichever solver produced it."""

import time
from dataclasses import dataclass, field, replace

import numpy as np

from .._foundation._reporting import progress_line

__all__ = ["SDPSolution", "SolverFailedError", "factor_solution", "record_progress", "relaxed_block",
           "rescale_solution"]


class SolverFailedError(RuntimeError):
    """The solver failed to return a usable solution of the SDP."""


@dataclass
class SDPSolution:
    """A relaxed solution with its certified lower bound, one block per output.

    Attributes
    ----------
    Q : ndarray of shape (n_outputs, 2p, 2p)
        PSD matrices ``[[V_k, Z_k], [Z_k^T, W_k]]`` with diagonal ``rho_k``
        (for the factor solver ``[[P+N, P-N], [P-N, P+N]]``, exactly PSD
        with exactly that diagonal).
    rho : ndarray of shape (n_outputs,)
        Their common diagonal value.
    value : float
        The relaxed objective at the returned point (``objective``; kept
        under this name for older code).
    scores : ndarray of shape (n_samples, n_outputs)
        The relaxed model's predictions ``2 <L(x_i), Z_k>`` on the data.
    status, solver : str
        ``solver`` names the native route that produced the point (a row of
        :data:`skquad.convex.ROUTES`), else the CVXPY solver.
    solve_time : float
        Seconds of the solve (for CVXPY, compilation included).
    lower_bound : float
        Certified lower bound on the SDP's optimum (hence on every binary
        network's objective), from :func:`skquad.convex.dual_bound`.
    factors : list of (ndarray, ndarray) or None
        Factor solver only: per block ``(F_k, s_k)`` with ``F_k`` of shape
        (p, r_k), unit rows, and column signs ``s_k`` (+1: ``P``, -1: ``N``),
        so that ``P_k - N_k = rho_k F_k diag(s_k) F_k^T``. A warm start.
    dual : ndarray or None
        Factor solver with the hinge losses only: the proximal dual (a warm start).
    n_iter : int
        L-BFGS iterations (factor solver) or the conic solver's iterations.
    converged : bool
        Whether the relative gap reached the tolerance.
    info : dict
        Solver details (history of the factor solver's chunks, violations...).
    solver_path : tuple of str
        The routes that ran, in order, when a solve was continued (the
        longest block's for the squared loss solved block by block).
    """

    Q: np.ndarray
    rho: np.ndarray
    value: float
    scores: np.ndarray
    status: str
    solver: str
    solve_time: float
    lower_bound: float = -np.inf
    factors: list = None
    dual: np.ndarray = None
    n_iter: int = 0
    converged: bool = False
    info: dict = field(default_factory=dict)
    solver_path: tuple = ()

    @property
    def objective(self):
        """The relaxed objective at the returned point (an upper bound on the optimum)."""
        return self.value

    @property
    def gap(self):
        """``objective - lower_bound``: the certified absolute gap."""
        return self.value - self.lower_bound

    @property
    def relative_gap(self):
        """``gap / |objective|``, the quantity the tolerance applies to."""
        return relative_gap(self.value, self.lower_bound)

    def warm_start_state(self):
        """What a warm start needs (factors, ``rho``, dual), without ``Q``; None for CVXPY."""
        if self.factors is None:
            return None
        return SDPSolution(
            Q=None, rho=self.rho, value=self.value, scores=None, status=self.status,
            solver=self.solver, solve_time=0.0, lower_bound=self.lower_bound,
            factors=self.factors, dual=self.dual,
        )

    @property
    def Z(self):
        p = self.Q.shape[1] // 2
        return self.Q[:, :p, p:]


def rescale_solution(solution, c):
    """The squared-loss solution for targets ``c * y`` and ``c * beta`` from that for ``(y, beta)``.

    The squared-loss relaxation is exactly scale-equivariant. Its objective is

        F_(y, beta)(Q) = sum_i w_i ||f_i(Q) - y_i||^2 + 2 beta p sum_k rho_k,

    over ``Q_k = [[V_k, Z_k], [Z_k^T, W_k]] >= 0`` with ``diag(Q_k) = rho_k``,
    where ``f_ik(Q) = 2 <L(x_i), Z_k>`` and ``rho_k`` are linear in ``Q``. For
    ``c > 0``, ``Q -> c Q`` is a bijection of the feasible set (the PSD cone
    is a cone, the diagonal constraint is linear), and
    ``F_(c y, c beta)(c Q) = sum_i w_i c^2 ||f_i(Q) - y_i||^2 + 2 c beta p
    sum_k c rho_k = c^2 F_(y, beta)(Q)``. So ``c Q`` is optimal (or within a
    gap ``c^2 g`` of the optimum) for ``(c y, c beta)`` exactly when ``Q`` is
    (within ``g``) for ``(y, beta)``; a certified lower bound ``b`` of the
    latter's optimum gives ``c^2 b`` of the former's (``min F_(c y, c beta) =
    c^2 min F_(y, beta)``), and the relative gap is unchanged. The factors
    ``F_k`` have unit rows (``Q`` scales through ``rho``) and are kept; the
    scores ``f`` and a dual point (``lam = 2 (f - y)`` for the squared loss)
    scale by ``c``.

    Only the squared loss is equivariant (the hinge and logistic losses are
    not homogeneous): the classifiers call this with ``c = 1``, which returns
    ``solution`` itself.
    """
    if c == 1.0:
        return solution

    def times(value, factor):
        return None if value is None else value * factor

    return replace(
        solution,
        Q=times(solution.Q, c),
        rho=times(solution.rho, c),
        value=solution.value * c**2,
        scores=times(solution.scores, c),
        lower_bound=solution.lower_bound * c**2,
        dual=times(solution.dual, c),
    )


def factor_solution(factors, rho, *, history, stopped, dual=None, **fields):
    """The ``SDPSolution`` of unit-row ``factors`` (``[(F, signs), ...]``, one per
    block) and their ``rho`` (an array): ``Q`` built from them, the history,
    rank and callback stop in ``info``; ``fields``: the other attributes."""
    rank = int(sum(F.shape[1] for F, _ in factors))
    return SDPSolution(
        Q=np.stack([relaxed_block(F, s, r) for (F, s), r in zip(factors, rho)]), rho=rho,
        factors=list(factors), dual=dual, **fields,
        info={"history": history, "rank": rank, "stopped_by_callback": stopped},
    )


def record_progress(history, start, verbose, iteration, objective, lower_bound, gap, **extra):
    """Append a solve's history entry (the callback's keys: ``iteration``,
    ``objective``, ``lower_bound``, ``gap``, ``extra``, ``elapsed``) and print its
    progress line when ``verbose`` (with the ``rank``, if any); returns the entry."""
    info = {"iteration": iteration, "objective": objective, "lower_bound": lower_bound,
            "gap": gap, **extra, "elapsed": time.perf_counter() - start}
    history.append(info)
    if verbose:
        shown = {"rank": extra["rank"]} if "rank" in extra else {}
        print(progress_line(iteration, objective, info["elapsed"], lower_bound=lower_bound,
                            gap=float(gap), **shown))
    return info


def relative_gap(objective, lower_bound):
    """``(objective - lower_bound) / max(|objective|, 1e-12)``."""
    return (objective - lower_bound) / max(abs(objective), 1e-12)


def relaxed_block(F, signs, rho):
    """A factor solution's block ``Q = rho [[A Aᵀ + B Bᵀ, A Aᵀ - B Bᵀ], [A Aᵀ - B Bᵀ, A Aᵀ + B Bᵀ]]`` (``A``, ``B``: the columns of
    ``F`` with signs +1 and -1)."""
    plus = F[:, signs > 0]
    minus = F[:, signs < 0]
    P = plus @ plus.T
    N = minus @ minus.T
    return rho * np.block([[P + N, P - N], [P - N, P + N]])
