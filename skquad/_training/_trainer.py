"""The training loop: :class:`Trainer` (see the package docstring for the API)."""

import copy
import math
import time
from contextlib import nullcontext

import numpy as np
import scipy.sparse
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from .._foundation._input_range import clip_rows, clip_to_range, feature_range
from .._foundation._reporting import progress_line, warn_user
from .._foundation._rows import OrderedRows
from ._callbacks import SubtaskReporter
from ._config import TrainingConfig, TrainingResult
from ._divergence import DivergenceGuard
from ._lbfgs import fit_trainer_lbfgs
from ._optimizers import make_optimizer
from ._parameters import FlatParameters
from .._foundation._runtime import thread_count
from ._schedules import LearningRateSchedule
from ._sparse import SparseRows, is_sparse_rows
from .._foundation._threads import flush_denormals, limit_step_threads, limit_threads

__all__ = ["Trainer"]


class Trainer:
    """Train a torch module with skquad's shared loop (see the package docstring).

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

    Callbacks are attached per call with :meth:`attach_callbacks` (the
    estimators use :func:`skquad._training._callbacks.reporting_epochs`).
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
        self.detach_callbacks()
        self._build_flat_buffers(parameter_groups or [])
        self.restart()

    def restart(self):
        """Start training afresh from the module's parameters as they are now.

        A new history, schedule, update rule and divergence guard: what a new
        trainer of the same module would have, without rebuilding its buffers.
        """
        self.history = TrainingResult()
        # whether the last fit call scored a validation split
        self.held_out = False
        self.schedule = LearningRateSchedule(
            self.config.learning_rate,
            self.config.learning_rate_schedule,
            self.config.power_t,
            self.config.solver,
        )
        self.history.learning_rate = self.schedule.learning_rate
        self._optimizer = None
        self._no_improvement_count = 0
        self.guard = DivergenceGuard(self.config, self.flat_parameters)
        self._fit_started = None

    def __deepcopy__(self, memo):
        """A working copy: its module's parameters are views of its own flat buffers.

        A plain deep copy clones each ``nn.Parameter`` on its own (torch's
        ``Parameter.__deepcopy__``), so the copy's optimizer would step the
        copied flat buffer while its module kept the old weights (a
        ``partial_fit`` on an atomic fit's working copy would never learn).
        The parameters are re-bound to the copied buffers.
        """
        copied = type(self).__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            setattr(copied, name, copy.deepcopy(value, memo))
        copied.parameters.bind(copied.module)
        return copied

    # ------------------------------------------------------------ parameters
    def _build_flat_buffers(self, parameter_groups):
        self.parameters = FlatParameters(self.module, parameter_groups, device=self.device, dtype=self.dtype)
        self.flat_parameters = self.parameters.values
        self.flat_gradient = self.parameters.gradient
        self.n_parameters = self.parameters.size

    # ------------------------------------------------------------------ data
    def to_device(self, X, y, sample_weight, *, gathered=False):
        """``X`` (dense or :class:`SparseRows`) and ``y`` on the device, ``sample_weight`` float64.

        ``gathered``: :class:`~skquad._foundation._rows.OrderedRows` on the CPU
        in the trainer's dtype stay as they are, for a reader that gathers
        their chunks itself (L-BFGS's flat objective); elsewhere they are
        gathered into one tensor here.
        """
        if scipy.sparse.issparse(X) or is_sparse_rows(X):
            X = SparseRows(X.matrix if is_sparse_rows(X) else X, self.device, self.dtype)
        elif isinstance(X, torch.Tensor):  # array API input: on the device already, no copy in its dtype
            X = X.to(device=self.device, dtype=self.dtype)
        elif gathered and isinstance(X, OrderedRows) and self.device.type == "cpu" and (
            torch.empty(0, dtype=self.dtype).numpy().dtype == X.dtype
        ):
            pass  # the reader gathers each chunk in place of a whole tensor
        else:
            # np.require copies read-only input (e.g. a memmap): torch cannot wrap it.
            X = torch.as_tensor(np.require(X, requirements=["C", "W"])).to(
                device=self.device, dtype=self.dtype
            )
        y = torch.as_tensor(np.require(y, requirements=["C", "W"])).to(
            device=self.device, dtype=self.target_dtype
        )
        return X, y, np.asarray(sample_weight, dtype=np.float64)

    def _split_validation(self, X, y, sample_weight):
        """``(training part, validation part)``; the validation part is None where no split can be
        scored and the config does not require one (every row trains)."""
        config = self.config
        seed = int(torch.randint(0, 2**31 - 1, (1,), generator=self.generator))
        stratify = y if config.stratify else None
        indices = np.arange(len(y))
        try:
            train_index, validation_index = train_test_split(
                indices, test_size=config.validation_fraction, random_state=seed, stratify=stratify
            )
        except ValueError as exc:
            problem, cause = (
                "early_stopping could not set aside a stratified validation set of "
                f"validation_fraction={config.validation_fraction} of {len(y)} samples "
                f"({exc}). Use more data, a larger validation_fraction, or "
                "early_stopping=False."
            ), exc
        else:
            problem, cause = self._unscorable_validation(validation_index, sample_weight, len(y)), None
        if problem is not None:
            if config.validation_required:
                raise ValueError(problem) from cause
            return (X, y, sample_weight), None
        X_validation = X[validation_index]
        if config.clip_validation_inputs:
            X_validation = self._clipped_validation_inputs(
                X, train_index, sample_weight[train_index], X_validation, validation_index
            )
        return (
            (X[train_index], y[train_index], sample_weight[train_index]),
            (X_validation, y[validation_index], sample_weight[validation_index]),
        )

    def _unscorable_validation(self, validation_index, sample_weight, n_samples):
        """Why the validation rows ``validation_index`` give no score (None: they do)."""
        fraction = self.config.validation_fraction
        if len(validation_index) < 2:
            # MLPClassifier's rule and words: one sample gives no usable score (R^2 is undefined).
            return (
                f"The validation set is too small. Increase 'validation_fraction' (now {fraction}) "
                f"or the size of your dataset ({n_samples} samples), or use early_stopping=False."
            )
        if not sample_weight[validation_index].sum() > 0:
            return (
                "early_stopping: every sample of the validation split "
                f"(validation_fraction={fraction}, {len(validation_index)} samples) has a "
                "sample_weight of zero, so the validation score is undefined. Give more samples a "
                "positive weight, use a larger validation_fraction, or early_stopping=False."
            )
        return None

    def _clipped_validation_inputs(self, X, train_index, train_weight, X_validation, validation_index):
        """The validation inputs clipped to the training part's range, as predict clips new rows.

        Sparse rows (:class:`skquad.nn.sparse.SparseRowsInput`): a copy of the first stage's matrix
        with the validation rows clipped.
        """
        inputs = self.module[0] if isinstance(self.module, torch.nn.Sequential) else None
        matrix = getattr(inputs, "matrix", None)
        if matrix is None:
            data_min, data_max = feature_range(X[train_index], train_weight)
            return clip_to_range(X_validation, data_min, data_max)
        rows = np.asarray(X, dtype=np.int64).reshape(-1)
        data_min, data_max = feature_range(matrix[rows[train_index]], train_weight)
        inputs.matrix = clip_rows(matrix, rows[validation_index], data_min, data_max)
        return X_validation

    def _batch_size(self, n_samples):
        if self.config.batch_size is None:
            return min(200, n_samples)
        return max(1, min(int(self.config.batch_size), n_samples))

    # ------------------------------------------------------------- optimizers
    def _init_optimizer_state(self):
        """A fresh update rule (:mod:`._optimizers`) on the flat buffer."""
        self._optimizer = make_optimizer(self.config, self.flat_parameters)

    def training_state(self):
        """What a stochastic fit continues from, as plain numpy; None before the first epoch.

        The update rule's, schedule's, generator's and divergence guard's state and the
        counts, not the parameters: saved with the estimator's numpy weights, so that
        ``partial_fit`` after a pickle, joblib or skops round trip continues as the live model.
        """
        if self._optimizer is None:
            return None
        return {
            "solver": self.config.solver,
            "dtype": str(self.dtype).removeprefix("torch."),
            "optimizer": self._optimizer.state(),
            "learning_rate": float(self.schedule.learning_rate),
            "generator": self.generator.get_state().numpy().copy(),
            "reference_loss": self.guard.reference_loss,
            "best_parameters": self.guard.best.detach().cpu().numpy().copy(),
            "n_steps": int(self.history.n_steps),
            "n_samples_seen": int(self.history.n_samples_seen),
        }

    def accepts_training_state(self, state):
        """Whether :meth:`restore_training_state` can continue from ``state``: same solver and dtype.

        Otherwise (``set_params`` changed them since the state was saved) the
        trainer starts its optimizer afresh, as a live one does then.
        """
        return state is not None and (state["solver"], state["dtype"]) == (
            self.config.solver, str(self.dtype).removeprefix("torch.")
        )

    def restore_training_state(self, state):
        """Continue from :meth:`training_state` (same network, solver and dtype).

        Call on a trainer built from the saved weights, before its first
        ``partial_fit``; the buffers stay on this trainer's device.
        """
        if not self.accepts_training_state(state):
            raise ValueError(
                f"The saved training state is for solver={state['solver']!r} in {state['dtype']}; "
                f"this trainer runs solver={self.config.solver!r} in {self.dtype}."
            )
        self._init_optimizer_state()
        self._optimizer.load_state(state["optimizer"])
        self.schedule.learning_rate = float(state["learning_rate"])
        self.history.learning_rate = self.schedule.learning_rate
        generator_state = np.require(state["generator"], dtype=np.uint8, requirements=["C", "W"])
        self.generator.set_state(torch.from_numpy(generator_state))
        self.guard.reference_loss = state["reference_loss"]
        best = np.require(state["best_parameters"], requirements=["C", "W"])
        if best.shape != tuple(self.guard.best.shape):
            raise ValueError(
                f"The saved training state holds {best.size} parameters; this network has "
                f"{self.guard.best.numel()}."
            )
        self.guard.best.copy_(torch.from_numpy(best))
        self.history.n_steps = int(state["n_steps"])
        self.history.n_samples_seen = int(state["n_samples_seen"])

    def _optimizer_step(self):
        """One update of the flat buffer with the scheduled (per-group) rate."""
        self._optimizer.step(self.flat_gradient, self.parameters.learning_rates(self.schedule.learning_rate))

    # --------------------------------------------------------------- gradient
    def batch_loss_and_gradient(self, X, y, weights):
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
    def _run_epoch(self, X, y, sample_weight, shuffled=None):
        """One pass over the data; returns the epoch's mean objective. ``shuffled``: a tensor like
        ``X`` that receives the epoch's shuffled copy (one for all of :meth:`fit`'s epochs)."""
        n_samples = X.shape[0]
        batch_size = self._batch_size(n_samples)
        if self.config.shuffle:
            order = torch.randperm(n_samples, generator=self.generator)
            order_numpy = order.numpy()
            if shuffled is not None:
                X_epoch = torch.index_select(X, 0, order.to(self.device), out=shuffled)
            else:
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
        penalty = self.parameters.has_penalty
        batch_losses, used_sums = [], []
        # The explicit path needs no autograd at all: one no_grad for the epoch.
        explicit = torch.no_grad() if self.loss_and_gradient is not None else nullcontext()
        if isinstance(X_epoch, torch.Tensor):
            # The batches as views made by one call per tensor, cheaper than
            # three slicings a step.
            batches = zip(X_epoch.split(batch_size), y_epoch.split(batch_size), normalised.split(batch_size))
        else:
            # Python ints: torch slices with numpy integers cost twice as much.
            batches = (
                (X_epoch[start : start + length], y_epoch[start : start + length], normalised[start : start + length])
                for start, length in zip(starts.tolist(), lengths.tolist())
            )
        with explicit:
            for (X_batch, y_batch, w_batch), weight_sum in zip(batches, batch_sums.tolist()):
                if weight_sum <= 0:
                    continue  # nothing to learn from a batch of zero-weight samples
                loss = self.batch_loss_and_gradient(X_batch, y_batch, w_batch)
                # The first batch's loss at the starting parameters: the
                # scale against which the divergence guard measures growth.
                if self.guard.reference_loss is None:
                    self.guard.observe_first_loss(loss)
                if penalty:
                    self.parameters.add_penalty_gradient(1.0 / weight_sum)
                self._optimizer_step()
                self.history.n_steps += 1
                batch_losses.append(loss)
                used_sums.append(weight_sum)
        total_weight = batch_sums.sum()
        self.history.n_samples_seen += n_samples
        self.schedule.epoch_ends(self.history.n_samples_seen)
        self.history.learning_rate = self.schedule.learning_rate
        # One device-to-host transfer per epoch, not one per step.
        if not batch_losses:
            return 0.0  # every sample weight was zero: nothing was learned
        losses = torch.stack(batch_losses).double().cpu().numpy()
        value = float(np.dot(losses, used_sums)) / total_weight
        if penalty:
            value += self.parameters.penalty_value() * np.count_nonzero(batch_sums > 0) / total_weight
        return value

    def _score_validation(self, X, y, sample_weight):
        with torch.inference_mode():
            outputs = self.module(X)
            if self.validation_score is not None:
                return float(self.validation_score(outputs, y, sample_weight))
            losses = self.loss_function(outputs, y).reshape(-1).double().cpu().numpy()
            return -float(np.average(losses, weights=sample_weight))

    def _diverged(self, loss):
        return self.guard.diverged(loss, self.history.best_loss)

    def full_loss(self, X, y, sample_weight, chunk=4096):
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
        """The guard's recovery (best or start, scored on the training data), then the warning."""
        best_value = self.guard.recover(lambda: self.full_loss(X, y, sample_weight))
        self.history.best_loss = min(self.history.best_loss, best_value)
        self.history.loss = best_value
        self.warn_divergence()

    def warn_divergence(self):
        """Mark the history diverged and warn (the guard's words)."""
        self.history.diverged = True
        self.guard.warn()

    def step_threads(self, rows_per_step, n_threads=None):
        """:func:`limit_step_threads` for steps of ``rows_per_step`` rows: the runtime policy's count on
        ``6 * rows * n_parameters`` flops, given to the library that multiplies the batches.

        ``n_threads`` defaults to the configuration's (the Dask workers pass the estimator's).
        """
        n_threads = self.config.n_threads if n_threads is None else n_threads
        threads = thread_count(n_threads, self.device, 6.0 * rows_per_step * self.n_parameters)
        products = getattr(self.loss_and_gradient, "products_library", None)
        return limit_step_threads(threads, "torch" if products is None else products(self.device))

    def _step_threads(self, n_samples):
        batch = self._batch_size(n_samples) if self.config.solver != "lbfgs" else n_samples
        return self.step_threads(batch)

    def attach_callbacks(
        self, context, *, estimator=None, fitted_attributes=None, callback_data=None
    ):
        """Report the next calls' epochs/iterations to ``context`` (None: to nobody).

        A trainer kept between ``partial_fit`` calls attaches each call's root
        context and detaches it after, so that it holds no reference to the
        estimator, the callbacks or the data in between.
        """
        self.callback_context = context
        self._callback_options = dict(
            estimator=estimator, fitted_attributes=fitted_attributes, **(callback_data or {})
        )

    def detach_callbacks(self):
        """Drop the callback context, the estimator and the data (see :meth:`attach_callbacks`)."""
        self.attach_callbacks(None)

    def reporter(self, task_name):
        """A :class:`SubtaskReporter` of the attached context: one subtask per epoch or iteration."""
        return SubtaskReporter(self.callback_context, task_name=task_name, **self._callback_options)

    def _start_call(self):
        history = self.history
        history.converged = history.diverged = history.stopped_by_callback = False
        self._fit_started = time.perf_counter()

    # ---------------------------------------------------------------- public
    def partial_fit(self, X, y, sample_weight=None):
        """One epoch over ``(X, y)``; optimizer state is kept between calls."""
        if self.config.solver == "lbfgs":
            raise ValueError(
                "partial_fit needs a stochastic solver ('sgd' or 'adam'); L-BFGS "
                "works on the whole data set at once."
            )
        sample_weight = np.ones(len(y)) if sample_weight is None else sample_weight
        X, y, sample_weight = self.to_device(X, y, sample_weight)
        if self._optimizer is None:
            self._init_optimizer_state()
        self._start_call()
        reporter = self.reporter("epoch")
        with self._step_threads(X.shape[0]), flush_denormals():
            self.guard.mark_start()
            reporter.begin()
            loss = self._run_epoch(X, y, sample_weight)
            if self._diverged(loss):
                self._recover_from_divergence(X, y, sample_weight)
            else:
                self._end_epoch(loss, None, check_stop=False)
            self.history.stopped_by_callback = reporter.end()
        return self.history

    def fit(self, X, y, sample_weight=None, max_iter=200):
        """Train until the stopping rule fires or ``max_iter`` epochs have run."""
        sample_weight = np.ones(len(y)) if sample_weight is None else np.asarray(sample_weight)
        self._start_call()
        self.guard.reference_loss = None
        self.held_out = False
        if self.config.solver == "lbfgs":
            with self._step_threads(len(y)), flush_denormals():
                return fit_trainer_lbfgs(self, X, y, sample_weight, max_iter)
        validation = None
        if self.config.early_stopping:
            (X, y, sample_weight), validation = self._split_validation(
                X if scipy.sparse.issparse(X) or isinstance(X, torch.Tensor) else np.asarray(X), np.asarray(y),
                sample_weight
            )
            validation = None if validation is None else self.to_device(*validation)
        self.held_out = validation is not None
        X, y, sample_weight = self.to_device(X, y, sample_weight)
        self._init_optimizer_state()
        self._no_improvement_count = 0
        self.guard.remember_best()
        self.guard.mark_start()
        if self.held_out:
            self.history.best_validation_score = -math.inf
        history = self.history
        reporter = self.reporter("epoch")
        # The epochs' shuffled copies of X go into one buffer made for this
        # call (it goes with the call): a fresh copy each epoch would cost
        # several times the gather itself in page faults on the new memory.
        shuffled = (
            torch.empty_like(X) if self.config.shuffle and isinstance(X, torch.Tensor) and X.layout == torch.strided
            else None
        )
        with self._step_threads(X.shape[0]), flush_denormals():
            for _ in range(max_iter):
                reporter.begin()
                loss = self._run_epoch(X, y, sample_weight, shuffled)
                if self._diverged(loss):
                    self._recover_from_divergence(X, y, sample_weight)
                    reporter.end()
                    return history
                score = self._score_validation(*validation) if validation is not None else None
                stop = self._end_epoch(loss, score)
                if reporter.end():
                    history.stopped_by_callback = True
                    break
                if stop:
                    history.converged = True
                    break
            else:
                if self.config.warn_on_max_iter:
                    warn_user(
                        f"Stochastic Optimizer: Maximum iterations ({max_iter}) reached "
                        "and the optimization hasn't converged yet."
                        + (f" {self.config.convergence_advice}" if self.config.convergence_advice else ""),
                        ConvergenceWarning,
                    )
        if self.held_out:
            self.guard.restore_best()
        return history

    def fit_data_term(self, data_term, max_iter=200):
        """:meth:`fit` by L-BFGS on a data term computed elsewhere (the Dask blocks).

        ``data_term``: see :func:`~._lbfgs.fit_trainer_lbfgs`. This process
        only runs L-BFGS's ``O(n_parameters)`` updates and the penalty: one
        thread, as the data-parallel fit of quadratic logistic regression.
        """
        if self.config.solver != "lbfgs":
            raise ValueError(f"fit_data_term runs L-BFGS; this trainer's solver is {self.config.solver!r}.")
        self._start_call()
        self.guard.reference_loss = None
        with limit_threads(1, blas=1):
            return fit_trainer_lbfgs(self, None, None, None, max_iter, data_term=data_term)

    def _end_epoch(self, loss, score, *, check_stop=True):
        """Record an epoch; True when MLPClassifier's stopping rule ends training (no improvement by
        ``tol`` for more than ``n_iter_no_change`` epochs; "adaptive" divides the rate by 5 instead)."""
        history, config = self.history, self.config
        history.n_iter += 1
        history.loss_curve.append(loss)
        history.loss = loss
        if score is not None:
            history.validation_scores.append(score)
            if score < history.best_validation_score + config.tol:
                self._no_improvement_count += 1
            else:
                self._no_improvement_count = 0
            if score > history.best_validation_score:
                history.best_validation_score = score
                self.guard.remember_best()
        else:
            if loss > history.best_loss - config.tol:
                self._no_improvement_count += 1
            else:
                self._no_improvement_count = 0
        if loss < history.best_loss:
            history.best_loss = loss
            if score is None and math.isfinite(loss):
                self.guard.remember_best()
        if config.verbose:
            fields = {} if score is None else {"validation_score": float(score)}
            print(progress_line(history.n_iter, loss, self.elapsed(), **fields), flush=True)
        if not check_stop or self._no_improvement_count <= config.n_iter_no_change:
            return False
        stop, outcome = self.schedule.should_stop()
        history.learning_rate = self.schedule.learning_rate
        if config.verbose:
            criterion = "Validation score" if score is not None else "Training loss"
            print(
                f"{criterion} did not improve more than tol={config.tol:f} for "
                f"{config.n_iter_no_change} consecutive epochs. {outcome}",
                flush=True,
            )
        if not stop:
            self._no_improvement_count = 0
        return stop

    def elapsed(self):
        """Seconds since the current ``fit`` call started."""
        return time.perf_counter() - self._fit_started

