"""QLR's in-memory drivers and their routes: the training engine (L-BFGS, SGD), Newton on the dual.

Each takes the :class:`~._qlr_problem.QLRProblem` and the :class:`TrainingRows`
and returns a :class:`~._qlr_problem.Solution`.
"""

import dataclasses
import functools
import time

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from .._foundation._reporting import progress_line, warn_user
from .._foundation._rows import OrderedRows, duplicate_groups
from .._training import SubtaskReporter, Trainer, TrainingConfig, callback_data, reporting_epochs
from .._foundation._threads import limit_threads
from ..nn.quadratic_dual import dual_to_primal, kernel_newton_logistic
from ..nn.quadratic_form import (
    PATH_MEMORY,
    QuadraticScores,
    log_loss_per_sample,
    quadratic_logistic_loss_and_gradient,
)
from ._qlr_problem import LBFGS_SETTINGS, Route, Solution
from ._sparse_q import LogisticLoss, fista, owlqn, sparse_start

__all__ = ["LBFGS", "NEWTON", "PROXIMAL", "SGD", "SGD_EPOCH", "TrainingRows", "training_rows"]


@dataclasses.dataclass
class TrainingRows:
    """The in-memory training data as the drivers read it.

    ``X, y, w``: the rows sorted by class (the residual of each score then
    has one sign per contiguous block, ``class_blocks``, which the symmetric
    gradient products exploit), gathered from the validated data once, or
    for large rows an :class:`~skquad._foundation._rows.OrderedRows` that
    its readers gather (``np.asarray`` where they need the rows whole);
    ``given``: the validated ``(X, y_encoded, sample_weight)``; ``user_data``:
    the data as the user gave it (labels), what the callbacks score against.
    """

    X: object
    y: np.ndarray
    w: np.ndarray
    class_blocks: list
    total_weight: float
    given: tuple
    user_data: tuple
    # the L-BFGS objective's float32 rows and degree-2 design, shared by a path's fits
    design_cache: dict = dataclasses.field(default_factory=dict)
    distributed = False

    def __post_init__(self):
        (self.n_rows, self.n_features), self.dtype = self.X.shape, self.X.dtype


# Dense rows whose reordered copy would exceed this many bytes are kept as
# :class:`OrderedRows` (the validated rows and the order): the L-BFGS pass
# gathers each chunk where it reads it, so a large X is held once, not twice.
GATHERED_ROWS_BYTES = 1 << 27


def training_rows(X, y_encoded, sample_weight, classes, *, merge, gather_above=None):
    """:class:`TrainingRows` of validated data; ``merge`` merges duplicates (full-batch drivers).

    Merged, the rows are the weighted distribution in a canonical order, so
    ``sample_weight=k`` is exactly ``k`` repetitions. Dense C-ordered NumPy rows whose
    reordered copy would take more than ``gather_above`` bytes (None:
    ``GATHERED_ROWS_BYTES``) are :class:`~skquad._foundation._rows.OrderedRows`:
    the same rows in the same order, gathered by their readers.
    """
    gather_above = GATHERED_ROWS_BYTES if gather_above is None else gather_above
    rows, weight, y = np.arange(X.shape[0]), sample_weight, y_encoded
    if merge:
        rows, weight = duplicate_groups(X, y_encoded, sample_weight)
        y = y_encoded[rows]
    order = np.argsort(y, kind="stable")
    counts = np.bincount(y, minlength=classes.shape[0])
    bounds = np.concatenate([[0], np.cumsum(counts)])
    index = rows[order]
    # (C order only: a row of another layout is gathered a number at a time)
    gathered = isinstance(X, np.ndarray) and X.flags.c_contiguous \
        and index.shape[0] * X.shape[1] * X.itemsize > gather_above
    return TrainingRows(
        OrderedRows(X, index) if gathered else X[index], y[order], weight[order],
        [(int(bounds[k]), int(bounds[k + 1])) for k in range(counts.shape[0])],
        float(weight.sum()), (X, y_encoded, sample_weight),
        (X, classes[y_encoded], sample_weight),
    )


def _trainer_config(problem, stochastic, partial):
    estimator, n_threads = problem.estimator, problem.policy.n_threads
    learning_rate, schedule = problem.step_size
    advice = "Standardise the features (e.g. StandardScaler) or lower C."
    return TrainingConfig(
        solver="sgd" if stochastic else "lbfgs", learning_rate=learning_rate,
        learning_rate_schedule=schedule, power_t=estimator.power_t,
        batch_size=None if estimator.batch_size == "auto" else estimator.batch_size,
        tol=estimator.tol, n_iter_no_change=estimator.n_iter_no_change,
        momentum=0.0, nesterov=False,  # Noel et al.'s update is plain SGD
        max_fun=estimator.max_fun, verbose=bool(estimator.verbose),
        n_threads="auto" if n_threads is None else n_threads, warn_on_max_iter=not partial,
        **{f"lbfgs_{name}": value for name, value in LBFGS_SETTINGS.items()},
        divergence_advice="standardized features (e.g. StandardScaler in a Pipeline), a smaller C"
        + (" or solver='lbfgs'" if stochastic else ""),
        convergence_advice="Increase max_iter or learning_rate_init, or standardise the "
        "features (e.g. StandardScaler)." if stochastic else advice,
    )


def fit_trainer(problem, data, *, stochastic, partial=False):
    """The training engine's driver: full-batch L-BFGS, SGD epochs, or ``partial_fit``'s one epoch."""
    estimator = problem.estimator
    module, trainer = _module_and_trainer(problem, data, stochastic, partial)
    trainer.loss_and_gradient = quadratic_logistic_loss_and_gradient(
        module, problem.l2, cross_weight=problem.cross_weight,
        quadratic_weight=problem.quadratic_weight,
        class_blocks=None if stochastic else data.class_blocks, free_entry_gradient=stochastic,
        cache=getattr(data, "design_cache", None),
    )
    continued = partial and problem.previous is not None
    if continued:
        trainer.history.n_samples_seen = seen = getattr(estimator, "t_", 0)
        if seen:
            trainer.schedule.epoch_ends(seen)
    fitted = lambda: problem.fitted_arrays(module.tensors())
    with reporting_epochs(trainer, estimator, *data.user_data, fitted_attributes=fitted):
        if partial:
            history = trainer.partial_fit(data.X, data.y, data.w)
        else:
            history = trainer.fit(data.X, data.y, data.w, max_iter=estimator.max_iter)
    n_iter, curve = history.n_iter, list(history.loss_curve) if stochastic else None
    if continued:
        n_iter += int(estimator.n_iter_[0])
        curve = list(getattr(estimator, "loss_curve_", [])) + curve
    return Solution(
        module.tensors(), n_iter, history.loss, history.diverged, curve,
        int(history.n_samples_seen) if stochastic else None,
    )


# The fits of a regularisation path (a ``PathMemory`` in the rows' cache)
# differ by the penalty only: they share one module and trainer, restarted
# from each fit's start, as they share the rows' design.
_PATH_TRAINER = "lbfgs_path_trainer"


def _module_and_trainer(problem, data, stochastic, partial):
    """The :class:`QuadraticScores` at the problem's start and the :class:`Trainer` that fits it."""
    policy, cache = problem.policy, getattr(data, "design_cache", None)
    on_path = not stochastic and cache is not None and PATH_MEMORY in cache
    key = (problem.n_features, problem.n_scores, problem.rank, problem.fit_intercept,
           None if problem.allowed is None else problem.allowed.tobytes(),
           policy.device, policy.dtype, policy.n_threads)
    if on_path and cache.get(_PATH_TRAINER, (None,))[0] == key:
        _, module, trainer = cache[_PATH_TRAINER]
        module.assign(problem.initial_params())
        trainer.restart()
        return module, trainer
    # full-batch L-BFGS on a full Q: each Q_k packed (its d(d+1)/2 upper
    # triangle), the same iterates at half the optimizer's work
    module = QuadraticScores(
        problem.initial_params(), fit_intercept=problem.fit_intercept,
        packed=not stochastic and problem.rank is None, allowed=problem.allowed,
    )
    trainer = Trainer(
        module, log_loss_per_sample, config=_trainer_config(problem, stochastic, partial),
        device=policy.device, dtype=policy.dtype, generator=policy.shuffle_generator,
    )
    if on_path:
        cache[_PATH_TRAINER] = (key, module, trainer)
    return module, trainer


def solve_dual_newton(problem, data):
    """Newton's method on the dual coefficients (:func:`~skquad.nn.quadratic_dual.kernel_newton_logistic`).

    Binary, full ``Q``, from ``Q = 0``. The solver computes in float64 (its
    ``n x n`` systems are small); each Newton step is one iteration, as
    ``n_iter_``, the verbose lines and the callbacks' subtasks count them.
    """
    estimator, policy = problem.estimator, problem.policy
    started = time.perf_counter()
    X64 = np.asarray(data.X, dtype=np.float64)
    weight = np.asarray(data.w, dtype=np.float64)
    as_tensor = lambda array: torch.from_numpy(np.asarray(array)).to(policy.dtype)

    def params(alpha, intercept):
        Q, coef = dual_to_primal(X64, alpha, problem.cross_weight, problem.allowed,
                                 problem.quadratic_weight)
        return [as_tensor(Q[None]), as_tensor(coef[None]), as_tensor([intercept])]

    point = {"alpha": np.zeros(X64.shape[0]), "intercept": 0.0}
    reporter = SubtaskReporter(
        getattr(estimator, "_callback_fit_ctx", None), estimator=estimator,
        task_name="newton-iter",
        fitted_attributes=lambda: problem.fitted_arrays(params(point["alpha"], point["intercept"])),
        **callback_data(*data.user_data),
    )

    def on_iteration(iteration, loss, alpha, intercept):
        if estimator.verbose:
            print(progress_line(iteration, loss, time.perf_counter() - started), flush=True)
        if not reporter.active:
            return False
        point.update(alpha=alpha.copy(), intercept=intercept)
        stop = reporter.end()
        if not stop:
            reporter.begin()
        return stop

    reporter.begin()
    # numpy's BLAS under the policy's threads (the Cholesky, the gradient test)
    with limit_threads(None, blas=policy.n_threads), np.errstate(over="ignore", under="ignore"):
        result = kernel_newton_logistic(
            X64, data.y, weight / weight.sum(), problem.l2, cross_weight=problem.cross_weight,
            quadratic_weight=problem.quadratic_weight, fit_intercept=problem.fit_intercept,
            tol=estimator.tol, max_iter=estimator.max_iter,
            on_iteration=on_iteration, allowed=problem.allowed,
        )
    reporter.close()
    if result["status"] == "max_iter":
        warn_user(
            f"Newton's method on the dual coefficients (solver='auto' on a binary problem "
            f"with fewer rows than degree-2 features) failed to converge after "
            f"{result['n_iter']} iteration(s).\nIncrease the number of iterations to "
            f"improve the convergence (max_iter={estimator.max_iter}), or use solver='lbfgs'.",
            ConvergenceWarning,
        )
    elif result["status"] == "line_search":
        warn_user(
            "Newton's method on the dual coefficients stopped after "
            f"{result['n_iter']} iteration(s): no step decreased the objective (largest "
            f"gradient entry {result['gradient']:.3g}, tol={estimator.tol}). Standardise the "
            "features (e.g. StandardScaler) or lower C.",
            ConvergenceWarning,
        )
    return Solution(params(result["alpha"], result["intercept"]), result["n_iter"], result["loss"])


def solve_proximal(problem, data):
    """OWL-QN on the entrywise sparse penalties, FISTA on ``"group"`` (:mod:`._sparse_q`).

    On dense float64 rows.
    """
    estimator, X = problem.estimator, data.X
    # (the rows as NumPy: a tensor's, on a GPU too, come to the host)
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X.cpu() if hasattr(X, "cpu") else X, dtype=np.float64)
    with limit_threads(None, blas=problem.policy.n_threads):
        solver = fista if problem.sparse.group else owlqn
        (B, coef, intercept), n_iter, loss, _, _ = solver(
            X, LogisticLoss(data.y, data.w / data.total_weight, problem.n_scores), problem.sparse,
            sparse_start(problem.previous, problem.sparse, problem.n_scores, problem.n_features),
            fit_intercept=problem.fit_intercept, tol=estimator.tol, max_iter=estimator.max_iter,
        )
    as_tensor = lambda array: torch.from_numpy(array).to(problem.policy.dtype)
    return Solution([as_tensor(B), as_tensor(coef), as_tensor(intercept)], n_iter, loss)


def _trainer_cost(problem, n_rows):
    return problem.lbfgs_flops(n_rows), problem.lbfgs_memory(n_rows)


def _sgd_cost(problem, n_rows):
    batch_size = problem.estimator.batch_size
    return _trainer_cost(problem, min(200 if batch_size == "auto" else batch_size, n_rows))


def _newton_cost(problem, n):
    """A step's Cholesky and primal gradient test; the kernel and its factor, X in float64, d x d arrays."""
    d = problem.n_features
    return n**3 / 3.0 + 2.0 * n * d * d, 8.0 * (3 * n * n + 2 * n * d + 4 * d * d)


LBFGS = Route("lbfgs", functools.partial(fit_trainer, stochastic=False), _trainer_cost,
              gathers_rows=True)
SGD = Route("sgd", functools.partial(fit_trainer, stochastic=True), _sgd_cost, draws=True)
SGD_EPOCH = Route("sgd", functools.partial(fit_trainer, stochastic=True, partial=True), _sgd_cost,
                  draws=True)
PROXIMAL = Route("proximal", solve_proximal, _trainer_cost)
NEWTON = Route("newton-dual", solve_dual_newton, _newton_cost)
