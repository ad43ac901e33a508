"""Quadratic neural network classifiers (Noel et al., with Fan et al.'s ReLinear).

:class:`QNNClassifier` stacks full quadratic layers (``b + W a + a^T Q a``) and
conventional ones; :class:`RPQNNClassifier` uses Noel et al.'s reduced-parameter
layers (``(W a + b) * (U a + c)``), optionally with Fan et al.'s power term.
Both follow :class:`~sklearn.neural_network.MLPClassifier`'s parameters.

Modules: ``_base`` (the shared constructor, fit and prediction), ``_qnn`` and
``_rpqnn`` (one estimator each). The math is in :mod:`skquad.nn`.
"""

from ._qnn import QNNClassifier
from ._rpqnn import RPQNNClassifier

__all__ = ["QNNClassifier", "RPQNNClassifier"]
