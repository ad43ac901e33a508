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

Polarization evaluates the function at ``1 + 2 d + d (d - 1) / 2`` points and is
exact for quadratic functions up to rounding; the result is checked against the
function at random points, so a function that is not quadratic is an error.
"""

import warnings
from dataclasses import dataclass
from numbers import Integral

import numpy as np
import torch
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from ._pipeline import input_feature_names, split_pipeline

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
    """The estimator's method for ``which``, or None."""
    is_classifier = hasattr(estimator, "classes_")
    for attribute in _SCORE_FUNCTIONS.get(which, ()):
        if attribute.endswith("predict") and is_classifier:
            continue  # a classifier's predict gives labels, not scores
        if hasattr(estimator, attribute):
            return getattr(estimator, attribute)
    return None
# Largest total size of the dense Q matrices built for a network's neurons.
_MAX_NEURON_BYTES = 2 * 2**30
# Rows per call when a function is polarized (bounds memory for wide inputs).
_POLARIZATION_CHUNK = 8192


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
        rng = check_random_state(0)
        T = rng.standard_normal((min(64, 4 + 2 * d), d))
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


def _layer_quadratic_forms(state):
    """``(Q, w, b)`` of every neuron of one quadratic layer's numpy state."""
    if "quadratic" in state:
        Q = np.asarray(state["quadratic"], dtype=np.float64)
        w = np.asarray(state["weight"], dtype=np.float64)
        bias = state.get("bias")
        b = np.zeros(w.shape[0]) if bias is None else np.asarray(bias, dtype=np.float64)
        return 0.5 * (Q + Q.transpose(0, 2, 1)), w, b
    from ..export._torch import layer_module  # the layer's own forward, in float64

    module = layer_module(state, torch.float64)
    n_in = state["options"]["in_features"]

    def forward(A):
        with torch.no_grad():
            return module(torch.as_tensor(A, dtype=torch.float64)).numpy()

    return quadratic_form_by_polarization(forward, n_in)


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
            Q, w, b = _layer_quadratic_forms(state)
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
    d = estimator.n_features_in_
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
    # ignored (issue 19: which="bogus", layer=99 passed silently).
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
