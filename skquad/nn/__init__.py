"""The math of skquad's networks as torch modules and functions.

No scikit-learn in here: the estimators wrap these modules.

Layers
------
QuadraticLayer
    Paper 001's full quadratic neuron ``b + W a + a^T Q a`` (one symmetric
    ``Q`` per neuron).
ReducedQuadraticLayer
    Paper 001's reduced-parameter neuron ``(W a + b) * (U a + c)``, and with
    ``power_term=True`` paper 000's neuron.

Quadratic logistic regression
-----------------------------
quadratic_form
    Module of functions: quadratic-form scores, their log-loss and its
    closed-form gradient ``X^T diag(r) X`` (used by
    :class:`skquad.QuadraticLogisticRegression`).

Backward passes
---------------
CachedQuadraticForm, CachedBilinearProduct
    Paper 001's Algorithms 1 and 2 as :class:`torch.autograd.Function`.
PackedQuadraticForm
    Algorithm 1 on the packed upper triangle of ``Q`` (the paper's ``M(x)``
    features), for wide layers.
"""

from .backward import CachedBilinearProduct, CachedQuadraticForm, PackedQuadraticForm
from .layers import QuadraticLayer, ReducedQuadraticLayer

__all__ = [
    "CachedBilinearProduct",
    "CachedQuadraticForm",
    "PackedQuadraticForm",
    "QuadraticLayer",
    "ReducedQuadraticLayer",
]
