"""Reduced-parameter quadratic networks (Noel et al., Algorithm 2): classifier and regressor."""

from .._foundation._docstrings import shared_docstring
from ..nn.layers import ReducedQuadraticLayer
from ._base import signature_with
from ._classifier import BaseQuadraticNetworkClassifier
from ._regressor import BaseQuadraticNetworkRegressor

__all__ = ["RPQNNClassifier", "RPQNNRegressor"]


@shared_docstring
class RPQNNClassifier(BaseQuadraticNetworkClassifier):
    """Reduced-parameter quadratic network classifier (Noel et al., Algorithm 2).

    Quadratic layers compute ``z = (W a + b) * (U a + c)`` (``2 n_out n_in``
    weights, the cost of two linear layers; ``U`` and ``c`` are stored as
    ``factor_weight`` and ``factor_bias``), or with ``power_term=True`` Fan et
    al.'s neuron ``(W a + b) * (U a + c) + W_p (a * a) + c_p``. ReLinear's
    start (``U = 0, c = 1``; ``W_p = 0, c_p = 0``) makes every neuron a
    conventional one at first. Accepts every parameter of
    :class:`~sklearn.neural_network.MLPClassifier` with the same meaning.

    Parameters
    ----------
    [shared: hidden_layer_sizes activation quadratic_layers output_activation power_term solver alpha:QNNClassifier]

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

    [shared: feature_names_in_ layers_:RPQNNClassifier coefs_]

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
    QNNClassifier : The full quadratic network.
    sklearn.neural_network.MLPClassifier : The conventional network.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skquad import RPQNNClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(), RPQNNClassifier(
    ...     hidden_layer_sizes=(10,), max_iter=300, learning_rate_init=0.01,
    ...     random_state=0))
    >>> clf.fit(X, y).score(X, y) > 0.9
    True
    """

    _quadratic_kind = ReducedQuadraticLayer.__name__

    _parameter_constraints = {
        **BaseQuadraticNetworkClassifier._parameter_constraints,
        "power_term": ["boolean"],
    }

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, power_term=False, **network_parameters):
        super().__init__(hidden_layer_sizes, activation, **network_parameters)
        self.power_term = power_term

    # The shared parameters are written once, in the base; the signature that
    # get_params, clone and numpydoc read lists them all, power_term in place.
    __init__.__signature__ = signature_with(
        BaseQuadraticNetworkClassifier.__init__, "output_activation", power_term=False
    )

    def _quadratic_options(self):
        return {"power_term": self.power_term}


@shared_docstring
class RPQNNRegressor(BaseQuadraticNetworkRegressor):
    """Reduced-parameter quadratic network regressor (Noel et al., Algorithm 2).

    Quadratic layers compute ``z = (W a + b) * (U a + c)`` (``2 n_out n_in``
    weights, the cost of two linear layers; ``U`` and ``c`` are stored as
    ``factor_weight`` and ``factor_bias``), or with ``power_term=True`` Fan et
    al.'s neuron ``(W a + b) * (U a + c) + W_p (a * a) + c_p``. ReLinear's
    start (``U = 0, c = 1``; ``W_p = 0, c_p = 0``) makes every neuron a
    conventional one at first. Accepts every parameter of
    :class:`~sklearn.neural_network.MLPRegressor` with the same meaning.

    Parameters
    ----------
    [shared: hidden_layer_sizes:QNNRegressor activation:QNNRegressor quadratic_layers loss power_term scale_target solver:QNNRegressor alpha]

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

    [shared: feature_names_in_ layers_:RPQNNClassifier coefs_:QNNRegressor]

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
    QNNRegressor : The full quadratic network.
    sklearn.neural_network.MLPRegressor : The conventional network.

    Examples
    --------
    >>> from sklearn.datasets import make_friedman1
    >>> from skquad import RPQNNRegressor
    >>> X, y = make_friedman1(n_samples=200, random_state=0)
    >>> reg = RPQNNRegressor(hidden_layer_sizes=(10,), solver="lbfgs", random_state=0)
    >>> reg.fit(X, y).score(X, y) > 0.8
    True
    """

    _quadratic_kind = ReducedQuadraticLayer.__name__

    _parameter_constraints = {
        **BaseQuadraticNetworkRegressor._parameter_constraints,
        "power_term": ["boolean"],
    }

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, power_term=False, **network_parameters):
        super().__init__(hidden_layer_sizes, activation, **network_parameters)
        self.power_term = power_term

    __init__.__signature__ = signature_with(BaseQuadraticNetworkRegressor.__init__, "loss", power_term=False)

    _quadratic_options = RPQNNClassifier._quadratic_options
