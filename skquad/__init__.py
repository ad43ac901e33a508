"""skquad: quadratic neurons for scikit-learn.

Estimators
----------
QNNClassifier
    Quadratic neural network: layers of full quadratic neurons
    ``b + W a + a^T Q a`` (paper 001), trained with ReLinear (paper 000).
QuadraticLogisticRegression
    One quadratic neuron ``sigmoid(x^T Q x + w^T x + b)`` per class score.
RPQNNClassifier
    Reduced-parameter quadratic network ``(W a + b) * (U a + c)`` (paper 001),
    optionally with paper 000's power term.
"""

from .linear_model import QuadraticLogisticRegression
from .neural_network import QNNClassifier, RPQNNClassifier

__version__ = "0.1.0.dev0"

__all__ = ["QNNClassifier", "QuadraticLogisticRegression", "RPQNNClassifier"]
