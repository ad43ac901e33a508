"""The parameter count the benchmark reports next to accuracy: the one place it is computed.

It is :func:`skquad.inspection.model_size`, which knows every skquad estimator's
structure (a symmetric ``Q`` counts ``d(d+1)/2`` free entries) and scikit-learn's
linear models, MLPs and preprocessing steps; a model it cannot count (tree
ensembles, kernel SVMs) gets NaN rather than a misleading partial count.
"""

import numpy as np

from ..inspection import model_size

__all__ = ["parameter_count"]


def parameter_count(estimator):
    """Trainable parameters of a fitted estimator or Pipeline; NaN where unknown."""
    size = model_size(estimator, unknown="ignore")
    return np.nan if size.uncounted else float(size.n_parameters)
