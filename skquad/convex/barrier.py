"""The barrier toolkit of the dual interior-point methods (hinge, squared and face duals).

One home for what the three barriers share: the LMI log-barrier and its
Newton terms, the Newton step, Armijo backtracking, the predictor along the
central path's tangent, the stop of a centring, the tau loop with its stall
rule (``follow_central_path()``), and the feasible primal point and solution
built from a barrier's ``S+^-1 / tau``, ``S-^-1 / tau``; ``LowRankLMI`` for
LMIs of fewer rows than coordinates. Each dual keeps only its own objective,
Newton system, tangent and certificate.
"""

import dataclasses
import math
import time

import numpy as np
import scipy.linalg
import torch

from .certificate import squared_loss_rho
from .solution import factor_solution, record_progress

__all__ = [
    "CentralPath", "LowRankLMI", "backtrack", "barrier_solution", "best_rho", "centred_and_done",
    "components", "feasible_point", "follow_central_path", "lmi_log_barrier", "lmi_terms",
    "newton_direction", "scaled_factor", "solve_scaled", "spd_inverse", "tangent_move",
    "unit_factor",
]


@dataclasses.dataclass
class CentralPath:
    """A dual barrier's run: the point ``(y, mu)``, the weight ``tau``, the Newton
    steps taken, the status, the certified gap, the best primal and dual so far
    (``objective``, ``lower_bound``, ``point``) and one history entry per centring."""

    y: np.ndarray
    mu: np.ndarray
    tau: float
    best: dict
    start: float
    verbose: int = 0
    steps: int = 0
    status: str = "max_iter"
    gap: float = math.inf
    history: list = dataclasses.field(default_factory=list)

    def record(self):
        """Append the centring's history entry (and print it when verbose); returns the gap."""
        record_progress(self.history, self.start, self.verbose, self.steps, self.best["objective"],
                        self.best["lower_bound"], self.gap, tau=self.tau)
        return self.gap


def newton_direction(hess, grad):
    """``(step, decrement, factor)`` of a dual barrier's Newton system (``hess`` is
    overwritten); ``step`` is None where the system gives no descent."""
    factor = scaled_factor(hess, overwrite=True)
    step = None if factor is None else solve_scaled(factor, -grad)
    decrement = -1.0 if step is None else float(-grad @ step)
    if step is None or not math.isfinite(decrement) or decrement <= 0.0:
        return None, decrement, factor
    return step, decrement, factor


def follow_central_path(path, barrier, on_centred, final_check, *, tol, max_steps, time_limit,
                        centred, tau_factor, steps_per_centring=math.inf):
    """The tau loop of the dual barriers (hinge and squared), run on ``path`` in place.

    Damped Newton steps on ``barrier.value(y, mu, tau)`` (``barrier.system``
    gives its Hessian and gradient); once a point is centred (decrement below
    ``centred``, or ``steps_per_centring`` steps at one tau) ``on_centred(path,
    step, decrement, factor)`` certifies it (setting ``path.gap``; it may take
    more steps and returns the last Newton direction), then tau rises by
    ``tau_factor`` and the next centring starts from the central path's
    tangent, ``H dx/dtau = barrier.tangent_rhs(y)``. Where no step lowers the
    barrier, round-off limits it at this tau: tau rises once more, and the run
    stops ("stalled") if that did not help either.
    Short of ``tol`` at the end (but in time), ``final_check(path)`` gives the gap.
    """
    def value(y, mu):
        return barrier.value(y, mu, path.tau)

    blocked, since_centred = 0, 0
    while path.steps < max_steps and path.gap > tol:
        if time_limit is not None and time.perf_counter() - path.start > time_limit:
            path.status = "time_limit"
            break
        step, decrement, factor = newton_direction(*barrier.system(path.y, path.mu, path.tau))
        if step is not None and (decrement < centred or since_centred >= steps_per_centring):
            since_centred = 0
            step, decrement, factor = on_centred(path, step, decrement, factor)
            if path.gap <= tol:
                break
            if step is None:
                continue  # the next Newton system at this point decides (stalled or not)
            tangent = solve_scaled(factor, barrier.tangent_rhs(path.y))
            old_tau, path.tau = path.tau, tau_factor * path.tau
            path.y, path.mu = tangent_move(value, path.y, path.mu, (path.tau - old_tau) * tangent)
            path.steps += 1
            continue
        moved = None if step is None else backtrack(value, path.y, path.mu, step, decrement)
        if moved is None:
            blocked += 1
            if blocked > 1:
                path.status = "stalled"
                break
            path.tau *= tau_factor
            continue
        blocked = 0
        path.y, path.mu = moved
        path.steps += 1
        since_centred += 1
        if path.verbose > 1:
            print(f"  step {path.steps}: tau={path.tau:.3g} decrement={decrement:.3g}")
    if path.gap > tol and path.status != "time_limit":
        path.gap = final_check(path)
    if path.gap <= tol:
        path.status = "optimal"
    return path


def lmi_log_barrier(Sp, Sm, slack):
    """``-log det S+ - log det S- - log(slack)``; infinite outside the LMIs."""
    if slack <= 0:
        return math.inf
    try:
        cp = np.linalg.cholesky(Sp)
        cm = np.linalg.cholesky(Sm)
    except np.linalg.LinAlgError:
        return math.inf
    logdet = 2.0 * (np.log(np.diag(cp)).sum() + np.log(np.diag(cm)).sum())
    return -logdet - math.log(slack)


def _line_search(barrier, y, mu, step, accept, shrink, shortest):
    """``(y, mu)`` moved by the longest of ``1, shrink, shrink², ...`` (above
    ``shortest``) times ``step`` whose barrier value ``accept(value, current,
    length)`` takes; None where none does."""
    q = y.size
    current = barrier(y, mu)
    length = 1.0
    while length > shortest:
        trial_y, trial_mu = y + length * step[:q], mu + length * step[q:]
        if accept(barrier(trial_y, trial_mu), current, length):
            return trial_y, trial_mu
        length *= shrink
    return None


def backtrack(barrier, y, mu, step, decrement):
    """Armijo backtracking along a Newton step: the new ``(y, mu)``, or None.

    ``barrier`` is infinite outside the LMIs, so every accepted point is
    strictly feasible.
    """
    def armijo(value, current, length):
        return value <= current - 0.25 * length * decrement

    return _line_search(barrier, y, mu, step, armijo, 0.5, 1e-12)


def tangent_move(barrier, y, mu, step):
    """``(y, mu)`` moved along ``step``, shortened (by fourths, to 1e-3) until
    it lowers ``barrier``; unchanged where no fraction does.

    The dual barriers' predictor after a raise of ``tau``: ``step`` is the
    central path's tangent times the raise, and ``barrier`` the new one.
    """
    moved = _line_search(barrier, y, mu, step, lambda value, current, _: value < current, 0.25, 1e-3)
    return (y, mu) if moved is None else moved


def centred_and_done(value, best, tau, target_value, n_barrier):
    """At a centred point, whether raising ``tau`` can still pay.

    Near the central path the restricted optimum is at most about
    ``value + n_barrier / tau``: stop when the target is out of reach (the face
    misses directions; the primal must move first) or the barrier is at
    round-off level.
    """
    reach = n_barrier / tau
    out_of_reach = math.isfinite(target_value) and value + 2.0 * reach < target_value
    return out_of_reach or reach < 1e-12 * max(abs(best), 1e-300)


def components(data):
    """``U_x`` (each n x p) and ``C`` (r x r) with ``L_i = Σ_xy C_xy u_ix u_iyᵀ``."""
    Z = data.features.detach().cpu().numpy().astype(np.float64)
    if data.polynomial is None:
        return [Z], np.ones((1, 1))
    a, b, c = data.polynomial
    n = Z.shape[0]
    u = np.hstack([Z, np.zeros((n, 1))])
    e = np.zeros((n, Z.shape[1] + 1))
    e[:, -1] = 1.0
    return [u, e], np.array([[a, 0.5 * b], [0.5 * b, c]])


def lmi_terms(S, comps, C, pair_out=None):
    """Pieces of ``-log det S`` in ``(s, mu)`` for ``S = Diag mu + Σ_i s_i L_i``.

    Returns ``tr(S⁻¹ L_i)`` (n,), ``tr(S⁻¹ L_i S⁻¹ L_j)`` (n x n),
    ``(S⁻¹ L_i S⁻¹)_jj`` (n x p) and ``S⁻¹``. ``pair_out``: an n x n array
    the bilinear lifting's pair term is written to (a fresh n x n array costs
    its page faults on every call).
    """
    S_inv = spd_inverse(S)
    Y = [u @ S_inv for u in comps]
    r = len(comps)
    trace = np.zeros(comps[0].shape[0])
    cross = np.zeros((comps[0].shape[0], S.shape[0]))
    for x in range(r):
        for y in range(r):
            if C[x, y] != 0.0:
                trace += C[x, y] * np.einsum("ij,ij->i", Y[x], comps[y])
                cross += C[x, y] * Y[x] * Y[y]
    if r == 1:
        pair = np.matmul(Y[0], comps[0].T, out=pair_out)
        np.multiply(pair, pair, out=pair)
        if C[0, 0] != 1.0:
            pair *= C[0, 0] ** 2
    else:
        G = [[Y[a] @ comps[b].T for b in range(r)] for a in range(r)]
        pair = np.zeros((comps[0].shape[0],) * 2)
        for x in range(r):
            for y in range(r):
                for z in range(r):
                    for w in range(r):
                        coefficient = C[x, y] * C[z, w]
                        if coefficient != 0.0:
                            pair += coefficient * G[y][z] * G[x][w]
    return trace, pair, cross, S_inv


def spd_inverse(S):
    """``S⁻¹`` (symmetric) of a positive definite ``S`` from its Cholesky factor, half
    the work of a general inverse; the general one where round-off breaks the factor."""
    potrf, potri = scipy.linalg.lapack.get_lapack_funcs(("potrf", "potri"), (S,))
    chol, info = potrf(S, lower=True)
    if info == 0:
        inverse, info = potri(chol, lower=True)
    if info != 0:
        inverse = np.linalg.inv(S)
        return 0.5 * (inverse + inverse.T)
    return np.tril(inverse) + np.tril(inverse, -1).T


class LowRankLMI:
    """``S± = Diag mu ± Zᵀ Diag(g) Z`` through their rank, for ``Z`` of n < p rows.

    With the thin QR ``Diag(mu)^(-1/2) Zᵀ = Q R`` and ``A± = I ± R Diag(g) Rᵀ``
    (n x n): ``S± = Diag(mu)^(1/2) (I + Q (A± - I) Qᵀ) Diag(mu)^(1/2)``, so
    ``S± ≻ 0`` iff ``mu > 0`` and ``A± ≻ 0``, ``log det S± = Σ log mu + log det
    A±``, ``Z S±⁻¹ = Rᵀ A±⁻¹ Eᵀ`` and ``S±⁻¹ = Diag(mu)⁻¹ - E (I - A±⁻¹) Eᵀ``
    with ``E = Diag(mu)^(-1/2) Q``: ``O(n² p)`` for the value and ``O(n p²)``
    for the Newton terms where the dense matrices cost ``O(p³)``. ``S+ + S- =
    2 Diag mu`` keeps ``0 ≺ A± ≺ 2 I``. ``vectors``: keep ``Q`` (``terms()``).
    """

    def __init__(self, Z, g, mu, vectors=False):
        self.mu, self.factors = mu, {}
        self.inside = bool(np.all(mu > 0))
        if self.inside:
            root = 1.0 / np.sqrt(mu)
            if vectors:
                Q, self.R = np.linalg.qr(Z.T * root[:, None])
                self.E = Q * root[:, None]
            else:
                self.R = np.linalg.qr(Z.T * root[:, None], mode="r")
            self.core = (self.R * g) @ self.R.T

    def _factor(self, sign):
        """Cholesky factor of ``A±`` (``sign`` ±1), None where not positive definite."""
        if sign not in self.factors:
            A = sign * self.core
            A[np.diag_indices_from(A)] += 1.0
            try:
                self.factors[sign] = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True,
                                                             check_finite=False)
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
                self.factors[sign] = None
        return self.factors[sign]

    def log_barrier(self, slack):
        """``lmi_log_barrier(S+, S-, slack)``."""
        factors = [self._factor(sign) for sign in (1.0, -1.0)] if self.inside else [None]
        if slack <= 0 or any(factor is None for factor in factors):
            return math.inf
        logdet = sum(np.log(np.diag(chol)).sum() for chol, _ in factors) + np.log(self.mu).sum()
        return -2.0 * logdet - math.log(slack)

    def terms(self, sign):
        """``lmi_terms(S±, [Z], [[1]])`` at a point inside the LMIs."""
        factor, R = self._factor(sign), self.R
        solved = scipy.linalg.cho_solve(factor, R, check_finite=False)  # A⁻¹ R
        gram = R.T @ solved  # Z S⁻¹ Zᵀ
        gram = 0.5 * (gram + gram.T)
        rows = solved.T @ self.E.T  # Z S⁻¹
        inner = scipy.linalg.cho_solve(factor, np.eye(R.shape[0]), check_finite=False)
        inner[np.diag_indices_from(inner)] -= 1.0  # A⁻¹ - I
        S_inv = (self.E @ inner) @ self.E.T
        S_inv = 0.5 * (S_inv + S_inv.T)
        S_inv[np.diag_indices_from(S_inv)] += 1.0 / self.mu
        return np.diag(gram).copy(), gram * gram, rows * rows, S_inv


def scaled_factor(hess, overwrite=False):
    """Cholesky factor of the Jacobi-scaled ``D H D``, with ``D``; None if not PD.

    The box terms' curvature ``1 / s²`` spreads the diagonal over 1e16 and
    more near the end (``s_i`` of 1e-8 beside entries of order ``w²``); the
    scaling leaves the solutions unchanged in exact arithmetic and keeps the
    factorization accurate. ``overwrite``: scale and factor ``hess`` in
    place (no ``(n + p)²`` copies; the squared dual's steps at n = 690).
    """
    scale = 1.0 / np.sqrt(np.clip(np.diag(hess), 1e-300, None))
    scaled = hess if overwrite else hess.copy()
    scaled *= scale[:, None]
    scaled *= scale[None, :]
    try:
        factor = scipy.linalg.cho_factor(scaled, lower=True, overwrite_a=True, check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return None
    return factor, scale


def solve_scaled(factor, rhs):
    """``H⁻¹ rhs`` from ``scaled_factor()``."""
    chol, scale = factor
    return scale * scipy.linalg.cho_solve(chol, scale * rhs, check_finite=False)


def best_rho(g, t, weight, penalty):
    """``argmin_{rho >= 0} Σ w max(0, 1 - rho t g) + penalty rho`` (convex, piecewise linear).

    The slope at ``0+`` is ``penalty - Σ w t g``; passing the breakpoint
    ``1 / (t_i g_i)`` of a sample with ``t_i g_i > 0`` raises it by ``w_i t_i
    g_i``. The minimiser is the first breakpoint at which the slope turns
    non-negative (0 if it already is).
    """
    margin = t * g
    slope = penalty - float(weight @ margin)
    if slope >= 0.0:
        return 0.0
    positive = np.flatnonzero(margin > 0)
    if positive.size == 0:  # pragma: no cover - the slope is then >= penalty >= 0
        return 0.0
    order = positive[np.argsort(1.0 / margin[positive])]
    slopes = slope + np.cumsum(weight[order] * margin[order])
    first = int(np.searchsorted(slopes, 0.0, side="left"))
    first = min(first, order.size - 1)
    return float(1.0 / margin[order[first]])


def feasible_point(data, P, N, t, weight, penalty):
    """The exactly feasible point of ``P, N ⪰ 0`` (any diagonal), and its objective.

    Two repairs of the diagonal, the better kept: ``D P D`` and ``D N D``
    with ``diag(P + N) = 1`` (the barrier's point, nearly centred, needs
    little), and padding, ``P + E``, ``N + E`` with the PSD diagonal ``E =
    Diag(max diag(P + N) - diag(P + N)) / 2``, which keeps ``P - N`` and
    the scores (the face problem's point, whose diagonal is only bounded).
    Either is then factored with unit rows and ``rho`` chosen exactly
    (``best_rho()``; in closed form for the squared loss, whose dual
    barrier, :mod:`~skquad.convex.squared_dual`, shares this repair).
    Returns ``(F, signs, rho, scores, objective)``.
    """
    P, N = 0.5 * (P + P.T), 0.5 * (N + N.T)
    diagonal = np.diag(P) + np.diag(N)
    candidates = []
    top = float(diagonal.max())
    if top > 0:
        pad = np.diag(0.5 * (top - diagonal))
        candidates.append(((P + pad) / top, (N + pad) / top))
    scale = 1.0 / np.sqrt(np.clip(diagonal, 1e-300, None))
    candidates.append((P * scale[:, None] * scale[None, :], N * scale[:, None] * scale[None, :]))
    dtype, device = data.features.dtype, data.features.device
    best = None
    for P1, N1 in candidates:
        F, s = unit_factor(P1, N1)
        direction = torch.as_tensor((F * s) @ F.T, dtype=dtype, device=device)
        g = 2.0 * data.matrix_inner(direction).detach().cpu().numpy().astype(np.float64)
        if data.loss == "squared":  # (the squared dual's point)
            rho = squared_loss_rho(g, t, weight, penalty)
            scores = rho * g
            objective = float(weight @ (scores - t) ** 2) + penalty * rho
        else:
            rho = best_rho(g, t, weight, penalty)
            scores = rho * g
            objective = float(weight @ np.maximum(0.0, 1.0 - t * scores)) + penalty * rho
        if best is None or objective < best[-1]:
            best = (F, s, rho, scores, objective)
    return best


def barrier_solution(path, p, n_samples, tol, callback, solver):
    """The ``SDPSolution`` of a dual barrier's best point (the hinge's and the squared loss's).

    ``path.best``: ``objective``, ``lower_bound`` and ``point`` (``(F, signs,
    rho, scores)``, or None for the zero network); the callback is called
    once, with the factor solver's keys.
    """
    best, gap, steps, history, start = path.best, path.gap, path.steps, path.history, path.start
    if best["point"] is None:
        F, signs, rho, scores = np.eye(p), np.ones(p), 0.0, np.zeros(n_samples)
    else:
        F, signs, rho, scores = best["point"]
    elapsed = time.perf_counter() - start
    info = {
        "iteration": steps, "objective": best["objective"], "lower_bound": best["lower_bound"],
        "gap": gap, "rank": int(F.shape[1]), "elapsed": elapsed,
    }
    stopped = bool(callback(dict(info))) if callback is not None else False
    return factor_solution(
        [(F, signs)], np.array([rho]), value=float(best["objective"]), scores=scores[:, None],
        status=path.status, solver=solver, solve_time=elapsed, n_iter=steps,
        lower_bound=float(best["lower_bound"]), converged=bool(gap <= tol),
        history=history + [info], stopped=stopped,
    )


def unit_factor(P, N):
    """Unit-row factor ``F`` and signs with ``F diag(s) Fᵀ ∝`` the PSD parts of ``P - N``."""
    columns, signs = [], []
    for matrix, sign in ((P, 1.0), (N, -1.0)):
        values, vectors = np.linalg.eigh(0.5 * (matrix + matrix.T))
        keep = values > 1e-12 * max(float(np.max(np.abs(values))), 1e-300)
        columns.append(vectors[:, keep] * np.sqrt(values[keep]))
        signs.append(np.full(int(keep.sum()), sign))
    F = np.hstack(columns)
    s = np.concatenate(signs)
    norms = np.linalg.norm(F, axis=1) if F.shape[1] else np.zeros(F.shape[0])
    if F.shape[1] == 0 or np.any(norms <= 1e-150):
        # A row with no mass (ρ = 0, or a degenerate split): give it a unit
        # column of its own; its ρ-scaled contribution is then decided below.
        missing = np.flatnonzero(norms <= 1e-150) if F.shape[1] else np.arange(F.shape[0])
        extra = np.zeros((F.shape[0], missing.size))
        extra[missing, np.arange(missing.size)] = 1.0
        F = np.hstack([F, extra])
        s = np.concatenate([s, np.ones(missing.size)])
        norms = np.linalg.norm(F, axis=1)
    return np.ascontiguousarray(F / norms[:, None]), s
