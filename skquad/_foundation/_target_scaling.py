"""The network regressors' target scaling (``scale_target=True``): one rule, applied in fit and predict.

The networks train on ``(y - shift) / scale`` per output column and predict
``shift + scale * f(x)``. A quadratic output grows as the square of its
inputs and the optimizers' step sizes (``learning_rate_init``, L-BFGS's first
step, the weight initialisation) are set for targets of unit scale, so an
unscaled target in the hundreds or thousands is fitted badly or diverges.
:class:`~sklearn.neural_network.MLPRegressor` does not scale (its output is
linear and users are told to scale); these regressors do by default.

* squared error: ``shift`` the ``sample_weight``-weighted mean, ``scale``
  the weighted standard deviation (a constant column trains on zeros and,
  fitted on all its data, predicts its constant: scale 0);
* Poisson (``exp`` output, log link): no shift (the targets must stay
  non-negative); ``scale`` the weighted mean (1 when it is 0). Dividing by
  ``c`` is exact for the log link: ``c exp(f) = exp(f + log c)``, and the
  deviance of ``y / c`` is that of ``y`` over ``c``.

``scale_target=False`` gives shift 0 and scale 1 (the targets as given).
"""

import numpy as np

__all__ = [
    "fitted_target_scaling", "scaled_targets", "scaling_from_moments", "target_scaling",
    "unscaled_predictions",
]


def target_scaling(y, sample_weight, *, loss="squared_error", enabled=True, all_data=True):
    """``(shift, scale)``, float64 arrays of shape (n_outputs,), for ``y`` of shape (n, n_outputs).

    A constant column (its spread below ``y``'s own precision) trains on
    zeros. With ``all_data`` (``fit``: every target seen) its scale is 0, so
    that it predicts its constant exactly; for the first batch of
    ``partial_fit`` it is 1 (later batches may vary).
    """
    y = np.asarray(y, dtype=np.float64)
    weight = np.asarray(sample_weight, dtype=np.float64)
    mean = np.average(y, axis=0, weights=weight)
    variance = np.average((y - mean) ** 2, axis=0, weights=weight)
    return scaling_from_moments(mean, variance, loss=loss, enabled=enabled, all_data=all_data)


def scaling_from_moments(mean, variance, *, loss="squared_error", enabled=True, all_data=True):
    """:func:`target_scaling` from the targets' weighted mean and variance per output
    (what a data-parallel fit reduces over row blocks)."""
    mean = np.asarray(mean, dtype=np.float64)
    n_outputs = mean.shape[0]
    if not enabled:
        return np.zeros(n_outputs), np.ones(n_outputs)
    if loss == "poisson":
        return np.zeros(n_outputs), np.where(mean > 0, mean, 1.0)
    std = np.sqrt(np.asarray(variance, dtype=np.float64))
    tiny = 8 * np.finfo(np.float64).eps * np.maximum(np.abs(mean), 1.0)
    return mean, np.where(std > tiny, std, 0.0 if all_data else 1.0)


def scaled_targets(y, shift, scale):
    """``(y - shift) / scale``, in ``y``'s dtype (a zero scale, a constant column: ``y - shift``)."""
    return ((y - shift) / np.where(scale > 0, scale, 1.0)).astype(y.dtype, copy=False)


def unscaled_predictions(scores, shift, scale):
    """``shift + scale * scores`` (the output after the inverse link), in the scores' dtype."""
    result = scores * scale + shift
    return result.to(scores.dtype) if hasattr(result, "to") else result.astype(scores.dtype, copy=False)  # torch, NumPy


def fitted_target_scaling(estimator):
    """A fitted estimator's ``(target_shift_, target_scale_)``; ``(0, 1)`` for a model
    fitted before they existed (it trained on the targets as given)."""
    return getattr(estimator, "target_shift_", 0.0), getattr(estimator, "target_scale_", 1.0)
