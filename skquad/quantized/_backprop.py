"""BackpropQuantizedClassifier: Bartan & Pilanci's baseline (SGD, then sign quantization)."""

import math
import time
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import _check_partial_fit_first_call

from .._foundation._atomic import atomic_fit, reads_fitted_state
from .._base import BaseQuadraticClassifier, BaseQuadraticEstimator, dispatch_inputs
from .._foundation._docstrings import shared_docstring
from .._foundation._reporting import warn_user
from .._foundation._torch_utils import to_numpy
from .._training import ParameterGroup, Trainer, TrainingConfig, reporting_epochs
from .._foundation._runtime import runtime_policy
from ..convex.formulation import LOSSES, network_objective
from ..convex.lifting import InputLifting
from ..convex.statistics import neuron_svecs, svec_rows
from ..nn.bilinear import (
    BilinearModule,
    bilinear_curvature,
    bilinear_loss,
    quantize_bilinear,
)
from ._common import (
    _batched_network_scores,
    _check_memory,
    _class_targets,
    _decision_values,
    _held_out_refit_choice,
    _neurons_per_output,
    _predict_labels,
    _standardization,
)
from ._linear_term import RELATIVE_ALPHAS, LinearTermMixin, ridge_by_leave_one_out, rows_less_linear_term
from ._logistic_output import logistic_output_layer

__all__ = ["BackpropQuantizedClassifier"]

_SCHEDULES = ("constant", "invscaling", "adaptive")


def _training_memory(n_neurons, n_lifted, batch_size, itemsize):
    """Bytes of training: parameter copies (engine buffers, optimizer, best/start) and activations."""
    return itemsize * (12.0 * n_neurons * n_lifted + 6.0 * batch_size * n_neurons) + 16.0 * n_neurons * n_lifted


def _refit_memory(n_samples, n_neurons):
    """Bytes of the output layer's refit: the neurons' outputs, their centred copy, its rotation and
    squares (:func:`ridge_by_leave_one_out`), the Gram and its eigenvectors."""
    return 4.0 * 8 * n_samples * n_neurons + 3.0 * 8 * n_neurons**2


_REFIT_ADVICE = "reduce n_neurons, or set refit_output_layer=False (the paper's single scale)."

# beta="auto": MLP's constant penalty, raised to AUTO_BETA_PER_ROW / n on fewer than 3,000 rows.
# On a few dozen rows a thousand neurons' real weights interpolate them, and the refitted output
# layer's leave-one-out cannot see it: the neurons were trained on the rows it leaves out.
AUTO_BETA_FLOOR = 1e-4
AUTO_BETA_PER_ROW = 0.3


def training_beta(beta, total_weight):
    """The first layer's L2 penalty a training uses: ``beta``, or for ``"auto"``
    ``max(AUTO_BETA_FLOOR, AUTO_BETA_PER_ROW / total_weight)``; ``total_weight`` None (``partial_fit``,
    which does not know how many rows will come): the floor."""
    if not isinstance(beta, str):
        return float(beta)
    if total_weight is None:
        return AUTO_BETA_FLOOR
    return max(AUTO_BETA_FLOOR, AUTO_BETA_PER_ROW / max(float(total_weight), np.finfo(float).tiny))


def _flops_per_step(n_neurons, n_lifted, batch_size):
    """Forward and backward of one step: the ``Z U^T`` and ``Z V^T`` products, three times each."""
    return 6.0 * batch_size * 2 * n_neurons * n_lifted


def _bilinear_trainer(
    n_lifted, n_outputs, policy, *, n_neurons, loss, beta, learning_rate_init, momentum,
    batch_size, tol, n_iter_no_change, verbose, learning_rate, power_t, max_iter_warning,
    initial, curvature, real_targets,
):
    """Bartan & Pilanci's baseline (``alpha = 1 / m_k``) on lifted ``Z``: ``(trainer, neuron_class, alpha)``.

    The first layer steps by ``learning_rate_init * m_k / curvature``; ``initial``: a start
    ``(U, V)`` (None: ``N(0, I / p)`` rows); ``real_targets``: (n, n_outputs) regression targets.
    """
    counts = _neurons_per_output(n_neurons, n_outputs)
    if initial is None:
        # Unit-variance projections z^T u for standardized inputs.
        generator = policy.init_generator
        U = torch.randn(n_neurons, n_lifted, generator=generator, dtype=torch.float64)
        V = torch.randn(n_neurons, n_lifted, generator=generator, dtype=torch.float64)
        U, V = U / np.sqrt(n_lifted), V / np.sqrt(n_lifted)
    else:
        U, V = (torch.as_tensor(np.asarray(w, dtype=np.float64)) for w in initial)
    neuron_class = np.repeat(np.arange(n_outputs), counts)
    output_weights = np.zeros((n_neurons, n_outputs))
    output_weights[np.arange(n_neurons), neuron_class] = 1.0 / counts[neuron_class]
    module = BilinearModule(U, V, torch.as_tensor(output_weights))
    config = TrainingConfig(
        solver="sgd",
        learning_rate=float(learning_rate_init),
        learning_rate_schedule=learning_rate,
        power_t=float(power_t),
        momentum=float(momentum),
        nesterov=False,
        batch_size=batch_size,
        tol=float(tol),
        n_iter_no_change=int(n_iter_no_change),
        verbose=bool(verbose),
        n_threads="auto" if policy.n_threads is None else policy.n_threads,
        warn_on_max_iter=bool(max_iter_warning),
        divergence_advice=f"a larger beta (now {float(beta):g}) or a larger batch_size",
    )
    group = ParameterGroup(
        [module.U, module.V],
        name="first layer",
        # alpha_j = 1/m_k shrinks each neuron's gradient by 1/m_k: scale the
        # step back so that a good learning_rate_init does not depend on m; divide
        # by the input curvature (_bilinear_curvature) so that it does not
        # depend on the data either.
        learning_rate_scale=float(np.mean(counts)) / float(curvature),
        l2=float(beta),
    )
    trainer = Trainer(
        module,
        bilinear_loss(loss, n_outputs, real_targets=real_targets),
        [group],
        config,
        device=policy.device,
        dtype=policy.dtype,
        generator=policy.shuffle_generator,
        target_dtype=policy.dtype if n_outputs == 1 or real_targets else torch.int64,
    )
    return trainer, neuron_class, output_weights


class _BackpropQuantizedNetwork(LinearTermMixin, BaseQuadraticEstimator):
    """The baseline's training, quantization and prediction, shared by the classifier and the regressor.

    A subclass names its targets through ``_network_n_outputs``, ``_network_targets``,
    ``_trains_on_real_targets`` and ``_score_offset``.
    """

    def _trains_on_real_targets(self):
        """Whether the network is trained on real ``(n, k)`` targets (squared loss) rather than
        labels."""
        return False

    def _score_offset(self):
        """The constant the scores add to the network's (the linear term's, in ``intercept_``)."""
        return 0.0

    def _lifting(self):
        return InputLifting(
            fit_intercept=bool(self.fit_intercept),
            center=self.feature_mean_,
            scale=self.feature_scale_,
        )

    def _step_and_schedule(self):
        """``(learning_rate_init, schedule)``, accepting the deprecated float ``learning_rate``."""
        if isinstance(self.learning_rate, str):
            return float(self.learning_rate_init), self.learning_rate
        warn_user(
            f"Passing a float as learning_rate (here {self.learning_rate!r}) is "
            "deprecated since 0.2 and will stop working in 0.4: the step size is "
            "now learning_rate_init, and learning_rate is the schedule "
            "('constant', 'invscaling', 'adaptive') as in MLPClassifier. Using "
            "it as learning_rate_init with the 'constant' schedule.",
            FutureWarning,
        )
        return float(self.learning_rate), "constant"

    def _make_trainer(self, X, sample_weight, resume=False, *, all_rows=False):
        """A network and its trainer: fresh, or (``resume``, ``partial_fit`` after unpickling) from
        ``U_float_`` with the optimizer state that ``__getstate__`` saved as numpy. ``all_rows``:
        ``X`` is all the training data (``fit``), which ``beta="auto"`` reads."""
        step, schedule = self._step_and_schedule()
        if not resume:
            self.feature_mean_, self.feature_scale_ = (
                _standardization(X, sample_weight) if self.standardize else (None, None)
            )
            self.beta_ = training_beta(self.beta, math.fsum(sample_weight) if all_rows else None)
        p = self._lifting().n_lifted(X.shape[1])
        batch = min(self.batch_size or 200, X.shape[0])
        # dtype, device, threads, generators: decided once (skquad._foundation._runtime)
        policy = runtime_policy(
            X.dtype,
            dtype=self.dtype,
            fitted_dtype=self.U_float_.dtype if resume else None,
            device=self.device,
            n_threads=self.n_threads,
            flops_per_step=_flops_per_step(self.n_neurons, p, batch),
            random_state=self.random_state,
        )
        required = _training_memory(self.n_neurons, p, batch, policy.dtype.itemsize)
        what, advice = "training the network", None
        if self.refit_output_layer:
            # refused before training, not after it: the refit follows the last epoch
            required += _refit_memory(X.shape[0], self.n_neurons)
            what, advice = "training the network and refitting its output layer", _REFIT_ADVICE
        policy.require_memory(required, "n_neurons", self.n_neurons, what, advice=advice)
        if not resume:
            self.input_curvature_ = bilinear_curvature(
                self._lifting().features(X), sample_weight, self.batch_size
            )
        trainer, neuron_class, output_weights = _bilinear_trainer(
            p,
            self._network_n_outputs(),
            policy,
            n_neurons=self.n_neurons,
            loss=self.loss,
            beta=self._trained_beta(),
            learning_rate_init=step,
            learning_rate=schedule,
            power_t=self.power_t,
            momentum=self.momentum,
            batch_size=self.batch_size,
            tol=self.tol,
            n_iter_no_change=self.n_iter_no_change,
            verbose=self.verbose,
            max_iter_warning=True,
            initial=(self.U_float_, self.V_float_) if resume else None,
            curvature=self.input_curvature_,
            real_targets=self._trains_on_real_targets(),
        )
        self.neuron_class_ = neuron_class
        self.float_alpha_ = output_weights.astype(policy.numpy_dtype)
        self.n_lifted_features_ = p
        self.device_ = policy.device_name
        if not resume:
            self.loss_curve_ = []
            self.n_iter_ = 0
            self.training_time_ = 0.0
        self._history_offset = (list(self.loss_curve_), self.n_iter_)
        saved_training_state = self.__dict__.pop("_training_state", None)
        if resume and trainer.accepts_training_state(saved_training_state):
            trainer.restore_training_state(saved_training_state)
        self._trainer = trainer
        return trainer

    def _trained_beta(self):
        """``beta_``; for a model saved before it was recorded, ``beta`` as the fit then read it."""
        if hasattr(self, "beta_"):
            return self.beta_
        return training_beta(self.beta, None)

    def _fit_linear_term(self, X, T, sample_weight):
        """Fit ``linear_term``'s ridge of ``T`` on the standardized inputs where the model has one
        (:mod:`skquad.quantized._linear_term`); returns its constant (0 without)."""
        self._forget_linear_term()
        if not self._fits_linear_term():
            return 0.0
        _, coef, intercept, alpha = rows_less_linear_term(
            self._lifting().standardized(X), T, sample_weight, n_samples=math.fsum(sample_weight),
        )
        return intercept - self._publish_linear_term(coef, alpha)

    def _train(self, X, y_validated, sample_weight, *, epochs=None):
        Z = self._lifting().features(X)
        if self._trainer.dtype == torch.float32:
            Z = Z.astype(np.float32)
        targets = self._network_targets(X, y_validated)
        started = time.perf_counter()
        # Every epoch is a callback subtask; its fitted estimator is the
        # quantized network of that epoch's weights (what predict would use).
        with reporting_epochs(
            self._trainer, self, X, self._callback_targets(X, y_validated), sample_weight,
            fitted_attributes=self._quantized_attributes,
        ):
            if epochs is None:
                history = self._trainer.fit(Z, targets, sample_weight, max_iter=int(self.max_iter))
            else:
                history = self._trainer.partial_fit(Z, targets, sample_weight)
        self.training_time_ += time.perf_counter() - started
        previous_curve, previous_iterations = self._history_offset
        self.loss_curve_ = previous_curve + list(history.loss_curve)
        self.n_iter_ = previous_iterations + history.n_iter
        if self.loss_curve_:
            self.loss_ = float(self.loss_curve_[-1])
        self._quantize(X, targets, sample_weight)
        return self

    def _quantized_attributes(self):
        """The trained weights and their quantization (no intercept), in the training dtype: the
        epochs' snapshots that callbacks see (the output layer's refit needs the training rows)."""
        module = self._trainer.module
        U_float, V_float = to_numpy(module.U), to_numpy(module.V)
        U, V, alpha, scale = quantize_bilinear(U_float, V_float, self.float_alpha_, self.neuron_class_)
        dtype = U_float.dtype
        return {
            "U_float_": U_float, "V_float_": V_float, "U_": U, "V_": V,
            "alpha_": alpha.astype(dtype), "scale_": scale.astype(dtype), "device_": self.device_,
            "intercept_": (np.zeros(alpha.shape[1]) + self._score_offset()).astype(dtype),
        }

    def _quantize(self, X, targets, sample_weight):
        for name, value in self._quantized_attributes().items():
            setattr(self, name, value)
        if self.refit_output_layer:
            self._refit_output_layer(X, targets, sample_weight)
            return
        self.refit_loss_ = None
        # (the targets are less the score offset: the network's scores alone)
        scores = _batched_network_scores(self._lifting(), X, self.U_, self.V_, self.alpha_)
        self.objective_ = network_objective(
            scores, targets, sample_weight, self.loss, self.alpha_, self._trained_beta(), self.n_lifted_features_
        )

    def _refit_candidates(self):
        """The output layer's refits, the default first: the squared loss (a ridge) here."""
        return ("squared",)

    def _refit_output_layer(self, X, targets, sample_weight):
        """The output layer refitted on the neurons' outputs in ``refit_loss_`` (chosen by held-out
        rows where there are two candidates); any neuron feeds any score."""
        n_neurons = self.U_.shape[0]
        # (partial_fit's later calls bring rows that fit() did not count)
        _check_memory(_refit_memory(X.shape[0], n_neurons), "n_neurons", n_neurons,
                      "refitting the output layer", advice=_REFIT_ADVICE)
        H = self._lifting().bilinear(X, self.U_, self.V_)  # (n, m): each neuron's output
        candidates = self._refit_candidates()

        def held_out_scores(loss, train, held_out):
            coef, intercept = self._output_layer(loss, X, H, targets, sample_weight, train)
            return H[held_out] @ coef + intercept

        self.refit_loss_ = candidates[0] if len(candidates) == 1 else _held_out_refit_choice(
            X, sample_weight, np.asarray(targets), candidates, held_out_scores)
        coef, intercept = self._output_layer(self.refit_loss_, X, H, targets, sample_weight)
        dtype = self.alpha_.dtype
        self.alpha_ = np.ascontiguousarray(coef, dtype=dtype)
        intercept = np.asarray(intercept, dtype=dtype)
        scores = H @ self.alpha_.astype(np.float64) + intercept
        self.objective_ = network_objective(
            scores, targets, sample_weight, self.loss, self.alpha_, self._trained_beta(), self.n_lifted_features_
        )
        self.intercept_ = (intercept + self._score_offset()).astype(dtype)

    def _output_layer(self, loss, X, H, targets, sample_weight, rows=None):
        """``(coef (m, n_scores), intercept)`` of the refit in ``loss`` on the rows ``rows`` (None:
        all): the ridge of the targets (RidgeCV's leave-one-out penalty), or the logistic regression
        of the labels (:func:`logistic_output_layer`, through the lifted coordinates)."""
        if rows is not None:
            X, H, targets, sample_weight = X[rows], H[rows], targets[rows], sample_weight[rows]
        if loss == "logistic":
            labels = np.asarray(targets) if self._n_scores > 1 else (np.asarray(targets) > 0).astype(int)
            m, p = H.shape[1], self.U_.shape[1]
            if p * (p + 1) // 2 >= m:  # no fewer lifted coordinates than neurons: H itself
                return logistic_output_layer(H, None, labels, sample_weight)
            lifting = self._lifting()
            return logistic_output_layer(svec_rows(lifting.features(X)), neuron_svecs(self.U_, self.V_),
                                         labels, sample_weight)
        # The penalty weighs against sum_i w_i (t_i - h_i^T a)^2: scale by the weighted energy.
        energy = max(float(np.sum(sample_weight @ H**2)), np.finfo(float).tiny)
        coef, intercept, _ = ridge_by_leave_one_out(
            H.copy(), self._refit_targets(targets), sample_weight, energy * RELATIVE_ALPHAS)
        return coef.T, intercept

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Train the real-weight network with SGD, then quantize it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : BackpropQuantizedClassifier
        """
        X, y_validated, sample_weight = self._validate_training_data(X, y, sample_weight)
        self._make_trainer(X, sample_weight, all_rows=True)
        return self._train(X, y_validated, sample_weight)


    def _raw_scores(self, X):
        """Computed in float64; returned in ``result_type(X, alpha_)`` (float32 for a float32 model on float32 X)."""
        scores = _batched_network_scores(self._lifting(), X, self.U_, self.V_, self.alpha_)
        # (models pickled before the output layer had an intercept have none)
        scores += getattr(self, "intercept_", 0.0)
        return scores.astype(np.result_type(X.dtype, self.alpha_.dtype), copy=False)

    def _float_scores(self, X):
        """Scores of the real-weight network, shape (n_samples, n_outputs), completed as the
        quantized network's are (:meth:`_completed_float_scores`)."""
        X = self._validate_predict_data(X)
        scores = _batched_network_scores(
            self._lifting(), X, self.U_float_, self.V_float_, self.float_alpha_
        )
        scores = scores.astype(np.result_type(X.dtype, self.float_alpha_.dtype), copy=False)
        return self._completed_float_scores(scores, X)

    def _completed_float_scores(self, scores, X):
        """The real-weight network's ``scores`` on the validated rows ``X``, plus what the model
        adds to them (a subclass's offset, target scaling and linear term)."""
        return scores


    def __getstate__(self):
        # The torch trainer is a training-time object; the model is in numpy.
        state = self.__dict__.copy()
        trainer = state.pop("_trainer", None)
        # Its optimizer state travels as numpy, for partial_fit after loading.
        training_state = trainer.training_state() if trainer is not None else None
        if training_state is not None:
            state["_training_state"] = training_state
        return state



@shared_docstring
class BackpropQuantizedClassifier(_BackpropQuantizedNetwork, BaseQuadraticClassifier):
    """Bartan & Pilanci's baseline: a bilinear network trained by SGD, then sign-quantized.

    The network is the one of :class:`SDPQuantizedClassifier`,
    ``f(x) = sum_j alpha_j (z^T u_j)(z^T v_j)`` with ``z = [x, 1]``, but
    trained as the paper's "backpropagation + post-training quantization":

    1. ``u_j, v_j`` real, the second layer fixed to ``alpha_j = 1 / m``
       (``1 / m_k`` on the neuron's class for ``K > 2`` classes), trained by
       SGD with momentum on the loss plus an L2 penalty ``beta`` (the shared
       training engine, ``skquad._training``);
    2. quantization: ``u_j <- sign(u_j)``, ``v_j <- sign(v_j)`` and one scale
       per class, ``c = <Zhat, Z> / <Zhat, Zhat>``, the least-squares
       minimiser of ``||c Zhat - Z||_F`` with ``Zhat = sum_j sign(u_j) sign(v_j)^T``
       and ``Z = sum_j u_j v_j^T / m``. (The paper prints
       ``<Zhat, Z> / <Z, Z>``, which is not that minimiser.)

    3. (``refit_output_layer``, by default, beyond the paper) the second
       layer refitted on the training rows, the first layer's signs
       unchanged.

    ``predict`` uses the quantized network;
    :meth:`float_decision_function` gives the trained real-weight network.

    Parameters
    ----------
    n_neurons : int, default=1000
        Hidden neurons ``m`` (split evenly over the classes when K > 2).
    loss : {"squared", "hinge", "logistic"}, default="squared"
        As in :class:`SDPQuantizedClassifier`.
    beta : float or "auto", default=1e-4
        L2 penalty ``0.5 * beta * (||U||^2 + ||V||^2)`` on the real first
        layer during training, scaled like MLPClassifier's ``alpha``
        (the second layer is fixed, so the SDP's ``l1`` penalty on it is a
        constant here; the paper tunes ``beta`` separately for this baseline).
        ``"auto"`` (:class:`BackpropQuantizedRegressor`'s default):
        ``max(1e-4, 0.3 / n)`` for ``fit`` on ``n`` rows (the sum of
        ``sample_weight``), a larger penalty below 3,000 rows, most on a few
        dozen, where the network's weights would otherwise interpolate the
        training rows; 1e-4
        for ``partial_fit``, which does not know how many rows will come.
        ``beta_`` is the penalty used. The classifier keeps the constant by
        default: on held-out classification sets ``"auto"`` scored as 1e-4
        did (the changelog has the figures).
    fit_intercept : bool, default=True
        Append a constant input 1 (as in :class:`SDPQuantizedClassifier`).
    standardize : bool, default=True
        Standardize the features inside the model (as in
        :class:`SDPQuantizedClassifier`).
    learning_rate_init : float, default=0.1
        SGD step size relative to the data's curvature, so that one default
        trains stably from 2 to 26 classes and on any standardized data. The
        step applied to the first layer is
        ``learning_rate_init * m_k / input_curvature_``: the factor ``m_k`` undoes
        the ``1 / m_k`` that the fixed ``alpha_j`` puts on each neuron's
        gradient (mean-field scaling, so that a good value does not depend on
        ``n_neurons``), and ``input_curvature_`` is the largest curvature of
        the fresh network's outputs per unit step: the larger of the top
        eigenvalue of the kernel ``[(z_i^T z_j)^2 / p]`` and the biggest
        single-sample term ``max_i ||z_i||^4 / (p * batch_size)``. A quadratic
        network's curvature grows with ``||z||^4``, so rare large inputs
        (sparse pixels, skewed features) would make any fixed step diverge.
    learning_rate : {"constant", "invscaling", "adaptive"}, default="constant"
        Step-size schedule, as in :class:`~sklearn.neural_network.MLPClassifier`.
        A float is still accepted as the step size, with a FutureWarning:
        that is ``learning_rate_init`` (renamed in 0.2; the float form is
        removed in 0.4).
    power_t : float, default=0.5
        Exponent of the "invscaling" schedule, as in MLPClassifier.
    momentum : float, default=0.9
    batch_size : int, default=None
        None means ``min(200, n_samples)``.
    max_iter : int, default=200
        Epochs.
    tol : float, default=1e-4
    n_iter_no_change : int, default=10
        Training stops when the loss has not improved by ``tol`` for this many
        epochs.
    class_weight : dict, "balanced" or None, default=None
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where torch trains ("auto": the CPU). Weights are stored as numpy
        arrays.
    dtype : {"float32", "float64"} or None, default=None
        Training precision. None follows the input, as MLPClassifier does:
        float32 ``X`` trains in float32, anything else in float64. The
        fitted real-valued arrays (``U_float_``, ``V_float_``, ``alpha_``,
        ``float_alpha_``, ``scale_``) are in that dtype, and the scores in
        ``numpy.result_type(X, alpha_)``.
    n_threads : "auto" or int, default="auto"
        CPU threads for training: "auto" uses one thread for small steps and
        torch's thread count for large ones; pass 1 on a machine busy with
        other work (competing threads can slow training many times over).
    verbose : bool, default=False
    random_state : int, RandomState instance or None, default=None
        Seeds the initialization and, through an independent stream, the
        batch order.
    [shared: clip_inputs:BackpropQuantizedClassifier]
    refit_output_layer : bool, "logistic" or "auto", default="auto"
        After quantization, refit the second layer on the training rows (those
        of the last ``fit`` or ``partial_fit`` call), one weight per neuron
        and score and an intercept per score, whatever ``loss`` trained the
        first layer. True: as :class:`~sklearn.linear_model.RidgeClassifierCV`
        does, ridge regression of each score's ±1 class indicator on the ±1
        neurons' outputs, the penalty chosen by efficient leave-one-out on a
        grid relative to the outputs' mean column energy. "logistic":
        :class:`~sklearn.linear_model.LogisticRegression` at its default
        ``C=1`` on the outputs centred and scaled to unit mean square, solved
        in the neurons' ``p (p + 1) / 2`` lifted coordinates where they are
        fewer than the neurons (the same optimum). "auto": with three or more
        classes, whose one-vs-rest ridge scores can mask a class, both refits
        on fifths of the rows held out in turn (at least 100 rows scored), the
        ridge kept unless the logistic one misclassifies less held-out weight
        by more than one standard error, then the chosen one on every row
        (``refit_loss_``; the ridge below 20 rows); else True. The network stays a binary-weight network;
        the refit replaces the paper's single scale per class, which ignores
        the data. False: the paper's baseline exactly (``scale_`` per class,
        no intercept).
    linear_term : "auto" or bool, default="auto"
        With ``fit_intercept=True`` and the squared loss, fit a linear term
        ``x·w + b`` to the ±1 labels (or the one-hot labels of more classes)
        first and the network to its residuals, as
        :class:`SDPQuantizedClassifier` does. A ±1 first layer weighs every
        input alike in each neuron's linear part, so a mostly linear boundary
        is fitted poorly, worst on few rows. The term is ridge on
        the standardized inputs, its penalty chosen per score by generalized
        cross-validation, fixed by ``fit`` (or a first ``partial_fit``); the
        model adds ``X @ linear_coef_.T`` to the network's scores, the term's
        constant to ``intercept_``, and the output layer's refit fits the
        residuals. "auto": a term on two classes (one score) and none on
        more, whose one-vs-rest linear scores can mask a class; none with the
        hinge and logistic losses or ``refit_output_layer="logistic"``, which
        fit the labels themselves (True is refused with them). False: the
        network alone, as in the paper.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
    feature_mean_, feature_scale_ : ndarray of shape (n_features_in_,) or None
        The standardization (None when ``standardize=False``).
    input_curvature_ : float
        The curvature that divides the step (see ``learning_rate``), computed
        on the training data of ``fit`` or the first ``partial_fit`` call.
    U_, V_ : ndarray of shape (n_neurons, n_lifted_features_), int8
        Quantized first layer, signs of the trained weights.
    alpha_ : ndarray of shape (n_neurons, n_scores)
        Second layer: the refitted weights, or without
        ``refit_output_layer`` the scale ``c_k`` on each neuron's class.
    intercept_ : ndarray of shape (n_scores,)
        The refitted output layer's intercept (zeros without
        ``refit_output_layer``), plus the linear term's constant.
    linear_coef_ : ndarray of shape (n_scores, n_features_in_)
        The linear term's coefficients on the original inputs (only where
        ``linear_term`` fits one; its constant is in ``intercept_``).
    linear_alpha_ : ndarray of shape (n_scores,)
        The linear term's ridge penalty per score: :class:`~sklearn.linear_model.Ridge`'s
        ``alpha`` on the standardized inputs, rows counted by ``sample_weight``
        (only where ``linear_term`` fits one).
    refit_loss_ : str or None
        The loss of the output layer's refit: "squared" (the ridge) or
        "logistic"; None without the refit.
    U_float_, V_float_ : ndarray of shape (n_neurons, n_lifted_features_)
        The trained real first layer.
    float_alpha_ : ndarray of shape (n_neurons, n_scores)
        The fixed second layer used in training (``1 / m_k``).
    scale_ : ndarray of shape (n_scores,)
        The quantization scales ``c_k`` (the second layer without
        ``refit_output_layer``).
    beta_ : float
        The first layer's L2 penalty the training used (``beta``, or what
        ``"auto"`` chose).
    objective_ : float
        Training objective of the quantized network with the SDP estimator's
        definition, ``loss + beta_ * p * sum_j ||alpha_j||_1`` (comparable
        with ``SDPQuantizedClassifier.lower_bound_``); with a linear term, the
        network's objective on the labels less the term.
    loss_curve_ : list of float
        Training loss per epoch (real network, with its penalty).
    loss_ : float
        The last entry of ``loss_curve_``.
    n_iter_ : int
    n_lifted_features_ : int
    training_time_ : float
        Seconds spent training (cumulative over partial_fit calls).
    device_ : str
        The device the network was trained on (``"cpu"``, ``"cuda:0"``).
    [shared-tight: data_min_:BackpropQuantizedClassifier data_max_]

    See Also
    --------
    SDPQuantizedClassifier : convex training of the same binary network.

    Notes
    -----
    Every epoch is a subtask of scikit-learn's callback API
    (``set_callbacks``), as for the other torch-trained estimators; the
    fitted estimator handed to a callback is the quantized network of that
    epoch's weights.

    Memory: training holds about 12 copies of the first layer
    (``2 * n_neurons * p`` numbers: the engine's buffers, the momentum, the
    best and starting points) plus ``6 * batch_size * n_neurons`` activations;
    ``fit`` estimates this up front and raises a ``MemoryError`` naming
    ``n_neurons`` when it exceeds the available memory. Scoring (the
    training objective and every prediction) runs in row batches whose
    intermediate arrays take at most about 64 MiB.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skquad import BackpropQuantizedClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_pipeline(
    ...     StandardScaler(),
    ...     BackpropQuantizedClassifier(n_neurons=100, random_state=0),
    ... )
    >>> clf = clf.fit(X, y)
    >>> clf[-1].U_.shape
    (100, 31)
    >>> bool(clf.score(X, y) > 0.8)
    True
    """

    _parameter_constraints = {
        "n_neurons": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions(set(LOSSES))],
        "beta": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "standardize": ["boolean"],
        "learning_rate_init": [Interval(Real, 0, None, closed="neither")],
        "learning_rate": [StrOptions(set(_SCHEDULES)), Interval(Real, 0, None, closed="neither")],
        "power_t": [Interval(Real, 0, None, closed="left")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "device": [str, torch.device],
        "dtype": [StrOptions({"float32", "float64"}), None],
        "n_threads": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "verbose": ["verbose"],
        "random_state": ["random_state"],
        "clip_inputs": ["boolean"],
        "refit_output_layer": ["boolean", StrOptions({"logistic", "auto"})],
        "linear_term": ["boolean", StrOptions({"auto"})],
    }

    def __init__(
        self,
        n_neurons=1000,
        *,
        loss="squared",
        beta=1e-4,
        fit_intercept=True,
        standardize=True,
        learning_rate_init=0.1,
        learning_rate="constant",
        power_t=0.5,
        momentum=0.9,
        batch_size=None,
        max_iter=200,
        tol=1e-4,
        n_iter_no_change=10,
        class_weight=None,
        device="auto",
        dtype=None,
        n_threads="auto",
        verbose=False,
        random_state=None,
        clip_inputs=True,
        refit_output_layer="auto",
        linear_term="auto",
    ):
        self.n_neurons = n_neurons
        self.loss = loss
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.standardize = standardize
        self.learning_rate_init = learning_rate_init
        self.learning_rate = learning_rate
        self.power_t = power_t
        self.momentum = momentum
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.class_weight = class_weight
        self.device = device
        self.dtype = dtype
        self.n_threads = n_threads
        self.verbose = verbose
        self.random_state = random_state
        self.clip_inputs = clip_inputs
        self.refit_output_layer = refit_output_layer
        self.linear_term = linear_term

    def _network_n_outputs(self):
        return self._n_scores

    def _fits_linear_term(self):
        """The shared rule (:class:`LinearTermMixin`), and none beside a logistic refit of the output
        layer, which fits the labels and has no offset per row for the term (True is refused)."""
        if self.refit_output_layer == "logistic":
            if self.linear_term is True:
                raise ValueError(
                    "linear_term=True needs an output layer refitted in the squared loss (the "
                    "network is fitted to the term's residuals), got refit_output_layer='logistic'. "
                    "Use linear_term='auto' or False, or refit_output_layer='auto' or True."
                )
            return False
        return super()._fits_linear_term()

    def _has_linear_term(self):
        return "linear_coef_" in vars(self)

    def _trains_on_real_targets(self):
        """Three or more classes with a linear term: the one-hot labels less the term, (n, k)."""
        return self._n_scores > 1 and self._fits_linear_term()

    def _score_offset(self):
        offset = getattr(self, "_linear_offset_", None)
        return 0.0 if offset is None else offset

    def _label_targets(self, y_encoded):
        """What the linear term fits: the ±1 labels (n,), or the one-hot labels (n, k)."""
        if self._n_scores == 1:
            return 2.0 * y_encoded - 1.0
        return (np.arange(self._n_scores) == np.asarray(y_encoded)[:, None]).astype(np.float64)

    def _make_trainer(self, X, sample_weight, resume=False, *, all_rows=False):
        if not resume:  # a new network: its linear term is fitted by _train (None: not yet)
            self._linear_offset_ = None
        return super()._make_trainer(X, sample_weight, resume=resume, all_rows=all_rows)

    def _train(self, X, y_encoded, sample_weight, *, epochs=None):
        if "_linear_offset_" in vars(self) and self._linear_offset_ is None:
            # The linear term first (on the rows of fit or the first partial_fit), the network on
            # its residuals (skquad.quantized._linear_term).
            self._linear_offset_ = self._fit_linear_term(X, self._label_targets(y_encoded), sample_weight)
        return super()._train(X, y_encoded, sample_weight, epochs=epochs)

    def _network_targets(self, X, y_encoded):
        """The labels (:func:`_class_targets`), or with a linear term their residuals (real)."""
        if not self._has_linear_term():
            return _class_targets(y_encoded, self._n_scores)
        labels = self._label_targets(y_encoded).reshape(len(X), -1)
        residuals = labels - self._linear_scores(X) - self._score_offset()
        return residuals[:, 0] if self._n_scores == 1 else residuals

    def _refit_candidates(self):
        """``refit_output_layer``'s refits: "logistic", or under "auto" with three or more classes
        and no linear term the squared (the ridge) and the logistic one, held-out rows choosing;
        else the ridge."""
        if self.refit_output_layer == "logistic":
            return ("logistic",)
        if self.refit_output_layer == "auto" and self._n_scores > 1 and not self._has_linear_term():
            return ("squared", "logistic")
        return ("squared",)

    def _refit_targets(self, targets):
        """The ±1 indicator of each score's class (RidgeClassifier's targets), ``(n, n_scores)``; with
        a linear term the network's real targets (its residuals)."""
        if self._n_scores == 1 or self._has_linear_term():
            return np.asarray(targets, dtype=np.float64).reshape(len(targets), -1)
        return np.where(np.arange(self._n_scores) == np.asarray(targets)[:, None], 1.0, -1.0)

    def _raw_scores(self, X):
        return self._with_linear_term(super()._raw_scores(X), X)

    def _completed_float_scores(self, scores, X):
        return self._with_linear_term(scores + np.asarray(self._score_offset(), dtype=scores.dtype), X)

    def _callback_targets(self, X, y_encoded):
        return self.classes_[y_encoded]

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One SGD epoch over ``(X, y)``, then quantize (keeps the optimizer state).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like of shape (n_classes,), default=None
            All classes; required on the first call, and when given later it
            must be the same (as in scikit-learn).
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        self : BackpropQuantizedClassifier
        """
        first_call = _check_partial_fit_first_call(self, classes)
        X, y_encoded, sample_weight = self._validate_training_data(
            X, y, sample_weight, reset=first_call, classes=classes if first_call else None
        )
        if first_call or not hasattr(self, "_trainer"):
            self._make_trainer(X, sample_weight, resume=not first_call)
        return self._train(X, y_encoded, sample_weight, epochs=1)
    @reads_fitted_state
    def float_decision_function(self, X):
        """Scores of the trained real-weight (unquantized) network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        return _decision_values(self._float_scores(X))

    @reads_fitted_state
    def float_predict(self, X):
        """Class labels predicted by the real-weight network.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return _predict_labels(self, self.float_decision_function, X)
