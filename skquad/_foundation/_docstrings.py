"""The docstring entries that several public estimators share word for word.

A class decorated with :func:`shared_docstring` writes them in where its docstring
has a marker ``[shared: name name ...]`` (on one or more lines): one entry per
name, indented as the marker, a blank line between them (none with
``[shared-tight: ...]``). ``name`` is the parameter's or attribute's own name, or
``name:Estimator`` for the wording that estimator (and those after it in
``skquad.__all__``) use. Users read the full docstring (``help``, the API pages);
one text here keeps the estimators' descriptions of one parameter from drifting apart.
"""

import re
import textwrap

__all__ = ["ENTRIES", "shared_docstring"]

_MARKER = re.compile(r"^( *)\[shared(-tight)?: ([\w:\s]+?)\]$", re.M)


def shared_docstring(cls):
    """Class decorator: each ``[shared: names]`` marker of the docstring becomes those entries."""
    def entries(match):
        indent, tight, names = match.groups()
        return ("\n" if tight else "\n\n").join(textwrap.indent(ENTRIES[name], indent) for name in names.split())

    if cls.__doc__ is not None:  # None under python -OO
        cls.__doc__ = _MARKER.sub(entries, cls.__doc__)
    return cls


ENTRIES = {
    "activation": """activation : {"relu", "logistic", "sigmoid", "tanh", "identity"}, default="relu"
    Hidden-layer activation ("logistic", MLPClassifier's name, and
    "sigmoid" are the same function).""",
    "activation:QNNRegressor": """activation : {"relu", "logistic", "sigmoid", "tanh", "identity"}, default="relu"
    Hidden-layer activation ("logistic", MLPRegressor's name, and
    "sigmoid" are the same function).""",
    "alpha": """alpha : float or "auto", default="auto"
    L2 penalty on every weight matrix (not on biases), scaled like
    MLPRegressor's: ``alpha / (2 n) * ||W||^2`` beside the mean squared
    error halved, on the scaled targets (``scale_target``): 1 is a
    unit-variance prior whose weight falls as ``1 / n``, and noisier targets
    need a stronger one. "auto": where ``fit`` is one L-BFGS run (``solver``
    "lbfgs", or "auto" on up to 1,000 rows) and has at least 20 rows, the
    one of 100, 10 and 1 whose networks score the smallest squared error on
    held-out rows: fifths of the rows (by a hash of their values) held out
    in turn, as many as it takes to score 100 rows (all five below 125
    rows; three more fits on 80 % of the rows per fifth); else 1. The value
    used is ``alpha_``. ``alpha=1e-4`` is MLPRegressor's.""",
    "alpha_": """alpha_ : float
    The ``alpha`` of the fit (``alpha``, or the value "auto" chose).""",
    "alpha:QNNClassifier": """alpha : float or "auto", default="auto"
    L2 penalty on every weight matrix (not on biases), scaled like
    MLPClassifier's: ``alpha / (2 n) * ||W||^2`` beside the mean log loss.
    "auto": where ``fit`` holds out no validation split (``early_stopping``
    False, or "auto" on up to 1,000 rows) and has at least 100 rows,
    MLPClassifier's 1e-4 unless a network penalised by 100, 10 or 1
    misclassifies fewer held-out rows by more than one standard error (then
    the one of the fewest): fifths of the rows (by a hash of their values)
    held out in turn, as many as it takes to score 100 rows (all five below
    125 rows; four more fits on 80 % of the rows per fifth), where every
    training part holds every class; else 1e-4. The value used is
    ``alpha_``.""",
    "backward": """backward : {"fused", "cached", "autograd"}, default="fused"
    How gradients are computed: "fused" runs Noel et al.'s explicit
    back-propagation (Algorithms 1 and 2) for the whole network without
    autograd (fastest, ``skquad.nn.fused``); "cached" uses the
    per-layer autograd Functions of :mod:`skquad.nn.backward`; "autograd"
    differentiates plain torch operations. All three give the same
    gradients.""",
    "batch_size": """batch_size : int or "auto", default="auto"
    ``min(200, n_samples)`` for "auto". Ignored by lbfgs.""",
    "best_loss_": """best_loss_ : float or None
    Lowest training objective seen; None where the fit held out a
    validation split (``early_stopping``), whose score takes its place, as
    in MLPClassifier.""",
    "best_loss_:QNNRegressor": """best_loss_ : float or None
    Lowest training objective seen; None where the fit held out a
    validation split (``early_stopping``), whose score takes its place, as
    in MLPRegressor.""",
    "best_validation_score_": """best_validation_score_ : float or None
    Best validation R^2 where the fit held out a validation split
    (``early_stopping``), else None.""",
    "best_validation_score_:QNNClassifier": """best_validation_score_ : float or None
    Best validation accuracy where the fit held out a validation split
    (``early_stopping``), else None.""",
    "beta_": """beta_ : float
    The chosen ``beta``.""",
    "beta_1": """beta_1 : float, default=0.9
    Decay of adam's first-moment estimate.""",
    "beta_2": """beta_2 : float, default=0.999
    Decay of adam's second-moment estimate.""",
    "betas_": """betas_ : ndarray of shape (n_betas,)
    The path, decreasing.""",
    "class_weight": """class_weight : dict, "balanced" or None, default=None
    Weights of the classes, multiplied into ``sample_weight``.""",
    "classes_": """classes_ : ndarray of shape (n_classes,)
    Class labels; ``arange(n_labels)`` for a multilabel ``y``.""",
    "clip_inputs": """clip_inputs : bool, default=True
    Clip each feature of ``X`` to its training range ``[data_min_,
    data_max_]`` before every prediction (``predict``, ``score``, and the
    other prediction methods), so that the model, quadratic in ``X``,
    stays bounded on inputs outside the range it was trained on. No
    prediction on the training rows changes: they lie inside the range.
    For sparse ``X`` the stored values are clipped; implicit zeros stay
    zero (the range includes the training rows' implicit zeros).
    False predicts with the unbounded quadratic model.""",
    "clip_inputs:BackpropQuantizedClassifier": """clip_inputs : bool, default=True
    Clip each feature of ``X`` to its training range ``[data_min_,
    data_max_]`` before every prediction (``predict``, ``score``, and the
    other prediction methods), so that the model, quadratic in ``X``,
    stays bounded on inputs outside the range it was trained on. No
    prediction on the training rows changes: they lie inside the range.
    False predicts with the unbounded quadratic model.""",
    "clip_outputs": """clip_outputs : bool, default=True
    Clip each prediction to the range of the training targets,
    ``[target_min_, target_max_]`` per output, so that the model stays
    bounded where it extrapolates. Every training target lies in the
    range, so clipping moves a prediction toward each of them: no training
    row's squared error grows. False predicts with the unbounded model.""",
    "clip_outputs:QNNRegressor": """clip_outputs : bool, default=True
    Clip each prediction to the range of the training targets,
    ``[target_min_, target_max_]`` per output, so that the network stays
    bounded where it extrapolates (a quadratic output grows as the square
    of its inputs). Every training target lies in the range, so clipping
    moves a prediction toward each of them: no training row's squared
    error grows. False predicts with the unbounded network.""",
    "clip_outputs:QuadraticRegression": """clip_outputs : bool, default=True
    Clip each prediction to the range of the training targets,
    ``[target_min_, target_max_]`` per output, so that the model stays
    bounded where inputs inside their ranges combine as no training row
    did. Every training target lies in the range, so clipping moves a
    prediction toward each of them: no training row's squared error grows.
    The coefficients are the same either way; False predicts as
    ``PolynomialFeatures(2)`` + ``Ridge`` does on every row (with
    ``clip_inputs=False``).""",
    "coefs_": """coefs_ : list of ndarray
    The linear weight of each layer, shape ``(n_in, n_out)`` as in
    MLPClassifier (read from ``layers_``).""",
    "coefs_:QNNRegressor": """coefs_ : list of ndarray
    The linear weight of each layer, shape ``(n_in, n_out)`` as in
    MLPRegressor (read from ``layers_``).""",
    "data_max_": """data_max_ : ndarray of shape (n_features_in_,)
    Per-feature maximum, likewise.""",
    "data_min_": """data_min_ : ndarray of shape (n_features_in_,)
    Per-feature minimum of the training rows with a positive weight
    (implicit zeros of sparse ``X`` included), float64, widened by each
    ``partial_fit``: the range ``clip_inputs`` clips to.""",
    "data_min_:BackpropQuantizedClassifier": """data_min_ : ndarray of shape (n_features_in_,)
    Per-feature minimum of the training rows with a positive weight,
    float64, widened by each ``partial_fit``: the range ``clip_inputs``
    clips to.""",
    "data_min_:QuadraticRegression": """data_min_ : ndarray of shape (n_features_in_,)
    Per-feature minimum of the training rows with a positive weight
    (implicit zeros of sparse ``X`` included), float64: the range
    ``clip_inputs`` clips to.""",
    "data_min_:SDPQuantizedClassifier": """data_min_ : ndarray of shape (n_features_in_,)
    Per-feature minimum of the training rows with a positive weight,
    float64: the range ``clip_inputs`` clips to.""",
    "device": """device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
    Where to train. Weights are stored as numpy arrays, so a model fitted
    on a GPU unpickles and predicts on a CPU-only machine.""",
    "device_": """device_ : str
    The device the network was trained on (``"cpu"``, ``"cuda:0"``); it
    predicts there, or on the CPU where that device is missing.""",
    "diverged_": """diverged_ : bool
    True when the last fit stopped because training diverged (the best
    weights seen were restored, and a ConvergenceWarning said so).""",
    "dtype": """dtype : {"float32", "float64"} or None, default=None
    Precision of training and prediction. None follows the input, as
    MLPClassifier does: float32 data is trained in float32, anything else
    in float64.""",
    "dtype:QNNRegressor": """dtype : {"float32", "float64"} or None, default=None
    Precision of training and prediction. None follows the input, as
    MLPRegressor does: float32 data is trained in float32, anything else
    in float64.""",
    "early_stopping": """early_stopping : bool or "auto", default="auto"
    Hold out ``validation_fraction`` of the training data (stratified), stop
    when its accuracy stops improving and keep the best weights. "auto" does
    so where the fit trains by Adam or SGD (``solver="auto"`` above 1,000
    rows), where training to ``max_iter`` overfits labels with little
    signal, and not for L-BFGS, ``partial_fit`` or a split that cannot be
    scored (where ``True`` refuses the data). ``True`` trains by Adam under
    ``solver="auto"``; ``False`` is MLPClassifier's default.""",
    "early_stopping:QNNRegressor": """early_stopping : bool or "auto", default="auto"
    Hold out ``validation_fraction`` of the training data, stop when its
    R^2 stops improving and keep the best weights. "auto" does so where the
    fit trains by Adam or SGD (``solver="auto"`` above 1,000 rows), where
    training to ``max_iter`` overfits targets with little signal, and not
    for L-BFGS, ``partial_fit`` or a split that cannot be scored (where
    ``True`` refuses the data). ``True`` trains by Adam under
    ``solver="auto"``; ``False`` is MLPRegressor's default.""",
    "epsilon": """epsilon : float, default=1e-8
    Adam's numerical-stability constant.""",
    "feature_names_in_": """feature_names_in_ : ndarray of shape (n_features_in_,)
    Defined only when ``X`` has string feature names.""",
    "feature_names_in_:QNNClassifier": """feature_names_in_ : ndarray of shape (n_features_in_,)
    Names of the features seen during fit. Defined only when ``X`` has
    feature names that are all strings.""",
    "hidden_activation_": """hidden_activation_ : str
    The hidden-layer activation the network was trained with (predictions
    use it, whatever ``activation`` is set to later).""",
    "hidden_layer_sizes": """hidden_layer_sizes : array-like of int, default=(100,)
    Neurons per hidden layer. ``()`` means no hidden layer: one layer
    straight from the features to the class scores.""",
    "hidden_layer_sizes:QNNRegressor": """hidden_layer_sizes : array-like of int, default=(100,)
    Neurons per hidden layer. ``()`` means no hidden layer: one layer
    straight from the features to the outputs.""",
    "interaction_only": """interaction_only : bool, default=False
    Learn no squared terms: ``Q_aa = 0`` (``PolynomialFeatures``'
    ``interaction_only``).""",
    "intercepts_": """intercepts_ : list of ndarray
    The linear bias of each layer (read from ``layers_``).""",
    "layers_": """layers_ : list of dict
    Learned weights per layer (input side first) as numpy arrays in the
    training dtype, plus an ``"options"`` dict with the layer's shape:
    ``{"kind": "QuadraticLayer", "weight": (n_out, n_in), "bias": (n_out,),
    "quadratic": (n_out, n_in, n_in)}`` (the symmetric ``Q^(k)`` of each
    neuron) or ``{"kind": "Linear", "weight", "bias"}``.""",
    "layers_:RPQNNClassifier": """layers_ : list of dict
    Learned weights per layer (input side first) as numpy arrays in the
    training dtype, plus an ``"options"`` dict with the layer's shape:
    ``{"kind": "ReducedQuadraticLayer", "weight": W (n_out, n_in), "bias": b
    (n_out,), "factor_weight": U (n_out, n_in), "factor_bias": c (n_out,)}``
    plus ``"power_weight"``, ``"power_bias"`` with ``power_term=True``, or
    ``{"kind": "Linear", "weight", "bias"}``.""",
    "learning_rate": """learning_rate : {"constant", "invscaling", "adaptive"}, default="constant"
    Step-size schedule for ``solver="sgd"``, as in MLPClassifier:
    "constant" keeps ``learning_rate_init``; "invscaling" uses
    ``learning_rate_init / t ** power_t`` at step ``t``; "adaptive" keeps it
    while the training loss falls and divides it by 5 each time two
    consecutive epochs fail to improve by ``tol``.""",
    "learning_rate:QNNRegressor": """learning_rate : {"constant", "invscaling", "adaptive"}, default="constant"
    Step-size schedule for ``solver="sgd"``, as in MLPRegressor:
    "constant" keeps ``learning_rate_init``; "invscaling" uses
    ``learning_rate_init / t ** power_t`` at step ``t``; "adaptive" keeps it
    while the training loss falls and divides it by 5 each time two
    consecutive epochs fail to improve by ``tol``.""",
    "learning_rate_init": """learning_rate_init : float, default=1e-3
    Initial step size of sgd and adam.""",
    "loss": """loss : {"squared_error", "poisson"}, default="squared_error"
    MLPRegressor's losses: "squared_error" is half the squared error with
    an identity output; "poisson" is half the Poisson deviance with an
    ``exp`` output (the targets must be non-negative). For several
    outputs the squared error is averaged over them and the Poisson
    deviance summed, as in MLPRegressor's ``loss_``.""",
    "loss_": """loss_ : float
    Training objective at the last epoch (lbfgs: iteration).""",
    "loss_curve_": """loss_curve_ : list of float
    Training objective per epoch (lbfgs: per iteration).""",
    "loss_curve_:QNNRegressor": """loss_curve_ : list of float
    Training objective per epoch (lbfgs: per iteration). In the
    units of the scaled targets (``scale_target``).""",
    "max_fun": """max_fun : int, default=15000
    Maximum number of loss evaluations (lbfgs only).""",
    "max_iter": """max_iter : int, default=200
    Epochs for sgd and adam; iterations for lbfgs.""",
    "momentum": """momentum : float, default=0.9
    Momentum of sgd.""",
    "n_features_in_": """n_features_in_ : int""",
    "n_features_in_:QNNClassifier": """n_features_in_ : int
    Number of features seen during fit.""",
    "n_iter_": """n_iter_ : int
    Epochs (lbfgs: iterations) run by the last ``fit`` or
    ``partial_fit`` call, as in MLPClassifier.""",
    "n_iter_:QNNRegressor": """n_iter_ : int
    Epochs (lbfgs: iterations) run by the last ``fit`` or
    ``partial_fit`` call, as in MLPRegressor.""",
    "n_iter_no_change": """n_iter_no_change : int, default=10
    Epochs without an improvement of ``tol`` before stopping.""",
    "n_layers_": """n_layers_ : int
    Number of layers, counting the input layer (as in MLPClassifier).""",
    "n_layers_:QNNRegressor": """n_layers_ : int
    Number of layers, counting the input layer (as in MLPRegressor).""",
    "n_outputs_": """n_outputs_ : int""",
    "n_outputs_:QNNClassifier": """n_outputs_ : int
    Number of class scores (1 for binary problems; one per label for
    a multilabel ``y``).""",
    "n_outputs_:QNNRegressor": """n_outputs_ : int
    Number of outputs (columns of ``y``).""",
    "n_threads": """n_threads : int or "auto", default="auto"
    CPU threads for training and prediction. "auto" picks one thread for
    small steps (where torch's thread hand-off costs more than it saves)
    and all of torch's threads for large ones. A training step's threads go
    to the library that multiplies its batches (numpy's BLAS or torch) and
    the other runs on one thread. The previous settings are restored
    afterwards.""",
    "nesterovs_momentum": """nesterovs_momentum : bool, default=True
    Nesterov's momentum for sgd.""",
    "out_activation_": """out_activation_ : str
    "identity" (``loss="squared_error"``) or "exp" (``loss="poisson"``).""",
    "out_activation_:QNNClassifier": """out_activation_ : str
    "logistic" (binary or multilabel), "softmax" or "sigmoid"
    (per-class sigmoids).""",
    "output_activation": """output_activation : {"softmax", "sigmoid"}, default="softmax"
    "softmax": one score per class, softmax and log-loss. "sigmoid": Noel
    et al.'s output layer, one sigmoid per class with a binary
    cross-entropy each; ``predict_proba`` normalises the sigmoids to sum to
    one. Binary problems always use one logistic output.""",
    "power_t": """power_t : float, default=0.5
    Exponent of the "invscaling" schedule (sgd only).""",
    "power_term": """power_term : bool, default=False
    Use Fan et al.'s neuron: add ``W_p (a * a) + c_p`` (``power_weight``,
    ``power_bias``).""",
    "quadratic_l1": """quadratic_l1 : float, default=0.0
    ReLinear-sw (Fan et al.): extra l1 decay on the quadratic weights
    (scaled like ``alpha``).""",
    "quadratic_l2": """quadratic_l2 : float, default=0.0
    ReLinear-sw: extra l2 decay on the quadratic weights (scaled like
    ``alpha``).""",
    "quadratic_layers": """quadratic_layers : {"output", "all"} or list of bool, default="output"
    Which layers are quadratic: only the output layer (Noel et al.'s MNIST
    network: a conventional hidden layer and a quadratic output layer),
    every layer, or one flag per layer (``len(hidden_layer_sizes) + 1``
    flags, the output layer last). The others are ``torch.nn.Linear``.""",
    "quadratic_learning_rate_scale": """quadratic_learning_rate_scale : float, default=0.1
    ReLinear-sg (Fan et al.): the quadratic parameters learn with
    ``learning_rate_init * quadratic_learning_rate_scale`` (sgd and adam).
    1.0 trains them like the linear ones.""",
    "random_state": """random_state : int, RandomState instance or None, default=None
    Seeds the initial weights, the shuffling and the early-stopping split
    through a local torch generator (never torch's global one). On the CPU
    the same value gives the same model.""",
    "relinear": """relinear : bool, default=True
    ReLinear's start (Fan et al.): the quadratic part of every neuron starts
    neutral, so each neuron starts as a conventional one. False draws a
    small random quadratic part.""",
    "scale_target": """scale_target : bool, default=True
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
    False: the targets as given.""",
    "scores_": """scores_ : ndarray of shape (n_folds, n_betas)
    Held-out score of every fold and ``beta``.""",
    "shuffle": """shuffle : bool, default=True
    Shuffle the samples every epoch.""",
    "solver": """solver : {"adam", "sgd", "lbfgs"}, default="adam"
    "sgd" is stochastic gradient descent with (Nesterov) momentum; "lbfgs"
    (full-batch L-BFGS taking L-BFGS-B's steps, as MLPClassifier's, in the
    training engine's numpy L-BFGS) suits small problems and has no
    ``partial_fit``.""",
    "solver:QNNRegressor": """solver : {"auto", "adam", "sgd", "lbfgs"}, default="auto"
    "auto" is "lbfgs" on up to 1,000 training rows and "adam" above
    (``partial_fit`` uses "adam"; Dask collections "lbfgs"): Adam's
    ``max_iter`` epochs of batches of 200 are too few steps to converge on
    small data, where full-batch L-BFGS converges, and on more rows Adam's
    early end holds the network back where L-BFGS overfits. The solver
    that ran is ``solver_``. "adam" is MLPRegressor's default; "sgd" is
    stochastic gradient descent with (Nesterov) momentum; "lbfgs"
    (full-batch L-BFGS taking L-BFGS-B's steps, as MLPRegressor's, in the
    training engine's numpy L-BFGS) has no ``partial_fit``.""",
    "solver_": """solver_ : str
    The solver of the last ``fit`` or ``partial_fit`` ("auto" resolved).""",
    "t_": """t_ : int
    Training samples seen, over every call (MLPClassifier's ``t_``).""",
    "t_:QNNRegressor": """t_ : int
    Training samples seen, over every call (MLPRegressor's ``t_``).""",
    "target_max_": """target_max_ : ndarray of shape (n_outputs_,)
    Per-output maximum, likewise.""",
    "linear_term": """linear_term : bool, default=True
    With ``fit_intercept=True``, fit a linear term ``x·w + b`` first and
    the network to its residuals.
    A ±1 first layer weighs every input alike in each neuron's linear part,
    so a mostly linear target is fitted poorly on few rows. The term is
    ridge on the standardized inputs, its penalty chosen per output by
    generalized cross-validation (on a grid relative to the inputs' mean
    column energy); fixed by ``fit`` (or a first ``partial_fit``). The
    model adds ``X @ linear_coef_.T`` to the network's output, the term's
    constant to its offset. False: the network alone, as in the paper.""",
    "linear_coef_": """linear_coef_ : ndarray of shape (n_outputs_, n_features_in_)
    The linear term's coefficients on the original inputs (with
    ``linear_term=True`` only; its constant is in the offset).""",
    "linear_alpha_": """linear_alpha_ : ndarray of shape (n_outputs_,)
    The linear term's ridge penalty per output: :class:`~sklearn.linear_model.Ridge`'s
    ``alpha`` on the standardized inputs, rows counted by ``sample_weight``
    (with ``linear_term=True`` only).""",
    "target_min_": """target_min_ : ndarray of shape (n_outputs_,)
    Per-output minimum of the training targets of positive weight,
    float64: the range ``clip_outputs`` clips to.""",
    "target_min_:QNNRegressor": """target_min_ : ndarray of shape (n_outputs_,)
    Per-output minimum of the training targets of positive weight,
    float64, widened by each ``partial_fit``: the range ``clip_outputs``
    clips to.""",
    "target_scale_": """target_scale_ : ndarray of shape (n_outputs_,)
    ``y`` divided by it for training (1 without ``scale_target``).""",
    "target_shift_": """target_shift_ : ndarray of shape (n_outputs_,)
    Subtracted from ``y`` for training (0 without ``scale_target``, and
    with ``loss="poisson"``).""",
    "tol": """tol : float, default=1e-4
    Stop when the training loss (or, with early stopping, the validation
    R^2) has not improved by ``tol`` for ``n_iter_no_change`` epochs.""",
    "tol:QNNClassifier": """tol : float, default=1e-4
    Stop when the training loss (or, with early stopping, the validation
    accuracy) has not improved by ``tol`` for ``n_iter_no_change`` epochs.""",
    "validation_fraction": """validation_fraction : float, default=0.1
    Share of the training data held out by ``early_stopping``.""",
    "validation_scores_": """validation_scores_ : list of float or None
    Validation R^2 per epoch where the fit held out a validation split
    (``early_stopping``), else None.""",
    "validation_scores_:QNNClassifier": """validation_scores_ : list of float or None
    Validation accuracy per epoch where the fit held out a validation split
    (``early_stopping``), else None.""",
    "verbose": """verbose : bool, default=False
    Print one line per epoch: loss, validation score, elapsed time.""",
    "warm_start": """warm_start : bool, default=False
    Start ``fit`` from the previous solution (with a fresh optimizer). The
    classes, features and architecture must be those of the previous fit.""",
    "warm_start:QNNRegressor": """warm_start : bool, default=False
    Start ``fit`` from the previous solution (with a fresh optimizer). The
    outputs, features and architecture must be those of the previous fit.""",
    "weight_transfer": """weight_transfer : bool, default=False
    Fan et al.'s weight transfer: first train a conventional network of the
    same shape with the same settings, copy its weights into the linear
    part of every layer, then train the quadratic network.""",
    "weight_transfer_n_iter_": """weight_transfer_n_iter_ : int
    Epochs of the conventional network, with ``weight_transfer=True``.""",
}
