"""The top of a regularization path: the smallest ``beta`` with a certified zero network."""

import numpy as np
import torch

from .losses import dual_point
from .problem import LiftedData

__all__ = ["default_beta", "zero_network_beta"]


def zero_network_beta(lifting, X, y, weight, *, loss, n_outputs):
    """A ``beta`` at and above which the zero network solves the SDP relaxation.

    At ``rho = 0`` the relaxed objective changes along a feasible direction
    ``D = P - N`` (``diag(P + N) = 1``) at the rate ``2 <M_k, D> + 2 beta p``
    with ``M_k = Σ_i w_i l'(0)_ik L(x_i)`` (a subgradient for the hinge
    losses). Every such ``D`` has ``|<M_k, D>| <= ||M_k||_2 tr(P + N) =
    p ||M_k||_2``, so for ``beta >= max_k ||M_k||_2`` no direction decreases
    the (convex) objective and ``rho = 0`` is optimal. ``L`` is the lifting
    the fit uses (intercept, ``weight_levels`` replicas, polynomial
    activations), through :class:`LiftedData`.

    Parameters
    ----------
    lifting : InputLifting
        With the fit's standardization (``center``, ``scale``).
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        ±1 labels or real targets (one output), class indices (more).
    weight : ndarray of shape (n_samples,)
    loss : {"squared", "logistic", "hinge"}
    n_outputs : int

    Returns
    -------
    beta_max : float
        0 when every ``M_k`` vanishes (any ``beta`` > 0 gives the zero network).
    """
    data = LiftedData.from_lifting(
        lifting, X, y, weight, loss=loss, beta=1.0, n_outputs=n_outputs
    )
    target = data.target
    if loss == "hinge":
        # A subgradient at 0: -t (binary), 1 - 2 onehot (multi-class, one-vs-rest).
        slopes = -target if n_outputs == 1 else 1.0 - 2.0 * target
    else:
        slopes = dual_point(torch.zeros_like(target), target, loss)
    largest = 0.0
    for k in range(n_outputs):
        M = data.weighted_matrix(data.weight * slopes[:, k])
        eigenvalues = np.linalg.eigvalsh(0.5 * (M + M.T).cpu().numpy())
        largest = max(largest, float(np.max(np.abs(eigenvalues))))
    return largest


# beta = DEFAULT_BETA_FRACTION * beta_max: see default_beta for how it was chosen.
DEFAULT_BETA_FRACTION = 1e-2


def default_beta(lifting, X, y, weight, *, loss, n_outputs):
    """The ``beta="auto"`` of the SDP estimators: a fixed fraction of ``beta_max``.

    ``beta_max`` (:func:`zero_network_beta`) is the penalty at which the data
    can no longer pay for a single neuron: it carries the scale of the loss
    and of the lifted inputs (``p``, the targets' units, the loss's slope),
    and ``beta`` only matters relative to it, as glmnet scales its
    ``lambda`` path from ``lambda_max``. The fraction is the one measured
    best on the UCI benchmark's sets (see the user guide's "Choosing beta").

    Parameters
    ----------
    lifting, X, y, weight, loss, n_outputs :
        As in :func:`zero_network_beta`.

    Returns
    -------
    beta : float
        ``DEFAULT_BETA_FRACTION * beta_max``; when ``beta_max`` is 0 (the
        zero network fits the data exactly, e.g. all-zero regression
        targets) every ``beta`` gives the same solution and this is
        ``DEFAULT_BETA_FRACTION``.
    beta_max : float
    """
    beta_max = zero_network_beta(lifting, X, y, weight, loss=loss, n_outputs=n_outputs)
    return DEFAULT_BETA_FRACTION * (beta_max if beta_max > 0 else 1.0), beta_max
