"""skquad.convex.barrier: the toolkit the hinge, squared and face duals share."""

import math

import numpy as np

from skquad.convex.barrier import (
    CentralPath,
    backtrack,
    follow_central_path,
    lmi_log_barrier,
    newton_direction,
    tangent_move,
)


def _barrier(y, mu):
    """``-log det S+ - log det S- - log(1 - Σ mu)`` with ``S± = Diag mu ± y I``, plus ``y``."""
    S = np.diag(mu)
    value = lmi_log_barrier(S + y[0] * np.eye(2), S - y[0] * np.eye(2), 1.0 - mu.sum())
    return value + y[0] if math.isfinite(value) else math.inf


def test_the_log_barrier_is_infinite_outside_the_lmis_and_the_trace():
    eye = np.eye(2)
    assert math.isfinite(lmi_log_barrier(eye, eye, 0.5))
    assert lmi_log_barrier(eye, -eye, 0.5) == math.inf
    assert lmi_log_barrier(eye, eye, 0.0) == math.inf
    assert lmi_log_barrier(eye, eye, 1.0) == -0.0


def test_newton_backtracking_and_the_tangent_move_stay_feasible_and_descend():
    y, mu = np.array([0.0]), np.array([0.2, 0.2])
    step = np.array([-1.0, 0.0, 0.0])  # lowers y, leaves the LMIs after 0.2
    moved = backtrack(_barrier, y, mu, 10.0 * step, 1e-3)
    assert moved is not None and _barrier(*moved) < _barrier(y, mu)
    assert backtrack(_barrier, y, mu, -10.0 * step, 1.0) is None  # no descent along +y
    short = tangent_move(_barrier, y, mu, 0.01 * step)  # the barrier's minimum is near y = -0.01
    assert short[0][0] < 0 and _barrier(*short) < _barrier(y, mu)
    assert tangent_move(_barrier, y, mu, -0.01 * step)[0] is y  # kept where no fraction lowers it
    step, decrement, _ = newton_direction(np.diag([1.0, 4.0]), np.array([1.0, -2.0]))
    np.testing.assert_allclose(step, [-1.0, 0.5])
    assert decrement == 2.0
    assert newton_direction(-np.eye(2), np.array([1.0, 0.0]))[0] is None  # not positive definite


class _NoDescent:
    """A barrier whose Newton system never descends (a zero gradient)."""

    def value(self, y, mu, tau):
        return 0.0

    def system(self, y, mu, tau):
        return np.eye(y.size + mu.size), np.zeros(y.size + mu.size)


def test_the_tau_loop_raises_tau_once_then_stops_at_the_second_blocked_step():
    path = CentralPath(np.zeros(1), np.ones(2), 3.0, {}, 0.0)
    checked = []
    follow_central_path(
        path, _NoDescent(), None, lambda path: checked.append(path.tau) or 0.5, tol=1e-4,
        max_steps=50, time_limit=None, centred=0.25, tau_factor=4.0,
    )
    assert path.status == "stalled" and path.steps == 0
    assert path.tau == 12.0 and checked == [12.0] and path.gap == 0.5
