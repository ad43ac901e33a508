"""The scipy L-BFGS driver and the Trainer's full-batch fit on it.

:func:`minimize_lbfgs` runs scipy's L-BFGS-B on a flat float64 parameter
vector. Every scipy L-BFGS of the estimators' training goes through it (the
networks' ``solver="lbfgs"`` and quadratic logistic regression through
:func:`fit_trainer_lbfgs`, the Dask fit of QLR directly), so they share the
stopping options, the per-iteration hook (verbose lines and scikit-learn
callbacks, which may ask to stop) and one warning when scipy stops before
convergence, naming the limit that stopped it.

:func:`fit_trainer_lbfgs` is the adapter of a :class:`~._trainer.Trainer`
onto the driver: the objective on the trainer's flat parameter buffer, the
best point kept by its divergence guard, the iterations reported to its
callbacks. The SDP's solvers in ``convex/`` are solvers of their own, below
the engine: torch's L-BFGS on the device (``convex/factor_solver.py``,
``convex/certificate.py``), and, for the many-class squared loss on the CPU,
scipy's L-BFGS-B called directly on numpy blocks between certificate checks
(``solve_squared_block``).
"""

import math

import numpy as np
import torch
from scipy.optimize import OptimizeResult, minimize
from sklearn.exceptions import ConvergenceWarning

from .._reporting import progress_line, warn_user
from ._divergence import NonFiniteObjective

__all__ = ["fit_trainer_lbfgs", "lbfgs_convergence_message", "minimize_lbfgs"]


def minimize_lbfgs(objective, x0, *, max_iter, max_fun, tol, ftol=None, maxls=None,
                   maxcor=None, on_iteration=None, gradient_scale=None):
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
        (the packed symmetric matrices of quadratic logistic regression), so
        that ``tol`` keeps its meaning. It is checked after every iteration,
        at the point scipy accepted (its line search's last evaluation), and
        reported as scipy reports its own gradient test. With all scales at
        least 1, scipy's own test on ``gradient`` (``gtol=tol``) can only
        pass later.

    Returns
    -------
    result : scipy.optimize.OptimizeResult
        With an extra boolean field ``stopped_by_callback``.
    """
    state = {"iteration": 0, "stopped": False, "converged": False, "last": None}
    if gradient_scale is not None:
        inner = objective

        def objective(theta):
            value, gradient = inner(theta)
            state["last"] = (theta.copy(), gradient)
            return value, gradient

    def callback(intermediate_result):
        state["iteration"] += 1
        if on_iteration is not None and on_iteration(
            state["iteration"], float(intermediate_result.fun), intermediate_result.x
        ):
            state["stopped"] = True
            raise StopIteration
        last = state["last"]
        if last is not None and np.array_equal(last[0], intermediate_result.x) and (
            np.max(np.abs(last[1]) / gradient_scale, initial=0.0) <= tol
        ):
            state["converged"] = True
            raise StopIteration

    if int(max_iter) == 0:
        # scipy's L-BFGS-B takes one step even with maxiter=0 (it checks the
        # limit after the first iteration); zero iterations means the
        # starting point, reported as scipy reports a reached limit.
        x0 = np.asarray(x0, dtype=np.float64)
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
    result = minimize(
        objective,
        np.asarray(x0, dtype=np.float64),
        method="L-BFGS-B",
        jac=True,
        callback=callback,
        options=options,
    )
    result.stopped_by_callback = state["stopped"]
    if state["converged"]:
        result.status, result.success = 0, True
        result.message = "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
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


def fit_trainer_lbfgs(trainer, X, y, sample_weight, max_iter):
    """Fit ``trainer``'s module on all of ``(X, y)`` by :func:`minimize_lbfgs`.

    The objective is the weighted mean loss (plus the penalty over the total
    weight) at the trainer's flat parameters; the best point evaluated is
    kept and restored at the end, so that an overflow in the line search
    (:class:`NonFiniteObjective`) leaves the best model, reported as diverged.
    Returns the trainer's :class:`~._config.TrainingResult`.
    """
    config, history = trainer.config, trainer.history
    X, y, sample_weight = trainer._to_device(X, y, sample_weight)
    total_weight = sample_weight.sum()
    weights = torch.as_tensor(sample_weight / total_weight).to(device=trainer.device, dtype=trainer.dtype)
    penalty = trainer._has_penalty()
    best = {"loss": math.inf, "theta": None}
    trainer._remember_best()
    reporter = trainer._reporter("lbfgs-iter")
    # A loss that offers the objective on the flat vector itself (numpy, no
    # torch operations per evaluation): the module's parameters are then set
    # only where they are read (callbacks, the best point at the end).
    make_flat = getattr(trainer.loss_and_gradient, "flat_objective", None)
    flat = None if make_flat is None or penalty else make_flat(X, y, weights)

    def flat_objective(theta):
        loss, gradient = flat(theta)
        if not (math.isfinite(loss) and np.isfinite(gradient).all()):
            raise NonFiniteObjective  # as below
        if loss < best["loss"]:
            best.update(loss=loss, theta=theta.copy())
        return loss, gradient

    def objective(theta):
        trainer.flat_parameters.copy_(torch.as_tensor(theta))
        loss = float(trainer._loss_and_gradient(X, y, weights))
        if penalty:
            trainer._add_penalty_gradient(1.0 / total_weight)
            loss += trainer._penalty_value() / total_weight
        # A copy: scipy keeps the previous gradient, and the buffer is reused.
        gradient = trainer.flat_gradient.double().cpu().numpy().copy()
        if not (math.isfinite(loss) and np.all(np.isfinite(gradient))):
            # No value/gradient pair describes an overflowed point: scipy's
            # line search cannot interpolate through inf, and a zero
            # gradient was read as convergence (issue 19: X * 1e80 gave an
            # all-zero model, "converged"). Stop; the best point is restored
            # below and the fit reported as diverged.
            raise NonFiniteObjective
        if loss < best["loss"]:
            best["loss"] = loss
            trainer._remember_best()
        return loss, gradient

    def on_iteration(iteration, loss, theta):
        history.n_iter += 1
        history.loss_curve.append(loss)
        if config.verbose:
            print(progress_line(history.n_iter, loss, trainer._elapsed()), flush=True)
        if not reporter.active:
            return False
        trainer.flat_parameters.copy_(torch.as_tensor(theta))
        stop = reporter.end()
        if not stop:
            reporter.begin()
        return stop

    theta0 = trainer.flat_parameters.double().cpu().numpy().copy()
    gradient_scale = _gradient_scale(trainer)
    reporter.begin()
    try:
        result = minimize_lbfgs(
            objective if flat is None else flat_objective,
            theta0,
            max_iter=max_iter,
            max_fun=config.max_fun,
            tol=config.tol,
            ftol=config.lbfgs_ftol,
            maxls=config.lbfgs_maxls,
            maxcor=config.lbfgs_maxcor,
            on_iteration=on_iteration,
            gradient_scale=gradient_scale,
        )
        non_finite = False
    except NonFiniteObjective:
        result, non_finite = None, True
    reporter.close()
    if best["theta"] is not None:
        trainer.flat_parameters.copy_(torch.as_tensor(best["theta"]))
        trainer._remember_best()
    trainer._restore_best()
    history.best_loss = min(history.best_loss, best["loss"])
    history.loss = best["loss"]
    history.stopped_by_callback = bool(result is not None and result.stopped_by_callback)
    if non_finite and math.isfinite(best["loss"]):
        trainer._warn_divergence()
        return history
    if not math.isfinite(best["loss"]):
        history.loss = trainer._full_loss(X, y, sample_weight)
        trainer._warn_divergence()
        return history
    message = lbfgs_convergence_message(
        result, max_iter, config.max_fun, config.convergence_advice
    )
    if message is None:
        history.converged = bool(result.success)
    elif config.warn_on_max_iter:
        warn_user(message, ConvergenceWarning)
    return history


def _gradient_scale(trainer):
    """The flat ``gradient_scale`` of :func:`minimize_lbfgs` from the module, or None.

    A module that holds some parameter in rescaled coordinates says so with
    ``lbfgs_gradient_scales() -> {name: tensor of the parameter's shape}``.
    """
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
