"""The names of a fitted estimator's input features, and ``X`` as it sees it (after a Pipeline's steps)."""

import numpy as np
from sklearn.utils.validation import check_is_fitted, validate_data

from .._foundation._pipeline import split_pipeline

__all__ = []


def input_feature_names(estimator, feature_names=None):
    """Names of the features the final estimator sees.

    ``feature_names`` when given; else the final estimator's
    ``feature_names_in_``; else ``get_feature_names_out()`` of the steps before
    it in a Pipeline; else ``x0, x1, ...``.
    """
    preprocessing, final = split_pipeline(estimator)
    check_is_fitted(final)
    n_features = final.n_features_in_
    if feature_names is not None:
        names = np.asarray(feature_names, dtype=object)
        if names.shape != (n_features,):
            raise ValueError(
                f"feature_names has {names.shape[0] if names.ndim else 0} names but "
                f"{type(final).__name__} sees {n_features} features."
            )
        return names
    names = getattr(final, "feature_names_in_", None)
    if names is None and preprocessing is not None:
        try:
            names = preprocessing.get_feature_names_out()
        except (AttributeError, ValueError, TypeError):
            names = None
    if names is None or len(names) != n_features:
        names = [f"x{i}" for i in range(n_features)]
    return np.asarray(names, dtype=object)


def transform_to_estimator_input(estimator, X):
    """``X`` as the final estimator sees it (through the preceding steps), float64."""
    preprocessing, final = split_pipeline(estimator)
    if preprocessing is not None:
        X = preprocessing.transform(X)
    # The estimator's own input check, as predict runs it: a
    # DataFrame whose columns come in another order than at fit is refused with
    # scikit-learn's message, not read as the wrong features.
    validate_data(final, X, reset=False, accept_sparse=True, dtype=None,
                  ensure_all_finite=False, skip_check_array=True)
    if hasattr(X, "toarray"):
        X = X.toarray()
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or not np.all(np.isfinite(X)):
        raise ValueError(
            "X must be a 2-D array of finite values as the estimator sees it (after the "
            "Pipeline's earlier steps); impute missing values first, e.g. with SimpleImputer."
        )
    return X
