"""The face-restricted dual (squared and binary logistic losses): a certificate as tight as the primal.

For one block of the squared-loss SDP (design note
``shared/design/sdp-small-and-many-class.md``, section 2)::

    v* = min  Σ_i w_i (f_i - t_i)² + 2 beta p rho,   f_i = 2 ⟨L_i, P - N⟩,
         over P, N ⪰ 0,  diag(P + N) = rho 1,  rho >= 0.

**Lemma (weak duality).** For every ``lam`` in R^n and ``mu`` in R^p with
``Diag(mu) ± 2 M(lam) ⪰ 0`` (``M(lam) = Σ_i w_i lam_i L_i``) and
``1ᵀmu <= 2 beta p``::

    v* >= D(lam) = -Σ_i w_i (lam_i t_i + lam_i² / 4).

*Proof.* ``(f - t)² - [lam f - (lam t + lam² / 4)] = (f - t - lam / 2)² >= 0``,
so the loss is at least ``Σ w lam f - Σ w (lam t + lam²/4) = 2 ⟨M, P - N⟩ +
D(lam)``. With ``Diag mu + 2M ⪰ 0`` and ``P ⪰ 0``: ``2⟨M, P⟩ >= -⟨Diag mu, P⟩``;
with ``Diag mu - 2M ⪰ 0`` and ``N ⪰ 0``: ``-2⟨M, N⟩ >= -⟨Diag mu, N⟩``. Adding,
``2⟨M, P - N⟩ >= -⟨Diag mu, P + N⟩ = -rho 1ᵀmu``. So the objective is at least
``D(lam) + rho (2 beta p - 1ᵀmu) >= D(lam)`` because ``rho >= 0``. ∎

If only ``1ᵀmu = T > 2 beta p``, the pair ``(theta lam, theta mu)`` with
``theta <= 2 beta p / T`` satisfies the lemma (the LMIs are cones), and
``D(theta lam) = -theta a - theta² b`` (``a = Σ w lam t``, ``b = Σ w lam²/4``)
is a concave quadratic: its maximiser on ``[0, 2 beta p / T]`` is in closed
form (``verified_bound()``). Nothing here depends on how ``lam`` and ``mu``
were found: ``verified_bound()`` re-checks the LMIs with an eigenvalue
decomposition of ``Diag mu ± 2 M(lam)`` formed from ``lam`` itself (the
smallest eigenvalue, less a round-off guard, shifts ``mu``), so an inexact
solve below costs tightness, never validity.

**Which ``lam``.** ``lam = 2 (f - t)`` at the solver's scores is exact at the
optimum, but its error is that of ``f``: ``||f - f*||_W <= (v - v*)^{1/2}``, so
the bound lags the primal by a square root. The *face-restricted dual*
maximises ``D`` over ``lam`` in the span of ``t`` and the scores of the
current point's face,
``B = span{t} + {(⟨L_i, U X Uᵀ - V Y Vᵀ⟩)_i : X, Y symmetric}``, where ``U``,
``V`` span the ranges of the current ``P`` and ``N``, with ``mu`` free. It is
the Lagrangian dual of the relaxed problem with the scores projected onto
``B``; when ``range P* ⊆ span U`` and ``range N* ⊆ span V``, ``2(f* - t)``
lies in ``B`` and the restricted dual attains ``v*``. An error ``delta`` in
the face changes the restricted value by ``O(delta²)``, and for a
Burer-Monteiro iterate ``delta = O((v - v*)^{1/2})``: the bound then closes
linearly in the primal error.

The restricted dual is a small SDP in ``q + p`` variables (``q = 1 +
r_U (r_U + 1) / 2 + r_V (r_V + 1) / 2``) with two ``p x p`` LMIs, solved here
by a primal log-barrier method with Newton steps whose Hessian is formed
through the Cholesky factors of the two LMIs (``O(q p³ + q² p²)`` per step),
stopped as soon as the bound it certifies is within the requested gap.

**The binary logistic loss** (``_logistic_face_dual_bound()``): the same
lemma with Fenchel-Young, ``l(f) >= lam f - l*(lam)`` for ``-t lam`` in
[0, 1] (``l*`` the binary entropy), in place of the squared identity; the
family is ``l'(f)`` plus ``l''(f)`` times the face's scores (or, where the
face is too large to form, times the solver's last score steps), and
``verified_bound()`` clips ``lam`` into the domain and keeps ``theta <= 1``.
"""

import math

import numpy as np
import scipy.linalg
import scipy.linalg.blas
import torch

from .._foundation._pair_products import write_pair_products
from .._foundation._runtime import thread_count
from .._foundation._threads import limit_threads
from .barrier import backtrack, centred_and_done, lmi_log_barrier, newton_direction
from .certificate import golden_minimum
from .losses import conjugate, project_dual

__all__ = ["LOGISTIC_FACE_MAX_LIFTED", "face_basis", "face_dual_bound", "verified_bound"]

# Eigenvalues of P (or N) below this fraction of the largest are not part of
# its face: they are the iterate's noise, and every extra direction adds
# O(r) variables to the restricted dual.
FACE_EIGENVALUE = 1e-3

# The restricted dual's most lam variables: its Newton steps cost O(q p³ + q² p²);
# beyond it the weakest face directions are dropped (a smaller face only loosens the bound).
MAX_FACE_VARIABLES = 500
# Elements of one q x p x p array of the logistic face dual's Newton step
# (a few such arrays live at once): 2.5e7 float64 elements = 200 MB.
_FACE_MEMORY = 25_000_000
# Multiply-adds of forming the face's q matrices (q n p²) above which the
# logistic face dual uses the caller's score directions instead (when given).
_FACE_WORK = 3e9
# Largest p for which the factor solver tries the logistic face dual: each
# Newton step factors two p x p LMIs and forms about 3 q p x p products, O(q p³).
LOGISTIC_FACE_MAX_LIFTED = 1000
# The barrier weight's growth per centring, and the relative eigenvalue of
# the face scores' Gram matrix below which a direction is dependent.
_TAU_FACTOR = 20.0
# The Newton decrement below which a point counts as centred: loose, since
# every iterate's bound is checked and validity rests on verified_bound() alone.
_CENTRED = 10.0
_KEEP = 1e-12


def face_basis(factor, signs, threshold=FACE_EIGENVALUE, max_size=None):
    """Orthonormal bases ``U`` and ``V`` of the ranges of ``A Aᵀ`` and ``B Bᵀ``.

    ``F = [A, B]`` split by the column signs; eigenvalues below ``threshold``
    times the largest of each are dropped, and, when ``max_size`` is given,
    the weakest directions of either until ``r_U (r_U + 1) / 2 + r_V (r_V +
    1) / 2 <= max_size``.
    """
    bases = []
    for sign in (1.0, -1.0):
        columns = factor[:, signs == sign]
        if columns.shape[1] == 0:
            bases.append((np.zeros((factor.shape[0], 0)), np.zeros(0)))
            continue
        left, values, _ = np.linalg.svd(columns, full_matrices=False)
        keep = values**2 > threshold * max(float(values[0]) ** 2, 1e-300)
        bases.append((left[:, keep], values[keep] ** 2))
    (U, u_values), (V, v_values) = bases
    if max_size is not None:
        while U.shape[1] * (U.shape[1] + 1) // 2 + V.shape[1] * (V.shape[1] + 1) // 2 > max_size:
            # Drop the direction with the smallest share of its own matrix.
            u_share = u_values[-1] / u_values[0] if U.shape[1] else np.inf
            v_share = v_values[-1] / v_values[0] if V.shape[1] else np.inf
            if u_share <= v_share:
                U, u_values = U[:, :-1], u_values[:-1]
            else:
                V, v_values = V[:, :-1], v_values[:-1]
    return U, V


def pair_scores(data, basis):
    """``(⟨L_i, sym(u_a u_bᵀ)⟩)_i`` for all ``a <= b``: shape (n_samples, r (r + 1) / 2)."""
    Z = data.features.detach().cpu().numpy().astype(np.float64)
    width = Z.shape[1]
    rows, cols = np.triu_indices(basis.shape[1])
    g = Z @ basis[:width]
    values = g[:, rows] * g[:, cols]
    if data.polynomial is not None:
        a, b, c = data.polynomial
        h = basis[width]
        values = (
            a * values
            + 0.5 * b * (g[:, rows] * h[cols] + h[rows] * g[:, cols])
            + c * (h[rows] * h[cols])[None, :]
        )
    return values


def _weighted_matrices(data, coefficients, chunk=512):
    """``Σ_i C_ia L_i`` for every column ``a`` of ``C``: shape (q, p, p), float64."""
    Z = data.features.detach().cpu().numpy().astype(np.float64)
    n, width = Z.shape
    q = coefficients.shape[1]
    if q <= width:
        # Few columns (the logistic face dual's score steps): one product
        # Zᵀ diag(c) Z each, without the n x w² outer products.
        gram = np.stack([Z.T @ (Z * coefficients[:, a : a + 1]) for a in range(q)])
    else:
        # The products z_j z_k with j <= k only (each sum is symmetric in j, k: half the
        # multiply-adds of the full outer products), mirrored into both triangles at the end.
        rows, cols = np.triu_indices(width)
        triangle = np.zeros((q, rows.size))
        outer = np.empty((min(chunk, n), rows.size))
        for start in range(0, n, chunk):
            block = Z[start : start + chunk]
            pairs = write_pair_products(block.T, outer[: block.shape[0]].T).T
            triangle += coefficients[start : start + chunk].T @ pairs
        gram = np.empty((q, width, width))
        gram[:, rows, cols] = triangle
        gram[:, cols, rows] = triangle
    if data.polynomial is None:
        return gram
    a, b, c = data.polynomial
    column = coefficients.T @ Z  # (q, width)
    out = np.empty((q, width + 1, width + 1))
    out[:, :width, :width] = a * gram
    out[:, :width, width] = out[:, width, :width] = 0.5 * b * column
    out[:, width, width] = c * coefficients.sum(axis=0)
    return out


def verified_bound(data, lam, mu):
    """``max_theta D(theta lam)`` over the ``theta`` the lemma allows, checked exactly.

    ``lam`` (n,) and ``mu`` (p,) are any vectors (one block, ``data.target`` of
    one column; squared, binary logistic or binary hinge loss). For the
    logistic and hinge losses ``lam`` is first clipped into the conjugate's
    domain (``-t lam`` in [0, 1]) and ``theta`` is at most 1 (``theta lam``
    stays there). ``M(lam)`` is formed from ``lam``; ``mu`` is raised by the
    smallest eigenvalue of ``Diag mu ± 2 M`` less a round-off guard, so the
    returned value is a lower bound whatever ``lam`` and ``mu``.
    """
    dtype, device = data.features.dtype, data.features.device
    lam_t = torch.as_tensor(np.asarray(lam, dtype=np.float64), dtype=dtype, device=device)
    if data.loss != "squared":
        lam_t = project_dual(lam_t[:, None], data.target, data.loss)[:, 0]
    mu_t = torch.as_tensor(np.asarray(mu, dtype=np.float64), dtype=dtype, device=device)
    M = data.weighted_matrix(data.weight * lam_t)
    M = 0.5 * (M + M.T)
    eps = torch.finfo(dtype).eps
    p = M.shape[0]
    # Threads by the runtime rule for the eigensolver's own O(p³) work, not the
    # caller's (a barrier's (n + p)³ steps): small ones stall on many threads.
    with limit_threads(thread_count("auto", device, p**3)):
        plus = torch.linalg.eigvalsh(torch.diag(mu_t) + 2.0 * M)
        minus = torch.linalg.eigvalsh(torch.diag(mu_t) - 2.0 * M)
    scale = max(float(plus.abs().max()), float(minus.abs().max()), 1e-300)
    # eigvalsh's backward error: a few eps times the norm, per eigenvalue.
    shift = max(0.0, -float(plus[0]), -float(minus[0])) + 64 * eps * p * scale
    trace = float(mu_t.sum()) + p * shift
    penalty = data.penalty_per_rho
    theta_max = math.inf if trace <= 0 else penalty / trace
    if data.loss != "squared":
        # D(theta lam) = -Σ w l*(theta lam) is concave in theta on [0, 1].
        high = min(1.0, theta_max)

        def value(theta):
            return -float(data.weight @ conjugate(theta * lam_t[:, None], data.target, data.loss))

        return value(golden_minimum(lambda theta: -value(theta), 0.0, high, iterations=60))
    target = data.target[:, 0]
    a = float(data.weight @ (lam_t * target))
    b = float(data.weight @ (lam_t * lam_t)) / 4.0
    if b > 0:
        theta = min(max(-a / (2.0 * b), 0.0), theta_max)
    else:
        theta = 0.0 if a >= 0 else theta_max
    if not math.isfinite(theta):
        return 0.0
    return -theta * a - theta * theta * b


def _lmi_terms(S, stacked, svec_rows, svec_cols, svec_scale):
    """Gradient and Hessian pieces of ``-logdet S`` for ``S = Diag mu + Σ y_a A_a``.

    With ``S = C Cᵀ``: ``tr(S⁻¹ A_a S⁻¹ A_b) = ⟨K_a, K_b⟩`` for ``K_a = C⁻¹ A_a C⁻ᵀ``
    (two triangular products), ``tr(S⁻¹ A_a S⁻¹ E_jj) = (S⁻¹ A_a S⁻¹)_jj``
    and ``tr(S⁻¹ E_jj S⁻¹ E_kk) = (S⁻¹)_jk²``. ``stacked``: the ``A_a`` side by
    side, shape (p, q, p) (``stacked[:, a] = A_a``), the layout in which both
    products are single ones without a copy in between.
    """
    p, q, _ = stacked.shape
    chol = np.linalg.cholesky(S)
    inv_chol = scipy.linalg.solve_triangular(chol, np.eye(p), lower=True)
    S_inv = inv_chol.T @ inv_chol
    # Both products by the triangular C⁻¹ (TRMM: half a general product's multiply-adds),
    # each on the transpose of a C-ordered array, which BLAS reads as Fortran-ordered.
    trmm = scipy.linalg.blas.get_blas_funcs("trmm", (stacked,))
    right = trmm(1.0, inv_chol, stacked.reshape(p * q, p).T, lower=1).T  # (A_a C⁻ᵀ)[i, k] at [i, a, k]
    unfolded = trmm(1.0, inv_chol, right.reshape(p, q * p).T, side=1, lower=1, trans_a=1, overwrite_b=1).T
    K = unfolded.reshape(p, q, p).transpose(1, 0, 2)
    K_svec = K[:, svec_rows, svec_cols] * svec_scale
    grad_y = -np.trace(K, axis1=1, axis2=2)
    hess_yy = K_svec @ K_svec.T
    if q < p:
        # (S⁻¹ A_a S⁻¹)_jj = Σ_k (C⁻ᵀ K_a)_jk (C⁻ᵀ)_jk: a triangular product of q p³ / 2,
        # without the p³ / 2 array of the form below (32 MB at p = 201).
        left = trmm(1.0, inv_chol, unfolded.T, side=1, lower=1).T.reshape(p, q, p)  # (C⁻ᵀ K_a)[j, a, k]
        hess_ymu = np.einsum("jak,jk->aj", left, inv_chol.T)
    else:
        # (S⁻¹ A_a S⁻¹)_jj = ⟨K_a, c_j c_jᵀ⟩ for the columns c_j of C⁻¹: the
        # svec inner products with K_svec, q p³ / 2 where ⟨A_a, S⁻¹_j S⁻¹_jᵀ⟩ is q p³.
        columns = inv_chol[svec_rows] * inv_chol[svec_cols] * svec_scale[:, None]
        hess_ymu = K_svec @ columns
    return grad_y, -np.diag(S_inv), hess_yy, hess_ymu, S_inv**2


def _interior_start(y0, mats, factor, signs, penalty):
    """``mu0`` and ``theta`` that put ``(theta y0, theta mu0)`` strictly inside the constraints.

    ``mu0`` comes from the first-order conditions at the factors, raised into
    the LMIs' interior; ``theta`` scales the pair into the trace constraint
    (the constraints are cones, so the scaled pair stays strictly feasible).
    """
    p = mats.shape[1]
    M = np.tensordot(y0, mats, axes=1)
    direction = (factor * signs) @ factor.T
    mu0 = -2.0 * (M * direction).sum(axis=1)
    low = min(np.linalg.eigvalsh(np.diag(mu0) + 2 * M)[0], np.linalg.eigvalsh(np.diag(mu0) - 2 * M)[0])
    mu0 = mu0 + max(0.0, -low) + 1e-3 * penalty / p
    theta = min(1.0, 0.99 * penalty / mu0.sum()) if mu0.sum() > 0 else 1.0
    return mu0, theta


def _add_lmi_barrier_terms(grad, hess, Sp, Sm, slack, stacked, svec_rows, svec_cols, svec_scale):
    """Add ``-log det S+ - log det S- - log(slack)`` to a barrier's gradient and Hessian.

    The variables are ``(y, mu)``: the first ``q`` entries of ``grad`` are the
    face coordinates ``y`` (``S±`` depend on them through ``±2 M(y)``), the rest
    the diagonal ``mu``.
    """
    q = grad.size - Sp.shape[0]
    for sign, S in ((1.0, Sp), (-1.0, Sm)):
        g_y, g_mu, h_yy, h_ymu, h_mumu = _lmi_terms(S, stacked, svec_rows, svec_cols, svec_scale)
        grad[:q] += 2.0 * sign * g_y
        grad[q:] += g_mu
        hess[:q, :q] += 4.0 * h_yy
        hess[:q, q:] += 2.0 * sign * h_ymu
        hess[q:, :q] += 2.0 * sign * h_ymu.T
        hess[q:, q:] += h_mumu
    grad[q:] += 1.0 / slack
    hess[q:, q:] += 1.0 / slack**2  # the 1 1ᵀ / slack² of -log(slack)


def _orthonormal_columns(B, metric):
    """A basis of ``B``'s range orthonormal in ``diag(metric)``; dependent columns drop out."""
    gram = B.T @ (B * metric[:, None])
    values, vectors = np.linalg.eigh(0.5 * (gram + gram.T))
    keep = values > _KEEP * values[-1]
    return B @ (vectors[:, keep] / np.sqrt(values[keep]))


def face_dual_bound(data, factor, signs, scores=None, *, target_value=math.inf,
                    max_newton=60, threshold=FACE_EIGENVALUE, directions=None):
    """The face-restricted dual bound of one squared-loss or binary logistic block.

    Parameters
    ----------
    data : LiftedData
        One block: squared or binary logistic loss, ``target`` of one
        column, features given.
    factor, signs : ndarrays
        The current point's unit-row factor ``F`` (p x r) and column signs.
    scores : ndarray of shape (n,), default=None
        The current point's scores ``f``: the barrier then starts from
        ``lam = 2 (f - t)`` (projected on the face, made strictly feasible)
        with a barrier weight matched to that point's gap, instead of from
        ``lam = 0``.
    target_value : float, default=inf
        Stop as soon as an iterate's bound reaches this value, or once the
        barrier shows the face cannot reach it.
    max_newton : int, default=60
        Largest number of Newton steps.
    directions : ndarray of shape (n, k), default=None
        Logistic loss only: score directions (e.g. the solver's last
        steps) spanning the family instead of the face's scores when the
        face is too large to form (``q n p² > _FACE_WORK``; None: the
        scores alone then).

    Returns
    -------
    bound : float
        A lower bound on the block's optimum (checked by
        ``verified_bound()``). Faces larger than ``MAX_FACE_VARIABLES``
        lose their weakest directions first (a looser, still valid bound).
    """
    if data.loss == "logistic":
        scores = np.zeros(data.target.shape[0]) if scores is None else scores
        return _logistic_face_dual_bound(data, factor, signs, scores, target_value, max_newton,
                                         threshold, directions)
    U, V = face_basis(factor, signs, threshold, MAX_FACE_VARIABLES - 1)
    t = data.target.detach().cpu().numpy()[:, 0].astype(np.float64)
    pieces = [t[:, None]] + [pair_scores(data, basis) for basis in (U, V) if basis.shape[1]]
    B = np.hstack(pieces)
    weight = data.weight.detach().cpu().numpy().astype(np.float64)
    # W-orthonormal columns: D(lam) = -(hᵀy + |y|²/4) for lam = basis @ y, a
    # well-conditioned quadratic; dependent columns drop out.
    basis = _orthonormal_columns(B, weight)
    h = basis.T @ (weight * t)
    lmis = _FaceLMIs(data, basis, weight)
    q, p = lmis.q, lmis.p
    n_barrier = 2 * p + 1

    def dual_value(y):
        return -(h @ y + 0.25 * y @ y)

    y = np.zeros(q)
    mu = np.full(p, 0.5 * lmis.penalty / p)
    tau = n_barrier / max(float(h @ h), 1e-300)
    if scores is not None:
        # Warm start: lam = 2 (f - t) on the face, mu from the first-order
        # conditions at the factors, both shrunk into the interior.
        y0 = basis.T @ (weight * 2.0 * (np.asarray(scores, dtype=np.float64) - t))
        mu0, theta = _interior_start(y0, lmis.mats, factor, signs, lmis.penalty)
        start_value = dual_value(theta * y0)
        if theta > 0 and lmis.strictly_feasible(theta * y0, theta * mu0) and start_value > dual_value(y):
            y, mu = theta * y0, theta * mu0
            gap = max(float(target_value) - start_value, 1e-12 * abs(start_value)) if math.isfinite(target_value) else abs(start_value)
            tau = n_barrier / max(gap, 1e-300)
    best_y, best_mu = lmis.ascend(
        (lambda y, tau: tau * (h @ y + 0.25 * y @ y),
         lambda y, tau: (tau * (h + 0.5 * y), 0.5 * tau * np.eye(q)), dual_value),
        y, mu, tau, dual_value(y), target_value, max_newton, n_barrier, _CENTRED,
    )
    return verified_bound(data, basis @ best_y, best_mu)


class _FaceLMIs:
    """``Diag mu ± 2 M(y) ⪰ 0``, ``1ᵀmu <= c`` of a restricted dual over the face
    coordinates ``y`` (``M(basis_a)`` are ``mats``), and the Newton ascent both
    face duals run in them."""

    def __init__(self, data, basis, weight):
        mats = _weighted_matrices(data, basis * weight[:, None])  # M(basis_a)
        self.mats = 0.5 * (mats + np.transpose(mats, (0, 2, 1)))
        self.q, self.p, _ = self.mats.shape
        self.stacked = np.ascontiguousarray(self.mats.transpose(1, 0, 2))  # for _lmi_terms
        self.penalty = data.penalty_per_rho
        rows, cols = np.triu_indices(self.p)
        self.svec = (rows, cols, np.where(rows == cols, 1.0, math.sqrt(2.0)))

    def parts(self, y, mu):
        M2 = 2.0 * np.tensordot(y, self.mats, axes=1)
        return np.diag(mu) + M2, np.diag(mu) - M2, self.penalty - mu.sum()

    def strictly_feasible(self, y, mu):
        Sp, Sm, slack = self.parts(y, mu)
        if slack <= 0:
            return False
        return (np.linalg.eigvalsh(Sp)[0] > 0) and (np.linalg.eigvalsh(Sm)[0] > 0)

    def ascend(self, objective, y, mu, tau, best, target_value, max_newton, n_barrier, centred):
        """Damped Newton on the loss's barrier part plus ``lmi_log_barrier``, tau
        raised by ``_TAU_FACTOR`` at every centred point (decrement below
        ``centred``), until the best dual value reaches ``target_value``, the
        barrier shows it cannot (``centred_and_done()``) or no step descends.

        ``objective``: ``value(y, tau)`` (the loss's part, infinite outside its
        domain), ``derivatives(y, tau)`` (its gradient and Hessian in ``y``) and
        ``dual(y)`` (the dual value ``D``); ``best`` is the start's dual value.
        Returns the best point ``(y, mu)``.
        """
        q, (loss_value, derivatives, dual) = self.q, objective

        def barrier(y, mu):
            value = loss_value(y, tau)
            return value + lmi_log_barrier(*self.parts(y, mu)) if math.isfinite(value) else math.inf

        best_y, best_mu = y, mu
        for _ in range(max_newton):
            Sp, Sm, slack = self.parts(y, mu)
            grad = np.zeros(q + self.p)
            hess = np.zeros((q + self.p, q + self.p))
            grad[:q], hess[:q, :q] = derivatives(y, tau)
            _add_lmi_barrier_terms(grad, hess, Sp, Sm, slack, self.stacked, *self.svec)
            step, decrement, _ = newton_direction(hess, grad)
            moved = None if step is None else backtrack(barrier, y, mu, step, decrement)
            if moved is None:
                break
            y, mu = moved
            value = dual(y)
            if value > best:
                best_y, best_mu, best = y, mu, value
            if best >= target_value:
                break
            if decrement < centred:
                if centred_and_done(value, best, tau, target_value, n_barrier):
                    break
                tau *= _TAU_FACTOR
        return best_y, best_mu


def _logistic_conjugate(lam, target, weight, tau):
    """``tau Σ w l*(lam) - Σ [log s + log(1 - s)]``, its gradient and Hessian
    diagonal in ``lam`` (``inf`` outside ``0 < s < 1``), and ``Σ w l*(lam)``.

    ``l*(lam) = s log s + (1 - s) log(1 - s)`` with ``s = -t lam``. The box's
    log barrier makes each term self-concordant (``a x log x - log x`` is,
    for ``a > 0``): without it Newton's steps stalled where some ``s`` neared
    0 (the entropy's curvature ``1 / s`` changes faster than its model).
    """
    s = -target * lam
    if not (np.all(s > 0.0) and np.all(s < 1.0)):
        return math.inf, None, None, math.inf
    log_s, log_r = np.log(s), np.log1p(-s)
    entropy = float(weight @ (s * log_s + (1.0 - s) * log_r))
    value = tau * entropy - float(log_s.sum() + log_r.sum())
    grad = -target * (tau * weight * (log_s - log_r) - 1.0 / s + 1.0 / (1.0 - s))
    hess = tau * weight / (s * (1.0 - s)) + 1.0 / s**2 + 1.0 / (1.0 - s) ** 2
    return value, grad, hess, entropy


def _logistic_face_dual_bound(data, factor, signs, scores, target_value, max_newton, threshold,
                              directions=None):
    """The face-restricted dual of one binary logistic block (``face_dual_bound()``).

    Around the current scores ``f``, ``lam* = l'(f) + l''(f) ⊙ (f* - f) + O(|f* - f|²)``
    with ``f* - f`` in the face's scores, so the family is ``lam = B y``,
    ``B = [l'(f), l''(f) ⊙ (⟨L_i, U X Uᵀ⟩)_i, l''(f) ⊙ (⟨L_i, V Y Vᵀ⟩)_i]``: its bound
    closes as fast as the primal, where ``lam = l'(f)`` lags by a square root. The
    restricted dual ``max -Σ w l*(B y)`` subject to ``Diag mu ± 2 M(B y) ⪰ 0``,
    ``1ᵀmu <= 2 beta p`` (``l*`` the binary entropy) is solved by the squared loss's
    log-barrier Newton method with the entropy's Hessian added; the line search
    rejects steps leaving its domain. ``verified_bound()`` makes the bound valid.
    """
    t = data.target.detach().cpu().numpy()[:, 0].astype(np.float64)
    weight = data.weight.detach().cpu().numpy().astype(np.float64)
    f = np.asarray(scores, dtype=np.float64)
    p = data.n_lifted
    # The face's size is capped by memory too: the Newton step holds a few
    # q x p x p arrays (d = 784: p = 785, q <= 40).
    cap = max(2, min(MAX_FACE_VARIABLES - 1, int(_FACE_MEMORY / (p * p))))
    U, V = face_basis(factor, signs, threshold, cap)
    s0 = 1.0 / (1.0 + np.exp(t * f))  # sigmoid(-t f), in (0, 1)
    s0 = np.clip(s0, 1e-12, 1.0 - 1e-12)
    lam0 = -t * s0
    curvature = s0 * (1.0 - s0)
    size = U.shape[1] * (U.shape[1] + 1) // 2 + V.shape[1] * (V.shape[1] + 1) // 2
    if size * t.shape[0] * p * p > _FACE_WORK:
        # The face is too large to form its matrices: the given score
        # directions instead (the solver's last steps, along which the
        # linearly converging iterate's remaining error mostly lies), or
        # without them the scores themselves (their scale).
        directions = f[:, None] if directions is None else np.asarray(directions, dtype=np.float64)
        pieces = [lam0[:, None], curvature[:, None] * directions]
    else:
        pieces = [lam0[:, None]] + [
            curvature[:, None] * pair_scores(data, basis) for basis in (U, V) if basis.shape[1]
        ]
    B = np.hstack(pieces)
    # Orthonormal in the entropy's Hessian at lam0 (w / (s (1 - s))): the
    # barrier's y block starts well conditioned; dependent columns drop out.
    metric = weight / curvature
    basis = _orthonormal_columns(B, metric)
    y0 = basis.T @ (metric * lam0)
    lmis = _FaceLMIs(data, basis, weight)
    # Barrier parameter: two LMIs of size p, the trace slack, the 2 n box terms.
    n_barrier = 2 * p + 1 + 2 * t.shape[0]

    def conj(y, tau=1.0):
        return _logistic_conjugate(basis @ y, t, weight, tau)

    def derivatives(y, tau):
        _, g_lam, h_lam, _ = conj(y, tau)
        return basis.T @ g_lam, basis.T @ (basis * h_lam[:, None])

    # Start: lam0 with the first-order mu at the factors, raised into the
    # LMIs' interior and scaled by theta into the trace constraint (the
    # constraints are cones: (theta y, theta mu) stays strictly feasible).
    mu0, theta = _interior_start(y0, lmis.mats, factor, signs, lmis.penalty)
    y, mu = theta * y0, theta * mu0
    start_value = -conj(y)[3]
    if not math.isfinite(start_value):
        return verified_bound(data, lam0, mu0)
    gap = (max(float(target_value) - start_value, 1e-12 * abs(start_value))
           if math.isfinite(target_value) else max(abs(start_value), 1e-12))
    tau = n_barrier / gap
    value = conj(y, tau)[0]
    if not (math.isfinite(value) and math.isfinite(value + lmi_log_barrier(*lmis.parts(y, mu)))):
        # Round-off put the start on the LMIs' boundary: no interior to
        # move in; the start itself is still checked.
        return verified_bound(data, basis @ y, mu)
    best_y, best_mu = lmis.ascend((lambda y, tau: conj(y, tau)[0], derivatives, lambda y: -conj(y)[3]),
                                  y, mu, tau, start_value, target_value, max_newton, n_barrier, 0.5)
    return verified_bound(data, basis @ best_y, best_mu)
