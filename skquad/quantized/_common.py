"""Validation, preprocessing and memory rules shared by the two quantized-network estimators."""


import numpy as np

from .._base import labels_from_scores
from .._foundation._held_out import can_hold_out, held_out_splits, one_standard_error_choice
from .._foundation._memory import check_memory as _check_memory
from .._foundation._runtime import separate_calls_blas
from ..convex.formulation import default_solver, installed_solvers
from ..convex.lifting import PREDICT_BATCH_BYTES

__all__ = []



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
    # Each column divided by its largest magnitude first: squares of
    # values near 1e160 overflow and those near 1e-170 underflow to 0 (such a
    # column was dropped as constant); in [-1, 1] the variance is exact to
    # rounding, and the rule below is relative, so the result scales back.
    magnitude = np.abs(X).max(axis=0) if X.shape[0] else np.ones(X.shape[1])
    magnitude = np.where(magnitude > 0, magnitude, 1.0)
    scaled = X / magnitude
    mean = weight @ scaled
    return _standardization_from_moments(mean, weight @ (scaled - mean) ** 2, n_samples, magnitude)


def _standardization_from_moments(mean, variance, n_samples, magnitude=1.0):
    """:func:`_standardization` from the weighted moments of ``X / magnitude`` (a Dask fit's)."""
    eps = np.finfo(np.float64).eps
    constant = variance <= n_samples * eps * variance + (n_samples * mean * eps) ** 2
    return mean * magnitude, np.where(constant, 1.0, np.sqrt(variance) * magnitude)


def _class_targets(y_encoded, n_outputs):
    """±1 labels (binary, +1 for ``classes_[1]``) or class indices."""
    return 2.0 * y_encoded - 1.0 if n_outputs == 1 else y_encoded


def _batched_network_scores(lifting, X, U, V, alpha):
    """``bilinear_network_scores`` in row batches of at most about :data:`PREDICT_BATCH_BYTES` of
    ``(rows, n_neurons)`` arrays: memory bounded whatever ``len(X)``."""
    n_neurons = max(1, U.shape[0])
    rows = max(1, PREDICT_BATCH_BYTES // (3 * 8 * n_neurons))
    alpha = np.asarray(alpha, dtype=np.float64)
    out = np.empty((X.shape[0], alpha.shape[1]))
    # Separate products with Python work between them: the separate-calls thread rule, on a
    # batch's hidden outputs (the largest call), for the scores too.
    with separate_calls_blas(4.0 * min(rows, X.shape[0]) * U.shape[1] * n_neurons):
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


def _held_out_refit_choice(X, row_weight, labels, candidates, held_out_scores):
    """The refit of ``candidates`` (the default first) whose network misclassifies the least
    held-out weight: the first unless another's is lower by more than one standard error, row
    by row (:func:`one_standard_error_choice`), on fifths of the rows held out in turn
    (:func:`held_out_splits`); the first where the rows are too few to hold out.

    ``row_weight``: the rows' weights in rows (a weight of 2 is a repeated row); ``labels``:
    class indices; ``held_out_scores(candidate, train, held_out)``: the scores (one column per
    class) on the rows ``held_out`` of the candidate's refit on the rows ``train``.
    """
    if not can_hold_out(row_weight):
        return candidates[0]
    errors = []
    for train, held_out in held_out_splits(X, row_weight):
        misclassified = [
            row_weight[held_out]
            * (np.argmax(held_out_scores(candidate, train, held_out), axis=1) != labels[held_out])
            for candidate in candidates
        ]
        errors.append(np.column_stack(misclassified))
    return candidates[one_standard_error_choice(np.concatenate(errors))]
