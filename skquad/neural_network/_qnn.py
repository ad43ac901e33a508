"""Quadratic neural networks (Noel et al., Algorithm 1): classifier and regressor."""

from .._foundation._docstrings import shared_docstring
from ..nn.layers import QuadraticLayer
from ._classifier import BaseQuadraticNetworkClassifier
from ._regressor import BaseQuadraticNetworkRegressor

__all__ = ["QNNClassifier", "QNNRegressor"]


@shared_docstring
class QNNClassifier(BaseQuadraticNetworkClassifier):
    """Quadratic neural network classifier (Noel et al., Algorithm 1).

    Layer ``l``, neuron ``k`` computes ``z_k = b_k + W_k a + a^T Q^(k) a`` with
    a symmetric ``Q^(k)`` per neuron (``n_out * n_in**2`` parameters), or a
    conventional ``b + W a`` where ``quadratic_layers`` says so. Trained with
    ReLinear (Fan et al.) by default: the quadratic parts start at zero and
    learn with a smaller learning rate. Accepts every parameter of
    :class:`~sklearn.neural_network.MLPClassifier` with the same meaning.

    Parameters
    ----------
    [shared: hidden_layer_sizes activation quadratic_layers output_activation solver alpha:QNNClassifier]

    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for "auto". Ignored by lbfgs.

    [shared: learning_rate]

    learning_rate_init : float, default=1e-3
        Initial step size of sgd and adam.

    power_t : float, default=0.5
        Exponent of the "invscaling" schedule (sgd only).

    max_iter : int, default=200
        Epochs for sgd and adam; iterations for lbfgs.

    shuffle : bool, default=True
        Shuffle the samples every epoch.

    [shared: random_state tol:QNNClassifier]

    verbose : bool, default=False
        Print one line per epoch: loss, validation score, elapsed time.

    [shared: warm_start]

    momentum : float, default=0.9
        Momentum of sgd.

    nesterovs_momentum : bool, default=True
        Nesterov's momentum for sgd.

    [shared: early_stopping]

    validation_fraction : float, default=0.1
        Share of the training data held out by ``early_stopping``.

    beta_1 : float, default=0.9
        Decay of adam's first-moment estimate.

    beta_2 : float, default=0.999
        Decay of adam's second-moment estimate.

    epsilon : float, default=1e-8
        Adam's numerical-stability constant.

    n_iter_no_change : int, default=10
        Epochs without an improvement of ``tol`` before stopping.

    max_fun : int, default=15000
        Maximum number of loss evaluations (lbfgs only).

    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into ``sample_weight``.

    [shared: relinear quadratic_learning_rate_scale quadratic_l1 quadratic_l2 weight_transfer backward device dtype n_threads clip_inputs]

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``arange(n_labels)`` for a multilabel ``y``.

    n_features_in_ : int
        Number of features seen during fit.

    [shared: feature_names_in_ layers_ coefs_]

    intercepts_ : list of ndarray
        The linear bias of each layer (read from ``layers_``).

    [shared: hidden_activation_ out_activation_]

    loss_ : float
        Training objective at the last epoch (lbfgs: iteration).

    loss_curve_ : list of float
        Training objective per epoch (lbfgs: per iteration).

    [shared: best_loss_]

    validation_scores_ : list of float or None
        Validation accuracy per epoch with ``early_stopping``, else None.

    best_validation_score_ : float or None
        Best validation accuracy with ``early_stopping``, else None.

    [shared: n_iter_]

    t_ : int
        Training samples seen, over every call (MLPClassifier's ``t_``).

    [shared: diverged_ device_]

    n_layers_ : int
        Number of layers, counting the input layer (as in MLPClassifier).

    [shared: n_outputs_]

    weight_transfer_n_iter_ : int
        Epochs of the conventional network, with ``weight_transfer=True``.

    [shared: data_min_]

    data_max_ : ndarray of shape (n_features_in_,)
        Per-feature maximum, likewise.

    See Also
    --------
    RPQNNClassifier : The reduced-parameter network, ``O(n_out n_in)`` per layer.
    sklearn.neural_network.MLPClassifier : The conventional network.

    Examples
    --------
    >>> from skquad import QNNClassifier
    >>> from skquad.datasets import make_xor
    >>> X, y = make_xor()
    >>> clf = QNNClassifier(hidden_layer_sizes=(), solver="lbfgs", random_state=0)
    >>> clf.fit(X, y)
    QNNClassifier(...)
    >>> clf.predict(X).tolist() == y.tolist()
    True
    >>> clf.layers_[0]["quadratic"].shape
    (1, 2, 2)
    """

    _quadratic_kind = QuadraticLayer.__name__

    def _quadratic_options(self):
        # The fused backward pass works on full storage.
        return {"quadratic_storage": "full"}


@shared_docstring
class QNNRegressor(BaseQuadraticNetworkRegressor):
    """Quadratic neural network regressor (Noel et al., Algorithm 1).

    Layer ``l``, neuron ``k`` computes ``z_k = b_k + W_k a + a^T Q^(k) a`` with
    a symmetric ``Q^(k)`` per neuron (``n_out * n_in**2`` parameters), or a
    conventional ``b + W a`` where ``quadratic_layers`` says so. Trained with
    ReLinear (Fan et al.) by default: the quadratic parts start at zero and
    learn with a smaller learning rate. Accepts every parameter of
    :class:`~sklearn.neural_network.MLPRegressor` with the same meaning.

    Parameters
    ----------
    [shared: hidden_layer_sizes:QNNRegressor activation:QNNRegressor quadratic_layers loss scale_target solver:QNNRegressor alpha]

    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for "auto". Ignored by lbfgs.

    [shared: learning_rate:QNNRegressor]

    learning_rate_init : float, default=1e-3
        Initial step size of sgd and adam.

    power_t : float, default=0.5
        Exponent of the "invscaling" schedule (sgd only).

    max_iter : int, default=200
        Epochs for sgd and adam; iterations for lbfgs.

    shuffle : bool, default=True
        Shuffle the samples every epoch.

    [shared: random_state tol]

    verbose : bool, default=False
        Print one line per epoch: loss, validation score, elapsed time.

    [shared: warm_start:QNNRegressor]

    momentum : float, default=0.9
        Momentum of sgd.

    nesterovs_momentum : bool, default=True
        Nesterov's momentum for sgd.

    [shared: early_stopping:QNNRegressor]

    validation_fraction : float, default=0.1
        Share of the training data held out by ``early_stopping``.

    beta_1 : float, default=0.9
        Decay of adam's first-moment estimate.

    beta_2 : float, default=0.999
        Decay of adam's second-moment estimate.

    epsilon : float, default=1e-8
        Adam's numerical-stability constant.

    n_iter_no_change : int, default=10
        Epochs without an improvement of ``tol`` before stopping.

    max_fun : int, default=15000
        Maximum number of loss evaluations (lbfgs only).

    [shared: relinear quadratic_learning_rate_scale quadratic_l1 quadratic_l2 weight_transfer backward device dtype:QNNRegressor n_threads clip_inputs clip_outputs:QNNRegressor]

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit.

    [shared: feature_names_in_ layers_ coefs_:QNNRegressor]

    intercepts_ : list of ndarray
        The linear bias of each layer (read from ``layers_``).

    [shared: hidden_activation_]

    out_activation_ : str
        "identity" (``loss="squared_error"``) or "exp" (``loss="poisson"``).

    [shared: target_shift_]

    target_scale_ : ndarray of shape (n_outputs_,)
        ``y`` divided by it for training (1 without ``scale_target``).

    loss_ : float
        Training objective at the last epoch (lbfgs: iteration).

    [shared: loss_curve_ best_loss_:QNNRegressor]

    validation_scores_ : list of float or None
        Validation R^2 per epoch with ``early_stopping``, else None.

    best_validation_score_ : float or None
        Best validation R^2 with ``early_stopping``, else None.

    [shared: n_iter_:QNNRegressor]

    t_ : int
        Training samples seen, over every call (MLPRegressor's ``t_``).

    [shared: diverged_ device_]

    n_layers_ : int
        Number of layers, counting the input layer (as in MLPRegressor).

    n_outputs_ : int
        Number of outputs (columns of ``y``).

    weight_transfer_n_iter_ : int
        Epochs of the conventional network, with ``weight_transfer=True``.

    [shared: data_min_]

    data_max_ : ndarray of shape (n_features_in_,)
        Per-feature maximum, likewise.

    [shared: target_min_:QNNRegressor]

    target_max_ : ndarray of shape (n_outputs_,)
        Per-output maximum, likewise.

    solver_ : str
        The solver of the last ``fit`` or ``partial_fit`` ("auto" resolved).

    See Also
    --------
    RPQNNRegressor : The reduced-parameter network, ``O(n_out n_in)`` per layer.
    sklearn.neural_network.MLPRegressor : The conventional network.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from skquad import QNNRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> reg = QNNRegressor(hidden_layer_sizes=(), solver="lbfgs", random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.8
    True
    >>> reg.layers_[0]["quadratic"].shape
    (1, 10, 10)
    """

    _quadratic_kind = QuadraticLayer.__name__
    _quadratic_options = QNNClassifier._quadratic_options
