"""The binary hinge SDP through its exact dual: a barrier method with a certified bracket.

The binary hinge relaxation (one output, ``t_i = ±1``, weights ``w`` summing
to one, ``c = 2 beta p``)::

    v* = min  Σ_i w_i max(0, 1 - t_i f_i) + c rho,   f_i = 2 ⟨L_i, P - N⟩,
         over P, N ⪰ 0,  diag(P + N) = rho 1,  rho >= 0,

has the exact dual (the lemma of :mod:`skquad.convex.face_dual` with the
hinge's conjugate ``l*(lam) = -s`` for ``s = -t lam`` in [0, 1])::

    d* = max  Σ_i w_i s_i
         over s in [0, 1]^n,  mu in R^p,
              S± = Diag mu ± 2 M(s) ⪰ 0,  1ᵀmu <= c,   M(s) = -Σ_i w_i t_i s_i L_i.

**Weak duality** (every feasible ``(s, mu)`` gives ``Σ w s <= v*``). For every
feasible ``(P, N, rho)``: ``max(0, 1 - t f) >= s (1 - t f) = s + lam f`` for
``s`` in [0, 1] and ``lam = -t s``, so the loss is at least ``Σ w s + 2 ⟨M,
P - N⟩``; ``2 ⟨M, P⟩ >= -⟨Diag mu, P⟩`` (``S+ ⪰ 0``, ``P ⪰ 0``), ``-2 ⟨M, N⟩
>= -⟨Diag mu, N⟩`` (``S- ⪰ 0``, ``N ⪰ 0``), so ``2 ⟨M, P - N⟩ >= -rho 1ᵀmu
>= -c rho``, and the objective is at least ``Σ w s``. ∎ The returned lower
bound is not the barrier's value but
:func:`~skquad.convex.face_dual.verified_bound` at ``(lam, mu)``: ``lam``
clipped into the domain, the LMIs re-checked by an eigenvalue decomposition
(``mu`` raised by their smallest eigenvalue less a round-off guard), the
trace constraint enforced by a scaling ``theta``. So it holds whatever the
barrier's accuracy: an inexact Newton step costs tightness, never validity.

**The barrier.** For ``tau > 0`` minimise (damped Newton, Armijo line
search; every iterate strictly feasible)::

    phi(s, mu) = -tau Σ w s - Σ log s_i - Σ log(1 - s_i)
                 - log det S+ - log det S- - log(c - 1ᵀmu),

then raise ``tau``. The Newton system has ``n + p`` unknowns; with ``L_i =
Σ_xy C_xy u_ix u_iyᵀ`` (``u = z``, ``C = [1]`` for the bilinear lifting;
``u = ([z, 0], e_p)``, ``C = [[a, b/2], [b/2, c]]`` for the polynomial one)
its ``s`` block needs ``tr(S⁻¹ L_i S⁻¹ L_j) = Σ C_xy C_zw G^yz_ij G^xw_ij``
with ``G^ab = U_a S⁻¹ U_bᵀ`` (``n x n``): ``O(n² p)`` to form and ``O(n³)`` to
factor per step, against ``O(n (p²)²)`` for an interior point on the primal
(the compact form's dense margin rows).

**The primal point.** At a centred point the stationarity in ``mu`` reads
``diag(S+⁻¹ + S-⁻¹) = 1 / (c - 1ᵀmu)``: ``P = S+⁻¹ / tau``, ``N = S-⁻¹ /
tau`` satisfy ``diag(P + N) = rho 1`` with ``rho = 1 / (tau (c - 1ᵀmu))``,
and the duality gap of that pair is at most ``(2n + 2p + 1) / tau``. Off the
central path the diagonal holds only nearly, so the returned point is made
exactly feasible: ``P`` and ``N`` scaled to ``diag(P + N) = 1`` (``D P D`` with
a positive diagonal ``D`` keeps them PSD), factored with unit rows, and
``rho`` chosen exactly for those directions (the objective is convex and
piecewise linear in ``rho``: its minimiser is a breakpoint; ``feasible_point()``
also tries padding the diagonal instead). Its objective is the reported
upper bound; the solve stops when the certified relative gap is at most
``tol``.

**The face primal.** The barrier closes the gap sublinearly near the end (the
optimum is not strictly complementary), and ``S±⁻¹ / tau`` lags the dual. So
once the bound has settled, the primal restricted to the faces of ``S±⁻¹``
(small ``X``, ``Y`` blocks and ``n`` slacks) is solved by Clarabel
(``_face_primal()``); its point, made exactly feasible as above, certifies
``tol`` where the barrier's own stalls. When it applies: ``skquad.convex.routes``.
"""

import math
import time

import numpy as np
import scipy.linalg
import scipy.sparse
import torch

from .barrier import (
    CentralPath,
    barrier_solution,
    components,
    feasible_point,
    follow_central_path,
    lmi_log_barrier,
    lmi_terms,
)
from .compact_solver import smat
from .face_dual import verified_bound
from .factor_solver import threads_for
from .solution import SolverFailedError, relative_gap

__all__ = ["solve_hinge_dual"]

# Barrier weight growth per centring, and the Newton decrement below which a
# point counts as centred.
_TAU_FACTOR = 4.0
_CENTRED = 0.25
_MAX_NEWTON = 200
# The face problem (``_face_primal()``) is solved at a centred point once the
# barrier's gap bound ``nu / tau`` is below this fraction of the dual value:
# earlier the faces are not yet the optimum's.
_POLISH = 0.1


def _balanced_start(data, t, weight, floor=0.05):
    """``s`` near ``1 / 2`` with ``M(s)`` small: ``1 / 2`` projected on ``{M(s) = 0}``, clipped.

    The start must satisfy ``Diag mu ± 2 M(s) ≻ 0`` with ``1ᵀmu < 2 beta p``,
    so ``s`` is scaled by ``mu / |2 M(s)|``: the smaller ``M(s)`` for its
    size, the larger the start's ``s`` and the smaller its ``-Σ log s``, which
    the first centring has to remove. ``M`` is linear, ``M(s) = Σ_i s_i A_i``
    with ``svec A_i = -w_i t_i Φ_i``: the least-squares correction costs one
    solve of the smaller of ``n x n`` and ``m x m`` (``m = p (p + 1) / 2``).
    """
    from .compact_solver import lifted_svecs

    A = -(weight * t)[:, None] * lifted_svecs(data)
    # A (AᵀA + r I)⁻¹ Aᵀ = AAᵀ (AAᵀ + r I)⁻¹: the same correction through the smaller of
    # the n x n and m x m Grams (an m x m one at p = 400 is 51 GB).
    rows_first = A.shape[0] < A.shape[1]
    gram = A @ A.T if rows_first else A.T @ A
    ridge = 1e-10 * max(float(np.trace(gram)) / A.shape[1], 1e-300)
    half = np.full(t.size, 0.5)
    try:
        shifted = gram + ridge * np.eye(gram.shape[0])
        if rows_first:
            correction = gram @ scipy.linalg.solve(shifted, half, assume_a="pos", check_finite=False)
        else:
            correction = A @ scipy.linalg.solve(shifted, A.T @ half, assume_a="pos", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        return half
    return np.clip(half - correction, floor, 1.0 - floor)


def _face(matrix, top, threshold=1e-3):
    """Eigenvectors of ``matrix`` with eigenvalues above ``threshold * top``, strongest first."""
    values, vectors = np.linalg.eigh(matrix)
    keep = values > threshold * top
    return vectors[:, keep][:, ::-1]


def _face_primal(data, P, N, t, weight, penalty, max_size=300):
    """The hinge SDP restricted to the faces of ``P`` and ``N``, solved by Clarabel.

    ``P*`` lives on the eigenvectors ``U`` of the barrier's ``P = S+⁻¹ / tau`` with large
    eigenvalues (``V`` for ``N``): with ``P = U X Uᵀ``, ``N = V Y Vᵀ`` a small SDP in
    ``X``, ``Y`` and ``n`` slacks, with ``diag(P + N) <= rho 1`` (``feasible_point()``'s
    padding keeps the optimum). Returns ``(P, N, s, mu)`` or None.
    """
    import clarabel

    from .compact_solver import clarabel_solve, svec_indices
    from .face_dual import pair_scores

    top = max(float(np.linalg.eigvalsh(P)[-1]), float(np.linalg.eigvalsh(N)[-1]), 1e-300)
    bases = [_face(P, top), _face(N, top)]
    while sum(B.shape[1] * (B.shape[1] + 1) // 2 for B in bases) > max_size:
        # Drop the direction carrying the smaller share of the two.
        k = 0 if bases[0].shape[1] >= bases[1].shape[1] else 1
        bases[k] = bases[k][:, :-1]
    n, p = t.size, P.shape[0]
    blocks = []
    for sign, B in zip((1.0, -1.0), bases):
        r = B.shape[1]
        if r == 0:
            continue
        rows, cols = svec_indices(r)
        upper = np.zeros((r, r), dtype=np.int64)
        upper[np.triu_indices(r)] = np.arange(r * (r + 1) // 2)
        order = upper[rows, cols]
        root = np.where(rows == cols, 1.0, math.sqrt(2.0))
        scores = pair_scores(data, B)[:, order] * root  # f_i = 2 Σ_k this_ik x_k
        diagonal = B[:, rows] * B[:, cols] * root  # diag(B X Bᵀ)_j = Σ_k this_jk x_k
        blocks.append((sign, B, rows, cols, scores, diagonal))
    if not blocks:
        return None
    widths = [B.shape[1] * (B.shape[1] + 1) // 2 for _, B, *_ in blocks]
    m = sum(widths)
    # Variables [x blocks, rho, xi]; Clarabel's rows A x + s = b.
    margin = np.hstack([-2.0 * sign * t[:, None] * sc for sign, _, _, _, sc, _ in blocks])
    diag_rows = np.hstack([dg for *_, dg in blocks])
    A_nonneg = np.vstack([
        np.hstack([np.zeros((n, m + 1)), -np.eye(n)]),
        np.hstack([margin, np.zeros((n, 1)), -np.eye(n)]),
        np.hstack([diag_rows, -np.ones((p, 1)), np.zeros((p, n))]),
    ])
    psd = []
    offset = 0
    for width in widths:
        rows_block = np.zeros((width, m + 1 + n))
        rows_block[:, offset : offset + width] = -np.eye(width)
        psd.append(rows_block)
        offset += width
    A = scipy.sparse.csc_matrix(np.vstack([A_nonneg] + psd))
    rhs = np.concatenate([np.zeros(n), -np.ones(n), np.zeros(p + m)])
    linear = np.concatenate([np.zeros(m), [penalty], weight])
    cones = [clarabel.NonnegativeConeT(2 * n + p)] + [
        clarabel.PSDTriangleConeT(B.shape[1]) for _, B, *_ in blocks
    ]
    quadratic = scipy.sparse.csc_matrix((m + 1 + n, m + 1 + n))
    try:
        solution = clarabel_solve(quadratic, linear, A, rhs, cones, "the hinge loss's face")
    except SolverFailedError:  # a failed polish only loses tightness
        return None
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    out = [np.zeros((p, p)), np.zeros((p, p))]
    offset = 0
    for (sign, B, rows, cols, _, _), width in zip(blocks, widths):
        X = smat(x[offset : offset + width], B.shape[1], rows, cols)
        values, vectors = np.linalg.eigh(X)
        X = (vectors * np.clip(values, 0.0, None)) @ vectors.T  # the cone's round-off
        out[0 if sign > 0 else 1] = B @ X @ B.T
        offset += width
    # The multipliers: of the margin rows, w s (the xi column's stationarity
    # w_i = z_xi + z_margin); of the diagonal rows, mu.
    sigma = np.clip(z[n : 2 * n] / np.where(weight > 0, weight, 1.0), 0.0, 1.0)
    return out[0], out[1], sigma, z[2 * n : 2 * n + p]


def solve_hinge_dual(data, *, tol=1e-4, time_limit=None, callback=None, verbose=0):
    """Solve the binary hinge SDP by a barrier method on its exact dual (module docstring).

    Parameters
    ----------
    data : LiftedData
        Binary hinge loss (see ``routes.hinge_dual_applies``).
    tol : float, default=1e-4
        Stop when the certified relative gap is at most ``tol``.
    time_limit : float, default=None
        Seconds after which the best point so far is returned.
    callback : callable, default=None
        ``callback(info) -> bool`` once at the end, with the factor
        solver's keys (``iteration``, ``objective``, ``lower_bound``,
        ``gap``, ``rank``, ``elapsed``).
    verbose : int, default=0
        Print one progress line per centring.

    Returns
    -------
    solution : SDPSolution
        ``solver="hinge_dual"``, exactly feasible, with unit-row factors (a
        warm start for the factor solver) and the verified dual bound;
        ``n_iter`` counts Newton steps.
    """
    # One torch and one BLAS thread up to a mid-sized Newton system (the
    # project's rule, threads_for): on a busy machine a second thread makes
    # each solve many times slower.
    n = data.target.shape[0]
    with threads_for((n + data.n_lifted) ** 3 // 3, data.features.device):
        return _solve_hinge_dual(data, tol, time_limit, callback, verbose)


class _HingeBarrier:
    """``phi(s, mu)`` of the binary hinge dual at a weight ``tau`` (module docstring),
    its Newton system, the central path's tangent and the certificate of a point."""

    def __init__(self, data):
        self.data = data
        self.comps, self.C = components(data)
        self.t = data.target.detach().cpu().numpy()[:, 0].astype(np.float64)
        self.weight = data.weight.detach().cpu().numpy().astype(np.float64)
        self.n, self.p = self.t.size, data.n_lifted
        self.penalty = data.penalty_per_rho
        self.b = -2.0 * self.weight * self.t  # 2 M(s) = Σ_i s_i b_i L_i
        self.nu = 2 * self.n + 2 * self.p + 1

    def lifted_sum(self, s):
        coefficients = torch.as_tensor(s * self.b, dtype=self.data.features.dtype)
        M2 = self.data.weighted_matrix(coefficients).detach().cpu().numpy().astype(np.float64)
        return 0.5 * (M2 + M2.T)

    def parts(self, s, mu):
        M2 = self.lifted_sum(s)
        return np.diag(mu) + M2, np.diag(mu) - M2, self.penalty - mu.sum()

    def value(self, s, mu, tau):
        if not (np.all(s > 0.0) and np.all(s < 1.0)):
            return math.inf
        lmi = lmi_log_barrier(*self.parts(s, mu))
        if not math.isfinite(lmi):
            return math.inf
        return -tau * float(self.weight @ s) - float(np.log(s).sum() + np.log1p(-s).sum()) + lmi

    def system(self, s, mu, tau):
        n, p, b = self.n, self.p, self.b
        Sp, Sm, slack = self.parts(s, mu)
        grad = np.zeros(n + p)
        hess = np.zeros((n + p, n + p))
        grad[:n] = -tau * self.weight - 1.0 / s + 1.0 / (1.0 - s)
        hess[np.arange(n), np.arange(n)] = 1.0 / s**2 + 1.0 / (1.0 - s) ** 2
        for sign, S in ((1.0, Sp), (-1.0, Sm)):
            trace, pair, cross, S_inv = lmi_terms(S, self.comps, self.C)
            grad[:n] -= sign * b * trace
            grad[n:] -= np.diag(S_inv)
            hess[:n, :n] += b[:, None] * pair * b[None, :]
            hess[:n, n:] += sign * b[:, None] * cross
            hess[n:, n:] += S_inv**2
        hess[n:, :n] = hess[:n, n:].T
        grad[n:] += 1.0 / slack
        hess[n:, n:] += 1.0 / slack**2
        return hess, grad

    def tangent_rhs(self, s):
        """``H dx/dtau = (w, 0)``: ``grad phi = 0`` differentiated in ``tau``."""
        rhs = np.zeros(self.n + self.p)
        rhs[: self.n] = self.weight
        return rhs

    def start(self, start_time, verbose):
        """The run's start: mu = c / (2p) on every coordinate (half the trace
        budget), s of ``_balanced_start()``'s shape scaled until ±2 M(s) stays
        below mu in norm, and tau where the central path's gap is the zero
        network's value (which bounds the optimum)."""
        mu = np.full(self.p, 0.5 * self.penalty / self.p)
        shape = _balanced_start(self.data, self.t, self.weight)
        norm = float(np.linalg.norm(self.lifted_sum(shape), 2))
        level = 1.0 if norm <= 0 else min(1.0, 0.5 * mu[0] / norm)
        zero_value = self.data.zero_network_value()
        best = {"objective": zero_value, "lower_bound": 0.0, "point": None}
        return CentralPath(level * shape, mu, self.nu / max(zero_value, 1e-300), best,
                           start_time, verbose)

    def check(self, path, polish=False):
        """Raise the best bound at the path's point and take its primal point
        ``S±⁻¹ / tau`` (with ``polish``, also the face problem's point and
        bound), made feasible; returns the certified relative gap."""
        data, t, best = self.data, self.t, path.best
        s, mu = path.y, path.mu
        Sp, Sm, _ = self.parts(s, mu)
        best["lower_bound"] = max(best["lower_bound"], verified_bound(data, -t * s, mu))
        P, N = np.linalg.inv(Sp) / path.tau, np.linalg.inv(Sm) / path.tau
        points = [(P, N)]
        if polish:
            face = _face_primal(data, P, N, t, self.weight, self.penalty)
            if face is not None:
                points.append(face[:2])
                # The face problem's dual: feasible for the full dual where
                # the face is right (verified either way).
                best["lower_bound"] = max(best["lower_bound"], verified_bound(data, -t * face[2], face[3]))
        for P, N in points:
            F, signs, rho, scores, objective = feasible_point(data, P, N, t, self.weight, self.penalty)
            if objective < best["objective"]:
                best.update(objective=objective, point=(F, signs, rho, scores))
        return relative_gap(best["objective"], best["lower_bound"])

    def on_centred(self, path, step, decrement, factor, tol):
        """Certify a centred point; the face problem pays once the bound has
        settled (the last raise of tau moved it by less than tol) and the
        barrier's gap bound is below ``_POLISH`` of it: its faces are then the optimum's."""
        best = path.best
        previous = best["lower_bound"]
        path.gap = self.check(path)
        settled = best["lower_bound"] - previous <= tol * abs(best["lower_bound"])
        if path.gap > tol and settled and self.nu / path.tau <= _POLISH * abs(best["lower_bound"]):
            path.gap = self.check(path, polish=True)
        path.record()
        return step, decrement, factor


def _solve_hinge_dual(data, tol, time_limit, callback, verbose):
    start_time = time.perf_counter()
    phi = _HingeBarrier(data)
    path = phi.start(start_time, verbose)
    path.gap = phi.check(path)
    # Short of tol at the end, the dual has gone as far as round-off lets it:
    # its faces are the best guess of the primal's.
    follow_central_path(
        path, phi, lambda *args: phi.on_centred(*args, tol),
        lambda path: phi.check(path, polish=True), tol=tol, max_steps=_MAX_NEWTON,
        time_limit=time_limit, centred=_CENTRED, tau_factor=_TAU_FACTOR,
    )
    return barrier_solution(path, phi.p, phi.n, tol, callback, "hinge_dual")
