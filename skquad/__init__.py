"""skquad: quadratic neurons for scikit-learn.

Estimators
----------
QuadraticLogisticRegression
    One quadratic neuron ``sigmoid(x^T Q x + w^T x + b)`` per class score.
"""

__version__ = "0.1.0.dev0"

__all__ = []
