"""The math of skquad's networks as torch modules and functions.

No scikit-learn in here: the estimators wrap these modules.

Layers
------
QuadraticLayer
    Noel et al.'s full quadratic neuron ``b + W a + a^T Q a`` (one symmetric
    ``Q`` per neuron).
ReducedQuadraticLayer
    Noel et al.'s reduced-parameter neuron ``(W a + b) * (U a + c)``, and with
    ``power_term=True`` Fan et al.'s neuron.

Networks
--------
layers.new_layer, layers.layer_to_numpy_state, layers.layer_from_numpy_state
    Any layer kind (``torch.nn.Linear`` included) drawn from a local generator,
    exported to numpy and rebuilt without a random draw.
network
    Stacks of layers: ``new_network()`` (drawn from a local
    generator), numpy export and rebuild, parameter counts.
fused
    ``FusedNetwork``, the whole network's forward and
    backward pass written out (Algorithms 1 and 2 chained), the estimators'
    default training path.
sparse
    Sparse (CSR/CSC) input: row batches as torch sparse tensors for the first layer.
polarization
    ``(Q, w, b)`` of a layer's neurons from its numpy state, and of any
    quadratic function by polarization (read by :mod:`skquad.inspection` and
    :mod:`skquad.export`).

Quadratic logistic regression
-----------------------------
quadratic_form
    Module of functions: quadratic-form scores, their log-loss and its
    closed-form gradient ``X^T diag(r) X`` (used by
    :class:`skquad.QuadraticLogisticRegression`).
quadratic_dual
    Newton's method on the dual (kernel) coefficients of the binary problem,
    for few rows (:class:`skquad.QuadraticLogisticRegression`'s choice there).

Backward passes
---------------
CachedQuadraticForm, CachedBilinearProduct
    Noel et al.'s Algorithms 1 and 2 as :class:`torch.autograd.Function`.
PackedQuadraticForm
    Algorithm 1 on the packed upper triangle of ``Q`` (Noel et al.'s ``M(x)``
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
