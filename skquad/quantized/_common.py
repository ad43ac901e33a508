"""Validation and preprocessing shared by the two quantized-network estimators."""

import numpy as np

from ..convex.formulation import default_solver, installed_solvers

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
    """Weighted mean and standard deviation of the features (1 where constant)."""
    weight = weight / weight.sum()
    mean = weight @ X
    std = np.sqrt(weight @ (X - mean) ** 2)
    return mean, np.where(std > 1e-12 * np.maximum(1.0, np.abs(mean)), std, 1.0)


def _class_targets(y_encoded, n_outputs):
    """±1 labels (binary, +1 for ``classes_[1]``) or class indices."""
    return 2.0 * y_encoded - 1.0 if n_outputs == 1 else y_encoded
