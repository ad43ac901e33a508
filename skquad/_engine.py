"""The one training loop for every torch-trained skquad model.

The estimators (:class:`~skquad.QNNClassifier`, :class:`~skquad.RPQNNClassifier`,
the SDP path's back-propagation baseline) describe *what* to train; this module
does the training: batches drawn with a local generator, the optimizer,
penalties, stopping rules, the divergence guard, progress lines, device and
thread handling.

API
---
``ParameterGroup(parameters, name="parameters", learning_rate_scale=1.0, l1=0.0, l2=0.0)``
    A set of parameters sharing optimizer settings. ReLinear puts the quadratic
    parameters of a network in their own group with a smaller
    ``learning_rate_scale`` (ReLinear-sg) or a larger ``l1``/``l2`` (ReLinear-sw).

``TrainingConfig(...)``
    The optimizer and stopping hyper-parameters, named like
    :class:`~sklearn.neural_network.MLPClassifier`'s: ``solver`` ("sgd", "adam",
    "lbfgs"), ``learning_rate``, ``batch_size``, ``tol``, ``n_iter_no_change``,
    ``early_stopping``, ``validation_fraction``, ``shuffle``, ``momentum``,
    ``nesterov``, ``beta_1``, ``beta_2``, ``epsilon``, ``max_fun``, ``verbose``,
    ``n_threads``, ``stratify``.

``Trainer(module, loss_function, parameter_groups=None, config=None, *, device, dtype,
generator, validation_score=None, loss_and_gradient=None)``
    ``module(X_batch) -> outputs`` is any :class:`torch.nn.Module`;
    ``loss_function(outputs, y_batch) -> per-sample losses`` (shape ``(n,)``,
    no reduction). Every trainable parameter of the module takes part; the ones
    not named in ``parameter_groups`` form a default group. Parameters with
    ``requires_grad=False`` (e.g. a fixed second layer) are left alone.
    A non-finite model output counts as divergence even where the loss
    stays finite.

    * ``trainer.fit(X, y, sample_weight=None, max_iter=200)`` trains until a
      stopping rule fires or ``max_iter`` epochs (L-BFGS: iterations) have run,
      and returns a :class:`TrainingResult`.
    * ``trainer.partial_fit(X, y, sample_weight=None)`` runs exactly one epoch,
      keeping the optimizer state between calls (no stopping rules).
    * ``trainer.loss_curve``, ``validation_scores``, ``best_loss``,
      ``best_validation_score``, ``n_iter``, ``n_steps`` accumulate over calls.

The objective of one batch is, as in scikit-learn's MLP::

    sum_i w_i loss_i / sum_i w_i  +  (0.5 * l2 * ||theta||^2 + l1 * ||theta||_1) / sum_i w_i

with the penalties taken per parameter group. Dividing the penalty by the
batch's total sample weight makes ``sample_weight=k`` equivalent to repeating a
sample ``k`` times when batches cover the whole data set.

Fast path
---------
All trainable parameters are views into one flat buffer, and their ``.grad``
views into one flat gradient buffer, so each optimizer step is a handful of
fused tensor operations whatever the number of layers, and nothing is allocated
per step. A model that knows its own backward pass (the papers' Algorithms 1
and 2 written out) can skip autograd entirely by passing
``loss_and_gradient(X_batch, y_batch, w_batch) -> loss``: it must return the
0-d tensor ``sum_i w_batch_i * loss_i`` (``w_batch`` is already normalised to
sum to one) and write the gradient of that loss into the parameters' ``.grad``
tensors (zeroed by the engine before each call; writing with ``out=`` is fine).
It is only called for training steps; ``module`` still serves validation.
The returned loss must be NaN or infinite when any model output is (the
divergence guard relies on it).

Divergence
----------
When an epoch's loss or the parameters stop being finite, training stops, the
best parameters seen so far (the initial ones if no epoch finished cleanly) are
put back, ``TrainingResult.diverged`` is set and a
:class:`~sklearn.exceptions.ConvergenceWarning` says what to try. The module
therefore never holds NaN weights after training.
"""

import math
import time
import warnings
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.optimize import minimize
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

__all__ = [
    "ParameterGroup",
    "TrainingConfig",
    "TrainingResult",
    "Trainer",
    "thread_limit",
    "choose_thread_count",
    "flush_denormals",
]

SOLVERS = ("sgd", "adam", "lbfgs")


@dataclass
class ParameterGroup:
    """Parameters that share a learning-rate scale and penalties.

    Parameters
    ----------
    parameters : iterable of torch.nn.Parameter
    name : str, default="parameters"
        Used in error messages.
    learning_rate_scale : float, default=1.0
        Multiplies the configured learning rate for this group (sgd and adam;
        L-BFGS has no learning rate and ignores it).
    l1, l2 : float, default=0.0
        Penalty coefficients (see the module docstring for the scaling).
    """

    parameters: list
    name: str = "parameters"
    learning_rate_scale: float = 1.0
    l1: float = 0.0
    l2: float = 0.0

    def __post_init__(self):
        self.parameters = list(self.parameters)
        for attribute in ("learning_rate_scale", "l1", "l2"):
            value = getattr(self, attribute)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(
                    f"Parameter group {self.name!r}: {attribute} must be a finite "
                    f"non-negative number, got {value!r}."
                )


@dataclass
class TrainingConfig:
    """Optimizer and stopping settings (names follow MLPClassifier).

    ``batch_size=None`` means ``min(200, n_samples)`` (MLPClassifier's "auto").
    ``n_threads="auto"`` chooses a CPU thread count from the work per step
    (:func:`choose_thread_count`); an int fixes it. The previous torch thread
    count is restored after training. ``stratify`` makes the early-stopping
    validation split stratified on ``y`` (classification).
    ``warn_on_max_iter`` emits MLPClassifier's ConvergenceWarning when
    ``max_iter`` epochs run out before the stopping rule fires.
    """

    solver: str = "adam"
    learning_rate: float = 1e-3
    # MLPClassifier's `learning_rate` schedule and `power_t` (sgd only); the
    # schedules themselves are implemented by the training package.
    learning_rate_schedule: str = "constant"
    power_t: float = 0.5
    batch_size: int | None = None
    tol: float = 1e-4
    n_iter_no_change: int = 10
    early_stopping: bool = False
    validation_fraction: float = 0.1
    shuffle: bool = True
    momentum: float = 0.9
    nesterov: bool = True
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-8
    max_fun: int = 15000
    verbose: bool = False
    n_threads: int | str = "auto"
    stratify: bool = True
    warn_on_max_iter: bool = True
    # Estimator-specific remedies appended to the divergence warning, naming
    # the estimator's own parameters (e.g. the ReLinear settings).
    divergence_advice: str = ""

    def __post_init__(self):
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}.")


@dataclass
class TrainingResult:
    """What one ``fit``/``partial_fit`` call of a :class:`Trainer` produced.

    The lists and counters cover every call of the trainer so far.
    """

    loss_curve: list = field(default_factory=list)
    validation_scores: list = field(default_factory=list)
    best_loss: float = math.inf
    best_validation_score: float | None = None
    n_iter: int = 0
    n_steps: int = 0
    converged: bool = False
    diverged: bool = False


def choose_thread_count(flops_per_step, available=None):
    """CPU threads worth using for a step of ``flops_per_step`` flops.

    A training step is a chain of small operations, each of which pays torch's
    thread hand-off; below a few hundred million flops per step that costs more
    than it saves. Measured on this project's 2-core machine: a 64-30-10 MLP
    step (batch 200) runs about twice as fast on one thread as on two, and
    when other processes keep the cores busy a deep quadratic network's step
    (4 x 16 quadratic neurons on 57 features, 25 MFLOP) took ~300 ms on two
    threads against a few ms on one. So steps under 2e8 flops use one thread;
    larger ones (wide quadratic layers) use what torch has.
    """
    available = torch.get_num_threads() if available is None else available
    if flops_per_step < 2e8:
        return 1
    return max(1, available)


@contextmanager
def thread_limit(n_threads):
    """Set ``torch.set_num_threads(n_threads)`` for a block, then restore it."""
    previous = torch.get_num_threads()
    if n_threads is None or n_threads == previous:
        yield
        return
    torch.set_num_threads(int(n_threads))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _denormals_are_flushed():
    # torch has no getter: with flush-to-zero on, a subnormal input reads as 0.
    return bool((torch.tensor([1e-40], dtype=torch.float32) * 1.0)[0] == 0)


@contextmanager
def flush_denormals():
    """Treat subnormal floats as zero on the CPU for a block, then restore.

    ReLinear starts the quadratic parameters at zero and may let them learn
    with a tiny rate; products of such values with deep-network gradients fall
    into the subnormal range, where CPU arithmetic runs up to 100 times slower
    (measured here: a 200x16x256 float32 product takes 7.7 ms on subnormal
    input against 0.08 ms on normal input). Flushing them changes results by
    less than 1e-38.
    """
    if _denormals_are_flushed() or not torch.set_flush_denormal(True):
        yield
        return
    try:
        yield
    finally:
        torch.set_flush_denormal(False)


def _divergence_advice(solver, learning_rate, extra=""):
    # An estimator's own advice (naming its parameters) replaces the generic
    # remedies rather than repeating them under other names.
    head = (
        "Training diverged: the loss or the parameters became NaN or infinite. "
        "The best parameters seen before that were restored. "
    )
    if extra:
        return head + f"Try {extra}."
    return head + (
        f"Try a smaller learning rate (now {learning_rate:g}), standardized features "
        "(e.g. StandardScaler in a Pipeline), "
        + ("or solver='adam'." if solver == "sgd" else "or float64 (dtype='float64').")
    )


class Trainer:
    """Train a torch module with skquad's shared loop (see the module docstring).

    Parameters
    ----------
    module : torch.nn.Module
        Moved to ``device`` and ``dtype``; its trainable parameters are re-seated
        as views of one flat buffer (their values are kept).
    loss_function : callable
        ``loss_function(outputs, y) -> (n,) tensor`` of per-sample losses.
    parameter_groups : list of ParameterGroup, default=None
    config : TrainingConfig, default=None
    device : str or torch.device, default="cpu"
    dtype : torch.dtype, default=torch.float32
    generator : torch.Generator, default=None
        CPU generator for shuffling and the validation split.
    validation_score : callable, default=None
        ``validation_score(outputs, y, sample_weight) -> float``, higher is
        better (e.g. weighted accuracy). Default: minus the weighted mean loss.
    loss_and_gradient : callable, default=None
        Optional explicit forward and backward (see "Fast path").
    target_dtype : torch.dtype, default=torch.int64
        dtype of ``y`` on the device (int64 class indices, or float targets).
    """

    def __init__(
        self,
        module,
        loss_function,
        parameter_groups=None,
        config=None,
        *,
        device="cpu",
        dtype=torch.float32,
        generator=None,
        validation_score=None,
        loss_and_gradient=None,
        target_dtype=torch.int64,
    ):
        self.config = TrainingConfig() if config is None else config
        self.device = torch.device(device)
        self.dtype = dtype
        self.target_dtype = target_dtype
        self.generator = generator if generator is not None else torch.Generator()
        self.module = module.to(device=self.device, dtype=dtype)
        self.loss_function = loss_function
        self.validation_score = validation_score
        self.loss_and_gradient = loss_and_gradient
        self._build_flat_buffers(parameter_groups or [])
        self.history = TrainingResult()
        self._optimizer_state = None
        self._no_improvement_count = 0
        self._best_flat = self.flat_parameters.detach().clone()

    # ------------------------------------------------------------ parameters
    def _build_flat_buffers(self, parameter_groups):
        trainable = [p for p in self.module.parameters() if p.requires_grad]
        seen = {}
        groups = []
        for group in parameter_groups:
            members = []
            for parameter in group.parameters:
                if not parameter.requires_grad:
                    continue
                if id(parameter) in seen:
                    raise ValueError(
                        f"A parameter appears in both groups {seen[id(parameter)]!r} "
                        f"and {group.name!r}."
                    )
                seen[id(parameter)] = group.name
                members.append(parameter)
            groups.append((group, members))
        missing = [p for p in trainable if id(p) not in seen]
        unknown = set(seen) - {id(p) for p in trainable}
        if unknown:
            raise ValueError(
                "parameter_groups name parameters that are not trainable parameters "
                "of the module (move the module to its device and dtype first)."
            )
        if missing:
            groups.append((ParameterGroup([], name="other"), missing))
        if not any(members for _, members in groups):
            raise ValueError("The module has no trainable parameters.")

        total = sum(p.numel() for _, members in groups for p in members)
        options = dict(device=self.device, dtype=self.dtype)
        self.flat_parameters = torch.empty(total, **options)
        self.flat_gradient = torch.zeros(total, **options)
        scales, l1s, l2s, sizes = [], [], [], []
        offset = 0
        self.parameter_slices = {}
        for group, members in groups:
            start = offset
            for parameter in members:
                size = parameter.numel()
                view = self.flat_parameters[offset : offset + size].view_as(parameter)
                view.copy_(parameter.detach())
                parameter.data = view
                parameter.grad = self.flat_gradient[offset : offset + size].view_as(parameter)
                offset += size
            self.parameter_slices[group.name] = slice(start, offset)
            scales.append(group.learning_rate_scale)
            l1s.append(group.l1)
            l2s.append(group.l2)
            sizes.append(offset - start)
        self.n_parameters = total
        # A per-element vector only where the groups really differ: a scalar
        # keeps the common case to the cheapest tensor operations.
        self._learning_rate_scale = self._per_element(scales, sizes)
        self._l1 = self._per_element(l1s, sizes)
        self._l2 = self._per_element(l2s, sizes)

    def _per_element(self, values, sizes):
        if all(v == values[0] for v in values):
            return float(values[0])
        return torch.cat(
            [torch.full((n,), float(v), device=self.device, dtype=self.dtype) for v, n in zip(values, sizes)]
        )

    def _has_penalty(self):
        return not (isinstance(self._l1, float) and self._l1 == 0.0) or not (
            isinstance(self._l2, float) and self._l2 == 0.0
        )

    def _penalty_value(self):
        theta = self.flat_parameters
        value = 0.0
        if not (isinstance(self._l2, float) and self._l2 == 0.0):
            value += float((0.5 * self._l2 * theta * theta).sum())
        if not (isinstance(self._l1, float) and self._l1 == 0.0):
            value += float((self._l1 * theta.abs()).sum())
        return value

    def _add_penalty_gradient(self, inverse_weight_sum):
        theta, gradient = self.flat_parameters, self.flat_gradient
        if isinstance(self._l2, float):
            if self._l2 != 0.0:
                gradient.add_(theta, alpha=self._l2 * inverse_weight_sum)
        else:
            gradient.addcmul_(theta, self._l2, value=inverse_weight_sum)
        if isinstance(self._l1, float):
            if self._l1 != 0.0:
                gradient.add_(torch.sign(theta), alpha=self._l1 * inverse_weight_sum)
        else:
            gradient.addcmul_(torch.sign(theta), self._l1, value=inverse_weight_sum)

    # ------------------------------------------------------------------ data
    def _to_device(self, X, y, sample_weight):
        # np.require copies read-only input (e.g. a memmap): torch cannot wrap it.
        X = torch.as_tensor(np.require(X, requirements=["C", "W"])).to(device=self.device, dtype=self.dtype)
        y = torch.as_tensor(np.require(y, requirements=["C", "W"])).to(
            device=self.device, dtype=self.target_dtype
        )
        return X, y, np.asarray(sample_weight, dtype=np.float64)

    def _split_validation(self, X, y, sample_weight):
        config = self.config
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=self.generator))
        stratify = y if config.stratify else None
        indices = np.arange(len(y))
        try:
            train_index, validation_index = train_test_split(
                indices, test_size=config.validation_fraction, random_state=seed, stratify=stratify
            )
        except ValueError as exc:
            raise ValueError(
                "early_stopping could not set aside a stratified validation set of "
                f"validation_fraction={config.validation_fraction} of {len(y)} samples "
                f"({exc}). Use more data, a larger validation_fraction, or "
                "early_stopping=False."
            ) from exc
        return (
            (X[train_index], y[train_index], sample_weight[train_index]),
            (X[validation_index], y[validation_index], sample_weight[validation_index]),
        )

    def _batch_size(self, n_samples):
        if self.config.batch_size is None:
            return min(200, n_samples)
        return max(1, min(int(self.config.batch_size), n_samples))

    # ------------------------------------------------------------- optimizers
    def _init_optimizer_state(self):
        zeros = lambda: torch.zeros_like(self.flat_parameters)  # noqa: E731
        if self.config.solver == "sgd":
            self._optimizer_state = {"velocity": zeros()}
        elif self.config.solver == "adam":
            self._optimizer_state = {"m": zeros(), "v": zeros(), "denominator": zeros(), "t": 0}
        else:
            self._optimizer_state = {}

    def _optimizer_step(self):
        """One update of the flat buffer; MLPClassifier's SGD and Adam rules."""
        config, state = self.config, self._optimizer_state
        theta, gradient = self.flat_parameters, self.flat_gradient
        learning_rate = self._learning_rates(config.learning_rate)  # float or vector
        vector_rate = not isinstance(learning_rate, float)
        if config.solver == "sgd":
            velocity = state["velocity"]
            velocity.mul_(config.momentum)
            if vector_rate:
                velocity.addcmul_(gradient, learning_rate, value=-1.0)
            else:
                velocity.add_(gradient, alpha=-learning_rate)
            if config.nesterov:
                theta.add_(velocity, alpha=config.momentum)
                if vector_rate:
                    theta.addcmul_(gradient, learning_rate, value=-1.0)
                else:
                    theta.add_(gradient, alpha=-learning_rate)
            else:
                theta.add_(velocity)
        else:
            state["t"] += 1
            t = state["t"]
            m, v, denominator = state["m"], state["v"], state["denominator"]
            m.mul_(config.beta_1).add_(gradient, alpha=1.0 - config.beta_1)
            v.mul_(config.beta_2).addcmul_(gradient, gradient, value=1.0 - config.beta_2)
            correction = math.sqrt(1.0 - config.beta_2**t) / (1.0 - config.beta_1**t)
            torch.sqrt(v, out=denominator).add_(config.epsilon)
            if vector_rate:
                denominator.div_(learning_rate)
                theta.addcdiv_(m, denominator, value=-correction)
            else:
                theta.addcdiv_(m, denominator, value=-learning_rate * correction)

    def _learning_rates(self, base):
        """``base * learning_rate_scale``: a float, or a vector built once."""
        if isinstance(self._learning_rate_scale, float):
            return base * self._learning_rate_scale
        cached = getattr(self, "_learning_rate_cache", None)
        if cached is None or cached[0] != base:
            cached = (base, base * self._learning_rate_scale)
            self._learning_rate_cache = cached
        return cached[1]

    # --------------------------------------------------------------- gradient
    def _loss_and_gradient(self, X, y, weights):
        """Weighted data loss of a batch (0-d tensor), gradient in flat_gradient."""
        self.flat_gradient.zero_()
        if self.loss_and_gradient is not None:
            if torch.is_grad_enabled():
                with torch.no_grad():
                    return self.loss_and_gradient(X, y, weights)
            return self.loss_and_gradient(X, y, weights)
        outputs = self.module(X)
        loss = torch.dot(self.loss_function(outputs, y).reshape(-1), weights)
        loss.backward()
        # An overflowed output (e.g. -inf for a wrong class) can leave the loss
        # finite; 0 * sum(outputs) turns any non-finite output into a NaN loss,
        # which the divergence guard sees.
        return loss.detach() + outputs.detach().sum() * 0.0

    # ------------------------------------------------------------------ epochs
    def _run_epoch(self, X, y, sample_weight):
        """One pass over the data; returns the epoch's mean objective."""
        n_samples = X.shape[0]
        batch_size = self._batch_size(n_samples)
        if self.config.shuffle:
            order = torch.randperm(n_samples, generator=self.generator)
            order_numpy = order.numpy()
            X_epoch = X.index_select(0, order.to(self.device))
            y_epoch = y.index_select(0, order.to(self.device))
            w_epoch = sample_weight[order_numpy]
        else:
            X_epoch, y_epoch, w_epoch = X, y, sample_weight
        starts = np.arange(0, n_samples, batch_size)
        batch_sums = np.add.reduceat(w_epoch, starts)
        lengths = np.diff(np.append(starts, n_samples))
        safe_sums = np.where(batch_sums > 0, batch_sums, 1.0)
        normalised = torch.as_tensor(w_epoch / np.repeat(safe_sums, lengths)).to(
            device=self.device, dtype=self.dtype
        )
        penalty = self._has_penalty()
        batch_losses, used_sums = [], []
        # The explicit path needs no autograd at all: one no_grad for the epoch.
        explicit = torch.no_grad() if self.loss_and_gradient is not None else nullcontext()
        with explicit:
            for start, length, weight_sum in zip(starts, lengths, batch_sums):
                if weight_sum <= 0:
                    continue  # nothing to learn from a batch of zero-weight samples
                stop = start + length
                loss = self._loss_and_gradient(
                    X_epoch[start:stop], y_epoch[start:stop], normalised[start:stop]
                )
                if penalty:
                    self._add_penalty_gradient(1.0 / weight_sum)
                self._optimizer_step()
                self.history.n_steps += 1
                batch_losses.append(loss)
                used_sums.append(weight_sum)
        total_weight = batch_sums.sum()
        # One device-to-host transfer per epoch, not one per step.
        if not batch_losses:
            return 0.0  # every sample weight was zero: nothing was learned
        losses = torch.stack(batch_losses).double().cpu().numpy()
        value = float(np.dot(losses, used_sums)) / total_weight
        if penalty:
            value += self._penalty_value() * np.count_nonzero(batch_sums > 0) / total_weight
        return value

    def _score_validation(self, X, y, sample_weight):
        with torch.inference_mode():
            outputs = self.module(X)
            if self.validation_score is not None:
                return float(self.validation_score(outputs, y, sample_weight))
            losses = self.loss_function(outputs, y).reshape(-1).double().cpu().numpy()
            return -float(np.average(losses, weights=sample_weight))

    def _parameters_finite(self):
        return bool(torch.isfinite(self.flat_parameters).all())

    def _full_loss(self, X, y, sample_weight, chunk=4096):
        """Weighted mean loss over the data; inf if any output is not finite."""
        total = 0.0
        with torch.inference_mode():
            for start in range(0, X.shape[0], chunk):
                outputs = self.module(X[start : start + chunk])
                if not bool(torch.isfinite(outputs).all()):
                    return math.inf
                losses = self.loss_function(outputs, y[start : start + chunk]).reshape(-1)
                total += float(np.dot(losses.double().cpu().numpy(), sample_weight[start : start + chunk]))
        value = total / sample_weight.sum()
        return value if math.isfinite(value) else math.inf

    def _recover_from_divergence(self, X, y, sample_weight):
        """Put back the better of the best epoch's parameters and the start.

        An epoch can end with a finite but enormous loss just before the
        overflow, so the "best" snapshot alone may be a blown-up network: both
        candidates are scored on the training data, and the one with the lower
        finite loss (and finite outputs) wins.
        """
        best_value, chosen = math.inf, self._start_flat
        for candidate in (self._best_flat, self._start_flat):
            self.flat_parameters.copy_(candidate)
            value = self._full_loss(X, y, sample_weight)
            if value < best_value:
                best_value, chosen = value, candidate
        self.flat_parameters.copy_(chosen)
        self.history.best_loss = min(self.history.best_loss, best_value)
        self._warn_divergence()

    def _restore_best(self):
        self.flat_parameters.copy_(self._best_flat)

    def _remember_best(self):
        self._best_flat.copy_(self.flat_parameters)

    def _warn_divergence(self):
        self.history.diverged = True
        warnings.warn(
            _divergence_advice(
                self.config.solver,
                self.config.learning_rate,
                self.config.divergence_advice,
            ),
            ConvergenceWarning,
            stacklevel=4,
        )

    def _thread_count(self, n_samples):
        if self.config.n_threads != "auto":
            return int(self.config.n_threads)
        if self.device.type != "cpu":
            return None
        batch = self._batch_size(n_samples) if self.config.solver != "lbfgs" else n_samples
        return choose_thread_count(6.0 * batch * self.n_parameters)

    # ---------------------------------------------------------------- public
    def partial_fit(self, X, y, sample_weight=None):
        """One epoch over ``(X, y)``; optimizer state is kept between calls."""
        if self.config.solver == "lbfgs":
            raise ValueError(
                "partial_fit needs a stochastic solver ('sgd' or 'adam'); L-BFGS "
                "works on the whole data set at once."
            )
        sample_weight = np.ones(len(y)) if sample_weight is None else sample_weight
        X, y, sample_weight = self._to_device(X, y, sample_weight)
        if self._optimizer_state is None:
            self._init_optimizer_state()
        self.history.diverged = False
        with thread_limit(self._thread_count(X.shape[0])), flush_denormals():
            started = time.perf_counter()
            self._start_flat = self.flat_parameters.clone()
            loss = self._run_epoch(X, y, sample_weight)
            if not (math.isfinite(loss) and self._parameters_finite()):
                self._recover_from_divergence(X, y, sample_weight)
                return self.history
            self._end_epoch(loss, None, started)
        return self.history

    def fit(self, X, y, sample_weight=None, max_iter=200):
        """Train until the stopping rule fires or ``max_iter`` epochs have run."""
        sample_weight = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
        self.history.converged = False
        self.history.diverged = False
        if self.config.solver == "lbfgs":
            with thread_limit(self._thread_count(len(y))), flush_denormals():
                return self._fit_lbfgs(X, y, sample_weight, max_iter)
        validation = None
        if self.config.early_stopping:
            (X, y, sample_weight), validation = self._split_validation(
                np.asarray(X), np.asarray(y), sample_weight
            )
            validation = self._to_device(*validation)
        X, y, sample_weight = self._to_device(X, y, sample_weight)
        self._init_optimizer_state()
        self._no_improvement_count = 0
        self._remember_best()
        self._start_flat = self.flat_parameters.clone()
        if self.config.early_stopping:
            self.history.best_validation_score = -math.inf
        with thread_limit(self._thread_count(X.shape[0])), flush_denormals():
            for _ in range(max_iter):
                started = time.perf_counter()
                loss = self._run_epoch(X, y, sample_weight)
                if not (math.isfinite(loss) and self._parameters_finite()):
                    self._recover_from_divergence(X, y, sample_weight)
                    return self.history
                score = self._score_validation(*validation) if validation is not None else None
                if self._end_epoch(loss, score, started):
                    self.history.converged = True
                    break
            else:
                if self.config.warn_on_max_iter:
                    warnings.warn(
                        f"Stochastic Optimizer: Maximum iterations ({max_iter}) reached "
                        "and the optimization hasn't converged yet.",
                        ConvergenceWarning,
                        stacklevel=3,
                    )
        if self.config.early_stopping:
            self._restore_best()
        return self.history

    def _end_epoch(self, loss, score, started):
        """Record an epoch; returns True when the stopping rule fires."""
        history, config = self.history, self.config
        history.n_iter += 1
        history.loss_curve.append(loss)
        if score is not None:
            history.validation_scores.append(score)
            if score < history.best_validation_score + config.tol:
                self._no_improvement_count += 1
            else:
                self._no_improvement_count = 0
            if score > history.best_validation_score:
                history.best_validation_score = score
                self._remember_best()
        else:
            if loss > history.best_loss - config.tol:
                self._no_improvement_count += 1
            else:
                self._no_improvement_count = 0
        if loss < history.best_loss:
            history.best_loss = loss
            if score is None and math.isfinite(loss):
                self._remember_best()
        if config.verbose:
            line = f"Iteration {history.n_iter}, loss = {loss:.8f}"
            if score is not None:
                line += f", validation score = {score:.6f}"
            print(line + f", elapsed = {time.perf_counter() - started:.3f}s", flush=True)
        stop = self._no_improvement_count > config.n_iter_no_change
        if stop and config.verbose:
            criterion = "Validation score" if score is not None else "Training loss"
            print(
                f"{criterion} did not improve more than tol={config.tol:g} for "
                f"{config.n_iter_no_change} consecutive epochs. Stopping.",
                flush=True,
            )
        return stop

    def _fit_lbfgs(self, X, y, sample_weight, max_iter):
        X, y, sample_weight = self._to_device(X, y, sample_weight)
        total_weight = sample_weight.sum()
        weights = torch.as_tensor(sample_weight / total_weight).to(device=self.device, dtype=self.dtype)
        penalty = self._has_penalty()
        best = {"loss": math.inf}
        self._remember_best()
        started = time.perf_counter()

        def objective(theta):
            self.flat_parameters.copy_(torch.as_tensor(theta))
            loss = float(self._loss_and_gradient(X, y, weights))
            if penalty:
                self._add_penalty_gradient(1.0 / total_weight)
                loss += self._penalty_value() / total_weight
            # A copy: scipy keeps the previous gradient, and the buffer is reused.
            gradient = self.flat_gradient.double().cpu().numpy().copy()
            if not (math.isfinite(loss) and np.all(np.isfinite(gradient))):
                # L-BFGS-B backs off on an infinite value during its line search.
                return math.inf, np.zeros_like(gradient)
            if loss < best["loss"]:
                best["loss"] = loss
                self._remember_best()
            return loss, gradient

        def record(intermediate_result):
            self.history.n_iter += 1
            self.history.loss_curve.append(float(intermediate_result.fun))
            if self.config.verbose:
                print(
                    f"Iteration {self.history.n_iter}, loss = {intermediate_result.fun:.8f}, "
                    f"elapsed = {time.perf_counter() - started:.3f}s",
                    flush=True,
                )

        theta0 = self.flat_parameters.double().cpu().numpy().copy()
        # scipy's L-BFGS-B makes thousands of level-1 BLAS calls on the parameter
        # vector: with several BLAS threads each call pays a thread hand-off
        # (measured on 2 busy cores: a 3-100-4 QNN fit 11 s with 2 threads, 1.8 s with 1).
        with threadpool_limits(limits=1, user_api="blas"):
            result = minimize(
                objective,
                theta0,
                method="L-BFGS-B",
                jac=True,
                callback=record,
                options={"maxiter": max_iter, "maxfun": self.config.max_fun, "gtol": self.config.tol},
            )
        self._restore_best()
        self.history.best_loss = min(self.history.best_loss, best["loss"])
        if not math.isfinite(best["loss"]):
            self._warn_divergence()
        elif result.status == 1 and self.config.warn_on_max_iter:
            warnings.warn(
                "lbfgs failed to converge after "
                f"{result.nit} iterations (max_iter={max_iter}, max_fun={self.config.max_fun}). "
                "Increase max_iter or scale the data.",
                ConvergenceWarning,
                stacklevel=3,
            )
        else:
            self.history.converged = result.success
        return self.history
