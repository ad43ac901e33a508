"""Binary-weight two-layer networks: convex SDP training and its baseline (Bartan & Pilanci).

:class:`SDPQuantizedClassifier` solves the convex SDP relaxation of the
training problem of a bilinear network with ±1 first-layer weights, then
samples such a network from the relaxed solution (Algorithm 1);
:class:`BackpropQuantizedClassifier` is the paper's baseline: the same network
with real weights trained by SGD with momentum, then quantized by signs and one
fitted scale.

One module per estimator (``_sdp``, ``_backprop``); the math lives in
:mod:`skquad.convex` and :mod:`skquad.nn.bilinear`.
"""

from ._backprop import BackpropQuantizedClassifier
from ._sdp import SDPQuantizedClassifier

__all__ = ["SDPQuantizedClassifier", "BackpropQuantizedClassifier"]
