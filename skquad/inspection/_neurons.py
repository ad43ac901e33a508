"""Every quadratic neuron of a fitted skquad estimator, as ``(Q, w, b)``.

A neuron is a quadratic function ``x^T Q x + w^T x + b`` of its layer's input,
in the units that layer sees (for the first layer: the estimator's input
features). The arrays are read from the estimators' public fitted attributes:

* :class:`~skquad.QuadraticLogisticRegression`: one neuron per class score,
  ``(Q_[k], coef_[k], intercept_[k])``.
* :class:`~skquad.QNNClassifier` / :class:`~skquad.RPQNNClassifier`: every
  neuron of every quadratic layer in ``layers_``. A full layer stores ``Q``;
  for the others (RPQNN's ``(W a + b) * (U a + c)``, a rank-2 quadric, with or
  without the power term) the layer is rebuilt as a torch module from its
  numpy state and its quadratic form is read off by polarization.
* The quantized networks (:class:`~skquad.SDPQuantizedClassifier`,
  :class:`~skquad.BackpropQuantizedClassifier`): the whole network
  ``sum_j alpha_j (z^T u_j)(z^T v_j)`` is one quadratic function of ``x`` per
  class score (standardization and lifting are affine or quadratic), read off
  the decision function by polarization: ``which="sampled"`` (the network
  that predicts), ``"relaxed"`` (the SDP's relaxed model) or ``"float"``
  (BackpropQuantizedClassifier's real-weight network).

The neurons are the model itself, on every input: an estimator's
``clip_inputs`` (which clips its inputs to the training range before it
predicts) is not part of them, and polarization reads the unclipped function
(``clip_outputs`` too).

Polarization evaluates the function at ``1 + 2 d + d (d - 1) / 2`` points and is
exact for quadratic functions up to rounding; the result is checked against the
function at random points, so a function that is not quadratic is an error.
"""

import copy
import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._foundation._memory import check_memory
from .._foundation._pipeline import split_pipeline
from ..nn.polarization import layer_quadratic_forms, quadratic_form_by_polarization
from ._pipeline import input_feature_names

__all__ = ["QuadraticNeuron", "quadratic_neurons"]

# The score function of each ``which``: a classifier's decision function, or
# the prediction of a regressor (whose output is the score itself).
_SCORE_FUNCTIONS = {
    "sampled": ("decision_function", "predict"),
    "quantized": ("decision_function", "predict"),
    "relaxed": ("relaxed_decision_function", "relaxed_predict"),
    "float": ("float_decision_function", "float_predict"),
}


def _score_function(estimator, which):
    """The estimator's method for ``which`` on unclipped inputs and outputs, or None."""
    estimator = copy.copy(estimator)  # a view with the same fitted state
    estimator.clip_inputs = False
    if hasattr(estimator, "clip_outputs"):
        estimator.clip_outputs = False
    is_classifier = hasattr(estimator, "classes_")
    for attribute in _SCORE_FUNCTIONS.get(which, ()):
        if attribute.endswith("predict") and is_classifier:
            continue  # a classifier's predict gives labels, not scores
        if hasattr(estimator, attribute):
            return getattr(estimator, attribute)
    return None
# Largest total size of the dense Q matrices built for a network's neurons.
_MAX_NEURON_BYTES = 2 * 2**30


@dataclass(frozen=True)
class QuadraticNeuron:
    """One quadratic neuron ``x^T Q x + w^T x + b`` of a fitted estimator.

    Attributes
    ----------
    name : str
        E.g. ``"score 0"`` or ``"layer 1, neuron 4"``.
    Q : ndarray of shape (d, d)
        Symmetric.
    w : ndarray of shape (d,)
    b : float
    feature_names : ndarray of str, shape (d,)
        Names of the neuron's inputs: the estimator's features for the first
        layer, ``"layer l, unit j"`` (after the activation) for deeper ones.
    layer : int
        0 for the first layer (and for QLR and the quantized networks).
    index : int
        Neuron (score) index within the layer.
    """

    name: str
    Q: np.ndarray
    w: np.ndarray
    b: float
    feature_names: np.ndarray
    layer: int
    index: int

    @property
    def on_input_features(self):
        """True when the neuron acts on the estimator's input features."""
        return self.layer == 0

    def value(self, X):
        """The neuron's value for each row of ``X`` (its own input units)."""
        X = np.asarray(X, dtype=np.float64)
        return np.einsum("ni,ij,nj->n", X, self.Q, X) + X @ self.w + self.b


def _without_name_warning(function, estimator):
    """Call ``function`` on arrays without the 'X does not have valid feature names' warning."""

    def call(X):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="X does not have valid feature names")
            return function(X)

    return call


def _score_names(estimator, n_scores):
    classes = getattr(estimator, "classes_", None)
    if classes is None:  # a regressor: its scores are its predictions
        return ["prediction"] if n_scores == 1 else [f"output {k}" for k in range(n_scores)]
    if getattr(estimator, "_multilabel", False):
        return [f"score (log-odds of label {c})" for c in classes]
    if n_scores == 1:
        return [f"score (log-odds of {classes[1]})"]
    return [f"score of {c}" for c in classes]


def _qlr_neurons(estimator, names):
    # A single-output regressor stores Ridge's shapes: (d, d), (d,), a float.
    coef = np.atleast_2d(np.asarray(estimator.coef_, dtype=np.float64))
    Q = np.asarray(estimator.Q_, dtype=np.float64).reshape(coef.shape[0], coef.shape[1], coef.shape[1])
    intercept = np.asarray(estimator.intercept_, dtype=np.float64).reshape(-1)
    labels = _score_names(estimator, Q.shape[0])
    return [
        QuadraticNeuron(labels[k], 0.5 * (Q[k] + Q[k].T), coef[k], float(intercept[k]), names, 0, k)
        for k in range(Q.shape[0])
    ]


def _network_neurons(estimator, names, layer):
    selected = [
        state for index, state in enumerate(estimator.layers_)
        if state["kind"] != "Linear" and (layer is None or layer == index)
    ]
    n_bytes = 8 * sum(s["options"]["out_features"] * s["options"]["in_features"] ** 2 for s in selected)
    if n_bytes > _MAX_NEURON_BYTES:
        raise ValueError(
            f"The quadratic neurons of {type(estimator).__name__} would take "
            f"{n_bytes / 2**30:.1f} GiB as dense (d, d) matrices; pass layer=<index in "
            "layers_> to read one layer at a time."
        )
    neurons = []
    input_names = names
    for index, state in enumerate(estimator.layers_):
        n_out = state["options"]["out_features"]
        if state["kind"] != "Linear" and (layer is None or layer == index):
            Q, w, b = layer_quadratic_forms(state)
            last = index == len(estimator.layers_) - 1
            labels = (
                _score_names(estimator, n_out)
                if last
                else [f"layer {index}, neuron {k}" for k in range(n_out)]
            )
            neurons += [
                QuadraticNeuron(labels[k], Q[k], w[k], float(b[k]), input_names, index, k)
                for k in range(n_out)
            ]
        input_names = np.asarray([f"layer {index}, unit {j}" for j in range(n_out)], dtype=object)
    return neurons


def _bilinear_network_neurons(estimator, names, which):
    which = "sampled" if which is None else which
    method = _score_function(estimator, which)
    if method is None:
        available = [key for key in _SCORE_FUNCTIONS if _score_function(estimator, key) is not None]
        raise ValueError(f"which={which!r} is not available for {type(estimator).__name__}; use one of {available}.")
    function = _without_name_warning(method, estimator)
    d, k = estimator.n_features_in_, np.shape(estimator.alpha_)[1]
    # the polarization's d² / 2 evaluations and the (k, d, d) forms read off them
    check_memory(24.0 * k * d * d, "n_features", d, f"{k} quadratic form(s) of {d} x {d} by polarization",
                 advice="explain fewer features (select them before the model).")
    center = getattr(estimator, "feature_mean_", None)
    scale = getattr(estimator, "feature_scale_", None)
    Q, w, b = quadratic_form_by_polarization(function, d, center=center, scale=scale)
    labels = _score_names(estimator, Q.shape[0])
    prefix = "" if which == "sampled" else f"{which} "
    return [
        QuadraticNeuron(prefix + labels[k], Q[k], w[k], float(b[k]), names, 0, k)
        for k in range(Q.shape[0])
    ]


def quadratic_neurons(estimator, *, layer=None, which=None, feature_names=None):
    """The quadratic neurons of a fitted skquad estimator (or Pipeline ending in one).

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        QuadraticLogisticRegression, QNNClassifier, RPQNNClassifier,
        SDPQuantizedClassifier or BackpropQuantizedClassifier, possibly the
        last step of a Pipeline (the neurons are in the units of its input,
        i.e. after the preceding steps).
    layer : int, default=None
        Networks only: the index in ``layers_`` of the layer to read; None
        reads every quadratic layer.
    which : {"sampled", "relaxed", "float"}, default=None
        Quantized networks only: which network's quadratic form (None:
        ``"sampled"``, the network that predicts; ``"relaxed"``: the SDP's
        relaxed model; ``"float"``: BackpropQuantizedClassifier's real-weight
        network).
    feature_names : array-like of str, default=None
        Names of the estimator's input features; by default its
        ``feature_names_in_`` or the Pipeline's ``get_feature_names_out``.

    Returns
    -------
    neurons : list of QuadraticNeuron

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.inspection import quadratic_neurons
    >>> X, y = make_circles(n_samples=100, factor=0.5, noise=0.05, random_state=0)
    >>> (neuron,) = quadratic_neurons(QuadraticLogisticRegression(C=10).fit(X, y))
    >>> neuron.Q.shape
    (2, 2)
    """
    _, final = split_pipeline(estimator)
    check_is_fitted(final)
    names = input_feature_names(estimator, feature_names)
    is_network = hasattr(final, "layers_")
    is_quantized = hasattr(final, "U_") and hasattr(final, "V_")
    # An argument that does not apply to this estimator is an error, not
    # ignored (which="bogus" or layer=99 would otherwise pass silently).
    if layer is not None:
        if not is_network:
            raise ValueError(
                f"layer={layer!r} applies to the quadratic networks (layers_) only, not "
                f"to {type(final).__name__}; leave layer=None."
            )
        n_layers = len(final.layers_)
        if isinstance(layer, bool) or not isinstance(layer, Integral) or not 0 <= layer < n_layers:
            raise ValueError(
                f"layer={layer!r} is not an index of {type(final).__name__}.layers_ "
                f"(0 to {n_layers - 1})."
            )
    if which is not None and not is_quantized:
        raise ValueError(
            f"which={which!r} applies to the quantized networks only, not to "
            f"{type(final).__name__}; leave which=None."
        )
    if is_network:
        neurons = _network_neurons(final, names, layer)
        if not neurons:
            kinds = [state["kind"] for state in final.layers_]
            raise ValueError(
                f"{type(final).__name__} has no quadratic layer"
                + ("" if layer is None else f" at layer={layer}")
                + f" (layers: {kinds})."
            )
        return neurons
    if is_quantized:
        return _bilinear_network_neurons(final, names, which)
    if hasattr(final, "Q_") and hasattr(final, "coef_"):
        return _qlr_neurons(final, names)
    raise TypeError(
        f"{type(final).__name__} is not a fitted skquad quadratic estimator "
        "(QuadraticLogisticRegression, QNNClassifier, RPQNNClassifier, "
        "SDPQuantizedClassifier, BackpropQuantizedClassifier)."
    )
