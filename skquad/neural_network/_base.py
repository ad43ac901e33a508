"""The scikit-learn side shared by the quadratic networks.

:class:`BaseQuadraticNetwork` holds what the four network estimators share;
:mod:`._classifier` and :mod:`._regressor` add the task, and the estimators name
the quadratic layer they stack. The networks are built by :mod:`skquad.nn.network`,
trained by :mod:`skquad._training` (through :class:`skquad.nn.fused.FusedNetwork`'s
backward pass by default) and stored as numpy arrays in ``layers_``.

A task base provides ``_n_scores``; ``_output_kind()`` (a key of
:data:`skquad.nn.losses.OUTPUT_LOSSES`); ``_out_activation_name()``;
``_validation_score(scores, y, sample_weight)`` (higher is better);
``_float_targets`` (``y`` reaches the trainer as floats, not class indices); and
``_callback_targets(y)`` (``y`` as given, for the callbacks).
"""

import inspect
from numbers import Integral, Real

import numpy as np
import torch
from scipy import sparse
from sklearn.utils._param_validation import Interval, Options, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._foundation._atomic import reads_fitted_state
from .._array_api import is_tensor, namespace_of, numpy_dtype
from .._base import BaseQuadraticEstimator
from .._foundation._torch_utils import as_tensor, prediction_device, resolve_dtype
from .._training import ParameterGroup, Trainer, TrainingConfig, reporting_epochs
from .._foundation._runtime import cpu_matmul_library, runtime_policy, thread_count
from .._foundation._threads import limit_threads
from ..nn import QuadraticLayer, ReducedQuadraticLayer
from ..nn.fused import FusedNetwork
from ..nn.losses import per_sample_loss
from ..nn.network import (
    ACTIVATIONS,
    count_parameters,
    network_from_states,
    network_to_states,
    new_network,
)
from ..nn.sparse import SparseRowsInput, first_layer_batch

__all__ = ["BaseQuadraticNetwork"]

# Rows per forward pass at predict time: bounds the (rows x n_out x n_in)
# cache of a quadratic layer.
_PREDICT_CHUNK = 4096
# Rule: solver="auto" trains by L-BFGS on up to this many rows, by Adam above. Why: Adam at
# its batch of 200 takes max_iter * ceil(n / 200) steps, too few to converge on small data
# (scikit-learn's MLP guide recommends lbfgs there); on more rows Adam's early end
# regularizes where full-batch L-BFGS to convergence overfits (doc/benchmark_results/robustness).
AUTO_LBFGS_MAX_SAMPLES = 1000

# Copies of the parameter vector that training keeps (the parameters, their
# gradient, the best and the starting snapshot, Adam's two moments and its
# denominator), plus the float64 copy the network is drawn in.
_TRAINING_COPIES = 7


def signature_with(init, after, **parameters):
    """``init``'s signature (``init`` may be a signature itself) with keyword-only ``parameters`` inserted after ``after``.

    An estimator that adds a parameter to its base's constructor sets its own
    ``__init__.__signature__`` with this, so that scikit-learn's ``get_params``,
    ``clone`` and ``repr`` (which read the signature) and numpydoc's
    parameter-order check see every parameter in order, while the shared
    parameters are written once, in the base.
    """
    signature = init if isinstance(init, inspect.Signature) else inspect.signature(init)
    for name in parameters:
        if name in signature.parameters:
            raise ValueError(f"{name!r} is already a parameter of this signature.")
    existing = list(signature.parameters.values())
    position = [p.name for p in existing].index(after) + 1
    added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=value) for name, value in parameters.items()]
    return signature.replace(parameters=existing[:position] + added + existing[position:])


# Rule: early_stopping="auto" holds out validation_fraction of the rows where a fit trains by
# Adam or SGD on more than AUTO_LBFGS_MAX_SAMPLES rows, and a split can be scored; L-BFGS fits,
# smaller ones and partial_fit run as with False. Why: there Adam's max_iter epochs fit the noise
# of targets with little signal, while on fewer rows a held-out tenth is too few to judge an
# epoch by (the measurements are in the CHANGELOG).
EARLY_STOPPING = "auto"


def _explicit_early_stopping(early_stopping):
    """``early_stopping`` when given as a bool, False for "auto"."""
    return not isinstance(early_stopping, str) and bool(early_stopping)


def fit_early_stopping(early_stopping, solver, n_samples, *, incremental=False):
    """Whether a fit by ``solver`` on ``n_samples`` rows holds out a validation split:
    ``early_stopping``, or for "auto" the rule of :data:`EARLY_STOPPING`; ``partial_fit``
    (``incremental``) never does."""
    if incremental:
        return False
    if isinstance(early_stopping, str):
        return solver in ("adam", "sgd") and n_samples > AUTO_LBFGS_MAX_SAMPLES
    return bool(early_stopping)


def fit_solver(solver, n_samples, *, incremental=False, distributed=False, early_stopping=False):
    """The solver a fit runs: ``solver``, or for "auto" the rule of :data:`AUTO_LBFGS_MAX_SAMPLES`.

    ``partial_fit`` streams batches and ``early_stopping=True`` scores epochs, so
    "auto" is Adam there; Dask row blocks train by full-batch L-BFGS only.
    """
    if solver != "auto":
        return solver
    if incremental or _explicit_early_stopping(early_stopping):
        return "adam"
    return "lbfgs" if distributed or n_samples <= AUTO_LBFGS_MAX_SAMPLES else "adam"


def _stochastic_solver(estimator):
    # available_if hides partial_fit for solver="lbfgs", as in MLPClassifier.
    if estimator.solver not in ("sgd", "adam", "auto"):
        raise AttributeError(f"partial_fit is only available for stochastic optimizers. {estimator.solver} is not stochastic.")
    return True


class BaseQuadraticNetwork(BaseQuadraticEstimator):
    """Shared constructor, training and prediction of the quadratic networks.

    Not for direct use; see :class:`~skquad.QNNClassifier`,
    :class:`~skquad.RPQNNClassifier`, :class:`~skquad.QNNRegressor` and
    :class:`~skquad.RPQNNRegressor` for the parameters.
    """

    # CSR/CSC input (the base's validation accepts it where this is set).
    _accept_sparse = True
    _array_api_support = True
    _computes_on_tensors = ("fit", "predict")

    # Dask collections: solver="lbfgs" fits data-parallel over the row blocks
    # (skquad/neural_network/_dask.py); the stochastic solvers stream through
    # dask-ml's Incremental and partial_fit.
    _fits_dask_collections = True

    # Subclasses: which layer class makes a layer quadratic.
    _quadratic_kind = None

    _parameter_constraints = {
        "hidden_layer_sizes": ["array-like", Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "quadratic_layers": [StrOptions({"all", "output"}), "array-like"],
        "solver": [StrOptions({"sgd", "adam", "lbfgs", "auto"})],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "batch_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "learning_rate": [StrOptions({"constant", "invscaling", "adaptive"})],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "power_t": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
        "tol": [Interval(Real, 0, None, closed="left")],
        "verbose": ["verbose"],
        "warm_start": ["boolean"],
        "momentum": [Interval(Real, 0, 1, closed="both")],
        "nesterovs_momentum": ["boolean"],
        "early_stopping": ["boolean", StrOptions({"auto"})],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "beta_1": [Interval(Real, 0, 1, closed="left")],
        "beta_2": [Interval(Real, 0, 1, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        # np.inf: never stop on the loss (or validation score), as in MLPClassifier.
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left"), Options(Real, {np.inf})],
        "max_fun": [Interval(Integral, 1, None, closed="left")],
        "relinear": ["boolean"],
        "quadratic_learning_rate_scale": [Interval(Real, 0, None, closed="left")],
        "quadratic_l1": [Interval(Real, 0, None, closed="left")],
        "quadratic_l2": [Interval(Real, 0, None, closed="left")],
        "weight_transfer": ["boolean"],
        "backward": [StrOptions({"fused", "cached", "autograd"})],
        "device": [str, torch.device],
        "dtype": [StrOptions({"float32", "float64"}), None],
        "n_threads": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],

        "clip_inputs": ["boolean"],
    }

    def __init__(
        self,
        hidden_layer_sizes=(100,),
        activation="relu",
        *,
        quadratic_layers="output",
        solver="adam",
        alpha="auto",
        batch_size="auto",
        learning_rate="constant",
        learning_rate_init=1e-3,
        power_t=0.5,
        max_iter=200,
        shuffle=True,
        random_state=None,
        tol=1e-4,
        verbose=False,
        warm_start=False,
        momentum=0.9,
        nesterovs_momentum=True,
        early_stopping=EARLY_STOPPING,
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
        clip_inputs=True,
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
        self.clip_inputs = clip_inputs

    # ------------------------------------------------------------ architecture
    def _architecture(self, n_features=None):
        """``(hidden sizes, one quadratic flag per layer)``, checked before any data is looked at; with
        ``n_features``, also refuses a network whose training would not fit in memory."""
        sizes = self.hidden_layer_sizes
        sizes = [sizes] if isinstance(sizes, Integral) else list(sizes)
        if not all(isinstance(s, Integral) and not isinstance(s, bool) and s >= 1 for s in sizes):
            raise ValueError(f"hidden_layer_sizes must contain positive integers, got {self.hidden_layer_sizes!r}.")
        sizes = [int(s) for s in sizes]
        n_layers = len(sizes) + 1
        if isinstance(self.quadratic_layers, str):
            flags = [True] * n_layers if self.quadratic_layers == "all" else [False] * (n_layers - 1) + [True]
        else:
            flags = list(self.quadratic_layers)
            if len(flags) != n_layers or not all(isinstance(f, (bool, np.bool_)) for f in flags):
                raise ValueError(
                    f"quadratic_layers must be 'all', 'output' or one bool per layer "
                    f"({n_layers} layers: len(hidden_layer_sizes) + 1 for the output), "
                    f"got {self.quadratic_layers!r}."
                )
            flags = [bool(f) for f in flags]
        return sizes, flags

    def _quadratic_options(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _layer_backward(self):
        return "autograd" if self.backward == "autograd" else "cached"

    def _n_parameters(self, sizes, flags):
        options = self._quadratic_options()
        return count_parameters(
            sizes, flags, self._quadratic_kind,
            quadratic_storage=options.get("quadratic_storage", "full"), power_term=options.get("power_term", False),
        )

    def _check_memory(self, policy, sizes, flags, batch_size):
        """Refuse, naming the parameters, a network whose training cannot fit in memory."""
        n_parameters = self._n_parameters(sizes, flags)
        itemsize = torch.finfo(policy.dtype).bits // 8
        # The fused backward of a full quadratic layer keeps two (batch, n_out * n_in) products.
        workspace = sum(
            2 * batch_size * n_out * n_in
            for n_in, n_out, quadratic in zip(sizes[:-1], sizes[1:], flags)
            if quadratic and self._quadratic_kind == "QuadraticLayer"
        )
        needed = n_parameters * (8 + _TRAINING_COPIES * itemsize) + workspace * itemsize
        policy.require_memory(
            needed, "hidden_layer_sizes", self.hidden_layer_sizes,
            f"training {type(self).__name__}(quadratic_layers={self.quadratic_layers!r}) on "
            f"{sizes[0]} features ({n_parameters:.3g} parameters)",
            advice="use smaller hidden_layer_sizes, fewer quadratic layers (quadratic_layers), "
            + ("or RPQNNClassifier (2 n_in parameters per neuron)." if self._quadratic_kind == "QuadraticLayer" else "or fewer features."),
        )

    # ------------------------------------------------------------ task hooks
    # (see the module docstring; the task bases define them)
    _float_targets = False

    def _output_kind(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _out_activation_name(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _validation_score(self, scores, y, sample_weight):  # pragma: no cover - abstract
        raise NotImplementedError

    def _callback_targets(self, y):
        return y

    # ------------------------------------------------------------ training
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
            ParameterGroup(weights, name="weights", l2=self._l2_alpha()),
            ParameterGroup(biases, name="biases"),
            ParameterGroup(
                quadratic_weights, name="quadratic_weights", learning_rate_scale=scale,
                l2=self._l2_alpha() + self.quadratic_l2, l1=self.quadratic_l1,
            ),
            ParameterGroup(quadratic_biases, name="quadratic_biases", learning_rate_scale=scale),
        ]

    def _l2_alpha(self):
        """The weights' l2 penalty of this fit: ``alpha``, or what "auto" chose (``alpha_``)."""
        return self.alpha_ if isinstance(self.alpha, str) else self.alpha

    def _training_config(self, n_threads="auto", early_stopping=False):
        """The training engine's settings; ``early_stopping``: what :func:`fit_early_stopping`
        decided for this fit."""
        return TrainingConfig(
            solver=getattr(self, "solver_", None) or fit_solver(self.solver, 0),
            learning_rate=self.learning_rate_init,
            learning_rate_schedule=self.learning_rate,
            power_t=self.power_t,
            batch_size=None if self.batch_size == "auto" else self.batch_size,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            early_stopping=early_stopping,
            # "auto" trains on every row where no split can be scored; True refuses such data
            validation_required=_explicit_early_stopping(self.early_stopping),
            validation_fraction=self.validation_fraction,
            clip_validation_inputs=bool(self.clip_inputs),
            shuffle=self.shuffle,
            momentum=self.momentum,
            nesterov=self.nesterovs_momentum,
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            max_fun=self.max_fun,
            verbose=bool(self.verbose),
            # the runtime policy's count (None: a GPU, leave torch alone)
            n_threads="auto" if n_threads is None else n_threads,
            # MLP's split: stratified for single-label classification only.
            stratify=not self._float_targets,
            # The engine's divergence warning gives these remedies, in this estimator's names.
            divergence_advice=self._divergence_advice(),
        )

    def _divergence_advice(self):
        last = "solver='adam'" if getattr(self, "solver_", self.solver) == "sgd" else "dtype='float64'"
        return (
            "standardized features (e.g. StandardScaler in a Pipeline), ReLinear's settings for the quadratic parts "
            f"(Fan et al.: relinear=True, a smaller quadratic_learning_rate_scale (now "
            f"{self.quadratic_learning_rate_scale:g}), quadratic_l2 or quadratic_l1), or {last}"
        )

    def _new_trainer(self, network, policy, config, groups=None, fused=None):
        """A Trainer of ``Sequential(SparseRowsInput, network)``: dense or sparse data alike,
        ``trainer.module[1]`` the network."""
        output_kind = self._output_kind()
        if fused is None:
            fused = self.backward == "fused"
        inputs = SparseRowsInput(densify=not isinstance(network[0], torch.nn.Linear))
        return Trainer(
            torch.nn.Sequential(inputs, network),
            per_sample_loss(output_kind),
            self._parameter_groups(network) if groups is None else groups,
            config,
            device=policy.device,
            dtype=policy.dtype,
            generator=policy.shuffle_generator,
            validation_score=self._validation_score,
            loss_and_gradient=(
                FusedNetwork(network, output_kind, inputs, matmul=cpu_matmul_library()) if fused else None
            ),
            target_dtype=policy.dtype if self._float_targets else torch.int64,
        )

    def _fitted_network_attributes(self, network):
        """What a copy of this estimator needs to predict with ``network``'s current weights."""
        return {
            "layers_": network_to_states(network),
            "hidden_activation_": self.activation,
            "out_activation_": self._out_activation_name(),
            "_prediction_modules": {},
        }

    @staticmethod
    def _run(trainer, X, y, sample_weight, max_iter=None):
        """One ``fit`` (``max_iter`` given) or ``partial_fit`` call, on dense or sparse X, or on Dask
        row blocks (``distributed = True``) that run the trainer's L-BFGS themselves."""
        if getattr(type(X), "distributed", False):
            return X.fit(trainer, max_iter)
        inputs = trainer.module[0]
        X_engine = inputs.use(X, trainer.dtype)
        try:
            if max_iter is None:
                return trainer.partial_fit(X_engine, y, sample_weight)
            return trainer.fit(X_engine, y, sample_weight, max_iter=max_iter)
        finally:
            # the trainer outlives the call: keep no reference to the data
            inputs.use(None)

    def _new_module(self, sizes, flags, generator, *, conventional=False):
        return new_network(
            sizes,
            [False] * len(flags) if conventional else flags,
            self.activation,
            quadratic_kind=self._quadratic_kind,
            quadratic_options={**self._quadratic_options(), "backward": self._layer_backward()},
            generator=generator,
            relinear=self.relinear,
        )

    def _transfer_conventional_weights(self, module, sizes, flags, data, policy, early_stopping):
        """Fan et al.'s weight transfer: train a conventional twin (``early_stopping`` as the
        fit's), copy it in."""
        conventional = self._new_module(sizes, flags, policy.init_generator, conventional=True)
        weights = [m.weight for m in conventional if isinstance(m, torch.nn.Linear)]
        config = self._training_config(policy.n_threads, early_stopping)
        config.warn_on_max_iter = False
        trainer = self._new_trainer(
            conventional, policy, config=config,
            groups=[ParameterGroup(weights, l2=self._l2_alpha())], fused=False,
        )
        self._run(trainer, *data, max_iter=self.max_iter)
        for target, source in zip(module, trainer.module[1]):
            if isinstance(target, torch.nn.Linear):
                target.load_state_dict(source.state_dict())
            elif isinstance(target, (QuadraticLayer, ReducedQuadraticLayer)):
                target.load_linear_from(source, reset_quadratic=True)
        return trainer.history.n_iter

    def _continue_from_fit(self, X, architecture):
        """Check that a warm start or later partial_fit matches the fitted network."""
        sizes, flags = architecture
        n_features = self.layers_[0]["options"]["in_features"]
        if X.shape[1] != n_features:
            raise ValueError(
                f"X has {X.shape[1]} features, but the network was fitted on {n_features}; "
                "warm_start=True and partial_fit continue the fitted network, so they need the "
                "same features. Set warm_start=False to start over."
            )
        n_scores = self.layers_[-1]["options"]["out_features"]
        if n_scores != self._n_scores:
            raise ValueError(
                f"warm_start=True continues the previous fit's {n_scores} output(s), but y has "
                f"{self._n_scores}. Set warm_start=False to start over."
            )
        fitted_sizes = [state["options"]["out_features"] for state in self.layers_[:-1]]
        fitted_flags = [state["kind"] != "Linear" for state in self.layers_]
        if fitted_sizes != sizes or fitted_flags != flags:
            raise ValueError(
                f"warm_start=True needs the same hidden_layer_sizes and quadratic_layers as the "
                f"previous fit (hidden sizes {fitted_sizes}, quadratic {fitted_flags}); got "
                f"{sizes} and {flags}. Set warm_start=False to start over."
            )

    def _start_fit(self, X, y, sample_weight):
        """``fit``'s shared part, once the task base has validated ``(X, y)``."""
        architecture = self._architecture()
        warm = self.warm_start and hasattr(self, "layers_")
        if not warm:
            for attribute in ("layers_", "loss_curve_", "validation_scores_", "best_loss_", "n_iter_", "t_"):
                self.__dict__.pop(attribute, None)
        for attribute in ("_trainer", "_trainer_structure", "_training_state"):
            self.__dict__.pop(attribute, None)
        return self._train(X, y, sample_weight, architecture, incremental=False)

    def _check_partial_fit_allowed(self):
        # MLPClassifier's rule and words: there is no validation split to hold out.
        if _explicit_early_stopping(self.early_stopping):
            raise ValueError("partial_fit does not support early_stopping=True")

    def _train(self, X, y, sample_weight, architecture, *, incremental):
        continuing = hasattr(self, "layers_") and (incremental or self.warm_start)
        # Dask row blocks (see _run): trained on this process's CPU, one
        # evaluation's batch is their largest block, the callbacks get the
        # user's collections.
        blocks = getattr(type(X), "distributed", False)
        sizes, flags = architecture
        sizes = [X.shape[1], *sizes, self._n_scores]
        self.solver_ = fit_solver(self.solver, X.shape[0], incremental=incremental, distributed=blocks,
                                  early_stopping=self.early_stopping)
        holds_out = fit_early_stopping(self.early_stopping, self.solver_, X.shape[0], incremental=incremental)
        batch = min(X.shape[0], 200 if self.batch_size == "auto" else self.batch_size)
        if self.solver_ == "lbfgs":
            batch = X.largest_block if blocks else X.shape[0]
        # dtype, device, threads, generators: decided once, here (skquad._foundation._runtime)
        policy = runtime_policy(
            X.dtype,
            dtype=self.dtype,
            fitted_dtype=self.layers_[0]["weight"].dtype if continuing else None,
            device="cpu" if blocks else self.device,
            n_threads=self.n_threads,
            # forward and backward of one step
            flops_per_step=6.0 * batch * self._n_parameters(sizes, flags),
            random_state=self.random_state,
        )
        trainer = getattr(self, "_trainer", None) if incremental else None
        if trainer is not None and (trainer.dtype != policy.dtype or trainer.device != policy.device
                                    or trainer.config.solver != self.solver_):
            trainer = None  # set_params(dtype=..., device=...) between calls, or partial_fit after L-BFGS
        # A loaded model's optimizer state (see __getstate__), used once by the trainer rebuilt below.
        saved_training_state = self.__dict__.pop("_training_state", None) if incremental else None
        if trainer is None:
            if continuing:
                self._continue_from_fit(X, architecture)
                module = network_from_states(self.layers_, self.activation, dtype=torch.float64)
            else:
                self._check_memory(policy, sizes, flags, batch)
                module = self._new_module(sizes, flags, policy.init_generator)
                if self.weight_transfer:
                    self.weight_transfer_n_iter_ = self._transfer_conventional_weights(
                        module, sizes, flags, (X, y, sample_weight), policy, holds_out
                    )
            trainer = self._new_trainer(module, policy, self._training_config(policy.n_threads, holds_out))
            # What the trainer's network computes, whatever set_params does later.
            self._trainer_structure = (self.activation, self._out_activation_name())
            if continuing:
                history = trainer.history
                history.loss_curve = list(self.loss_curve_)
                history.validation_scores = list(self.validation_scores_ or [])
                history.best_loss = np.inf if self.best_loss_ is None else self.best_loss_
                history.n_samples_seen = self.t_
                trainer.schedule.epoch_ends(self.t_)
                if trainer.accepts_training_state(saved_training_state):
                    trainer.restore_training_state(saved_training_state)
        # n_iter_ counts this call's epochs (iterations), as in MLPClassifier;
        # loss_curve_ and t_ keep accumulating over warm starts and partial_fit.
        n_iter_before = trainer.history.n_iter
        # predict's threads follow the fit's n_threads, not a later set_params;
        # set before training, so that callbacks can score the epochs' models.
        self._fitted_n_threads = self.n_threads
        # This call's epochs go to this call's scikit-learn callbacks (if any).
        with reporting_epochs(
            trainer, self, *(X.callback_data if blocks else (X, self._callback_targets(y), sample_weight)),
            fitted_attributes=lambda: {
                **self._fitted_network_attributes(trainer.module[1]),
                "device_": policy.device_name, "_fitted_n_threads": self._fitted_n_threads,
            },
        ):
            history = self._run(trainer, X, y, sample_weight, None if incremental else self.max_iter)
        self._trainer = trainer
        self.device_ = policy.device_name
        self._store_fitted_state(trainer, history, incremental, history.n_iter - n_iter_before)
        return self

    def _store_fitted_state(self, trainer, history, incremental, n_iter):
        # Predictions are made from these attributes only (never from the
        # constructor parameters, which set_params may change after fitting).
        self.layers_ = network_to_states(trainer.module[1])
        self.hidden_activation_, self.out_activation_ = self._trainer_structure
        # Built now, so that predict leaves __dict__ as it is.
        self._prediction_modules = {}
        self._prediction_module()
        self.loss_curve_ = list(history.loss_curve)
        # The training package's result carries MLPClassifier's loss_ as `loss`.
        loss = getattr(history, "loss", None)
        self.loss_ = float(loss if loss is not None else (history.loss_curve[-1] if history.loss_curve else np.nan))
        early = trainer.held_out and not incremental
        self.validation_scores_ = list(history.validation_scores) if early else None
        self.best_validation_score_ = history.best_validation_score if early else None
        # As in MLP: with early stopping the validation score takes the place of the best loss.
        self.best_loss_ = None if early else history.best_loss
        self.n_iter_ = n_iter
        self.t_ = history.n_samples_seen
        self.diverged_ = bool(history.diverged)
        self.n_layers_ = len(self.layers_) + 1
        self.n_outputs_ = self._n_scores

    # ------------------------------------------------------------ prediction
    def _prediction_module(self, dtype=None):
        """The fitted network rebuilt from ``layers_`` (cached, never pickled) in the training dtype on
        the fitted device (else the CPU); ``dtype=torch.float64``: the twin for float32 overflows."""
        cache = self.__dict__.setdefault("_prediction_modules", {})
        key = "fitted" if dtype is None else dtype
        if key not in cache:
            device = torch.device("cpu")
            if dtype is None:
                dtype = resolve_dtype(self.layers_[0]["weight"].dtype)
                device = prediction_device(self.device_)
            cache[key] = network_from_states(self.layers_, self.hidden_activation_, device=device, dtype=dtype)
        return cache[key]

    def _raw_scores(self, X):
        module = self._prediction_module()
        parameter = next(module.parameters())
        n_parameters = sum(p.numel() for p in module.parameters())
        # a forward pass only: 2 flops per parameter and row
        threads = thread_count(
            self._fitted_n_threads, parameter.device, 2.0 * min(X.shape[0], _PREDICT_CHUNK) * n_parameters
        )
        if sparse.issparse(X):
            X = X.tocsr()
        # a tensor X (array API input) keeps its scores on its device
        xp, tensor, chunks = namespace_of(X), is_tensor(X), []
        with torch.inference_mode(), limit_threads(threads):
            for start in range(0, X.shape[0], _PREDICT_CHUNK):
                rows = X[start : start + _PREDICT_CHUNK]
                scores = module(self._as_batch(rows, parameter)).double()
                if parameter.dtype != torch.float64 and not bool(torch.isfinite(scores).all()):
                    # float32 overflowed (deep quadratic networks grow fast with
                    # the input): redo these rows in float64 on the CPU.
                    float64 = self._prediction_module(torch.float64)
                    scores = float64(self._as_batch(rows, next(float64.parameters()))).to(scores.device)
                chunks.append(scores if tensor else scores.cpu().numpy())
        if not chunks:
            return xp.zeros((0, self._n_scores), dtype=xp.float64, device=getattr(X, "device", None))
        scores = xp.concat(chunks)
        # MLPClassifier's dtype: result_type(X, weights), float32 for a float32
        # network on float32 input, unless the float64 fallback above was needed.
        if np.result_type(numpy_dtype(X.dtype), self.layers_[0]["weight"].dtype) == np.float32 and bool(
            xp.all(xp.abs(scores) <= np.finfo(np.float32).max)
        ):
            scores = xp.astype(scores, xp.float32)
        return scores

    def _as_batch(self, rows, parameter):
        """Rows of X as a tensor like ``parameter``; sparse rows as the first layer takes them
        (``first_layer_batch``)."""
        options = {"device": parameter.device, "dtype": parameter.dtype}
        if sparse.issparse(rows):
            return first_layer_batch(rows, dense_layer=self.layers_[0]["kind"] != "Linear", **options)
        if is_tensor(rows):
            return rows.to(**options).contiguous()
        return as_tensor(np.ascontiguousarray(rows), **options)

    @property
    @reads_fitted_state
    def coefs_(self):
        """Linear weights per layer, ``(n_in, n_out)`` as in MLPClassifier."""
        check_is_fitted(self, "layers_")
        return [state["weight"].T.copy() for state in self.layers_]

    @property
    @reads_fitted_state
    def intercepts_(self):
        """Biases of the linear part per layer, as in MLPClassifier."""
        check_is_fitted(self, "layers_")
        return [state["bias"].copy() for state in self.layers_]

    def __getstate__(self):
        # A copy: object.__getstate__ returns the live __dict__, and saving a
        # checkpoint must not drop the optimizer state of the running model.
        state = dict(super().__getstate__())
        # Only numpy weights travel: torch objects may live on a GPU. The
        # optimizer state travels as numpy too (as MLPClassifier pickles its
        # _optimizer), so that partial_fit after loading continues exactly as
        # the live model would; a trainer built from layers_ takes it back.
        trainer = state.pop("_trainer", None)
        training_state = trainer.training_state() if trainer is not None else None
        if training_state is not None:
            state["_training_state"] = training_state
        for key in ("_trainer_structure", "_prediction_modules"):
            state.pop(key, None)
        return state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.device != "cpu" and torch.cuda.is_available()
        return tags
