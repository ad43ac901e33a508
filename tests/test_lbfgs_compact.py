"""The L-BFGS driver's numpy engine (skquad._foundation._lbfgs_compact), against
the two-loop recursion and scipy's L-BFGS-B."""

import numpy as np
import pytest

from skquad._training import lbfgs_convergence_message, minimize_lbfgs
from skquad._foundation._lbfgs_compact import _CompactMemory


def rosenbrock(theta):
    x, y = theta[:-1], theta[1:]
    value = float(np.sum(100.0 * (y - x**2) ** 2 + (1.0 - x) ** 2))
    gradient = np.zeros_like(theta)
    gradient[:-1] = -400.0 * x * (y - x**2) - 2.0 * (1.0 - x)
    gradient[1:] += 200.0 * (y - x**2)
    return value, gradient


def two_loop_direction(pairs, gradient, scale=None):
    """The textbook two-loop recursion (Nocedal & Wright, algorithm 7.4): the reference,
    with the initial matrix gamma diag(scale) (gamma = s·y / y·(scale y) of the newest pair)."""
    scale = np.ones_like(gradient) if scale is None else scale
    q = gradient.copy()
    alphas = []
    for s, y in reversed(pairs):
        alpha = (s @ q) / (s @ y)
        q -= alpha * y
        alphas.append(alpha)
    s, y = pairs[-1]
    r = (s @ y) / (y @ (scale * y)) * scale * q
    for (s, y), alpha in zip(pairs, reversed(alphas)):
        r += s * (alpha - (y @ r) / (s @ y))
    return -r


def test_compact_memory_is_the_two_loop_recursions_inverse_hessian():
    """-H g of the compact form equals the two-loop recursion's for the same pairs,
    before and after the ring of pairs wraps (the oldest dropped)."""
    rng = np.random.default_rng(0)
    n, size = 12, 4
    memory = _CompactMemory(size, n)
    pairs = []
    for _ in range(7):
        s = rng.standard_normal(n)
        y = s + 0.3 * rng.standard_normal(n)  # s · y > 0
        memory.add(s, y)
        pairs = (pairs + [(s, y)])[-size:]
        g = rng.standard_normal(n)
        np.testing.assert_allclose(memory.direction(g), two_loop_direction(pairs, g), rtol=1e-10)
    # a pair with s · y <= 0 is not kept
    memory.add(np.ones(n), -np.ones(n))
    g = rng.standard_normal(n)
    np.testing.assert_allclose(memory.direction(g), two_loop_direction(pairs, g), rtol=1e-10)


def test_a_diagonal_scale_is_the_two_loop_recursion_from_that_initial_matrix():
    """With ``scale`` (PathMemory's diagonal), -H g is the two-loop recursion's from
    gamma diag(scale), also after shift(); without pairs it is -scale * g."""
    rng = np.random.default_rng(2)
    n, size = 12, 4
    memory = _CompactMemory(size, n)
    memory.shift(0.0, rng.uniform(0.1, 10.0, n))
    g = rng.standard_normal(n)
    np.testing.assert_allclose(memory.direction(g), -memory.scale * g)
    pairs = []
    for _ in range(6):
        s = rng.standard_normal(n)
        y = s + 0.3 * rng.standard_normal(n)
        memory.add(s, y)
        pairs = (pairs + [(s, y)])[-size:]
    np.testing.assert_allclose(memory.direction(g), two_loop_direction(pairs, g, memory.scale),
                               rtol=1e-10)
    curvature, scale = rng.uniform(0.0, 1.0, n), rng.uniform(0.1, 10.0, n)
    memory.shift(curvature, scale)
    moved = [(s, y + curvature * s) for s, y in pairs]
    np.testing.assert_allclose(memory.direction(g), two_loop_direction(moved, g, scale), rtol=1e-10)


def test_compact_engine_reaches_scipys_minimum():
    """engine='compact' against scipy's L-BFGS-B on Rosenbrock (20 parameters):
    the same minimum, every iteration reported once, the gradient test honoured."""
    x0 = np.full(20, -1.0)
    options = dict(max_iter=2000, max_fun=5000, tol=1e-8, ftol=0.0, maxcor=10)
    seen = []
    compact = minimize_lbfgs(rosenbrock, x0, engine="compact",
                             on_iteration=lambda i, loss, theta: seen.append(i) and False, **options)
    reference = minimize_lbfgs(rosenbrock, x0, **options)
    assert compact.success and compact.status == 0 and "PGTOL" in compact.message
    np.testing.assert_allclose(compact.x, 1.0, atol=1e-7)
    np.testing.assert_allclose(compact.x, reference.x, atol=1e-7)
    assert np.max(np.abs(rosenbrock(compact.x)[1])) <= 1e-8
    assert seen == list(range(1, compact.nit + 1))
    assert compact.nfev <= 2 * compact.nit + 1


def test_compact_engine_limits_and_callback():
    stopped = minimize_lbfgs(rosenbrock, np.zeros(5), max_iter=100, max_fun=1000, tol=1e-12,
                             engine="compact", on_iteration=lambda i, loss, theta: i == 2)
    assert stopped.stopped_by_callback and stopped.nit == 2
    assert lbfgs_convergence_message(stopped, 100, 1000) is None
    limited = minimize_lbfgs(rosenbrock, np.zeros(50), max_iter=2, max_fun=1000, tol=1e-12,
                             engine="compact")
    assert limited.nit == 2 and limited.status == 1
    assert "max_iter=2" in lbfgs_convergence_message(limited, 2, 1000)
    with pytest.raises(ValueError, match="engine"):
        minimize_lbfgs(rosenbrock, np.zeros(5), max_iter=10, max_fun=10, tol=0.0, engine="torch")


def test_compact_engine_takes_scipys_iterates():
    """Unconstrained, the numpy engine is L-BFGS-B: the same direction (the compact
    form) and the same line search (the unit step, then dcsrch from it with L-BFGS-B's
    tolerances), so the same iterates on Rosenbrock, where the unit step often fails,
    up to rounding (1e-8 over the first 30 iterations, on numbers of order 1)."""
    x0 = np.full(6, -1.2)
    paths = {}
    for engine in ("scipy", "compact"):
        path = []
        result = minimize_lbfgs(rosenbrock, x0, max_iter=30, max_fun=1000, tol=0.0, ftol=0.0,
                                maxcor=10, engine=engine,
                                on_iteration=lambda i, loss, theta: path.append(theta.copy()))
        paths[engine] = (np.array(path), result.nfev)
    np.testing.assert_allclose(paths["compact"][0], paths["scipy"][0], atol=1e-8)
    assert paths["compact"][1] == paths["scipy"][1]


def test_compact_engine_reads_the_scaled_gradient_test():
    """gradient_scale on the numpy engine: the test reads gradient / scale, as
    scipy's engine under the driver does (the same stop, the same point)."""
    scale = np.full(5, 1e3)
    kwargs = dict(max_iter=100, max_fun=1000, tol=1e-3, ftol=0.0, gradient_scale=scale)
    compact = minimize_lbfgs(rosenbrock, np.zeros(5), engine="compact", **kwargs)
    reference = minimize_lbfgs(rosenbrock, np.zeros(5), **kwargs)
    assert compact.success and "PGTOL" in compact.message
    assert compact.nit == reference.nit
    np.testing.assert_allclose(compact.x, reference.x, atol=1e-8)
    gradient = rosenbrock(compact.x)[1]
    assert np.max(np.abs(gradient) / scale) <= 1e-3 < np.max(np.abs(gradient))


def test_compact_engine_steps_past_an_inexact_gradient():
    """Beyond a clamp the value is flat but the gradient still points on (as the SDP
    block solver's capped log rho): no step there meets the curvature condition; the
    engine still ends at the clamp's minimum value, reported as a failed search."""
    def clamped(theta):
        value = float(np.sum((np.minimum(theta, 1.0) - 3.0) ** 2))
        return value, 2.0 * (np.minimum(theta, 1.0) - 3.0)

    result = minimize_lbfgs(clamped, np.zeros(3), max_iter=50, max_fun=500, tol=1e-10,
                            engine="compact")
    assert result.fun == pytest.approx(12.0, rel=1e-12)
    assert np.all(result.x >= 1.0 - 1e-12) and result.status == 2


def test_compact_engine_halves_the_step_where_the_wolfe_search_fails(monkeypatch):
    """Where scipy's strong-Wolfe search gives up (it returns no step length), the
    engine takes the first halving of the unit step with sufficient decrease
    (Armijo): here every search fails, and the engine still reaches the minimum of
    a quadratic whose unit steps overshoot, one halving per iteration at least."""
    from skquad._foundation import _lbfgs_compact

    searches = []

    def failing_search(*args, **kwargs):
        searches.append(1)
        return (None,) * 6

    monkeypatch.setattr(_lbfgs_compact, "line_search", failing_search)
    monkeypatch.setattr(_lbfgs_compact, "line_search_wolfe1", failing_search)
    curvature = np.array([1.0, 30.0, 100.0])

    def steep_quadratic(theta):
        return float(0.5 * np.sum(curvature * theta**2)), curvature * theta

    result = minimize_lbfgs(steep_quadratic, np.ones(3), max_iter=500, max_fun=20000, tol=1e-8,
                            ftol=0.0, engine="compact")
    assert searches, "the unit step should overshoot and call the search"
    assert result.status == 0 and "PGTOL" in result.message
    np.testing.assert_allclose(result.x, 0.0, atol=1e-7)


def test_compact_engine_without_scipys_private_search_still_reaches_the_minimum(monkeypatch):
    """L-BFGS-B's line search is a private scipy name: where a scipy release
    has moved it, the engine takes the public Wolfe search and reaches the
    same minimum (Rosenbrock, 20 parameters)."""
    from skquad._foundation import _lbfgs_compact

    x0 = np.full(20, -1.0)
    options = dict(max_iter=2000, max_fun=5000, tol=1e-8, ftol=0.0, maxcor=10)
    with_private = minimize_lbfgs(rosenbrock, x0, engine="compact", **options)
    monkeypatch.setattr(_lbfgs_compact, "line_search_wolfe1", None)
    public_only = minimize_lbfgs(rosenbrock, x0, engine="compact", **options)
    assert with_private.success and public_only.success
    np.testing.assert_allclose(public_only.x, np.ones(20), atol=1e-6)
    np.testing.assert_allclose(public_only.x, with_private.x, atol=1e-6)
    # it did take another path (the public search's iterates are not L-BFGS-B's)
    assert public_only.nfev != with_private.nfev or public_only.nit != with_private.nit


def penalised(loss, weight):
    """``loss(x) + 0.5 x·(weight x)``: one objective of a regularisation path."""

    def objective(x):
        value, gradient = loss(x)
        return value + 0.5 * float((weight * x) @ x), gradient + weight * x

    return objective


def test_path_memory_moves_pairs_and_point_to_the_next_penalty():
    """The pairs and the best evaluation of f_j, moved by PathMemory.for_penalty, are those of
    f_k = f_j + 0.5 x·((w_k - w_j) x): the same directions as pairs taken on f_k itself."""
    from skquad._foundation._lbfgs_compact import PathMemory

    rng = np.random.default_rng(1)
    n = 10
    first, second = rng.uniform(0.5, 2.0, n), rng.uniform(0.01, 0.1, n)
    path = PathMemory().for_penalty(first)
    f_j, f_k = penalised(rosenbrock, first), penalised(rosenbrock, second)
    remembered = path.remembering(f_j)
    memory = path.take(4, n)
    points = [rng.standard_normal(n) for _ in range(6)]
    for a, b in zip(points, points[1:]):
        memory.add(b - a, remembered(b)[1] - remembered(a)[1])
    best = min(points, key=lambda x: f_j(x)[0])
    path.for_penalty(second)
    reference = _CompactMemory(4, n)
    kept = [(b - a) for a, b in zip(points, points[1:]) if (b - a) @ (f_j(b)[1] - f_j(a)[1]) > 0]
    for a, b in zip(points, points[1:]):
        if any(np.array_equal(b - a, s) for s in kept):
            reference.add(b - a, f_k(b)[1] - f_k(a)[1])
    g = rng.standard_normal(n)
    np.testing.assert_allclose(memory.direction(g), reference.direction(g), rtol=1e-9)
    # the best point of f_j is answered on f_k without evaluating it
    assert path.knows(best) and path.start(best * (1 + 1e-15)) is not best
    np.testing.assert_array_equal(path.start(best * (1 + 1e-15)), best)
    value, gradient = path.remembering(lambda x: pytest.fail("evaluated"))(best)
    np.testing.assert_allclose(value, f_k(best)[0], rtol=1e-12)
    np.testing.assert_allclose(gradient, f_k(best)[1], rtol=1e-10, atol=1e-12)
    # another point is evaluated, and a start far from the carried one stays as given
    far = best + 1.0
    np.testing.assert_array_equal(path.start(far), far)
    assert not path.knows(far)


def test_path_memory_float32_twin_reads_the_carried_exact_point():
    """A path's float32 phase that starts at the last fit's solution reads its exact
    evaluation there (moved to the new penalty) instead of evaluating; elsewhere it evaluates."""
    from skquad._foundation._lbfgs_compact import PathMemory

    rng = np.random.default_rng(2)
    n = 6
    first, second = rng.uniform(0.5, 2.0, n), rng.uniform(0.01, 0.1, n)
    path = PathMemory().for_penalty(first)
    solution = rng.standard_normal(n)
    path.remembering(penalised(rosenbrock, first))(solution)
    path.for_penalty(second)
    coarse = path.remembering(lambda x: pytest.fail("evaluated"), "coarse")
    value, gradient = coarse(solution)
    np.testing.assert_allclose(value, penalised(rosenbrock, second)(solution)[0], rtol=1e-12)
    np.testing.assert_allclose(gradient, penalised(rosenbrock, second)(solution)[1],
                               rtol=1e-10, atol=1e-12)
    calls = []
    path.remembering(lambda x: calls.append(x) or (0.0, np.zeros(n)), "coarse")(solution + 1.0)
    assert len(calls) == 1
