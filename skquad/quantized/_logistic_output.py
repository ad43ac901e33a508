"""A logistic output layer on a binary network's neurons, solved in their lifted coordinates.

The neurons' outputs are ``H = Φ S`` exactly: ``Φ`` (n, q) holds the rows' lifted
coordinates and ``S`` (q, m) the neurons' (:func:`skquad.convex.statistics.svec_rows`,
:func:`~skquad.convex.statistics.neuron_svecs`), with ``q = p (p + 1) / 2`` often far
below the ``m`` neurons. The L2-penalised logistic regression

    minimise over (a, b)    Σ_i w_i loss(H_i a + b, y_i) + s² ||a||² / (2 C)

depends on ``a`` only through ``S a`` and is smallest, for given ``S a``, at the
minimum-norm ``a`` in the row space of ``S``. With ``S Sᵀ = E Λ Eᵀ`` and ``a = Sᵀ E Λ^(-1/2) z``
it is scikit-learn's :class:`~sklearn.linear_model.LogisticRegression` on the ``q`` columns
``Ψ = Φ E Λ^(1/2)`` (``||a|| = ||z||``, ``H a = Ψ z``): the same optimum at ``q / m`` of the
flops per iteration. ``s²`` is the mean square of the centred outputs, so that ``C`` is
scikit-learn's on outputs scaled to unit mean square.
"""

import warnings
from contextlib import nullcontext

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from .._foundation._reporting import warn_user
from .._foundation._runtime import thread_count
from .._foundation._threads import limit_threads

__all__ = ["logistic_output_layer"]

# Eigenvalues of S Sᵀ below this fraction of the largest carry no direction of the outputs.
_RANK_TOLERANCE = 1e-10


def logistic_output_layer(rows, neurons, labels, weight, C=1.0, tol=1e-4, max_iter=1000):
    """``(coef (m, n_scores), intercept (n_scores,))`` of the penalised logistic regression above.

    ``rows`` ``Φ`` (n, q) and ``neurons`` ``S`` (q, m), or ``rows`` the outputs ``H`` (n, m)
    themselves and ``neurons`` None (where ``q`` is not below ``m``); ``labels`` class indices
    (n,), ``weight`` the rows' weights; ``C``, ``tol``, ``max_iter``: scikit-learn's. Two
    classes give one score (the second class's log-odds), as scikit-learn's binary model.
    """
    mean = weight @ rows / weight.sum()
    if neurons is None:
        features, n_neurons = rows - mean, rows.shape[1]  # H, centred (b absorbs the shift)
    else:
        eigenvalues, vectors = np.linalg.eigh(neurons @ neurons.T)
        keep = eigenvalues > _RANK_TOLERANCE * max(float(eigenvalues[-1]), np.finfo(float).tiny)
        root = np.sqrt(eigenvalues[keep])
        features, n_neurons = (rows - mean) @ (vectors[:, keep] * root), neurons.shape[1]  # Ψ
    scale_squared = max(float(weight @ (features**2).sum(axis=1)) / weight.sum() / n_neurons,
                        np.finfo(float).tiny)
    model = LogisticRegression(C=C / scale_squared, tol=tol, max_iter=max_iter)
    # One BLAS thread where the runtime policy gives an evaluation's products (the scores and
    # the gradient, 4 n q K flops) one thread.
    flops = 4.0 * features.size * max(len(np.unique(labels)) - 1, 1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        with limit_threads(None, blas=1) if thread_count("auto", "cpu", flops) == 1 else nullcontext():
            model.fit(features, labels, sample_weight=weight)
    for item in caught:  # any other warning passes on as it was
        if not issubclass(item.category, ConvergenceWarning):
            warnings.warn_explicit(item.message, item.category, item.filename, item.lineno)
    if any(issubclass(item.category, ConvergenceWarning) for item in caught):
        # scikit-learn's text names its own max_iter, which the network's estimator does not have
        warn_user(
            f"The logistic refit of the output layer stopped after {max_iter} L-BFGS iterations "
            "before its convergence test; the network keeps the weights it reached. "
            "refit_output_layer=True refits the ridge instead.", ConvergenceWarning)
    if neurons is None:
        return model.coef_.T, model.intercept_ - mean @ model.coef_.T
    coef = neurons.T @ (vectors[:, keep] @ (model.coef_.T / root[:, None]))
    return coef, model.intercept_ - (mean @ neurons) @ coef
