"""Sparse Q: the L1, elastic-net and row-group penalties of the quadratic linear models.

The quadratic part is ``xᵀQx = xᵀBx`` with ``Q = (B + Bᵀ) / 2``, so the
gradient of a loss in ``B`` is ``G = Xᵀ diag(u) X`` (``u``: the loss's
derivative in the scores): the degree-2 features are never formed. With
``"l1"``/``"elasticnet"``, ``B`` is upper triangular, its entries are the
coefficients of ``PolynomialFeatures(2)``'s columns (``x_a²`` and ``x_a x_b``)
and the penalty is scikit-learn's on them; with ``"group"`` ``B`` is full and
its rows are the groups (the latent overlapping group lasso of Jacob et al.,
2009), so ``Q``'s support is a union of whole rows and columns. The linear
coefficients take the entrywise penalty. FISTA with backtracking and adaptive
restarts, in the metric of the features' variances, solves the problem
(OWL-QN the classifier's entrywise penalties); both stop on the duality gap of
the Fenchel dual, as scikit-learn's Lasso, relative to the data term of the
zero model.
"""

import dataclasses

import numpy as np
from scipy.special import xlogy
from sklearn.exceptions import ConvergenceWarning

from .._foundation._lbfgs_compact import lbfgs_memory
from .._foundation._reporting import warn_user
from .._foundation._runtime import thread_count
from .._foundation._threads import limit_threads
from ..nn.quadratic_ridge import pairs_of

__all__ = ["SPARSE_PENALTIES", "LogisticLoss", "SparsePenalty", "SquaredLoss", "alpha_grid",
           "check_sparse_settings", "fista", "publish_interactions", "regression_path",
           "selected_pairs", "sparse_penalty", "sparse_start"]

SPARSE_PENALTIES = ("l1", "elasticnet", "group")
_GAP_EVERY = 10  # FISTA iterations between duality-gap tests (each costs a gradient)


class SquaredLoss:
    """``½ Σ c_i (z_i - y_i)²`` on one target (scikit-learn's Lasso: ``c = s / Σ s``)."""

    def __init__(self, y, c):
        self.y, self.c = np.asarray(y, dtype=np.float64).reshape(-1, 1), c[:, None]

    def evaluate(self, Z):
        residual = Z - self.y
        return 0.5 * float(np.sum(self.c * residual**2)), self.c * residual, residual

    def conjugate(self, residual, s):
        u = s * self.c * residual
        return float(np.sum(u**2 / (2 * self.c) + u * self.y))

    def curvature(self, residual):
        return np.array([[np.sum(self.c)]])


class LogisticLoss:
    """``Σ c_i ℓ_i``: the logistic (one score) or multinomial log-loss of encoded labels."""

    def __init__(self, y, c, n_scores):
        self.c, self.n_scores = c[:, None], n_scores
        self.onehot = np.eye(max(2, n_scores))[y]

    def evaluate(self, Z):
        full = np.hstack([np.zeros_like(Z), Z]) if self.n_scores == 1 else Z
        top = full.max(axis=1, keepdims=True)
        E = np.exp(full - top)
        total = E.sum(axis=1, keepdims=True)
        value = float(np.sum(self.c * (top + np.log(total) - np.sum(full * self.onehot, 1, keepdims=True))))
        P = E / total
        return value, (self.c * (P - self.onehot))[:, -self.n_scores:], P

    def conjugate(self, P, s):
        # negative entropy of the dual point's probabilities, y + s (p - y)
        return float(np.sum(self.c * xlogy(*(2 * [self.onehot + s * (P - self.onehot)]))))

    def curvature(self, P):
        """The Hessian of the loss in the intercepts (singular for the full multinomial)."""
        P = P[:, -self.n_scores:]
        return np.diag(np.sum(self.c * P, 0)) - P.T @ (self.c * P)


@dataclasses.dataclass
class SparsePenalty:
    """``l1 (Σ|B| or Σ_a ||B_a||₂ + Σ|w|) + l2 / 2 (||B||² + ||w||²)`` on ``B``'s ``mask``."""

    l1: float
    l2: float
    group: bool
    mask: np.ndarray

    def norms(self, B, w):
        """The penalty's group norms: ``|B|`` entrywise (or ``B``'s row norms) and ``|w|``."""
        rows = np.linalg.norm(B, axis=2) if self.group else np.abs(B)
        return np.concatenate([rows.ravel(), np.abs(w).ravel()])

    def value(self, B, w):
        return self.l1 * self.norms(B, w).sum() + 0.5 * self.l2 * (np.sum(B**2) + np.sum(w**2))

    def prox(self, B, w, step_B, step_w):
        """The proximal step of lengths ``step_B`` (per entry; per row: groups) and ``step_w``."""
        threshold = step_B * self.l1
        w = np.sign(w) * np.maximum(np.abs(w) - step_w * self.l1, 0.0)
        if self.group:
            norm = np.linalg.norm(B, axis=2, keepdims=True)
            B = B * np.maximum(1.0 - threshold[..., :1] / np.maximum(norm, 1e-300), 0.0)
        else:
            B = np.sign(B) * np.maximum(np.abs(B) - threshold, 0.0)
        return B * self.mask, w


def check_sparse_settings(estimator, unsupported):
    """Refuse what the proximal solver does not do: Dask, SGD, partial_fit, ``rank``; ``l1_ratio``."""
    name, penalty = type(estimator).__name__, estimator.penalty
    if unsupported or getattr(estimator, "rank", None) is not None:
        raise ValueError(
            f"penalty={penalty!r} is solved by {name}'s proximal gradient solver on in-memory "
            "data with a full Q: not with solver='sgd', partial_fit, rank or Dask collections."
        )
    if penalty == "elasticnet" and estimator.l1_ratio is None:
        raise ValueError("penalty='elasticnet' needs l1_ratio, a number in [0, 1].")


def sparse_penalty(kind, l1_ratio, strength, allowed, n_features):
    """:class:`SparsePenalty` of ``penalty=kind`` at ``strength`` (``l1_ratio`` None: 1)."""
    ratio = 1.0 if l1_ratio is None or kind == "l1" else float(l1_ratio)
    mask = np.ones((n_features, n_features), bool) if allowed is None else allowed.copy()
    if kind != "group":
        mask = np.triu(mask)
    return SparsePenalty(strength * ratio, strength * (1.0 - ratio), kind == "group", mask)


def sparse_start(previous, penalty, n_scores, n_features):
    """``(B, w, b)`` continuing ``previous`` (a fitted ``Q``, ``coef``, ``intercept``), else zeros."""
    if previous is None:
        return np.zeros((n_scores, n_features, n_features)), np.zeros((n_scores, n_features)), \
            np.zeros(n_scores)
    Q = np.asarray(previous["Q"], dtype=np.float64).reshape(n_scores, n_features, n_features)
    B = Q if penalty.group else 2 * np.triu(Q) - Q * np.eye(n_features)
    return B * penalty.mask, previous["coef"].reshape(n_scores, -1), previous["intercept"]


def _model(X, B, w, b):
    """Scores ``(n, K)`` of ``xᵀB_k x + w_kᵀx + b_k``."""
    quadratic = np.stack([np.einsum("ij,ij->i", X @ Bk, X) for Bk in B], axis=1)
    return quadratic + X @ w.T + b


def _gradient(X, U, mask):
    """The data term's gradient in ``B`` (``Xᵀ diag(u_k) X`` on the mask) and ``w``."""
    G = np.stack([X.T @ (U[:, [k]] * X) for k in range(U.shape[1])]) * mask
    return G, U.T @ X


def _gap(X, loss, penalty, params, value0, free_intercept):
    """Re-solve the intercepts (the dual's ``Σu = 0``); the duality gap, objective and params."""
    B, w, b = params
    Z = _model(X, B, w, b)
    for _ in range(20):  # Newton on the unpenalised intercepts, steps at most 1 where saturated
        value, U, state = loss.evaluate(Z)
        if not free_intercept or np.max(np.abs(U.sum(0))) <= 1e-13 * max(value0, 1.0):
            break
        step = -np.linalg.lstsq(loss.curvature(state), U.sum(0), rcond=None)[0]
        step /= max(1.0, np.abs(step).max())
        b, Z = b + step, Z + step
    dual_norms = penalty.norms(*_gradient(X, U, penalty.mask))  # of the dual point -Aᵀu
    primal = value + penalty.value(B, w)
    if penalty.l2 > 0:
        excess = np.maximum(dual_norms - penalty.l1, 0.0)
        gap = primal + loss.conjugate(state, 1.0) + np.sum(excess**2) / (2 * penalty.l2)
    else:  # scale u into the dual's feasible set
        gap = primal + loss.conjugate(state, min(1.0, penalty.l1 / max(dual_norms.max(), 1e-300)))
    if free_intercept and np.max(np.abs(U.sum(0))) > 1e-8 * max(value0, 1.0):
        gap = np.inf  # the dual point is not feasible: no bound
    return gap, primal, (B, w, b)


def _metric(X, weight, penalty, fit_intercept):
    """FISTA's diagonal metric: the weighted variances of the (centred) ``x_a x_b`` and ``x_a``, plus
    ``l2``, 1 for the intercepts: the Hessian's diagonal up to the loss's curvature, so that each
    feature steps by its own curvature (with groups, each row of ``B`` by its largest)."""
    squares = X * X
    moments = X.T @ (weight * X)
    variance_B = squares.T @ (weight * squares) - fit_intercept * moments**2
    variance_w = np.diag(moments) - fit_intercept * (weight.T @ X).ravel() ** 2
    if penalty.group:
        variance_B = np.broadcast_to(np.max(variance_B * penalty.mask, axis=1, keepdims=True),
                                     variance_B.shape)
    floor = 1e-8 * max(variance_B.max(), variance_w.max(), 1e-300)
    return (np.maximum(variance_B, floor) + penalty.l2, np.maximum(variance_w, floor) + penalty.l2,
            1.0)


def fista(X, loss, penalty, start, *, fit_intercept, tol, max_iter, lipschitz=1.0):
    """Minimise ``loss(scores) + penalty`` from ``start = (B, w, b)`` by FISTA.

    With an intercept FISTA moves the intercept of the centred degree-2
    features (``b + Σ c_i f(x_i)``, ``f`` the scores without it), as
    scikit-learn's Lasso centres its columns: the same optimum, without the
    columns' means, whose direction holds most of the curvature of
    uncentred data. Returns ``((B, w, b), n_iter, objective, gap,
    lipschitz)``; warns when ``max_iter`` iterations leave a gap above
    ``tol`` times the zero model's data term.
    """
    value0 = loss.evaluate(np.zeros((X.shape[0], len(start[0]))))[0]
    dot = lambda a, c: sum(float(np.sum(x * y)) for x, y in zip(a, c))
    weight = loss.c / np.sum(loss.c)
    metric = _metric(X, weight, penalty, fit_intercept)
    norm = lambda a: dot(a, [m * x for m, x in zip(metric, a)])  # squared, in the metric
    mean = lambda Z: (weight.T @ Z) * fit_intercept  # (1, K): the scores' weighted mean
    shift = lambda params, sign: (*params[:2], params[2] + sign * mean(
        _model(X, *params[:2], 0.0)).ravel())

    def smooth(params, gradient=True):
        B, w, b = params
        Z = _model(X, B, w, 0.0)
        value, U, _ = loss.evaluate(Z - mean(Z) + b)
        value += 0.5 * penalty.l2 * (np.sum(B**2) + np.sum(w**2))
        if not gradient:
            return value
        G, gw = _gradient(X, U - U.sum(0) * weight * fit_intercept, penalty.mask)
        return value, (G + penalty.l2 * B, gw + penalty.l2 * w, U.sum(0) * fit_intercept)

    def prox(params, grad, lipschitz):  # the step 1 / (lipschitz metric)
        step = [1.0 / (lipschitz * m) for m in metric]
        B, w = penalty.prox(params[0] - step[0] * grad[0], params[1] - step[1] * grad[1], *step[:2])
        return B, w, params[2] - step[2] * grad[2]

    point = tuple(np.array(a, dtype=np.float64) for a in start)
    gap, objective, point = _gap(X, loss, penalty, point, value0, fit_intercept)
    point = shift(point, 1)
    momentum, t, n_iter = point, 1.0, 0
    while gap > tol * value0 and n_iter < max_iter:
        n_iter += 1
        f, grad = smooth(momentum)
        lipschitz *= 0.8  # let the step grow back where the curvature falls
        while True:  # backtracking on the local Lipschitz constant
            new = prox(momentum, grad, lipschitz)
            diff = [a - c for a, c in zip(new, momentum)]
            bound = f + dot(grad, diff) + 0.5 * lipschitz * norm(diff)
            with np.errstate(over="ignore", invalid="ignore"):  # a step too long: backtrack
                value = smooth(new, gradient=False)
            if value <= bound and np.isfinite(bound):
                break
            if abs(value - f) <= 1e-10 * abs(f):  # rounding hides the test: take it on gradients
                change = [a - c for a, c in zip(smooth(new)[1], grad)]
                if dot(change, diff) <= 0.5 * lipschitz * norm(diff):
                    break
            lipschitz *= 2.0
        if dot([m * x for m, x in zip(metric, diff)], [a - c for a, c in zip(new, point)]) > 0:
            # restart (O'Donoghue & Candès), in the metric
            t = 1.0
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        momentum = tuple(a + (t - 1.0) / t_next * (a - c) for a, c in zip(new, point))
        point, t = new, t_next
        if n_iter % _GAP_EVERY == 0 or n_iter == max_iter:
            shifted = point[2]
            gap, objective, point = _gap(X, loss, penalty, shift(point, -1), value0, fit_intercept)
            point = shift(point, 1)
            momentum = (*momentum[:2], momentum[2] + point[2] - shifted)
    if gap > tol * value0:
        warn_user(f"The proximal gradient solver did not converge after {n_iter} iteration(s): "
                  f"duality gap {gap:.3g} > tol * {value0:.3g}. Increase max_iter or tol, or "
                  "standardise the features.", ConvergenceWarning)
    return shift(point, -1), n_iter, objective, gap, lipschitz


def owlqn(X, loss, penalty, start, *, fit_intercept, tol, max_iter, memory_size=20):
    """Minimise ``loss(scores) + penalty`` (entrywise, not ``group``) by OWL-QN.

    Andrew and Gao's orthant-wise L-BFGS (2007): L-BFGS pairs of the smooth
    part's gradients, applied to the penalty's pseudo-gradient, the step kept
    in the orthant of the current point and projected back on it, with an
    Armijo backtracking on the whole objective. Its curvature model converges
    where FISTA's single step length crawls (ill-conditioned or multiclass
    problems, weak penalties). The initial matrix is FISTA's diagonal metric
    (:func:`_metric`); the stopping rule is FISTA's duality gap. Where no
    step decreases the objective even without pairs (the orthant projection
    stalls on badly scaled features), FISTA goes on from the point reached.
    Returns :func:`fista`'s tuple.
    """
    value0 = loss.evaluate(np.zeros((X.shape[0], len(start[0]))))[0]
    n_scores, d = np.shape(start[1])
    rows, cols = np.nonzero(penalty.mask)
    sizes = np.cumsum([n_scores * rows.size, n_scores * d])
    pack = lambda B, w, b: np.concatenate([B[:, rows, cols].ravel(), np.ravel(w), np.ravel(b)])

    def unpack(x):
        B = np.zeros((n_scores, d, d))
        B[:, rows, cols] = x[: sizes[0]].reshape(n_scores, -1)
        return B, x[sizes[0] : sizes[1]].reshape(n_scores, d), x[sizes[1] :]

    l1 = np.where(np.arange(sizes[1] + n_scores) < sizes[1], penalty.l1, 0.0)

    def evaluate(x):
        B, w, b = unpack(x)
        value, U, _ = loss.evaluate(_model(X, B, w, b))
        G, gw = _gradient(X, U, penalty.mask)
        gradient = pack(G, gw, U.sum(0) * fit_intercept) + penalty.l2 * x * (l1 > 0)
        return value + 0.5 * penalty.l2 * float(x[l1 > 0] @ x[l1 > 0]) + l1 @ np.abs(x), gradient

    def pseudo_gradient(x, g):  # the steepest descent's negative on the penalised objective
        down, up = g - l1, g + l1
        return np.where(x > 0, up, np.where(x < 0, down, np.where(up < 0, up, np.maximum(down, 0))))

    metric = _metric(X, loss.c / np.sum(loss.c), penalty, fit_intercept)
    memory = lbfgs_memory(memory_size, sizes[1] + n_scores, 1.0 / pack(
        np.broadcast_to(metric[0], (n_scores, d, d)), np.broadcast_to(metric[1], (n_scores, d)),
        np.ones(n_scores)))
    gap, objective, point = _gap(X, loss, penalty, start, value0, fit_intercept)
    x = pack(*point)
    value, g = evaluate(x)
    n_iter = 0
    while gap > tol * value0 and n_iter < max_iter:
        n_iter += 1
        pg = pseudo_gradient(x, g)
        direction = memory.direction(pg)
        direction[direction * pg >= 0] = 0.0  # within the orthant the pseudo-gradient descends
        orthant = np.where(x != 0, np.sign(x), -np.sign(pg))
        step = 1.0
        while step > 1e-12:
            trial = x + step * direction
            trial[(np.sign(trial) != orthant) & (l1 > 0)] = 0.0
            trial_value, trial_g = evaluate(trial)
            if trial_value <= value + 1e-4 * float(pg @ (trial - x)):
                break
            step *= 0.5
        if not trial_value < value:  # no decrease: forget the pairs; without any, FISTA goes on
            if not memory.order:
                point, steps, *rest = fista(X, loss, penalty, unpack(x), tol=tol,
                                            fit_intercept=fit_intercept, max_iter=max_iter - n_iter)
                return point, n_iter + steps, *rest
            memory.clear()
            continue
        memory.add(trial - x, trial_g - g)
        x, value, g = trial, trial_value, trial_g
        if n_iter % _GAP_EVERY == 0 or n_iter == max_iter:
            gap, objective, point = _gap(X, loss, penalty, unpack(x), value0, fit_intercept)
            x = pack(*point)
            value, g = evaluate(x)
    if gap > tol * value0:
        warn_user(f"The proximal solver did not converge after {n_iter} iteration(s): "
                  f"duality gap {gap:.3g} > tol * {value0:.3g}. Increase max_iter or tol, or "
                  "standardise the features.", ConvergenceWarning)
    return point, n_iter, objective, gap, None


def selected_pairs(Q):
    """The pairs ``a < b`` (``(k, 2)``) with a nonzero ``Q_ab`` for some output of ``Q``."""
    Q = np.asarray(Q).reshape(-1, *np.shape(Q)[-2:])
    return np.argwhere(np.triu(np.any(Q != 0, axis=0), 1))


def publish_interactions(estimator):
    """``interactions_`` (:func:`selected_pairs` of ``Q_``) and their count."""
    estimator.interactions_ = selected_pairs(estimator.Q_)
    estimator.n_interactions_ = int(estimator.interactions_.shape[0])


def regression_path(X, Y, sample_weight, alphas, penalty, l1_ratio, allowed, *, fit_intercept,
                    tol, max_iter):
    """Lasso's objective ``½ Σ c_i (y_i - f(x_i))² + penalty`` (``c = s / Σ s``) at each ``alpha``.

    Yields ``(coefficients (D, n_targets), intercepts, n_iter)`` per alpha in the order
    given, each fit warm-started from the previous one (the path from ``alpha_max`` down).
    """
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    c, d = sample_weight / sample_weight.sum(), X.shape[1]
    rows, cols = pairs_of(d, allowed)
    starts = [None] * Y.shape[1]
    threads = thread_count("auto", "cpu", 6.0 * X.shape[0] * d * d)  # a step's products
    for alpha in alphas:
        rule = sparse_penalty(penalty, l1_ratio, float(alpha), allowed, d)
        coefficients, intercepts, n_iter = [], [], []
        for t in range(Y.shape[1]):
            start = starts[t] or sparse_start(None, rule, 1, d)
            with limit_threads(None, blas=threads):  # the policy's BLAS threads for its steps
                starts[t], steps, *_ = fista(X, SquaredLoss(Y[:, t], c), rule, start,
                                             fit_intercept=fit_intercept, tol=tol,
                                             max_iter=max_iter)
            B, w, b = starts[t]
            theta = np.triu(B[0] + B[0].T) - np.diag(np.diag(B[0]))
            coefficients.append(np.concatenate([w[0], theta[rows, cols]]))
            intercepts.append(b[0])
            n_iter.append(steps)
        yield np.array(coefficients).T, np.array(intercepts), np.array(n_iter)


def alpha_grid(X, Y, sample_weight, penalty, l1_ratio, allowed, n_alphas, eps=1e-3):
    """ElasticNetCV's grid: ``n_alphas`` log-spaced from ``alpha_max`` down to ``eps`` of it.

    ``alpha_max``, the smallest ``alpha`` whose model is zero, is the largest
    dual norm of the zero model's gradient (of the centred targets) over
    ``l1_ratio``: ``Xᵀ diag(r) X`` gives it on every degree-2 feature at once.
    """
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    c = sample_weight / sample_weight.sum()
    R = c[:, None] * (Y - c @ Y)
    rule = sparse_penalty(penalty, l1_ratio, 1.0, allowed, X.shape[1])
    largest = max(rule.norms(*_gradient(X, R[:, [t]], rule.mask)).max() for t in range(Y.shape[1]))
    alpha_max = max(largest, 1e-12) / max(rule.l1, 1e-3)
    return np.geomspace(alpha_max, alpha_max * eps, n_alphas)
