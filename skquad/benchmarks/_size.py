"""The parameter count the benchmark reports next to accuracy: the one place it is computed.

At merge this becomes a call to skquad.inspection's size function (engineer
"inspection"), which knows every skquad estimator's structure; until then it
counts the numbers stored in the fitted weight attributes that scikit-learn and
skquad estimators share by convention. Nothing else in skquad.benchmarks counts
parameters.
"""

import numpy as np

__all__ = ["parameter_count"]

# Fitted attributes that hold learned numbers (weights, biases, support vectors
# and their dual coefficients, the SDP network's factors).
_WEIGHT_ATTRIBUTES = (
    "coef_", "intercept_", "Q_", "coefs_", "intercepts_", "layers_",
    "support_vectors_", "dual_coef_", "U_", "V_", "alpha_",
)


def _size(value):
    if isinstance(value, np.ndarray):
        return value.size if value.dtype.kind in "fciub" else 0
    if isinstance(value, dict):
        return sum(_size(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_size(item) for item in value)
    return 0


def parameter_count(estimator):
    """Learned numbers in a fitted final estimator; NaN where unknown (e.g. tree ensembles)."""
    if hasattr(estimator, "steps"):  # a Pipeline: its final estimator holds the weights
        estimator = estimator.steps[-1][1]
    total = sum(_size(getattr(estimator, name, None)) for name in _WEIGHT_ATTRIBUTES)
    return float(total) if total else np.nan
