"""The native SDP solvers as a table: which solver takes a problem, and what continues it.

:data:`ROUTES` lists the routes in order. :func:`~skquad.convex.solve_relaxation`
runs the first row whose ``applies`` is true; a row that stops short of
``tol`` is continued by the first row of its ``then`` that applies, from its
point and with its bound. Every size rule that picks a row lives here, beside
the row it decides. Rows see one :class:`Problem`: the lifted data (on the CPU
for a ``cpu_only`` row, else on the fit's device), the native options and the
stage it continues (``after``).

Adding a solver is one module (its ``solve_*`` function) and one :class:`Route`
in :data:`ROUTES`; :func:`use_routes` runs a block with another table (tests,
experiments)::

    with use_routes(Route("mine", applies=..., solve=..., summary="..."), *ROUTES):
        model.fit(X, y)   # model.solver_ == "mine" where it applies
"""

import contextlib
import contextvars
import dataclasses
import importlib.util
from collections.abc import Callable

from .._foundation._memory import available_memory
from .compact_solver import solve_compact
from .factor_solver import solve_factored, solve_squared_block, threads_for
from .hinge_dual import solve_hinge_dual
from .solution import SolverFailedError
from .squared_dual import solve_squared_dual

__all__ = [
    "ROUTES", "Problem", "Route", "active_routes", "compact_applies", "cpu_only_names",
    "default_beta_floor", "hinge_dual_applies", "native_names", "route", "squared_block_applies",
    "squared_dual_applies", "use_routes",
]


@dataclasses.dataclass(frozen=True)
class Problem:
    """What a route reads: the lifted data and the native solve's settings.

    ``data`` is on the CPU for a ``cpu_only`` row, else on the fit's device;
    ``options`` are the validated ``solver_options``; ``init`` the start
    (a warm start, or the point of the stage this one continues); ``after`` the
    name of that stage (None for the first); ``lower_bound`` a bound already
    certified for the same optimum (None: none).
    """

    data: object
    options: dict
    tol: float = 1e-4
    max_iter: int = 3000
    init: object = None
    callback: Callable = None
    verbose: int = 0
    after: str = None
    lower_bound: float = None
    cpu_data: object = None

    @property
    def time_limit(self):
        return self.options.get("time_limit")

    @property
    def asks_factor_solver(self):
        """``solver_options`` other than a time limit configure the factor solver: asking for them asks for it."""
        return bool(set(self.options) - {"time_limit"})

    def on(self, row):
        """This problem as ``row`` sees it (its data on the CPU when the row is CPU-only)."""
        if row.cpu_only and self.cpu_data is not None:
            return dataclasses.replace(self, data=self.cpu_data)
        return self


@dataclasses.dataclass(frozen=True)
class Route:
    """One row of the solver table.

    Attributes
    ----------
    name : str
        The ``solver`` of the solutions it returns (an estimator's ``solver_``).
    applies : callable
        ``applies(problem) -> bool``: whether the row takes the problem.
    solve : callable
        ``solve(problem) -> SDPSolution`` (one block for a ``blockwise`` row);
        None declines the problem (the next row that applies takes it).
    summary : str
        One line for the documentation's table.
    cpu_only : bool, default=False
        A CPU algorithm whatever ``device`` (interior points on small dense
        Newton systems, which a GPU only slows with transfers).
    then : tuple of str, default=()
        The rows, first that applies, that continue a solve this row leaves
        above ``tol``.
    blockwise : bool or callable, default=False
        Solves the squared loss's independent blocks one at a time (each
        block its own stages, ``lead`` and ``then``); a callable
        ``blockwise(data) -> bool`` says when.
    lead : callable, default=None
        ``lead(data) -> int``: iterations of the ``then`` row before this one
        starts on a block (0: this row first).
    takes_solver_options : bool, default=False
        Whether it is among the rows that ``solver_options`` (other than a
        time limit) ask for.
    beta_floor : callable, default=None
        ``beta_floor(loss, n_lifted) -> float or None``: the smallest
        ``beta / beta_max`` that ``beta="auto"`` picks where this row solves
        (a row whose cost does not grow as ``beta`` shrinks).
    """

    name: str
    applies: Callable
    solve: Callable
    summary: str
    cpu_only: bool = False
    then: tuple = ()
    blockwise: bool = False
    lead: Callable = None
    takes_solver_options: bool = False
    beta_floor: Callable = None

    def splits(self, data):
        """Whether this row solves ``data``'s blocks one at a time."""
        return self.blockwise(data) if callable(self.blockwise) else self.blockwise


# --- The compact cone form (compact_solver): m = p (p + 1) / 2 entries per block.
# Rule: m <= 600 (K m for the hinge and multinomial losses, solved jointly).
# Why: each interior-point step factors a dense m x m block (O(m^3)).
COMPACT_MAX_SIZE = 600
# Rule: the squared loss up to m = 300. Why: the crossover with the numpy block solver.
COMPACT_SQUARED_MAX_SIZE = 300
# Rule: wider squared liftings (m <= 1000) with >= 3 rows per entry and at most
# 2^25 numbers in the n x m lifted rows. Why: the compact form's cost is n m^2
# + m^3 per step whatever the block, where the factor solver's grows with n.
COMPACT_SQUARED_WIDE_MAX_SIZE = 1000
COMPACT_SQUARED_WIDE_ROWS_PER_ENTRY = 3
COMPACT_SQUARED_WIDE_MAX_ELEMENTS = 1 << 25
# Rule: at most 1e6 nonzeros in the hinge's margin (and the multinomial's score)
# rows. Why: the Schur complement costs about rows x (K m)^2 per step.
COMPACT_HINGE_MAX_NONZEROS = 1_000_000
# Rule: beta="auto" goes down to 1e-4 beta_max where the squared loss's m <= 300.
# Why: the interior point costs the same at every beta (the factor solver's
# iterations grow as beta shrinks, so elsewhere the floor is 1e-3).
COMPACT_BETA_FRACTION_FLOOR = 1e-4


def compact_applies(data, max_size=None):
    """Whether ``data``'s relaxation is solved in the compact form by default: features
    given, on the CPU, Clarabel installed, and the size rules above (``max_size``
    replaces ``COMPACT_SQUARED_MAX_SIZE`` / ``COMPACT_MAX_SIZE`` and turns the
    squared loss's many-rows rule off). The binary logistic loss keeps the factor solver.
    """
    if data.loss not in ("squared", "hinge", "logistic") or data.lifted is not None:
        return False
    if data.features.device.type != "cpu":
        return False
    p, n, K = data.n_lifted, data.target.shape[0], data.n_outputs
    m = p * (p + 1) // 2
    many_rows = (
        max_size is None
        and m <= COMPACT_SQUARED_WIDE_MAX_SIZE
        and n >= COMPACT_SQUARED_WIDE_ROWS_PER_ENTRY * m
        and n * m <= COMPACT_SQUARED_WIDE_MAX_ELEMENTS
    )
    if max_size is None:
        max_size = COMPACT_SQUARED_MAX_SIZE if data.loss == "squared" else COMPACT_MAX_SIZE
    if data.loss == "squared" and m > max_size and not many_rows:
        return False
    if data.loss == "hinge":
        touched = m if K == 1 else 2 * m
        if K * m > max_size or n * K * touched > COMPACT_HINGE_MAX_NONZEROS:
            return False
    if data.loss == "logistic":
        if K == 1 or K * m > max_size or n * K * m > COMPACT_HINGE_MAX_NONZEROS:
            return False
    return importlib.util.find_spec("clarabel") is not None  # a dependency: installed


def _compact_beta_floor(loss, p):
    squared_small = loss == "squared" and p * (p + 1) // 2 <= COMPACT_SQUARED_MAX_SIZE
    return COMPACT_BETA_FRACTION_FLOOR if squared_small else None


# --- The barriers on the exact duals (hinge_dual, squared_dual): O((n + p)^3) Newton steps.
# Rule: the binary hinge on at most 2000 (deduplicated) samples.
# Why: its steps are O(n^3); past that the factor solver (O(n p) memory) is faster.
HINGE_DUAL_MAX_SAMPLES = 2000
# Rule: a squared-loss block on at most 1000 samples with a positive weight. Why: as above.
SQUARED_DUAL_MAX_SAMPLES = 1000
# Rule: beyond those, where (n + p)^3 <= SQUARED_DUAL_COST_RATIO n p^2. Why: about 30 Newton
# steps of (n + p)^3 / 3 against the factor solver's thousands of iterations of n p r
# (r about 0.7 p) and its face duals' steps of O(q p^3).
SQUARED_DUAL_COST_RATIO = 400
# Rule: at most 400 lifted coordinates. Why: each step factors two p x p LMIs.
DUAL_MAX_LIFTED = 400
# Rule: the Newton step's arrays (about 6 of (n + p)^2 float64) fit in the
# available memory. Why: else the factor solver, whose memory is O(n p).
_NEWTON_ARRAYS = 6
# Rule: below 40 lifted coordinates the factor solver gets 500 iterations
# before the squared dual. Why: there it is often faster at the default beta,
# and the dual rescues the small betas at which it runs to max_iter.
SQUARED_DUAL_FIRST_LIFTED = 40
FACTOR_ITERATIONS_BEFORE_DUAL = 500


def _fits_in_memory(size):
    available = available_memory()
    return available is None or _NEWTON_ARRAYS * 8.0 * size * size <= available


def hinge_dual_applies(data):
    """Whether the binary hinge ``data`` (features given, on the CPU, ``beta > 0``)
    goes to ``solve_hinge_dual``: the size rules above."""
    return (
        data.loss == "hinge" and data.n_outputs == 1 and data.lifted is None
        and data.features.device.type == "cpu" and data.beta > 0
        and data.target.shape[0] <= HINGE_DUAL_MAX_SAMPLES
        and data.n_lifted <= DUAL_MAX_LIFTED
        and _fits_in_memory(data.target.shape[0] + data.n_lifted)
    )


def squared_dual_applies(data):
    """Whether the squared-loss ``data``'s blocks (features given, on the CPU,
    ``beta > 0``) go to ``solve_squared_dual``: the size rules above."""
    if not (
        data.loss == "squared" and data.lifted is None
        and data.features.device.type == "cpu" and data.beta > 0
    ):
        return False
    n, p = int((data.weight > 0).sum()), data.n_lifted
    small = n <= SQUARED_DUAL_MAX_SAMPLES and p <= DUAL_MAX_LIFTED
    return (small or (n + p) ** 3 <= SQUARED_DUAL_COST_RATIO * n * p * p) and _fits_in_memory(n + p)


def _squared_dual_lead(data):
    return FACTOR_ITERATIONS_BEFORE_DUAL if data.n_lifted < SQUARED_DUAL_FIRST_LIFTED else 0


# --- The factor (Burer-Monteiro) solvers (factor_solver).
def squared_block_applies(data):
    """Whether the numpy block solver takes the squared loss's blocks: plain
    features (no lifted matrices, no polynomial coordinate) on the CPU."""
    return (
        data.loss == "squared" and data.lifted is None
        and data.polynomial is None and data.features.device.type == "cpu"
    )


def _numpy_factor_applies(problem):
    """The squared loss, plain features on the CPU; not one block continuing ``compact``."""
    # Rule: not a single block continuing the compact form. Why: from such a
    # start on targets of order 1e6 the numpy solver stalled short of tol
    # where the torch one, with its aligned certificate, reaches it.
    single_after_compact = problem.data.n_outputs == 1 and problem.after == "compact"
    return squared_block_applies(problem.data) and not single_after_compact


def _factor_options(problem):
    return dict(
        problem.options, tol=problem.tol, max_iter=problem.max_iter, init=problem.init,
        callback=problem.callback, verbose=problem.verbose,
    )


def _solve_numpy_factor(problem):
    known = {} if problem.lower_bound is None else {"lower_bound": problem.lower_bound}
    return solve_squared_block(problem.data, **_factor_options(problem), **known)


def _several_squared_blocks(data):
    return data.loss == "squared" and data.n_outputs > 1


def _solve_torch_factor(problem):
    return solve_factored(problem.data, **_factor_options(problem))


def _solve_hinge(problem):
    return solve_hinge_dual(
        problem.data, tol=problem.tol, time_limit=problem.time_limit,
        callback=problem.callback, verbose=problem.verbose,
    )


def _solve_squared_dual(problem):
    return solve_squared_dual(
        problem.data, tol=problem.tol, time_limit=problem.time_limit,
        callback=problem.callback, verbose=problem.verbose,
    )


def _solve_compact(problem):
    try:
        # Small by construction (m <= 600): one torch and one BLAS thread.
        with threads_for(0, problem.data.features.device):
            return solve_compact(
                problem.data, tol=problem.tol, callback=problem.callback, verbose=problem.verbose
            )
    except SolverFailedError:
        # The exponential cones can end in InsufficientProgress: the factor
        # solver solves the logistic loss from the start instead.
        if problem.data.loss != "logistic":
            raise
        return None


def _hinge_dual_takes(problem):
    """The binary hinge, ``n <= 2000``, ``p <= 400``, ``beta > 0``, the Newton arrays in memory."""
    return hinge_dual_applies(problem.data)


def _compact_takes(problem):
    """``q = p (p + 1) / 2 <= 300`` (squared; to 1000 with 3 rows per entry), ``K q <= 600`` (hinge, multinomial)."""
    return compact_applies(problem.data)


def _squared_dual_takes(problem):
    """The squared loss, ``beta > 0``, ``n <= 1000`` weighted rows and ``p <= 400``, or ``(n + p)^3 <= 400 n p^2``; below ``p = 40`` after 500 factor iterations."""
    return squared_dual_applies(problem.data)


def _always(problem):
    """Every problem."""
    return True


_FACTOR = ("native_numpy", "native")

#: The native routes, in the order they are tried.
ROUTES = (
    Route(
        "hinge_dual", _hinge_dual_takes, _solve_hinge,
        "Barrier method on the binary hinge's exact dual (Newton steps on n + p unknowns).",
        cpu_only=True, then=_FACTOR,
    ),
    Route(
        "compact", _compact_takes, _solve_compact,
        "Interior point (Clarabel) on the compact cone form of small liftings.",
        cpu_only=True, then=_FACTOR, beta_floor=_compact_beta_floor,
    ),
    Route(
        "squared_dual", _squared_dual_takes, _solve_squared_dual,
        "Barrier method on a squared-loss block's exact dual, block by block.",
        cpu_only=True, then=_FACTOR, blockwise=True, lead=_squared_dual_lead,
    ),
    Route(
        "native_numpy", _numpy_factor_applies, _solve_numpy_factor,
        "Burer-Monteiro factor solver in numpy (L-BFGS-B), squared-loss blocks on the CPU.",
        blockwise=True, takes_solver_options=True,
    ),
    Route(
        "native", _always, _solve_torch_factor,
        "Burer-Monteiro factor solver in torch (L-BFGS), every problem, on ``device``.",
        blockwise=_several_squared_blocks, takes_solver_options=True,
    ),
)

_active = contextvars.ContextVar("skquad_convex_routes", default=None)


def active_routes():
    """The table in force: :data:`ROUTES`, or the rows of an enclosing :func:`use_routes`."""
    rows = _active.get()
    return ROUTES if rows is None else rows


@contextlib.contextmanager
def use_routes(*rows):
    """Run a block with another solver table.

    Parameters
    ----------
    *rows : Route or str
        The rows in order; a name stands for that row of :data:`ROUTES`.
        ``then`` names resolve in this table first, then in :data:`ROUTES`.

    Examples
    --------
    >>> from skquad.convex.routes import use_routes
    >>> with use_routes("native"):  # the torch factor solver for every problem
    ...     pass
    """
    table = tuple(route(row, ROUTES) if isinstance(row, str) else row for row in rows)
    token = _active.set(table)
    try:
        yield table
    finally:
        _active.reset(token)


def route(name, rows=None):
    """The row called ``name``: in ``rows`` (default: the table in force), else in :data:`ROUTES`."""
    for row in tuple(rows if rows is not None else active_routes()) + ROUTES:
        if row.name == name:
            return row
    raise KeyError(f"No solver route named {name!r}.")


def first_route(problem, names=None):
    """The first row (of ``names`` in that order, default the whole table) that takes ``problem``."""
    rows = active_routes() if names is None else [route(name) for name in names]
    for row in rows:
        if problem.asks_factor_solver and not row.takes_solver_options:
            continue
        if row.applies(problem.on(row)):
            return row
    return None


def cpu_only_names():
    """Names of the rows that run on the CPU whatever ``device``."""
    return tuple(row.name for row in active_routes() if row.cpu_only)


def native_names():
    """Names every native route may put in ``solver_``."""
    return tuple(dict.fromkeys(row.name for row in active_routes() + ROUTES))


def default_beta_floor(loss, n_lifted, floor):
    """``beta="auto"``'s floor: the lowest of ``floor`` and the rows' ``beta_floor``."""
    floors = [row.beta_floor(loss, n_lifted) for row in active_routes() if row.beta_floor]
    return min([floor] + [value for value in floors if value is not None])
