"""Quadric analysis of every quadratic neuron of a fitted estimator."""

import numpy as np

from ._neurons import quadratic_neurons
from .._foundation._pipeline import split_pipeline
from ._quadric import analyze_quadric

__all__ = ["quadric_analysis", "to_raw_units"]


def _scaler_affine_map(preprocessing):
    """``(mean, scale)`` with ``x_estimator = (x_raw - mean) / scale`` for StandardScaler steps."""
    from sklearn.preprocessing import StandardScaler

    mean, scale = None, None
    for name, step in preprocessing.steps:
        if step is None or step == "passthrough":
            continue
        if not isinstance(step, StandardScaler):
            raise TypeError(
                "units='raw' needs every step before the estimator to be a StandardScaler "
                f"(an affine map); step {name!r} is a {type(step).__name__}."
            )
        n = step.n_features_in_
        m = step.mean_ if step.with_mean else np.zeros(n)
        s = step.scale_ if step.with_std else np.ones(n)
        if mean is None:
            mean, scale = m, s
        else:  # (((x - m1) / s1) - m2) / s2 = (x - (m1 + s1 m2)) / (s1 s2)
            mean, scale = mean + scale * m, scale * s
    return mean, scale


def to_raw_units(Q, w, b, mean, scale):
    """Rewrite ``z^T Q z + w^T z + b`` with ``z = (x - mean) / scale`` as a quadric in ``x``.

    Parameters
    ----------
    Q : ndarray of shape (d, d)
    w : ndarray of shape (d,)
    b : float
    mean, scale : ndarray of shape (d,)
        A StandardScaler's ``mean_`` and ``scale_``.

    Returns
    -------
    Q_raw, w_raw, b_raw
        ``Q_raw = D Q D``, ``w_raw = D w - 2 Q_raw mean``,
        ``b_raw = mean^T Q_raw mean - w^T D mean + b`` with ``D = diag(1 / scale)``.
    """
    inverse = 1.0 / np.asarray(scale, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    Q_raw = Q * np.outer(inverse, inverse)
    w_raw = w * inverse - 2.0 * Q_raw @ mean
    b_raw = float(mean @ Q_raw @ mean - (w * inverse) @ mean + b)
    return Q_raw, w_raw, b_raw


def quadric_analysis(estimator, *, layer=None, which=None, level=0.0, units="estimator", feature_names=None, tol=None):
    """Eigenvalues, inertia, surface type, center and axes of every quadratic neuron.

    Parameters
    ----------
    estimator : fitted skquad estimator or Pipeline ending in one
    layer : int, default=None
        Networks: only this layer of ``layers_`` (None: every quadratic layer).
    which : {"sampled", "relaxed", "float"}, default=None
        Quantized networks: which network (see :func:`quadratic_neurons`).
    level : float, default=0.0
        The level surface ``score = level`` to classify (0 is the decision
        surface of a binary classifier and where a ReLU neuron switches).
    units : {"estimator", "raw"}, default="estimator"
        "estimator": the units the estimator sees (after a Pipeline's earlier
        steps, e.g. standardized). "raw": for neurons on the input features of
        a Pipeline whose earlier steps are all StandardScaler, the quadric in
        the Pipeline's raw input units (the type and inertia do not change:
        the map is affine; eigenvalues, axes and center do).
    feature_names : array-like of str, default=None
    tol : float, default=None
        Zero threshold for eigenvalues (see :func:`analyze_quadric`).

    Returns
    -------
    analyses : list of QuadricAnalysis
        One per neuron, in the order of :func:`quadratic_neurons`.

    Examples
    --------
    >>> from sklearn.datasets import make_circles
    >>> from skquad import QuadraticLogisticRegression
    >>> from skquad.inspection import quadric_analysis
    >>> X, y = make_circles(n_samples=200, factor=0.5, noise=0.05, random_state=0)
    >>> (analysis,) = quadric_analysis(QuadraticLogisticRegression(C=10).fit(X, y))
    >>> analysis.surface_type
    'ellipsoid'
    """
    if units not in ("estimator", "raw"):
        raise ValueError(f"units must be 'estimator' or 'raw', got {units!r}.")
    neurons = quadratic_neurons(estimator, layer=layer, which=which, feature_names=feature_names)
    mean = scale = None
    if units == "raw":
        preprocessing, _ = split_pipeline(estimator)
        if preprocessing is not None:
            mean, scale = _scaler_affine_map(preprocessing)
    analyses = []
    for neuron in neurons:
        Q, w, b = neuron.Q, neuron.w, neuron.b
        if mean is not None and neuron.on_input_features:
            Q, w, b = to_raw_units(Q, w, b, mean, scale)
        analyses.append(
            analyze_quadric(Q, w, b, level=level, feature_names=neuron.feature_names, name=neuron.name, tol=tol)
        )
    return analyses
