"""One squared-loss SDP block through its exact dual: a barrier method with a certified bracket.

One block of the squared-loss relaxation (weights ``w``, ``c = 2 beta p``)::

    v* = min  Σ_i w_i (f_i - t_i)² + c rho,   f_i = 2 ⟨L_i, P - N⟩,
         over P, N ⪰ 0,  diag(P + N) = rho 1,  rho >= 0,

has the exact dual (the lemma of :mod:`skquad.convex.face_dual`)::

    d* = max  D(lam) = -Σ_i w_i (lam_i t_i + lam_i² / 4)
         over lam in R^n,  mu in R^p,
              S± = Diag mu ± 2 M(lam) ⪰ 0,  1ᵀmu <= c,   M(lam) = Σ_i w_i lam_i L_i.

**Weak duality** is that lemma: every feasible ``(lam, mu)`` gives ``D(lam)
<= v*``. ``(0, c / (2p) 1)`` is strictly feasible for ``c > 0`` (Slater), so
``d* = v*``. The returned lower bound is not the barrier's value but
:func:`~skquad.convex.face_dual.verified_bound` at ``(lam, mu)``: the LMIs
re-checked by an eigenvalue decomposition (``mu`` raised by their smallest
eigenvalue less a round-off guard) and the trace constraint enforced by a
scaling ``theta``. So it holds whatever the barrier's accuracy. It is verified
where a primal point is taken (an ``O(p³)`` check; a time limit keeps the last).

**The barrier.** For ``tau > 0`` minimise (damped Newton, Armijo line
search; every iterate strictly feasible)::

    phi(lam, mu) = tau Σ w (lam t + lam² / 4)
                   - log det S+ - log det S- - log(c - 1ᵀmu),

(barrier parameter ``nu = 2p + 1``), then raise ``tau`` by ``_TAU_FACTOR``,
starting the next centring from the central path's tangent. The Newton
system has ``n + p`` unknowns; its ``lam`` block is ``tau w / 2`` on the
diagonal plus ``4 w_i w_j tr(S⁻¹ L_i S⁻¹ L_j)`` (``barrier.lmi_terms``:
``O(p³)``, or ``O(n p²)`` through the LMIs' rank, ``barrier.LowRankLMI``, where
``n <= p / 2``; ``O((n + p)³)`` to factor): tens of steps, where the factor
solver takes hundreds of L-BFGS iterations and its face duals.

**The primal point.** Stationarity in ``lam`` and ``mu`` at the centre reads
``t_i + lam_i / 2 = 2 ⟨L_i, S+⁻¹ - S-⁻¹⟩ / tau`` and ``diag(S+⁻¹ + S-⁻¹) =
1 / (c - 1ᵀmu)``: ``P = S+⁻¹ / tau``, ``N = S-⁻¹ / tau``, ``rho = 1 / (tau
(c - 1ᵀmu))`` are feasible, their scores are ``t + lam / 2`` and their gap
is ``nu / tau``. Off the centre the diagonal holds only nearly and ``S⁻¹``
magnifies the error along the optimum's face (the small eigenvalues of
``S``): a loosely centred point, made feasible, can be far from optimal where a
few more Newton steps (quadratic convergence, ``_FINAL_DECREMENT``) make it
tight. So the centrings are loose (``_CENTRED``) until ``nu / tau`` is below half
of ``tol`` (relative to the barrier's dual value), then one is tight, and its
point, made exactly feasible by ``barrier.feasible_point``, is the reported upper
bound; short of ``tol``, ``tau`` rises again. A block the barrier leaves
above ``tol`` is continued by the factor solver from its point, with its
bound (``blocks.solve_staged``).

**Which optimal point.** Where the optimum is not unique the barrier's
``S±⁻¹ / tau`` tends to the centre of the optimal face, of full rank, and
its smallest eigenvalues (of order ``1 / tau``) are the barrier's, not the
optimum's. The point is therefore taken on the eigenvectors of ``P`` and
``N`` above ``FACE_EIGENVALUE`` (1e-3) of the largest eigenvalue, as the
face dual takes its faces (about the rank of the factor solver's optimum,
whose sampled networks they then resemble). Where the truncated point does
not certify ``tol`` the better of the two is kept: at small beta the optimum
can have directions below that threshold.

Rows with ``w_i = 0`` are left out (``lam_i`` enters neither ``D`` nor
``M``); their scores are still reported. When it is chosen: ``skquad.convex.routes``.
"""

import math
import time

import numpy as np
import torch

from .barrier import (
    CentralPath,
    LowRankLMI,
    backtrack,
    barrier_solution,
    components,
    feasible_point,
    follow_central_path,
    lmi_log_barrier,
    lmi_terms,
    newton_direction,
)
from .face_dual import FACE_EIGENVALUE, verified_bound
from .factor_solver import threads_for
from .solution import relative_gap

__all__ = ["solve_squared_dual"]

# The barrier weight's growth per centring and the Newton decrement below which
# a point counts as centred: the hinge dual's (larger raises crept along the LMIs' boundary).
_TAU_FACTOR = 4.0
_CENTRED = 0.25
# The decrement of the tight centring whose point is the primal (module
# docstring), and its most Newton steps.
_FINAL_DECREMENT = 1e-8
_FINAL_STEPS = 10
# Newton steps at one tau after which the point counts as centred whatever its
# decrement (round-off can hold the decrement up); bound and primal are checked anyway.
_STEPS_PER_CENTRING = 15
# The most Newton steps in all (the default fits take 21 to 35); a solve
# that ends short of tol is continued by the factor solver from its point.
_MAX_NEWTON = 100
# Rule: a bilinear block of at most half as many rows as lifted coordinates takes its LMIs
# through their rank (barrier.LowRankLMI). Why: its Newton terms cost O(n p²) against the
# dense O(p³), with the larger constant: they break even near n = p / 2.
_LOW_RANK_SHARE = 0.5


def _optimal_faces(P, N):
    """``P`` and ``N`` on their faces: without the eigenvalues below
    ``FACE_EIGENVALUE`` times the largest of both (module docstring)."""
    parts = [np.linalg.eigh(0.5 * (matrix + matrix.T)) for matrix in (P, N)]
    top = max(float(values[-1]) for values, _ in parts)
    out = []
    for values, vectors in parts:
        keep = values > FACE_EIGENVALUE * max(top, 1e-300)
        out.append((vectors[:, keep] * values[keep]) @ vectors[:, keep].T)
    return out


def solve_squared_dual(data, *, tol=1e-4, time_limit=None, callback=None, verbose=0):
    """Solve one squared-loss block by a barrier method on its exact dual (module docstring).

    Parameters
    ----------
    data : LiftedData
        One block of the squared loss (see ``routes.squared_dual_applies``).
    tol, time_limit, callback, verbose :
        As for :func:`~skquad.convex.hinge_dual.solve_hinge_dual`.

    Returns
    -------
    solution : SDPSolution
        ``solver="squared_dual"``, exactly feasible, with unit-row factors
        (a warm start for the factor solver) and the verified dual bound;
        ``n_iter`` counts Newton steps.
    """
    n = int((data.weight > 0).sum())
    with threads_for((n + data.n_lifted) ** 3 // 3, data.features.device):
        return _solve_squared_dual(data, tol, time_limit, callback, verbose)


class _DualBarrier:
    """``phi(lam, mu)`` of one block at a weight ``tau``, its gradient and Hessian (``lam``: one entry
    per sample of positive weight), in arrays allocated once (fresh ones cost page faults)."""

    def __init__(self, data):
        self.data = data
        weight = data.weight.detach().cpu().numpy().astype(np.float64)
        self.kept = np.flatnonzero(weight > 0)
        self.n_samples = weight.size
        self.target_all = data.target.detach().cpu().numpy()[:, 0].astype(np.float64)
        comps, self.C = components(data)
        self.comps = [u[self.kept] for u in comps]
        self.t, self.weight = self.target_all[self.kept], weight[self.kept]
        self.n, self.p = self.t.size, data.n_lifted
        self.nu = 2 * self.p + 1
        self.penalty = data.penalty_per_rho
        self.low_rank = data.polynomial is None and self.n <= _LOW_RANK_SHARE * self.p
        self.b = 2.0 * self.weight  # 2 M(lam) = Σ_i lam_i b_i L_i
        self._b_outer = np.multiply.outer(self.b, self.b)
        self._pairs = (np.empty((self.n, self.n)), np.empty((self.n, self.n)))
        self._hess = np.empty((self.n + self.p, self.n + self.p))

    def full(self, lam):
        """``lam`` with zeros for the samples of weight 0 (every sample's entry)."""
        out = np.zeros(self.n_samples)
        out[self.kept] = lam
        return out

    def parts(self, lam, mu):
        """``S+``, ``S-`` and the trace slack ``c - 1ᵀmu``."""
        dtype = self.data.features.dtype
        coefficients = torch.as_tensor(self.full(lam * self.b), dtype=dtype)
        M2 = self.data.weighted_matrix(coefficients).detach().cpu().numpy().astype(np.float64)
        M2 = 0.5 * (M2 + M2.T)
        return np.diag(mu) + M2, np.diag(mu) - M2, self.penalty - mu.sum()

    def negative_dual(self, lam):
        """``-D(lam)``."""
        return float(self.weight @ (lam * self.t + 0.25 * lam * lam))

    def value(self, lam, mu, tau):
        """``phi``; infinite outside the LMIs and the trace constraint."""
        if self.low_rank:
            lmi = LowRankLMI(self.comps[0], lam * self.b, mu).log_barrier(self.penalty - mu.sum())
        else:
            lmi = lmi_log_barrier(*self.parts(lam, mu))
        return tau * self.negative_dual(lam) + lmi if math.isfinite(lmi) else math.inf

    def lmi_terms(self, lam, mu):
        """``barrier.lmi_terms`` of ``S+`` and of ``S-`` (through their rank where
        ``low_rank``), and the trace slack."""
        if self.low_rank:
            lmis = LowRankLMI(self.comps[0], lam * self.b, mu, vectors=True)
            return lmis.terms(1.0), lmis.terms(-1.0), self.penalty - mu.sum()
        Sp, Sm, slack = self.parts(lam, mu)
        return (lmi_terms(Sp, self.comps, self.C, pair_out=self._pairs[0]),
                lmi_terms(Sm, self.comps, self.C, pair_out=self._pairs[1]), slack)

    def system(self, lam, mu, tau):
        """The Hessian (the shared array: overwritten by the next call) and gradient."""
        n, b, hess = self.n, self.b, self._hess
        plus, minus, slack = self.lmi_terms(lam, mu)
        (trace_p, pair, cross_p, inverse_p), (trace_m, pair_minus, cross_m, inverse_m) = plus, minus
        pair += pair_minus
        np.multiply(pair, self._b_outer, out=hess[:n, :n])
        hess[np.arange(n), np.arange(n)] += 0.5 * tau * self.weight
        hess[:n, n:] = b[:, None] * (cross_p - cross_m)
        hess[n:, :n] = hess[:n, n:].T
        hess[n:, n:] = inverse_p**2 + inverse_m**2 + 1.0 / slack**2
        grad = np.empty(n + self.p)
        grad[:n] = tau * self.weight * (self.t + 0.5 * lam) - b * (trace_p - trace_m)
        grad[n:] = 1.0 / slack - np.diag(inverse_p) - np.diag(inverse_m)
        return hess, grad

    def tangent_rhs(self, lam):
        """``H dx/dtau = -(w (t + lam / 2), 0)``: ``grad phi = 0`` differentiated in ``tau``."""
        rhs = np.zeros(self.n + self.p)
        rhs[: self.n] = -self.weight * (self.t + 0.5 * lam)
        return rhs


def _certify(phi, path, tol):
    """Raise the best bound by the path's point, verified, and take the centre's primal
    point (on its optimal faces whenever that certifies tol, module docstring; else the
    better of it and the full one). Returns the gap."""
    data, best = phi.data, path.best
    best["lower_bound"] = max(best["lower_bound"], verified_bound(data, phi.full(path.y), path.mu))
    P, N = (terms[3] / path.tau for terms in phi.lmi_terms(path.y, path.mu)[:2])
    weight = data.weight.detach().cpu().numpy().astype(np.float64)
    for face in (True, False):
        F, signs, rho, scores, objective = feasible_point(
            data, *(_optimal_faces(P, N) if face else (P, N)), phi.target_all, weight, phi.penalty,
        )
        if face and relative_gap(objective, best["lower_bound"]) <= tol:
            best.update(objective=objective, point=(F, signs, rho, scores))
            break
        if objective < best["objective"]:
            best.update(objective=objective, point=(F, signs, rho, scores))
    path.gap = relative_gap(best["objective"], best["lower_bound"])
    return path.record()


def _on_centred(phi, path, step, decrement, factor, tol):
    """At a (loosely) centred point: once the barrier's gap bound ``nu / tau`` is
    within half of tol of its dual value, centre tightly, take the primal point and
    verify the bound there (module docstring). Returns the last Newton direction."""
    if phi.nu / path.tau > 0.5 * tol * -phi.negative_dual(path.y):
        path.record()
        return step, decrement, factor
    for _ in range(_FINAL_STEPS):
        if decrement < _FINAL_DECREMENT:
            break
        moved = backtrack(lambda lam, mu: phi.value(lam, mu, path.tau), path.y, path.mu, step,
                          decrement)
        if moved is None:
            break
        path.y, path.mu = moved
        path.steps += 1
        step, decrement, factor = newton_direction(*phi.system(path.y, path.mu, path.tau))
        if step is None:
            break
    _certify(phi, path, tol)
    return step, decrement, factor


def _solve_squared_dual(data, tol, time_limit, callback, verbose):
    start = time.perf_counter()
    phi = _DualBarrier(data)
    zero_value = data.zero_network_value()
    path = CentralPath(
        np.zeros(phi.n), np.full(phi.p, 0.5 * phi.penalty / phi.p), phi.nu / max(zero_value, 1e-300),
        {"objective": zero_value, "lower_bound": 0.0, "point": None}, start, verbose,
    )
    # Whatever but a time limit stops the barrier short of tol, its last point is the best
    # guess of the primal (and certified either way); a time limit keeps the last certified.
    follow_central_path(
        path, phi, lambda *args: _on_centred(phi, *args, tol),
        lambda path: _certify(phi, path, tol), tol=tol, max_steps=_MAX_NEWTON,
        time_limit=time_limit, centred=_CENTRED, tau_factor=_TAU_FACTOR,
        steps_per_centring=_STEPS_PER_CENTRING,
    )
    return barrier_solution(path, phi.p, phi.n_samples, tol, callback, "squared_dual")
