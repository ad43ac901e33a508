"""Fitted skquad estimators as plain :class:`torch.nn.Module` objects.

:func:`to_torch` rebuilds the function behind ``decision_function`` from the
estimator's public fitted attributes, standardization, input lifting and
the clipping of ``clip_inputs`` included, so that the module's output equals
``decision_function(X)`` (on any input, inside the training range or not): shape
``(n,)`` for binary problems (the log-odds of ``classes_[1]``), ``(n, K)``
logits otherwise. Probabilities are the estimator's link on top (sigmoid,
softmax, or normalized sigmoids for ``output_activation="sigmoid"``).
"""

import numpy as np
import torch
from sklearn.base import is_regressor
from torch import nn

from .._foundation._pipeline import split_pipeline
from .._foundation._target_scaling import fitted_target_scaling
from ..convex.lifting import collapse_replicas
from ..nn.layers import layer_from_numpy_state
from ..nn.network import ACTIVATIONS

__all__ = [
    "BilinearNetworkScores",
    "ClipInputs",
    "DecisionFunctionModule",
    "QuadraticFormScores",
    "Standardize",
    "to_torch",
]

class Standardize(nn.Module):
    """``(x - mean) / scale`` with fixed buffers (a fitted StandardScaler)."""

    def __init__(self, mean, scale, dtype=torch.float64):
        super().__init__()
        self.register_buffer("mean", torch.as_tensor(np.asarray(mean), dtype=dtype))
        self.register_buffer("scale", torch.as_tensor(np.asarray(scale), dtype=dtype))

    def forward(self, x):
        return (x - self.mean) / self.scale


class ClipInputs(nn.Module):
    """Each feature clamped to ``[data_min, data_max]`` (an estimator's ``clip_inputs``)."""

    def __init__(self, data_min, data_max, dtype=torch.float64):
        super().__init__()
        self.register_buffer("data_min", torch.as_tensor(np.asarray(data_min), dtype=dtype))
        self.register_buffer("data_max", torch.as_tensor(np.asarray(data_max), dtype=dtype))

    def forward(self, x):
        return torch.clamp(x, self.data_min, self.data_max)


class QuadraticFormScores(nn.Module):
    """One quadratic neuron per score, ``x^T Q_k x + w_k^T x + b_k`` (trainable)."""

    def __init__(self, Q, weight, bias, dtype=torch.float64):
        super().__init__()
        self.Q = nn.Parameter(torch.as_tensor(np.asarray(Q), dtype=dtype).clone())
        self.weight = nn.Parameter(torch.as_tensor(np.asarray(weight), dtype=dtype).clone())
        self.bias = nn.Parameter(torch.as_tensor(np.asarray(bias), dtype=dtype).clone())

    def forward(self, x):
        n_scores, d = self.weight.shape
        xQ = (x @ self.Q.permute(1, 0, 2).reshape(d, n_scores * d)).reshape(-1, n_scores, d)
        return (xQ * x.unsqueeze(1)).sum(-1) + x @ self.weight.T + self.bias


class BilinearNetworkScores(nn.Module):
    """``intercept_k + sum_j alpha_jk (t_u)_j (t_v)_j`` on the lifted input (quantized networks).

    ``t_u = x_std @ U^T + u_bias`` with integer weights ``U`` on the original
    features (±1 for binary weights; replicas of ``weight_levels`` summed) kept
    as int8 buffers and cast at run time; with a polynomial activation
    ``(a, b, c)`` the neuron is ``a t_u t_v + (b/2)(v_0 t_u + u_0 t_v) + c u_0 v_0``.
    ``alpha`` is a trainable parameter.
    """

    def __init__(self, parts, dtype=torch.float64):
        super().__init__()
        self.polynomial = parts["activation"] is not None
        self.activation = tuple(parts["activation"] or (1.0, 0.0, 0.0))
        self.standardize = parts["center"] is not None
        if self.standardize:
            self.input_scaling = Standardize(parts["center"], parts["scale"], dtype)
        for name in ("U", "V"):
            self.register_buffer(name, torch.as_tensor(parts[name], dtype=torch.int8))
            for suffix in ("bias", "lift"):
                value = parts[f"{name}_{suffix}"]
                value = np.zeros(parts[name].shape[0]) if value is None else value
                self.register_buffer(f"{name}_{suffix}", torch.as_tensor(value, dtype=torch.int8))
        self.alpha = nn.Parameter(torch.as_tensor(parts["alpha"], dtype=dtype).clone())
        self.register_buffer("intercept", torch.as_tensor(parts["intercept"], dtype=dtype))
        self.register_buffer("linear", torch.as_tensor(parts["linear"], dtype=dtype))

    def forward(self, x):
        linear = x @ self.linear.T
        if self.standardize:
            x = self.input_scaling(x)
        dtype = x.dtype
        t_u = x @ self.U.to(dtype).T + self.U_bias.to(dtype)
        t_v = x @ self.V.to(dtype).T + self.V_bias.to(dtype)
        if self.polynomial:
            a, b, c = self.activation
            u0, v0 = self.U_lift.to(dtype), self.V_lift.to(dtype)
            hidden = a * t_u * t_v + 0.5 * b * (t_u * v0 + t_v * u0) + c * (u0 * v0)
        else:
            hidden = t_u * t_v
        return hidden @ self.alpha + self.intercept + linear


class DecisionFunctionModule(nn.Module):
    """``decision_function`` as a module: optional preprocessing, clipping, then the scores.

    The preprocessing (a Pipeline's StandardScaler steps) runs in float64, as
    scikit-learn runs it, and its output is cast to the scores' precision, as
    the estimator casts its input. ``clip`` (a :class:`ClipInputs`, for an
    estimator with ``clip_inputs=True``) then bounds each feature to its
    training range, as the estimator's predictions do. The output has shape ``(n,)`` for one score
    (binary problems), else ``(n, n_scores)``. For a regressor the module
    computes ``predict``: the inverse link applied (``exp`` for
    ``loss="poisson"``), the target scaling undone (``shift + scale *
    output``, the networks' ``scale_target``), the output clipped to the
    training targets' range (``output_bounds``, a regressor's ``clip_outputs``)
    and the shape of the fitted ``y``.
    """

    def __init__(
        self, scores, preprocessing=None, dtype=torch.float64, *, exponential_output=False, squeeze=True,
        clip=None, output_affine=None, output_bounds=None,
    ):
        super().__init__()
        self.output_bounds = output_bounds is not None
        if self.output_bounds:
            self.register_buffer("output_min", torch.as_tensor(output_bounds[0], dtype=dtype))
            self.register_buffer("output_max", torch.as_tensor(output_bounds[1], dtype=dtype))
        # A network regressor's target scaling, (shift, scale) per output:
        # predict is shift + scale * output (after the inverse link).
        self.output_affine = output_affine is not None
        if self.output_affine:
            shift, scale = (torch.as_tensor(np.broadcast_to(v, (np.size(output_affine[1]),)).copy(),
                                            dtype=dtype) for v in output_affine)
            self.register_buffer("output_shift", shift)
            self.register_buffer("output_scale", scale)
        # A regressor's inverse link (MLPRegressor's loss="poisson": exp), so
        # that the module computes predict; squeeze=False keeps a regressor's
        # (n, 1) output when it was fitted on a 2-D y.
        self.exponential_output = exponential_output
        self.squeeze = squeeze
        self.preprocessing = preprocessing if preprocessing is not None else nn.Identity()
        self.clip = clip if clip is not None else nn.Identity()
        self.scores = scores
        self.dtype = dtype

    def forward(self, x):
        if not isinstance(self.preprocessing, nn.Identity):
            x = self.preprocessing(x.to(torch.float64))
        out = self.scores(self.clip(x.to(self.dtype)))
        if self.exponential_output:
            out = torch.exp(out)
        if self.output_affine:
            out = out * self.output_scale + self.output_shift
        if self.output_bounds:
            out = torch.clamp(out, self.output_min, self.output_max)
        return out[:, 0] if out.shape[1] == 1 and self.squeeze else out


def bilinear_parts(estimator):
    """The quantized network's arrays on the original features (public attributes only).

    Returns a dict with ``center``, ``scale`` (None without standardization),
    ``U``, ``V`` (int, ``(m, d)``), ``U_bias``, ``V_bias`` (None without
    intercept), ``U_lift``, ``V_lift`` (None for the bilinear activation),
    ``activation`` (None or ``(a, b, c)``), ``alpha`` ``(m, n_scores)`` and
    ``intercept`` ``(n_scores,)`` (zeros for a network without one) and
    ``linear`` ``(n_scores, d)``, the linear term on the raw inputs in the
    units of the scores (``linear_coef_ / target_scale_``; zeros without one).
    """
    levels = int(getattr(estimator, "weight_levels", 1))
    fit_intercept = bool(getattr(estimator, "fit_intercept", True))
    activation = getattr(estimator, "activation", "bilinear")
    polynomial = not isinstance(activation, str)
    d = estimator.n_features_in_
    expected = (d + int(fit_intercept)) * levels + int(polynomial)
    if estimator.U_.shape[1] != expected:
        raise ValueError(
            f"{type(estimator).__name__}.U_ has {estimator.U_.shape[1]} columns; expected "
            f"{expected} from n_features_in_, fit_intercept, weight_levels and activation."
        )
    parts = {
        "center": getattr(estimator, "feature_mean_", None),
        "scale": getattr(estimator, "feature_scale_", None),
        "activation": tuple(float(v) for v in activation) if polynomial else None,
        "alpha": np.asarray(estimator.alpha_, dtype=np.float64),
        # The output intercept (the SDP networks'; zeros where a model has none).
        "intercept": np.reshape(
            np.asarray(getattr(estimator, "intercept_", 0.0), dtype=np.float64)
            * np.ones(np.shape(estimator.alpha_)[1]), -1
        ),
    }
    parts["linear"] = _linear_in_score_units(estimator, d)
    for name, signs in (("U", estimator.U_), ("V", estimator.V_)):
        signs = np.asarray(signs)
        lift = None
        if polynomial:
            signs, lift = signs[:, :-1], signs[:, -1].astype(np.int8)
        collapsed = collapse_replicas(signs, levels).astype(np.int8)
        bias = None
        if fit_intercept:
            collapsed, bias = collapsed[:, :-1], collapsed[:, -1]
        parts.update({name: collapsed, f"{name}_bias": bias, f"{name}_lift": lift})
    return parts


def _linear_in_score_units(estimator, d):
    """``linear_coef_`` before the target scaling that the scores' module undoes."""
    n_scores = np.shape(estimator.alpha_)[1]
    coef = getattr(estimator, "linear_coef_", None)
    if coef is None:
        return np.zeros((n_scores, d))
    scale = np.reshape(fitted_target_scaling(estimator)[1], (-1, 1)) * np.ones((n_scores, 1))
    safe = np.where(scale == 0.0, 1.0, scale)  # a constant output's term is zero
    return np.where(scale == 0.0, 0.0, np.asarray(coef, dtype=np.float64) / safe)


def _learned_dtype(estimator):
    if hasattr(estimator, "layers_"):
        return torch.float32 if np.asarray(estimator.layers_[0]["weight"]).dtype == np.float32 else torch.float64
    if hasattr(estimator, "Q_") and not hasattr(estimator, "U_"):
        return torch.float32 if np.asarray(estimator.Q_).dtype == np.float32 else torch.float64
    return torch.float64


def _scores_module(estimator, dtype):
    if hasattr(estimator, "layers_"):
        # the activation the network was trained with (set_params may change `activation`)
        activation = ACTIVATIONS[getattr(estimator, "hidden_activation_", estimator.activation)]
        items = []
        for index, state in enumerate(estimator.layers_):
            items.append(layer_from_numpy_state(state, device="cpu", dtype=dtype))
            if index < len(estimator.layers_) - 1:
                items.append(activation())
        return nn.Sequential(*items)
    if hasattr(estimator, "U_") and hasattr(estimator, "alpha_"):
        return BilinearNetworkScores(bilinear_parts(estimator), dtype)
    if hasattr(estimator, "Q_") and hasattr(estimator, "coef_"):
        # A single-output regressor stores Ridge's shapes: (d, d), (d,), a float.
        coef = np.atleast_2d(estimator.coef_)
        Q = np.reshape(estimator.Q_, (coef.shape[0], coef.shape[1], coef.shape[1]))
        return QuadraticFormScores(Q, coef, np.reshape(estimator.intercept_, -1), dtype)
    raise TypeError(f"{type(estimator).__name__} is not a skquad estimator that to_torch can export.")


def _preprocessing_module(preprocessing, dtype):
    from sklearn.preprocessing import StandardScaler

    items = []
    for name, step in preprocessing.steps:
        if step is None or step == "passthrough":
            continue
        if not isinstance(step, StandardScaler):
            raise TypeError(
                f"to_torch can export a Pipeline of StandardScaler steps followed by a "
                f"skquad estimator; step {name!r} is a {type(step).__name__}."
            )
        n = step.n_features_in_
        mean = step.mean_ if step.with_mean else np.zeros(n)
        scale = step.scale_ if step.with_std else np.ones(n)
        items.append(Standardize(mean, scale, dtype))
    return nn.Sequential(*items) if items else None


def to_torch(estimator, *, dtype=None):
    """A :class:`torch.nn.Module` computing a fitted estimator's ``decision_function``.

    Parameters
    ----------
    estimator : fitted skquad estimator, or Pipeline
        One of the five skquad classifiers, or a Pipeline of
        ``StandardScaler`` steps ending in one.
    dtype : torch.dtype, default=None
        Precision of the module; None uses the precision the estimator
        predicts in (float32 for a network trained in float32, else float64).

    Returns
    -------
    module : DecisionFunctionModule
        In evaluation mode; its parameters are trainable (``requires_grad``)
        except the quantized networks' integer weights, which are int8
        buffers. ``module(torch.as_tensor(X, dtype=dtype))`` equals
        ``estimator.decision_function(X)``: shape ``(n,)`` for binary
        problems, ``(n, n_classes)`` otherwise.

    Examples
    --------
    >>> import torch
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegression
    >>> X, y = make_circles(n_samples=100, factor=0.5, noise=0.05, random_state=0)
    >>> clf = QuadraticLogisticRegression().fit(X, y)
    >>> module = clf.to_torch()
    >>> scores = module(torch.as_tensor(X)).detach().numpy()
    >>> bool(abs(scores - clf.decision_function(X)).max() < 1e-9)
    True
    """
    preprocessing, final = split_pipeline(estimator)
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(final)
    dtype = _learned_dtype(final) if dtype is None else dtype
    scores = _scores_module(final, dtype)
    pre = _preprocessing_module(preprocessing, torch.float64) if preprocessing is not None else None
    regressor = is_regressor(final)
    return DecisionFunctionModule(
        scores,
        pre,
        dtype,
        exponential_output=regressor and getattr(final, "out_activation_", None) == "exp",
        squeeze=not (regressor and getattr(final, "_fitted_y_ndim", 1) == 2),
        output_affine=((final.target_shift_, final.target_scale_)
                       if regressor and hasattr(final, "target_scale_") else None),
        clip=ClipInputs(final.data_min_, final.data_max_, dtype) if final.clip_inputs else None,
        output_bounds=((final.target_min_, final.target_max_)
                       if regressor and getattr(final, "clip_outputs", False) else None),
    ).eval()
