"""The numpy engine of the L-BFGS driver: unconstrained L-BFGS in compact form.

``minimize_lbfgs(engine="compact")`` (``_lbfgs``) runs
``minimize_compact_lbfgs()``. It lives in a foundation module (numpy and
scipy only) so that the SDP's numpy block solver (``convex/factor_solver.py``,
``solve_squared_block``), which the room table keeps below the training
engine, calls the same code. Why it exists: for a few thousand parameters and
a cheap objective, scipy's L-BFGS-B spends as long in its own bookkeeping
(``setulb``, two calls an iteration) as in the objective; this engine's
iteration costs three products with the pairs and two small triangular
solves.
"""

import warnings

import numpy as np
import scipy.linalg
from scipy.optimize import OptimizeResult, line_search

try:
    # Moré and Thuente's search, L-BFGS-B's, which scipy's public line_search
    # is not. A private name (scipy 1.8 to 1.17 at least): should a release
    # move it, the engine runs the public Wolfe search instead ("wolfe"), which
    # converges to the same points with a few more evaluations.
    from scipy.optimize._linesearch import line_search_wolfe1
except ImportError:  # pragma: no cover - depends on the scipy release
    line_search_wolfe1 = None

__all__ = ["PathMemory", "lbfgs_memory", "minimize_compact_lbfgs"]


class _CompactMemory:
    """The last ``size`` pairs ``(s, y)`` of L-BFGS and its inverse Hessian
    ``H`` in the compact form of Byrd, Nocedal and Schnabel (1994, eq. 3.1)::

        H = gamma I + [S, gamma Y] [[R⁻ᵀ (D + gamma YᵀY) R⁻¹, -R⁻ᵀ], [-R⁻¹, 0]] [S, gamma Y]ᵀ

    (``R`` the upper triangle of ``(s_i · y_j)``, ``D`` its diagonal, ``gamma = s·y / y·y``
    of the newest pair): ``H g`` in three products and two small triangular solves. The
    pairs sit in a ring; the small matrices are kept in age order, and the products run
    over the filled rows in storage order, so that shifting changes no rounding.
    """

    def __init__(self, size, n_parameters):
        self.size = size
        # rows 0 .. size - 1 hold the pairs' s, rows size .. 2 size - 1 their y
        self.pairs = np.empty((2 * size, n_parameters))
        # s_i · y_j and y_i · y_j by age (oldest first), in the leading k x k corner
        self.SY = np.empty((size, size))
        self.YY = np.empty((size, size))
        self.order = []  # ring rows of the pairs, oldest first
        self.ages = np.empty(0, dtype=np.intp)  # the same, as an index array
        # H's initial matrix is gamma diag(scale) (None: gamma I); YY then holds y_i · (scale y_j)
        self.scale = None

    def _scaled(self, vector):
        return vector if self.scale is None else vector * self.scale

    def add(self, s, y):
        """Keep the pair when ``s · y > 0`` (``H`` stays positive definite)."""
        if not float(s @ y) > 1e-10 * float(y @ y):
            return
        size, newest = self.size, len(self.order)
        if newest == size:
            row = self.order.pop(0)
            newest -= 1
            # the oldest pair leaves the age-ordered products (an overlapping
            # copy, which numpy buffers)
            self.SY[:-1, :-1] = self.SY[1:, 1:]
            self.YY[:-1, :-1] = self.YY[1:, 1:]
        else:
            row = newest
        self.pairs[row], self.pairs[size + row] = s, y
        self.order.append(row)
        self.ages = np.array(self.order, dtype=np.intp)
        filled = newest + 1  # rows 0 .. filled - 1 of S and of Y hold pairs
        # (products over exactly the filled rows: the same sums, to the last
        # bit, as the pairs' products in storage order)
        S, Y = self.pairs[:filled], self.pairs[size : size + filled]
        self.SY[:filled, newest] = (S @ y)[self.ages]  # s_i · y
        self.SY[newest, :filled] = (Y @ s)[self.ages]  # s · y_j
        self.YY[newest, :filled] = self.YY[:filled, newest] = (Y @ self._scaled(y))[self.ages]

    def clear(self):
        """Forget every pair (L-BFGS-B's restart after a failed line search)."""
        self.order, self.ages = [], np.empty(0, dtype=np.intp)

    def shift(self, curvature, scale=None):
        """Move every pair's ``y`` by ``curvature * s`` (the pairs of ``f + 0.5 x·(curvature x)``),
        dropping those whose ``s · y`` is not positive; ``scale``: the new initial diagonal."""
        k, ages = len(self.order), self.ages
        self.scale = scale
        if not k:
            return
        S, Y = self.pairs[:k], self.pairs[self.size : self.size + k]  # the filled ring rows
        Y += curvature * S
        S_aged, Y_aged = S[ages], Y[ages]
        SY, YY = S_aged @ Y_aged.T, Y_aged @ self._scaled(Y_aged).T
        if np.all(np.diagonal(SY) > 1e-10 * np.diagonal(YY)):
            self.SY[:k, :k], self.YY[:k, :k] = SY, YY
            return
        kept = [(S[row].copy(), Y[row].copy()) for row in self.order]
        self.clear()
        for s, y in kept:
            self.add(s, y)

    def direction(self, gradient):
        """``-H gradient``; with no pair yet, ``-gradient`` scaled to length 1 (L-BFGS-B's first step)."""
        k = len(self.order)
        if not k:
            if self.scale is not None:  # a diagonal inverse Hessian's step
                return -self.scale * gradient
            return -gradient / max(float(np.linalg.norm(gradient)), 1e-300)
        size, ages = self.size, self.ages
        S, Y = self.pairs[:k], self.pairs[size : size + k]  # by ring row
        SY = np.ascontiguousarray(self.SY[:k, :k])
        YY = np.ascontiguousarray(self.YY[:k, :k])
        gamma = SY[-1, -1] / YY[-1, -1]
        # (trtrs reads SY's upper triangle only: R)
        w = _upper_solve(SY, (S @ gradient)[ages])
        scaled = self._scaled(gradient)
        right = np.diagonal(SY) * w + gamma * (YY @ w) - gamma * (Y @ scaled)[ages]
        top = _upper_solve(SY, right, transpose=True)
        top_rows = np.empty(k)
        w_rows = np.empty(k)
        top_rows[ages], w_rows[ages] = top, w
        # -(gamma g + top S - gamma (w Y)), the same operations in place: three
        # n-vectors fewer
        step = np.multiply(scaled, gamma)
        step += top_rows @ S
        correction = self._scaled(w_rows @ Y)
        correction *= gamma
        step -= correction
        return np.negative(step, out=step)


def lbfgs_memory(size, n_parameters, scale=None):
    """An empty memory of ``size`` pairs whose initial matrix is ``gamma diag(scale)``.

    ``direction(g)`` is ``-H g``, ``add(s, y)`` keeps a pair, ``clear()``
    forgets them (see ``_CompactMemory``).
    """
    memory = _CompactMemory(size, n_parameters)
    memory.scale = scale
    return memory


class PathMemory:
    """The L-BFGS memory that a path of objectives ``f_k(x) = L(x) + 0.5 x·(w_k x)`` shares.

    The objectives differ by a diagonal quadratic penalty only (a
    regularisation path: the same data term ``L``, the weights ``w_k``), so a
    pair ``(s, y)`` of ``f_j`` is exactly one of ``f_k`` once ``y`` is moved
    by ``(w_k - w_j) s``: the next objective of the path starts with the
    curvature the last one learned, and its first step is the path's
    first-order predictor (the inverse Hessian times the penalty's change of
    the gradient) instead of a unit steepest-descent step.
    The same move carries the best evaluation of the last objective, and of
    its float32 twin (``kind``; the value moves by ``0.5 x·(w_k - w_j) x``,
    the gradient by ``(w_k - w_j) x``, computed in float64 by both): a fit
    that starts from the last fit's solution reads its value and gradient
    there without evaluating them (:meth:`remembering`), and ends at once
    where that gradient already passes the test.
    :meth:`for_penalty` moves them to the next objective's weights;
    :func:`minimize_compact_lbfgs` reads and extends the pairs (``memory=``).
    """

    # A start this close (relative to the carried point's largest entry) is
    # that point: the solution's round trip through the fitted model's arrays.
    _SAME_POINT = 1e-12

    def __init__(self, size=None):
        # the pairs kept (None: the run's maxcor)
        self.size = size
        self.memory, self.weight, self.points = None, None, {}
        # the data term's Hessian diagonal, or None (see :meth:`scale`)
        self.curvature = None
        # ``cold_start() -> x``: where the path's first fit starts instead of zero (None: at zero)
        self.cold_start = None

    def for_penalty(self, weight):
        """Move the pairs and the points to the objective of penalty weights ``weight``; returns self."""
        weight = np.asarray(weight, dtype=np.float64)
        if self.weight is not None and self.weight.shape == weight.shape:
            change = weight - self.weight
            self.points = {kind: (x, value + 0.5 * float((change * x) @ x), gradient + change * x)
                           for kind, (x, value, gradient) in self.points.items()}
        else:  # another parameter layout: nothing to carry
            self.memory, self.points = None, {}
        self.weight = weight.copy()
        if self.memory is not None and self.memory.pairs.shape[1] == weight.size:
            self.memory.shift(change, self.scale())
        return self

    def scale(self):
        """The diagonal of L-BFGS's initial inverse Hessian (times gamma), or None (gamma I).

        With ``curvature`` (the data term's Hessian diagonal) the inverse of
        the objective's Hessian diagonal, ``1 / (curvature + weight)``: the
        penalised entries and the unpenalised ones (the intercepts), whose
        curvatures differ by the penalty, start on the scale of each, and a
        first step without pairs is that diagonal Newton step.
        """
        if self.curvature is None or self.curvature.shape != self.weight.shape:
            return None
        total = self.curvature + self.weight
        return 1.0 / np.maximum(total, 1e-12 * np.max(total, initial=0.0) + 1e-300)

    def start(self, x):
        """``x``, or the carried solution where ``x`` is that point up to rounding.

        With no point carried (the path's first fit), a zero ``x`` (a cold
        start) is replaced by ``cold_start()`` where one is given.
        """
        point = self.points.get("exact")
        if point is None and self.cold_start is not None and not np.any(x):
            return self.cold_start()
        if point is not None and point[0].shape == x.shape and np.max(
                np.abs(x - point[0]), initial=0.0) <= self._SAME_POINT * np.max(
                np.abs(point[0]), initial=0.0):
            return point[0].copy()
        return x

    def knows(self, x, kind="exact"):
        """Whether the carried point of ``kind`` is ``x`` (its value and gradient known)."""
        point = self.points.get(kind)
        return point is not None and np.array_equal(x, point[0])

    def remembering(self, objective, kind="exact"):
        """``objective`` that answers at a carried point and keeps its best evaluation of ``kind``.

        A float32 twin (``kind="coarse"``) answers at the carried exact point
        too: that evaluation is known, and the finer one.
        """

        def remembered(x):
            for known in dict.fromkeys((kind, "exact")):
                if self.knows(x, known):
                    value, gradient = self.points[known][1:]
                    return value, gradient.copy()
            value, gradient = objective(x)
            if kind not in self.points or value < self.points[kind][1]:
                self.points[kind] = (x.copy(), value, gradient.copy())
            return value, gradient

        vars(remembered).update(vars(objective))  # (the twin's attributes)
        return remembered

    def without_pairs(self):
        """The memory of the same objective with no pair or point (its scale only)."""
        other = PathMemory(self.size)
        other.weight, other.curvature = self.weight, self.curvature
        return other

    def take(self, size, n_parameters):
        """The memory to run on (a new one where none fits ``size`` and ``n_parameters``)."""
        size = size if self.size is None else self.size
        memory = self.memory
        if memory is None or memory.size != size or memory.pairs.shape[1] != n_parameters:
            memory = self.memory = _CompactMemory(size, n_parameters)
            memory.scale = None if self.weight is None else self.scale()
        return memory


def _upper_solve(R, b, transpose=False):
    """``R⁻¹ b`` (or ``R⁻ᵀ b``) for a small upper triangular ``R`` (LAPACK's
    ``trtrs`` directly: ``solve_triangular``'s checks cost more than the solve)."""
    solution, info = scipy.linalg.lapack.dtrtrs(R, b, lower=0, trans=int(transpose))
    if info != 0:
        raise np.linalg.LinAlgError("singular L-BFGS memory")
    return solution


# The line searches of ``_line_step``. "lbfgsb": L-BFGS-B's own ``dcsrch`` from the unit step
# with these tolerances and steps up to 1e10. "wolfe": scipy's strong-Wolfe search (c1 = 1e-4)
# from the step the previous decrease suggests (the faster for the SDP block solver).
_LINE_SEARCHES = ("lbfgsb", "wolfe")
_SUFFICIENT_DECREASE = {"lbfgsb": 1e-3, "wolfe": 1e-4}
_CURVATURE = 0.9
_STEP_TOLERANCE = 0.1
_LARGEST_STEP = 1e10


def _line_step(evaluate, x, value, gradient, direction, previous_value, maxls, search):
    """A step along ``direction``: ``(point, value, gradient)``, or None.

    The unit step when it meets the strong Wolfe conditions (``c1`` of the ``search``,
    ``c2 = 0.9``); else the ``search`` (``_LINE_SEARCHES``; "lbfgsb" gives L-BFGS-B's
    iterates), reusing the unit step's evaluation; where it fails (an inexact gradient
    at a kink), the first halving with sufficient decrease. ``maxls`` evaluations at most.
    """
    slope = float(gradient @ direction)
    if not slope < 0.0:  # round-off in H: steepest descent instead
        direction = -gradient
        slope = float(gradient @ direction)
    if not slope < 0.0:
        return None
    known = []  # (point, evaluation), newest last

    def cached(point):
        # (the line search asks for the value and the slope at a point in turn:
        # the newest is compared first, cheaper than a key of the point's bytes)
        for seen, evaluation in reversed(known):
            if np.array_equal(seen, point):
                return evaluation
        known.append((point, evaluate(point)))
        return known[-1][1]

    c1 = _SUFFICIENT_DECREASE[search]
    trial = x + direction
    trial_value, trial_gradient = cached(trial)
    if trial_value <= value + c1 * slope and abs(
        float(trial_gradient @ direction)
    ) <= _CURVATURE * abs(slope):
        return trial, trial_value, trial_gradient
    value_at, gradient_at = (lambda point: cached(point)[0]), (lambda point: cached(point)[1])
    with warnings.catch_warnings():
        # (scipy's LineSearchWarning, a RuntimeWarning: a failure is handled below)
        warnings.filterwarnings("ignore", "The line search algorithm", RuntimeWarning)
        if search == "lbfgsb" and line_search_wolfe1 is not None:
            # no previous value: dcsrch starts from the unit step
            length = line_search_wolfe1(
                value_at, gradient_at, x, direction, gradient, value, None, c1=c1,
                c2=_CURVATURE, amax=_LARGEST_STEP, amin=0.0, xtol=_STEP_TOLERANCE,
            )[0]
        else:
            length = line_search(
                value_at, gradient_at, x, direction, gradient, value, previous_value, c1=c1,
                c2=_CURVATURE, maxiter=maxls,
            )[0]
    if length is not None:
        trial = x + length * direction
        return (trial, *cached(trial))
    length = 1.0
    for _ in range(maxls):
        trial = x + length * direction
        trial_value, trial_gradient = cached(trial)
        if np.isfinite(trial_value) and trial_value <= value + 1e-4 * length * slope:
            return trial, trial_value, trial_gradient
        length *= 0.5
    return None


def minimize_compact_lbfgs(objective, x, *, max_iter, max_fun, tol, ftol, maxls, maxcor,
                           on_iteration, gradient_scale=None, search="wolfe", memory=None):
    """Unconstrained L-BFGS in numpy (``minimize_lbfgs(engine="compact")``).

    ``objective(x) -> (value, gradient)``; the options are
    ``minimize_lbfgs``'s (``tol`` the largest gradient entry, ``ftol`` the
    relative decrease, ``maxls`` the line search's evaluations, ``maxcor``
    the pairs kept); ``on_iteration(iteration, value, x) -> bool``;
    ``gradient_scale`` (positive, ``x``'s shape) makes the gradient test
    read ``gradient / gradient_scale``, as ``minimize_lbfgs``'s does;
    ``search`` is the line search where the unit step fails
    (``_LINE_SEARCHES``: ``minimize_lbfgs`` takes L-BFGS-B's, "lbfgsb");
    ``memory`` a :class:`PathMemory` whose pairs the run starts from and
    extends (None: an empty memory of its own).

    Each iteration steps along ``-H g`` (``_CompactMemory``) by
    ``_line_step()``; where no step is found, the memory is dropped and the
    steepest descent tried, as L-BFGS-B does. Stops as L-BFGS-B does: the
    largest gradient entry at most ``tol``, a relative decrease at most
    ``ftol``, a failed line search, ``max_iter`` or ``max_fun``, or
    ``on_iteration`` returning True. Returns an ``OptimizeResult`` with
    scipy's fields and messages.
    """
    if search not in _LINE_SEARCHES:
        raise ValueError(f"search must be one of {_LINE_SEARCHES}, got {search!r}.")
    memory = (_CompactMemory(max(1, maxcor), x.size) if memory is None
              else memory.take(max(1, maxcor), x.size))
    value, gradient = objective(x)
    counter = {"evaluations": 1}

    def evaluate(point):
        counter["evaluations"] += 1
        return objective(point)

    iteration, previous_value = 0, None
    status, message, stopped = 1, "STOP: TOTAL NO. OF ITERATIONS REACHED LIMIT", False
    inverse_scale = None if gradient_scale is None else 1.0 / np.asarray(gradient_scale)
    while True:
        tested = gradient if inverse_scale is None else gradient * inverse_scale
        if np.max(np.abs(tested), initial=0.0) <= tol:
            status, message = 0, "CONVERGENCE: NORM OF PROJECTED GRADIENT <= PGTOL"
            break
        if iteration >= max_iter:
            break
        if counter["evaluations"] >= max_fun:
            message = "STOP: TOTAL NO. OF F,G EVALUATIONS EXCEEDS LIMIT"
            break
        step = _line_step(evaluate, x, value, gradient, memory.direction(gradient),
                          previous_value, maxls, search)
        if step is None and memory.order:
            # As L-BFGS-B: forget the pairs and try once more from steepest descent.
            memory.clear()
            step = _line_step(evaluate, x, value, gradient, memory.direction(gradient),
                              previous_value, maxls, search)
        if step is None:
            status, message = 2, "ABNORMAL: LINE SEARCH FAILED"
            break
        trial, trial_value, trial_gradient = step
        memory.add(trial - x, trial_gradient - gradient)
        previous_value = value
        x, value, gradient = trial, trial_value, trial_gradient
        iteration += 1
        if on_iteration is not None and on_iteration(iteration, value, x):
            stopped = True
            break
        if previous_value - value <= ftol * max(abs(previous_value), abs(value), 1.0):
            status, message = 0, "CONVERGENCE: RELATIVE REDUCTION OF F <= FACTR*EPSMCH"
            break
    evaluations = counter["evaluations"]
    return OptimizeResult(
        x=x, fun=value, jac=gradient, nit=iteration, nfev=evaluations, status=status,
        success=status == 0, message=message, stopped_by_callback=stopped,
    )
