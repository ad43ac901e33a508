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
    [shared: hidden_layer_sizes activation quadratic_layers output_activation power_term solver
        alpha:QNNClassifier batch_size learning_rate learning_rate_init power_t max_iter shuffle
        random_state tol:QNNClassifier verbose warm_start momentum nesterovs_momentum early_stopping
        validation_fraction beta_1 beta_2 epsilon n_iter_no_change max_fun class_weight relinear
        quadratic_learning_rate_scale quadratic_l1 quadratic_l2 weight_transfer backward device
        dtype n_threads clip_inputs]

    Attributes
    ----------
    [shared: classes_ alpha_ n_features_in_:QNNClassifier feature_names_in_:QNNClassifier
        layers_:RPQNNClassifier coefs_ intercepts_ hidden_activation_ out_activation_:QNNClassifier
        loss_ loss_curve_ best_loss_ validation_scores_:QNNClassifier
        best_validation_score_:QNNClassifier n_iter_ t_ diverged_ device_ n_layers_
        n_outputs_:QNNClassifier weight_transfer_n_iter_ data_min_ data_max_]

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
    [shared: hidden_layer_sizes:QNNRegressor activation:QNNRegressor quadratic_layers loss
        power_term scale_target solver:QNNRegressor alpha batch_size learning_rate:QNNRegressor
        learning_rate_init power_t max_iter shuffle random_state tol verbose warm_start:QNNRegressor
        momentum nesterovs_momentum early_stopping:QNNRegressor validation_fraction beta_1 beta_2
        epsilon n_iter_no_change max_fun relinear quadratic_learning_rate_scale quadratic_l1
        quadratic_l2 weight_transfer backward device dtype:QNNRegressor n_threads clip_inputs
        clip_outputs:QNNRegressor]

    Attributes
    ----------
    [shared: alpha_ n_features_in_:QNNClassifier feature_names_in_:QNNClassifier layers_:RPQNNClassifier
        coefs_:QNNRegressor intercepts_ hidden_activation_ out_activation_ target_shift_
        target_scale_ loss_ loss_curve_:QNNRegressor best_loss_:QNNRegressor validation_scores_
        best_validation_score_ n_iter_:QNNRegressor t_:QNNRegressor diverged_ device_
        n_layers_:QNNRegressor n_outputs_:QNNRegressor weight_transfer_n_iter_ data_min_ data_max_
        target_min_:QNNRegressor target_max_ solver_]

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
