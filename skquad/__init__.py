"""skquad: quadratic neurons for scikit-learn.

Estimators
----------
BackpropQuantizedClassifier
    Bartan & Pilanci's (SDP) baseline: a bilinear network with real weights
    trained by SGD, then sign-quantized with one fitted scale.
BackpropQuantizedRegressor
    The same baseline for regression.
QNNClassifier
    Quadratic neural network: layers of full quadratic neurons
    ``b + W a + a^T Q a`` (Noel et al., QNN/RPQNN), trained with ReLinear
    (Fan et al.).
QNNRegressor
    The same network as a regressor (MLPRegressor's parameters).
QuadraticLogisticRegression
    One quadratic neuron ``sigmoid(x^T Q x + w^T x + b)`` per class score.
QuadraticLogisticRegressionCV
    QuadraticLogisticRegression with ``C`` chosen as LogisticRegressionCV
    chooses it, along a warm-started path on each fold.
QuadraticRegression
    One quadratic neuron ``x^T Q x + w^T x + b`` per output, with Ridge's
    penalty: ``PolynomialFeatures(2) + Ridge`` without the feature matrix.
QuadraticRegressionCV
    QuadraticRegression with ``alpha`` chosen as RidgeCV chooses it
    (efficient leave-one-out, or K-fold).
RPQNNClassifier
    Reduced-parameter quadratic network ``(W a + b) * (U a + c)`` (Noel et al.,
    QNN/RPQNN), optionally with Fan et al.'s (ReLinear) power term.
RPQNNRegressor
    The reduced-parameter network as a regressor (MLPRegressor's parameters).
SDPQuantizedClassifier
    Binary-weight bilinear network trained by convex SDP relaxation and
    sampling (Bartan & Pilanci), with a certified lower bound on its training
    objective.
SDPQuantizedRegressor
    The same binary-weight network for regression (squared loss, vector
    outputs), with the same certificate.
SDPQuantizedClassifierCV
    SDPQuantizedClassifier with its penalty ``beta`` chosen by cross-validation
    along a warm-started regularization path.
SDPQuantizedRegressorCV
    SDPQuantizedRegressor with ``beta`` chosen the same way.

The estimators are imported on first use (PEP 562), so that ``import skquad``
is fast and imports neither torch nor CVXPY; ``from skquad import
QNNClassifier`` and ``skquad.QNNClassifier`` work as usual.
"""

import importlib
from typing import TYPE_CHECKING

from ._version import __version__ as __version__

# Public name -> submodule that defines it.
_LAZY_ATTRIBUTES = {
    "BackpropQuantizedClassifier": ".quantized._backprop",
    "BackpropQuantizedRegressor": ".quantized._backprop_regressor",
    "QNNClassifier": ".neural_network",
    "QNNRegressor": ".neural_network",
    "QuadraticLogisticRegression": ".linear_model",
    "QuadraticLogisticRegressionCV": ".linear_model",
    "QuadraticRegression": ".linear_model",
    "QuadraticRegressionCV": ".linear_model",
    "RPQNNClassifier": ".neural_network",
    "RPQNNRegressor": ".neural_network",
    "SDPQuantizedClassifier": ".quantized._sdp",
    "SDPQuantizedClassifierCV": ".quantized._sdp_cv",
    "SDPQuantizedRegressor": ".quantized._sdp_regressor",
    "SDPQuantizedRegressorCV": ".quantized._sdp_regressor_cv",
}

__all__ = [
    "BackpropQuantizedClassifier",
    "BackpropQuantizedRegressor",
    "QNNClassifier",
    "QNNRegressor",
    "QuadraticLogisticRegression",
    "QuadraticLogisticRegressionCV",
    "QuadraticRegression",
    "QuadraticRegressionCV",
    "RPQNNClassifier",
    "RPQNNRegressor",
    "SDPQuantizedClassifier",
    "SDPQuantizedClassifierCV",
    "SDPQuantizedRegressor",
    "SDPQuantizedRegressorCV",
]

if TYPE_CHECKING:  # static analysers and IDEs see the real imports
    from .linear_model import QuadraticLogisticRegression as QuadraticLogisticRegression
    from .linear_model import QuadraticLogisticRegressionCV as QuadraticLogisticRegressionCV
    from .linear_model import QuadraticRegression as QuadraticRegression
    from .linear_model import QuadraticRegressionCV as QuadraticRegressionCV
    from .neural_network import QNNClassifier as QNNClassifier
    from .neural_network import QNNRegressor as QNNRegressor
    from .neural_network import RPQNNClassifier as RPQNNClassifier
    from .neural_network import RPQNNRegressor as RPQNNRegressor
    from .quantized import BackpropQuantizedClassifier as BackpropQuantizedClassifier
    from .quantized import BackpropQuantizedRegressor as BackpropQuantizedRegressor
    from .quantized import SDPQuantizedClassifier as SDPQuantizedClassifier
    from .quantized import SDPQuantizedClassifierCV as SDPQuantizedClassifierCV
    from .quantized import SDPQuantizedRegressor as SDPQuantizedRegressor
    from .quantized import SDPQuantizedRegressorCV as SDPQuantizedRegressorCV


def __getattr__(name):
    module_name = _LAZY_ATTRIBUTES.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name, __name__), name)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
