"""The quadratic logistic regression problem that QLR's three drivers consume.

As ``LogisticRegression.fit`` hands its problem to ``_logistic_regression_path``,
the estimator builds one :class:`QLRProblem` (:func:`build_problem`) for the
driver its rule chose (a :class:`Route`), which returns a :class:`Solution`
that :meth:`QLRProblem.publish` turns into the fitted attributes.
"""

import dataclasses
from typing import Callable

import numpy as np
import scipy.sparse
import torch

from .._foundation._input_range import feature_range
from .._foundation._reporting import warn_user
from .._foundation._rows import OrderedRows
from .._foundation._torch_utils import to_numpy
from .._foundation._runtime import RuntimePolicy, runtime_policy
from ._sparse_q import SPARSE_PENALTIES, sparse_penalty
from ..nn.quadratic_form import (
    PATH_MEMORY, cpu_chunk_rows, log_loss_per_sample, low_rank_to_dense, quadratic_penalty,
)

__all__ = ["LBFGS_SETTINGS", "PATH_MAXCOR", "QLRProblem", "Route", "Solution", "build_problem",
           "check_feature_scale", "column_magnitudes", "evaluation_flops", "is_well_scaled"]

# Column magnitudes outside [1e-4, 1e4] put the quadratic terms' scale (their
# squares) beyond 1e8 away from the intercept's 1: a Hessian with that spread
# is past what L-BFGS resolves at ftol = 64 eps, and the absolute gradient test
# (tol) stops before tiny terms learn anything.
_WELL_SCALED = (1e-4, 1e4)

# LogisticRegression's L-BFGS settings, with a memory of 20 correction pairs
# (scipy's maxcor, see ``solver``), on the training engine's numpy L-BFGS
# (L-BFGS-B's iterates without setulb's bookkeeping): both L-BFGS drivers.
LBFGS_SETTINGS = {"ftol": 64 * np.finfo(float).eps, "maxls": 50, "maxcor": 20, "engine": "compact"}
# The correction pairs a path of C keeps (QuadraticLogisticRegressionCV's folds,
# ``PathMemory``): its objectives share the data term, so the pairs of the
# earlier Cs keep describing its curvature; twice a fit's, as a pair costs a
# direction 4 numbers per parameter against an evaluation's n d^2 products.
PATH_MAXCOR = 2 * LBFGS_SETTINGS["maxcor"]


def check_feature_scale(X, name, bounds=None):
    """Refuse features whose squares overflow; warn where the fit is ill-conditioned.

    ``bounds``: each column's ``(low, high)`` over the rows the fit reads, where
    the caller has them already (None: taken from ``X``).
    """
    # two reductions instead of abs(X): no n x d temporary
    magnitudes = column_magnitudes(feature_range(X) if bounds is None else bounds)
    if magnitudes is None:
        return
    smallest, largest = magnitudes
    if not np.isfinite(largest * largest):
        raise ValueError(
            f"X has values up to {largest:.3g}, whose squares overflow float64: {name} "
            "cannot compute its quadratic terms. Rescale X, e.g. with StandardScaler "
            "(or MaxAbsScaler for sparse X) in a Pipeline."
        )
    if not is_well_scaled(magnitudes):
        warn_user(
            f"X's columns have magnitudes from {smallest:.3g} to {largest:.3g}: {name}'s "
            f"quadratic terms then span {smallest * smallest:.3g} to {largest * largest:.3g}, "
            "and its solver may stop at a poor model without converging. Standardize the "
            "features (StandardScaler, or MaxAbsScaler for sparse X, in a Pipeline).",
            UserWarning,
        )


def evaluation_flops(n_scores, n_rows, n_features, width):
    """Flops of one evaluation of the objective and its gradient: per score, ``X Q_k``
    (``2 n d w``) and the Gram gradient (``n d w`` as SYRK); ``w`` is ``d`` for a full ``Q``."""
    return 3.0 * n_scores * n_rows * n_features * width


def column_magnitudes(bounds):
    """``(smallest, largest)`` of the columns' largest absolute values, zero columns aside
    (None: every column is zero); ``bounds`` each column's ``(low, high)``."""
    low, high = bounds
    magnitude = np.maximum(high, -low)
    magnitude = magnitude[magnitude > 0]
    return None if magnitude.size == 0 else (float(magnitude.min()), float(magnitude.max()))


def is_well_scaled(magnitudes):
    """Whether :func:`column_magnitudes` are within ``_WELL_SCALED`` (None: no column to scale)."""
    low, high = _WELL_SCALED
    return magnitudes is None or (magnitudes[0] >= low and magnitudes[1] <= high)


@dataclasses.dataclass(frozen=True)
class Route:
    """One driver of the problem, as the estimator's rule chooses it.

    ``solve(problem, data) -> Solution``; ``cost(problem, n_rows) -> (flops
    per step, bytes)``, what the runtime policy's thread count and the memory
    check read; ``placement`` overrides the estimator's ``device`` and
    ``n_threads`` (the Dask driver's process only updates the parameters);
    ``draws``: whether each fit draws its own random numbers;
    ``gathers_rows``: the driver reads rows gathered by chunks
    (:class:`~skquad._foundation._rows.OrderedRows`) a chunk at a time where
    it can (:func:`whole_rows_bytes`), rather than copying them whole.
    """

    solver: str
    solve: Callable
    cost: Callable
    placement: dict = dataclasses.field(default_factory=dict)
    # whether each fit draws its own random numbers (SGD's shuffles)
    draws: bool = False
    gathers_rows: bool = False


@dataclasses.dataclass
class Solution:
    """What a driver found: the parameter tensors and how it got there.

    ``loss`` None: no step ran, the objective is taken at the published
    model. ``loss_curve`` and ``t`` are SGD's (None removes them).
    """

    params: list
    n_iter: int
    loss: object
    diverged: bool = False
    loss_curve: list = None
    t: int = None


@dataclasses.dataclass
class QLRProblem:
    """One fit's problem: the estimator's settings, the penalty, the policy, the start.

    ``l2`` is the penalty's strength on the objective divided by
    ``C * sum(sample_weight)`` (as LogisticRegression scales it, so that
    ``tol`` does not depend on ``n`` or ``C``), and ``quadratic_weight``
    multiplies it on ``Q`` (``C / quadratic_C``); ``previous`` the model a warm
    start continues (None: a cold start from ``Q_init``); ``step_size`` SGD's
    ``(learning_rate_init, schedule)``; ``allowed`` the entries of ``Q`` the
    interaction constraints allow (None: all), zero elsewhere from the start on.
    """

    estimator: object
    n_features: int
    n_scores: int
    l2: float
    previous: dict
    step_size: tuple
    rank: object
    fit_intercept: bool
    # penalty weight of the off-diagonal entries of Q (see ``penalty``)
    cross_weight: float
    allowed: np.ndarray = None
    policy: RuntimePolicy = None
    # the L1 / elastic-net / group penalty of the proximal driver (None: L2 only)
    sparse: object = None
    # the penalty on Q over the one on w: C / quadratic_C (1: the pipeline's problem)
    quadratic_weight: float = 1.0

    def lbfgs_memory(self, n_rows):
        """Bytes of an L-BFGS or SGD fit that reads ``n_rows`` rows at once.

        The parameters (``n_scores * (d * d + d + 1)`` at full rank, ``n_scores
        * (d * rank + rank + d + 1)`` factored) as about 26 float64 vectors
        (the correction pairs, the point, its gradient, snapshots, torch's
        copies), and the ``(rows, width)`` products ``X Q_k`` per score.
        """
        d, n_scores = self.n_features, self.n_scores
        width = d if self.rank is None else min(int(self.rank), d)
        n_parameters = n_scores * (d * width + (width if self.rank is not None else 0) + d + 1)
        return 8.0 * (26 * n_parameters + 2 * n_scores * n_rows * width)

    def lbfgs_flops(self, n_rows):
        """:func:`evaluation_flops` of this problem on ``n_rows`` rows."""
        width = self.n_features if self.rank is None else min(self.rank, self.n_features)
        return evaluation_flops(self.n_scores, n_rows, self.n_features, width)

    def initial_params(self):
        """Starting tensors on the policy's device: ``[Q, coef, intercept]`` or ``[V, s, coef, intercept]``.

        Drawn in float64 from the policy's initialization stream (the same
        model on every device and dtype); the intercept is zero when not fitted.
        """
        params = self._start()
        if not self.fit_intercept:
            params[-1].zero_()
        if self.allowed is not None:
            params[0] *= torch.as_tensor(self.allowed, dtype=params[0].dtype)
        return [p.to(self.policy.device) for p in params]

    def _start(self):
        previous, rank, Q_init = self.previous, self.rank, self.estimator.Q_init
        if previous is not None:
            as_t = lambda a: torch.as_tensor(np.array(a, dtype=np.float64))
            head = [previous["Q"]] if rank is None else [previous["vectors"], previous["scales"]]
            return [as_t(a) for a in head + [previous["coef"], previous["intercept"]]]
        n_scores, d, f64 = self.n_scores, self.n_features, torch.float64
        gauss = lambda *shape: torch.randn(*shape, generator=self.policy.init_generator, dtype=f64)
        tail = [torch.zeros(n_scores, d, dtype=f64), torch.zeros(n_scores, dtype=f64)]
        if rank is None:
            if Q_init == "zeros":
                return [torch.zeros(n_scores, d, d, dtype=f64)] + tail
            if Q_init == "identity":
                return [torch.eye(d, dtype=f64).repeat(n_scores, 1, 1)] + tail
            A = gauss(n_scores, d, d)
            return [(A + A.transpose(1, 2)) / (2.0 * np.sqrt(d))] + tail
        # Q = V diag(s) V^T: V is always random (V = 0 would be a saddle point
        # where no gradient reaches V), the scales set the start.
        vectors = gauss(n_scores, d, rank) / np.sqrt(d)
        scales = torch.zeros(n_scores, rank, dtype=f64)
        if Q_init == "identity":
            # orthonormal columns with unit scales: a projection, the closest
            # rank-r matrix to the identity
            m = min(rank, d)
            vectors[:, :, :m], _ = torch.linalg.qr(gauss(n_scores, d, m))
            scales[:, :m] = 1.0
        elif Q_init == "random":
            scales = gauss(n_scores, rank)
        return [vectors, scales] + tail

    def fitted_arrays(self, params):
        """The fitted attributes (numpy, in the computation dtype) of the tensors ``params``."""
        arrays = {"Q_vectors_": None, "Q_scales_": None}
        if self.rank is None:
            Q, coef, intercept = params
            Q = 0.5 * (Q + Q.transpose(1, 2))  # remove rounding asymmetry
        else:
            vectors, scales, coef, intercept = params
            arrays["Q_vectors_"], arrays["Q_scales_"] = to_numpy(vectors), to_numpy(scales)
            Q = low_rank_to_dense(vectors, scales)
        # In the computation dtype, as LogisticRegression keeps float32 in coef_.
        arrays.update(Q_=to_numpy(Q), coef_=to_numpy(coef), intercept_=to_numpy(intercept))
        if not self.fit_intercept:
            arrays["intercept_"][:] = 0.0
        return dict(arrays, device_=self.policy.device_name)

    def publish(self, solution, solver, data=None):
        """Set the estimator's fitted attributes from ``solution`` (``solver_ = solver``).

        ``data`` (``(X, y_encoded, sample_weight)``) gives the objective at
        the published model when no step ran (``solution.loss`` None).
        """
        estimator = self.estimator
        attributes = dict(self.fitted_arrays(solution.params), loss_curve_=solution.loss_curve,
                          t_=solution.t)
        for name, value in attributes.items():
            if value is not None:
                setattr(estimator, name, value)
            elif hasattr(estimator, name):
                delattr(estimator, name)
        loss = solution.loss if solution.loss is not None else self.objective(*data)
        # LogisticRegression's shape and dtype: (1,) int32, multinomial included.
        estimator.n_iter_ = np.array([solution.n_iter], dtype=np.int32)
        estimator.solver_ = solver
        estimator.loss_ = float(loss)
        estimator.diverged_ = bool(solution.diverged)
        return estimator

    def objective(self, X, y_encoded, sample_weight):
        """The objective at the published model: weighted mean log-loss plus the penalty."""
        estimator = self.estimator
        with torch.no_grad():
            scores = torch.as_tensor(estimator._raw_scores(X))
            losses = log_loss_per_sample(scores, torch.as_tensor(y_encoded, dtype=torch.int64, device=scores.device))
            data = float(losses.double().cpu().numpy() @ sample_weight) / float(sample_weight.sum())
            penalty = float(quadratic_penalty(torch.as_tensor(estimator.Q_), self.cross_weight))
        return data + 0.5 * self.l2 * (self.quadratic_weight * penalty
                                       + float(np.sum(estimator.coef_**2)))


def reads_rows_by_chunks(route, problem, data):
    """Whether the driver reads the rows a chunk at a time, never whole.

    L-BFGS's packed objective does, on dense rows on the CPU at full rank
    (see :func:`~skquad._training._lbfgs.fit_trainer_lbfgs`): its products
    ``X Q_k`` are formed a chunk of rows at a time.
    """
    X, policy = getattr(data, "X", None), problem.policy  # (Dask's block rows have none)
    return bool(route.gathers_rows and X is not None and not scipy.sparse.issparse(X)
                and policy.device.type == "cpu" and problem.rank is None)


def whole_rows_bytes(route, problem, data):
    """The bytes of the copy a driver makes of rows gathered by chunks, else 0.

    The L-BFGS flat objective gathers :class:`~skquad._foundation._rows.OrderedRows`
    a chunk at a time where it reads the rows by chunks in their own dtype
    (:func:`reads_rows_by_chunks`); every other reader gathers them into one
    array after the memory check.
    """
    X = getattr(data, "X", None)
    if not isinstance(X, OrderedRows):
        return 0
    chunked = reads_rows_by_chunks(route, problem, data) \
        and np.dtype(problem.policy.numpy_dtype) == X.dtype
    return 0 if chunked else X.nbytes


def build_problem(estimator, route, data, previous, *, step_size=None, call=0, allowed=None,
                  quadratic_C=None):
    """The problem of one fit on ``route``: the runtime policy decided once, memory checked.

    ``data`` gives the shape, dtype and total weight (class weights applied)
    as the driver sees them; ``call`` is ``partial_fit``'s call number;
    ``allowed`` the interaction constraints' entries; ``quadratic_C`` the
    inverse strength on ``Q`` (None: ``C``, the pipeline's problem).
    """
    C, d = estimator.C, int(data.n_features)
    problem = QLRProblem(
        estimator, d, estimator._n_scores, 0.0 if np.isinf(C) else 1.0 / (C * data.total_weight),
        previous, step_size, estimator.rank, bool(estimator.fit_intercept),
        1.0 if estimator.penalty == "frobenius" else 2.0, allowed,
        quadratic_weight=1.0 if quadratic_C is None or np.isinf(C) else C / quadratic_C,
    )
    if estimator.penalty in SPARSE_PENALTIES:
        problem.sparse = sparse_penalty(estimator.penalty, estimator.l1_ratio, problem.l2, allowed, d)
    # A regularisation path's fits (a PathMemory in the rows' cache) differ by
    # the penalty only, which changes neither a step's work nor its memory: one
    # policy per route serves them all, unless each fit draws its own numbers.
    cache = getattr(data, "design_cache", {})
    shared = cache if PATH_MEMORY in cache and not route.draws else {}
    key = ("runtime policy", route.solver)
    problem.policy = shared.get(key) or _decide_policy(estimator, route, data, problem, call)
    shared[key] = problem.policy
    return problem


def _decide_policy(estimator, route, data, problem, call):
    """The runtime policy of a fit of ``problem`` on ``route`` (set on it), its memory checked."""
    flops, _ = route.cost(problem, data.n_rows)
    settings = {"device": estimator.device, "n_threads": estimator.n_threads, **route.placement}
    previous = problem.previous
    policy = runtime_policy(
        data.dtype, dtype=estimator.dtype,
        fitted_dtype=None if previous is None else previous["Q"].dtype,
        flops_per_step=flops, random_state=estimator.random_state, call=call, **settings,
    )
    problem.policy = policy
    # the memory once the device is known: products over a chunk of rows per
    # thread where the driver reads them by chunks, else over all of them
    rows_at_once = data.n_rows if not reads_rows_by_chunks(route, problem, data) else min(
        data.n_rows, cpu_chunk_rows(problem.n_features) * (policy.n_threads or torch.get_num_threads()))
    _, required = route.cost(problem, rows_at_once)
    policy.require_memory(
        required + whole_rows_bytes(route, problem, data), "rank", estimator.rank,
        f"fitting {type(estimator).__name__} on {problem.n_features} features",
        advice="set a small rank (e.g. rank=8: d * rank parameters per score instead "
        "of d * d) or select fewer features.",
    )
    return policy
