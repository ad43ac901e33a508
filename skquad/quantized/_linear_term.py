"""The quantized networks' linear term: ridge on the inputs, its penalty by generalized cross-validation.

A ±1 first layer cannot isolate one input: every neuron's linear part weighs
all inputs by ±1, so a target that is mostly linear costs the network as
much penalty as a quadratic one and is fitted poorly on few rows. The
regressors, and SDPQuantizedClassifier with the squared loss (on its ±1
labels), therefore fit ``t ≈ x·w + b`` first, by ridge with its penalty
chosen by generalized cross-validation (Golub, Heath & Wahba, 1979), and
the network on the residuals. The ridge reads the rows only through their
weighted sums (:class:`LinearSums`), from the rows in memory or from the
lifted statistics of a Dask fit, so both choose the same penalty.
"""

import dataclasses
import math

import numpy as np

__all__ = [
    "RELATIVE_ALPHAS", "LinearSums", "linear_coordinates", "ridge_by_gcv", "ridge_by_leave_one_out",
    "rows_less_linear_term",
    "statistics_less_linear_term", "LinearTermMixin",
]

# Ridge penalties relative to the trace of the inputs' (centred, weighted) Gram:
# the same grid whatever their scale and number, up to a penalty that leaves no fit.
RELATIVE_ALPHAS = np.logspace(-8, 1, 19)


@dataclasses.dataclass(frozen=True)
class LinearSums:
    """Weighted moments of inputs ``x`` (d) and targets ``t`` (k): the total weight
    ``W``, the means, and the sums ``Σw x xᵀ``, ``Σw x tᵀ``, ``Σw t²`` (per output)
    about the means."""

    weight: float
    mean: np.ndarray
    target_mean: np.ndarray
    gram: np.ndarray
    cross: np.ndarray
    energy: np.ndarray

    @classmethod
    def of_rows(cls, X, T, weight):
        """From the rows, centred first (a constant target then has no linear part, exactly)."""
        w = np.asarray(weight, dtype=np.float64)
        X, T = np.asarray(X, dtype=np.float64), np.asarray(T, dtype=np.float64).reshape(len(X), -1)
        W = float(w.sum())
        mean, target_mean = w @ X / W, w @ T / W
        Xw = (X - mean) * w[:, None]
        T = T - target_mean
        return cls(W, mean, target_mean, Xw.T @ (X - mean), Xw.T @ T, w @ T**2)

    @classmethod
    def of_sums(cls, W, x, t, xx, xt, tt):
        """From the raw sums ``Σw x``, ``Σw t``, ``Σw x xᵀ``, ``Σw x tᵀ``, ``Σw t²``."""
        mean, target_mean = x / W, t / W
        return cls(W, mean, target_mean, xx - W * np.outer(mean, mean),
                   xt - W * np.outer(mean, target_mean), tt - W * target_mean**2)


def ridge_by_gcv(sums, *, n_samples):
    """``(coef (k, d), intercept (k,), alpha (k,))``: per output, the ridge on the
    inputs, with an unpenalised intercept, whose penalty (on
    :data:`RELATIVE_ALPHAS`) minimizes the GCV score ``n RSS / (n - 1 - df)^2``,
    ``df`` the ridge's effective degrees of freedom and ``n`` the number of
    samples (the total ``sample_weight``: integer weights count as repeated rows).
    ``alpha`` is :class:`~sklearn.linear_model.Ridge`'s on those ``n`` rows.
    """
    s, V = np.linalg.eigh(0.5 * (sums.gram + sums.gram.T))
    s = np.clip(s, 0.0, None)
    projected = V.T @ sums.cross  # (d, k)
    alphas = max(float(s.sum()), np.finfo(float).tiny) * RELATIVE_ALPHAS
    shrunk = s / (s + alphas[:, None])  # (a, d)
    # RSS(alpha) = energy - sum_j q_j^2 (2 - s_j / (s_j + alpha)) / (s_j + alpha).
    rss = np.clip(sums.energy - ((2.0 - shrunk) / (s + alphas[:, None])) @ projected**2, 0.0, None)
    free = n_samples - 1.0 - shrunk.sum(axis=1)
    # Rows of total weight W stand for n_samples rows: GCV's n RSS / (n - df)^2 up to a constant.
    gcv = np.where(free[:, None] > 0, rss / np.maximum(free, 1e-300)[:, None] ** 2, np.inf)
    # No penalty leaves degrees of freedom (a row or two): the strongest.
    best = np.where(np.isfinite(gcv).any(axis=0), np.argmin(gcv, axis=0), len(alphas) - 1)
    alpha = alphas[best]
    coef = (V @ (projected / (s[:, None] + alpha))).T
    # Reported as Ridge's alpha on the rows counted as n_samples, whatever the weights' scale
    # (the SDP estimators normalize theirs to sum to one).
    return coef, sums.target_mean - coef @ sums.mean, alpha * (n_samples / sums.weight)


def ridge_by_leave_one_out(H, T, weight, alphas):
    """``(coef (k, m), intercept (k,), alpha)``: ridge of ``T`` on ``H`` with an unpenalised
    intercept, its penalty (one of ``alphas``, shared by the outputs) minimizing the
    weighted leave-one-out error, as :class:`~sklearn.linear_model.RidgeCV` chooses it.

    One eigendecomposition of the smaller Gram (``m x m`` or ``n x n``) serves every
    penalty: the fit and the leverages ``h_i`` come from it in ``O(n m k)`` per
    penalty, and the error is the mean of ``(√w_i r_i / (1 - h_i))²`` (RidgeCV's
    ``O(n m²)`` per penalty when ``n > m``). ``H`` is overwritten when it is float64.
    """
    w = np.asarray(weight, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64).reshape(len(H), -1)
    W = float(w.sum())
    mean, target_mean = w @ H / W, w @ T / W
    root = np.sqrt(w)[:, None]
    H -= mean
    H *= root  # the rows of the weighted, centred problem
    targets = (T - target_mean) * root
    if H.shape[0] >= H.shape[1]:
        s, V = np.linalg.eigh(H.T @ H)
        U = H @ V
    else:
        s, P = np.linalg.eigh(H @ H.T)
        U = P * np.sqrt(np.clip(s, 0.0, None))
    s = np.clip(s, 0.0, None)
    projected, squares = U.T @ targets, U * U
    errors = np.full(len(alphas), np.inf)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # h_i = 1: no estimate
        for i, alpha in enumerate(alphas):
            shrink = 1.0 / (s + alpha)
            residual = targets - U @ (projected * shrink[:, None])
            leverage = squares @ shrink + w / W
            errors[i] = np.mean((residual / (1.0 - leverage)[:, None]) ** 2)
    # No finite estimate (every penalty interpolates): the strongest.
    alpha = alphas[int(np.argmin(np.where(np.isfinite(errors), errors, np.inf)))
                   if np.isfinite(errors).any() else len(alphas) - 1]
    if H.shape[0] >= H.shape[1]:
        coef = V @ (projected / (s + alpha)[:, None])
    else:
        coef = H.T @ (P @ ((P.T @ targets) / (s + alpha)[:, None]))
    return coef.T, target_mean - mean @ coef, alpha


def linear_coordinates(lifting, n_features):
    """``(x_index, x_factor, one_index, one_factor)``: where the inputs and the
    constant sit in ``Φ = svec(L(x))`` (:func:`~skquad.convex.statistics.svec_rows`),
    ``Φ[x_index] = x_factor * x`` and ``Φ[one_index] = one_factor``, or None
    where the lifting has no such coordinates (no constant input)."""
    from ..convex.statistics import svec_indices

    if not lifting.fit_intercept:
        return None
    levels, p = lifting.levels, lifting.n_lifted(n_features)
    weight = 1.0 if not lifting.polynomial else float(lifting.activation[0])
    if weight == 0.0:
        return None
    rows, cols = svec_indices(p)
    position = {(int(r), int(c)): j for j, (r, c) in enumerate(zip(rows, cols))}
    one = n_features * levels  # the first replica of the constant input
    x_index = np.array([position[(i * levels, one)] for i in range(n_features)])
    return x_index, math.sqrt(2.0) * weight, position[(one, one)], weight


def rows_less_linear_term(Z, targets, weight, *, n_samples):
    """``(targets - Z w - b, w, b, alpha)`` for the ridge of :func:`ridge_by_gcv` on inputs ``Z``."""
    T = np.asarray(targets, dtype=np.float64)
    # Solved for T / c (c its largest magnitude, so that no square leaves float64) and
    # mapped back: the ridge is linear in the targets and GCV's choice does not move.
    c = float(np.max(np.abs(T), initial=0.0)) or 1.0
    coef, intercept, alpha = ridge_by_gcv(LinearSums.of_rows(Z, T / c, weight), n_samples=n_samples)
    coef, intercept = coef * c, intercept * c
    residual = T.reshape(len(Z), -1) - Z @ coef.T - intercept
    return residual.reshape(T.shape), coef, intercept, alpha


def statistics_less_linear_term(statistics, lifting, n_features, *, n_samples):
    """:func:`rows_less_linear_term` on lifted statistics (of the standardized inputs):
    ``(statistics of t - Φ θ, w, b, alpha)``, ``Φ θ = x·w + b``."""
    coordinates = linear_coordinates(lifting, n_features)
    if coordinates is None:
        raise ValueError(
            "The linear term (linear_term=True) is fitted on Dask collections from the lifted "
            "statistics, which hold the inputs linearly only through the constant input's "
            "products: use an activation with a nonzero quadratic coefficient, or linear_term=False."
        )
    x_index, x_factor, one_index, one_factor = coordinates
    sums = LinearSums.of_sums(
        statistics.weight, statistics.mean[x_index] / x_factor, statistics.target_mean,
        statistics.gram[np.ix_(x_index, x_index)] / x_factor**2,
        statistics.cross[x_index] / x_factor, statistics.target_square,
    )
    coef, intercept, alpha = ridge_by_gcv(sums, n_samples=n_samples)
    theta = np.zeros((statistics.gram.shape[0], len(intercept)))
    theta[x_index], theta[one_index] = coef.T / x_factor, intercept / one_factor
    return statistics.less(theta), coef, intercept, alpha


class LinearTermMixin:
    """``linear_coef_`` and ``linear_alpha_`` of a quantized network, and its scores.

    The term is fitted on the standardized inputs ``(x - feature_mean_) /
    feature_scale_`` and published on the original ones; its constant goes
    to the estimator's own offset.
    """

    def _unmasked_squared_loss(self):
        """Whether the model fits the squared loss on scores that cannot mask a class: a
        regressor's outputs, or a binary classifier's one score. Three or more classes' one-vs-rest
        squared scores can mask one, and a linear term on them (``"auto"``) would too."""
        return getattr(self, "loss", "squared") == "squared" and len(getattr(self, "classes_", ())) <= 2

    def _fits_linear_term(self):
        """The rule: a term where ``fit_intercept`` and ``linear_term`` is True, or "auto" with
        :meth:`_unmasked_squared_loss`. Only the squared loss fits the network to the term's
        residuals: the hinge and logistic losses' relaxations carry no offset per row, so True is
        refused with them."""
        term, loss = getattr(self, "linear_term", False), getattr(self, "loss", "squared")
        if isinstance(term, str):  # "auto"
            term = self._unmasked_squared_loss()
        elif term and loss != "squared":
            raise ValueError(
                f"linear_term=True needs loss='squared' (the network is fitted to the term's "
                f"residuals, which only the squared loss takes), got loss={loss!r}. Use "
                f"linear_term='auto' or False with this loss."
            )
        return bool(term and self.fit_intercept)

    def _forget_linear_term(self):
        for name in ("linear_coef_", "linear_alpha_"):
            vars(self).pop(name, None)

    def _publish_linear_term(self, coef, alpha):
        """Set ``linear_coef_`` (on the original inputs) from the standardized inputs'
        ``coef``; returns the constant ``linear_coef_ @ feature_mean_`` it moves."""
        scale = 1.0 if self.feature_scale_ is None else self.feature_scale_
        self.linear_coef_, self.linear_alpha_ = coef / scale, alpha
        return self._linear_shift()

    def _linear_shift(self):
        """``linear_coef_ @ feature_mean_``: the standardized term is ``X linear_coef_ᵀ`` less it."""
        return 0.0 if self.feature_mean_ is None else self.linear_coef_ @ self.feature_mean_

    def _with_linear_term(self, scores, X):
        """``scores + X @ linear_coef_ᵀ`` in the scores' dtype."""
        return (scores + self._linear_scores(X)).astype(scores.dtype, copy=False)

    def _linear_scores(self, X):
        """``X @ linear_coef_ᵀ`` (the linear term less its constant, in ``intercept_``), or 0."""
        coef = getattr(self, "linear_coef_", None)
        # C order: the product's summation order, hence its last bits, then follows neither the
        # container (a DataFrame's columns come F-ordered) nor its memory layout.
        return 0.0 if coef is None else np.ascontiguousarray(X, dtype=np.float64) @ coef.T
