"""Binary-weight two-layer networks: convex SDP training and its baseline (Bartan & Pilanci).

:class:`SDPQuantizedClassifier` solves the convex SDP relaxation of the
training problem of a bilinear network with ±1 first-layer weights, then
samples such a network from the relaxed solution (Algorithm 1);
:class:`BackpropQuantizedClassifier` is the paper's baseline: the same network
with real weights trained by SGD with momentum, then quantized by signs and one
fitted scale.

:class:`SDPQuantizedClassifierCV` chooses the SDP's ``beta`` by
cross-validation along a warm-started regularization path;
:class:`SDPQuantizedRegressor` is the same network for regression (the squared
loss, vector outputs), sharing the classifier's fit, sampling and export;
:class:`SDPQuantizedRegressorCV` chooses its ``beta`` by the same search;
:class:`BackpropQuantizedRegressor` is the baseline for it.

One module per estimator (``_sdp``, ``_sdp_cv``, ``_sdp_regressor``,
``_sdp_regressor_cv``, ``_backprop``,
``_backprop_regressor``); the math
lives in :mod:`skquad.convex` (the second-layer refit in
:mod:`skquad.convex.second_layer`) and :mod:`skquad.nn.bilinear`.
"""

from ._backprop import BackpropQuantizedClassifier
from ._backprop_regressor import BackpropQuantizedRegressor
from ._sdp import SDPQuantizedClassifier
from ._sdp_cv import SDPQuantizedClassifierCV
from ._sdp_regressor import SDPQuantizedRegressor
from ._sdp_regressor_cv import SDPQuantizedRegressorCV

__all__ = [
    "BackpropQuantizedClassifier",
    "BackpropQuantizedRegressor",
    "SDPQuantizedClassifier",
    "SDPQuantizedClassifierCV",
    "SDPQuantizedRegressor",
    "SDPQuantizedRegressorCV",
]
