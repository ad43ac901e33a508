"""The squared-loss SDP's sufficient statistics: all it reads of the rows.

With ``Φ_i = svec(L(x_i))`` (off-diagonal entries times √2, so that
``⟨A, B⟩ = svec(A)ᵀ svec(B)``) and weights summing to one, the relaxation's
scores are ``f_ik = 2 Φ_iᵀ d_k`` (``d_k = svec(P_k - N_k)``), so its objective
(``compact_solver``), its certificate
(:func:`~skquad.convex.statistics_dual_bound`), ``beta_max`` and the
second layer's refit (every neuron's output ``u_jᵀ L(x) v_j`` is ``Φᵀ
svec(sym(u_j v_jᵀ))``) read the rows only through::

    G = Σ w Φ Φᵀ (m x m),  B = Σ w Φ tᵀ (m x K),  T_k = Σ w t_k²,  μ = Σ w Φ,  τ = Σ w t,

``m = p (p + 1) / 2``. These are sums over rows: blocks of rows give theirs
(:meth:`LiftedStatistics.of_rows`) and they add up (``+``), whatever the
number of rows. Accumulation is in float64: relative to the sum of the terms'
magnitudes, each addition in sequence adds at most ``ε`` (a BLAS product over
a slice of rows, the slices of a block, the blocks a task adds, the reduction
tree's levels: :ref:`larger_than_memory`); the objective ``4 dᵀ G d - 4 bᵀ d + T``
cancels, so its absolute error is that relative error times ``T``.
"""

import dataclasses
import math

import numpy as np

__all__ = ["LiftedStatistics", "merge_moments", "neuron_svecs", "smat", "svec", "svec_indices", "svec_rows"]

# Rows per product while accumulating: the n x m lifted rows stay small.
_ROWS_PER_PRODUCT = 4096


def svec_indices(p):
    """Row and column indices of ``svec`` (Clarabel's order: upper triangle by columns)."""
    rows, cols = np.triu_indices(p)
    order = np.lexsort((rows, cols))
    return rows[order], cols[order]


def _scale(rows, cols):
    return np.where(rows == cols, 1.0, math.sqrt(2.0))


def svec(matrix, rows, cols):
    """The ``svec`` vector of a symmetric matrix."""
    return matrix[rows, cols] * _scale(rows, cols)


def smat(vector, p, rows, cols):
    """The symmetric matrix of an ``svec`` vector."""
    values = vector / _scale(rows, cols)
    matrix = np.zeros((p, p))
    matrix[rows, cols] = values
    matrix[cols, rows] = values
    return matrix


def svec_rows(Z, polynomial=None):
    """``Φ`` of shape (n_samples, m): ``svec(L(x_i))`` for the lifted features ``Z``, float64."""
    Z = np.asarray(Z, dtype=np.float64)
    if polynomial is not None:
        a, b, c = polynomial
        width = Z.shape[1]
        Z = np.column_stack([Z, np.ones(Z.shape[0])])
        pattern = np.full((width + 1, width + 1), a)
        pattern[:width, width] = pattern[width, :width] = 0.5 * b
        pattern[width, width] = c
    else:
        pattern = np.ones((Z.shape[1], Z.shape[1]))
    rows, cols = svec_indices(Z.shape[1])
    return Z[:, rows] * Z[:, cols] * (_scale(rows, cols) * pattern[rows, cols])


def neuron_svecs(U, V):
    """``svec(sym(u_j v_jᵀ))`` per neuron, shape (m, n_neurons): outputs ``H = Φ S``."""
    U, V = np.asarray(U, dtype=np.float64), np.asarray(V, dtype=np.float64)
    rows, cols = svec_indices(U.shape[1])
    products = 0.5 * (U[:, rows] * V[:, cols] + U[:, cols] * V[:, rows])
    return (products * _scale(rows, cols)).T


def merge_moments(*parts):
    """Merge ``(weight, weighted mean, squares about it, count)`` of row sets: Chan's exact update."""
    total, mean, squares, count = parts[0]
    for other_total, other_mean, other_squares, other_count in parts[1:]:
        merged = total + other_total
        if merged > 0:
            delta = other_mean - mean
            squares = squares + other_squares + delta**2 * (total * other_total / merged)
            mean = mean + delta * (other_total / merged)
        total, count = merged, count + other_count
    return total, mean, squares, count


@dataclasses.dataclass(frozen=True)
class LiftedStatistics:
    """Weighted sums over rows of the lifted inputs ``Φ_i = svec(L(x_i))`` and targets ``t_i``.

    What the squared-loss relaxation, its certificate, ``beta_max`` and the
    second layer's refit read of the rows; sums of blocks add up (``+``).

    Attributes
    ----------
    gram : ndarray of shape (m, m)
        ``Σ w Φ Φᵀ``, ``m = p (p + 1) / 2``.
    cross : ndarray of shape (m, n_outputs)
        ``Σ w Φ tᵀ``.
    target_square : ndarray of shape (n_outputs,)
        ``Σ w t_k²``.
    mean : ndarray of shape (m,)
        ``Σ w Φ``.
    target_mean : ndarray of shape (n_outputs,)
        ``Σ w t``.
    weight : float
        ``Σ w`` (1 once :meth:`normalized`).
    n_lifted : int
        ``p``.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.convex import InputLifting, LiftedStatistics
    >>> rng = np.random.default_rng(0)
    >>> X, y, w = rng.standard_normal((100, 2)), rng.standard_normal(100), np.ones(100)
    >>> Z = InputLifting().features(X)
    >>> first, second = (LiftedStatistics.of_rows(Z[s], y[s], w[s])
    ...                  for s in (slice(50), slice(50, None)))
    >>> bool(np.allclose((first + second).gram, LiftedStatistics.of_rows(Z, y, w).gram))
    True
    """

    gram: np.ndarray
    cross: np.ndarray
    target_square: np.ndarray
    mean: np.ndarray
    target_mean: np.ndarray
    weight: float
    n_lifted: int

    @classmethod
    def of_rows(cls, Z, targets, weight, polynomial=None):
        """The sums over rows of lifted features ``Z``, targets (n x K) and weights, in row slices."""
        targets = np.asarray(targets, dtype=np.float64).reshape(len(Z), -1)
        weight = np.asarray(weight, dtype=np.float64)
        p = Z.shape[1] + int(polynomial is not None)
        m, K = p * (p + 1) // 2, targets.shape[1]
        gram, cross, mean = np.zeros((m, m)), np.zeros((m, K)), np.zeros(m)
        for start in range(0, len(Z), _ROWS_PER_PRODUCT):
            part = slice(start, start + _ROWS_PER_PRODUCT)
            Phi = svec_rows(Z[part], polynomial)
            weighted = Phi * weight[part, None]
            gram += weighted.T @ Phi
            cross += weighted.T @ targets[part]
            mean += weighted.sum(axis=0)
        return cls(
            gram, cross, weight @ targets**2, mean, weight @ targets, float(weight.sum()), p
        )

    def __add__(self, other):
        fields = ("gram", "cross", "target_square", "mean", "target_mean", "weight")
        return dataclasses.replace(self, **{f: getattr(self, f) + getattr(other, f) for f in fields})

    @property
    def n_outputs(self):
        return self.cross.shape[1]

    def normalized(self):
        """The statistics of the weights divided by their total (the SDP's convention)."""
        return self.scaled(1.0, 1.0 / self.weight)

    def scaled(self, c, weight_factor=1.0):
        """The statistics of the targets ``t / c`` (and the weights times ``weight_factor``)."""
        w = weight_factor
        return dataclasses.replace(
            self, gram=self.gram * w, cross=self.cross * (w / c), mean=self.mean * w,
            target_square=self.target_square * (w / c**2), target_mean=self.target_mean * (w / c),
            weight=self.weight * w,
        )

    def shifted(self, offset):
        """The statistics of the targets ``t - offset``."""
        offset = np.asarray(offset, dtype=np.float64)
        return dataclasses.replace(
            self, cross=self.cross - np.outer(self.mean, offset),
            target_square=self.target_square - 2.0 * offset * self.target_mean
            + offset**2 * self.weight,
            target_mean=self.target_mean - offset * self.weight,
        )

    def less(self, theta):
        """The statistics of the targets ``t - Φ θ`` (``theta`` of shape (m, n_outputs))."""
        g_theta = self.gram @ theta
        return dataclasses.replace(
            self, cross=self.cross - g_theta,
            target_square=self.target_square - 2.0 * np.sum(theta * self.cross, axis=0)
            + np.sum(theta * g_theta, axis=0),
            target_mean=self.target_mean - self.mean @ theta,
        )

    def centred(self):
        """Normalized statistics of ``Φ - μ`` and ``t - τ`` (an unpenalised intercept)."""
        mean, target_mean = self.mean, self.target_mean
        return dataclasses.replace(
            self, gram=self.gram - np.outer(mean, mean),
            cross=self.cross - np.outer(mean, target_mean), mean=np.zeros_like(mean),
            target_square=self.target_square - target_mean**2,
            target_mean=np.zeros_like(target_mean),
        )

    def matrix(self, vector):
        """``Σ_i c_i L(x_i)`` of ``vector = Σ_i c_i Φ_i`` (p x p)."""
        return smat(vector, self.n_lifted, *svec_indices(self.n_lifted))

    def beta_max(self):
        """:func:`~skquad.convex.zero_network_beta` of the squared loss: ``max_k ||2 smat(b_k)||_2``
        (normalized statistics: ``l'(0) = -2 t``)."""
        return max(
            float(np.max(np.abs(np.linalg.eigvalsh(2.0 * self.matrix(self.cross[:, k])))))
            for k in range(self.n_outputs)
        )

    def loss(self, D):
        """``Σ_i w_i ||2 Φ_iᵀ D - t_i||²`` per output for ``D`` (m x K), from the sums."""
        return (
            4.0 * np.einsum("ik,ik->k", D, self.gram @ D)
            - 4.0 * np.einsum("ik,ik->k", self.cross, D) + self.target_square
        )
