"""The native SDP solver: Burer-Monteiro factors of the ``P - N`` form.

The SDP of Bartan & Pilanci has the same optimum as (design note, section 1)::

    minimise  Σ_i w_i l(f_i) + 2 beta p Σ_k rho_k,   f_ik = 2 ⟨L(x_i), P_k - N_k⟩
    over      P_k, N_k ⪰ 0,  diag(P_k + N_k) = rho_k 1,

with the relaxed block ``Q_k = [[P+N, P-N], [P-N, P+N]]``. Each block is
factored as ``P = rho A Aᵀ``, ``N = rho B Bᵀ`` with every row of
``F = [A, B]`` of unit norm (so the diagonal constraint holds exactly) and
``rho = exp(t)``. The scores are ``f = 2 rho Σ_c s_c q(Z F_c)`` (no
``L(x_i)`` is formed: :class:`~skquad.convex.problem.LiftedData`), and the
unconstrained parameters ``(W, t)`` with ``F = W / ||W rows||`` are minimised
by torch's L-BFGS in chunks. After every chunk the certificate
(:func:`~skquad.convex.certificate.dual_bound`) gives a lower bound; the
solver stops when the relative gap ``(objective - bound) / objective`` is at
most ``tol``.

* Start: the eigenvectors of ``M_0 = Σ w_i l'(0) L(x_i)`` (most negative for
  ``A``, most positive for ``B``), then a golden-section search of ``rho``
  on ``[0, rho_max]`` (the objective is convex in ``rho`` for fixed factors).
  A warm start (``init``) keeps the previous factors and searches a common
  scale of the previous ``rho``.
* Rank: starts at ``ceil(sqrt(2 p))`` columns per block (Burer-Monteiro:
  rank ``r`` with ``r (r + 1) / 2 >= p`` has no spurious second-order
  points for generic data), and grows when the chunk made little progress
  and the certificate's eigenvalue test is the main part of the gap: the
  negative eigenvectors of ``Diag mu ± 2 M`` become new columns.
* Hinge losses: the proximal method of multipliers on the dual box /
  simplex (:func:`~skquad.convex.losses.hinge_prox`), one dual update per chunk.
* Squared loss: once a chunk improves the objective by at most ``tol``
  (relative), each block is also certified by its face-restricted dual
  (:func:`~skquad.convex.face_dual.face_dual_bound`), whose bound closes as
  fast as the primal error where ``lam = 2 (f - t)`` closes as its square
  root; the sum of the blocks' bounds is a bound (the blocks separate).
  The binary logistic loss (``p <= LOGISTIC_FACE_MAX_LIFTED``) gets its own
  face dual at the same moments (the family ``l'(f) + l''(f) ⊙ face scores``,
  or the last chunks' score steps where the face is too large to form),
  which certifies in a fraction of the iterations the eigenvalue test needs.
"""

import collections
import contextlib
import dataclasses
import math
import time

import numpy as np
import torch

from .._foundation._lbfgs_compact import minimize_compact_lbfgs
from .._foundation._runtime import thread_count
from .._foundation._threads import limit_threads
from .._foundation._torch_utils import lbfgs_optimizer
from .certificate import align_factor, dual_bound, golden_minimum, squared_loss_rho
from .face_dual import LOGISTIC_FACE_MAX_LIFTED, face_dual_bound, verified_bound
from .losses import (
    dual_point,
    hinge_dual_point,
    hinge_prox,
    initial_hinge_dual,
    loss_per_sample,
)
from .solution import factor_solution, record_progress, relative_gap

__all__ = ["FACTOR_SOLVER_OPTIONS", "solve_factored", "solve_squared_block", "start_columns_per_sign"]

# Chunks of score history whose steps span the logistic face dual's family
# when the face is too large to form; fewer above _FEW_STEPS_ABOVE (O(q p³) steps).
_SCORE_STEPS = 6
_FEW_SCORE_STEPS = 2
_FEW_STEPS_ABOVE = 400

# Keyword arguments of solve_factored a user may pass as solver_options.
FACTOR_SOLVER_OPTIONS = (
    "rank", "max_rank", "chunk_size", "history_size", "hinge_sigma", "align_iterations",
    "time_limit",
)

# Rows of W are scaled back to unit norm (and L-BFGS restarted) when one
# exceeds this: F = W / ||W|| scales each row's gradient by 1 / ||W_j||.
_RENORMALIZE_ABOVE = 2.0


class _FactorState:
    """The solver's variables: per block ``W_k`` (p x r_k) and signs, and ``t``."""

    def __init__(self, data, weights, signs, log_rho, dual):
        self.data = data
        self.weights = [w.detach().clone().requires_grad_(True) for w in weights]
        self.signs = signs
        self.log_rho = log_rho.detach().clone().requires_grad_(True)
        self.dual = dual

    @property
    def rank(self):
        return sum(w.shape[1] for w in self.weights)

    def factors(self):
        return [w / torch.linalg.vector_norm(w, dim=1, keepdim=True) for w in self.weights]

    def scores(self, factors=None, rho=None):
        factors = self.factors() if factors is None else factors
        rho = torch.exp(self.log_rho) if rho is None else rho
        columns = [
            2.0 * rho[k] * self.data.factor_inner(F, s)
            for k, (F, s) in enumerate(zip(factors, self.signs))
        ]
        return torch.stack(columns, dim=1)

    def smooth_objective(self):
        """The function L-BFGS minimises (the hinge in its proximal form)."""
        data = self.data
        # rho* <= rho_max: capping keeps line-search trials finite.
        rho = torch.exp(torch.clamp(self.log_rho, max=self.log_rho_cap))
        scores = self.scores(rho=rho)
        if data.loss == "hinge":
            values, _ = hinge_prox(scores, data.target, self.dual, self._sigma)
        else:
            values = loss_per_sample(scores, data.target, data.loss)
        return data.weight @ values + data.penalty_per_rho * rho.sum()

    def renormalize(self):
        with torch.no_grad():
            for w in self.weights:
                w /= torch.linalg.vector_norm(w, dim=1, keepdim=True)

    def parameters(self):
        return [*self.weights, self.log_rho]


def _spectral_start(data, rank, generator):
    """Factors from the eigenvectors of ``M_0 = Σ w l'(0) L(x)``, signs, dual at 0."""
    zeros = torch.zeros_like(data.target)
    if data.loss == "hinge":
        dual = initial_hinge_dual(data.target)
        lam = hinge_dual_point(dual, data.target)
    else:
        dual = None
        lam = dual_point(zeros, data.target, data.loss)
    p = data.n_lifted
    weights, signs = [], []
    for k in range(data.n_outputs):
        M = data.weighted_matrix(data.weight * lam[:, k])
        _, vectors = torch.linalg.eigh(0.5 * (M + M.T))
        n_plus = min(p, max(1, (rank + 1) // 2))
        n_minus = min(p, max(1, rank - n_plus))
        block = torch.cat([vectors[:, :n_plus], vectors[:, p - n_minus:]], dim=1)
        noise = torch.randn(block.shape, generator=generator, dtype=block.dtype, device="cpu")
        block = block + 0.3 / math.sqrt(p) * noise.to(block.device)
        sign = torch.ones(block.shape[1], dtype=block.dtype, device=block.device)
        sign[n_plus:] = -1.0
        weights.append(align_factor(M, block, sign))
        signs.append(sign)
    return weights, signs, dual


def _search_rho(data, weights, signs, base_rho):
    """Golden-section search of ``c`` in ``rho = c * base_rho`` (convex in ``c``)."""
    with torch.no_grad():
        factors = [w / torch.linalg.vector_norm(w, dim=1, keepdim=True) for w in weights]
        unit = torch.stack(
            [2.0 * base_rho[k] * data.factor_inner(F, s) for k, (F, s) in enumerate(zip(factors, signs))],
            dim=1,
        )
        base_sum = float(base_rho.sum())

        def objective(c):
            return float(data.objective(c * unit, c * base_sum))

        high = data.rho_max() / float(base_rho.max())
        if not math.isfinite(high):
            scale = float(unit.abs().max())
            high = 1e3 / max(scale, 1e-12)
        c = golden_minimum(objective, 0.0, high)
    return c * base_rho


def _wake_blocks(state, lam, rho, off_rho):
    """Re-aim the blocks whose ``rho`` is (near) zero for the current dual (:func:`_align`); where the
    slope ``2 ⟨M_k, D_k⟩ + 2 beta p`` is then negative, a 1-D search sets ``rho_k``; whether any
    changed."""
    data = state.data
    changed = False
    for k, value in enumerate(rho):
        if value > off_rho:
            continue
        with torch.no_grad():
            M = data.weighted_matrix(data.weight * lam[:, k])
        F = align_factor(M, state.weights[k].detach(), state.signs[k])
        state.weights[k] = F.clone().requires_grad_(True)
        changed = True
        slope = 2.0 * float(((M @ F) * F * state.signs[k]).sum()) + data.penalty_per_rho
        if slope >= 0.0:
            continue
        with torch.no_grad():
            factors = state.factors()
            rho_all = torch.exp(state.log_rho)
            others = state.scores(factors, rho_all)
            others[:, k] = 0.0
            unit = 2.0 * data.factor_inner(factors[k], state.signs[k])
            rest = float(rho_all.sum() - rho_all[k])

            def objective(r, others=others, k=k, unit=unit, rest=rest):
                scores = others.clone()
                scores[:, k] = r * unit
                return float(data.objective(scores, rest + r))

            high = data.rho_max()
            if not math.isfinite(high):
                high = 1e3 / max(float(unit.abs().max()), 1e-12)
            best = golden_minimum(objective, 0.0, high)
            if best > value:
                state.log_rho[k] = math.log(max(best, off_rho * 1e-6))
    return changed


def _face_dual_bound(data, factors, signs, scores, rho, tol, directions=None):
    """The sum of the blocks' face-restricted dual bounds (squared loss: the objective is a sum
    over independent blocks); each block stops once it certifies half of ``tol``."""
    total = 0.0
    for k in range(data.n_outputs):
        block = dataclasses.replace(data, target=data.target[:, k : k + 1])
        f_k = scores[:, k : k + 1]
        value = float(block.objective(f_k, rho[k]))
        total += face_dual_bound(
            block, factors[k].detach().cpu().numpy().astype(np.float64),
            signs[k].detach().cpu().numpy().astype(np.float64),
            f_k[:, 0].detach().cpu().numpy().astype(np.float64),
            target_value=value - 0.5 * tol * abs(value), directions=directions,
        )
    return total


def _make_optimizer(state, chunk_size, history_size):
    return lbfgs_optimizer(
        state.parameters(),
        lr=1.0,
        max_iter=chunk_size,
        max_eval=int(chunk_size * 1.5) + 5,
        tolerance_grad=1e-13,
        tolerance_change=1e-15,
        history_size=history_size,
        line_search_fn="strong_wolfe",
    )


def _grow(state, certificate, tiny_rho, max_rank):
    """Append the certificate's negative eigenvectors as new columns, at the best of a few scales
    (at a saddle the decrease is second order); at ``max_rank`` the smallest columns make room.
    Returns the number of columns added.
    """
    added = 0
    for k, (plus, minus) in enumerate(certificate.growth_directions):
        if certificate.eigenvalue_shifts[k] <= 0.0 or float(state.log_rho[k].detach().exp()) <= tiny_rho:
            continue
        new = torch.cat([plus, minus], dim=1)
        if new.shape[1] == 0:
            continue
        new_signs = torch.cat([
            torch.ones(plus.shape[1], dtype=new.dtype, device=new.device),
            -torch.ones(minus.shape[1], dtype=new.dtype, device=new.device),
        ])
        with torch.no_grad():
            F = state.factors()[k]
            p = F.shape[0]
            excess = F.shape[1] + new.shape[1] - max_rank
            if excess > 0:
                # Only dead columns (near zero) make room: replacing live ones churns.
                norms = torch.linalg.vector_norm(F, dim=0)
                dead = int((norms < 1e-2 * norms.max()).sum())
                if dead == 0:
                    continue
                new = new[:, : min(new.shape[1], dead)]
                new_signs = new_signs[: new.shape[1]]
                excess = F.shape[1] + new.shape[1] - max_rank
                keep = torch.argsort(norms, descending=True)
                keep = torch.sort(keep[: max(F.shape[1] - max(excess, 0), 0)]).values
                F = F[:, keep]
                state.signs[k] = state.signs[k][keep]
                state.weights[k] = state.weights[k].detach()[:, keep]
            best = None
            for scale in (0.05, 0.15, 0.4, 1.0):
                trial = torch.cat([F, scale * math.sqrt(p) * new], dim=1)
                trial = trial / torch.linalg.vector_norm(trial, dim=1, keepdim=True)
                weights = [w.detach() for w in state.weights]
                weights[k] = trial
                factors = [w / torch.linalg.vector_norm(w, dim=1, keepdim=True) for w in weights]
                signs = list(state.signs)
                signs[k] = torch.cat([state.signs[k], new_signs])
                scores = torch.stack(
                    [2.0 * torch.exp(state.log_rho[j]) * state.data.factor_inner(G, s)
                     for j, (G, s) in enumerate(zip(factors, signs))],
                    dim=1,
                )
                value = float(state.data.objective(scores, torch.exp(state.log_rho).sum()))
                if best is None or value < best[0]:
                    best = (value, trial)
        state.weights[k] = best[1].clone().requires_grad_(True)
        state.signs[k] = torch.cat([state.signs[k], new_signs])
        added += new.shape[1]
    return added


def threads_for(work, device):
    """One torch and one BLAS thread where the runtime policy gives a step of
    ``work`` multiply-adds one thread (:func:`~skquad._foundation._runtime.thread_count`;
    restored afterwards), else the threads as they are. numpy's BLAS too: the
    certificate's eigendecompositions, the interior points and the face dual run there."""
    single = thread_count("auto", device, work) == 1
    return limit_threads(1, blas=1) if single else contextlib.nullcontext()


def solve_factored(data, **options):
    """Solve the SDP relaxation with the factor (Burer-Monteiro) solver.

    See ``_solve_factored()`` for the parameters (this wrapper only picks
    the number of torch threads for the problem's size).
    """
    rank = options.get("rank") or math.ceil(math.sqrt(2.0 * data.n_lifted))
    work = data.features.shape[0] * data.n_lifted * rank * data.n_outputs
    with threads_for(work, data.features.device):
        return _solve_factored(data, **options)


def _solve_factored(
    data,
    *,
    tol=1e-4,
    max_iter=3000,
    rank=None,
    max_rank=None,
    init=None,
    callback=None,
    verbose=0,
    chunk_size=50,
    history_size=30,
    hinge_sigma=10.0,
    align_iterations=30,
    time_limit=None,
    random_state=0,
):
    """Solve the SDP relaxation with the factor (Burer-Monteiro) solver.

    Parameters
    ----------
    data : LiftedData
        The weighted training set (float64 recommended: the certificate is
        computed in the data's dtype).
    tol : float, default=1e-4
        Stop when the certified relative gap ``(objective - lower_bound) /
        |objective|`` is at most ``tol``.
    max_iter : int, default=3000
        Largest total number of L-BFGS iterations.
    rank : int, default=None
        Initial number of factor columns per block; None: ``ceil(sqrt(2 p))``
        (at least 4, at most ``2 p``).
    max_rank : int, default=None
        Largest number of columns per block; None: ``2 p``.
    init : SDPSolution, default=None
        A previous solution of the factor solver (a warm start, e.g. along a
        path of ``beta``): its factors, its ``rho`` (rescaled by a 1-D
        search) and, for the hinge losses on the same samples, its dual.
    callback : callable, default=None
        ``callback(info) -> bool`` after every chunk, with ``info`` a dict of
        ``iteration``, ``objective``, ``lower_bound``, ``gap`` (relative),
        ``rank`` and ``elapsed`` (seconds); returning True stops the solver.
    verbose : int, default=0
        Print one :func:`~skquad._foundation._reporting.progress_line` per chunk.
    chunk_size : int, default=50
        L-BFGS iterations between two certificates.
    history_size : int, default=30
        L-BFGS memory.
    hinge_sigma : float, default=10.0
        Step of the proximal method of multipliers (hinge losses).
    align_iterations : int, default=30
        Iterations that re-optimise the factors' directions for the
        certificate's linear model (``align_factor()``).
    time_limit : float, default=None
        Seconds after which the solver stops at the end of a chunk (status
        ``"time_limit"``) with its current point and the best certified
        bound so far; None: no limit.
    random_state : int, default=0
        Seeds the small perturbation of the spectral start (a private
        generator; the solve is deterministic).

    Returns
    -------
    solution : SDPSolution
        With ``solver="native"``, ``factors``, ``dual``, ``lower_bound``,
        ``converged`` and ``info["history"]`` (one dict per chunk).
    """
    run = _FactoredRun(time.perf_counter(), tol, chunk_size, history_size, max_iter, verbose)
    state = _initial_state(data, init, rank, max_rank, hinge_sigma, random_state)
    run.use_face_dual = data.lifted is None and (
        data.loss == "squared"
        or (data.loss == "logistic" and data.n_outputs == 1 and data.n_lifted <= LOGISTIC_FACE_MAX_LIFTED)
    )
    while True:
        point = _certify_chunk(state, run, align_iterations)
        if point.gap <= tol:
            run.converged = True
            break
        if callback is not None and callback(dict(run.history[-1])):
            run.stopped_by_callback = True
            break
        if run.n_iter >= max_iter:
            break
        if time_limit is not None and run.history[-1]["elapsed"] >= time_limit:
            run.out_of_time = True
            break
        _prepare_chunk(state, run, point)
        if _run_chunk(state, run):
            break
    return _factored_solution(state, run, point)


class _FactoredRun:
    """The factor solver's bookkeeping across chunks (the variables are ``_FactorState``)."""

    def __init__(self, start_time, tol, chunk_size, history_size, max_iter, verbose):
        self.start_time, self.tol, self.chunk_size = start_time, tol, chunk_size
        self.history_size, self.max_iter, self.verbose = history_size, max_iter, verbose
        self.history, self.aligned, self.n_iter, self.stalled_chunks = [], None, 0, 0
        # Every certificate is a valid bound on the same optimum: keep the best.
        self.best_lower_bound, self.previous_objective, self.optimizer = -math.inf, None, None
        self.stopped_by_callback = self.converged = self.out_of_time = False
        # The face dual: per block for the squared loss (the blocks separate), and
        # the binary logistic loss's single block; the recent scores span its family.
        self.use_face_dual, self.score_history = False, []
        self.next_face_iteration, self.face_spacing = 0, 2 * chunk_size


def _initial_state(data, init, rank, max_rank, hinge_sigma, random_state):
    """The start's ``_FactorState``: the warm start's factors (``rho`` rescaled by
    a 1-D search, the hinge dual kept on the same samples) or the spectral start."""
    p, K = data.n_lifted, data.n_outputs
    dtype, device = data.features.dtype, data.features.device
    max_rank = 2 * p if max_rank is None else int(max_rank)
    if rank is None:
        rank = math.ceil(math.sqrt(2.0 * p))
    rank = int(min(max(rank, 4), max_rank, 2 * p))
    usable_init = (
        init is not None
        and init.factors is not None
        and len(init.factors) == K
        and all(F.shape[0] == p for F, _ in init.factors)
    )
    if usable_init:
        # contiguous: torch's L-BFGS flattens its parameters with views.
        weights = [torch.as_tensor(F, dtype=dtype, device=device).contiguous() for F, _ in init.factors]
        signs = [torch.as_tensor(s, dtype=dtype, device=device) for _, s in init.factors]
        dual = None
        if data.loss == "hinge":
            same_samples = init.dual is not None and init.dual.shape[0] == data.target.shape[0]
            same_shape = same_samples and init.dual.shape[1] == (1 if K == 1 else K)
            dual = (
                torch.as_tensor(init.dual, dtype=dtype, device=device)
                if same_shape
                else initial_hinge_dual(data.target)
            )
        base_rho = torch.as_tensor(np.maximum(init.rho, 0.0), dtype=dtype, device=device)
        if float(base_rho.max()) <= 0.0:
            base_rho = torch.ones(K, dtype=dtype, device=device)
    else:
        generator = torch.Generator().manual_seed(int(random_state))
        weights, signs, dual = _spectral_start(data, rank, generator)
        base_rho = torch.ones(K, dtype=dtype, device=device)
    rho = _search_rho(data, weights, signs, base_rho)
    rho_max = data.rho_max()
    scale = rho_max if math.isfinite(rho_max) else 1.0
    state = _FactorState(data, weights, signs, torch.log(torch.clamp(rho, min=1e-12 * scale)), dual)
    state._sigma = float(hinge_sigma)
    state.log_rho_cap = math.log(2.0 * rho_max) if math.isfinite(rho_max) else 50.0
    state.rank_start, state.max_rank = rank, max_rank
    state.tiny_rho, state.off_rho = 1e-12 * scale, 1e-6 * scale
    return state


def _certify_chunk(state, run, align_iterations):
    """Certify the current point (the eigenvalue certificate, and the face dual
    once a chunk improved the objective by at most tol); records the chunk."""
    data, K, tol = state.data, state.data.n_outputs, run.tol
    with torch.no_grad():
        factors = state.factors()
        rho_now = torch.exp(state.log_rho)
        scores = state.scores(factors, rho_now)
        objective = float(data.objective(scores, rho_now.sum()))
        run.score_history = (run.score_history + [scores.detach().cpu().numpy().astype(np.float64)[:, 0]])[
            -_SCORE_STEPS - 1:
        ]
        if data.loss == "hinge":
            _, new_dual = hinge_prox(scores, data.target, state.dual, state._sigma)
            lam = hinge_dual_point(new_dual, data.target)
        else:
            new_dual = None
            lam = dual_point(scores, data.target, data.loss)
        # Align from the previous certificate's directions when the rank is
        # unchanged: the alignment then converges across chunks.
        aligned = run.aligned or [None] * K
        starts = [a if a is not None and a.shape == F.shape else None for a, F in zip(aligned, factors)]
        certificate = dual_bound(
            data, lam, list(zip(factors, state.signs)), align_starts=starts,
            growth_columns=max(2, state.rank_start // 4),
            feasible_value=objective, align_iterations=align_iterations,
        )
    run.aligned = certificate.aligned
    lower_bound = run.best_lower_bound = max(certificate.lower_bound, run.best_lower_bound)
    gap = relative_gap(objective, lower_bound)
    progress = float("inf") if run.previous_objective is None else run.previous_objective - objective
    if (
        run.use_face_dual and gap > tol and run.n_iter >= max(run.next_face_iteration, 2 * run.chunk_size)
        and 0.0 <= progress <= tol * abs(objective)
    ):
        # The last chunks' score steps: the logistic face dual's family
        # where the face is too large (see face_dual._FACE_WORK).
        steps = None
        if K == 1 and len(run.score_history) >= 3:
            recent = run.score_history
            recent = recent[-_FEW_SCORE_STEPS - 1:] if data.n_lifted > _FEW_STEPS_ABOVE else recent
            steps = np.stack([recent[-1]] + [b - a for a, b in zip(recent[:-1], recent[1:])], axis=1)
        face_bound = _face_dual_bound(data, factors, state.signs, scores, rho_now, tol, steps)
        lower_bound = run.best_lower_bound = max(face_bound, run.best_lower_bound)
        gap = relative_gap(objective, lower_bound)
        run.next_face_iteration = run.n_iter + run.face_spacing
        run.face_spacing *= 2
    record_progress(run.history, run.start_time, run.verbose, run.n_iter, objective, lower_bound,
                    gap, rank=state.rank)
    return _ChunkPoint(objective, lower_bound, gap, progress, lam, new_dual, rho_now, certificate)


# A chunk's certified point: what the next chunk's preparation and the solution read.
_ChunkPoint = collections.namedtuple(
    "_ChunkPoint", "objective lower_bound gap progress lam new_dual rho certificate"
)


def _prepare_chunk(state, run, point):
    """Decide what the next chunk starts from: woken blocks, grown rank, the hinge
    dual's update, renormalized rows; a new L-BFGS where any of them changed."""
    rebuild = run.optimizer is None
    if _wake_blocks(state, point.lam, [float(r) for r in point.rho], state.off_rho):
        rebuild = True
    stalled = point.progress < 0.1 * (point.objective - point.lower_bound)
    run.stalled_chunks = run.stalled_chunks + 1 if stalled else 0
    if (
        stalled
        and max(point.certificate.eigenvalue_shifts) > 0.0
        and _grow(state, point.certificate, state.tiny_rho, state.max_rank)
    ):
        rebuild = True
        run.stalled_chunks = 0
    if state.data.loss == "hinge":
        state.dual = point.new_dual
        rebuild = True
    with torch.no_grad():
        largest_row = max(float(torch.linalg.vector_norm(w, dim=1).max()) for w in state.weights)
    if largest_row > _RENORMALIZE_ABOVE:
        state.renormalize()
        rebuild = True
    if rebuild:
        run.optimizer = _make_optimizer(state, run.chunk_size, run.history_size)
    run.previous_objective = point.objective


def _run_chunk(state, run):
    """One chunk of L-BFGS iterations; True when the solve should stop (no
    iteration done after several stalled chunks)."""
    optimizer = run.optimizer
    budget = min(run.chunk_size, run.max_iter - run.n_iter)
    optimizer.param_groups[0]["max_iter"] = budget
    optimizer.param_groups[0]["max_eval"] = int(budget * 1.5) + 5

    def closure():
        optimizer.zero_grad()
        value = state.smooth_objective()
        value.backward()
        return value

    before = optimizer.state[optimizer._params[0]].get("n_iter", 0)
    optimizer.step(closure)
    done = optimizer.state[optimizer._params[0]].get("n_iter", 0) - before
    run.n_iter += max(done, 1)
    return done == 0 and run.stalled_chunks > 3


def _factored_solution(state, run, point):
    """The ``SDPSolution`` of the last point, or of the zero network where that
    is at least as good (it is feasible)."""
    data = state.data
    objective, lower_bound, converged = point.objective, point.lower_bound, run.converged
    zero_value = data.zero_network_value()
    with torch.no_grad():
        factors = state.factors()
        rho_now = torch.exp(state.log_rho)
        scores = state.scores(factors, rho_now)
    if zero_value <= objective:
        rho_now = torch.zeros_like(rho_now)
        scores = torch.zeros_like(scores)
        objective = zero_value
        converged = converged or relative_gap(objective, lower_bound) <= run.tol

    factors_np = [F.detach().cpu().numpy().astype(np.float64) for F in factors]
    signs_np = [s.detach().cpu().numpy().astype(np.float64) for s in state.signs]
    status = "optimal" if converged else (
        "stopped" if run.stopped_by_callback else ("time_limit" if run.out_of_time else "max_iter")
    )
    return factor_solution(
        list(zip(factors_np, signs_np)), rho_now.detach().cpu().numpy().astype(np.float64),
        value=float(objective), scores=scores.detach().cpu().numpy().astype(np.float64),
        status=status, solver="native", solve_time=time.perf_counter() - run.start_time,
        lower_bound=float(lower_bound), n_iter=int(run.n_iter), converged=bool(converged),
        dual=None if point.new_dual is None else point.new_dual.detach().cpu().numpy(),
        history=run.history, stopped=run.stopped_by_callback,
    )


# The face dual (as costly as a few hundred iterations, and erring by about the
# primal error) is tried once the predicted primal error is below this fraction of tol.
_FACE_WHEN = 0.2


# The face dual stops once its bound certifies this fraction of tol (the rest
# is the margin of verified_bound(), which moves the bound by round-off here).
_FACE_TARGET = 0.9


def _remaining_decrease(progress, last_progress):
    """The objective's further decrease predicted from two chunks' (``last_progress``, ``progress``):
    L-BFGS's tail is linear, so ``progress r / (1 - r)`` with ``r = progress / last_progress <= 0.95``;
    no decrease predicts none, an unknown ratio infinity."""
    if not math.isfinite(progress):
        return math.inf
    if progress <= 0.0:
        return 0.0
    if not math.isfinite(last_progress) or last_progress <= 0.0:
        return math.inf
    ratio = min(progress / last_progress, 0.95)
    return progress * ratio / (1.0 - ratio)


# The block solver's starting columns per sign, a fraction of p: the optima's
# ranks are about p / 3 per sign; a start below one is grown (_GROW_AFTER_FACE_GAP).
_START_RANK_FRACTION = 0.35

# A face dual leaving the gap above this many times tol grows the rank at once:
# the face dual's bound is the best for the face, so such a gap is the face's.
_GROW_AFTER_FACE_GAP = 100.0

# Two face duals in a row at one rank above this many times tol grow it (one
# alone may be the point's inaccuracy).
_GROW_AFTER_REPEATED_FACE_GAP = 10.0


# Columns a growth adds per sign, at most (each growth waits for a face dual at the new rank).
_GROWTH_PER_SIGN = 8


def start_columns_per_sign(p):
    """The numpy block solver's starting columns per sign (what its memory is estimated at)."""
    return math.ceil(_START_RANK_FRACTION * p) + 1


def solve_squared_block(data, **options):
    """One squared-loss block by Burer-Monteiro in numpy with the numpy L-BFGS.

    The same problem, factorisation and certificates as
    :func:`solve_factored`, for the blocks that
    ``relaxation._solve_blocks_separately`` solves one at a time (the many-class
    squared loss), without the torch solver's overheads there (autograd, L-BFGS
    memory restarted every chunk, rank grown from ``ceil(sqrt(2 p))`` columns
    while the optima have about ``p / 3`` per sign; design note
    ``sdp-small-and-many-class.md``, sections 1, 2 and 5). Here:

    * the gradient is written out (``f = 2 rho Σ_c s_c (Z F_c)²`` with
      ``F = W / ||W rows||``): two ``n x p x r`` products per evaluation;
    * one L-BFGS run (``minimize_compact_lbfgs``, the L-BFGS driver's numpy
      engine) keeps its memory; every ``chunk_size`` iterations its
      callback certifies the point (``lam = 2 (f - t)``, first-order ``mu``,
      ``verified_bound()``) and, once the primal error predicted from the
      last two chunks' decreases (``_remaining_decrease()``) is below
      ``_FACE_WHEN * tol`` (relative), the face-restricted
      dual (:func:`~skquad.convex.face_dual.face_dual_bound`), again each
      time that prediction halves, at doubling spacings;
    * the start has ``ceil(0.35 p) + 1`` columns per sign (the eigenvectors of
      ``M_0 = -2 Σ w t L(x)``, perturbed), and ``rho`` is the exact
      minimiser for those directions (the objective is quadratic in ``rho``);
      a run that stops short of ``tol``, a face dual that leaves the gap
      above ``_GROW_AFTER_FACE_GAP`` tol, or two in a row above
      ``_GROW_AFTER_REPEATED_FACE_GAP`` tol, grows the rank by up to
      ``_GROWTH_PER_SIGN`` negative eigenvectors of ``Diag mu ± 2 M`` per
      sign and continues.

    A solve stopped by ``max_iter`` certifies its last point with the face
    dual too (the best bound for the point it returns; with the gap in the
    caller's ``ConvergenceWarning``). Every reported bound is a bound
    whatever the iterate (both certificates
    re-check their LMIs exactly); the returned bound is the best one met.
    Takes the options of :func:`solve_factored` (``hinge_sigma`` and
    ``align_iterations`` do not apply); ``rank`` is the number of columns in
    all, ``max_rank`` caps it. ``lower_bound``: a bound already certified
    for this block (the squared dual's, when this solve continues it), the
    start of the best one met.
    """
    n, p = data.features.shape
    rank = options.get("rank") or 2 * start_columns_per_sign(p)
    with threads_for(n * p * rank, data.features.device):
        return _solve_squared_block(data, **options)


def _solve_squared_block(
    data, *, tol=1e-4, max_iter=3000, rank=None, max_rank=None, init=None, callback=None,
    verbose=0, chunk_size=50, history_size=30, time_limit=None, random_state=0,
    hinge_sigma=None, align_iterations=None, lower_bound=None,
):
    run = _SquaredBlockRun(data, tol, max_iter, max_rank, callback, verbose, chunk_size,
                           time_limit, lower_bound)
    x = run.start(init, rank, random_state)
    gap, M, mu = run.certify(x)
    while gap > tol and not (run.stopped or run.out_of_time) and run.iteration < max_iter:
        signs = run.signs
        # The L-BFGS driver's numpy engine: scipy's L-BFGS-B cost as much in
        # its own bookkeeping as the objective here (see _lbfgs_compact).
        result = minimize_compact_lbfgs(
            lambda x, signs=signs: run.objective_and_gradient(x, signs), x,
            max_iter=max_iter - run.iteration, max_fun=10 * max_iter, tol=0.0, ftol=0.0,
            maxls=30, maxcor=history_size, on_iteration=run.every_iteration,
        )
        x = result.x
        certified_here = run.history[-1]["iteration"] == run.iteration
        if certified_here:
            # The callback certified this point: it met tol, was told to stop,
            # or a far-short face dual asked for growth (its M and mu serve).
            gap, M, mu = run.last_certificate
            if gap <= tol or run.stopped or run.out_of_time:
                break
        if run.iteration >= max_iter:
            # The budget is spent: the best certificate for the point reached.
            gap, M, mu = run.certify(x, final=True)
            break
        if not certified_here:
            gap, M, mu = run.certify(x)
            if gap <= tol or run.stopped or run.out_of_time:
                break
        # L-BFGS ended on its own (line search or stationarity) or a face
        # dual far short of tol stopped it: grow by the directions the
        # eigenvalue test finds negative.
        grown = run.grow(x, M, mu)
        if grown is None:
            break
        x = grown
    return run.solution(x)


class _SquaredBlockRun:
    """One squared-loss block's numpy Burer-Monteiro solve: its data, the
    objective and gradient in ``x = (W, log rho)``, the chunk certificates
    (``certify()``) and the rank growth (``solve_squared_block()``)."""

    def __init__(self, data, tol, max_iter, max_rank, callback, verbose, chunk_size, time_limit,
                 lower_bound):
        self.data, self.tol, self.max_iter, self.callback = data, tol, max_iter, callback
        self.verbose, self.chunk_size, self.time_limit = verbose, chunk_size, time_limit
        self.start_time = time.perf_counter()
        self.Z = data.features.detach().cpu().numpy().astype(np.float64)
        self.weight = data.weight.detach().cpu().numpy().astype(np.float64)
        self.target = data.target.detach().cpu().numpy()[:, 0].astype(np.float64)
        self.p = self.Z.shape[1]
        self.penalty = data.penalty_per_rho
        self.max_rank = 2 * self.p if max_rank is None else int(max_rank)
        self.rho_cap = math.log(2.0 * data.rho_max()) if math.isfinite(data.rho_max()) else 50.0
        self.iteration, self.history = 0, []
        self.best = -math.inf if lower_bound is None else float(lower_bound)
        self.previous, self.last_progress = None, math.inf
        self.face_below, self.next_face, self.face_spacing = math.inf, 0, 2 * chunk_size
        self.stopped = self.out_of_time = self.grow_now = self.stalled = False
        self.far_faces = 0

    def start(self, init, rank, random_state):
        """``x`` at the warm start's factors, or at the eigenvectors of ``M_0 = -2
        Σ w t L(x)`` (perturbed), with the exact ``rho`` for those directions."""
        Z, p, weight, target = self.Z, self.p, self.weight, self.target
        usable_init = (
            init is not None and init.factors is not None
            and len(init.factors) == 1 and init.factors[0][0].shape[0] == p
        )
        if usable_init:
            F = np.array(init.factors[0][0], dtype=np.float64)
            signs = np.array(init.factors[0][1], dtype=np.float64)
        else:
            per_sign = start_columns_per_sign(p) if rank is None else max(1, int(rank) // 2)
            per_sign = max(1, min(per_sign, p, self.max_rank // 2 or 1))
            M0 = Z.T @ (Z * (weight * -2.0 * target)[:, None])
            _, vectors = np.linalg.eigh(0.5 * (M0 + M0.T))
            generator = np.random.default_rng(int(random_state))
            F = np.hstack([vectors[:, :per_sign], vectors[:, p - per_sign:]])
            F = F + 0.3 / math.sqrt(p) * generator.standard_normal(F.shape)
            signs = np.r_[np.ones(per_sign), -np.ones(per_sign)]
        F = F / np.linalg.norm(F, axis=1, keepdims=True)
        G = Z @ F
        unit = 2.0 * (G * G) @ signs
        rho = min(max(squared_loss_rho(unit, target, weight, self.penalty), 1e-8), math.exp(self.rho_cap))
        self.signs = signs
        return np.r_[F.ravel(), math.log(rho)]

    def point(self, x, signs):
        W = x[:-1].reshape(self.p, signs.shape[0])
        norms = np.linalg.norm(W, axis=1, keepdims=True)
        return W, norms, W / norms, math.exp(min(x[-1], self.rho_cap))

    def scores(self, x, signs):
        _, norms, F, rho = self.point(x, signs)
        G = self.Z @ F
        return norms, F, rho, G, 2.0 * rho * ((G * G) @ signs)

    def objective_and_gradient(self, x, signs):
        Z, weight, target = self.Z, self.weight, self.target
        norms, F, rho, G, f = self.scores(x, signs)
        weighted_residual = weight * (f - target)
        value = float(weighted_residual @ (f - target)) + self.penalty * rho
        # (the signs applied to the p x r product, not to the n x r one)
        grad_F = (Z.T @ (((8.0 * rho) * weighted_residual)[:, None] * G)) * signs
        grad_W = (grad_F - (grad_F * F).sum(axis=1, keepdims=True) * F) / norms
        gradient = np.empty(x.size)
        gradient[:-1] = grad_W.ravel()
        gradient[-1] = 2.0 * float(weighted_residual @ f) + self.penalty * rho
        return value, gradient

    def certify(self, x, final=False):
        """The point's objective, its certificate and the chunk's bookkeeping
        (``final``: the last point of a solve stopped by ``max_iter``, which
        gets the face dual whatever its progress). Returns ``(gap, M, mu)``."""
        Z, weight, target, signs, tol = self.Z, self.weight, self.target, self.signs, self.tol
        _, F, rho, _, f = self.scores(x, signs)
        objective = float(weight @ (f - target) ** 2) + self.penalty * rho
        lam = 2.0 * (f - target)
        M = Z.T @ (Z * (weight * lam)[:, None])
        M = 0.5 * (M + M.T)
        mu = -2.0 * (M * ((F * signs) @ F.T)).sum(axis=1)
        self.best = max(self.best, verified_bound(self.data, lam, mu))
        progress = math.inf if self.previous is None else self.previous - objective
        remaining = _remaining_decrease(progress, self.last_progress)
        if objective - self.best > tol * abs(objective) and (
            final or (
                remaining <= min(_FACE_WHEN * tol * abs(objective), self.face_below)
                and self.iteration >= self.next_face
            )
        ):
            self._face_certify(F, f, objective, remaining, final)
        self.previous, self.last_progress = objective, progress
        gap = relative_gap(objective, self.best)
        info = record_progress(self.history, self.start_time, self.verbose, self.iteration,
                               objective, self.best, gap, rank=signs.shape[0])
        if gap > tol and self.callback is not None and self.callback(dict(info)):
            self.stopped = True
        if gap > tol and self.time_limit is not None and info["elapsed"] >= self.time_limit:
            self.out_of_time = True
        self.last_certificate = (gap, M, mu)
        return gap, M, mu

    def _face_certify(self, F, f, objective, remaining, final):
        """The face dual at the point; short of tol, the face (or the point) was
        not accurate enough: try again once the predicted primal error has
        halved, and no sooner than a doubling number of iterations (a face that
        misses directions needs the factors to move)."""
        tol, signs = self.tol, self.signs
        face = face_dual_bound(
            self.data, F, signs, f, target_value=objective - _FACE_TARGET * tol * abs(objective)
        )
        self.best = max(self.best, face)
        self.face_below = 0.5 * remaining
        self.next_face = self.iteration + self.face_spacing
        self.face_spacing *= 2
        # The face's exact dual far below a point whose descent has run out:
        # the factors' face misses the optimum's directions, so grow now
        # rather than when L-BFGS stops on its own (at tol=0 it may never).
        # A second face dual in a row that leaves it above
        # _GROW_AFTER_REPEATED_FACE_GAP tol: the face, not the point.
        face_gap = relative_gap(objective, self.best)
        threshold = _GROW_AFTER_REPEATED_FACE_GAP if self.far_faces else _GROW_AFTER_FACE_GAP
        # (At max_rank there is nothing to add: L-BFGS goes on.)
        if not final and face_gap > threshold * tol and signs.shape[0] < self.max_rank:
            self.grow_now = True
        far = face_gap > _GROW_AFTER_REPEATED_FACE_GAP * tol
        self.far_faces = self.far_faces + 1 if far else 0

    def every_iteration(self, _, __, x):
        """Count the iteration; certify every chunk; True stops the L-BFGS run."""
        self.iteration += 1
        if self.iteration % self.chunk_size == 0:
            gap, _, _ = self.certify(x)
            return gap <= self.tol or self.stopped or self.out_of_time or self.grow_now
        return False

    def grow(self, x, M, mu):
        """``x`` with up to ``_GROWTH_PER_SIGN`` negative eigenvectors of ``Diag mu
        ± 2 M`` per sign as new columns; None (stalled) where there is none to add."""
        self.grow_now, self.far_faces = False, 0
        _, _, F, rho = self.point(x, self.signs)
        new_columns, new_signs = [], []
        for sign in (1.0, -1.0):
            values, vectors = np.linalg.eigh(np.diag(mu) + sign * 2.0 * M)
            negative = vectors[:, values < -1e-9 * max(abs(values).max(), 1e-300)][:, :_GROWTH_PER_SIGN]
            new_columns.append(negative)
            new_signs.append(np.full(negative.shape[1], sign))
        added = np.hstack(new_columns)[:, : max(0, self.max_rank - self.signs.shape[0])]
        if added.shape[1] == 0:
            # Short of tol with nothing left to add (max_rank reached, or no
            # negative direction at round-off): more iterations cannot help.
            self.stalled = True
            return None
        F = np.hstack([F, 0.15 * math.sqrt(self.p) * added])
        self.signs = np.r_[self.signs, np.concatenate(new_signs)[: added.shape[1]]]
        self.iteration += 1
        return np.r_[F.ravel(), math.log(rho)]

    def solution(self, x):
        """The ``SDPSolution`` of ``x``, or of the zero network where that is at
        least as good (it is feasible)."""
        signs, weight, target = self.signs, self.weight, self.target
        _, F, rho, _, scores = self.scores(x, signs)
        objective = float(weight @ (scores - target) ** 2) + self.penalty * rho
        zero_value = self.data.zero_network_value()
        if zero_value <= objective:
            rho, scores, objective = 0.0, np.zeros_like(scores), zero_value
        gap = relative_gap(objective, self.best)
        converged = gap <= self.tol
        status = "optimal" if converged else (
            "stopped" if self.stopped else ("time_limit" if self.out_of_time else (
                "stalled" if self.stalled else "max_iter"))
        )
        return factor_solution(
            [(F, signs.astype(np.float64))], np.array([rho]), value=objective,
            scores=scores[:, None], status=status, solver="native_numpy",
            solve_time=time.perf_counter() - self.start_time, lower_bound=float(self.best),
            n_iter=int(self.iteration), converged=bool(converged), history=self.history,
            stopped=self.stopped,
        )
