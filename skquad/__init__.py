"""skquad: quadratic neurons for scikit-learn.

Estimators
----------
BackpropQuantizedClassifier
    Paper 002's baseline: a bilinear network with real weights trained by SGD,
    then sign-quantized with one fitted scale.
QNNClassifier
    Quadratic neural network: layers of full quadratic neurons
    ``b + W a + a^T Q a`` (paper 001), trained with ReLinear (paper 000).
QuadraticLogisticRegression
    One quadratic neuron ``sigmoid(x^T Q x + w^T x + b)`` per class score.
RPQNNClassifier
    Reduced-parameter quadratic network ``(W a + b) * (U a + c)`` (paper 001),
    optionally with paper 000's power term.
SDPQuantizedClassifier
    Binary-weight bilinear network trained by convex SDP relaxation and
    sampling (paper 002), with a certified lower bound on its training objective.
"""

from .linear_model import QuadraticLogisticRegression
from .neural_network import QNNClassifier, RPQNNClassifier
from .quantized import BackpropQuantizedClassifier, SDPQuantizedClassifier

__version__ = "0.1.0.dev0"

__all__ = [
    "BackpropQuantizedClassifier",
    "QNNClassifier",
    "QuadraticLogisticRegression",
    "RPQNNClassifier",
    "SDPQuantizedClassifier",
]
