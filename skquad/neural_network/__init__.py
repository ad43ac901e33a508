"""Quadratic neural networks (Noel et al., with Fan et al.'s ReLinear).

:class:`QNNClassifier` stacks full quadratic layers (``b + W a + a^T Q a``) and
conventional ones; :class:`RPQNNClassifier` uses Noel et al.'s reduced-parameter
layers (``(W a + b) * (U a + c)``), optionally with Fan et al.'s power term.
Both follow :class:`~sklearn.neural_network.MLPClassifier`'s parameters;
:class:`QNNRegressor` and :class:`RPQNNRegressor` are the same networks as
regressors, following :class:`~sklearn.neural_network.MLPRegressor`'s.

Modules: ``_base`` (the shared constructor, training and prediction),
``_classifier`` and ``_regressor`` (the task: labels or targets, loss,
validation score), ``_qnn`` and ``_rpqnn`` (the estimators, by layer kind).
The math is in :mod:`skquad.nn`.
"""

from ._qnn import QNNClassifier, QNNRegressor
from ._rpqnn import RPQNNClassifier, RPQNNRegressor

__all__ = ["QNNClassifier", "QNNRegressor", "RPQNNClassifier", "RPQNNRegressor"]
