"""From the SDP solution to a binary network: Bartan & Pilanci, Algorithm 1 (and B.1).

1. ``Z_s = Z* / rho*`` (and the whole block ``Q* / rho*``, unit diagonal).
2. Covariance step: a unit-diagonal PSD ``K`` with ``K_(12) = sin(gamma Z_s)``,
   ``gamma = ln(1 + sqrt 2)`` (its eq. 27; exists by its Theorem 2).
3. ``[u; v] = sign(N(0, K))``, ``m`` times; by Grothendieck's identity
   ``E[u v^T] = (2 / pi) arcsin K_(12) = (2 gamma / pi) Z_s``, so the shared
   second-layer weight ``alpha = rho* pi / (gamma m)`` gives
   ``E[sum_j alpha u_j v_j^T] = 2 Z*``: the SDP's predictions in expectation.

The covariance step has a closed form (Krivine's construction, used in the
paper's proof of Theorem 2 through Alon & Naor's Lemma 4.2): with ``Q_s``
the normalised SDP block,

    K = [[sinh(gamma V_s), sin(gamma Z_s)], [sin(gamma Z_s)^T, sinh(gamma W_s)]]

(elementwise functions). ``K`` is PSD since it is the sum over odd ``k`` of
``gamma^k / k! * D_k Q_s^(∘k) D_k`` with ``D_k = diag(I, ±I)`` (Schur
product theorem), and has unit diagonal since ``sinh(gamma) = 1``. It is an
exact minimiser of eq. 27 (objective 0) and costs two elementwise functions
instead of a second SDP; :func:`covariance_by_sdp` solves eq. 27 itself, and
the tests check that both reach objective 0.
"""

import numpy as np
import torch

from .factor_solver import threads_for

__all__ = [
    "GAMMA",
    "covariance_by_sdp",
    "covariance_objective",
    "krivine_covariance",
    "neuron_scale",
    "normalized_block",
    "sample_sign_pairs",
]

GAMMA = float(np.log1p(np.sqrt(2.0)))
_CPU = torch.device("cpu")


def _nearest_correlation(matrix):
    """Clip negative eigenvalues, then rescale to a unit diagonal.

    Only removes solver round-off: an exact SDP solution is already PSD.
    """
    matrix = 0.5 * (matrix + matrix.T)
    # one BLAS thread for small matrices, as the solver: on a busy machine
    # BLAS threads spin longer than a small eigh takes
    with threads_for(matrix.shape[0] ** 3, _CPU):
        eigenvalues, eigenvectors = np.linalg.eigh(matrix)
        matrix = (eigenvectors * np.maximum(eigenvalues, 0.0)) @ eigenvectors.T
    scale = np.sqrt(np.maximum(np.diag(matrix), 1e-300))
    matrix = matrix / np.outer(scale, scale)
    np.fill_diagonal(matrix, 1.0)
    return matrix


def normalized_block(Q, rho):
    """``Q* / rho*`` made exactly unit-diagonal and PSD (identity when rho* = 0)."""
    if rho <= 1e-9 * max(1.0, np.max(np.abs(Q))):
        return np.eye(Q.shape[0])
    return _nearest_correlation(Q / rho)


def krivine_covariance(Q_normalized):
    """Closed-form solution of the covariance step (eq. 27), see module docstring.

    Parameters
    ----------
    Q_normalized : ndarray of shape (2p, 2p)
        Unit-diagonal PSD matrix ``[[V_s, Z_s], [Z_s^T, W_s]]``.

    Returns
    -------
    K : ndarray of shape (2p, 2p)
        Unit-diagonal PSD, with ``arcsin(K_(12)) = gamma Z_s``.
    """
    p = Q_normalized.shape[0] // 2
    K = np.sinh(GAMMA * Q_normalized)
    K[:p, p:] = np.sin(GAMMA * Q_normalized[:p, p:])
    K[p:, :p] = K[:p, p:].T
    return _nearest_correlation(K)


def covariance_objective(K, Z_normalized):
    """Objective of eq. 27, ``||K_(12) - sin(gamma Z_s)||_F^2``."""
    p = Z_normalized.shape[0]
    return float(np.sum((K[:p, p:] - np.sin(GAMMA * Z_normalized)) ** 2))


def covariance_by_sdp(Z_normalized, *, solver=None, solver_options=None):
    """Solve eq. 27 as its own convex problem (the paper's covariance step).

    Parameters
    ----------
    Z_normalized : ndarray of shape (p, p)
        ``Z* / rho*``.
    solver, solver_options :
        A CVXPY solver and its options, as in
        :func:`skquad.convex.solve_sdp`. None or a name in
        ``routes.native_names()`` (the native solvers, which do not solve
        this problem) mean :func:`~skquad.convex.default_solver`'s choice
        with its defaults.

    Returns
    -------
    K : ndarray of shape (2p, 2p)
    """
    import cvxpy as cp

    from .formulation import SolverFailedError, default_solver
    from .routes import native_names

    p = Z_normalized.shape[0]
    K = cp.Variable((2 * p, 2 * p), PSD=True)
    target = np.sin(GAMMA * Z_normalized)
    problem = cp.Problem(
        cp.Minimize(cp.sum_squares(K[:p, p:] - target)), [cp.diag(K) == 1.0]
    )
    if solver is None or solver in native_names():
        solver, solver_options = default_solver(), None
    try:
        problem.solve(solver=solver, **dict(solver_options or {}))
    except cp.error.SolverError as exc:
        raise SolverFailedError(
            f"The covariance-step solver {solver!r} failed ({exc}); use "
            "covariance='krivine' (closed form) or another solver."
        ) from exc
    if K.value is None:
        raise SolverFailedError(
            f"The covariance-step solver {solver!r} returned status "
            f"{problem.status!r}; use covariance='krivine' (closed form)."
        )
    return _nearest_correlation(np.asarray(K.value, dtype=np.float64))


def sample_sign_pairs(K, n_neurons, generator):
    """Draw ``[u; v] = sign(N(0, K))`` ``n_neurons`` times.

    Parameters
    ----------
    K : ndarray of shape (2p, 2p)
        Covariance (PSD, unit diagonal).
    n_neurons : int
    generator : torch.Generator
        CPU generator of the standard normal draws. The estimators pass the
        one their fit's runtime policy derives from ``random_state``
        (``skquad._foundation._runtime``); no global generator is used.

    Returns
    -------
    U, V : ndarray of shape (n_neurons, p), int8 in {-1, +1}
        A zero draw (probability 0) counts as +1.
    """
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator, got {type(generator).__name__}."
        )
    size = K.shape[0]
    with threads_for(size ** 3 + int(n_neurons) * size ** 2, _CPU):
        eigenvalues, eigenvectors = np.linalg.eigh(K)
        factor = eigenvectors * np.sqrt(np.maximum(eigenvalues, 0.0))
        normal = torch.randn((int(n_neurons), size), generator=generator, dtype=torch.float64)
        gaussian = normal.numpy() @ factor.T
    signs = np.where(gaussian >= 0.0, 1, -1).astype(np.int8)
    p = K.shape[0] // 2
    return signs[:, :p], signs[:, p:]


def neuron_scale(rho, n_neurons):
    """The shared second-layer weight ``rho* pi / (gamma m)``."""
    return float(rho) * np.pi / (GAMMA * n_neurons)
