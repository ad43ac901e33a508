"""The whole score of an estimator as one quadratic form of its input, or a clear refusal.

Local explanations need the score itself, not one neuron among several, to be
``f(x) = x^T Q x + w^T x + b``. That holds for QuadraticLogisticRegression,
QuadraticRegression(+CV), the quantized networks (their activations are of
degree 2) and a QNN or RPQNN with ``hidden_layer_sizes=()`` (one layer straight
to the scores). A network with hidden layers composes an activation with its
layers, which is not a quadratic form of the input, so it is refused.

The forms are read with :func:`~skquad.inspection.quadratic_neurons`; this
module adds the checks above, the one-layer ``Linear`` network (``Q = 0``) and
the input as the score sees it (after a Pipeline's steps, clipped to the
training range when the estimator has ``clip_inputs=True``).
"""

from dataclasses import dataclass

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._foundation._pipeline import split_pipeline
from ._neurons import _score_names, quadratic_neurons
from ._pipeline import input_feature_names, transform_to_estimator_input

__all__ = []


@dataclass(frozen=True)
class QuadraticForm:
    """The scores ``f_k(x) = x^T Q[k] x + w[k]^T x + b[k]`` of an estimator.

    ``Q`` has shape (k, d, d) and is symmetric; ``score_names`` name the k
    scores (a classifier's decision function, a regressor's prediction, the
    log of it for a Poisson network).
    """

    Q: np.ndarray
    w: np.ndarray
    b: np.ndarray
    feature_names: np.ndarray
    score_names: tuple

    @property
    def n_scores(self):
        return self.b.shape[0]


def _network_refusal(final):
    """Why a network's score is not a quadratic form of its input, or None when it is."""
    n_layers = len(final.layers_)
    if n_layers == 1:
        return None
    return (
        f"{type(final).__name__} with hidden_layer_sizes={tuple(final.hidden_layer_sizes)!r} is not "
        f"a quadratic form of its input: its scores pass through {n_layers - 1} hidden layer(s) "
        f"and the {final.hidden_activation_!r} activation. Exact local explanations need one "
        "quadratic layer straight to the outputs: fit it with hidden_layer_sizes=()."
    )


def _linear_network_form(final, names):
    """A one-layer network whose layer is ``Linear`` (``quadratic_layers=[False]``): ``Q = 0``."""
    state = final.layers_[0]
    w = np.asarray(state["weight"], dtype=np.float64)
    bias = state.get("bias")
    b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64)
    Q = np.zeros((w.shape[0], w.shape[1], w.shape[1]))
    return QuadraticForm(Q, w, b, names, tuple(_score_names(final, w.shape[0])))


def quadratic_form(estimator, *, which=None, feature_names=None):
    """The estimator's scores as one :class:`QuadraticForm` of its input features.

    Raises
    ------
    ValueError
        For a network with hidden layers (its score is not a quadratic form).
    TypeError
        For an estimator that is not a skquad quadratic estimator.
    """
    _, final = split_pipeline(estimator)
    check_is_fitted(final)
    names = input_feature_names(estimator, feature_names)
    if hasattr(final, "layers_"):
        refusal = _network_refusal(final)
        if refusal is not None:
            raise ValueError(refusal)
        if final.layers_[0]["kind"] == "Linear":
            form = _linear_network_form(final, names)
            Q, w, b = _with_target_scaling(final, form.Q, form.w, form.b)
            return QuadraticForm(Q, w, b, form.feature_names, form.score_names)
    neurons = quadratic_neurons(estimator, which=which, feature_names=feature_names)
    score_names = [n.name for n in neurons]
    if getattr(final, "out_activation_", None) == "exp":  # a Poisson network predicts exp(score)
        score_names = [f"log of {name}" for name in score_names]
    Q, w, b = _with_target_scaling(
        final, np.stack([n.Q for n in neurons]), np.stack([n.w for n in neurons]),
        np.asarray([n.b for n in neurons], dtype=np.float64))
    return QuadraticForm(Q, w, b, names, tuple(score_names))


def _with_target_scaling(final, Q, w, b):
    """A network regressor's layer form made that of its prediction (``scale_target``):
    ``shift + scale * f``, or for a Poisson network (``exp`` output, shift 0) the log of
    it, ``f + log(scale)``. (The quantized networks' forms are read from ``predict``,
    which has the scaling already.)"""
    if not (hasattr(final, "layers_") and hasattr(final, "target_scale_")):
        return Q, w, b
    shift, scale = (np.broadcast_to(np.asarray(v, dtype=np.float64), (final.n_outputs_,))
                    for v in (final.target_shift_, final.target_scale_))
    if getattr(final, "out_activation_", None) == "exp":
        return Q, w, b + np.log(scale)
    return Q * scale[:, None, None], w * scale[:, None], b * scale + shift


def score_input(estimator, X):
    """``X`` as the score sees it: after a Pipeline's steps, clipped to the training range
    when the estimator clips (``clip_inputs=True``), so that explanations add up to the score."""
    X = transform_to_estimator_input(estimator, X)
    _, final = split_pipeline(estimator)
    if getattr(final, "clip_inputs", False):
        X = np.clip(X, final.data_min_, final.data_max_)
    return X
