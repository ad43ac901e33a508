"""Binary quadratic logistic regression by Newton's method on the dual (kernel) coefficients.

Pure numpy: the math of :class:`~skquad.QuadraticLogisticRegression`'s
automatic choice for binary problems with fewer rows than degree-2 features.

The binary objective (``SPEC.md`` section 1; :mod:`.quadratic_form`) is

.. math::

    J(Q, w, b) = \\sum_i s_i \\, \\ell(z_i, y_i)
        + \\tfrac{\\lambda}{2} \\big(P(Q) + \\lVert w \\rVert^2\\big),
    \\qquad z_i = x_i^T Q x_i + w^T x_i + b,

with ``P(Q) = sum_a Q_aa^2 + 2 c sum_{a<b} Q_ab^2`` (``c`` the
``cross_weight``: 2 for the ``"polynomial"`` penalty, 1 for ``"frobenius"``)
and ``s`` summing to one. It is L2-penalised logistic regression on the
features ``psi(x) = [x_a^2, sqrt(2/c) x_a x_b (a < b), x_a]`` with
coefficients ``beta = [Q_aa, sqrt(2c) Q_ab, w_a]`` (``x^T Q x + w^T x =
beta . psi(x)`` and ``P(Q) + ||w||^2 = ||beta||^2``), so by the representer
theorem the optimum is ``beta = sum_i alpha_i psi(x_i)``, that is

.. math::

    Q = X^T \\operatorname{diag}(\\alpha) X \\ \\text{(off-diagonal entries
    divided by } c\\text{)}, \\qquad w = X^T \\alpha,

and ``J`` becomes a function of ``(alpha, b)`` with the kernel
``K = psi(X) psi(X)^T = S + T + (S o S - T) / c``, ``S = X X^T``,
``T = (X o X)(X o X)^T`` (:func:`~.quadratic_ridge.degree2_kernel`):
``z = K alpha + b``, penalty ``alpha^T K alpha``.

A penalty ``lambda (rho P(Q) + ||w||^2)`` (``rho``, ``quadratic_weight``: the
estimator's ``C / quadratic_C``) is the same problem on the features
``[psi_Q(x) / sqrt(rho), x]``: the kernel's quadratic part ``K - S`` and
``Q`` are divided by ``rho``. The stopping test is unchanged (``rho Q`` is
``X^T diag(alpha) X`` as before). With ``n`` rows well below
the ``d(d+3)/2`` features, Newton's method on ``(alpha, b)`` costs one
``n x n`` Cholesky per step and converges in a handful of steps (ionosphere,
263 x 34: 8 steps) where L-BFGS on the primal takes 30 to 40.

Newton step. With ``r = s (p - y)``, ``u = r + lambda alpha``, ``D = s p (1 - p)``
and ``h = sqrt(D)``, the gradient is ``(K u, sum r)`` and the Newton system
``(K D K + lambda K) da + K D 1 db = -K u``, ``1^T D K da + 1^T D 1 db =
-sum r`` is solved through its sufficient form ``(D K + lambda I) da + D 1 db
= -u``: with ``y = h o (K da + db)`` (the scaled change of the scores),
``(H K H + lambda I) y = -h o K u + lambda db h``, one Cholesky of the
symmetric positive definite ``H K H + lambda I`` (its smallest eigenvalue is
at least ``lambda``) solved for two right-hand sides; ``db`` then follows
from the second equation and ``da = -(u + h o y) / lambda``. A backtracking
(Armijo) line search on ``J`` keeps every step a descent step.

Stopping test: the primal gradient, exactly. At ``beta = psi^T alpha`` the
gradient of ``J`` with respect to ``beta`` is ``psi^T u``; in the full
matrix's coordinates (the L-BFGS path's test, :class:`.quadratic_form.QuadraticScores`'
``lbfgs_gradient_scales``) that is ``X^T diag(u) X`` for ``Q``, ``X^T u``
for ``w`` and ``sum r`` for ``b``. The solver stops when their largest
absolute entry is at most ``tol``: the same test, on the same numbers, as
the L-BFGS path, whatever the dual iterates' accuracy.
"""

import math

import numpy as np
import scipy.special
from scipy.linalg.lapack import dpotrf, dpotrs

from .quadratic_ridge import degree2_kernel

__all__ = ["dual_to_primal", "kernel_newton_logistic"]

# Armijo's sufficient-decrease constant and the most halvings of one step
# (LogisticRegression's L-BFGS allows 50 line-search steps).
_ARMIJO = 1e-4
_MAX_HALVINGS = 50
# A full Newton step whose objective differs from the current one by less
# than this many rounding units is taken (near the optimum the decrease is
# below what float64 resolves; L-BFGS stops there on ftol = 64 eps).
_ROUNDING_UNITS = 64


def dual_to_primal(X, alpha, cross_weight=1.0, allowed=None, quadratic_weight=1.0):
    """``(Q, coef)`` of the dual coefficients ``alpha`` (see the module docstring).

    ``allowed`` (interaction constraints): ``psi`` holds the allowed pairs
    only, so ``Q`` is zero elsewhere.
    """
    Q = X.T @ (alpha[:, None] * X)
    off_diagonal = ~np.eye(X.shape[1], dtype=bool)
    Q[off_diagonal] /= cross_weight
    Q /= quadratic_weight
    if allowed is not None:
        Q[~allowed] = 0.0
    return Q, X.T @ alpha


def _primal_gradient_max(X, u, residual_sum, fit_intercept, allowed=None):
    """The largest entry of the primal gradient ``(X^T diag(u) X, X^T u, sum r)`` (allowed entries)."""
    gram = X.T @ (u[:, None] * X)
    gram = gram if allowed is None else gram[allowed]
    largest = max(np.abs(gram).max(initial=0.0), np.abs(X.T @ u).max(initial=0.0))
    return max(largest, abs(residual_sum)) if fit_intercept else largest


def kernel_newton_logistic(X, y, weight, l2, *, cross_weight=1.0, quadratic_weight=1.0,
                           fit_intercept=True, tol=1e-4, max_iter=100, on_iteration=None,
                           allowed=None):
    """Minimise the binary quadratic logistic objective by Newton's method on ``(alpha, b)``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
        0 or 1.
    weight : ndarray of shape (n_samples,)
        Non-negative, summing to one.
    l2 : float
        The penalty ``lambda`` (positive).
    cross_weight : float, default=1.0
        ``c`` of the penalty (2 for the polynomial penalty).
    quadratic_weight : float, default=1.0
        ``rho``: the penalty on ``Q`` is ``lambda rho P(Q)`` (the module docstring).
    fit_intercept : bool, default=True
        False keeps ``b = 0``.
    tol : float, default=1e-4
        Stop when the primal gradient's largest entry is at most ``tol``.
    max_iter : int, default=100
        The most Newton steps; 0 returns the zero model.
    on_iteration : callable, optional
        ``on_iteration(iteration, objective, alpha, intercept) -> bool`` after
        every step; True stops the solver there.
    allowed : ndarray of shape (n_features, n_features), bool, optional
        Interaction constraints: the entries of ``Q`` that may be nonzero
        (``psi`` and the kernel keep the allowed pairs only).

    Returns
    -------
    result : dict
        ``alpha`` (n_samples,), ``intercept`` (float), ``n_iter``, ``loss`` (the
        objective ``J``), ``gradient`` (the primal gradient's largest entry at
        the returned point) and ``status``: ``"converged"``, ``"max_iter"``,
        ``"stopped"`` (by ``on_iteration``) or ``"line_search"`` (no step
        decreased ``J``).
    """
    n = X.shape[0]
    X = np.asarray(X, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    positive = np.asarray(y) == 1
    sign = np.where(positive, -1.0, 1.0)
    target = positive.astype(np.float64)
    K = degree2_kernel(X, cross_weight, allowed, 1.0 / quadratic_weight)

    def data_loss(z):
        return float(weight @ np.logaddexp(0.0, sign * z))

    alpha, intercept = np.zeros(n), 0.0
    z, K_alpha = np.zeros(n), np.zeros(n)
    objective = data_loss(z)
    status, iteration = "max_iter", 0
    while True:
        p = scipy.special.expit(z)
        r = weight * (p - target)
        u = r + l2 * alpha
        residual_sum = float(r.sum())
        gradient = _primal_gradient_max(X, u, residual_sum, fit_intercept, allowed)
        # max_iter=0 returns the starting point as the L-BFGS path does (a limit, warned)
        if gradient <= tol and max_iter > 0:
            status = "converged"
            break
        if iteration >= max_iter:
            break
        h = np.sqrt(weight * p * (1.0 - p))
        M = h[:, None] * K * h[None, :]
        M[np.diag_indices(n)] += l2
        factor, info = dpotrf(M, lower=1, overwrite_a=1, clean=0)
        if info != 0:  # pragma: no cover - M's eigenvalues are at least l2 > 0
            status = "line_search"
            break
        K_u = K @ u
        if fit_intercept:
            solution, _ = dpotrs(factor, np.column_stack([-h * K_u, l2 * h]), lower=1)
            a, c = solution[:, 0], solution[:, 1]
            step_b = (-residual_sum - h @ a) / (h @ c)
            scaled = a + step_b * c
        else:
            solution, _ = dpotrs(factor, -h * K_u, lower=1)
            step_b, scaled = 0.0, solution
        step_alpha = -(u + h * scaled) / l2
        step_K_alpha = K @ step_alpha
        slope = float(K_u @ step_alpha + residual_sum * step_b)
        t, accepted = 1.0, False
        for _ in range(_MAX_HALVINGS):
            new_K_alpha = K_alpha + t * step_K_alpha
            new_alpha = alpha + t * step_alpha
            new_z = new_K_alpha + (intercept + t * step_b)
            new_objective = data_loss(new_z) + 0.5 * l2 * float(new_alpha @ new_K_alpha)
            rounding = _ROUNDING_UNITS * np.finfo(np.float64).eps * max(abs(objective), 1e-300)
            if new_objective <= objective + _ARMIJO * t * slope or (
                t == 1.0 and new_objective - objective <= rounding
            ):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            status = "line_search"
            break
        alpha, K_alpha, z = new_alpha, new_K_alpha, new_z
        intercept += t * step_b
        objective = new_objective
        iteration += 1
        if on_iteration is not None and on_iteration(iteration, objective, alpha, intercept):
            p = scipy.special.expit(z)
            r = weight * (p - target)
            gradient = _primal_gradient_max(X, r + l2 * alpha, float(r.sum()), fit_intercept,
                                            allowed)
            status = "stopped"
            break
    if not math.isfinite(objective):  # pragma: no cover - the line search only decreases J
        raise FloatingPointError("the Newton iterates overflowed")
    return dict(alpha=alpha, intercept=float(intercept), n_iter=iteration, loss=objective,
                gradient=gradient, status=status)
