"""Synthetic datasets of the papers' experiments."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import Bunch, check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

__all__ = ["make_nonlinear_clusters", "make_planted_quantized", "make_xor"]


@validate_params(
    {"encoding": [StrOptions({"bipolar", "binary"})]},
    prefer_skip_nested_validation=True,
)
def make_xor(encoding="bipolar"):
    """The four points of the XOR problem (Noel et al., eq. 22).

    Parameters
    ----------
    encoding : {"bipolar", "binary"}, default="bipolar"
        ``"bipolar"``: inputs and labels in {-1, +1}, the paper's encoding.
        ``"binary"``: inputs and labels in {0, 1}.

    Returns
    -------
    X : ndarray of shape (4, 2), float64
    y : ndarray of shape (4,), int64
        ``y = x1 XOR x2``: the positive label where exactly one input is on.

    Examples
    --------
    >>> from skquad.datasets import make_xor
    >>> X, y = make_xor()
    >>> X.tolist(), y.tolist()
    ([[-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0], [1.0, 1.0]], [-1, 1, 1, -1])
    """
    bits = np.array([[0, 0], [1, 0], [0, 1], [1, 1]])
    labels = bits[:, 0] ^ bits[:, 1]
    if encoding == "bipolar":
        return (2.0 * bits - 1.0), (2 * labels - 1).astype(np.int64)
    return bits.astype(np.float64), labels.astype(np.int64)


# Noel et al., Table 3: two rows of three Gaussian clusters; within each row the
# covariances are, left to right in the table, [[1, -0.3], [-0.3, 1]], I and
# [[1, 0.3], [0.3, 1]]. Classes are numbered in the table's order (red, black,
# magenta, green, cyan, blue).
NONLINEAR_CLUSTER_MEANS = np.array(
    [[-16.0, 0.0], [-8.0, 0.0], [0.0, 0.0], [0.0, 10.0], [-8.0, 10.0], [-16.0, 10.0]]
)
_ROW_COVARIANCES = [
    np.array([[1.0, -0.3], [-0.3, 1.0]]),
    np.eye(2),
    np.array([[1.0, 0.3], [0.3, 1.0]]),
]
NONLINEAR_CLUSTER_COVARIANCES = np.array(_ROW_COVARIANCES * 2)


@validate_params(
    {
        "n_train_per_class": [Interval(Integral, 1, None, closed="left")],
        "n_test_per_class": [Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_nonlinear_clusters(n_train_per_class=2000, n_test_per_class=500, random_state=None):
    """Noel et al.'s six Gaussian clusters in the plane (its Table 3), split.

    Six classes, two rows of three clusters: means (-16, 0), (-8, 0), (0, 0),
    (0, 10), (-8, 10), (-16, 10); in each row the covariances are
    [[1, -0.3], [-0.3, 1]], the identity and [[1, 0.3], [0.3, 1]]. The data is
    not linearly separable one-vs-rest (the middle clusters), but one layer of
    six quadratic neurons (ellipses) separates it.

    Parameters
    ----------
    n_train_per_class : int, default=2000
        Training points per class (the paper's 2000).
    n_test_per_class : int, default=500
        Test points per class (the paper's 500); may be 0.
    random_state : int, RandomState instance or None, default=None
        Seeds the draw and the shuffling.

    Returns
    -------
    X_train : ndarray of shape (6 * n_train_per_class, 2)
    X_test : ndarray of shape (6 * n_test_per_class, 2)
    y_train : ndarray of shape (6 * n_train_per_class,), int64
        Class indices 0-5 in the paper's table order; rows are shuffled.
    y_test : ndarray of shape (6 * n_test_per_class,), int64

    Examples
    --------
    >>> from skquad.datasets import make_nonlinear_clusters
    >>> X_train, X_test, y_train, y_test = make_nonlinear_clusters(
    ...     100, 20, random_state=0)
    >>> X_train.shape, X_test.shape
    ((600, 2), (120, 2))
    """
    rng = check_random_state(random_state)

    def draw(n_per_class):
        X = np.concatenate(
            [
                rng.multivariate_normal(mean, covariance, size=n_per_class)
                for mean, covariance in zip(NONLINEAR_CLUSTER_MEANS, NONLINEAR_CLUSTER_COVARIANCES)
            ]
        ).reshape(-1, 2)
        y = np.repeat(np.arange(len(NONLINEAR_CLUSTER_MEANS), dtype=np.int64), n_per_class)
        order = rng.permutation(y.shape[0])
        return X[order], y[order]

    X_train, y_train = draw(n_train_per_class)
    X_test, y_test = draw(n_test_per_class)
    return X_train, X_test, y_train, y_test


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_planted": [Interval(Integral, 1, None, closed="left")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "target": [StrOptions({"sign", "continuous"})],
        "return_planted": ["boolean"],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_planted_quantized(
    n_samples=100,
    n_features=20,
    n_planted=10,
    noise=0.0,
    *,
    target="sign",
    return_planted=False,
    random_state=None,
):
    """Data labelled by a planted binary bilinear network (Bartan & Pilanci, section 5.1).

    As in the paper's planted experiment, ``X`` is standard Gaussian and the
    target comes from a two-layer network with bilinear activation whose first
    layer weights are binary and whose second layer weights are non-negative::

        f(x) = sum_j (x @ u_j) * (x @ v_j) * alpha_j,  u_j, v_j in {-1, +1}^d,  alpha_j >= 0

    The paper does not give the distributions of ``u_j, v_j, alpha_j``; here
    ``u_j, v_j`` are uniform random signs and ``alpha_j`` uniform on [0.5, 1.5]
    (so no planted neuron is negligible). For a test set from the same planted
    network, draw ``n_train + n_test`` samples in one call and split them: the
    rows are independent.

    Parameters
    ----------
    n_samples : int, default=100
        The paper's n = 100.
    n_features : int, default=20
        The paper's d = 20.
    n_planted : int, default=10
        Planted neurons (the paper's 10).
    noise : float, default=0.0
        Standard deviation of Gaussian noise added to ``f(x)`` before the
        labels are taken, relative to the standard deviation of ``f(x)`` over
        the sample (``noise=0.1`` adds 10 % noise).
    target : {"sign", "continuous"}, default="sign"
        ``"sign"``: labels ``sign(f(x) + noise)`` in {-1, +1} (0 counts as +1),
        for classifiers with the hinge or logistic loss. ``"continuous"``: the
        noisy values ``f(x) + noise`` themselves, for the squared loss.
    return_planted : bool, default=False
        Also return the planted network.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
    y : ndarray of shape (n_samples,)
        int64 labels in {-1, +1}, or float64 values.
    planted : :class:`~sklearn.utils.Bunch`
        Only if ``return_planted``: ``U`` and ``V`` (int8, shape
        ``(n_planted, n_features)``, rows ``u_j`` and ``v_j``), ``alpha``
        (shape ``(n_planted,)``), ``Z = sum_j alpha_j u_j v_j^T`` (so that
        ``f(x) = x^T Z x``) and ``scores`` (the noiseless ``f(X)``).

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.datasets import make_planted_quantized
    >>> X, y, planted = make_planted_quantized(random_state=0, return_planted=True)
    >>> X.shape, sorted(np.unique(y).tolist())
    ((100, 20), [-1, 1])
    >>> bool(np.all(np.sign(np.einsum("ij,jk,ik->i", X, planted.Z, X)) == y))
    True
    """
    rng = check_random_state(random_state)
    X = rng.standard_normal((n_samples, n_features))
    U = rng.choice(np.array([-1, 1], dtype=np.int8), size=(n_planted, n_features))
    V = rng.choice(np.array([-1, 1], dtype=np.int8), size=(n_planted, n_features))
    alpha = rng.uniform(0.5, 1.5, size=n_planted)
    scores = ((X @ U.T) * (X @ V.T)) @ alpha
    values = scores
    if noise > 0:
        spread = scores.std() if n_samples > 1 else abs(scores[0])
        values = scores + noise * (spread or 1.0) * rng.standard_normal(n_samples)
    if target == "sign":
        y = np.where(values >= 0, 1, -1).astype(np.int64)
    else:
        y = values.astype(np.float64)
    if not return_planted:
        return X, y
    Z = (U.T.astype(np.float64) * alpha) @ V.astype(np.float64)
    return X, y, Bunch(U=U, V=V, alpha=alpha, Z=Z, scores=scores)
