"""Quadratic neural networks (Noel et al., Algorithm 1): classifier and regressor."""

from ..nn.layers import QuadraticLayer
from ._classifier import BaseQuadraticNetworkClassifier
from ._regressor import BaseQuadraticNetworkRegressor

__all__ = ["QNNClassifier", "QNNRegressor"]


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
    hidden_layer_sizes : array-like of int, default=(100,)
        Neurons per hidden layer. ``()`` means no hidden layer: one layer
        straight from the features to the class scores.

    activation : {"relu", "logistic", "sigmoid", "tanh", "identity"}, default="relu"
        Hidden-layer activation ("logistic", MLPClassifier's name, and
        "sigmoid" are the same function).

    quadratic_layers : {"output", "all"} or list of bool, default="output"
        Which layers are quadratic: only the output layer (Noel et al.'s MNIST
        network: a conventional hidden layer and a quadratic output layer),
        every layer, or one flag per layer (``len(hidden_layer_sizes) + 1``
        flags, the output layer last). The others are ``torch.nn.Linear``.

    output_activation : {"softmax", "sigmoid"}, default="softmax"
        "softmax": one score per class, softmax and log-loss. "sigmoid": Noel
        et al.'s output layer, one sigmoid per class with a binary
        cross-entropy each; ``predict_proba`` normalises the sigmoids to sum to
        one. Binary problems always use one logistic output.

    solver : {"adam", "sgd", "lbfgs"}, default="adam"
        "sgd" is stochastic gradient descent with (Nesterov) momentum; "lbfgs"
        (scipy's L-BFGS-B on the whole data set) suits small problems and has
        no ``partial_fit``.

    alpha : float, default=1e-4
        L2 penalty on every weight matrix (not on biases), scaled like
        MLPClassifier's.

    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for "auto". Ignored by lbfgs.

    learning_rate : {"constant", "invscaling", "adaptive"}, default="constant"
        Step-size schedule for ``solver="sgd"``, as in MLPClassifier:
        "constant" keeps ``learning_rate_init``; "invscaling" uses
        ``learning_rate_init / t ** power_t`` at step ``t``; "adaptive" keeps it
        while the training loss falls and divides it by 5 each time two
        consecutive epochs fail to improve by ``tol``.

    learning_rate_init : float, default=1e-3
        Initial step size of sgd and adam.

    power_t : float, default=0.5
        Exponent of the "invscaling" schedule (sgd only).

    max_iter : int, default=200
        Epochs for sgd and adam; iterations for lbfgs.

    shuffle : bool, default=True
        Shuffle the samples every epoch.

    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the shuffling and the early-stopping split
        through a local torch generator (never torch's global one). On the CPU
        the same value gives the same model.

    tol : float, default=1e-4
        Stop when the training loss (or, with early stopping, the validation
        accuracy) has not improved by ``tol`` for ``n_iter_no_change`` epochs.

    verbose : bool, default=False
        Print one line per epoch: loss, validation score, elapsed time.

    warm_start : bool, default=False
        Start ``fit`` from the previous solution (with a fresh optimizer). The
        classes, features and architecture must be those of the previous fit.

    momentum : float, default=0.9
        Momentum of sgd.

    nesterovs_momentum : bool, default=True
        Nesterov's momentum for sgd.

    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training data (stratified), stop
        when its accuracy stops improving and keep the best weights.

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

    relinear : bool, default=True
        ReLinear's start (Fan et al.): the quadratic part of every neuron starts
        neutral, so each neuron starts as a conventional one. False draws a
        small random quadratic part.

    quadratic_learning_rate_scale : float, default=0.1
        ReLinear-sg (Fan et al.): the quadratic parameters learn with
        ``learning_rate_init * quadratic_learning_rate_scale`` (sgd and adam).
        1.0 trains them like the linear ones.

    quadratic_l1 : float, default=0.0
        ReLinear-sw (Fan et al.): extra l1 decay on the quadratic weights
        (scaled like ``alpha``).

    quadratic_l2 : float, default=0.0
        ReLinear-sw: extra l2 decay on the quadratic weights (scaled like
        ``alpha``).

    weight_transfer : bool, default=False
        Fan et al.'s weight transfer: first train a conventional network of the
        same shape with the same settings, copy its weights into the linear
        part of every layer, then train the quadratic network.

    backward : {"fused", "cached", "autograd"}, default="fused"
        How gradients are computed: "fused" runs Noel et al.'s explicit
        back-propagation (Algorithms 1 and 2) for the whole network without
        autograd (fastest, ``skquad.nn.fused``); "cached" uses the
        per-layer autograd Functions of :mod:`skquad.nn.backward`; "autograd"
        differentiates plain torch operations. All three give the same
        gradients.

    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        Where to train. Weights are stored as numpy arrays, so a model fitted
        on a GPU unpickles and predicts on a CPU-only machine.

    dtype : {"float32", "float64"} or None, default=None
        Precision of training and prediction. None follows the input, as
        MLPClassifier does: float32 data is trained in float32, anything else
        in float64.

    n_threads : int or "auto", default="auto"
        CPU threads for training and prediction. "auto" picks one thread for
        small steps (where torch's thread hand-off costs more than it saves)
        and all of torch's threads for large ones. The previous setting is
        restored afterwards.

    clip_inputs : bool, default=True
        Clip each feature of ``X`` to its training range ``[data_min_,
        data_max_]`` before every prediction (``predict``, ``score``, and the
        other prediction methods), so that the model, quadratic in ``X``,
        stays bounded on inputs outside the range it was trained on. No
        prediction on the training rows changes: they lie inside the range.
        For sparse ``X`` the stored values are clipped; implicit zeros stay
        zero (the range includes the training rows' implicit zeros).
        False predicts with the unbounded quadratic model.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels; ``arange(n_labels)`` for a multilabel ``y``.

    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit. Defined only when ``X`` has
        feature names that are all strings.

    layers_ : list of dict
        Learned weights per layer (input side first) as numpy arrays in the
        training dtype, plus an ``"options"`` dict with the layer's shape:
        ``{"kind": "QuadraticLayer", "weight": (n_out, n_in), "bias": (n_out,),
        "quadratic": (n_out, n_in, n_in)}`` (the symmetric ``Q^(k)`` of each
        neuron) or ``{"kind": "Linear", "weight", "bias"}``.

    coefs_ : list of ndarray
        The linear weight of each layer, shape ``(n_in, n_out)`` as in
        MLPClassifier (read from ``layers_``).

    intercepts_ : list of ndarray
        The linear bias of each layer (read from ``layers_``).

    hidden_activation_ : str
        The hidden-layer activation the network was trained with (predictions
        use it, whatever ``activation`` is set to later).

    out_activation_ : str
        "logistic" (binary or multilabel), "softmax" or "sigmoid"
        (per-class sigmoids).

    loss_ : float
        Training objective at the last epoch (lbfgs: iteration).

    loss_curve_ : list of float
        Training objective per epoch (lbfgs: per iteration).

    best_loss_ : float or None
        Lowest training objective seen; None with ``early_stopping=True``
        (the validation score takes its place), as in MLPClassifier.

    validation_scores_ : list of float or None
        Validation accuracy per epoch with ``early_stopping``, else None.

    best_validation_score_ : float or None
        Best validation accuracy with ``early_stopping``, else None.

    n_iter_ : int
        Epochs (lbfgs: iterations) run by the last ``fit`` or
        ``partial_fit`` call, as in MLPClassifier.

    t_ : int
        Training samples seen, over every call (MLPClassifier's ``t_``).

    diverged_ : bool
        True when the last fit stopped because training diverged (the best
        weights seen were restored, and a ConvergenceWarning said so).

    device_ : str
        The device the network was trained on (``"cpu"``, ``"cuda:0"``); it
        predicts there, or on the CPU where that device is missing.

    n_layers_ : int
        Number of layers, counting the input layer (as in MLPClassifier).

    n_outputs_ : int
        Number of class scores (1 for binary problems; one per label for
        a multilabel ``y``).

    weight_transfer_n_iter_ : int
        Epochs of the conventional network, with ``weight_transfer=True``.

    data_min_ : ndarray of shape (n_features_in_,)
        Per-feature minimum of the training rows with a positive weight
        (implicit zeros of sparse ``X`` included), float64, widened by each
        ``partial_fit``: the range ``clip_inputs`` clips to.

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
    hidden_layer_sizes : array-like of int, default=(100,)
        Neurons per hidden layer. ``()`` means no hidden layer: one layer
        straight from the features to the outputs.

    activation : {"relu", "logistic", "sigmoid", "tanh", "identity"}, default="relu"
        Hidden-layer activation ("logistic", MLPRegressor's name, and
        "sigmoid" are the same function).

    quadratic_layers : {"output", "all"} or list of bool, default="output"
        Which layers are quadratic: only the output layer (Noel et al.'s MNIST
        network: a conventional hidden layer and a quadratic output layer),
        every layer, or one flag per layer (``len(hidden_layer_sizes) + 1``
        flags, the output layer last). The others are ``torch.nn.Linear``.

    loss : {"squared_error", "poisson"}, default="squared_error"
        MLPRegressor's losses: "squared_error" is half the squared error with
        an identity output; "poisson" is half the Poisson deviance with an
        ``exp`` output (the targets must be non-negative). For several
        outputs the squared error is averaged over them and the Poisson
        deviance summed, as in MLPRegressor's ``loss_``.

    scale_target : bool, default=True
        Train on the targets standardized per output (the
        ``sample_weight``-weighted mean and standard deviation; a constant
        column trains on zeros and, after ``fit``, predicts its constant:
        scale 0) and predict in the original units, as
        ``shift + scale * output``. A quadratic output layer grows with the
        square of its inputs and the optimizers' step sizes are set for
        targets of unit scale; :class:`~sklearn.neural_network.MLPRegressor`
        does not scale (its output is linear), so its users scale ``y``
        themselves. With ``loss="poisson"`` only the scale (the weighted
        mean) is divided out, exact for the log link. Fixed by ``fit`` (or
        the first ``partial_fit``; kept by ``warm_start``). ``alpha``
        penalises the weights of the network on the scaled targets.
        False: the targets as given.

    solver : {"auto", "adam", "sgd", "lbfgs"}, default="auto"
        "auto" is "lbfgs" on up to 1,000 training rows and "adam" above
        (``partial_fit`` uses "adam"; Dask collections "lbfgs"): Adam's
        ``max_iter`` epochs of batches of 200 are too few steps to converge on
        small data, where full-batch L-BFGS converges, and on more rows Adam's
        early end holds the network back where L-BFGS overfits. The solver
        that ran is ``solver_``. "adam" is MLPRegressor's default; "sgd" is
        stochastic gradient descent with (Nesterov) momentum; "lbfgs"
        (scipy's L-BFGS-B on the whole data set) has no ``partial_fit``.

    alpha : float, default=1.0
        L2 penalty on every weight matrix (not on biases), scaled like
        MLPRegressor's: ``alpha / (2 n) * ||W||^2`` beside the mean squared
        error halved, on the scaled targets (``scale_target``). The default, a
        unit-variance prior whose weight falls as ``1 / n``, keeps the quadratic
        output in check where rows are few; ``alpha=1e-4`` is MLPRegressor's.

    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for "auto". Ignored by lbfgs.

    learning_rate : {"constant", "invscaling", "adaptive"}, default="constant"
        Step-size schedule for ``solver="sgd"``, as in MLPRegressor:
        "constant" keeps ``learning_rate_init``; "invscaling" uses
        ``learning_rate_init / t ** power_t`` at step ``t``; "adaptive" keeps it
        while the training loss falls and divides it by 5 each time two
        consecutive epochs fail to improve by ``tol``.

    learning_rate_init : float, default=1e-3
        Initial step size of sgd and adam.

    power_t : float, default=0.5
        Exponent of the "invscaling" schedule (sgd only).

    max_iter : int, default=200
        Epochs for sgd and adam; iterations for lbfgs.

    shuffle : bool, default=True
        Shuffle the samples every epoch.

    random_state : int, RandomState instance or None, default=None
        Seeds the initial weights, the shuffling and the early-stopping split
        through a local torch generator (never torch's global one). On the CPU
        the same value gives the same model.

    tol : float, default=1e-4
        Stop when the training loss (or, with early stopping, the validation
        R^2) has not improved by ``tol`` for ``n_iter_no_change`` epochs.

    verbose : bool, default=False
        Print one line per epoch: loss, validation score, elapsed time.

    warm_start : bool, default=False
        Start ``fit`` from the previous solution (with a fresh optimizer). The
        outputs, features and architecture must be those of the previous fit.

    momentum : float, default=0.9
        Momentum of sgd.

    nesterovs_momentum : bool, default=True
        Nesterov's momentum for sgd.

    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training data, stop when its
        R^2 stops improving and keep the best weights.

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

    relinear : bool, default=True
        ReLinear's start (Fan et al.): the quadratic part of every neuron starts
        neutral, so each neuron starts as a conventional one. False draws a
        small random quadratic part.

    quadratic_learning_rate_scale : float, default=0.1
        ReLinear-sg (Fan et al.): the quadratic parameters learn with
        ``learning_rate_init * quadratic_learning_rate_scale`` (sgd and adam).
        1.0 trains them like the linear ones.

    quadratic_l1 : float, default=0.0
        ReLinear-sw (Fan et al.): extra l1 decay on the quadratic weights
        (scaled like ``alpha``).

    quadratic_l2 : float, default=0.0
        ReLinear-sw: extra l2 decay on the quadratic weights (scaled like
        ``alpha``).

    weight_transfer : bool, default=False
        Fan et al.'s weight transfer: first train a conventional network of the
        same shape with the same settings, copy its weights into the linear
        part of every layer, then train the quadratic network.

    backward : {"fused", "cached", "autograd"}, default="fused"
        How gradients are computed: "fused" runs Noel et al.'s explicit
        back-propagation (Algorithms 1 and 2) for the whole network without
        autograd (fastest, ``skquad.nn.fused``); "cached" uses the
        per-layer autograd Functions of :mod:`skquad.nn.backward`; "autograd"
        differentiates plain torch operations. All three give the same
        gradients.

    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        Where to train. Weights are stored as numpy arrays, so a model fitted
        on a GPU unpickles and predicts on a CPU-only machine.

    dtype : {"float32", "float64"} or None, default=None
        Precision of training and prediction. None follows the input, as
        MLPRegressor does: float32 data is trained in float32, anything else
        in float64.

    n_threads : int or "auto", default="auto"
        CPU threads for training and prediction. "auto" picks one thread for
        small steps (where torch's thread hand-off costs more than it saves)
        and all of torch's threads for large ones. The previous setting is
        restored afterwards.

    clip_inputs : bool, default=True
        Clip each feature of ``X`` to its training range ``[data_min_,
        data_max_]`` before every prediction (``predict``, ``score``, and the
        other prediction methods), so that the model, quadratic in ``X``,
        stays bounded on inputs outside the range it was trained on. No
        prediction on the training rows changes: they lie inside the range.
        For sparse ``X`` the stored values are clipped; implicit zeros stay
        zero (the range includes the training rows' implicit zeros).
        False predicts with the unbounded quadratic model.

    clip_outputs : bool, default=True
        Clip each prediction to the range of the training targets,
        ``[target_min_, target_max_]`` per output, so that the network stays
        bounded where it extrapolates (a quadratic output grows as the square
        of its inputs). Every training target lies in the range, so clipping
        moves a prediction toward each of them: no training row's squared
        error grows. False predicts with the unbounded network.

    Attributes
    ----------
    n_features_in_ : int
        Number of features seen during fit.

    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during fit. Defined only when ``X`` has
        feature names that are all strings.

    layers_ : list of dict
        Learned weights per layer (input side first) as numpy arrays in the
        training dtype, plus an ``"options"`` dict with the layer's shape:
        ``{"kind": "QuadraticLayer", "weight": (n_out, n_in), "bias": (n_out,),
        "quadratic": (n_out, n_in, n_in)}`` (the symmetric ``Q^(k)`` of each
        neuron) or ``{"kind": "Linear", "weight", "bias"}``.

    coefs_ : list of ndarray
        The linear weight of each layer, shape ``(n_in, n_out)`` as in
        MLPRegressor (read from ``layers_``).

    intercepts_ : list of ndarray
        The linear bias of each layer (read from ``layers_``).

    hidden_activation_ : str
        The hidden-layer activation the network was trained with (predictions
        use it, whatever ``activation`` is set to later).

    out_activation_ : str
        "identity" (``loss="squared_error"``) or "exp" (``loss="poisson"``).

    target_shift_ : ndarray of shape (n_outputs_,)
        Subtracted from ``y`` for training (0 without ``scale_target``, and
        with ``loss="poisson"``).

    target_scale_ : ndarray of shape (n_outputs_,)
        ``y`` divided by it for training (1 without ``scale_target``).

    loss_ : float
        Training objective at the last epoch (lbfgs: iteration).

    loss_curve_ : list of float
        Training objective per epoch (lbfgs: per iteration). In the
        units of the scaled targets (``scale_target``).

    best_loss_ : float or None
        Lowest training objective seen; None with ``early_stopping=True``
        (the validation score takes its place), as in MLPRegressor.

    validation_scores_ : list of float or None
        Validation R^2 per epoch with ``early_stopping``, else None.

    best_validation_score_ : float or None
        Best validation R^2 with ``early_stopping``, else None.

    n_iter_ : int
        Epochs (lbfgs: iterations) run by the last ``fit`` or
        ``partial_fit`` call, as in MLPRegressor.

    t_ : int
        Training samples seen, over every call (MLPRegressor's ``t_``).

    diverged_ : bool
        True when the last fit stopped because training diverged (the best
        weights seen were restored, and a ConvergenceWarning said so).

    device_ : str
        The device the network was trained on (``"cpu"``, ``"cuda:0"``); it
        predicts there, or on the CPU where that device is missing.

    n_layers_ : int
        Number of layers, counting the input layer (as in MLPRegressor).

    n_outputs_ : int
        Number of outputs (columns of ``y``).

    weight_transfer_n_iter_ : int
        Epochs of the conventional network, with ``weight_transfer=True``.

    data_min_ : ndarray of shape (n_features_in_,)
        Per-feature minimum of the training rows with a positive weight
        (implicit zeros of sparse ``X`` included), float64, widened by each
        ``partial_fit``: the range ``clip_inputs`` clips to.

    data_max_ : ndarray of shape (n_features_in_,)
        Per-feature maximum, likewise.

    target_min_ : ndarray of shape (n_outputs_,)
        Per-output minimum of the training targets of positive weight,
        float64, widened by each ``partial_fit``: the range ``clip_outputs``
        clips to.

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
