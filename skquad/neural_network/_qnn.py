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
    [shared: hidden_layer_sizes activation quadratic_layers output_activation solver
        alpha:QNNClassifier batch_size learning_rate learning_rate_init power_t max_iter shuffle
        random_state tol:QNNClassifier verbose warm_start momentum nesterovs_momentum early_stopping
        validation_fraction beta_1 beta_2 epsilon n_iter_no_change max_fun class_weight relinear
        quadratic_learning_rate_scale quadratic_l1 quadratic_l2 weight_transfer backward device
        dtype n_threads clip_inputs]

    Attributes
    ----------
    [shared: classes_ alpha_ n_features_in_:QNNClassifier feature_names_in_:QNNClassifier layers_ coefs_
        intercepts_ hidden_activation_ out_activation_:QNNClassifier loss_ loss_curve_ best_loss_
        validation_scores_:QNNClassifier best_validation_score_:QNNClassifier n_iter_ t_ diverged_
        device_ n_layers_ n_outputs_:QNNClassifier weight_transfer_n_iter_ data_min_ data_max_]

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
    [shared: hidden_layer_sizes:QNNRegressor activation:QNNRegressor quadratic_layers loss
        scale_target solver:QNNRegressor alpha batch_size learning_rate:QNNRegressor
        learning_rate_init power_t max_iter shuffle random_state tol verbose warm_start:QNNRegressor
        momentum nesterovs_momentum early_stopping:QNNRegressor validation_fraction beta_1 beta_2
        epsilon n_iter_no_change max_fun relinear quadratic_learning_rate_scale quadratic_l1
        quadratic_l2 weight_transfer backward device dtype:QNNRegressor n_threads clip_inputs
        clip_outputs:QNNRegressor]

    Attributes
    ----------
    [shared: alpha_ n_features_in_:QNNClassifier feature_names_in_:QNNClassifier layers_
        coefs_:QNNRegressor intercepts_ hidden_activation_ out_activation_ target_shift_
        target_scale_ loss_ loss_curve_:QNNRegressor best_loss_:QNNRegressor validation_scores_
        best_validation_score_ n_iter_:QNNRegressor t_:QNNRegressor diverged_ device_
        n_layers_:QNNRegressor n_outputs_:QNNRegressor weight_transfer_n_iter_ data_min_ data_max_
        target_min_:QNNRegressor target_max_ solver_]

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
