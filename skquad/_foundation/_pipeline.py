"""Find the skquad estimator at the end of a Pipeline.

Shared by :mod:`skquad.inspection` and :mod:`skquad.export`, which both accept
a fitted estimator or a Pipeline ending in one; it lives below them so that
neither imports the other's private modules.
"""

from sklearn.pipeline import Pipeline

__all__ = []


def split_pipeline(estimator):
    """``(preprocessing, final_estimator)``; preprocessing is None without a Pipeline."""
    if isinstance(estimator, Pipeline):
        final = estimator.steps[-1][1]
        preprocessing = estimator[:-1] if len(estimator.steps) > 1 else None
        return preprocessing, final
    return None, estimator
