"""The top of a regularization path: the smallest ``beta`` with a certified zero network."""

import math

import numpy as np
import torch

from .losses import dual_point
from .problem import LiftedData
from .routes import default_beta_floor

__all__ = ["auto_beta", "default_beta", "zero_network_beta"]


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


# The "auto" rule's bounds on beta / beta_max (see default_beta); a route of
# the solver table may lower the floor (its ``beta_floor``).
DEFAULT_BETA_FRACTION_RANGE = (1e-3, 5e-2)


def default_beta(lifting, X, y, weight, *, loss, n_outputs, n_samples=None):
    """The ``beta="auto"`` of the SDP estimators: ``beta_max`` times ``(p / n)^2``, clipped.

    ``beta_max`` (:func:`zero_network_beta`) is the penalty at which the data
    can no longer pay for a single neuron. It carries the scale of the loss
    and of the lifted inputs (the targets' units, the loss's slope, ``p``),
    and ``beta`` only matters relative to it, as glmnet scales its
    ``lambda`` path from ``lambda_max``. The fraction of it that predicts
    best shrinks as the samples per lifted coordinate, ``n / p``, grow: with
    few samples the relaxed model (a ``p x p`` matrix per output) must be
    held back, with many it can fit; ``(p / n)^2`` follows the best fraction
    of the :class:`~skquad.SDPQuantizedClassifierCV` path on the UCI sets
    (:doc:`/benchmarks`), clipped to ``DEFAULT_BETA_FRACTION_RANGE``: above
    its top every set lost accuracy. The floor is the solver's, not the
    data's: smaller fractions still gain, but the factor solver's iterations
    grow as ``beta`` shrinks. A route whose cost does not grow with it
    lowers the floor where it solves (its ``beta_floor`` in
    :data:`skquad.convex.ROUTES`): the compact interior point, for the
    squared loss with ``p (p + 1) / 2 <= 300``, to 1e-4 (the bottom of the
    ``SDPQuantizedClassifierCV`` path).

    ``n`` is the total sample weight (the number of samples when unweighted;
    an integer weight counts as that many repeated rows, scikit-learn's
    weight semantics; ``n_samples`` when the weights were normalized),
    ``p`` the lifted width of the penalty ``beta * p * sum_j ||alpha_j||_1``
    (features, intercept, ``weight_levels`` replicas, the polynomial
    coordinate: a multi-level model and the binary model on the replicated
    inputs, the same network, get the same ``beta``).

    Parameters
    ----------
    lifting, X, y, loss, n_outputs :
        As in :func:`zero_network_beta`.
    weight : ndarray of shape (n_samples,)
        Sample weights.
    n_samples : float, default=None
        ``n``; None: the sum of ``weight``.

    Returns
    -------
    beta : float
        ``fraction * beta_max``; when ``beta_max`` is 0 (the zero network
        fits the data exactly, e.g. all-zero regression targets) every
        ``beta`` gives the same solution and this is ``fraction``.
    beta_max : float

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.convex import InputLifting, default_beta
    >>> rng = np.random.RandomState(0)
    >>> X = rng.standard_normal((200, 3))
    >>> y = np.sign(X[:, 0] * X[:, 1])
    >>> beta, beta_max = default_beta(
    ...     InputLifting(), X, y, np.ones(200), loss="squared", n_outputs=1
    ... )
    >>> # (4 / 200)^2, above the compact form's floor
    >>> bool(np.isclose(beta, 4e-4 * beta_max))
    True
    >>> beta, beta_max = default_beta(
    ...     InputLifting(), X, y, np.ones(200), loss="logistic", n_outputs=1
    ... )
    >>> # clipped up to the factor solver's floor
    >>> bool(np.isclose(beta, 1e-3 * beta_max))
    True
    """
    beta_max = zero_network_beta(lifting, X, y, weight, loss=loss, n_outputs=n_outputs)
    n_samples = math.fsum(weight) if n_samples is None else float(n_samples)
    return auto_beta(beta_max, loss, lifting.n_lifted(np.shape(X)[1]), n_samples), beta_max


def auto_beta(beta_max, loss, width, n_samples):
    """:func:`default_beta`'s rule from ``beta_max``, the lifted width ``p`` and ``n``."""
    low, high = DEFAULT_BETA_FRACTION_RANGE
    low = default_beta_floor(loss, width, low)
    fraction = float(np.clip((width / n_samples) ** 2, low, high))
    return fraction * (beta_max if beta_max > 0 else 1.0)
