"""Model sizes: trainable parameters and floating-point operations per sample.

Counting rules (the same for every model, so that sizes compare):

Parameters
    The free entries of the learned arrays. A symmetric ``Q`` of a quadratic
    neuron counts ``d (d + 1) / 2``; intercepts count when they are fitted.
    The quantized networks' first-layer weights are ±1 (one bit each):
    they are counted in ``n_parameters`` and again in
    ``n_binary_parameters``; their real second layer counts one parameter per
    distinct nonzero weight of each score (one scale per class for the sampled
    SDP network and for BackpropQuantizedClassifier). Statistics of a
    standardization (``StandardScaler``, the quantized networks'
    ``feature_mean_`` / ``feature_scale_``) are not trainable and count 0.

FLOPs per predicted sample
    A multiply-accumulate with a learned real weight counts 2; adding a bias,
    an elementwise product or square, and an activation (ReLU, tanh, sigmoid)
    count 1 each; multiplying by a ±1 weight is a signed addition and counts
    1; standardizing a feature counts 2 (subtract, divide). A full quadratic
    layer (or QLR) first forms the ``d (d + 1) / 2`` products ``x_i x_j``
    (``i <= j``, shared by its neurons), then each neuron is a linear function
    of them and of ``x``: ``2 (d (d + 1) / 2 + d) + 1``, which makes QLR and
    ``PolynomialFeatures(2) + LogisticRegression`` the same size. The final
    link (sigmoid or softmax) is not counted: it is the same for every
    classifier and not needed to predict a label; nor are the comparisons
    that clip the inputs to their training range (``clip_inputs``).

Supported: the five skquad classifiers, ``MLPClassifier``, linear classifiers
with ``coef_`` / ``intercept_`` (``LogisticRegression``, ...),
``StandardScaler``, ``PolynomialFeatures``, ``SimpleImputer`` and
``OneHotEncoder`` (table look-ups: 0 FLOPs), ``Pipeline`` and
``ColumnTransformer`` (sums of their steps).
"""

from dataclasses import dataclass, field

import numpy as np
from sklearn.utils.validation import check_is_fitted

__all__ = ["ModelSize", "model_size"]


@dataclass(frozen=True)
class ModelSize:
    """Size of a fitted model.

    Attributes
    ----------
    n_parameters : int
        Trainable parameters (free entries of the learned arrays).
    n_binary_parameters : int
        Of these, the ±1 weights (1 bit each).
    n_flops : int
        Floating-point operations to predict one sample.
    uncounted : tuple of str
        Steps ``model_size(..., unknown="ignore")`` could not count.
    """

    n_parameters: int
    n_flops: int
    n_binary_parameters: int = 0
    uncounted: tuple = field(default=())

    def __add__(self, other):
        return ModelSize(
            self.n_parameters + other.n_parameters,
            self.n_flops + other.n_flops,
            self.n_binary_parameters + other.n_binary_parameters,
            self.uncounted + other.uncounted,
        )

    @property
    def n_real_parameters(self):
        """Parameters that are real numbers (not ±1)."""
        return self.n_parameters - self.n_binary_parameters


def _triangle(d):
    return d * (d + 1) // 2


def _quadratic_neurons_size(d, n_out, with_bias):
    """Full quadratic neurons sharing the pair products of their input."""
    parameters = n_out * (_triangle(d) + d + int(with_bias))
    flops = _triangle(d) + n_out * (2 * (_triangle(d) + d) + int(with_bias))
    return ModelSize(parameters, flops)


def _qlr_size(estimator):
    # A single-output regressor's coef_ is 1-D, as scikit-learn's Ridge's.
    n_scores, d = np.shape(np.atleast_2d(estimator.coef_))
    with_bias = bool(getattr(estimator, "fit_intercept", True))
    vectors = getattr(estimator, "Q_vectors_", None)
    if vectors is None:
        return _quadratic_neurons_size(d, n_scores, with_bias)
    rank = vectors.shape[2]
    parameters = n_scores * (d * rank + rank + d + int(with_bias))
    # V^T x (2 d r), squares (r), scaled sum (2 r), w^T x (2 d), bias
    flops = n_scores * (2 * d * rank + 3 * rank + 2 * d + int(with_bias))
    return ModelSize(parameters, flops)


def _layer_size(state):
    options = state["options"]
    n_in, n_out = options["in_features"], options["out_features"]
    if state["kind"] == "Linear":
        return ModelSize(n_in * n_out + n_out, 2 * n_in * n_out + n_out)
    if "quadratic" in state:
        return _quadratic_neurons_size(n_in, n_out, state.get("bias") is not None)
    # Reduced layer (W a + b) * (U a + c) [+ W_p (a * a) + c_p]: every stored
    # array is free (whatever the layer names them).
    parameters = sum(
        int(np.size(value)) for key, value in state.items()
        if key not in ("kind", "options") and isinstance(value, np.ndarray)
    )
    flops = 2 * (2 * n_in * n_out + n_out) + n_out
    if options.get("power_term", False):
        flops += n_in + (2 * n_in * n_out + n_out) + n_out
    return ModelSize(parameters, flops)


def _network_size(estimator):
    total = ModelSize(0, 0)
    for state in estimator.layers_:
        total = total + _layer_size(state)
    if estimator.activation != "identity":
        hidden = sum(state["options"]["out_features"] for state in estimator.layers_[:-1])
        total = total + ModelSize(0, hidden)
    return total


def _bilinear_size(estimator):
    U, V = np.asarray(estimator.U_), np.asarray(estimator.V_)
    alpha = np.asarray(estimator.alpha_)
    n_neurons, p = U.shape
    polynomial = not isinstance(getattr(estimator, "activation", "bilinear"), str)
    binary = U.size + V.size
    real = sum(np.unique(column[column != 0]).size for column in alpha.T)
    flops = 0
    if getattr(estimator, "feature_mean_", None) is not None:
        flops += 2 * estimator.n_features_in_
    # two ±1 dot products over the lifted input, then the product
    flops += n_neurons * (2 * (p - int(polynomial)) + 1)
    if polynomial:
        # a * (t_u t_v) + (b / 2)(v0 t_u + u0 t_v) + c u0 v0
        flops += n_neurons * 5
    flops += 2 * int(np.count_nonzero(alpha))
    return ModelSize(binary + real, flops, binary)


def _mlp_size(estimator):
    parameters = sum(w.size + b.size for w, b in zip(estimator.coefs_, estimator.intercepts_))
    flops = sum(2 * w.size + b.size for w, b in zip(estimator.coefs_, estimator.intercepts_))
    if estimator.activation != "identity":
        flops += sum(b.size for b in estimator.intercepts_[:-1])
    return ModelSize(parameters, flops)


def _linear_size(estimator):
    coef = np.atleast_2d(estimator.coef_)
    n_out = coef.shape[0]
    with_bias = bool(getattr(estimator, "fit_intercept", True))
    return ModelSize(coef.size + n_out * with_bias, 2 * coef.size + n_out * with_bias)


def _transformer_size(step):
    from sklearn.impute import SimpleImputer
    from sklearn.preprocessing import (
        FunctionTransformer,
        OneHotEncoder,
        PolynomialFeatures,
        StandardScaler,
    )

    if isinstance(step, StandardScaler):
        return ModelSize(0, step.n_features_in_ * (int(step.with_mean) + int(step.with_std)))
    if isinstance(step, PolynomialFeatures):
        degrees = step.powers_.sum(axis=1)
        return ModelSize(0, int(np.maximum(degrees - 1, 0).sum()))
    if isinstance(step, (SimpleImputer, OneHotEncoder)):
        return ModelSize(0, 0)
    if isinstance(step, FunctionTransformer) and step.func is None:  # "passthrough"
        return ModelSize(0, 0)
    return None


def model_size(estimator, *, unknown="raise"):
    """Trainable parameters and FLOPs per predicted sample of a fitted model.

    Parameters
    ----------
    estimator : fitted estimator
        A skquad classifier, ``MLPClassifier``, a linear classifier
        (``LogisticRegression``, ...), or a ``Pipeline`` /
        ``ColumnTransformer`` of supported steps (see the module docstring for
        the counting rules).
    unknown : {"raise", "ignore"}, default="raise"
        What to do with a step that cannot be counted: raise a TypeError, or
        count it as 0 and name it in ``uncounted``.

    Returns
    -------
    ModelSize

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.inspection import model_size
    >>> X, y = make_circles(n_samples=100, factor=0.5, noise=0.05, random_state=0)
    >>> model_size(QuadraticLogisticRegression().fit(X, y))
    ModelSize(n_parameters=6, n_flops=14, n_binary_parameters=0, uncounted=())
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.neural_network import MLPClassifier, MLPRegressor
    from sklearn.pipeline import Pipeline

    if unknown not in ("raise", "ignore"):
        raise ValueError(f"unknown must be 'raise' or 'ignore', got {unknown!r}.")
    if estimator is None or (isinstance(estimator, str) and estimator in ("passthrough", "drop")):
        return ModelSize(0, 0)
    if isinstance(estimator, Pipeline):
        total = ModelSize(0, 0)
        for _, step in estimator.steps:
            total = total + model_size(step, unknown=unknown)
        return total
    check_is_fitted(estimator)
    if isinstance(estimator, ColumnTransformer):
        total = ModelSize(0, 0)
        for _, transformer, _ in estimator.transformers_:
            total = total + model_size(transformer, unknown=unknown)
        return total
    if hasattr(estimator, "layers_"):
        return _network_size(estimator)
    if hasattr(estimator, "U_") and hasattr(estimator, "alpha_"):
        return _bilinear_size(estimator)
    if hasattr(estimator, "Q_") and hasattr(estimator, "coef_"):
        return _qlr_size(estimator)
    if isinstance(estimator, (MLPClassifier, MLPRegressor)):
        return _mlp_size(estimator)
    size = _transformer_size(estimator)
    if size is not None:
        return size
    if hasattr(estimator, "coef_") and hasattr(estimator, "intercept_"):
        return _linear_size(estimator)
    if unknown == "ignore":
        return ModelSize(0, 0, uncounted=(type(estimator).__name__,))
    raise TypeError(
        f"model_size cannot count a {type(estimator).__name__}; pass unknown='ignore' "
        "to count it as 0 (it is then listed in ModelSize.uncounted)."
    )
