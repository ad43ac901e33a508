"""The scipy L-BFGS driver and the Trainer's full-batch fit on it.

:func:`minimize_lbfgs` runs L-BFGS on a flat float64 parameter vector. Every
L-BFGS of the estimators' training goes through it (the networks'
``solver="lbfgs"``, in memory and on Dask blocks, and quadratic logistic
regression), so they share the stopping options, the per-iteration hook
(verbose lines and scikit-learn callbacks, which may ask to stop) and one
warning naming the limit that stopped it. :func:`fit_trainer_lbfgs` adapts a
:class:`~._trainer.Trainer` to it: the objective on the trainer's flat buffer,
the best point kept by its divergence guard, the iterations reported to its
callbacks. The SDP's solvers in ``convex/`` are solvers of their own.
"""

import math

import numpy as np
import torch
from scipy.optimize import OptimizeResult, minimize
from sklearn.exceptions import ConvergenceWarning

from .._foundation._reporting import progress_line, warn_user
from .._foundation._rows import OrderedRows
from ._divergence import NonFiniteObjective
from .._foundation._lbfgs_compact import minimize_compact_lbfgs

__all__ = ["fit_trainer_lbfgs", "lbfgs_convergence_message", "minimize_lbfgs"]


def minimize_lbfgs(objective, x0, *, max_iter, max_fun, tol, ftol=None, maxls=None,
                   maxcor=None, on_iteration=None, gradient_scale=None, coarse_objective=None,
                   engine="scipy", memory=None):
    """Minimise ``objective(theta) -> (value, gradient)`` with L-BFGS-B.

    Parameters
    ----------
    objective : callable
        Returns the float objective and its float64 gradient (an ndarray the
        driver may keep: return a fresh array each call).
    x0 : ndarray of shape (n_parameters,), float64
    max_iter : int
        scipy's ``maxiter``.
    max_fun : int
        scipy's ``maxfun``: the most objective evaluations.
    tol : float
        scipy's ``gtol``: stop when the largest gradient entry is below it.
    ftol, maxls, maxcor : float, int and int, optional
        scipy's options of the same names (its defaults when None).
    on_iteration : callable, optional
        ``on_iteration(iteration, loss, theta) -> bool`` after every
        iteration; returning True stops the solver there.
    gradient_scale : ndarray of shape (n_parameters,), optional
        Positive numbers: the gradient test reads ``gradient / gradient_scale``,
        the gradient in the coordinates of a model that ``theta`` rescales
        (QLR's packed symmetric matrices), so that ``tol`` keeps its meaning;
        checked at every accepted iterate, reported as scipy's own test.
    coarse_objective : callable, optional
        The same function evaluated in a cheaper, lower precision (float32
        products of float64 data), with an attribute ``gradient_floor``: the
        size of its gradient's rounding error in the units of the gradient
        test. L-BFGS runs on it first, then on ``objective`` from where it
        stopped (see ``_coarse_then_exact``); iterations and evaluations
        of both count against ``max_iter`` and ``max_fun``. An optional
        attribute ``settle(theta) -> theta`` maps the coarse phase's last
        point to the exact phase's start (a move that can only lower the
        objective, undoing the coarse rounding's drift from a structure
        that the exact iterates keep).
    engine : {"scipy", "compact"}, default="scipy"
        ``"scipy"``: scipy's L-BFGS-B. ``"compact"``: the same unconstrained
        L-BFGS in numpy (``minimize_compact_lbfgs``), L-BFGS-B's iterates up to
        rounding without its per-iteration bookkeeping, for objectives that cost
        little more than it (QLR's). Both take ``gradient_scale`` and ``coarse_objective``.
    memory : PathMemory, optional
        The compact engine's pairs to start from and extend, carried along a
        regularisation path (:class:`~skquad._foundation._lbfgs_compact.PathMemory`);
        with a ``coarse_objective``, its phase runs on them. None: each run
        starts with an empty memory.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        With an extra boolean field ``stopped_by_callback``.
    """
    x0 = np.asarray(x0, dtype=np.float64)
    if engine not in ("scipy", "compact"):
        raise ValueError(f"engine must be 'scipy' or 'compact', got {engine!r}.")
    if memory is not None and engine != "compact":
        raise ValueError("memory needs engine='compact': scipy's L-BFGS-B keeps its own pairs.")
    if int(max_iter) == 0:
        # scipy's L-BFGS-B takes one step even with maxiter=0 (it checks the
        # limit after the first iteration); zero iterations means the
        # starting point, reported as scipy reports a reached limit.
        value, gradient = objective(x0)
        return OptimizeResult(
            x=x0, fun=value, jac=gradient, nit=0, nfev=1, status=1, success=False,
            message="STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT", stopped_by_callback=False,
        )
    options = {"maxiter": int(max_iter), "maxfun": int(max_fun), "gtol": float(tol)}
    if ftol is not None:
        options["ftol"] = float(ftol)
    if maxls is not None:
        options["maxls"] = int(maxls)
    if maxcor is not None:
        options["maxcor"] = int(maxcor)
    run = _LbfgsRun(tol, gradient_scale, on_iteration, engine, memory)
    if coarse_objective is None:
        return run.minimize(objective, x0, options)
    return _coarse_then_exact(run, objective, coarse_objective, x0, options)


class _LbfgsRun:
    """One engine's L-BFGS with the driver's hook and scaled gradient test, over one or two phases;
    the iteration count runs on across :meth:`minimize` calls (``on_iteration`` numbers the fit's)."""

    def __init__(self, tol, gradient_scale, on_iteration, engine="scipy", memory=None):
        self.tol = tol
        self.memory = memory
        self.gradient_scale = gradient_scale
        self.on_iteration = on_iteration
        self.engine = engine
        self.iteration = 0
        self.accepted = None  # the last iterate the engine accepted

    def passes(self, gradient, tol=None):
        """The gradient test: the largest (scaled) entry at most ``tol`` (the driver's by default)."""
        scaled = np.abs(gradient) if self.gradient_scale is None else (
            np.abs(gradient) / self.gradient_scale
        )
        return bool(np.max(scaled, initial=0.0) <= (self.tol if tol is None else tol))

    def minimize(self, objective, x0, options, tol=None, carried=True):
        """One run of the engine; ``tol`` (the driver's by default) is the scaled test's."""
        if self.engine == "compact":
            return self._minimize_compact(objective, x0, options, tol, carried)
        state = {"stopped": False, "converged": False, "last": None}
        if self.gradient_scale is not None:
            inner = objective

            def objective(theta):
                value, gradient = inner(theta)
                state["last"] = (theta.copy(), gradient)
                return value, gradient

        def callback(intermediate_result):
            if self._accept(float(intermediate_result.fun), intermediate_result.x):
                state["stopped"] = True
                raise StopIteration
            last = state["last"]
            if self.gradient_scale is not None and last is not None and np.array_equal(
                last[0], intermediate_result.x
            ) and self.passes(last[1], tol):
                state["converged"] = True
                raise StopIteration

        result = minimize(
            objective, x0, method="L-BFGS-B", jac=True, callback=callback, options=options
        )
        result.stopped_by_callback = state["stopped"]
        if state["converged"]:
            result.status, result.success = 0, True
            result.message = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
        return result

    def _accept(self, value, theta):
        """Count an accepted iterate and call the hook; True when the hook asks to stop."""
        self.iteration += 1
        self.accepted = theta.copy()
        return bool(
            self.on_iteration is not None and self.on_iteration(self.iteration, value, theta)
        )

    def _minimize_compact(self, objective, x0, options, tol, carried=True):
        """The numpy engine on scipy's ``options`` (the compact engine's defaults where unset), without
        overflow warnings: a non-finite value is the divergence guard's to report, as with scipy."""
        memory = self.memory
        if memory is not None and not carried:
            memory = memory.without_pairs()
        with np.errstate(over="ignore", invalid="ignore"):
            return minimize_compact_lbfgs(
                objective, x0, max_iter=options["maxiter"], max_fun=options["maxfun"],
                tol=self.tol if tol is None else tol, ftol=options.get("ftol", 0.0),
                maxls=options.get("maxls", 20), maxcor=options.get("maxcor", 10),
                on_iteration=lambda iteration, value, theta: self._accept(value, theta),
                gradient_scale=self.gradient_scale, search="lbfgsb",
                memory=memory,
            )


# Relative reductions of the objective below float32's rounding are not
# progress of a float32 evaluation: the coarse phase stops there.
_COARSE_FTOL = float(np.finfo(np.float32).eps)


class _CoarseOverflow(Exception):
    """A non-finite value or gradient of the coarse objective: switch to the exact one."""


def _coarse_then_exact(run, objective, coarse_objective, x0, options):
    """L-BFGS on ``coarse_objective`` until its precision runs out, then on ``objective``.

    The coarse phase only chooses the exact phase's start, so every convergence is
    the exact gradient's. It stops at ``max(tol, gradient_floor)``, at relative
    reductions below float32's epsilon (``_COARSE_FTOL``), where its line search fails
    or at a non-finite value. The exact phase starts with an empty memory.
    """
    if run.memory is not None and run.memory.knows(x0):
        # a path's start at the last fit's solution: its exact gradient is known
        value, gradient = objective(x0)
        if run.passes(gradient):
            return OptimizeResult(
                x=x0, fun=value, jac=gradient, nit=0, nfev=1, status=0, success=True,
                message="CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL",
                stopped_by_callback=False,
            )
    floor = float(coarse_objective.gradient_floor)
    coarse_options = dict(options, gtol=max(float(options["gtol"]), floor))
    coarse_options["ftol"] = max(float(options.get("ftol", 0.0)), _COARSE_FTOL)
    settle = getattr(coarse_objective, "settle", None)
    evaluations = [0]

    def finite_coarse(theta):
        evaluations[0] += 1
        value, gradient = coarse_objective(theta)
        if not (math.isfinite(value) and np.isfinite(gradient).all()):
            raise _CoarseOverflow
        return value, gradient

    try:
        coarse = run.minimize(finite_coarse, x0, coarse_options, tol=max(run.tol, floor))
        start, stopped = coarse.x, coarse.stopped_by_callback
        message, status = coarse.message, coarse.status
    except _CoarseOverflow:
        start = x0 if run.accepted is None else run.accepted
        stopped, message, status = False, None, None
    spent_fun = evaluations[0] + 1  # with the exact evaluation below
    spent_iter = run.iteration
    limited = stopped or spent_iter >= options["maxiter"] or spent_fun >= options["maxfun"]
    if settle is not None and not limited:
        # (a fit stopped by a limit or the hook ends on the iterate it reported)
        start = settle(start)
    value, gradient = objective(start)
    if limited or run.passes(gradient):
        converged = run.passes(gradient) and not stopped
        if converged:
            status, message = 0, "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
        elif not stopped:
            status = 1
            message = ("STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT" if spent_iter >= options[
                "maxiter"] else "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT")
        return OptimizeResult(
            x=start, fun=value, jac=gradient, nit=spent_iter, nfev=spent_fun, status=status,
            success=converged, message=message, stopped_by_callback=stopped,
        )
    known = (start.copy(), value, gradient)

    def exact(theta):
        # scipy's first evaluation is the switching point's, already computed
        if np.array_equal(theta, known[0]):
            return known[1], known[2].copy()
        return objective(theta)

    exact_options = dict(
        options, maxiter=options["maxiter"] - spent_iter, maxfun=options["maxfun"] - spent_fun + 1
    )
    # (no pairs: float32 pairs would mislead float64 steps below their rounding; a path's
    # memory keeps its diagonal scale)
    result = run.minimize(exact, start, exact_options, carried=False)
    result.nit = spent_iter + int(result.nit)
    result.nfev = spent_fun - 1 + int(result.nfev)
    return result


def lbfgs_convergence_message(result, max_iter, max_fun, remedies=""):
    """The ConvergenceWarning text for a result that stopped early, or None.

    scikit-learn's wording (``sklearn.utils.optimize._check_optimize_result``),
    with the remedy that fits the limit that stopped scipy: ``max_iter`` for
    the iteration limit, ``max_fun`` for the evaluation limit.
    """
    if result.status == 0 or getattr(result, "stopped_by_callback", False):
        return None
    n_iter = min(int(result.nit), int(max_iter))
    message = (
        f"lbfgs failed to converge after {n_iter} iteration(s) "
        f"(status={result.status}):\n{result.message}\n"
    )
    if int(result.nfev) >= int(max_fun) and n_iter < max_iter:
        message += (
            "\nIncrease the number of loss function calls to improve the "
            f"convergence (max_fun={max_fun})."
        )
    elif n_iter >= max_iter:
        message += (
            "\nIncrease the number of iterations to improve the convergence "
            f"(max_iter={max_iter})."
        )
    if remedies:
        message += f"\n{remedies}"
    return message


def fit_trainer_lbfgs(trainer, X, y, sample_weight, max_iter, *, data_term=None):
    """Fit ``trainer``'s module on all of ``(X, y)`` by :func:`minimize_lbfgs`.

    The objective is the weighted mean loss (plus the penalty over the total
    weight) at the trainer's flat parameters; the best point evaluated is
    kept and restored at the end, so that an overflow in the line search
    (:class:`NonFiniteObjective`) leaves the best model, reported as diverged.
    Returns the trainer's :class:`~._config.TrainingResult`.

    ``data_term``: the weighted mean loss computed elsewhere, in place of
    ``(X, y, sample_weight)`` (None each): ``data_term(theta) -> (loss,
    float64 gradient)`` with an attribute ``total_weight`` (the Dask route
    sums it over row blocks on the workers, :mod:`skquad.neural_network._dask`).
    The penalty is added here, once, as for the rows in memory. The trainer is
    read through its public members only.
    """
    config = trainer.config
    fit = _FullBatchFit(trainer, X, y, sample_weight, data_term)
    theta0 = trainer.flat_parameters.double().cpu().numpy().copy()
    if fit.memory is not None:
        theta0 = fit.memory.start(theta0)
    gradient_scale = _gradient_scale(trainer)
    fit.reporter.begin()
    try:
        result = minimize_lbfgs(
            fit.objective, theta0, max_iter=max_iter, max_fun=config.max_fun, tol=config.tol,
            ftol=config.lbfgs_ftol, maxls=config.lbfgs_maxls, maxcor=config.lbfgs_maxcor,
            on_iteration=fit.on_iteration, gradient_scale=gradient_scale,
            coarse_objective=fit.coarse, engine=config.lbfgs_engine, memory=fit.memory,
        )
    except NonFiniteObjective:
        result = None
    fit.reporter.close()
    return fit.finish(result, max_iter)


class _FullBatchFit:
    """:func:`fit_trainer_lbfgs`'s objective on the trainer, the best point seen, the end of the fit."""

    def __init__(self, trainer, X, y, sample_weight, data_term):
        self.trainer, self.data_term = trainer, data_term
        self.penalty = trainer.parameters.has_penalty
        flat = None
        if data_term is None:
            # (rows gathered by chunks, OrderedRows, stay so for the flat objective)
            self.given = (X, y, sample_weight)
            X, y, sample_weight = trainer.to_device(X, y, sample_weight, gathered=True)
            self.total_weight = sample_weight.sum()
            self.weights = torch.as_tensor(sample_weight / self.total_weight).to(
                device=trainer.device, dtype=trainer.dtype)
            # A loss that offers the objective on the flat vector itself (numpy,
            # no torch operations per evaluation): the module's parameters are
            # then set only where they are read (callbacks, the best point).
            make_flat = getattr(trainer.loss_and_gradient, "flat_objective", None)
            flat = None if make_flat is None or self.penalty else make_flat(X, y, self.weights)
        else:
            self.total_weight = data_term.total_weight
        self.data, self.flat = (X, y, sample_weight), flat
        if flat is None and isinstance(X, OrderedRows):
            self.data = (self._rows_tensor(), y, sample_weight)
        self.objective = self.module_objective if flat is None else self.flat_objective
        self.best_loss, self.best_theta = math.inf, None
        trainer.guard.remember_best()
        self.reporter = trainer.reporter("lbfgs-iter")
        # the flat objective's float32 twin for a float64 fit (see minimize_lbfgs;
        # its points are no candidates for the best: the fit ends on an exact one)
        self.coarse = getattr(flat, "coarse", None)
        # the pairs a regularisation path carries from its last objective (PathMemory)
        self.memory = getattr(flat, "memory", None) if trainer.config.lbfgs_engine == "compact" \
            else None
        if self.memory is not None:
            self.flat = self.memory.remembering(flat)
            if self.coarse is not None:
                self.coarse = self.memory.remembering(self.coarse, "coarse")

    def flat_objective(self, theta):
        loss, gradient = self.flat(theta)
        if not (math.isfinite(loss) and np.isfinite(gradient).all()):
            raise NonFiniteObjective  # as below
        if loss < self.best_loss:
            self.best_loss, self.best_theta = loss, theta.copy()
        return loss, gradient

    def module_objective(self, theta):
        trainer, data_term = self.trainer, self.data_term
        trainer.flat_parameters.copy_(torch.as_tensor(theta))
        if data_term is None:
            loss = float(trainer.batch_loss_and_gradient(*self.data[:2], self.weights))
        else:
            loss, data_gradient = data_term(theta)
            trainer.flat_gradient.zero_()
        if self.penalty:
            trainer.parameters.add_penalty_gradient(1.0 / self.total_weight)
            loss += trainer.parameters.penalty_value() / self.total_weight
        # A copy: scipy keeps the previous gradient, and the buffer is reused.
        gradient = trainer.flat_gradient.double().cpu().numpy().copy()
        if data_term is not None:
            gradient += data_gradient  # float64, as it was summed
        if not (math.isfinite(loss) and np.all(np.isfinite(gradient))):
            # No value/gradient pair describes an overflowed point: scipy's line
            # search cannot interpolate through inf, and a zero gradient would
            # read as convergence. Stop; the best point is restored, the fit
            # reported as diverged.
            raise NonFiniteObjective
        if loss < self.best_loss:
            self.best_loss = loss
            trainer.guard.remember_best()
        return loss, gradient

    def on_iteration(self, iteration, loss, theta):
        """Record the iteration, print it when verbose, report it to the callbacks (True: stop)."""
        trainer, history = self.trainer, self.trainer.history
        history.n_iter += 1
        history.loss_curve.append(loss)
        if trainer.config.verbose:
            print(progress_line(history.n_iter, loss, trainer.elapsed()), flush=True)
        if not self.reporter.active:
            return False
        trainer.flat_parameters.copy_(torch.as_tensor(theta))
        stop = self.reporter.end()
        if not stop:
            self.reporter.begin()
        return stop

    def finish(self, result, max_iter):
        """Put the best point back and fill the history; warn of a divergence or an early stop.

        ``result`` is None where the objective overflowed.
        """
        trainer, history, config = self.trainer, self.trainer.history, self.trainer.config
        if self.best_theta is not None:
            trainer.flat_parameters.copy_(torch.as_tensor(self.best_theta))
            trainer.guard.remember_best()
        trainer.guard.restore_best()
        history.best_loss = min(history.best_loss, self.best_loss)
        history.loss = self.best_loss
        history.stopped_by_callback = bool(result is not None and result.stopped_by_callback)
        if result is None or not math.isfinite(self.best_loss):
            if not math.isfinite(self.best_loss):
                history.loss = self._loss_here()
            trainer.warn_divergence()
            return history
        message = lbfgs_convergence_message(result, max_iter, config.max_fun, config.convergence_advice)
        if message is None:
            history.converged = bool(result.success)
        elif config.warn_on_max_iter:
            warn_user(message, ConvergenceWarning)
        return history

    def _rows_tensor(self):
        """The rows as one tensor, gathered where they are :class:`OrderedRows` (the module reads them whole)."""
        X = self.data[0]
        return self.trainer.to_device(*self.given)[0] if isinstance(X, OrderedRows) else X

    def _loss_here(self):
        """The loss at the module's parameters; inf where the outputs overflow (``full_loss``'s rule)."""
        if self.data_term is None:
            return self.trainer.full_loss(self._rows_tensor(), *self.data[1:])
        loss = self.data_term(self.trainer.flat_parameters.double().cpu().numpy())[0]
        return loss if math.isfinite(loss) else math.inf


def _gradient_scale(trainer):
    """The flat ``gradient_scale`` of :func:`minimize_lbfgs` from the module's
    ``lbfgs_gradient_scales() -> {name: tensor}`` (parameters in rescaled coordinates), or None."""
    scales = getattr(trainer.module, "lbfgs_gradient_scales", None)
    scales = scales() if scales is not None else {}
    if not scales:
        return None
    flat = np.ones(trainer.n_parameters)
    for name, offset in trainer.parameters.layout:
        if name in scales:
            values = scales[name].double().cpu().numpy().ravel()
            flat[offset : offset + values.size] = values
    return flat
