"""The SDP of a small lifting, solved exactly in its compact cone form by Clarabel.

For the squared loss the blocks of a vector output are independent SDPs
(the loss and the penalty are sums over blocks), and each block depends on
the samples only through three small arrays. With ``svec`` the
scaled upper-triangle vector of a symmetric matrix (off-diagonal entries
times √2, so that ``⟨A, B⟩ = svec(A)ᵀ svec(B)``), ``Φ_i = svec(L(x_i))`` and
``d = svec(P - N)``::

    Σ_i w_i (f_i - t_i)²  =  4 dᵀ G d - 4 bᵀ d + Σ_i w_i t_i²,
    G = Σ_i w_i Φ_i Φ_iᵀ,   b = Σ_i w_i t_i Φ_i,   f_i = 2 Φ_iᵀ d.

So each block is a convex quadratic program over two ``p x p`` PSD cones
with ``diag(P + N) = ρ 1``, of size ``m = p (p + 1) / 2`` whatever the
number of samples. Clarabel (an interior-point solver) solves it in tens of
iterations, well before the factor solver certifies. It pays while the dense
``m x m`` matrix ``G`` is small: ``routes.compact_applies`` says when.

The hinge losses are linear programs in the scores: with one slack ``ξ_i``
per sample, ``Σ_i w_i ξ_i`` subject to ``ξ_i >= 0`` and ``ξ_i >= 1 - y_i f_i``
(Crammer-Singer: ``ξ_i >= f_ik + [k != y_i] - f_iy`` for every ``k``). The
blocks are coupled through ``ξ`` and solved jointly, ``K (3m + 1) + n``
variables; the multipliers of the margin rows divided by ``w_i`` are the
hinge's dual point (as for CVXPY's solution,
:func:`~skquad.convex.formulation.relaxed_dual_point`). The factor solver's
smoothed hinge stalls short of ``tol`` at small ``beta``; this form has no
smoothing.

The many-class (multinomial) logistic loss couples the blocks through the
softmax, so the factor solver runs them jointly in torch. Its compact form is
a joint problem in exponential cones (``_solve_logistic``):
``logsumexp(f_i) - f_iy <= τ_i`` if and only if ``Σ_k exp(f_ik - f_iy - τ_i)
<= 1``, ``K`` cones per sample. Its certificate's dual point is the conic
dual's multiplier of the score rows ``f = 2 Φ d`` divided by ``w_i`` (at the
optimum ``l'(f)``), which stays accurate where the loss is flat and the scores
are not. The binary logistic loss has the same form (terms ``0`` and ``-y_i
f_i``) but is not chosen by default: its numpy block solver is faster.

The interior-point solution is only nearly feasible, so it is never reported
as is: its ``P`` and ``N`` are factored (positive eigenvalues only), the
factor rows are scaled to unit norm, which makes ``diag(P + N) = ρ 1`` hold
exactly, and ``ρ`` is re-chosen in closed form for those directions. That
point is feasible, its objective is the reported upper bound, and the lower
bound is :func:`~skquad.convex.certificate.dual_bound` at it, as for every
solver: a weak-duality certificate that holds whatever Clarabel's accuracy.
(The dual point, from the loss's gradient or from Clarabel's multipliers, is
first projected into the conjugate's domain, the simplex for the multinomial
loss; ``mu`` is lifted by the eigenvalue test with a round-off margin; so an
inaccurate interior point only makes the bound looser, never invalid.)
"""

import time

import numpy as np
import scipy.sparse
import torch

from .certificate import dual_bound, statistics_dual_bound
from .barrier import unit_factor
from .formulation import relaxed_dual_point
from .losses import dual_point
from .solution import SolverFailedError, factor_solution, record_progress, relative_gap
from .statistics import LiftedStatistics, smat, svec, svec_indices, svec_rows

__all__ = ["solve_compact", "solve_compact_statistics"]

def lifted_svecs(data):
    """``Φ`` of shape (n_samples, m): ``svec(L(x_i))`` for every sample, float64."""
    return svec_rows(data.features.detach().cpu().numpy(), data.polynomial)


def _block_problem(G, b_k, penalty, p, rows, cols):
    """Clarabel's data for one block: ``x = [svec N, ρ, d]``, ``P = smat(d) + N``.

    ``d = svec(P - N)`` is a variable, so the quadratic term is ``8 G`` on ``d`` alone (a
    quarter of the dense entries to factor), and ``P`` enters only through its cone rows
    ``-(d + svec N) + s = 0``. :func:`_block_solution` reads ``(svec P, svec N)`` from ``x``.
    """
    m = G.shape[0]
    n_var = 2 * m + 1
    i_N, i_rho, i_d = 0, m, m + 1
    quadratic = scipy.sparse.block_diag(
        [scipy.sparse.csc_matrix((m + 1, m + 1)), scipy.sparse.csc_matrix(np.triu(8.0 * G))],
        format="csc",
    )
    linear = np.zeros(n_var)
    linear[i_rho] = penalty
    linear[i_d:] = -4.0 * b_k
    diagonal = np.flatnonzero(rows == cols)
    eye_m = scipy.sparse.identity(m, format="csc")
    # diag(P) + diag(N) - ρ = diag(d) + 2 diag(N) - ρ = 0
    trace_rows = scipy.sparse.csc_matrix(
        (
            np.concatenate([np.ones(p), np.full(p, 2.0), -np.ones(p)]),
            (
                np.concatenate([np.arange(p)] * 3),
                np.concatenate([i_d + diagonal, i_N + diagonal, np.full(p, i_rho)]),
            ),
        ),
        shape=(p, n_var),
    )
    # svec P = d + svec N and svec N in the PSD cone: -x + s = 0, s ⪰ 0
    cone_P = scipy.sparse.hstack([-eye_m, scipy.sparse.csc_matrix((m, 1)), -eye_m], format="csc")
    cone_N = scipy.sparse.hstack([-eye_m, scipy.sparse.csc_matrix((m, m + 1))], format="csc")
    A = scipy.sparse.vstack([trace_rows, cone_P, cone_N], format="csc")
    rhs = np.zeros(A.shape[0])
    return quadratic, linear, A, rhs, (p, m)


def _block_solution(x, m):
    """``(svec P, svec N)`` of a solution ``x`` of :func:`_block_problem`."""
    N = x[:m]
    return x[m + 1 :] + N, N


def _block_constraints(p, m, rows, cols):
    """One block's rows over its ``3m + 1`` variables ``[svec P, svec N, ρ, d]``.

    Returns the ``p + m`` equality rows (``diag(P + N) = ρ 1``, ``d = svec(P
    - N)``) and the two ``m``-row PSD cone blocks (``-svec P + s = 0``, ``s
    ⪰ 0``, and the same for ``N``).
    """
    n_var = 3 * m + 1
    i_P, i_N, i_rho = 0, m, 2 * m
    diagonal = np.flatnonzero(rows == cols)
    eye_m = scipy.sparse.identity(m, format="csc")
    # diag(P) + diag(N) - ρ = 0
    trace_rows = scipy.sparse.csc_matrix(
        (
            np.concatenate([np.ones(p), np.ones(p), -np.ones(p)]),
            (
                np.concatenate([np.arange(p)] * 3),
                np.concatenate([i_P + diagonal, i_N + diagonal, np.full(p, i_rho)]),
            ),
        ),
        shape=(p, n_var),
    )
    # d - svec P + svec N = 0
    difference_rows = scipy.sparse.hstack(
        [-eye_m, eye_m, scipy.sparse.csc_matrix((m, 1)), eye_m], format="csc"
    )
    # svec P and svec N in the PSD cone: -x + s = 0, s ⪰ 0
    cone_P = scipy.sparse.hstack([-eye_m, scipy.sparse.csc_matrix((m, 2 * m + 1))], format="csc")
    cone_N = scipy.sparse.hstack(
        [scipy.sparse.csc_matrix((m, m)), -eye_m, scipy.sparse.csc_matrix((m, m + 1))],
        format="csc",
    )
    zero_rows = scipy.sparse.vstack([trace_rows, difference_rows], format="csc")
    return zero_rows, cone_P, cone_N


def _solve_blocks(problem, B, p, settings):
    """``[(svec P, svec N, iterations)]`` for the columns of ``B``: the blocks differ only in the
    linear term, so one Clarabel solver is updated from block to block (a fresh one where it fails)."""
    import clarabel

    quadratic, linear, A, rhs, (n_zero, m) = problem
    cones = [clarabel.ZeroConeT(n_zero), clarabel.PSDTriangleConeT(p), clarabel.PSDTriangleConeT(p)]
    solver, blocks = None, []
    for k in range(B.shape[1]):
        linear_k = linear.copy()
        linear_k[m + 1 :] = -4.0 * B[:, k]
        solution = None
        if solver is not None:
            solver.update(q=linear_k)
            solution = _solve_unless_panic(solver)
        if solution is None or "Solved" not in str(solution.status):
            solver, solution = _clarabel_solver(
                quadratic, linear_k, A, rhs, cones, "one block",
                faer_first=m >= _FAER_MIN_BLOCK, **settings
            )
        blocks.append((*_block_solution(np.asarray(solution.x), m), int(solution.iterations)))
    return blocks


# Rule: faer's supernodal LDL from blocks of m = 100 on, else QDLDL. Why: the
# KKT matrix is dense in each block's m x m entries, where BLAS-3 panels win.
_FAER_MIN_BLOCK = 100
_FAER_MIN_VARIABLES = 3 * _FAER_MIN_BLOCK + 1


def _solve_unless_panic(solver):
    """``solver.solve()``, or None where Clarabel panics (pyo3's ``PanicException``, a
    ``BaseException``, on non-finite input to a cone's eigendecomposition): a failed solve."""
    try:
        return solver.solve()
    except BaseException as error:
        if type(error).__name__ != "PanicException":
            raise
        return None


def clarabel_solve(quadratic, linear, A, rhs, cones, what, **overrides):
    """Clarabel on one compact problem; ``overrides``: settings that differ from these."""
    return _clarabel_solver(quadratic, linear, A, rhs, cones, what, **overrides)[1]


def _clarabel_solver(quadratic, linear, A, rhs, cones, what, faer_first=None, **overrides):
    """``(solver, solution)``: ``clarabel_solve`` with the solver kept for updates; ``faer_first``:
    faer's factorization before QDLDL's (None: from ``_FAER_MIN_VARIABLES`` variables on)."""
    import clarabel

    def settings_for(method):
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        # Clarabel's default accuracy: a block that does not certify ``tol``
        # is continued by the factor solver.
        settings.tol_gap_abs = settings.tol_gap_rel = 1e-8
        settings.tol_feas = 1e-8
        settings.direct_solve_method = method
        for key, value in overrides.items():
            setattr(settings, key, value)
        if hasattr(settings, "max_threads"):
            # Small by construction: one thread, as the caller's BLAS and torch.
            settings.max_threads = 1
        return settings

    # The other factorization when the first ends short of "Solved" (a
    # nearly singular KKT matrix may fail in one and not the other).
    if faer_first is None:
        faer_first = quadratic.shape[0] >= _FAER_MIN_VARIABLES
    methods = ["faer", "qdldl"] if faer_first else ["qdldl", "faer"]
    solution, status = None, "not run"
    for method in methods:
        try:
            solver = clarabel.DefaultSolver(quadratic, linear, A, rhs, cones, settings_for(method))
        except Exception:  # a Clarabel built without faer (before 0.10)
            continue
        solution = _solve_unless_panic(solver)
        if solution is None:
            status = "panic"
            continue
        status = str(solution.status)
        if "Solved" in status:
            break
    if solution is None or "Solved" not in status:
        raise SolverFailedError(
            f"Clarabel ended with status {status} on the compact SDP of {what}."
        )
    return solver, solution


def _joint_blocks(p, m, K, n_extra, penalty):
    """The joint forms' shared rows: equality rows, the ``2K`` PSD row blocks, the linear cost
    (``penalty`` on every ``ρ_k``) and the block length ``3m + 1``, for variables
    ``[svec P_k, svec N_k, ρ_k, d_k]`` per block, ``n_extra`` after them."""
    block = 3 * m + 1
    n_var = K * block + n_extra
    zero_rows, cone_P, cone_N = _block_constraints(p, m, *svec_indices(p))
    zero = scipy.sparse.block_diag([zero_rows] * K, format="csc")
    zero = scipy.sparse.hstack([zero, scipy.sparse.csc_matrix((zero.shape[0], n_extra))], format="csc")
    psd = [
        scipy.sparse.hstack(
            [scipy.sparse.csc_matrix((m, k * block)), cone, scipy.sparse.csc_matrix((m, n_var - (k + 1) * block))],
            format="csc",
        )
        for k in range(K) for cone in (cone_P, cone_N)
    ]
    linear = np.zeros(n_var)
    linear[2 * m : K * block : block] = penalty
    return zero, psd, linear, block


def _joint_blocks_of(x, K, m, block):
    """Per block ``(svec P, svec N, ρ)`` of a joint solution ``x``."""
    return [
        (x[k * block : k * block + m], x[k * block + m : k * block + 2 * m], x[k * block + 2 * m])
        for k in range(K)
    ]


def _solve_hinge(Phi, weight, target, penalty, p, settings):
    """The hinge SDP's compact form, all blocks jointly (module docstring).

    Variables ``[block 0, ..., block K-1, ξ]`` (``_joint_blocks``). Returns per block
    ``(svec P, svec N, ρ)``, the iterations and the margin rows' multipliers (n, K).
    """
    import clarabel

    n, K = target.shape
    m = Phi.shape[1]
    zero, psd, linear, block = _joint_blocks(p, m, K, n, penalty)
    xi = -scipy.sparse.identity(n, format="csc")
    if K == 1:
        # ξ_i >= 0, and ξ_i + 2 y_i Φ_i d >= 1 (Clarabel: A x + s = b, s >= 0).
        margin_d = scipy.sparse.csc_matrix(-2.0 * target[:, :1] * Phi)
        margin = scipy.sparse.hstack(
            [scipy.sparse.csc_matrix((n, 2 * m + 1)), margin_d, xi], format="csc"
        )
        slack = scipy.sparse.hstack([scipy.sparse.csc_matrix((n, K * block)), xi], format="csc")
        nonneg = scipy.sparse.vstack([slack, margin], format="csc")
        nonneg_rhs = np.concatenate([np.zeros(n), -np.ones(n)])
    else:
        # Row (k, i): ξ_i - f_ik + f_iy >= [k != y_i], f_ik = 2 Φ_i d_k.
        labels = np.argmax(target, axis=1)
        parts = []
        for k in range(K):
            other = (labels != k).astype(np.float64)[:, None]
            blocks = []
            for j in range(K):
                coefficient = 2.0 * (other * (float(j == k) - (labels == j)[:, None]))
                blocks.append(scipy.sparse.csc_matrix((n, 2 * m + 1)))
                blocks.append(scipy.sparse.csc_matrix(coefficient * Phi))
            parts.append(scipy.sparse.hstack(blocks + [xi], format="csc"))
        nonneg = scipy.sparse.vstack(parts, format="csc")
        nonneg_rhs = -(1.0 - target.T).reshape(-1)
    A = scipy.sparse.vstack([zero, nonneg] + psd, format="csc")
    rhs = np.concatenate([np.zeros(zero.shape[0]), nonneg_rhs, np.zeros(2 * K * m)])
    linear[K * block :] = weight
    cones = [clarabel.ZeroConeT(zero.shape[0]), clarabel.NonnegativeConeT(nonneg.shape[0])]
    cones += [clarabel.PSDTriangleConeT(p)] * (2 * K)
    quadratic = scipy.sparse.csc_matrix((linear.size, linear.size))
    solution = clarabel_solve(quadratic, linear, A, rhs, cones, "the hinge loss", **settings)
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    z_margin = z[zero.shape[0] : zero.shape[0] + nonneg.shape[0]]
    multipliers = z_margin[n:, None] if K == 1 else z_margin.reshape(K, n).T
    return _joint_blocks_of(x, K, m, block), int(solution.iterations), multipliers


def _exponential_rows(target, n_terms, i_f, i_tau, i_u, n_var):
    """The exponential cones' rows of ``_solve_logistic()`` and their right-hand side.

    Cone (i, j), rows (x, y, z), ``A x + s = b``: ``x = a_ij(f) - τ_i``, ``y = 1``,
    ``z = u_ij``; ``a_ij(f) = Σ_k c_ijk f_ik`` gives row entries ``-c`` (``b = 0``).
    """
    n, K = target.shape
    if K == 1:
        labels_sign = target[:, 0]
        term_cols = [[], [i_f + np.arange(n)]]
        term_vals = [[], [labels_sign]]  # a_i1 = -y_i f_i: A entry +y_i
    else:
        labels = np.argmax(target, axis=1)
        term_cols, term_vals = [], []
        for k in range(K):
            other = labels != k
            # a_ik = f_ik - f_iy (zero where k = y_i): A entries -1 and +1.
            term_cols.append([i_f + k * n + np.arange(n), i_f + labels * n + np.arange(n)])
            term_vals.append([-other.astype(np.float64), other.astype(np.float64)])
    row_of = lambda j, component: 3 * (np.arange(n) * n_terms + j) + component  # noqa: E731
    entries_r, entries_c, entries_v = [], [], []
    for j in range(n_terms):
        x_rows = row_of(j, 0)
        for cols, vals in zip(term_cols[j], term_vals[j]):
            entries_r.append(x_rows), entries_c.append(cols), entries_v.append(vals)
        entries_r.append(x_rows), entries_c.append(i_tau + np.arange(n)), entries_v.append(np.ones(n))
        entries_r.append(row_of(j, 2))
        entries_c.append(i_u + np.arange(n) * n_terms + j)
        entries_v.append(-np.ones(n))
    exp_rows = scipy.sparse.csc_matrix(
        (np.concatenate(entries_v), (np.concatenate(entries_r), np.concatenate(entries_c))),
        shape=(3 * n * n_terms, n_var),
    )
    exp_rhs = np.zeros(3 * n * n_terms)
    exp_rhs[1::3] = 1.0
    return exp_rows, exp_rhs


def _solve_logistic(Phi, weight, target, penalty, p, settings):
    """The logistic SDP's compact form, all blocks jointly, in exponential cones.

    Variables ``[block 0, ..., block K-1, f, τ, u]`` (``_joint_blocks``): scores
    ``f_ij = 2 Φ_i d_j``, an epigraph ``τ_i`` and ``J`` cone variables ``u_ij`` per
    sample, minimising ``Σ_j penalty ρ_j + Σ_i w_i τ_i``. A log-sum-exp loss
    ``l_i <= τ_i`` iff ``(a_ij - τ_i, 1, u_ij)`` is in the exponential cone and
    ``Σ_j u_ij <= 1``: binary terms ``0, -y_i f_i`` (J = 2), multinomial
    ``f_ik - f_iy`` (J = K).

    Returns per block ``(svec P, svec N, ρ)``, the iterations, the score rows'
    multipliers ``-z`` (``w_i l'(f_i)`` at the optimum), shape (n, K), and per block
    the multipliers of its trace rows (a candidate ``mu_k``).
    """
    import clarabel

    n, K = target.shape
    m = Phi.shape[1]
    n_extra = K * n + n + (2 * n if K == 1 else K * n)
    zero, psd, linear, block = _joint_blocks(p, m, K, n_extra, penalty)
    n_var = linear.size
    i_f = K * block
    i_tau = i_f + K * n
    i_u = i_tau + n
    n_terms = 2 if K == 1 else K
    # f_ik - 2 Φ_i d_k = 0, in order (k, i).
    scores = scipy.sparse.hstack(
        [
            scipy.sparse.block_diag(
                [
                    scipy.sparse.hstack(
                        [scipy.sparse.csc_matrix((n, 2 * m + 1)), scipy.sparse.csc_matrix(-2.0 * Phi)]
                    )
                ] * K,
            ),
            scipy.sparse.identity(K * n),
            scipy.sparse.csc_matrix((K * n, n_var - i_tau)),
        ],
        format="csc",
    )
    # Σ_j u_ij <= 1.
    sample = np.repeat(np.arange(n), n_terms)
    u_column = i_u + np.arange(n * n_terms)
    budget = scipy.sparse.csc_matrix(
        (np.ones(n * n_terms), (sample, u_column)), shape=(n, n_var)
    )
    exp_rows, exp_rhs = _exponential_rows(target, n_terms, i_f, i_tau, i_u, n_var)
    A = scipy.sparse.vstack([zero, scores, budget, exp_rows] + psd, format="csc")
    rhs = np.concatenate([
        np.zeros(zero.shape[0] + K * n), np.ones(n), exp_rhs, np.zeros(2 * K * m)
    ])
    linear[i_tau:i_u] = weight
    cones = [clarabel.ZeroConeT(zero.shape[0] + K * n), clarabel.NonnegativeConeT(n)]
    cones += [clarabel.ExponentialConeT()] * (n * n_terms)
    cones += [clarabel.PSDTriangleConeT(p)] * (2 * K)
    quadratic = scipy.sparse.csc_matrix((n_var, n_var))
    solution = clarabel_solve(quadratic, linear, A, rhs, cones, "the logistic loss", **settings)
    x, z = np.asarray(solution.x), np.asarray(solution.z)
    # Stationarity in f of w_i l(f_i) + z_ik (f_ik - 2 Φ_i d_k): z = -w l'(f).
    score_duals = -z[zero.shape[0] : zero.shape[0] + K * n].reshape(K, n).T
    # The multipliers of diag(P_k + N_k) = ρ_k 1 (each block's first p rows): the certificate's mu_k.
    trace_duals = [z[k * (p + m) : k * (p + m) + p] for k in range(K)]
    return _joint_blocks_of(x, K, m, block), int(solution.iterations), score_duals, trace_duals


def _certified_point(data, Phi, weight, target, squared, settings):
    """Solve, round to an exactly feasible point and certify it (module docstring).

    ``squared``: the squared loss's ``(LiftedStatistics, penalty)``, solved from the
    statistics alone (:func:`_certified_squared`). Returns a dict with ``factors``,
    ``rho``, ``scores``, ``objective``, ``lower_bound``, ``gap`` and ``iterations``.
    """
    if squared is not None:
        return _certified_squared(*squared, settings)
    p, K = data.n_lifted, data.n_outputs
    rows, cols = svec_indices(p)
    penalty = data.penalty_per_rho
    factors, rhos, scores = [], [], []
    mu_candidates = None
    if data.loss == "hinge":
        joint, iterations, multipliers = _solve_hinge(Phi, weight, target, penalty, p, settings)
    else:
        joint, iterations, multipliers, mu_candidates = _solve_logistic(
            Phi, weight, target, penalty, p, settings
        )
    for k in range(K):
        sP, sN, rho = joint[k]
        F, s = unit_factor(smat(sP, p, rows, cols), smat(sN, p, rows, cols))
        g = 2.0 * (Phi @ svec((F * s) @ F.T, rows, cols))
        # The interior point's ρ (the blocks share the loss: no 1-D refit).
        rho = max(0.0, float(rho))
        factors.append((F, s))
        rhos.append(rho)
        scores.append(rho * g)
    scores = np.column_stack(scores)
    rho = np.asarray(rhos)

    dtype, device = data.features.dtype, data.features.device
    scores_t = torch.as_tensor(scores, dtype=dtype, device=device)
    objective = float(data.objective(scores_t, torch.as_tensor(rho.sum(), dtype=dtype)))
    zero_value = data.zero_network_value()
    if zero_value <= objective:
        rho = np.zeros_like(rho)
        scores = np.zeros_like(scores)
        scores_t = torch.zeros_like(scores_t)
        objective = zero_value
    if data.loss == "logistic":
        # The score rows' multipliers over w, not l'(f): the scores are only as accurate as
        # the loss is curved, flat at small beta. Any dual point certifies (weak duality).
        weight_t = data.weight[:, None]
        lam = torch.where(
            weight_t > 0,
            torch.as_tensor(multipliers, dtype=dtype, device=device) / torch.clamp(weight_t, min=1e-300),
            dual_point(scores_t, data.target, data.loss),
        )
    else:
        # Any point of the dual domain certifies (weak duality): the
        # multipliers stay valid when the zero network replaced the point.
        lam = relaxed_dual_point(
            data, scores_t, torch.as_tensor(multipliers, dtype=dtype, device=device)
        )
    directions = [
        (torch.as_tensor(F, dtype=dtype, device=device), torch.as_tensor(s, dtype=dtype, device=device))
        for F, s in factors
    ]
    certificate = dual_bound(
        data, lam, directions, feasible_value=objective, mu_candidates=mu_candidates
    )
    lower_bound = certificate.lower_bound
    gap = relative_gap(objective, lower_bound)
    return {
        "factors": factors, "rho": rho, "scores": scores, "objective": objective,
        "lower_bound": lower_bound, "gap": gap, "iterations": iterations,
    }


def _certified_squared(statistics, penalty, settings):
    """:func:`_certified_point` of the squared loss from normalized :class:`LiftedStatistics`.

    Each unit-row direction gets its best ``ρ`` in closed form (a 1-D
    quadratic, as ``squared_loss_rho``); the point's ``D`` (m x K, ``svec(ρ_k
    D_k)``) gives the scores ``2 Φ D`` where the rows are at hand.
    """
    p, K = statistics.n_lifted, statistics.n_outputs
    rows, cols = svec_indices(p)
    G, B = statistics.gram, statistics.cross
    problem = _block_problem(G, np.zeros(G.shape[0]), penalty, p, rows, cols)
    joint = _solve_blocks(problem, B, p, settings)
    factors, rho, D = [], np.zeros(K), np.zeros((G.shape[0], K))
    for k, (sP, sN, _) in enumerate(joint):
        F, s = unit_factor(smat(sP, p, rows, cols), smat(sN, p, rows, cols))
        unit = svec((F * s) @ F.T, rows, cols)
        curvature, slope = 4.0 * unit @ G @ unit, 2.0 * unit @ B[:, k] - 0.5 * penalty
        rho[k] = max(0.0, slope / curvature) if curvature > 0 else 0.0
        factors.append((F, s))
        D[:, k] = rho[k] * unit
    objective = float(statistics.loss(D).sum() + penalty * rho.sum())
    zero_value = float(statistics.target_square.sum())
    if zero_value <= objective:
        rho, D, objective = np.zeros(K), np.zeros_like(D), zero_value
    directions = [(torch.as_tensor(F), torch.as_tensor(s)) for F, s in factors]
    lower_bound = statistics_dual_bound(
        statistics, D, penalty, directions, feasible_value=objective
    ).lower_bound
    return {
        "factors": factors, "rho": rho, "scores": None, "D": D, "objective": objective,
        "lower_bound": lower_bound, "gap": relative_gap(objective, lower_bound),
        "iterations": sum(block[2] for block in joint),
    }


# Clarabel's settings for the compact forms, one decision per loss: the passes
# tried in turn until one certifies ``tol`` (the best certified point is kept;
# a pass that fails is followed by the next; none solved is a failed solve).
_CLARABEL_PASSES = {
    # Without iterative refinement first (a quarter of a block's time); an
    # ill-scaled block certifies far less without it, hence the second pass.
    "squared": ({"iterative_refinement_enable": False}, {}),
    # Fast first (no refinement, no equilibration), then one accurate pass:
    # at small beta the fast pass's conic dual, hence the certificate, can be far off.
    "logistic": (
        {"iterative_refinement_enable": False, "equilibrate_enable": False},
        {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10},
    ),
    "hinge": ({},),
}


def solve_compact(data, *, tol=1e-4, callback=None, verbose=0):
    """Solve the SDP relaxation of a small lifting in its compact form.

    Parameters
    ----------
    data : LiftedData
        Squared (block by block), hinge or logistic loss (see
        ``routes.compact_applies``).
    tol : float, default=1e-4
        The relative certified gap the solution is judged against
        (``converged``); the interior-point solve itself goes to about 1e-10.
    callback : callable, default=None
        ``callback(info) -> bool`` once, with the same keys as the factor
        solver's (``iteration``, ``objective``, ``lower_bound``, ``gap``,
        ``rank``, ``elapsed``).
    verbose : int, default=0
        Print one progress line.

    Returns
    -------
    solution : SDPSolution
        ``solver="compact"``, exactly feasible, with factors (a warm start
        for the factor solver) and the certificate of :func:`dual_bound`.
    """
    start = time.perf_counter()
    Phi = lifted_svecs(data)
    weight = data.weight.detach().cpu().numpy().astype(np.float64)
    target = data.target.detach().cpu().numpy().astype(np.float64)
    squared = None
    if data.loss == "squared":
        features = data.features.detach().cpu().numpy()
        statistics = LiftedStatistics.of_rows(features, target, weight, data.polynomial)
        squared = (statistics, data.penalty_per_rho)
    point = _best_point(
        lambda settings: _certified_point(data, Phi, weight, target, squared, settings),
        data.loss, tol,
    )
    if point["scores"] is None:
        point["scores"] = 2.0 * Phi @ point["D"]
    return _compact_solution(point, start, tol, callback, verbose)


def solve_compact_statistics(statistics, beta, *, tol=1e-4, callback=None, verbose=0):
    """:func:`solve_compact` of the squared loss from its sufficient statistics alone.

    ``statistics``: normalized :class:`~skquad.convex.LiftedStatistics`
    (weights summing to one); the cost is independent of the number of rows.
    The solution has no ``scores`` (no rows); its certificate is
    :func:`~skquad.convex.statistics_dual_bound`.
    """
    start = time.perf_counter()
    squared = (statistics, 2.0 * beta * statistics.n_lifted)
    point = _best_point(
        lambda settings: _certified_squared(*squared, settings), "squared", tol
    )
    return _compact_solution(point, start, tol, callback, verbose)


def _best_point(certify, loss, tol):
    """The best certified point of ``certify(settings)`` over the loss's passes (iterations summed)."""
    iterations, point = 0, None
    passes = _CLARABEL_PASSES[loss]
    for index, settings in enumerate(passes):
        try:
            trial = certify(settings)
        except SolverFailedError:
            if point is None and index == len(passes) - 1:
                raise
            continue
        iterations += trial["iterations"]
        if point is None or trial["gap"] < point["gap"]:
            point = trial
        if point["gap"] <= tol:
            break
    return dict(point, iterations=iterations)


def _compact_solution(point, start, tol, callback, verbose):
    iterations = point["iterations"]
    factors, rho, scores = point["factors"], point["rho"], point["scores"]
    objective, lower_bound, gap = point["objective"], point["lower_bound"], point["gap"]
    info = record_progress([], start, verbose, iterations, objective, lower_bound, gap,
                           rank=sum(F.shape[1] for F, _ in factors))
    elapsed = info["elapsed"]
    stopped = bool(callback(dict(info))) if callback is not None else False
    return factor_solution(
        factors, rho, value=objective, scores=scores, status="optimal" if gap <= tol else "inaccurate",
        solver="compact", solve_time=elapsed, lower_bound=float(lower_bound), n_iter=iterations,
        converged=bool(gap <= tol), history=[info], stopped=stopped,
    )

