"""Input liftings and network conversions of Bartan & Pilanci, section 2 and Appendix C.

Every network of the SDP path is a *bilinear* network on a lifted input::

    f(x) = sum_j alpha_j * u_j^T  L(x)  v_j,      u_j, v_j in {-1, +1}^p,

where ``L(x)`` is a symmetric ``p x p`` matrix built from ``x`` in three steps
(after an optional standardization ``x <- (x - center) / scale``):

1. ``fit_intercept``: append a constant input, ``z = [x, 1]``, so that each
   neuron ``(z^T u)(z^T v)`` has its own ±1 biases.
2. ``weight_levels = M``: replicate each input ``M`` times, ``z <- z ⊗ 1_M``
   (section 2.2). A sum of ``M`` binary weights is one weight in
   ``{-M, -M+2, ..., M}``, so a binary network on the replicated input is a
   multi-level network on the original one (:func:`collapse_replicas`).
3. ``activation``: ``"bilinear"`` uses ``L(x) = z z^T`` (the neuron is
   ``(z^T u)(z^T v)``); a degree-2 polynomial ``sigma(t) = a t^2 + b t + c``
   uses the lifting of sections 2.3-2.4,
   ``L(x) = [[a z z^T, (b/2) z], [(b/2) z^T, c]]``, with one extra ±1
   coordinate in ``u`` and ``v``; for ``u = v = [w; 1]`` the neuron is exactly
   ``sigma(z^T w)``.

:func:`export_quadratic_network` maps a bilinear network to a network of
``3 m`` quadratic-form neurons ``w^T L(x) w`` with ``w`` in ``{-1, 0, 1}^p``
(Appendix C, by the symmetrization identity
``2 u^T A v = (u + v)^T A (u + v) - u^T A u - v^T A v``).
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from .._foundation._runtime import separate_calls_blas

# Rows of a prediction batch are chosen so that the (rows x n_neurons)
# intermediate arrays of a network stay under this many bytes (the quantized
# estimators' predict and QuadraticNetwork.scores).
PREDICT_BATCH_BYTES = 64 * 2**20

__all__ = [
    "InputLifting",
    "QuadraticNetwork",
    "bilinear_network_scores",
    "collapse_replicas",
    "export_quadratic_network",
    "replicate_features",
]


def replicate_features(X, levels):
    """Replicate every column ``levels`` times: ``x ⊗ 1_M`` (Bartan & Pilanci, eq. 4).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    levels : int
        ``M``; weights on the replicated input sum to ``{-M, -M+2, ..., M}``.

    Returns
    -------
    X_replicated : ndarray of shape (n_samples, n_features * levels)
        Columns ``i*M, ..., i*M + M - 1`` are copies of column ``i``.
    """
    return np.repeat(np.asarray(X), levels, axis=1)


def collapse_replicas(weights, levels):
    """Sum the binary weights of each replicated input (Bartan & Pilanci, eq. 30).

    Parameters
    ----------
    weights : ndarray of shape (n_neurons, n_features * levels)
        Weights on the replicated input.
    levels : int

    Returns
    -------
    collapsed : ndarray of shape (n_neurons, n_features), int64
        ``q_i = sum_k w_{i*M + k}``: for ±1 weights, values in
        ``{-M, -M+2, ..., M}``; for the {-1, 0, 1} weights of an exported
        network, integers in ``[-M, M]``.
    """
    weights = np.asarray(weights)
    n_neurons, width = weights.shape
    if width % levels:
        raise ValueError(
            f"weights have {width} columns, not a multiple of levels={levels}."
        )
    return weights.reshape(n_neurons, width // levels, levels).sum(axis=2).astype(np.int64)


@dataclass(frozen=True)
class InputLifting:
    """The map ``x -> L(x)`` shared by the SDP, the sampled network and exports.

    Parameters
    ----------
    fit_intercept : bool
        Append a constant input 1 before replication.
    levels : int
        Replication factor ``M`` (1 = binary weights).
    activation : "bilinear" or tuple (a, b, c)
        ``"bilinear"``: ``L(x) = z z^T``. A tuple: the polynomial lifting of
        ``sigma(t) = a t^2 + b t + c``.
    center, scale : ndarray of shape (n_features,) or None
        When given, inputs are first standardized, ``(x - center) / scale``.
    """

    fit_intercept: bool = True
    levels: int = 1
    activation: object = "bilinear"
    center: object = None
    scale: object = None

    @property
    def polynomial(self):
        return not isinstance(self.activation, str)

    def standardized(self, X):
        """``(x - center) / scale``, or ``x`` without a standardization (float64)."""
        X = np.asarray(X, dtype=np.float64)
        return X if self.center is None else (X - self.center) / self.scale

    def features(self, X):
        """``z``: standardized, intercept column appended, replicated (float64)."""
        X = self.standardized(X)
        if self.fit_intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        if self.levels > 1:
            X = replicate_features(X, self.levels)
        return X

    def monomials(self, X):
        """Products ``w_a w_b`` (``a <= b``) of ``w = z`` (``[z, 1]`` when polynomial), shape (n, q).

        Every neuron's output ``u^T L(x) v`` (:meth:`bilinear`) is a linear
        combination of these columns, whatever ``u`` and ``v``: ``L(x)`` is
        ``z z^T``, or for a polynomial activation a fixed weighting of the
        entries of ``[z, 1] [z, 1]^T``. Replicas (``levels > 1``) are copies
        of a column, so ``w`` is built from the distinct columns only:
        ``q = k (k + 1) / 2`` with ``k`` the features, intercept and
        polynomial coordinate, whatever ``levels``.
        """
        W = dataclasses.replace(self, levels=1).features(X)
        if self.polynomial:
            W = np.hstack([W, np.ones((W.shape[0], 1))])
        rows, cols = np.triu_indices(W.shape[1])
        return W[:, rows] * W[:, cols]

    def n_lifted(self, n_features):
        """``p``, the length of the binary weight vectors ``u`` and ``v``."""
        width = (n_features + int(self.fit_intercept)) * self.levels
        return width + int(self.polynomial)

    def matrices(self, X):
        """The lifted inputs ``L(x_i)`` as an array of shape (n, p, p)."""
        Z = self.features(X)
        lifted = np.einsum("ni,nj->nij", Z, Z)
        if not self.polynomial:
            return lifted
        a, b, c = (float(v) for v in self.activation)
        n, width = Z.shape
        out = np.zeros((n, width + 1, width + 1))
        out[:, :width, :width] = a * lifted
        out[:, :width, width] = 0.5 * b * Z
        out[:, width, :width] = 0.5 * b * Z
        out[:, width, width] = c
        return out

    def inner(self, X, matrix):
        """``<L(x_i), matrix>`` for every sample, without forming ``L(x_i)``.

        Parameters
        ----------
        X : ndarray of shape (n_samples, n_features)
        matrix : ndarray of shape (p, p)

        Returns
        -------
        values : ndarray of shape (n_samples,)
        """
        Z = self.features(X)
        matrix = np.asarray(matrix, dtype=np.float64)
        if not self.polynomial:
            return np.einsum("ni,ij,nj->n", Z, matrix, Z)
        a, b, c = (float(v) for v in self.activation)
        core, column, row = matrix[:-1, :-1], matrix[:-1, -1], matrix[-1, :-1]
        quadratic = np.einsum("ni,ij,nj->n", Z, core, Z)
        return a * quadratic + 0.5 * b * (Z @ column + Z @ row) + c * matrix[-1, -1]

    def bilinear(self, X, U, V):
        """``u_j^T L(x_i) v_j`` for every sample and neuron, shape (n, m).

        Computed from the projections ``z^T u`` without forming ``L(x)``.
        """
        Z = self.features(X)
        U = np.asarray(U, dtype=np.float64)
        V = np.asarray(V, dtype=np.float64)
        # Two products with Python work after them: the runtime's separate-calls thread rule
        # (a second BLAS thread spins on after a call it joined, burning a core).
        with separate_calls_blas(4.0 * Z.shape[0] * Z.shape[1] * U.shape[0]):
            return self._bilinear(Z, U, V)

    def _bilinear(self, Z, U, V):
        if not self.polynomial:
            # In place: one n x m array fewer to allocate (and fault in), the same bytes.
            out = Z @ U.T
            out *= Z @ V.T
            return out
        a, b, c = (float(v) for v in self.activation)
        zu, zv = Z @ U[:, :-1].T, Z @ V[:, :-1].T
        u0, v0 = U[:, -1], V[:, -1]
        return a * zu * zv + 0.5 * b * (zu * v0 + zv * u0) + c * (u0 * v0)

    def quadratic(self, X, W):
        """``w_k^T L(x_i) w_k`` for every sample and neuron, shape (n, m)."""
        return self.bilinear(X, W, W)


def bilinear_network_scores(lifting, X, U, V, alpha):
    """Output of the bilinear network, ``sum_j alpha_j u_j^T L(x) v_j``.

    Parameters
    ----------
    lifting : InputLifting
    X : ndarray of shape (n_samples, n_features)
    U, V : ndarray of shape (n_neurons, p)
    alpha : ndarray of shape (n_neurons, n_outputs)

    Returns
    -------
    scores : ndarray of shape (n_samples, n_outputs)
    """
    return lifting.bilinear(X, U, V) @ np.asarray(alpha, dtype=np.float64)


@dataclass(frozen=True)
class QuadraticNetwork:
    """A network of quadratic-form neurons, ``f(x) = sum_k beta_k w_k^T L(x) w_k``.

    Attributes
    ----------
    weights : ndarray of shape (3 * n_neurons, p), int8 in {-1, 0, 1}
        First-layer weights on the lifted input (rows ``0..m-1`` are
        ``(u_j + v_j) / 2``, then ``u_j``, then ``v_j``).
    output_weights : ndarray of shape (3 * n_neurons, n_outputs)
        ``2 alpha_j`` for the first ``m`` neurons, ``-alpha_j / 2`` for the others.
    lifting : InputLifting
    intercept : ndarray of shape (n_outputs,) or None
        A constant added to every output (None: none).
    linear : ndarray of shape (n_outputs, n_features) or None
        A linear term ``x @ linear.T`` on the raw inputs added to the
        outputs (the regressors' ``linear_coef_``; None: none).
    """

    weights: np.ndarray
    output_weights: np.ndarray
    lifting: InputLifting
    intercept: np.ndarray = None
    linear: np.ndarray = None

    def scores(self, X):
        """Network output for raw inputs ``X``, shape (n_samples, n_outputs).

        Computed in row batches whose ``(rows, 3 n_neurons)`` intermediates take
        about ``PREDICT_BATCH_BYTES``, as ``predict`` does, so that memory does
        not grow with the rows.
        """
        X = np.asarray(X, dtype=np.float64)
        output_weights = np.asarray(self.output_weights, dtype=np.float64)
        n_neurons = max(1, self.weights.shape[0])
        rows = max(1, PREDICT_BATCH_BYTES // (3 * 8 * n_neurons))
        out = np.empty((X.shape[0],) + output_weights.shape[1:])
        for start in range(0, X.shape[0], rows):
            out[start : start + rows] = (
                self.lifting.quadratic(X[start : start + rows], self.weights) @ output_weights
            )
        if self.linear is not None:
            out = out + X @ np.asarray(self.linear, dtype=np.float64).T
        return out if self.intercept is None else out + self.intercept

    def integer_weights(self):
        """First-layer weights on the original inputs (replicas summed).

        Returns
        -------
        weights : ndarray of shape (3 * n_neurons, n_features), int64
            Integers in ``[-M, M]`` multiplying the original features.
        bias : ndarray of shape (3 * n_neurons,) or None
            Weight of the constant input (``fit_intercept=True``), else None.
        lifting_sign : ndarray of shape (3 * n_neurons,) or None
            For a polynomial activation, the neuron's last lifted coordinate
            ``s`` in {-1, 0, 1}: the neuron computes ``sigma(s * t)`` when
            ``s = ±1`` and ``a * t^2`` when ``s = 0``, with ``t`` the neuron's
            pre-activation. None for the bilinear activation, where every
            neuron computes ``t^2``.
        """
        weights = self.weights
        lifting_sign = None
        if self.lifting.polynomial:
            weights, lifting_sign = weights[:, :-1], weights[:, -1].astype(np.int64)
        collapsed = collapse_replicas(weights, self.lifting.levels)
        bias = None
        if self.lifting.fit_intercept:
            collapsed, bias = collapsed[:, :-1], collapsed[:, -1]
        return collapsed, bias, lifting_sign


def export_quadratic_network(U, V, alpha, lifting, intercept=None, linear=None):
    """Rewrite a bilinear network as ``3 m`` quadratic-form neurons (Appendix C).

    By ``2 u^T A v = (u + v)^T A (u + v) - u^T A u - v^T A v`` with
    ``w = (u + v) / 2``: ``u^T A v = 2 w^T A w - (u^T A u) / 2 - (v^T A v) / 2``.

    Parameters
    ----------
    U, V : ndarray of shape (n_neurons, p), entries ±1
    alpha : ndarray of shape (n_neurons, n_outputs)
    lifting : InputLifting
    intercept : ndarray of shape (n_outputs,), default=None
        The network's output intercept (None: none).
    linear : ndarray of shape (n_outputs, n_features), default=None
        A linear term on the raw inputs (None: none).

    Returns
    -------
    network : QuadraticNetwork
        Same output as the bilinear network for every input.
    """
    U = np.asarray(U, dtype=np.int8)
    V = np.asarray(V, dtype=np.int8)
    alpha = np.asarray(alpha, dtype=np.float64)
    middle = ((U.astype(np.int16) + V) // 2).astype(np.int8)
    weights = np.vstack([middle, U, V])
    output_weights = np.vstack([2.0 * alpha, -0.5 * alpha, -0.5 * alpha])
    if intercept is not None:
        intercept = np.asarray(intercept, dtype=np.float64).reshape(-1)
    return QuadraticNetwork(
        weights=weights, output_weights=output_weights, lifting=lifting, intercept=intercept,
        linear=linear
    )
