"""QuadraticLogisticRegression's and QuadraticRegression's fits on Dask collections, data-parallel.

Imported only when their ``fit`` meets a Dask collection; ``X`` is never gathered.
Each row block computes its share of the objective's sums where it lives, with the
in-memory fit's functions, and only ``O(K d²)`` numbers reach the driver
(:mod:`skquad._dask`'s block machinery):

* quadratic logistic regression: the blocks are validated, sorted by label and
  persisted once (the user's graph runs once per block); one pass for the
  statistics and the inputs' range, then one per L-BFGS evaluation for the loss and
  gradient, while the driver runs the in-memory fit's L-BFGS. The cluster holds
  ``X`` once;
* quadratic regression: one pass for the block-centred ``D x D`` normal equations
  (and the inputs' range), merged exactly and solved on the driver.
"""

import contextlib
import dataclasses
import functools
import math
import os
import time

import dask
import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_array

from .._dask import (
    add_objectives,
    add_parts,
    as_array,
    block_statistics,
    block_weight,
    check_names,
    check_total_weight,
    checked_block,
    checked_classifier_block,
    classes_and_weights,
    encoded_block,
    merge_statistics,
    persisted_blocks,
    reduce_tree,
    set_input_attributes,
    training_blocks,
)
from .._foundation._input_range import feature_range, merge_ranges
from .._foundation._memory import check_memory
from .._foundation._reporting import progress_line, warn_user
from .._foundation._runtime import thread_count
from .._foundation._threads import flush_denormals, limit_threads
from .._training import lbfgs_convergence_message, minimize_lbfgs
from ..nn.quadratic_form import (
    QuadraticScores,
    SymmetricPacking,
    float32_twin,
    packed_logistic_objective,
    packed_penalty_weight,
    quadratic_logistic_loss_and_gradient,
    weighted_row_scale,
)
from ._qlr_problem import LBFGS_SETTINGS, Route, Solution, check_feature_scale

__all__ = ["DATA_PARALLEL", "fit_logistic_blocks", "fit_quadratic_regression", "logistic_training_blocks"]


# ---------------------------------------------------- quadratic logistic regression
@functools.lru_cache(maxsize=4)
def _packing(n_features, allowed=None):
    """The :class:`SymmetricPacking` of ``n_features`` (its index maps built once per process).

    ``allowed``: the interaction constraints' boolean matrix as bytes (hashable), or None.
    """
    if allowed is not None:
        allowed = np.frombuffer(allowed, dtype=bool).reshape(n_features, n_features)
    return SymmetricPacking(n_features, allowed)


def _block_objective(block, theta, total_weight, settings):
    """``(loss, gradient)`` of one block at the flat packed ``theta``, without the penalty: the
    in-memory fit's objective, weights (divided by the total), threads and denormals on its rows."""
    X, y, w, class_blocks = block
    n_features = X.shape[1]
    if settings.get("float32"):
        X = X.astype(np.float32)  # the in-memory fit's float32 twin (float32_twin)
    objective = packed_logistic_objective(
        X, y, (w / total_weight).astype(X.dtype, copy=False),
        _packing(n_features, settings.get("allowed")),
        settings["n_scores"], 0.0, cross_weight=settings["cross_weight"],
        fit_intercept=settings["fit_intercept"], class_blocks=class_blocks,
    )
    threads = thread_count("auto", "cpu", 3.0 * settings["n_scores"] * X.shape[0] * n_features**2)
    with limit_threads(threads), flush_denormals():
        return objective(theta)


def _logistic_loss_and_gradient(X, y, w, params, l2, *, fit_intercept, cross_weight,
                                 class_blocks, dtype, quadratic_weight=1.0):
    """``(loss, [gradients])`` of the trainable parameters on one block (or the penalty alone), by
    the in-memory fit's :func:`quadratic_logistic_loss_and_gradient` with the driver's parameters."""
    tensors = [torch.from_numpy(np.asarray(p)).to(dtype) for p in params]
    module = QuadraticScores(tensors, fit_intercept=fit_intercept)
    trainable = [p for p in module.parameters() if p.requires_grad]
    for parameter in trainable:
        parameter.grad = torch.zeros_like(parameter)
    function = quadratic_logistic_loss_and_gradient(
        module, l2, cross_weight=cross_weight, quadratic_weight=quadratic_weight,
        class_blocks=class_blocks,
    )
    # the in-memory trainer's thread and denormal policy, per block
    n_features = X.shape[1]
    threads = thread_count("auto", "cpu", 3.0 * params[0].shape[0] * X.shape[0] * n_features * n_features)
    with torch.no_grad(), limit_threads(threads), flush_denormals():
        loss = function(
            torch.from_numpy(X).to(dtype),
            torch.from_numpy(y),
            torch.from_numpy(w).to(dtype),
        )
    return float(loss), np.concatenate([p.grad.double().numpy().ravel() for p in trainable])


def _factored_block_objective(block, params, total_weight, settings):
    """``(loss, gradient)`` of one block for a low-rank ``Q`` (``rank``): the in-memory
    fit's autograd objective on the factors, flat over the trainable parameters."""
    X, y, w, class_blocks = block
    # the in-memory trainer's normalisation: weights divided by their sum
    return _logistic_loss_and_gradient(
        X, y, w / total_weight, params, 0.0, class_blocks=class_blocks, **settings
    )


def _block_row_scale(block, _, total_weight):
    """The block's part of :func:`~skquad.nn.quadratic_form.weighted_row_scale`, weights over the total."""
    X, _y, w, _blocks = block
    return (weighted_row_scale(X, w / total_weight),)


class _NonFinite(Exception):
    pass


def _packed_problem(tensors, l2, fit_intercept, cross_weight, dtype, quadratic_weight=1.0,
                    allowed=None):
    """The in-memory fit's L-BFGS problem for a full ``Q``.

    Each ``Q_k`` as its packed upper triangle (``sqrt(2) Q_ij`` off the
    diagonal), then ``coef`` and the intercepts (when fitted); the blocks
    compute :func:`packed_logistic_objective`, the driver its diagonal
    penalty; the stopping test reads the full matrix's entries and L-BFGS
    keeps the in-memory fit's correction pairs.

    Returns ``(theta0, block_objective, settings, penalty, unflatten,
    gradient_scale)``: ``settings(theta)`` gives the blocks'
    arguments before the total weight, ``penalty(theta)`` its value and
    gradient, ``unflatten(theta)`` the ``[Q, coef, intercept]`` tensors in
    the computation dtype. ``allowed``: the interaction constraints (bytes, see
    :func:`_packing`), the entries packed.
    """
    n_scores, n_features = tensors[1].shape
    packing = _packing(n_features, allowed)
    n_packed, n_coef = n_scores * packing.rows.size, n_scores * n_features
    weight = packed_penalty_weight(
        packing, n_scores, l2, cross_weight=cross_weight, fit_intercept=fit_intercept,
        quadratic_weight=quadratic_weight,
    )
    scale = np.ones(weight.shape[0])
    scale[:n_packed] = np.tile(packing.scale, n_scores)
    options = {"n_scores": n_scores, "fit_intercept": fit_intercept, "cross_weight": cross_weight,
               "allowed": allowed}
    intercept = tensors[2]

    def penalty(theta):
        weighted = weight * theta
        return 0.5 * float(weighted @ theta), weighted

    def unflatten(theta):
        values = torch.from_numpy(theta).to(dtype)
        Q = packing.unpack(values[:n_packed].reshape(n_scores, -1))
        coef = values[n_packed : n_packed + n_coef].reshape(n_scores, n_features)
        return [Q, coef, values[n_packed + n_coef :] if fit_intercept else intercept]

    theta0 = np.concatenate(
        [packing.pack(tensors[0]).numpy().ravel(), tensors[1].numpy().ravel()]
        + ([intercept.numpy()] if fit_intercept else [])
    ).astype(np.float64)
    return theta0, _block_objective, lambda theta: (theta, options), penalty, unflatten, scale


def _factored_problem(tensors, l2, fit_intercept, cross_weight, dtype, quadratic_weight=1.0):
    """:func:`_packed_problem` for a low-rank ``Q`` (``rank``): the factors, flat, by autograd."""
    params = [t.numpy() for t in tensors]
    trainable = [i for i in range(len(params)) if fit_intercept or i != len(params) - 1]
    sizes = [params[i].size for i in trainable]
    options = {"fit_intercept": fit_intercept, "cross_weight": cross_weight, "dtype": dtype,
               "quadratic_weight": quadratic_weight}
    empty = (np.zeros((0, params[-2].shape[1]), params[0].dtype), np.zeros(0, np.int64),
             np.zeros(0, params[0].dtype))

    def unflatten(theta):
        current = [p.copy() for p in params]
        for index, piece in zip(trainable, np.split(theta, np.cumsum(sizes)[:-1])):
            current[index] = piece.reshape(params[index].shape)
        return current

    def penalty(theta):
        # the same function on no rows, with the L2 strength
        return _logistic_loss_and_gradient(
            *empty, unflatten(theta), l2, class_blocks=None, **options
        )

    def as_tensors(theta):
        return [torch.from_numpy(np.asarray(p)).to(dtype) for p in unflatten(theta)]

    theta0 = np.concatenate([params[i].ravel() for i in trainable]).astype(np.float64)
    return (theta0, _factored_block_objective, lambda theta: (unflatten(theta), options), penalty,
            as_tensors, None)


@dataclasses.dataclass
class BlockRows:
    """QLR's training data on Dask collections, as its drivers read it.

    ``blocks``: the persisted, checked blocks (:func:`persisted_blocks`);
    their statistics: the columns' largest magnitudes, the classes, the
    per-class weights (``class_weight``), the data's dtype and total weight.
    """

    blocks: object
    n_features: int
    n_rows: int
    magnitude: np.ndarray
    classes: np.ndarray
    per_class: np.ndarray
    dtype: np.dtype
    total_weight: float
    given = None
    distributed = True


@contextlib.contextmanager
def logistic_training_blocks(estimator, X, y, sample_weight):
    """:meth:`QuadraticLogisticRegression.fit`'s data on Dask collections: :class:`BlockRows`.

    Sets the input attributes and ``classes_``; the blocks are released on
    the workers when the block ends.
    """
    name = type(estimator).__name__
    if estimator.solver not in ("auto", "lbfgs"):
        raise ValueError(
            f"{name} fits Dask collections with solver='auto' or 'lbfgs' (L-BFGS: the "
            f"full-batch objective is a sum over blocks); got solver={estimator.solver!r}. "
            "For stochastic "
            f"training stream the blocks with dask_ml.wrappers.Incremental({name}"
            "(solver='sgd')), which calls partial_fit on each block."
        )
    if str(estimator.device) not in ("auto", "cpu"):
        raise ValueError(
            f"{name} computes on the Dask workers' CPUs; got device={estimator.device!r}. "
            "Use device='cpu' (or 'auto') with Dask collections."
        )
    X_original = X
    X, blocks = training_blocks(X, y, sample_weight)
    # Validated and sorted once, then persisted on the workers for the fit:
    # the statistics pass and every L-BFGS evaluation read them, and the
    # user's graph (reading files, generating data) runs once.
    data = persisted_blocks(
        [dask.delayed(checked_classifier_block)(*b) for b in blocks], X.chunks[0]
    )
    try:
        yield _block_rows(estimator, X_original, X.shape[1], data)
    finally:
        data.release()  # releases the persisted blocks on the workers


def _block_rows(estimator, X_original, n_features, data):
    """The statistics of the checked blocks ``data``, validated as the in-memory fit validates."""
    name = type(estimator).__name__
    (n_rows, magnitude, classes, counts, all_float32) = data.reduce(
        block_statistics, merge_statistics, None
    )
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape=(0, {n_features})) while a minimum of 1 is required by {name}.")
    check_feature_scale(magnitude[None, :], name)
    per_class, total_weight = classes_and_weights(estimator, X_original, n_features, data, n_rows,
                                                  classes, counts)
    dtype = np.dtype(np.float32 if all_float32 else np.float64)
    return BlockRows(data, n_features, n_rows, magnitude, classes, per_class, dtype, total_weight)


def fit_logistic_blocks(problem, data):
    """QLR's data-parallel driver: L-BFGS on the driver, the objective's shares on the blocks."""
    policy, blocks, n_features = problem.policy, data.blocks, data.n_features
    blocks.map(encoded_block, data.classes, data.per_class, policy.numpy_dtype)
    make = _factored_problem
    allowed = None if problem.allowed is None else problem.allowed.tobytes()
    if problem.rank is None:
        make = functools.partial(_packed_problem, allowed=allowed)
    theta0, block_objective, settings, penalty, unflatten, gradient_scale = make(
        problem.initial_params(), problem.l2, problem.fit_intercept, problem.cross_weight,
        policy.dtype, problem.quadratic_weight,
    )
    total_weight, best = data.total_weight, {"loss": math.inf, "theta": theta0}

    def evaluate(theta, float32=False):
        shared, options = settings(theta)
        loss, gradient = blocks.reduce(
            block_objective, add_objectives, shared, total_weight,
            dict(options, float32=True) if float32 else options,
        )
        penalty_value, penalty_gradient = penalty(theta)
        return float(loss) + penalty_value, gradient + penalty_gradient

    def objective(theta):
        loss, gradient = evaluate(theta)
        if not (math.isfinite(loss) and np.all(np.isfinite(gradient))):
            raise _NonFinite
        if loss < best["loss"]:
            best.update(loss=loss, theta=theta.copy())
        return loss, gradient

    # the in-memory fit's float32 twin (see minimize_lbfgs), on the same rule
    twin = coarse = None
    if problem.rank is None and policy.numpy_dtype == np.float64:
        (row_scale,) = blocks.reduce(_block_row_scale, add_parts, None, total_weight)
        twin = float32_twin(
            data.magnitude, row_scale, problem.n_scores, _packing(n_features, allowed)
        )
    if twin is not None:
        coarse = lambda theta: evaluate(theta, float32=True)
        vars(coarse).update(twin)
    estimator, started, curve = problem.estimator, time.perf_counter(), []

    def on_iteration(iteration, loss, theta):
        curve.append(loss)
        if estimator.verbose:
            print(progress_line(iteration, loss, time.perf_counter() - started), flush=True)
        return False

    # The driver's work is O(K d²) per step (L-BFGS's vector updates, the
    # penalty): the policy's one thread, as the in-memory trainer's L-BFGS.
    threads, result = policy.n_threads, None
    try:
        with limit_threads(threads, blas=threads):
            result = minimize_lbfgs(
                objective, theta0, max_iter=estimator.max_iter, max_fun=estimator.max_fun,
                tol=estimator.tol, on_iteration=on_iteration, gradient_scale=gradient_scale,
                coarse_objective=coarse, **LBFGS_SETTINGS,
            )
    except _NonFinite:
        pass
    # no finite evaluation: the start is kept, reported as diverged
    diverged = result is None or not math.isfinite(best["loss"])
    if diverged:
        warn_user(
            "Training diverged: the loss or its gradient became NaN or infinite. The best "
            "parameters seen were kept. Try standardized features (e.g. "
            "dask_ml.preprocessing.StandardScaler in a Pipeline) or a smaller C.",
            ConvergenceWarning,
        )
    else:
        message = lbfgs_convergence_message(
            result, estimator.max_iter, estimator.max_fun,
            "Standardise the features (e.g. dask_ml.preprocessing.StandardScaler) or lower C.",
        )
        if message is not None:
            warn_user(message, ConvergenceWarning)
    # fitted arrays in the computation dtype, as the in-memory fit stores them
    return Solution(unflatten(best["theta"]), len(curve), best["loss"], diverged)


DATA_PARALLEL = Route(
    "lbfgs", fit_logistic_blocks,
    # the driver's process holds the parameters only, on its CPU and one thread
    lambda problem, n_rows: (None, problem.lbfgs_memory(0)), {"device": "cpu", "n_threads": 1},
)


# ------------------------------------------------------------- quadratic regression
def _regression_block(X, Y, w):
    X = checked_block(X, (np.float64, np.float32))
    Y = check_array(np.asarray(Y).reshape(X.shape[0], -1), dtype=np.float64,
                    ensure_min_samples=0, input_name="y")
    return X, Y, block_weight(w, X.shape[0])


def _block_regression_statistics(X, Y, w, fit_intercept, allowed=None):
    """One block's ``(rows, float32?, W, m, ȳ, G, R, X range, y range)``, centred at its own weighted
    means (zeros without an intercept): ``G = Σ w (φ - m)(φ - m)ᵀ``, ``R = Σ w (φ - m)(y - ȳ)ᵀ``."""
    from ..nn.quadratic_ridge import normal_equations, weighted_sums

    X, Y, w = _regression_block(X, Y, w)
    total, feature_sums, target_sums = weighted_sums(X, Y, w, allowed)
    if fit_intercept and total > 0:
        mean, y_mean = feature_sums / total, target_sums / total
    else:
        mean, y_mean = np.zeros_like(feature_sums), np.zeros_like(target_sums)
    G, R = normal_equations(X, Y, w, mean, y_mean, allowed)
    return (X.shape[0], X.dtype == np.float32, total, mean, y_mean, G, R, feature_range(X, w),
            feature_range(Y, w))


def _merge_regression_statistics(*parts):
    """Blocks' centred statistics merged into those of their union, in one pass.

    Chan, Golub & LeVeque's pairwise update: for blocks ``a`` and ``b`` with
    weights ``Wa``, ``Wb`` and means differing by ``δ = m_b - m_a`` (``δy`` for
    ``y``), the union's centred sums are ``G_a + G_b + (Wa Wb / W) δ δᵀ`` and
    ``R_a + R_b + (Wa Wb / W) δ δyᵀ``, about ``m = m_a + δ Wb / W``. Exact
    algebra; unlike summing uncentred moments and centring at the end, it never
    subtracts two large degree-4 sums, so it keeps the two-pass accuracy.
    Without an intercept every mean is zero and the update is a plain sum.
    """
    rows, all_float32, W, mean, y_mean, G, R, _, _ = parts[0]
    G, R = G.copy(), R.copy()
    for rows_b, float32_b, W_b, mean_b, y_mean_b, G_b, R_b, _, _ in parts[1:]:
        rows += rows_b
        all_float32 = all_float32 and float32_b
        total = W + W_b
        G += G_b
        R += R_b
        if W > 0 and W_b > 0:
            delta, delta_y = mean_b - mean, y_mean_b - y_mean
            share = W * W_b / total
            G += share * np.outer(delta, delta)
            R += share * np.outer(delta, delta_y)
            mean = mean + delta * (W_b / total)
            y_mean = y_mean + delta_y * (W_b / total)
        elif W_b > 0:
            mean, y_mean = mean_b, y_mean_b
        W = total
    return (rows, all_float32, W, mean, y_mean, G, R, merge_ranges(*(part[7] for part in parts)),
            merge_ranges(*(part[8] for part in parts)))


def gathered_if_kernel(estimator, X, y, sample_weight):
    """``(X, y, sample_weight)`` computed, when the in-memory fit would take the kernel path, else None.

    With fewer rows than quadratic features (``n < D``) the in-memory fit
    solves the ``n x n`` dual instead of the ``D x D`` normal equations that
    every block would otherwise build (D² per block, D = d(d+3)/2); such
    data are small enough to gather. Unknown row counts (a dask.dataframe)
    keep the blockwise path.
    """
    X_array = as_array(X)
    n_rows = sum(X_array.chunks[0]) if X_array.ndim == 2 else np.nan
    if X_array.ndim != 2 or not np.isfinite(n_rows) or estimator.solver != "auto":
        return None
    if estimator._choose_solver(int(n_rows), X_array.shape[1]) != "kernel":
        return None
    check_memory(
        8.0 * n_rows * (X_array.shape[1] + 3 * n_rows), "X", f"a {type(X).__name__}",
        "gathering it for the kernel path (fewer rows than quadratic features)",
        advice="fit on fewer rows.",
    )
    return dask.compute(X, y, sample_weight)


def fit_quadratic_regression(estimator, X, y, sample_weight):
    """:meth:`QuadraticRegression.fit` on Dask collections: the normal equations, reduced."""
    from ._interactions import estimator_entries
    from ._regression import publish_penalties, publish_quadratic_model
    from ..nn.quadratic_ridge import expansion_size, solve_normal_equations

    name = type(estimator).__name__
    X_original = X
    y_ndim = 1 if (y.ndim if hasattr(y, "ndim") else np.ndim(y)) == 1 else 2
    X, blocks = training_blocks(X, y, sample_weight)
    n_features = X.shape[1]
    check_names(estimator, X_original, reset=True)  # names first: interaction_cst may use them
    allowed = estimator_entries(estimator, n_features)
    D = expansion_size(n_features, allowed)
    solver = estimator.solver
    if solver == "auto":
        solver = "cholesky"
    if solver != "cholesky":
        raise ValueError(
            f"{name} fits Dask collections with solver='cholesky' (or 'auto'): the "
            f"{D} x {D} normal equations are sums over blocks, solved on the driver. "
            f"solver={estimator.solver!r} needs all the rows in one process."
        )
    # Each block's D x D statistics, those of the blocks in flight and the
    # merge's: estimated before any is built.
    from ._regression import check_regression_memory

    in_flight = min(len(blocks), os.cpu_count() or 1)
    check_regression_memory("cholesky", D, 0, 1, copies=in_flight + 1)
    # One pass over the user's graph: each block's statistics about its own
    # means, merged exactly (_merge_regression_statistics).
    (n_rows, all_float32, total, mean, y_mean, G, R, input_range, target_range), = dask.compute(
        reduce_tree(
            [dask.delayed(_block_regression_statistics)(*b, estimator.fit_intercept, allowed)
             for b in blocks],
            _merge_regression_statistics,
        )
    )
    if n_rows == 0:
        raise ValueError(f"Found array with 0 sample(s) while a minimum of 1 is required by {name}.")
    set_input_attributes(estimator, X_original, n_features)
    check_total_weight(estimator, total)
    n_outputs = y_mean.shape[0]
    if isinstance(estimator.alpha, str):
        alpha, quadratic_alpha = _auto_penalties(estimator, blocks, n_rows, total, n_outputs)
    else:
        alpha = estimator._checked_alpha(n_outputs)
        quadratic_alpha = estimator.quadratic_alpha
        if quadratic_alpha is not None and np.any(np.asarray(alpha) == 0):
            raise ValueError("quadratic_alpha needs a positive alpha; got alpha=0.")
    with np.errstate(over="ignore", invalid="ignore"):
        coefficients, intercept = solve_normal_equations(
            G, R, mean, y_mean, alpha, quadratic_alpha, n_features)
    if not (np.all(np.isfinite(coefficients)) and np.all(np.isfinite(intercept))):
        raise ValueError(
            f"{name} could not fit X: the degree-4 products of the quadratic features "
            "overflow. Scale the features, e.g. with dask_ml.preprocessing.StandardScaler."
        )
    estimator.n_outputs_ = n_outputs
    estimator._fitted_y_ndim = y_ndim
    estimator.data_min_, estimator.data_max_ = input_range
    estimator.target_min_, estimator.target_max_ = target_range
    publish_quadratic_model(
        estimator, coefficients, intercept, n_features, np.float32 if all_float32 else np.float64,
        allowed,
    )
    estimator.n_iter_ = np.ones(n_outputs, dtype=np.int64)
    estimator.solver_ = "cholesky"
    publish_penalties(estimator, alpha, quadratic_alpha)
    return estimator


def _every_kth_row(X, Y, w, k):
    X, Y, w = _regression_block(X, Y, w)
    return X[::k], Y[::k], w[::k]


def _auto_penalties(estimator, blocks, n_rows, total_weight, n_outputs):
    """``alpha="auto"`` on Dask: the in-memory rule's leave-one-out on every k-th row of
    each block (at most about 2,000 rows, gathered), scaled to the weight of all rows."""
    from ._regression import _AUTO_MAX_ROWS, check_degree4_range

    k = -(-n_rows // _AUTO_MAX_ROWS)
    parts = dask.compute(*[dask.delayed(_every_kth_row)(*b, k) for b in blocks])
    X = np.concatenate([part[0] for part in parts])
    Y = np.concatenate([part[1] for part in parts]).reshape(-1, n_outputs)
    w = np.concatenate([part[2] for part in parts])
    check_degree4_range(estimator, X)
    return estimator._selected_penalties(X, Y, w, total_weight)
