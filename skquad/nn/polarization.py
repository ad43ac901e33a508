"""Read a quadratic function's ``(Q, w, b)``: from a layer's numpy state, or by polarization.

A quadratic neuron is ``x^T Q x + w^T x + b``. A full quadratic layer stores
``Q``; every other layer kind (Noel et al.'s reduced neuron ``(W a + b) *
(U a + c)``, a rank-2 quadric, with or without Fan et al.'s power term) is
rebuilt as its torch module and its quadratic form read off by polarization.

Used by :mod:`skquad.inspection` (the neurons of a fitted estimator) and
:mod:`skquad.export` (the ONNX graph of a quadratic layer): both read the same
math from here, below them, instead of from each other.

Polarization evaluates the function at ``1 + 2 d + d (d - 1) / 2`` points and is
exact for quadratic functions up to rounding; the result is checked against the
function at random points, so a function that is not quadratic is an error.
"""

import numpy as np
import torch

from .layers import layer_from_numpy_state

__all__ = ["layer_quadratic_forms", "quadratic_form_by_polarization"]

# Rows per call when a function is polarized (bounds memory for wide inputs).
_POLARIZATION_CHUNK = 8192


def quadratic_form_by_polarization(function, n_features, *, center=None, scale=None, check=True):
    """``(Q, w, b)`` of each output of a quadratic ``function``.

    Parameters
    ----------
    function : callable
        Maps an ``(n, d)`` float64 array to ``(n,)`` or ``(n, k)`` values.
    n_features : int
    center, scale : ndarray of shape (d,), default=None
        The points used are ``center + scale * t`` with ``t`` in
        ``{0, ±e_i, e_i + e_j}``: pick the data's scale for accuracy.
    check : bool, default=True
        Compare with ``function`` at random points; raise when it is not
        quadratic.

    Returns
    -------
    Q : ndarray of shape (k, d, d)
    w : ndarray of shape (k, d)
    b : ndarray of shape (k,)
    """
    d = int(n_features)
    center = np.zeros(d) if center is None else np.asarray(center, dtype=np.float64)
    scale = np.ones(d) if scale is None else np.asarray(scale, dtype=np.float64)
    rows, cols = np.triu_indices(d, k=1)
    # the points t: 0, e_i, -e_i, then e_i + e_j (i < j); built a block at a time
    first = np.concatenate([[-1], np.arange(d), np.arange(d), rows])
    second = np.concatenate([[-1], np.full(2 * d, -1), cols])
    signs = np.concatenate([[0.0], np.ones(d), -np.ones(d), np.ones(rows.size)])

    def steps(start, stop):
        T = np.zeros((stop - start, d))
        index = np.arange(stop - start)
        has_first = first[start:stop] >= 0
        T[index[has_first], first[start:stop][has_first]] = signs[start:stop][has_first]
        has_second = second[start:stop] >= 0
        T[index[has_second], second[start:stop][has_second]] = 1.0
        return T

    def evaluate(make_block, n_rows):
        pieces = []
        for start in range(0, n_rows, _POLARIZATION_CHUNK):
            T = make_block(start, min(start + _POLARIZATION_CHUNK, n_rows))
            values = np.asarray(function(center + T * scale))
            pieces.append(values.reshape(values.shape[0], -1).astype(np.float64))
        return np.concatenate(pieces)

    values = evaluate(steps, first.size)
    k = values.shape[1]
    f0, f_plus, f_minus, f_pair = values[0], values[1 : d + 1], values[d + 1 : 2 * d + 1], values[2 * d + 1 :]
    A = np.zeros((k, d, d))
    diagonal = 0.5 * (f_plus + f_minus) - f0  # (d, k)
    A[:, np.arange(d), np.arange(d)] = diagonal.T
    # f(e_i + e_j) = A_ii + A_jj + 2 A_ij + beta_i + beta_j + f0
    beta = 0.5 * (f_plus - f_minus)  # (d, k)
    off = 0.5 * (f_pair - diagonal[rows] - diagonal[cols] - beta[rows] - beta[cols] - f0)
    A[:, rows, cols] = off.T
    A[:, cols, rows] = off.T
    Q = A / np.outer(scale, scale)
    w = beta.T / scale - 2.0 * np.einsum("kij,j->ki", Q, center)
    b = f0 - np.einsum("i,kij,j->k", center, Q, center) - w @ center
    if check:
        # a local generator with a fixed seed: reproducible, no global RNG touched
        T = np.random.RandomState(0).standard_normal((min(64, 4 + 2 * d), d))
        expected = evaluate(lambda start, stop: T[start:stop], T.shape[0])
        X = center + T * scale
        got = np.einsum("ni,kij,nj->nk", X, Q, X) + X @ w.T + b
        tolerance = 1e-6 * (1.0 + np.max(np.abs(expected)))
        if not np.all(np.abs(got - expected) <= tolerance):
            raise ValueError(
                "The function is not a quadratic function of its input (largest "
                f"mismatch {np.max(np.abs(got - expected)):.3g}); its quadric cannot be read."
            )
    return Q, w, b


def layer_quadratic_forms(state):
    """``(Q, w, b)`` of every neuron of one quadratic layer, from its numpy state.

    Parameters
    ----------
    state : dict
        One entry of a network's ``layers_``
        (:func:`skquad.nn.layers.layer_to_numpy_state`), of a quadratic kind.

    Returns
    -------
    Q : ndarray of shape (n_out, d, d)
        Symmetric.
    w : ndarray of shape (n_out, d)
    b : ndarray of shape (n_out,)
    """
    if "quadratic" in state:
        Q = np.asarray(state["quadratic"], dtype=np.float64)
        w = np.asarray(state["weight"], dtype=np.float64)
        bias = state.get("bias")
        b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64)
        return 0.5 * (Q + Q.transpose(0, 2, 1)), w, b
    # the layer's own forward, in float64
    module = layer_from_numpy_state(state, device="cpu", dtype=torch.float64)
    n_in = state["options"]["in_features"]

    def forward(A):
        with torch.no_grad():
            return module(torch.as_tensor(A, dtype=torch.float64)).numpy()

    return quadratic_form_by_polarization(forward, n_in)
