"""Quadratic neural network classifiers (paper 001, with paper 000's ReLinear).

:class:`QNNClassifier` stacks full quadratic layers (``b + W a + a^T Q a``) and
conventional ones; :class:`RPQNNClassifier` uses paper 001's reduced-parameter
layers (``(W a + b) * (U a + c)``), optionally with paper 000's power term.
Both are trained by :mod:`skquad._engine` and follow
:class:`~sklearn.neural_network.MLPClassifier`'s parameter names.
"""

import warnings
from numbers import Integral, Real

import numpy as np
import torch
from scipy.special import log_expit, logsumexp
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ._base import BaseQuadraticClassifier
from ._training import ParameterGroup, Trainer, TrainingConfig, choose_thread_count, limit_threads
from ._fused_network import FusedNetwork
from ._torch_utils import make_generator, resolve_device, resolve_dtype
from .nn import QuadraticLayer, ReducedQuadraticLayer

__all__ = ["QNNClassifier", "RPQNNClassifier"]

_ACTIVATION_MODULES = {
    "identity": torch.nn.Identity,
    "relu": torch.nn.ReLU,
    "sigmoid": torch.nn.Sigmoid,
    "logistic": torch.nn.Sigmoid,
    "tanh": torch.nn.Tanh,
}

# Rows per forward pass at predict time: bounds the (rows x n_out x n_in)
# cache of a quadratic layer.
_PREDICT_CHUNK = 4096


def _export_linear(layer):
    return {
        "kind": "Linear",
        "options": {"in_features": layer.in_features, "out_features": layer.out_features},
        "weight": layer.weight.detach().cpu().numpy().copy(),
        "bias": layer.bias.detach().cpu().numpy().copy(),
    }


def _linear_from_state(state, device, dtype):
    options = state["options"]
    layer = torch.nn.Linear(options["in_features"], options["out_features"], device=device, dtype=dtype)
    with torch.no_grad():
        layer.weight.copy_(torch.as_tensor(state["weight"]))
        layer.bias.copy_(torch.as_tensor(state["bias"]))
    return layer


class _BaseQuadraticNetwork(BaseQuadraticClassifier):
    """Shared fit/partial_fit/predict of the two network classifiers."""

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(_ACTIVATION_MODULES))],
        "quadratic_layers": [StrOptions({"all", "output"}), "array-like"],
        "output_activation": [StrOptions({"softmax", "sigmoid"})],
        "solver": [StrOptions({"sgd", "adam", "lbfgs"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "momentum": [Interval(Real, 0, 1, closed="both")],
        "nesterovs_momentum": ["boolean"],
        "early_stopping": ["boolean"],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "beta_1": [Interval(Real, 0, 1, closed="left")],
        "beta_2": [Interval(Real, 0, 1, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "max_fun": [Interval(Integral, 1, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "relinear": ["boolean"],
        "quadratic_learning_rate_scale": [Interval(Real, 0, None, closed="left")],
        "quadratic_l1": [Interval(Real, 0, None, closed="left")],
        "quadratic_l2": [Interval(Real, 0, None, closed="left")],
        "weight_transfer": ["boolean"],
        "backward": [StrOptions({"fused", "cached", "autograd"})],
        "device": [str],
        "dtype": [StrOptions({"float32", "float64"})],
    }

    # ------------------------------------------------------------ architecture
    def _hidden_sizes(self):
        sizes = self.hidden_layer_sizes
        sizes = [sizes] if isinstance(sizes, Integral) else list(sizes)
        for size in sizes:
            if isinstance(size, bool) or not isinstance(size, Integral) or size < 1:
                raise ValueError(
                    f"hidden_layer_sizes must contain positive integers, got {self.hidden_layer_sizes!r}."
                )
        return [int(s) for s in sizes]

    def _quadratic_flags(self, n_layers):
        if isinstance(self.quadratic_layers, str):
            if self.quadratic_layers == "all":
                return [True] * n_layers
            return [False] * (n_layers - 1) + [True]
        flags = list(self.quadratic_layers)
        if len(flags) != n_layers or not all(isinstance(f, (bool, np.bool_)) for f in flags):
            raise ValueError(
                f"quadratic_layers must be 'all', 'output' or one bool per layer "
                f"({n_layers} layers: len(hidden_layer_sizes) + 1 for the output), "
                f"got {self.quadratic_layers!r}."
            )
        return [bool(f) for f in flags]

    def _quadratic_layer(self, n_in, n_out, device, dtype):  # pragma: no cover - abstract
        raise NotImplementedError

    def _layer_backward_option(self):
        return "autograd" if self.backward == "autograd" else "cached"

    def _new_module(self, n_features, device, dtype, generator, *, conventional=False):
        """A freshly initialised network on ``device`` in ``dtype``.

        The weights are drawn on the CPU in float64 from the local generator and
        then converted, so a ``random_state`` gives the same starting network
        (up to rounding) in either dtype and on any device.
        """
        sizes = [n_features, *self._hidden_sizes(), self._n_scores]
        flags = self._quadratic_flags(len(sizes) - 1)
        items = []
        for index, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            if flags[index] and not conventional:
                layer = self._quadratic_layer(n_in, n_out, "cpu", torch.float64)
                layer.reset_parameters(generator=generator, relinear=self.relinear)
            else:
                layer = torch.nn.Linear(n_in, n_out, dtype=torch.float64)
                # torch.nn.Linear's rule, U(-1/sqrt(n_in), 1/sqrt(n_in)), drawn
                # from the local generator (weight first, then bias, like the
                # quadratic layers' linear part).
                bound = 1.0 / np.sqrt(n_in)
                with torch.no_grad():
                    for tensor in (layer.weight, layer.bias):
                        tensor.uniform_(-bound, bound, generator=generator)
            items.append(layer)
            if index < len(sizes) - 2:
                items.append(_ACTIVATION_MODULES[self.activation]())
        return torch.nn.Sequential(*items).to(device=device, dtype=dtype)

    def _module_from_layers(self, layers, device, dtype):
        items = []
        for index, state in enumerate(layers):
            if state["kind"] == "Linear":
                items.append(_linear_from_state(state, device, dtype))
            else:
                cls = QuadraticLayer if state["kind"] == "QuadraticLayer" else ReducedQuadraticLayer
                items.append(
                    cls.from_numpy_state(state, device=device, dtype=dtype, backward=self._layer_backward_option())
                )
            if index < len(layers) - 1:
                items.append(_ACTIVATION_MODULES[self.activation]())
        return torch.nn.Sequential(*items)

    @staticmethod
    def _export_layers(module):
        layers = []
        for item in module:
            if isinstance(item, torch.nn.Linear):
                layers.append(_export_linear(item))
            elif isinstance(item, (QuadraticLayer, ReducedQuadraticLayer)):
                layers.append(item.state_to_numpy())
        return layers

    # ------------------------------------------------------------ training
    def _output_kind(self):
        if self._n_scores == 1:
            return "binary"
        return self.output_activation

    def _per_sample_loss(self, output_kind):
        functional = torch.nn.functional

        def loss(scores, y):
            if output_kind == "softmax":
                return functional.cross_entropy(scores, y, reduction="none")
            if output_kind == "binary":
                return functional.binary_cross_entropy_with_logits(
                    scores[:, 0], y.to(scores.dtype), reduction="none"
                )
            targets = functional.one_hot(y, scores.shape[1]).to(scores.dtype)
            return functional.binary_cross_entropy_with_logits(scores, targets, reduction="none").sum(1)

        return loss

    @staticmethod
    def _weighted_accuracy(scores, y, sample_weight):
        if scores.shape[1] == 1:
            predicted = (scores[:, 0] > 0).long()
        else:
            predicted = scores.argmax(1)
        return float(np.average((predicted == y).cpu().numpy(), weights=sample_weight))

    def _parameter_groups(self, module):
        weights, biases, quadratic_weights, quadratic_biases = [], [], [], []
        for item in module:
            if isinstance(item, torch.nn.Linear):
                weights.append(item.weight)
                biases.append(item.bias)
            elif isinstance(item, (QuadraticLayer, ReducedQuadraticLayer)):
                for parameter in item.linear_parameters():
                    (weights if parameter.dim() > 1 else biases).append(parameter)
                for parameter in item.quadratic_parameters():
                    (quadratic_weights if parameter.dim() > 1 else quadratic_biases).append(parameter)
        scale = self.quadratic_learning_rate_scale
        # alpha is MLPClassifier's l2 on every weight (not on the intercepts);
        # the ReLinear-sw decay adds to it on the quadratic weights only, so that
        # e.g. the factor bias c that starts at 1 is not pulled towards 0.
        return [
            ParameterGroup(weights, name="weights", l2=self.alpha),
            ParameterGroup(biases, name="biases"),
            ParameterGroup(
                quadratic_weights,
                name="quadratic_weights",
                learning_rate_scale=scale,
                l2=self.alpha + self.quadratic_l2,
                l1=self.quadratic_l1,
            ),
            ParameterGroup(quadratic_biases, name="quadratic_biases", learning_rate_scale=scale),
        ]

    def _training_config(self):
        return TrainingConfig(
            solver=self.solver,
            learning_rate=self.learning_rate_init,
            batch_size=None if self.batch_size == "auto" else self.batch_size,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            early_stopping=self.early_stopping,
            validation_fraction=self.validation_fraction,
            shuffle=self.shuffle,
            momentum=self.momentum,
            nesterov=self.nesterovs_momentum,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            max_fun=self.max_fun,
            verbose=bool(self.verbose),
            stratify=True,
            divergence_advice=(
                f"a smaller learning_rate_init (now {self.learning_rate_init:g}), "
                "the ReLinear settings (relinear=True with a smaller "
                "quadratic_learning_rate_scale or a quadratic l2/l1 decay)"
            ),
        )

    def _new_trainer(self, module, device, dtype, generator):
        output_kind = self._output_kind()
        fused = self.backward == "fused"
        return Trainer(
            module,
            self._per_sample_loss(output_kind),
            self._parameter_groups(module),
            self._training_config(),
            device=device,
            dtype=dtype,
            generator=generator,
            validation_score=self._weighted_accuracy,
            loss_and_gradient=FusedNetwork(module, output_kind) if fused else None,
        )

    def _transfer_conventional_weights(self, module, X, y, sample_weight, device, dtype, generator):
        """Paper 000's weight transfer: train a conventional twin, copy it in."""
        conventional = self._new_module(X.shape[1], device, dtype, generator, conventional=True)
        trainer = Trainer(
            conventional,
            self._per_sample_loss(self._output_kind()),
            [ParameterGroup([m.weight for m in conventional if isinstance(m, torch.nn.Linear)], l2=self.alpha)],
            self._training_config(),
            device=device,
            dtype=dtype,
            generator=generator,
            validation_score=self._weighted_accuracy,
        )
        trainer.config.warn_on_max_iter = False
        trainer.fit(X, y, sample_weight, max_iter=self.max_iter)
        for target, source in zip(module, conventional):
            if isinstance(target, torch.nn.Linear):
                target.load_state_dict(source.state_dict())
            elif isinstance(target, (QuadraticLayer, ReducedQuadraticLayer)):
                target.load_linear_from(source, reset_quadratic=True)
        self.weight_transfer_n_iter_ = trainer.history.n_iter

    def _check_warm_start_shape(self, X):
        first, last = self.layers_[0]["options"], self.layers_[-1]["options"]
        sizes = [state["options"]["out_features"] for state in self.layers_[:-1]]
        if first["in_features"] != X.shape[1] or last["out_features"] != self._n_scores or (
            sizes != self._hidden_sizes()
        ):
            raise ValueError(
                "warm_start=True needs the same number of features, classes and "
                "hidden_layer_sizes as the previous fit; set warm_start=False to "
                "start over."
            )

    def _train(self, X, y, sample_weight, *, incremental):
        device = resolve_device(self.device)
        dtype = resolve_dtype(self.dtype)
        trainer = getattr(self, "_trainer", None) if incremental else None
        continuing = hasattr(self, "layers_") and (incremental or self.warm_start)
        if trainer is None:
            generator = make_generator(self.random_state)
            if continuing:
                self._check_warm_start_shape(X)
                module = self._module_from_layers(self.layers_, device, dtype)
            else:
                module = self._new_module(X.shape[1], device, dtype, generator)
                if self.weight_transfer:
                    self._transfer_conventional_weights(module, X, y, sample_weight, device, dtype, generator)
            trainer = self._new_trainer(module, device, dtype, generator)
            if continuing:
                history = trainer.history
                history.loss_curve = list(self.loss_curve_)
                history.validation_scores = list(self.validation_scores_ or [])
                history.best_loss = self.best_loss_
                history.n_iter = self.n_iter_
                history.n_steps = self.t_
        if incremental:
            history = trainer.partial_fit(X, y, sample_weight)
        else:
            history = trainer.fit(X, y, sample_weight, max_iter=self.max_iter)
        self._trainer = trainer
        self._module = trainer.module
        self.__dict__.pop("_float64_module_cache", None)
        self.layers_ = self._export_layers(trainer.module)
        self.loss_curve_ = list(history.loss_curve)
        self.validation_scores_ = list(history.validation_scores) if self.early_stopping and not incremental else None
        self.best_validation_score_ = history.best_validation_score if self.validation_scores_ else None
        self.best_loss_ = history.best_loss
        self.n_iter_ = history.n_iter
        self.t_ = history.n_steps
        self.diverged_ = history.diverged
        self.n_layers_ = len(self.layers_) + 1
        self.n_outputs_ = self._n_scores
        self.out_activation_ = self._output_kind() if self._n_scores > 1 else "logistic"
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train the network on ``(X, y)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        X, y_encoded, sample_weight = self._validate_training_data(X, y, sample_weight, reset=True)
        self._hidden_sizes()
        self._quadratic_flags(len(self._hidden_sizes()) + 1)
        if not (self.warm_start and hasattr(self, "layers_")):
            for attribute in ("layers_", "loss_curve_", "validation_scores_", "best_loss_", "n_iter_", "t_"):
                self.__dict__.pop(attribute, None)
        self.__dict__.pop("_trainer", None)
        return self._train(X, y_encoded, sample_weight, incremental=False)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One epoch of the stochastic solver over ``(X, y)``.

        The optimizer state is kept between calls (not across pickling: an
        unpickled model continues with a fresh optimizer state).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            Every class that will ever appear; required on the first call.
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : object
        """
        if self.solver == "lbfgs":
            raise ValueError(
                "partial_fit is only available for the stochastic solvers "
                "(solver='sgd' or 'adam'), not for solver='lbfgs'."
            )
        first_call = not hasattr(self, "layers_")
        if first_call and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        X, y_encoded, sample_weight = self._validate_training_data(
            X, y, sample_weight, reset=first_call, classes=classes if first_call else None
        )
        if first_call:
            self._hidden_sizes()
            self._quadratic_flags(len(self._hidden_sizes()) + 1)
        return self._train(X, y_encoded, sample_weight, incremental=True)

    # ------------------------------------------------------------ prediction
    def _prediction_module(self):
        module = self.__dict__.get("_module")
        if module is None:
            try:
                device = resolve_device(self.device)
            except ValueError:
                device = torch.device("cpu")  # a GPU model unpickled on a CPU-only machine
            module = self._module_from_layers(self.layers_, device, resolve_dtype(self.dtype))
            self._module = module
        return module

    def _raw_scores(self, X):
        module = self._prediction_module()
        parameter = next(module.parameters())
        n_parameters = sum(p.numel() for p in module.parameters())
        work = 2.0 * min(len(X), _PREDICT_CHUNK) * n_parameters
        chunks = []
        with torch.inference_mode(), limit_threads(choose_thread_count(work)):
            for start in range(0, X.shape[0], _PREDICT_CHUNK):
                rows = X[start : start + _PREDICT_CHUNK]
                batch = torch.as_tensor(rows).to(device=parameter.device, dtype=parameter.dtype)
                scores = module(batch).double().cpu().numpy()
                if parameter.dtype != torch.float64 and not np.all(np.isfinite(scores)):
                    # float32 overflowed (deep quadratic networks grow fast with
                    # the input): redo these rows in float64 on the CPU.
                    scores = self._float64_module()(torch.as_tensor(rows, dtype=torch.float64)).numpy()
                chunks.append(scores)
        if not chunks:
            return np.zeros((0, self._n_scores))
        return np.concatenate(chunks)

    def _float64_module(self):
        module = self.__dict__.get("_float64_module_cache")
        if module is None:
            module = self._module_from_layers(self.layers_, torch.device("cpu"), torch.float64)
            self._float64_module_cache = module
        return module

    def _scores_to_log_proba(self, scores):
        if scores.shape[1] > 1 and self.output_activation == "sigmoid":
            # Per-class sigmoids, normalised to sum to one.
            log_sigmoid = log_expit(scores)
            return log_sigmoid - logsumexp(log_sigmoid, axis=1, keepdims=True)
        return super()._scores_to_log_proba(scores)

    def _scores_to_proba(self, scores):
        if scores.shape[1] > 1 and self.output_activation == "sigmoid":
            return np.exp(self._scores_to_log_proba(scores))
        return super()._scores_to_proba(scores)

    @property
    def coefs_(self):
        """Linear weights per layer, ``(n_in, n_out)`` as in MLPClassifier."""
        check_is_fitted(self, "layers_")
        return [state["weight"].T.copy() for state in self.layers_]

    @property
    def intercepts_(self):
        """Biases of the linear part per layer, as in MLPClassifier."""
        check_is_fitted(self, "layers_")
        return [state["bias"].copy() for state in self.layers_]

    def __getstate__(self):
        state = super().__getstate__()
        # Only numpy weights travel: torch objects may live on a GPU.
        for key in ("_module", "_trainer", "_float64_module_cache"):
            state.pop(key, None)
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.device != "cpu" and torch.cuda.is_available()
        return tags


_COMMON_PARAMETERS_DOC = """
    hidden_layer_sizes : array-like of int, default=(100,)
        Neurons per hidden layer. ``()`` means no hidden layer: one layer
        straight from the features to the class scores.
    activation : {"relu", "sigmoid", "tanh", "identity"}, default="relu"
        Hidden-layer activation ("logistic" is accepted as a synonym of
        "sigmoid", as in MLPClassifier).
    quadratic_layers : {"output", "all"} or list of bool, default="output"
        Which layers are quadratic: only the output layer (paper 001's MNIST
        network: a conventional hidden layer and a quadratic output layer),
        every layer, or one flag per layer (``len(hidden_layer_sizes) + 1``
        flags, the output layer last). The others are ``torch.nn.Linear``.
    output_activation : {"softmax", "sigmoid"}, default="softmax"
        "softmax": one score per class, softmax and log-loss. "sigmoid": paper
        001's output layer, one sigmoid per class with a binary cross-entropy
        each; ``predict_proba`` normalises the sigmoids to sum to one. Binary
        problems always use one logistic output.
    solver : {"adam", "sgd", "lbfgs"}, default="adam"
        "sgd" is stochastic gradient descent with (Nesterov) momentum; "lbfgs"
        (scipy's L-BFGS-B on the whole data set) suits small problems.
    alpha : float, default=1e-4
        L2 penalty on every weight matrix (not on biases), scaled like
        MLPClassifier's.
    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for "auto". Ignored by lbfgs.
    learning_rate_init : float, default=1e-3
        Step size of sgd and adam (constant).
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
        Start ``fit`` from the previous solution (with a fresh optimizer).
    momentum : float, default=0.9
        sgd only.
    nesterovs_momentum : bool, default=True
        sgd only.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training data (stratified), stop
        when its accuracy stops improving and keep the best weights.
    validation_fraction : float, default=0.1
    beta_1, beta_2, epsilon : float, default=0.9, 0.999, 1e-8
        adam only.
    n_iter_no_change : int, default=10
    max_fun : int, default=15000
        lbfgs only: maximum number of loss evaluations.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes, multiplied into ``sample_weight``.
    relinear : bool, default=True
        ReLinear's start (paper 000): the quadratic part of every neuron starts
        neutral, so each neuron starts as a conventional one. False draws a
        small random quadratic part.
    quadratic_learning_rate_scale : float, default=0.1
        ReLinear-sg: the quadratic parameters learn with
        ``learning_rate_init * quadratic_learning_rate_scale`` (sgd and adam).
        1.0 trains them like the linear ones.
    quadratic_l1, quadratic_l2 : float, default=0.0
        ReLinear-sw: extra l1 / l2 decay on the quadratic weights (scaled like
        ``alpha``).
    weight_transfer : bool, default=False
        Paper 000's weight transfer: first train a conventional network of the
        same shape with the same settings, copy its weights into the linear
        part of every layer, then train the quadratic network.
    backward : {"fused", "cached", "autograd"}, default="fused"
        How gradients are computed: "fused" runs the papers' explicit
        back-propagation (Algorithms 1 and 2) for the whole network without
        autograd (fastest); "cached" uses the per-layer autograd Functions of
        :mod:`skquad.nn.backward`; "autograd" differentiates plain torch
        operations. All three give the same gradients.
    device : {"auto", "cpu", "cuda"}, default="auto"
        "auto" trains on CUDA when available. Weights are stored as numpy
        arrays, so a model fitted on a GPU unpickles and predicts on a CPU-only
        machine.
    dtype : {"float32", "float64"}, default="float32"
        Precision of training and prediction."""

_COMMON_ATTRIBUTES_DOC = """
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Defined when ``X`` has string column names.
    layers_ : list of dict
        Learned weights per layer (input side first) as numpy arrays:
        ``{"kind": "Linear", "weight": (n_out, n_in), "bias": (n_out,)}``,
        ``{"kind": "QuadraticLayer", "weight", "bias", "quadratic":
        (n_out, n_in, n_in) symmetric Q}`` or ``{"kind": "ReducedQuadraticLayer",
        "weight", "bias", "factor_weight", "factor_bias"[, "power_weight",
        "power_bias"]}``, plus an ``"options"`` dict with the layer's shape.
    coefs_ : list of ndarray
        The linear weight of each layer, shape ``(n_in, n_out)`` as in
        MLPClassifier (read from ``layers_``).
    intercepts_ : list of ndarray
    loss_curve_ : list of float
        Training objective per epoch (lbfgs: per iteration).
    validation_scores_ : list of float or None
        Validation accuracy per epoch with ``early_stopping``, else None.
    best_validation_score_ : float or None
    best_loss_ : float
        Lowest training objective seen.
    n_iter_ : int
        Epochs run (lbfgs: iterations).
    t_ : int
        Optimizer steps taken.
    diverged_ : bool
        True when the last fit stopped because the loss became NaN or infinite
        (the best weights seen were restored, and a ConvergenceWarning said so).
    n_layers_ : int
        Number of layers, counting the input layer (as in MLPClassifier).
    n_outputs_ : int
        Number of class scores (1 for binary problems)."""


def _common_init(self, params):
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(self, name, value)


class QNNClassifier(_BaseQuadraticNetwork):
    __doc__ = (
        """Quadratic neural network classifier (paper 001, Algorithm 1).

    Layer ``l``, neuron ``k`` computes ``z_k = b_k + W_k a + a^T Q^(k) a`` with
    a symmetric ``Q^(k)`` per neuron (``n_out * n_in**2`` parameters), or a
    conventional ``b + W a`` where ``quadratic_layers`` says so. Trained with
    ReLinear (paper 000) by default: the quadratic parts start at zero and
    learn with a smaller learning rate.

    Parameters
    ----------"""
        + _COMMON_PARAMETERS_DOC
        + """

    Attributes
    ----------"""
        + _COMMON_ATTRIBUTES_DOC
        + """

    See Also
    --------
    RPQNNClassifier : the reduced-parameter network, ``O(n_out n_in)`` per layer.
    sklearn.neural_network.MLPClassifier : the conventional network.

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
    )

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        quadratic_layers="output",
        output_activation="softmax",
        solver="adam",
        alpha=1e-4,
        batch_size="auto",
        learning_rate_init=1e-3,
        max_iter=200,
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
        class_weight=None,
        relinear=True,
        quadratic_learning_rate_scale=0.1,
        quadratic_l1=0.0,
        quadratic_l2=0.0,
        weight_transfer=False,
        backward="fused",
        device="auto",
        dtype="float32",
    ):
        _common_init(self, locals())

    def _quadratic_layer(self, n_in, n_out, device, dtype):
        return QuadraticLayer(
            n_in, n_out, backward=self._layer_backward_option(), quadratic_storage="full", device=device, dtype=dtype
        )


class RPQNNClassifier(_BaseQuadraticNetwork):
    __doc__ = (
        """Reduced-parameter quadratic network classifier (paper 001, Algorithm 2).

    Quadratic layers compute ``z = (W a + b) * (U a + c)`` (``2 n_out n_in``
    weights, the cost of two linear layers), or with ``power_term=True`` paper
    000's neuron ``(W a + b) * (U a + c) + W_p (a * a) + c_p``. ReLinear's
    start (``U = 0, c = 1``; ``W_p = 0, c_p = 0``) makes every neuron a
    conventional one at first.

    Parameters
    ----------"""
        + _COMMON_PARAMETERS_DOC
        + """
    power_term : bool, default=False
        Use paper 000's neuron (adds ``W_p (a * a) + c_p``).

    Attributes
    ----------"""
        + _COMMON_ATTRIBUTES_DOC
        + """

    See Also
    --------
    QNNClassifier : the full quadratic network.

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
    )

    _parameter_constraints = {
        **_BaseQuadraticNetwork._parameter_constraints,
        "power_term": ["boolean"],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        quadratic_layers="output",
        output_activation="softmax",
        power_term=False,
        solver="adam",
        alpha=1e-4,
        batch_size="auto",
        learning_rate_init=1e-3,
        max_iter=200,
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
        class_weight=None,
        relinear=True,
        quadratic_learning_rate_scale=0.1,
        quadratic_l1=0.0,
        quadratic_l2=0.0,
        weight_transfer=False,
        backward="fused",
        device="auto",
        dtype="float32",
    ):
        _common_init(self, locals())

    def _quadratic_layer(self, n_in, n_out, device, dtype):
        return ReducedQuadraticLayer(
            n_in, n_out, power_term=self.power_term, backward=self._layer_backward_option(), device=device, dtype=dtype
        )
