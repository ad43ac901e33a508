"""Quadratic neural network classifiers (Noel et al., with Fan et al.'s ReLinear).

:class:`QNNClassifier` stacks full quadratic layers (``b + W a + a^T Q a``) and
conventional ones; :class:`RPQNNClassifier` uses Noel et al.'s reduced-parameter
layers (``(W a + b) * (U a + c)``), optionally with Fan et al.'s power term.
Both follow :class:`~sklearn.neural_network.MLPClassifier`'s parameters.

Modules: ``_base`` (the shared training and prediction, and the classifiers'
constructor), ``_qnn`` and ``_rpqnn`` (one classifier each), ``_regressors``
(:class:`QNNRegressor` and :class:`RPQNNRegressor`, MLPRegressor's output). The math is in :mod:`skquad.nn`.
"""

from ._qnn import QNNClassifier
from ._regressors import QNNRegressor, RPQNNRegressor
from ._rpqnn import RPQNNClassifier

__all__ = ["QNNClassifier", "QNNRegressor", "RPQNNClassifier", "RPQNNRegressor"]
