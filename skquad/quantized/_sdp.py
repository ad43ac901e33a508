"""SDPQuantizedClassifier: binary networks trained through a convex SDP (Bartan & Pilanci)."""

import contextlib
import functools
import hashlib
import math
import warnings
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._foundation._atomic import atomic_fit, reads_fitted_state
from .._dask_dispatch import is_dask_collection
from .._base import BaseQuadraticClassifier, BaseQuadraticEstimator, check_positive_int, dispatch_inputs
from .._foundation._docstrings import shared_docstring
from .._foundation._reporting import warn_user
from .._training import SubtaskReporter
from .._foundation._held_out import (
    HeldOutMisclassifications, can_hold_out, one_standard_error_choice,
    preferred_within_one_standard_error, search_candidate,
)
from .._foundation._rows import duplicate_groups
from .._foundation._runtime import runtime_policy, separate_calls_blas, spawn_generators
from ..convex.formulation import LOSSES, aggregate_samples, loss_value, network_objective
from ..convex.lifting import (
    InputLifting,
    collapse_replicas,
    export_quadratic_network,
)
from ..convex.path import auto_beta, default_beta
from ..convex.problem import encode_targets
from ..convex.relaxation import (
    ZERO_NETWORK_WARNING,
    relaxation_memory,
    solve_relaxation,
    solve_relaxation_statistics,
)
from ..convex.routes import COMPACT_SQUARED_WIDE_MAX_SIZE
from ..convex.sampling import (
    covariance_by_sdp,
    krivine_covariance,
    neuron_scale,
    normalized_block,
    sample_sign_pairs,
)
from ..convex.second_layer import (
    FactoredColumns,
    refit_from_statistics,
    refit_second_layer,
    statistics_objective,
)
from ..convex.statistics import neuron_svecs, svec_rows
from ._common import (
    _batched_network_scores,
    _check_activation,
    _check_memory,
    _check_solver,
    _class_targets,
    _decision_values,
    _held_out_refit_choice,
    _neurons_per_output,
    _predict_labels,
    _standardization,
    _standardization_from_moments,
)
from ._beta_search import auto_beta_fractions, held_out_beta
from ._linear_term import LinearTermMixin, rows_less_linear_term, statistics_less_linear_term

__all__ = ["SDPQuantizedClassifier"]


def _statistics_targets(y, n_outputs, classes, offset):
    """A block's SDP targets (n x K) for its lifted statistics: encoded labels, or values less ``offset``."""
    return encode_targets(_class_targets(y, n_outputs) if classes else y, n_outputs) - offset


class _SDPQuantizedNetwork(LinearTermMixin, BaseQuadraticEstimator):
    """The SDP network's fit, sampling, resampling and export, shared by the classifier and the regressor.

    A subclass names its targets through ``_sdp_n_outputs`` (the SDP's blocks), ``_sdp_targets`` (±1
    labels, class indices or real values) and ``_target_signature`` (what a warm start must match).
    """

    # Dask collections fit by sufficient statistics, squared loss (_fit_dask).
    _fits_dask_collections = True

    @property
    def _sample_weight_scale(self):
        """The objective is a weighted mean: only the ratios of sample_weight
        matter, except to ``beta="auto"``, whose rule reads their sum (the
        number of samples)."""
        return "absolute" if isinstance(getattr(self, "beta", None), str) else "ratio"

    # ------------------------------------------------------------------ fit
    def _lifting(self):
        return InputLifting(
            fit_intercept=bool(self.fit_intercept),
            levels=int(self.weight_levels),
            activation=_check_activation(self.activation),
            center=self.feature_mean_,
            scale=self.feature_scale_,
        )

    def _sdp_key(self, X, y, weight, solver):
        """Fingerprint of everything the SDP solution depends on."""
        digest = hashlib.sha256()
        for array in (X, y, weight):
            digest.update(np.ascontiguousarray(array).tobytes())
        for array in (self.feature_mean_, self.feature_scale_):
            digest.update(b"none" if array is None else array.tobytes())
        settings = (
            self.loss,
            self.beta_,
            (self.fit_intercept, self.weight_levels, _check_activation(self.activation)),
            solver,
            repr(sorted((self.solver_options or {}).items())),
            (float(self.tol), int(self.max_iter)),
            X.shape,
            self._target_signature(),
        )
        digest.update(repr(settings).encode())
        return digest.hexdigest()

    @dispatch_inputs
    @_fit_context(prefer_skip_nested_validation=True)
    @atomic_fit
    def fit(self, X, y, sample_weight=None):
        """Solve the SDP relaxation and sample a binary network from it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data.
        y : array-like of shape (n_samples,)
            Class labels.
        sample_weight : array-like of shape (n_samples,), default=None
            Per-sample weights (weight 2 is the same as repeating a sample).

        Returns
        -------
        self : SDPQuantizedClassifier

        Notes
        -----
        Dask collections fit with ``loss="squared"`` from sums of the lifted
        inputs over the row blocks, without gathering the rows
        (:ref:`larger_than_memory`).
        """
        if is_dask_collection(X, y, sample_weight):
            return self._fit_dask(X, y, sample_weight)
        X, y_validated, sample_weight = self._validate_training_data(X, y, sample_weight)
        # The one runtime policy (skquad._foundation._runtime): a bad or missing
        # device is refused here, before any work; the first layer is drawn
        # from its generator. The SDP computes in float64 whatever the input.
        policy = runtime_policy(
            X.dtype, dtype="float64", device=self.device, random_state=self.random_state
        )
        lifting = InputLifting(
            fit_intercept=bool(self.fit_intercept),
            levels=int(self.weight_levels),
            activation=_check_activation(self.activation),
        )
        n_outputs = self._sdp_n_outputs()
        solver = None if self.solver is None else _check_solver(
            self.solver, self.loss, lifting.n_lifted(X.shape[1]), n_outputs
        )
        _neurons_per_output(self.n_neurons, n_outputs)

        # The SDP sees only the weighted empirical distribution: merge duplicates.
        X_train, y_train, weight = aggregate_samples(X, y_validated, sample_weight)
        p, levels = lifting.n_lifted(X.shape[1]), int(self.weight_levels)
        self._check_network_memory(self.n_neurons, X_train.shape[0], p, n_outputs)
        _check_memory(
            relaxation_memory(X_train.shape[0], p, n_outputs, loss=self.loss, solver=solver,
                              solver_options=self.solver_options),
            *(("weight_levels", levels) if levels > 1 else ("n_features", X.shape[1])),
            f"the SDP relaxation on p = {p} lifted coordinates", advice="its matrices grow as "
            "p², p = (n_features + fit_intercept) * weight_levels: fewer levels or features do.",
        )
        self.feature_mean_, self.feature_scale_ = (
            _standardization(X_train, weight) if self.standardize else (None, None)
        )
        # Centred at their weighted mean where the model has a free output
        # intercept (_centres_targets): the SDP never pays for an offset.
        targets, offset = self._centred_targets(
            self._sdp_targets(y_train, n_outputs), weight, n_outputs
        )
        self._target_scale(targets, weight)  # refuses a y out of float64's range, before any work
        targets, offset = self._rows_less_linear_term(
            X_train, targets, weight, offset, n_samples=math.fsum(sample_weight)
        )
        # "auto" is a fraction of the data's beta_max (skquad.convex.path.default_beta).
        self.beta_ = self._resolve_beta(
            # fsum: exactly rounded, so the same for every row order and for
            # duplicates with halved weights (the fit is bit-for-bit invariant).
            X_train, targets, weight, n_outputs, n_samples=math.fsum(sample_weight)
        )
        self.beta_ = self._validated_beta(
            X, y_validated, sample_weight, self.beta_, p, policy.shuffle_generator
        )
        key = self._sdp_key(X_train, targets, weight, solver)
        # The solver sees targets / c and beta / c (see _target_scale) and
        # returns the solution in the user's units.
        target_scale = self._target_scale(targets, weight)

        if self.warm_start and getattr(self, "_sdp_key_", None) == key:
            self.solve_time_ = 0.0
        else:
            # A warm start (e.g. a path over beta) starts from the previous factors.
            previous = getattr(self, "_factor_start_", None) if self.warm_start else None
            with zero_network_allowed(self.beta == "auto"):
                solution = solve_relaxation(
                    self._lifting(),
                    X_train,
                    targets,
                    weight,
                    loss=self.loss,
                    beta=self.beta_,
                    n_outputs=n_outputs,
                    solver=solver,
                    solver_options=self.solver_options,
                    tol=float(self.tol),
                    max_iter=int(self.max_iter),
                    init=previous if solver is None else None,
                    callback=self._solver_chunk_hook(X, y),
                    verbose=int(self.verbose),
                    device=policy.device,
                    target_scale=target_scale,
                )
            self._publish_solution(solution)
            self._sdp_key_ = key
        self._update_covariance()
        self._training_data, self._training_statistics = (X_train, targets, weight), None
        # the rows the normalized weights stand for (the refit's held-out choice counts them)
        self._training_rows_ = math.fsum(sample_weight)
        self._target_scale_ = target_scale
        self._target_offset_ = offset
        return self._sample(self.n_neurons, policy.init_generator)

    def _publish_solution(self, solution):
        """The relaxed solution's attributes (``Q_``, ``rho_``, the certificate, the solver's record)."""
        self.Q_ = solution.Q
        self.Z_ = solution.Z.copy()
        self.rho_ = solution.rho
        self.lower_bound_ = solution.lower_bound
        self.relaxed_objective_ = solution.objective
        self.certified_gap_ = solution.gap
        self.solver_ = solution.solver
        self.solver_path_ = solution.solver_path or (solution.solver,)
        self.solver_status_ = solution.status
        self.solve_time_ = solution.solve_time
        self.n_iter_ = solution.n_iter
        self.n_lifted_features_ = solution.Q.shape[1] // 2
        self._factor_start_ = solution.warm_start_state()
        self._covariance_method = None
        # CVXPY's solvers, and the native interior-point methods for
        # small problems, run on the CPU whatever the device parameter.
        self.device_ = solution.info.get("device", "cpu")

    def _update_covariance(self):
        if self._covariance_method != self.covariance:
            self.covariance_ = np.stack(
                [self._covariance(normalized_block(Q, rho)) for Q, rho in zip(self.Q_, self.rho_)]
            )
            self._covariance_method = self.covariance

    def _fit_dask(self, X, y, sample_weight):
        """``fit`` on Dask collections: the squared loss from its sufficient statistics.

        Two passes on the workers (the inputs' moments, then the lifted statistics); the solve,
        the sampling and the refit then read only the statistics, on this process.
        """
        name = type(self).__name__
        if self.loss != "squared":
            raise ValueError(
                f"{name} fits Dask collections with loss='squared' only (its relaxation "
                "depends on the rows only through sums of the lifted inputs); got "
                f"loss={self.loss!r}. Use loss='squared', or fit on X[:n].compute()."
            )
        if self.refit_output_layer == "logistic":
            raise ValueError(
                f"{name} refits Dask collections' second layer in loss='squared' (from the "
                "lifted statistics); the logistic refit reads every row 500 times. Use "
                "refit_output_layer='auto' or True, or fit on X[:n].compute()."
            )
        if self.solver is not None or str(self.device) not in ("auto", "cpu"):
            raise ValueError(
                f"{name} fits Dask collections with solver=None and device='auto' or 'cpu' "
                f"(the compact solve on this process's CPU); got solver={self.solver!r}, "
                f"device={self.device!r}."
            )
        from ._dask import SDPBlocks, merge_folds

        blocks = SDPBlocks(self, X, y, sample_weight)
        try:
            reference = self._reference_offset(blocks)
            targets = functools.partial(
                _statistics_targets, n_outputs=self._sdp_n_outputs(), classes=blocks.classifier,
                offset=reference,
            )
            self._fit_from_sums(
                merge_folds(blocks.moments())[0],
                lambda lifting: blocks.statistics([lifting], targets)[0][0],
                reference, blocks.total_weight,
            )
            self._pass_times = tuple(blocks.pass_times)
            return self
        finally:
            blocks.release()

    def _reference_offset(self, blocks):
        """The offset the blocks' targets are lifted about: the weighted mean of a
        regressor's targets (so that shifting to any fold's mean cancels little), else 0."""
        n_outputs = self._sdp_n_outputs()
        mean = blocks.target_mean
        return np.zeros(n_outputs) if mean is None else np.asarray(mean, dtype=np.float64)

    def _standardized_lifting(self, moments):
        """Set the standardization from merged moments ``(weight, mean, squares, count)``; the lifting."""
        total, mean, squares, count = moments
        self.feature_mean_, self.feature_scale_ = (
            _standardization_from_moments(mean, squares / total, count)
            if self.standardize else (None, None)
        )
        return self._lifting()

    def _fit_from_sums(self, moments, statistics_of, reference, total_weight):
        """The fit from the inputs' merged weighted moments and ``statistics_of(lifting)``:
        the unnormalized lifted statistics of the targets less ``reference``."""
        policy = runtime_policy(
            np.dtype(np.float64), dtype="float64", device="cpu", random_state=self.random_state
        )
        n_outputs = self._sdp_n_outputs()
        _neurons_per_output(self.n_neurons, n_outputs)
        p = InputLifting(
            fit_intercept=bool(self.fit_intercept), levels=int(self.weight_levels),
            activation=_check_activation(self.activation),
        ).n_lifted(self.n_features_in_)
        if p * (p + 1) // 2 > COMPACT_SQUARED_WIDE_MAX_SIZE:
            raise ValueError(
                f"{type(self).__name__} fits Dask collections where the lifting's p (p + 1) / 2 "
                f"<= {COMPACT_SQUARED_WIDE_MAX_SIZE} (the compact solve of the statistics); "
                f"p = {p} here. Use fewer features or weight_levels."
            )
        self._check_network_memory(self.n_neurons, 0, p, n_outputs)
        statistics = statistics_of(self._standardized_lifting(moments)).normalized()
        offset = statistics.target_mean + reference if self._centres_targets() else np.zeros(n_outputs)
        statistics = statistics.shifted(offset - reference)
        statistics, offset = self._statistics_less_linear_term(statistics, offset, total_weight)
        if isinstance(self.beta, str):
            self.beta_max_ = statistics.beta_max()
            self.beta_ = auto_beta(self.beta_max_, self.loss, p, total_weight)
        else:
            vars(self).pop("beta_max_", None)
            self.beta_ = float(self.beta)
        scale = self._statistics_target_scale(statistics)
        solution = solve_relaxation_statistics(
            statistics, beta=self.beta_, tol=float(self.tol), target_scale=scale
        )
        self._publish_solution(solution)
        self._sdp_key_ = None
        self._update_covariance()
        self._training_data, self._training_statistics = None, statistics
        self._target_scale_, self._target_offset_ = scale, offset
        return self._sample(self.n_neurons, policy.init_generator)

    def _statistics_target_scale(self, statistics):
        """:meth:`_target_scale` from the (centred, normalized) statistics of a Dask fit."""
        return self._scale_of(
            math.sqrt(max(float(statistics.target_square.sum()), 0.0) / statistics.n_outputs))

    def _centres_targets(self):
        """Whether the model has a free output intercept (the targets are centred)."""
        return False

    def _refits_intercept(self):
        """Whether the refit of the second layer also fits the output intercept (unpenalised)."""
        return self._centres_targets()

    def _rows_less_linear_term(self, X, targets, weight, offset, *, n_samples):
        """``(targets less the linear term, offset plus its constant)`` where the model has one."""
        self._forget_linear_term()
        if not self._fits_linear_term():
            return targets, offset
        Z = self._lifting().standardized(X)
        targets, coef, intercept, alpha = rows_less_linear_term(
            Z, targets, weight, n_samples=n_samples,
        )
        return targets, offset + intercept - self._publish_linear_term(coef, alpha)

    def _statistics_less_linear_term(self, statistics, offset, n_samples):
        """:meth:`_rows_less_linear_term` on the lifted statistics of a Dask fit."""
        self._forget_linear_term()
        if not self._fits_linear_term():
            return statistics, offset
        statistics, coef, intercept, alpha = statistics_less_linear_term(
            statistics, self._lifting(), self.n_features_in_, n_samples=n_samples,
        )
        return statistics, offset + intercept - self._publish_linear_term(coef, alpha)

    def _centred_targets(self, targets, weight, n_outputs):
        """``(targets - offset, offset)``: the encoded targets' weighted mean where :meth:`_centres_targets`
        (with a free intercept the best one is the mean residual, as in scikit-learn), else zeros."""
        if not self._centres_targets():
            return targets, np.zeros(n_outputs)
        encoded = encode_targets(targets, n_outputs)
        offset = np.asarray(weight, dtype=np.float64) @ encoded / math.fsum(weight)
        centred = encoded - offset
        return (centred[:, 0] if n_outputs == 1 else centred), offset

    def _resolve_beta(self, X_train, targets, weight, n_outputs, *, n_samples):
        """The float ``beta`` given, or the ``(p / n)^2`` rule on the data (``"rule"``, and
        ``"auto"``'s start; ``n_samples``: the total weight)."""
        if not isinstance(self.beta, str):
            # A beta_max_ from an earlier "auto" fit would describe other data.
            vars(self).pop("beta_max_", None)
            return float(self.beta)
        beta, self.beta_max_ = default_beta(
            self._lifting(), X_train, targets, weight, loss=self.loss, n_outputs=n_outputs,
            n_samples=n_samples,
        )
        return beta

    def _validated_beta(self, X, y_validated, sample_weight, beta, n_lifted, generator):
        """"auto" with the squared loss: the fraction of ``beta_max_`` that held-out fifths of
        the rows choose among :func:`auto_beta_fractions` (:func:`held_out_beta`); else ``beta``,
        also where the rows or the size leave no choice (the hinge and logistic losses keep the
        ``(p / n)^2`` rule). The candidates' seed is drawn from ``generator``, the fit's second
        stream, so that the first layer's draw is that of ``resample``."""
        if self.beta != "auto" or self.loss != "squared" or not self.beta_max_ > 0:
            return beta
        betas = self.beta_max_ * auto_beta_fractions(
            self.loss, n_lifted, beta / self.beta_max_, n_rows=X.shape[0], n_blocks=self._sdp_n_outputs()
        )
        if len(betas) < 2 or not can_hold_out(sample_weight):
            return beta  # the size or the rows leave no choice
        with_term = self._fits_linear_term()
        if with_term:
            # The most penalised candidate is the term alone, a model in its own right:
            # one standard error towards it.
            choice = one_standard_error_choice
        else:
            # At beta_max the model is its offset alone: without a linear term a constant, and
            # the strongest penalties leave a near-constant network, no safer a model. The rule's
            # beta is a candidate, kept unless another's held-out error is lower by more than
            # one standard error.
            betas = betas[(betas < self.beta_max_) & ~np.isclose(betas, beta, rtol=1e-9, atol=0.0)]
            betas = np.sort(np.append(betas, beta))[::-1]
            choice = functools.partial(
                preferred_within_one_standard_error, preferred=int(np.flatnonzero(betas == beta)[0])
            )
        # The distinct rows, their weights summed: row order and duplicates choose alike.
        rows, weight = duplicate_groups(X, y_validated, sample_weight)
        X, y = X[rows], self._held_out_targets(y_validated[rows])
        candidate = search_candidate(
            self, random_state=int(torch.randint(np.iinfo(np.int32).max, (1,), generator=generator)),
            verbose=0, **self._held_out_params(),
        )
        chosen = held_out_beta(
            candidate, X, y, weight, betas, self._held_out_scorer(y, weight), choice=choice
        )
        return beta if chosen is None else chosen

    def _target_scale(self, targets, weight):
        """``c``: the power of two (exact to divide by) nearest the targets' weighted root mean square;
        1 for the hinge and logistic losses, whose targets are labels.

        The SDP and the refit solve for ``y / c`` and ``beta / c``, a loss of order 1 as the
        solvers' tolerances assume, and are mapped back exactly (``rescale_solution``). The squared
        loss's targets are centred and less a linear term, so a classifier's too can be far from
        order 1 (under extreme class weights their weighted root mean square can be 1e-3).
        """
        targets = np.asarray(targets, dtype=np.float64)
        largest = float(np.max(np.abs(targets)))
        if largest == 0.0:
            return 1.0
        # Scaled by the largest magnitude first, so the squares neither
        # overflow nor underflow.
        unit = targets.reshape(len(targets), -1) / largest
        return self._scale_of(
            largest * np.sqrt(weight @ (unit**2).sum(axis=1) / weight.sum() / unit.shape[1])
        )

    def _scale_of(self, rms):
        """The rule of :meth:`_target_scale` for targets of root mean square ``rms``: 1 for labels
        (the hinge and logistic losses) or targets all zero, else the power of two nearest
        ``rms``, refused outside float64's range for its square."""
        if self.loss != "squared" or rms == 0.0:
            return 1.0
        exponent = int(np.round(np.log2(rms)))
        # c^2 = 2^(2 exponent) must be a normal float64 (2^-1022 to 2^1023).
        if not -1022 <= 2 * exponent <= 1023:
            raise ValueError(
                f"y has a root mean square of {rms:.3g}: its squared loss, the "
                f"objective and certificate of {type(self).__name__} (of order "
                f"{rms:.3g}^2), is outside float64's range. Rescale y (e.g. by a "
                "power of ten) and the predictions back."
            )
        return float(np.ldexp(1.0, exponent))

    def _solver_chunk_hook(self, X, y):
        """The native solver's per-chunk hook: one callback subtask per chunk, which may stop the
        solve (the certificate holds for the point reached); None without a callback, so that
        the solver may run a many-class problem's blocks in parallel."""
        context = getattr(self, "_callback_fit_ctx", None)
        if context is None or not getattr(self, "_skl_callbacks", None):
            return None
        reporter = SubtaskReporter(
            context, estimator=self, task_name="solver-chunk", X=X, y=y
        )

        def on_chunk(info):
            reporter.begin()
            return reporter.end()

        return on_chunk

    def _covariance(self, Q_normalized):
        if self.covariance == "krivine":
            return krivine_covariance(Q_normalized)
        p = Q_normalized.shape[0] // 2
        return covariance_by_sdp(
            Q_normalized[:p, p:], solver=self.solver_, solver_options=self.solver_options
        )

    def _callback_max_subtasks(self, method_name):
        """Unknown (None): the solver reports one subtask per chunk until it certifies ``tol``."""
        return None

    def _penalty_beta(self):
        """The ``beta`` of the fitted objective (``beta_``: the value ``fit`` used)."""
        return float(self.beta_)

    def _check_network_memory(self, n_neurons, n_unique, n_lifted, n_outputs):
        """Refuse, before the solve, a width whose sampling and refit cannot fit in memory."""
        # Gaussian draws (float64, 2p per neuron), the int8 signs, the second
        # layer; the refit adds the neurons' outputs on the training rows.
        required = 16.0 * n_neurons * n_lifted + 4.0 * n_neurons * n_lifted
        required += 8.0 * n_neurons * n_outputs
        if self.refit_output_layer:
            required += 8.0 * n_neurons * n_unique
        _check_memory(required, "n_neurons", n_neurons, "sampling and refitting the network")

    def _sample(self, n_neurons, generator):
        """Algorithm 1, step 3 (signs from the covariances, one scale per class), then the refit;
        ``generator`` (the runtime policy's CPU generator) draws every block's signs in turn."""
        n_outputs = self.rho_.shape[0]
        # Models fitted before the target scaling have none: scale 1.
        scale = getattr(self, "_target_scale_", 1.0)
        counts = _neurons_per_output(n_neurons, n_outputs)
        U_blocks, V_blocks = [], []
        alpha = np.zeros((n_neurons, n_outputs))
        neuron_class = np.repeat(np.arange(n_outputs), counts)
        for k, count in enumerate(counts):
            U, V = sample_sign_pairs(self.covariance_[k], int(count), generator)
            U_blocks.append(U)
            V_blocks.append(V)
            alpha[neuron_class == k, k] = neuron_scale(self.rho_[k] / scale, count)
        U, V = np.vstack(U_blocks), np.vstack(V_blocks)

        # The network is scored and refitted on the scaled problem (targets
        # / c, beta / c: see _target_scale), then mapped back: alpha * c,
        # objectives * c^2.
        beta, p = self._penalty_beta() / scale, self.n_lifted_features_
        if self._training_data is None:
            sampled_objective, objective, alpha, intercept = self._statistics_refit(
                U, V, alpha, beta, p
            )
        else:
            sampled_objective, objective, alpha, intercept = self._rows_refit(
                U, V, alpha, beta, p, scale
            )
        self.U_, self.V_, self.alpha_ = U, V, alpha * scale
        # The targets' mean (the certified models' offset) plus the refit's own.
        self.intercept_ = getattr(self, "_target_offset_", 0.0) + intercept * scale
        self.neuron_class_ = neuron_class
        self.n_neurons_ = int(n_neurons)
        self.sampled_objective_ = sampled_objective * scale**2
        self.objective_ = objective * scale**2
        self.relaxed_objective_gap_ = self.objective_ - self.lower_bound_
        self._warn_if_far_from_bound()
        return self

    def _refit_candidates(self):
        """The losses the second layer's refit may take, the SDP's own first.

        ``refit_output_layer="logistic"``: the logistic loss. ``"auto"`` with the squared loss
        and three or more classes, whose one-vs-rest squared scores can mask a class: the
        squared and the logistic loss, held-out rows choosing (:meth:`_held_out_refit_loss`).
        Else, and in a Dask fit (which refits from the lifted statistics), ``loss``.
        """
        choice = self.refit_output_layer
        if self._training_data is None or choice not in ("auto", "logistic"):
            return (self.loss,)
        if choice == "logistic":
            return ("logistic",)
        masking = self.loss == "squared" and len(getattr(self, "classes_", ())) > 2
        return (self.loss, "logistic") if masking else (self.loss,)

    def _rows_refit(self, U, V, alpha, beta, p, scale):
        """``(sampled objective, objective, alpha, intercept)`` of the draw on the training rows;
        sets ``refit_loss_``."""
        X_train = self._training_data[0]
        # The refit is a sequence of products with Python work between them, the largest the
        # hidden outputs' (4 n p m flops): the runtime's separate-calls thread rule for all of it
        # (a BLAS thread that joined a call spins on after it, burning a core).
        with separate_calls_blas(4.0 * X_train.shape[0] * U.shape[1] * U.shape[0]):
            return self._rows_refit_on_threads(U, V, alpha, beta, p, scale)

    def _rows_refit_on_threads(self, U, V, alpha, beta, p, scale):
        """:meth:`_rows_refit` inside its thread decision."""
        X_train, targets, weight = self._training_data
        lifting = self._lifting()
        if self.refit_output_layer:
            outputs = lifting.bilinear(X_train, U, V)
            scores = outputs @ alpha
        else:
            scores = _batched_network_scores(lifting, X_train, U, V, alpha)
        scaled_targets = targets / scale
        sampled = network_objective(scores, scaled_targets, weight, self.loss, alpha, beta, p)
        if not self.refit_output_layer:
            self.refit_loss_ = None
            return sampled, sampled, alpha, np.zeros(alpha.shape[1])
        problem = (outputs, U, V, scaled_targets, weight, alpha, beta, p)
        candidates = self._refit_candidates()
        self.refit_loss_ = candidates[0] if len(candidates) == 1 else self._held_out_refit_loss(
            candidates, problem, np.atleast_1d(self._target_offset_) / scale)
        return (sampled, *self._refit_rows(self.refit_loss_, problem))

    def _held_out_refit_loss(self, candidates, problem, offset):
        """The loss of ``candidates`` whose refit classifies held-out rows best
        (:func:`_held_out_refit_choice`); ``offset``: the scores' fixed part (the intercept the
        refits keep)."""
        outputs, weight = problem[0], problem[4]

        def held_out_scores(loss, train, held_out):
            _, alpha, intercept = self._refit_rows(loss, problem, train)
            return outputs[held_out] @ alpha + intercept + offset

        return _held_out_refit_choice(
            self._training_data[0], weight * getattr(self, "_training_rows_", len(weight)),
            np.argmax(problem[3], axis=1), candidates, held_out_scores)

    def _refit_rows(self, loss, problem, rows=None):
        """``(objective, alpha, intercept)`` of the refit in ``loss`` on the training rows
        ``rows`` (None: all), their weights normalized as the SDP's."""
        outputs, U, V, targets, weight, alpha, beta, p = problem
        X = self._training_data[0]
        if rows is not None:
            X, outputs, targets, weight = X[rows], outputs[rows], targets[rows], weight[rows]
            weight = weight / weight.sum()
        if loss != self.loss:
            return self._logistic_refit(X, outputs, U, V, targets, weight, alpha, beta, p)
        lifting = self._lifting()
        refit = refit_second_layer(
            outputs, targets, weight, loss=self.loss, beta=beta, n_lifted=p,
            alpha=alpha, rank_bound=p * (p + 1) // 2,  # outputs are linear in svec(L(x))
            span=lambda: lifting.monomials(X),  # and in these products
            fit_intercept=self._refits_intercept(),
        )
        return refit.objective, refit.alpha, refit.intercept

    def _logistic_refit(self, X, outputs, U, V, targets, weight, alpha, beta, p):
        """``(objective, alpha, intercept)`` of the logistic refit on rows ``X``: the labels' scores
        ``outputs @ alpha + offset`` (the intercept stays the SDP's offset, so the network stays
        in the class ``lower_bound_`` certifies), the objective in the SDP's ``loss``."""
        # The targets are the scaled problem's (targets / c, see _target_scale): the labels are
        # c times them plus the offset, and the logistic layer is returned divided by c, as the
        # squared refit's is.
        scale = getattr(self, "_target_scale_", 1.0)
        offset = np.atleast_1d(self._target_offset_)
        labels = targets * scale + (offset[0] if targets.ndim == 1 else offset)
        # The outputs are Φ S exactly (q = p (p + 1) / 2 lifted coordinates): through the
        # factors where that takes fewer flops, Φ formed only then.
        (n, m), q = outputs.shape, p * (p + 1) // 2
        columns = outputs
        if q * (n + m) < n * m:
            lifting = self._lifting()
            rows = svec_rows(lifting.features(X), lifting.activation if lifting.polynomial else None)
            columns = FactoredColumns(rows, neuron_svecs(U, V))
        refit = refit_second_layer(
            columns, labels, weight, loss="logistic", beta=beta * scale, n_lifted=p, alpha=alpha * scale,
            score_offset=offset,
        )
        alpha, intercept = refit.alpha / scale, refit.intercept / scale
        objective = network_objective(outputs @ alpha, targets, weight, self.loss, alpha, beta, p)
        return objective, alpha, intercept

    def _statistics_refit(self, U, V, alpha, beta, p):
        """:meth:`_rows_refit` from the lifted statistics of a Dask fit (outputs ``Φ S``)."""
        statistics = self._training_statistics.scaled(self._target_scale_)
        S = neuron_svecs(U, V)
        sampled = statistics_objective(S, statistics, alpha, beta, p)
        self.refit_loss_ = self.loss if self.refit_output_layer else None
        if not self.refit_output_layer:
            return sampled, sampled, alpha, np.zeros(alpha.shape[1])
        refit = refit_from_statistics(
            S, statistics, beta=beta, n_lifted=p, alpha=alpha,
            fit_intercept=self._refits_intercept(),
        )
        return sampled, refit.objective, refit.alpha, refit.intercept

    def _warn_if_far_from_bound(self):
        """Warn when the network is barely better than the zero network, or worse.

        "Far" is measured against the bound's distance to the zero network's objective; the
        sampling error decays like ``1 / n_neurons``, hence the width suggested. None after a
        refit in another loss (``refit_loss_``), which the SDP's does not measure.
        """
        if getattr(self, "refit_loss_", self.loss) not in (None, self.loss):
            return
        if self._training_data is None:
            zero = float(self._training_statistics.target_square.sum())
        else:
            targets, weight = self._training_data[1:]
            zero = loss_value(
                np.zeros((len(targets), self.rho_.shape[0])), targets, weight, self.loss,
                self.rho_.shape[0],
            )
        scale = zero - self.lower_bound_
        gap = self.objective_ - self.lower_bound_
        # Where the best network improves on the zero network by under 1 %
        # (beta near the zero network's threshold) no width is worth adding.
        if scale <= 0.01 * abs(zero) or gap <= 0.5 * scale:
            return
        sampled_gap = max(self.sampled_objective_ - self.lower_bound_, gap)
        suggested = int(np.ceil(self.n_neurons_ * sampled_gap / (0.1 * scale)))
        warn_user(
            f"The network with n_neurons={self.n_neurons_} is far from the SDP's "
            f"lower bound: its training objective {self.objective_:.4g} is more "
            f"than half-way from the bound {self.lower_bound_:.4g} to the zero "
            f"network's {zero:.4g}. The sampling error decays like 1/n_neurons; "
            f"about {suggested} neurons would bring it within 10 % of that "
            "distance (resample(n_neurons) draws a wider network without a new "
            "solve).",
            UserWarning,
        )

    @atomic_fit
    def resample(self, n_neurons=None, random_state=None):
        """Draw a new network from the stored SDP solution (no new solve).

        Parameters
        ----------
        n_neurons : int, default=None
            Width of the new network; None keeps ``n_neurons_``. The
            ``n_neurons`` parameter is left unchanged; ``n_neurons_`` records
            the current width.
        random_state : int, RandomState instance or None, default=None
            Seed of the new draw.

        Returns
        -------
        self : SDPQuantizedClassifier
            With new ``U_``, ``V_``, ``alpha_``, ``objective_`` (the second
            layer refitted when ``refit_output_layer=True``).
        """
        check_is_fitted(self, "covariance_")
        n_neurons = self.n_neurons_ if n_neurons is None else check_positive_int(n_neurons, "n_neurons")
        rows = getattr(self, "_training_data", None)
        if rows is None and getattr(self, "_training_statistics", None) is None:
            raise ValueError(
                "resample needs the training data, which drop_training_data() "
                "removed; call fit again."
            )
        self._check_network_memory(
            n_neurons, 0 if rows is None else rows[0].shape[0], self.n_lifted_features_,
            self.rho_.shape[0],
        )
        # The runtime policy's rule for the draw: the generator seeded from
        # random_state, as at fit.
        (generator,) = spawn_generators(random_state, 1)
        return self._sample(n_neurons, generator)

    @atomic_fit
    def drop_training_data(self):
        """Forget the stored training data (smaller pickles); predicting is unaffected.

        The fitted model keeps the deduplicated, weighted training rows so
        that :meth:`resample` can score and refit a new draw. After this call
        :meth:`resample` raises, and ``warm_start`` still recognises the same
        data (it stores only a fingerprint). Atomic like a fit: it waits for
        a running ``fit`` or ``resample``, which would otherwise publish the
        rows again.

        Returns
        -------
        self : SDPQuantizedClassifier
        """
        check_is_fitted(self, "covariance_")
        self._training_data = self._training_statistics = None
        return self

    # -------------------------------------------------------------- predict
    def _raw_scores(self, X):
        scores = _batched_network_scores(self._lifting(), X, self.U_, self.V_, self.alpha_)
        return scores + getattr(self, "intercept_", 0.0) + self._linear_scores(X)

    def _relaxed_scores(self, X):
        """``offset + 2 <L(x), Z_k>`` for every block, shape (n_samples, n_outputs)."""
        X = self._validate_predict_data(X)
        lifting = self._lifting()
        scores = np.column_stack([2.0 * lifting.inner(X, Z) for Z in self.Z_])
        return scores + getattr(self, "_target_offset_", 0.0) + self._linear_scores(X)

    @reads_fitted_state
    def integer_weights(self):
        """The first layer as multi-level integer weights on the original features.

        Returns
        -------
        weights : dict
            ``"U"``, ``"V"``: int64 arrays of shape (n_neurons_, n_features_in_)
            with values in ``{-M, -M+2, ..., M}`` (M = ``weight_levels``);
            ``"U_bias"``, ``"V_bias"``: the weights of the constant input
            (None without ``fit_intercept``); ``"U_lift"``, ``"V_lift"``: the
            ±1 polynomial-lifting coordinates (None for the bilinear
            activation). With ``t_u = x @ U[j] + U_bias[j]`` (and ``t_v``
            alike), neuron ``j`` computes ``t_u * t_v`` (bilinear) or
            ``a t_u t_v + (b/2)(V_lift[j] t_u + U_lift[j] t_v) + c U_lift[j] V_lift[j]``
            (polynomial ``(a, b, c)``; equal to ``sigma(t_u)`` when ``u = v``).
        """
        check_is_fitted(self, "U_")
        lifting = self._lifting()
        result = {}
        for name, signs in (("U", self.U_), ("V", self.V_)):
            lift = None
            if lifting.polynomial:
                signs, lift = signs[:, :-1], signs[:, -1].astype(np.int64)
            collapsed = collapse_replicas(signs, lifting.levels)
            bias = None
            if lifting.fit_intercept:
                collapsed, bias = collapsed[:, :-1], collapsed[:, -1]
            result.update({name: collapsed, f"{name}_bias": bias, f"{name}_lift": lift})
        return result

    @reads_fitted_state
    def export_quadratic_network(self):
        """The network as ``3 n_neurons`` quadratic-activation neurons (Appendix C).

        Returns
        -------
        network : :class:`skquad.convex.QuadraticNetwork`
            ``network.scores(X)`` equals ``decision_function(X)`` (as a
            column) on inputs inside the training range; it is the model
            itself, so with ``clip_inputs`` clip ``X`` to ``[data_min_,
            data_max_]`` first to reproduce the predictions elsewhere;
            ``network.weights`` are in {-1, 0, 1} on the lifted
            input and ``network.integer_weights()`` gives the integer weights
            and biases on the original features.
        """
        check_is_fitted(self, "U_")
        return export_quadratic_network(
            self.U_, self.V_, self.alpha_, self._lifting(), intercept=getattr(self, "intercept_", None),
            linear=getattr(self, "linear_coef_", None),
        )

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags



@shared_docstring
class SDPQuantizedClassifier(_SDPQuantizedNetwork, BaseQuadraticClassifier):
    """Binary-weight bilinear network trained by convex SDP relaxation and sampling.

    The model is the two-layer network of Bartan & Pilanci with first-layer weights
    in {-1, +1} and a bilinear activation::

        f(x) = sum_j alpha_j (z^T u_j) (z^T v_j),   z = [x, 1],  u_j, v_j in {-1, +1}^p

    (one such sum per class when there are more than two classes), beside a
    linear term ``x^T w + b`` on two classes with the squared loss
    (``linear_term``). Training
    solves the convex SDP relaxation of the NP-hard problem
    ``min loss(f) + beta * p * sum_j |alpha_j|`` (by default with a native
    factor solver that never forms the lifted matrices), certifies a lower
    bound ``lower_bound_`` on the objective of *every* network of this form
    from the solution (Bartan & Pilanci's duality), then draws ``n_neurons`` sign vectors from a Gaussian whose
    covariance is shaped from the relaxed solution (the paper's Algorithm 1):
    as ``n_neurons`` grows the sampled network's objective approaches the
    bound. Algorithm 1 gives every neuron of a class one shared second-layer
    weight; with ``refit_output_layer`` (beyond the paper) the second layer
    is then refitted as the convex problem it is once the binary first layer
    is fixed (``skquad.convex.second_layer``), which keeps ``lower_bound_``
    valid. In the SDP's loss (``refit_output_layer=True``) the refit can only
    lower ``objective_``; by default a problem of three or more classes is
    refitted in the multinomial logistic loss instead, whose scores do not
    mask a class as the squared loss's one-vs-rest scores can. A network far
    above the bound gets a warning that says how many neurons would help.

    Parameters
    ----------
    n_neurons : int, default=1000
        Hidden neurons ``m`` of the sampled network (split evenly over the
        classes when there are more than two). Changing it needs no new SDP
        solve: see :meth:`resample` and ``warm_start``.
    loss : {"squared", "hinge", "logistic"}, default="squared"
        Training loss on the network's scores, a sample-weighted mean. Binary
        problems use labels -1 / +1 (+1 for ``classes_[1]``) and one score;
        with ``K > 2`` classes there is one score per class and the losses are
        the squared error to the one-hot labels, the Crammer-Singer hinge and
        the multinomial logistic loss. "squared" solves fastest, "logistic"
        gives the most meaningful ``predict_proba``.
    beta : float, "auto" or "rule", default="auto"
        Regularization ``beta``: the objective penalizes
        ``beta * p * sum_j ||alpha_j||_1`` (the paper's ``beta d sum |alpha_j|``,
        with ``p`` the length of the binary weight vectors). In the SDP this is
        ``2 * beta * p * rho``; see ``skquad.convex.formulation`` for why
        the factor 2 (the paper writes ``beta * d * rho``, a looser bound).
        Larger values give smaller second-layer weights; too large a value
        gives the zero network. ``beta`` only matters relative to
        ``beta_max_``, the smallest ``beta`` at which the zero network solves
        the relaxation (computed through the fit's own lifting,
        standardization, loss, sample weights and linear term, as glmnet
        scales its ``lambda`` from ``lambda_max``).

        "rule" is :func:`skquad.convex.default_beta`'s rule:
        ``beta_max_ * (p / n)^2`` with the fraction clipped to
        ``[1e-3, 0.05]`` (``[1e-4, 0.05]`` for the squared loss with
        ``p (p + 1) / 2 <= 300``, solved by the compact interior point at a
        cost that does not depend on ``beta``), ``n`` the sum of the sample
        weights: one solve, no search.

        "auto", with the squared loss and at least 20 rows: one of the
        fractions 1, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3 and 1e-4 of
        ``beta_max_`` (down to the rule's fraction where a smaller one would
        cost more to solve), chosen on held-out rows by misclassification:
        fifths of the rows are held out in turn, as many as it takes to
        score 100 rows. With a linear term (two classes, by default) the
        largest fraction whose held-out error is within one standard error
        of the smallest is taken: at 1 the network is zero and the model is
        its linear term, the choice where no network classifies held-out
        rows better. Without one (three or more classes, by default) 1 is
        not tried (the model would be a constant), the strongest penalties
        leave a near-constant network, no safer a model, and so the rule's
        own ``beta`` is a candidate too, kept unless another's held-out
        error is lower by more than one standard error. The noise in the
        labels sets how much of ``beta_max_`` the data can use, which the
        rule cannot see. Each fifth costs up to eight solves on 80 % of the
        rows; the candidates refit the second layer by least squares (the
        logistic refit is made once, at the chosen fraction). With the
        hinge and logistic losses, beyond 100 lifted coordinates or
        ``n p^2`` times the classes' blocks above 1e8, where solves are
        costly, on Dask collections and where a training fifth lacks a class, "auto"
        is the rule. A float is used as given. The value used is ``beta_``.
    fit_intercept : bool, default=True
        Append a constant input 1 to every sample, so that each neuron is
        ``(x^T u + u_0)(x^T v + v_0)`` with its own binary biases
        ``u_0, v_0`` (or multi-level ones with ``weight_levels > 1``).
        The constant input has scale 1, matched to standardized features.
        With the squared loss, also an unpenalised output intercept per
        score (``intercept_``), as :class:`~sklearn.linear_model.RidgeClassifier`
        has: the relaxation is solved on the encoded labels less their
        weighted mean ``ybar`` and ``intercept_`` is ``ybar``, so the
        network never pays its penalty for the classes' proportions.
        ``lower_bound_`` certifies the networks with that intercept, the
        returned one among them (the refit of the second layer keeps it).
        The hinge and logistic losses have no such exact centring and keep
        their intercept in the penalised quadratic forms.
    linear_term : "auto" or bool, default="auto"
        With ``fit_intercept=True`` and the squared loss, fit a linear term
        ``x·w + b`` to the ±1 labels (or the one-hot labels of more classes)
        first and the network to its residuals. A ±1 first layer weighs
        every input alike in each neuron's linear part, so a mostly linear
        boundary costs the network as much penalty as a quadratic one and is
        fitted poorly on few rows. The term is ridge on the standardized
        inputs, its penalty chosen per score by generalized
        cross-validation; the model adds ``X @ linear_coef_.T`` to the
        network's scores, the term's constant to ``intercept_``.
        "auto": a term on two classes (one score) and none on more, whose
        one-vs-rest linear scores can mask a class as the squared loss's
        network scores can; none with the hinge and logistic losses, whose
        relaxations carry no offset per row (True is refused with them).
        False: the network alone, as in the paper.
    standardize : bool, default=True
        Standardize the features inside the model, ``(x - feature_mean_) /
        feature_scale_`` with (sample-weighted) training statistics, before the
        intercept column is appended. The sampled network's error grows with
        ``||x||^2`` (Bartan & Pilanci, Theorem 3), so unscaled inputs would need far
        more neurons. The binary weights act on the standardized features.
    weight_levels : int, default=1
        ``M``: first-layer weights take the ``M + 1`` values
        ``{-M, -M+2, ..., M}`` (1 = binary). Implemented by replicating every
        input ``M`` times (Bartan & Pilanci, section 2.2): ``U_`` and ``V_`` stay
        binary on the replicated input; :meth:`integer_weights` gives the
        multi-level weights on the original features. The SDP grows with
        ``(M * n_features)^2``.
    activation : "bilinear" or tuple of 3 floats, default="bilinear"
        ``"bilinear"``: neurons ``(z^T u)(z^T v)``. A tuple ``(a, b, c)``:
        the degree-2 polynomial activation ``sigma(t) = a t^2 + b t + c``
        through the lifting of Bartan & Pilanci, sections 2.3-2.4 (one extra binary
        coordinate per weight vector; a neuron with ``u = v`` computes
        ``sigma(z^T u)`` exactly).
    solver : {None, "SCS", "CLARABEL"}, default=None
        How the SDP relaxation is solved. None: the native solvers, chosen
        by size (as ``Ridge(solver="auto")`` does), each stopping when the
        certified relative gap is at most ``tol``. They are the rows of
        :data:`skquad.convex.ROUTES` (:ref:`solver-routes`), tried in this
        order, the first that applies solving (``p`` the lifted width,
        ``q = p (p + 1) / 2``, ``n`` the distinct rows):

        1. ``"hinge_dual"``: the binary hinge loss with ``n <= 2000``,
           ``p <= 400`` and ``beta > 0``, by a barrier method on its exact
           dual (CPU).
        2. ``"compact"``: the compact cone form, solved exactly by Clarabel's
           interior point (CPU): the squared loss with ``q <= 300`` (or
           ``q <= 1000`` with ``n >= 3 q`` and ``n q <= 2^25``), the hinge
           loss and the logistic loss with three or more classes with
           ``n_scores q <= 600`` and at most 10^6 nonzeros in their margin
           rows. Never the binary logistic loss.
        3. ``"squared_dual"``: the squared loss's blocks with ``beta > 0``
           on ``n <= 1000`` rows and ``p <= 400`` (or more rows where its
           Newton steps are the cheaper), by a barrier method on the
           block's exact dual (CPU). Below ``p = 40`` the numpy factor
           solver runs 500 iterations first, and ``solver_`` stays
           ``"native_numpy"`` where they reach ``tol``.
        4. ``"native_numpy"``: the squared loss's other blocks (bilinear
           ``activation``, on the CPU), by Burer-Monteiro factors with the
           L-BFGS driver's numpy engine.
        5. ``"native"``: everything else (the binary logistic loss, larger
           hinge and many-class logistic problems, a polynomial
           ``activation``'s squared-loss blocks past the dual's sizes, and
           every problem on a GPU), by the torch factor solver
           (:func:`skquad.convex.solve_factored`: L-BFGS, memory
           ``O(n p + p r)``, no lifted matrices formed).

        A route that stops short of ``tol`` is continued by the factor
        solvers from its point and bound (``solver_path_`` lists the
        stages). ``solver_options`` other than ``time_limit`` ask for the
        factor solvers (rows 4 and 5). A CVXPY SDP solver name keeps the
        reference formulation (it forms an ``n x p^2`` design and a
        ``2 p x 2 p`` conic variable per class, so only small problems):
        "CLARABEL" (interior point, accurate) or "SCS" (first order).
        Whatever the solver, ``lower_bound_`` is a certified bound.
    solver_options : dict, default=None
        Native solver: any of ``rank`` (initial factor columns per class,
        default ``ceil(sqrt(2 p))``), ``max_rank``, ``chunk_size`` (L-BFGS
        iterations between certificates, 50), ``history_size`` (30),
        ``hinge_sigma`` (proximal step of the hinge loss, 10),
        ``time_limit`` (seconds; the solve then stops with its current point,
        the best certified bound and a ``ConvergenceWarning`` that gives the
        gap; default None). CVXPY
        solvers: keyword arguments of ``cvxpy.Problem.solve``, e.g.
        ``{"max_iters": 20000, "eps_abs": 1e-6}`` for SCS.
    tol : float, default=1e-4
        Relative certified gap ``(relaxed_objective_ - lower_bound_) /
        relaxed_objective_`` at which the native solver stops. A solve that
        ends above it (either solver) gives a ``ConvergenceWarning``.
    max_iter : int, default=3000
        Largest number of L-BFGS iterations of the native solver.
    verbose : int, default=0
        When positive, the native solver prints its progress after every
        chunk of iterations: iteration, relaxed objective, certified lower
        bound, relative gap, rank and elapsed time.
    device : "auto", "cpu", "cuda" or torch.device, default="auto"
        Where the native solver computes ("auto" = the CPU). The sampled
        network and its predictions are numpy, on the CPU.
    covariance : {"krivine", "sdp"}, default="krivine"
        How the covariance step (Bartan & Pilanci, eq. 27) is done: "krivine" uses
        its exact closed-form solution (two elementwise functions), "sdp"
        solves eq. 27 as the paper does, as a second small convex problem.
    refit_output_layer : bool, "logistic" or "auto", default="auto"
        After sampling the first layer, refit the second layer ``alpha`` (one
        weight per neuron and class) from Algorithm 1's shared weights, a
        convex, L1-penalised linear model on the neurons' outputs (see
        ``skquad.convex.second_layer``). True: by the network's own objective
        ``loss + beta * p * sum_j ||alpha_j||_1``, which never goes up; the
        network needs far fewer neurons for the same accuracy. "logistic":
        by the logistic loss (multinomial with three or more classes) with
        the same penalty, the output intercept kept at ``intercept_`` so
        that the network stays in the class ``lower_bound_`` bounds; its
        scores are then the logits of ``predict_proba``. "auto": with the
        squared loss and three or more classes, the better of the two on
        held-out rows, else True. With the squared loss one score per class
        is fitted to one-hot targets, and a class whose score is never the
        largest is never predicted (masking: the network then cannot beat
        ``PolynomialFeatures(2)`` + ``RidgeClassifier``); the logistic refit
        of the same neurons does not mask. "auto" refits both ways on fifths
        of the rows held out in turn (at least 100 rows scored) and keeps the
        squared refit unless the logistic one misclassifies less held-out
        weight by more than one standard error, then refits the chosen loss
        on every row (``refit_loss_``; the squared one below 20 rows). The
        logistic refit's proximal gradient reads the neurons' outputs through
        their ``p (p + 1) / 2`` lifted coordinates where that is cheaper,
        and costs about 500 products of the outputs with ``alpha``. Dask
        fits refit in ``loss`` (from the lifted statistics). False keeps
        the paper's shared weights.
    class_weight : dict, "balanced" or None, default=None
        Weights of the classes in the loss, as in scikit-learn.
    warm_start : bool, default=False
        When True and the training data and the SDP's parameters (loss, beta,
        fit_intercept, weight_levels, activation, class_weight, solver,
        solver_options, tol, max_iter) are unchanged since the last fit, ``fit``
        reuses the stored SDP solution and only re-samples: changing
        ``n_neurons`` or ``random_state`` then costs no solve. When they
        changed (a new ``beta`` along a regularization path, say), the
        native solver starts from the previous solution's factors.
    random_state : int, RandomState instance or None, default=None
        Seeds the sign sampling (a local generator; the global ones are left
        alone). The SDP solve itself is deterministic.
    [shared: clip_inputs:BackpropQuantizedClassifier]

    Attributes
    ----------
    beta_ : float
        The ``beta`` of the fit: ``beta`` itself, or the value "auto" chose.
    beta_max_ : float
        With ``beta="auto"`` or ``"rule"`` only: the smallest ``beta`` at
        which the zero network solves the relaxation, on this training data
        (:func:`skquad.convex.zero_network_beta`).
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Only when ``X`` has string feature names.
    feature_mean_, feature_scale_ : ndarray of shape (n_features_in_,) or None
        The standardization (None when ``standardize=False``).
    U_, V_ : ndarray of shape (n_neurons_, n_lifted_features_), int8
        The first-layer weights ``u_j`` and ``v_j`` in {-1, +1}, acting on the
        lifted input (intercept column, replicas, polynomial coordinate).
    alpha_ : ndarray of shape (n_neurons_, n_scores)
        Second-layer weights. Without the refit (Algorithm 1), neuron ``j``
        sampled for class ``k`` has ``alpha_[j, k] = rho_[k] * pi / (gamma * m_k)``
        (``gamma = ln(1+sqrt 2)``, ``m_k`` neurons for class ``k``) and zeros
        elsewhere; with ``refit_output_layer=True`` any neuron may feed any
        class, and many weights are exactly 0 (L1 penalty).
        ``n_scores`` is 1 for binary problems, else ``n_classes``.
    neuron_class_ : ndarray of shape (n_neurons_,)
        Index of the score each neuron was sampled for.
    intercept_ : ndarray of shape (n_scores,)
        The output intercept, the encoded labels' weighted mean (see
        ``fit_intercept``), or the linear term's constant; zeros for the
        hinge and logistic losses and without ``fit_intercept``.
    n_neurons_ : int
        Neurons of the current network (set by ``fit`` and :meth:`resample`).
    lower_bound_ : float
        Certified lower bound on the optimum of the SDP relaxation, hence on
        the training objective of every network of this architecture, of
        any width: the dual bound of :func:`skquad.convex.dual_bound`
        computed from the returned point. It holds whatever the solver's
        accuracy (a looser bound when the solve stopped early). With a
        linear term, of the networks beside that fitted term (the
        relaxation is solved on the labels less it).
    linear_coef_ : ndarray of shape (n_scores, n_features_in_)
        The linear term's coefficients on the original inputs (with a
        linear term only; its constant is in ``intercept_``).
    linear_alpha_ : ndarray of shape (n_scores,)
        The linear term's ridge penalty per score: :class:`~sklearn.linear_model.Ridge`'s
        ``alpha`` on the standardized inputs, rows counted by ``sample_weight``
        (with a linear term only).
    relaxed_objective_ : float
        Objective of the returned relaxed solution (``loss + 2 beta p
        sum_k rho_k``), at least the SDP's optimum.
    certified_gap_ : float
        ``relaxed_objective_ - lower_bound_``: how far the relaxed solution
        can be from the SDP's optimum.
    objective_ : float
        Training objective of the network, same loss and penalty:
        ``loss + beta * p * sum_j ||alpha_j||_1`` (after the refit when
        ``refit_output_layer``). After a logistic refit of a squared-loss
        network it is far above ``lower_bound_``: the refit minimised
        another loss.
    sampled_objective_ : float
        The objective of the network as Algorithm 1 samples it (shared
        second-layer weights), before any refit.
    refit_loss_ : str or None
        The loss the second layer was refitted in: ``loss``, or "logistic"
        (``refit_output_layer``); None without the refit.
    relaxed_objective_gap_ : float
        ``objective_ - lower_bound_`` (at least 0 up to solver accuracy):
        how far the network can be from the best binary network.
    Q_ : ndarray of shape (n_scores, 2 p, 2 p)
        Relaxed solution: the PSD matrices ``[[V, Z], [Z^T, W]]``.
    Z_ : ndarray of shape (n_scores, p, p)
        Their off-diagonal blocks; the relaxed model predicts
        ``2 <L(x), Z_k>`` (:meth:`relaxed_decision_function`).
    rho_ : ndarray of shape (n_scores,)
        The diagonal values of ``Q_``.
    covariance_ : ndarray of shape (n_scores, 2 p, 2 p)
        Covariances of the sign sampler (output of the covariance step).
    n_lifted_features_ : int
        ``p``, the length of the binary weight vectors.
    solver_ : str
        The solver that produced the relaxed solution (the last stage of
        ``solver_path_``): ``"native"`` (the factor solver in torch),
        ``"native_numpy"`` (the factor solver in numpy, squared-loss blocks
        on the CPU), ``"compact"`` (the exact compact-cone solve of a small
        lifting, chosen by ``solver=None`` on the CPU), ``"hinge_dual"`` (the
        barrier method on the binary hinge's exact dual, chosen by
        ``solver=None`` on the CPU up to 2,000 deduplicated samples),
        ``"squared_dual"`` (the barrier method on the exact dual of every
        block of the squared loss, on the CPU up to 1,000 samples, or more
        where its Newton steps are the cheaper) or the
        CVXPY solver used. Where blocks ended in different stages, the
        factor solver's name.
    solver_path_ : tuple of str
        Every stage of the solve, in order: ``("compact", "native")`` for a
        compact solve continued by the factor solver, ``("native_numpy",
        "squared_dual", "native_numpy")`` for a block given factor iterations
        first, then the dual, then the factor solver again (the longest
        block's stages); ``(solver_,)`` for a solve in one stage.
    solver_status_ : str
        "optimal" (gap within ``tol``), "max_iter", "time_limit", "stopped"
        (by a callback) or "stalled" (short of ``tol`` with no column left to
        add, before ``max_iter``) for the native solver; "inaccurate" for a compact
        interior-point solve above ``tol``; CVXPY's status otherwise.
    n_iter_ : int
        Iterations of the solve (L-BFGS iterations for the native solver).
    solve_time_ : float
        Seconds of the SDP solve (0 when ``warm_start`` reused it).
    device_ : str
        The device the SDP was solved on (``"cpu"``, ``"cuda:0"``; ``"cpu"``
        for the CVXPY solvers and for the native interior-point methods of
        small problems, ``solver_`` ``"compact"``, ``"hinge_dual"`` or
        ``"squared_dual"``, which run there whatever ``device``). Sampling, the refit and predictions
        run on the CPU.
    [shared-tight: data_min_:SDPQuantizedClassifier data_max_]

    See Also
    --------
    BackpropQuantizedClassifier : the paper's baseline, SGD then quantization.

    Notes
    -----
    ``decision_function`` returns the network's scores ``f(x)``;
    ``predict_proba`` maps them through the sigmoid (binary) or softmax. With
    ``loss="logistic"`` or a logistic refit (``refit_output_layer``, by default
    with three or more classes) this is the probability model the second layer
    was fitted for; otherwise the scores are fitted to ±1 (or one-hot) targets
    and the probabilities are only a monotone summary of the scores: calibrate
    them (CalibratedClassifierCV) if they matter.

    The SDP has ``n_classes`` PSD blocks of size ``2 p``; standard solvers
    handle ``p`` up to a few hundred. Memory and time grow fast with
    ``weight_levels`` and the number of features.

    Memory of the network: sampling takes about ``16 * n_neurons * p`` bytes
    (the Gaussian draws) and the refit ``8 * n_neurons * n_unique`` (the
    neurons' outputs on the ``n_unique`` distinct training rows); ``fit``
    estimates this before the solve and raises a ``MemoryError`` naming
    ``n_neurons`` when it exceeds the available memory. Predictions are
    computed in row batches whose intermediate arrays take at most about
    64 MiB, whatever the number of rows.

    The fitted model keeps the (deduplicated, weighted) training data so
    that :meth:`resample` can score and refit a new draw; it is part of a
    pickle. :meth:`drop_training_data` removes it (then :meth:`resample`
    needs a new ``fit``; predicting is unaffected).

    References
    ----------
    B. Bartan and M. Pilanci, "Training Quantized Neural Networks to Global
    Optimality via Semidefinite Programming", ICML 2021.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skquad import SDPQuantizedClassifier
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = X[:, :6]
    >>> clf = make_pipeline(StandardScaler(), SDPQuantizedClassifier(random_state=0))
    >>> clf = clf.fit(X, y)
    >>> sdp = clf[-1]
    >>> sdp.U_.shape, sdp.U_.dtype.name
    ((1000, 7), 'int8')
    >>> bool(sdp.lower_bound_ <= sdp.objective_ + 1e-12)  # to rounding
    True
    >>> round(clf.score(X, y), 1)
    0.9
    """


    _parameter_constraints = {
        "n_neurons": [Interval(Integral, 1, None, closed="left")],
        "loss": [StrOptions(set(LOSSES))],
        "beta": [Interval(Real, 0, None, closed="left"), StrOptions({"auto", "rule"})],
        "fit_intercept": ["boolean"],
        "linear_term": ["boolean", StrOptions({"auto"})],
        "standardize": ["boolean"],
        "weight_levels": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions({"bilinear"}), tuple, list],
        "solver": [str, None],
        "solver_options": [dict, None],
        "tol": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "verbose": ["verbose"],
        "device": [str, torch.device],
        "covariance": [StrOptions({"krivine", "sdp"})],
        "refit_output_layer": ["boolean", StrOptions({"logistic", "auto"})],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "warm_start": ["boolean"],
        "random_state": ["random_state"],
        "clip_inputs": ["boolean"],
    }

    def __init__(
        self,
        n_neurons=1000,
        *,
        loss="squared",
        beta="auto",
        fit_intercept=True,
        linear_term="auto",
        standardize=True,
        weight_levels=1,
        activation="bilinear",
        solver=None,
        solver_options=None,
        tol=1e-4,
        max_iter=3000,
        verbose=0,
        device="auto",
        covariance="krivine",
        refit_output_layer="auto",
        class_weight=None,
        warm_start=False,
        random_state=None,
        clip_inputs=True,
    ):
        self.n_neurons = n_neurons
        self.loss = loss
        self.beta = beta
        self.fit_intercept = fit_intercept
        self.linear_term = linear_term
        self.standardize = standardize
        self.weight_levels = weight_levels
        self.activation = activation
        self.solver = solver
        self.solver_options = solver_options
        self.tol = tol
        self.max_iter = max_iter
        self.verbose = verbose
        self.device = device
        self.covariance = covariance
        self.refit_output_layer = refit_output_layer
        self.class_weight = class_weight
        self.warm_start = warm_start
        self.random_state = random_state
        self.clip_inputs = clip_inputs

    # ------------------------------------------------------------------ fit
    def _sdp_n_outputs(self):
        """Blocks of the SDP: one for a binary problem, one per class otherwise."""
        return self._n_scores

    def _sdp_targets(self, y_train, n_outputs):
        """±1 labels (binary) or class indices, from the encoded labels."""
        return _class_targets(y_train, n_outputs)

    def _centres_targets(self):
        """An output intercept where the loss allows it exactly: the squared loss, whose best
        intercept is the mean residual (RidgeClassifier's), not the hinge or logistic."""
        return bool(self.fit_intercept) and self.loss == "squared"

    def _refits_intercept(self):
        """False: the refit keeps the labels' mean as the intercept, so that the network stays
        in the class ``lower_bound_`` certifies (``lower_bound_ <= objective_``)."""
        return False

    def _target_signature(self):
        return self.classes_.tolist()

    def _held_out_targets(self, y_validated):
        """The labels ``beta="auto"``'s candidates fit: the class indices."""
        return y_validated

    def _held_out_params(self):
        """``beta="auto"``'s candidates: class weights once (they are in the sample weights the
        search passes); a refit of the second layer by least squares (the lasso) where the model
        refits it at all. The logistic refit, and ``"auto"``'s held-out choice of it on three or
        more classes, cost most of a candidate's fit; they are made once, at the chosen ``beta``."""
        return {"class_weight": None, "refit_output_layer": bool(self.refit_output_layer)}

    def _held_out_scorer(self, y, sample_weight):
        """``beta="auto"``'s measure: the held-out rows' misclassifications."""
        return HeldOutMisclassifications()

    @reads_fitted_state
    def relaxed_decision_function(self, X):
        """Scores of the relaxed (unquantized) SDP model, ``2 <L(x), Z_k>``.

        Algorithm 1's network (shared second-layer weights) equals these in
        expectation over the sign draws; with many neurons they agree closely.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        return _decision_values(self._relaxed_scores(X))

    @reads_fitted_state
    def relaxed_predict(self, X):
        """Class labels predicted by the relaxed SDP model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return _predict_labels(self, self.relaxed_decision_function, X)


@contextlib.contextmanager
def zero_network_allowed(allowed):
    """Where ``allowed`` (``beta="auto"``, whose choice of the zero network is deliberate:
    held-out rows preferred the offset alone), the zero-network
    warning of a solve is not given."""
    with warnings.catch_warnings():
        if allowed:
            warnings.filterwarnings("ignore", message=ZERO_NETWORK_WARNING, category=UserWarning)
        yield
