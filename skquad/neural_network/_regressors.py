"""QNNRegressor and RPQNNRegressor: the quadratic networks with MLPRegressor's output."""

import numpy as np
from sklearn.base import _fit_context
from sklearn.metrics import r2_score
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if

from .._base import BaseQuadraticRegressor
from ..nn.fused import regression_loss
from ._base import BaseQuadraticNetwork, _QuadraticNetwork, _stochastic_solver, signature_with
from ._qnn import QNNClassifier
from ._rpqnn import RPQNNClassifier

__all__ = ["QNNRegressor", "RPQNNRegressor"]


class _QuadraticNetworkRegressor(_QuadraticNetwork, BaseQuadraticRegressor):
    """Shared constructor, fit and partial_fit of the two network regressors.

    Not for direct use. MLPRegressor's output: an identity output layer with
    the halved squared error averaged over outputs (``loss="squared_error"``),
    or an exponential output with the half Poisson deviance
    (``loss="poisson"``); early stopping on R².
    """

    # Early stopping's validation split is a plain random split.
    _stratify_validation = False

    _parameter_constraints = {
        **{
            name: constraint
            for name, constraint in BaseQuadraticNetwork._parameter_constraints.items()
            if name not in ("output_activation", "class_weight")
        },
        "loss": [StrOptions({"squared_error", "poisson"})],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        quadratic_layers="output",
        solver="adam",
        alpha=1e-4,
        batch_size="auto",
        learning_rate="constant",
        learning_rate_init=1e-3,
        power_t=0.5,
        max_iter=200,
        loss="squared_error",
        shuffle=True,
        random_state=None,
        tol=1e-4,
        verbose=False,
        warm_start=False,
        momentum=0.9,
        nesterovs_momentum=True,
        early_stopping=False,
        validation_fraction=0.1,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-8,
        n_iter_no_change=10,
        max_fun=15000,
        relinear=True,
        quadratic_learning_rate_scale=0.1,
        quadratic_l1=0.0,
        quadratic_l2=0.0,
        weight_transfer=False,
        backward="fused",
        device="auto",
        dtype=None,
        n_threads="auto",
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.quadratic_layers = quadratic_layers
        self.solver = solver
        self.alpha = alpha
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.learning_rate_init = learning_rate_init
        self.power_t = power_t
        self.max_iter = max_iter
        self.loss = loss
        self.shuffle = shuffle
        self.random_state = random_state
        self.tol = tol
        self.verbose = verbose
        self.warm_start = warm_start
        self.momentum = momentum
        self.nesterovs_momentum = nesterovs_momentum
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.n_iter_no_change = n_iter_no_change
        self.max_fun = max_fun
        self.relinear = relinear
        self.quadratic_learning_rate_scale = quadratic_learning_rate_scale
        self.quadratic_l1 = quadratic_l1
        self.quadratic_l2 = quadratic_l2
        self.weight_transfer = weight_transfer
        self.backward = backward
        self.device = device
        self.dtype = dtype
        self.n_threads = n_threads

    # ------------------------------------------------------------ the output
    def _n_network_outputs(self):
        return self.n_outputs_

    def _output_kind(self):
        return self.loss

    def _out_activation(self):
        return "identity" if self.loss == "squared_error" else "exp"

    def _loss_function(self):
        loss = self.loss

        def per_sample(scores, y):
            return regression_loss(loss, scores, y)

        return per_sample

    def _validation_score(self, scores, y, sample_weight):
        predictions = scores.detach().double().cpu().numpy()
        if self.loss == "poisson":
            predictions = np.exp(predictions)
        targets = y.detach().double().cpu().numpy().reshape(predictions.shape)
        return float(r2_score(targets, predictions, sample_weight=sample_weight))

    def _target_dtype(self, dtype):
        return dtype

    def _callback_targets(self, y):
        return self._format_predictions(y)

    def _checked_targets(self, Y):
        if self.loss == "poisson" and np.any(Y < 0):
            raise ValueError(
                "loss='poisson' requires non-negative y (counts or rates); got a "
                f"minimum of {float(Y.min()):g}. Use loss='squared_error' or shift y."
            )
        return Y

    # ------------------------------------------------------------------ fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the network on ``(X, y)``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The target values.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        architecture = self._architecture()
        warm = self.warm_start and hasattr(self, "layers_")
        previous_outputs = getattr(self, "n_outputs_", None)
        X, Y, sample_weight = self._validate_training_data(X, y, sample_weight, reset=True)
        Y = self._checked_targets(Y)
        if warm and previous_outputs != self.n_outputs_:
            raise ValueError(
                f"warm_start needs y with the previous fit's {previous_outputs} output(s); "
                f"got {self.n_outputs_}. Set warm_start=False to start over."
            )
        if not warm:
            for attribute in ("layers_", "loss_curve_", "validation_scores_", "best_loss_", "n_iter_", "t_"):
                self.__dict__.pop(attribute, None)
        for attribute in ("_trainer", "_trainer_structure"):
            self.__dict__.pop(attribute, None)
        return self._train(X, Y, sample_weight, architecture, incremental=False)

    @available_if(_stochastic_solver)
    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """One epoch of the stochastic solver over ``(X, y)``.

        Only available for ``solver="sgd"`` and ``"adam"``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The input data.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            The target values, of the shape of the first call's.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights.

        Returns
        -------
        self : object
            The trained estimator.
        """
        architecture = self._architecture()
        first_call = not hasattr(self, "layers_")
        X, Y, sample_weight = self._validate_training_data(X, y, sample_weight, reset=first_call)
        Y = self._checked_targets(Y)
        return self._train(X, Y, sample_weight, architecture, incremental=True)

    # ------------------------------------------------------------ prediction
    def _raw_scores(self, X):
        scores = super()._raw_scores(X)
        return np.exp(scores) if self.out_activation_ == "exp" else scores


_REGRESSOR_DOC = """{summary}

    {body} Accepts every parameter of
    :class:`~sklearn.neural_network.MLPRegressor` with the same meaning
    (``{name}(**MLPRegressor().get_params())`` works), plus skquad's
    quadratic-layer and ReLinear parameters, which mean what they mean for
    :class:`{classifier}`.

    Parameters
    ----------
    hidden_layer_sizes : array-like of int, default=(100,)
        Neurons per hidden layer; ``()``: one layer from the features to the outputs.
    activation : {{"relu", "logistic", "sigmoid", "tanh", "identity"}}, default="relu"
        Hidden-layer activation.
{extra}    quadratic_layers : {{"output", "all"}} or list of bool, default="output"
        Which layers are quadratic (see :class:`{classifier}`).
    solver : {{"adam", "sgd", "lbfgs"}}, default="adam"
        As MLPRegressor's.
    alpha : float, default=1e-4
        L2 penalty of the linear weights, as MLPRegressor's.
    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for "auto".
    learning_rate : {{"constant", "invscaling", "adaptive"}}, default="constant"
        Step schedule of ``solver="sgd"``.
    learning_rate_init : float, default=1e-3
        Initial step.
    power_t : float, default=0.5
        Exponent of the "invscaling" schedule.
    max_iter : int, default=200
        Epochs (stochastic solvers) or iterations (lbfgs).
    loss : {{"squared_error", "poisson"}}, default="squared_error"
        MLPRegressor's losses: the halved squared error with an identity
        output, or the half Poisson deviance with an exponential output
        (non-negative ``y``).
    shuffle : bool, default=True
        Shuffle the samples every epoch.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialization, the shuffling and the validation split.
    tol : float, default=1e-4
        Tolerance of the stopping rule.
    verbose : bool, default=False
        Print the loss every epoch.
    warm_start : bool, default=False
        Continue from the previous fit.
    momentum : float, default=0.9
        Momentum of ``solver="sgd"``.
    nesterovs_momentum : bool, default=True
        Nesterov's momentum for ``solver="sgd"``.
    early_stopping : bool, default=False
        Stop when the validation R² stops improving.
    validation_fraction : float, default=0.1
        Share of the training data set aside for early stopping.
    beta_1 : float, default=0.9
        Adam's first-moment decay.
    beta_2 : float, default=0.999
        Adam's second-moment decay.
    epsilon : float, default=1e-8
        Adam's numerical stability term.
    n_iter_no_change : int, default=10
        Epochs without improvement before stopping.
    max_fun : int, default=15000
        Largest number of loss evaluations of lbfgs.
    relinear : bool, default=True
        Fan et al.'s ReLinear: quadratic parts start at zero.
    quadratic_learning_rate_scale : float, default=0.1
        Step of the quadratic parameters relative to the linear ones.
    quadratic_l1 : float, default=0.0
        L1 penalty of the quadratic parameters.
    quadratic_l2 : float, default=0.0
        L2 penalty of the quadratic parameters.
    weight_transfer : bool, default=False
        Train a conventional twin first and copy its weights in.
    backward : {{"fused", "cached", "autograd"}}, default="fused"
        How gradients are computed (see :class:`{classifier}`).
    device : str or torch.device, default="auto"
        Where training runs ("auto": CUDA when available).
    dtype : {{"float32", "float64"}} or None, default=None
        Training dtype; None follows ``X``.
    n_threads : int or "auto", default="auto"
        torch threads during training and prediction.

    Attributes
    ----------
    layers_ : list of dict
        The fitted layers as numpy arrays.
    loss_ : float
        The last training loss.
    loss_curve_ : list of float
        The training loss after every epoch.
    validation_scores_ : list of float or None
        R² on the validation split after every epoch (``early_stopping``).
    best_validation_score_ : float or None
        The best of ``validation_scores_``.
    best_loss_ : float or None
        The best training loss.
    n_iter_ : int
        Epochs (or iterations) run.
    t_ : int
        Training samples seen.
    n_layers_ : int
        Layers, input and output included.
    n_outputs_ : int
        Outputs.
    out_activation_ : str
        "identity" or "exp" (Poisson).
    hidden_activation_ : str
        The hidden activation used.
    diverged_ : bool
        Whether training diverged (the best weights are kept).
    n_features_in_ : int
        Features seen in fit.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined only when ``X`` has string feature names.

    See Also
    --------
    {classifier} : The same network for classification.
    sklearn.neural_network.MLPRegressor : The conventional network.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad import {name}
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-1, 1, size=(300, 2))
    >>> y = X[:, 0] * X[:, 1]
    >>> model = {name}(hidden_layer_sizes=(10,), solver="lbfgs", random_state=0).fit(X, y)
    >>> model.score(X, y) > 0.95
    True
    """


class QNNRegressor(_QuadraticNetworkRegressor):
    _quadratic_kind = QNNClassifier._quadratic_kind
    _quadratic_options = QNNClassifier._quadratic_options


class RPQNNRegressor(_QuadraticNetworkRegressor):
    _quadratic_kind = RPQNNClassifier._quadratic_kind
    _quadratic_options = RPQNNClassifier._quadratic_options

    _parameter_constraints = {
        **_QuadraticNetworkRegressor._parameter_constraints,
        "power_term": ["boolean"],
    }

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, power_term=False, **network_parameters):
        super().__init__(hidden_layer_sizes, activation, **network_parameters)
        self.power_term = power_term

    __init__.__signature__ = signature_with(
        _QuadraticNetworkRegressor.__init__, "activation", power_term=False
    )


QNNRegressor.__doc__ = _REGRESSOR_DOC.format(
    summary="Quadratic neural network regressor (Noel et al., Algorithm 1).",
    body="Layers of full quadratic neurons ``b_k + W_k a + a^T Q^(k) a`` (or "
    "conventional ones where ``quadratic_layers`` says so), an identity (or, "
    "for ``loss=\"poisson\"``, exponential) output, trained with ReLinear (Fan et al.).",
    name="QNNRegressor",
    classifier="QNNClassifier",
    extra="",
)
RPQNNRegressor.__doc__ = _REGRESSOR_DOC.format(
    summary="Reduced-parameter quadratic network regressor (Noel et al.).",
    body="Layers of reduced-parameter neurons ``(W a + b) * (U a + c)`` "
    "(optionally with Fan et al.'s power term) at the cost of a conventional layer.",
    name="RPQNNRegressor",
    classifier="RPQNNClassifier",
    extra="    power_term : bool, default=False\n"
    "        Add Fan et al.'s power term ``W_b (a * a)`` (see :class:`RPQNNClassifier`).\n",
)
