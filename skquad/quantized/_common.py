"""Validation, preprocessing and memory rules shared by the two quantized-network estimators."""

import os

import numpy as np

from .._base import labels_from_scores
from ..convex.formulation import default_solver, installed_solvers

__all__ = []

# Rows of a prediction batch are chosen so that the (rows x n_neurons)
# intermediate arrays of a bilinear network stay under this many bytes.
PREDICT_BATCH_BYTES = 64 * 2**20


def _check_activation(activation):
    """``"bilinear"`` or three finite coefficients ``(a, b, c)``."""
    if isinstance(activation, str):
        return activation
    try:
        coefficients = tuple(float(value) for value in activation)
    except (TypeError, ValueError):
        coefficients = ()
    if len(coefficients) != 3 or not np.all(np.isfinite(coefficients)):
        raise ValueError(
            "activation must be 'bilinear' or a tuple (a, b, c) of three finite "
            f"numbers for sigma(t) = a t^2 + b t + c, got {activation!r}."
        )
    if coefficients[0] == 0.0 and coefficients[1] == 0.0:
        raise ValueError(
            f"activation={activation!r} is constant (a = b = 0); the network "
            "would ignore its input."
        )
    return coefficients


def _check_solver(solver, loss, n_lifted, n_outputs):
    if solver is None:
        return default_solver(loss, n_lifted, n_outputs)
    installed = installed_solvers()
    if solver.upper() not in installed:
        raise ValueError(
            f"solver={solver!r} is not an installed CVXPY solver; installed: "
            f"{sorted(installed)}. SCS and CLARABEL handle these SDPs."
        )
    return solver.upper()


def _neurons_per_output(n_neurons, n_outputs):
    """Split ``n_neurons`` as evenly as possible over the outputs."""
    if n_neurons < n_outputs:
        raise ValueError(
            f"n_neurons={n_neurons} is smaller than the number of classes "
            f"({n_outputs}); every class needs at least one neuron."
        )
    counts = np.full(n_outputs, n_neurons // n_outputs)
    counts[: n_neurons % n_outputs] += 1
    return counts


def _standardization(X, weight):
    """Weighted mean and standard deviation of the features (1 where constant).

    A feature counts as constant with :class:`~sklearn.preprocessing.StandardScaler`'s
    rule: its variance is within the rounding error of the two-pass variance
    (``var <= n eps var + (n eps mean)^2``), a threshold relative to the
    feature's own scale, so that ``X * 1e-13`` is standardized exactly like ``X``.
    """
    X = np.asarray(X, dtype=np.float64)
    weight = np.asarray(weight, dtype=np.float64)
    n_samples = np.count_nonzero(weight)
    weight = weight / weight.sum()
    mean = weight @ X
    variance = weight @ (X - mean) ** 2
    eps = np.finfo(np.float64).eps
    constant = variance <= n_samples * eps * variance + (n_samples * mean * eps) ** 2
    return mean, np.where(constant, 1.0, np.sqrt(variance))


def _class_targets(y_encoded, n_outputs):
    """±1 labels (binary, +1 for ``classes_[1]``) or class indices."""
    return 2.0 * y_encoded - 1.0 if n_outputs == 1 else y_encoded


def _batched_network_scores(lifting, X, U, V, alpha):
    """``bilinear_network_scores`` in row batches: memory bounded whatever ``len(X)``.

    The intermediate ``(rows, n_neurons)`` arrays of one batch take at most
    about :data:`PREDICT_BATCH_BYTES` (64 MiB) besides the output.
    """
    n_neurons = max(1, U.shape[0])
    rows = max(1, PREDICT_BATCH_BYTES // (3 * 8 * n_neurons))
    alpha = np.asarray(alpha, dtype=np.float64)
    out = np.empty((X.shape[0], alpha.shape[1]))
    for start in range(0, X.shape[0], rows):
        stop = start + rows
        out[start:stop] = lifting.bilinear(X[start:stop], U, V) @ alpha
    return out


def _decision_values(scores):
    """``(n, 1)`` scores as ``(n,)`` (binary), else unchanged, like ``decision_function``."""
    return scores.ravel() if scores.shape[1] == 1 else scores


def _predict_labels(estimator, decision_function, X):
    """Labels of ``estimator.classes_`` from an alternative decision function."""
    return labels_from_scores(estimator.classes_, decision_function(X))


def _available_memory():
    """Bytes of physical memory available now (None where the OS does not say)."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _check_memory(required_bytes, parameter, value, what):
    """Refuse, before allocating, a model whose memory exceeds what is available.

    Parameters
    ----------
    required_bytes : float
        The estimate.
    parameter, value : str, object
        The parameter to name in the message and its current value.
    what : str
        What needs the memory (e.g. "sampling the network").
    """
    available = _available_memory()
    if available is None or required_bytes <= available:
        return
    raise MemoryError(
        f"{parameter}={value!r} needs about {required_bytes / 2**30:.1f} GiB for "
        f"{what}, more than the {available / 2**30:.1f} GiB of memory available; "
        f"reduce {parameter}."
    )
