"""The second-layer refit (skquad/convex/second_layer.py) against CLARABEL."""

import cvxpy as cp
import numpy as np
import pytest

from skquad.convex import loss_value
from skquad.convex import second_layer
from skquad.convex.second_layer import FactoredColumns, refit_second_layer
from skquad.convex.statistics import neuron_svecs, svec_rows


def _problem(n_outputs, seed=0, n=120, m=30, p=6, factors=False):
    rng = np.random.default_rng(seed)
    Z = np.hstack([rng.standard_normal((n, p - 1)), np.ones((n, 1))])
    U, V = rng.choice([-1.0, 1.0], (2, m, p))
    H = (Z @ U.T) * (Z @ V.T)
    y = rng.choice([-1.0, 1.0], n) if n_outputs == 1 else rng.integers(0, n_outputs, n)
    weight = rng.uniform(0.2, 2.0, n)
    if factors:
        return H, y, weight / weight.sum(), p, (svec_rows(Z), neuron_svecs(U, V))
    return H, y, weight / weight.sum(), p


def _clarabel_optimum(H, y, weight, loss, beta, p, n_outputs, offset=0.0):
    alpha = cp.Variable((H.shape[1], n_outputs))
    scores = H @ alpha + np.broadcast_to(offset, (H.shape[0], n_outputs))
    if n_outputs == 1:
        f = scores[:, 0]
        per_sample = {
            "squared": cp.square(f - y),
            "logistic": cp.logistic(-cp.multiply(y, f)),
            "hinge": cp.pos(1 - cp.multiply(y, f)),
        }[loss]
    else:
        onehot = np.eye(n_outputs)[y]
        true_score = cp.sum(cp.multiply(scores, onehot), axis=1)
        per_sample = {
            "squared": cp.sum(cp.square(scores - onehot), axis=1),
            "logistic": cp.log_sum_exp(scores, axis=1) - true_score,
            "hinge": cp.max(scores + 1 - onehot, axis=1) - true_score,
        }[loss]
    objective = weight @ per_sample + beta * p * cp.sum(cp.abs(alpha))
    problem = cp.Problem(cp.Minimize(objective))
    problem.solve(solver="CLARABEL")
    return problem.value


@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_refit_reaches_clarabels_optimum_and_never_goes_up(loss, n_outputs):
    H, y, weight, p = _problem(n_outputs)
    beta = 1e-3
    start = np.full((H.shape[1], n_outputs), 0.01)
    result = refit_second_layer(
        H, y, weight, loss=loss, beta=beta, n_lifted=p, alpha=start, max_iter=3000, tol=1e-12
    )
    optimum = _clarabel_optimum(H, y, weight, loss, beta, p, n_outputs)
    recomputed = loss_value(H @ result.alpha, y, weight, loss, n_outputs)
    recomputed += beta * p * np.abs(result.alpha).sum()
    assert result.objective == pytest.approx(recomputed, rel=1e-12)
    assert result.objective <= result.initial_objective
    assert result.objective >= optimum - 1e-7
    # Smooth losses: to solver precision; the hinge loss through smoothing: 0.5 %.
    tolerance = 5e-3 if loss == "hinge" else 1e-6
    assert result.objective <= optimum * (1 + tolerance)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_logistic_refit_with_a_fixed_offset_on_factored_outputs_reaches_clarabels_optimum(
    n_outputs,
):
    # The SDP classifier's logistic refit: scores H alpha + offset (the offset fixed), with
    # H = Φ S read through its factors. The same optimum as CLARABEL's, and as the refit of
    # H itself.
    H, y, weight, p, (rows, neurons) = _problem(n_outputs, seed=1, factors=True)
    np.testing.assert_allclose(rows @ neurons, H, rtol=1e-12, atol=1e-12)
    offset = np.linspace(-0.4, 0.3, n_outputs)
    beta, start = 1e-3, np.zeros((H.shape[1], n_outputs))
    kwargs = dict(loss="logistic", beta=beta, n_lifted=p, alpha=start, max_iter=3000, tol=1e-12,
                  score_offset=offset)
    factored = refit_second_layer(FactoredColumns(rows, neurons), y, weight, **kwargs)
    explicit = refit_second_layer(H, y, weight, **kwargs)
    optimum = _clarabel_optimum(H, y, weight, "logistic", beta, p, n_outputs, offset)
    recomputed = loss_value(H @ factored.alpha + offset, y, weight, "logistic", n_outputs)
    recomputed += beta * p * np.abs(factored.alpha).sum()
    assert factored.objective == pytest.approx(recomputed, rel=1e-12)
    assert optimum - 1e-7 <= factored.objective <= optimum * (1 + 1e-6)
    assert explicit.objective == pytest.approx(factored.objective, rel=1e-6)
    np.testing.assert_array_equal(factored.intercept, np.zeros(n_outputs))


def test_score_offset_and_factored_outputs_are_refused_where_they_do_not_apply():
    H, y, weight, p, (rows, neurons) = _problem(1, factors=True)
    common = dict(beta=1e-3, n_lifted=p, alpha=np.zeros((H.shape[1], 1)))
    with pytest.raises(ValueError, match="score_offset"):
        refit_second_layer(H, y, weight, loss="squared", score_offset=np.zeros(1), **common)
    with pytest.raises(ValueError, match="factored"):
        refit_second_layer(FactoredColumns(rows, neurons), y, weight, loss="squared", **common)



@pytest.mark.parametrize("loss", ["logistic", "hinge"])
@pytest.mark.parametrize("scale", [1.0, 400.0])  # 400: past the shift-free range of exp
def test_multi_output_smooth_loss_matches_scipys_log_sum_exp_and_softmax(loss, scale):
    from scipy.special import logsumexp, softmax

    rng = np.random.default_rng(0)
    n, k, mu = 200, 5, 0.05
    scores = rng.standard_normal((n, k)) * scale
    target = np.eye(k)[rng.integers(0, k, n)]
    weight = rng.random(n)
    smoothing = 1.0 if loss == "logistic" else mu
    inner = scores if loss == "logistic" else (scores + 1.0 - target) / mu
    expected_value = float(weight @ (smoothing * logsumexp(inner, axis=1) - np.sum(scores * target, 1)))
    expected_gradient = weight[:, None] * (softmax(inner, axis=1) - target)

    value, gradient = second_layer._smooth_loss(scores.copy(), target, weight, loss, k, mu)
    assert value == pytest.approx(expected_value, rel=1e-13)
    np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-12, atol=1e-15)
    value_only, none = second_layer._smooth_loss(scores.copy(), target, weight, loss, k, mu,
                                                 gradient=False)
    assert none is None
    assert value_only == pytest.approx(expected_value, rel=1e-13)

@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
def test_refit_is_monotone_from_any_start_and_any_budget(loss):
    H, y, weight, p = _problem(1, seed=3)
    rng = np.random.default_rng(3)
    for budget in (1, 5, 50):
        start = rng.standard_normal((H.shape[1], 1)) * 0.01
        result = refit_second_layer(
            H, y, weight, loss=loss, beta=1e-2, n_lifted=p, alpha=start, max_iter=budget
        )
        assert result.objective <= result.initial_objective


def test_refit_at_huge_beta_gives_the_zero_network():
    H, y, weight, p = _problem(1, seed=1)
    result = refit_second_layer(
        H, y, weight, loss="squared", beta=1e3, n_lifted=p, alpha=np.full((H.shape[1], 1), 0.01)
    )
    np.testing.assert_array_equal(result.alpha, 0.0)
    assert result.objective == pytest.approx(1.0)  # mean of y^2 = 1 for ±1 labels


def test_refit_rejects_an_unknown_loss():
    H, y, weight, p = _problem(1)
    with pytest.raises(ValueError, match="loss"):
        refit_second_layer(H, y, weight, loss="absolute", beta=1e-3, n_lifted=p, alpha=np.zeros((30, 1)))


@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("n, m, p", [(120, 30, 6), (40, 60, 4)])
def test_squared_refit_on_the_range_reduced_form_reaches_clarabels_optimum(n_outputs, n, m, p):
    # rank(H) <= p (p + 1) / 2 < 0.75 n rows: the r-row form is used, found
    # from the m x m Gram matrix (fewer neurons than rows) or the n x n one.
    H, y, weight, p = _problem(n_outputs, seed=5, n=n, m=m, p=p)
    beta = 1e-3
    start = np.full((H.shape[1], n_outputs), 0.01)
    result = refit_second_layer(
        H, y, weight, loss="squared", beta=beta, n_lifted=p, alpha=start, max_iter=3000,
        tol=1e-12, rank_bound=p * (p + 1) // 2,
    )
    _assert_squared_refit_at_clarabels_optimum(result, H, y, weight, beta, p, n_outputs)


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_squared_refit_with_a_span_reaches_clarabels_optimum(n_outputs, monkeypatch):
    # 400 neurons on 150 rows, p = 5: the basis comes from the 15 monomials of
    # the lifted inputs (InputLifting.monomials), and the lasso (many more
    # columns than its 15 rows) goes to the dual interior point, or, where
    # _interior_point_applies says no, through working sets from a dense
    # start; an interior point that runs out of steps hands over to them.
    from skquad.convex import InputLifting

    rng = np.random.default_rng(7)
    n, m = 150, 400
    X = rng.standard_normal((n, 4))
    lifting = InputLifting()
    U, V = rng.choice([-1.0, 1.0], (2, m, 5))
    H = lifting.bilinear(X, U, V)
    y = rng.choice([-1.0, 1.0], n) if n_outputs == 1 else rng.integers(0, n_outputs, n)
    weight = rng.uniform(0.2, 2.0, n)
    weight /= weight.sum()
    beta, p = 1e-4, 5
    start = np.full((m, n_outputs), 0.01)
    optimum = _clarabel_optimum(H, y, weight, "squared", beta, p, n_outputs)
    descent = second_layer._lasso_coordinate_descent
    for method, setting, value in [
        ("interior point", None, None),
        ("working sets", "_interior_point_applies", lambda *args: False),
        ("fallback", "_INTERIOR_POINT_MAX_STEPS", 2),
    ]:
        calls, descents = [], []

        def span():
            calls.append(1)
            return lifting.monomials(X)

        def counted_descent(*args):
            descents.append(1)
            return descent(*args)

        with monkeypatch.context() as patch:
            if setting is not None:
                patch.setattr(second_layer, setting, value)
            patch.setattr(second_layer, "_lasso_coordinate_descent", counted_descent)
            result = refit_second_layer(
                H, y, weight, loss="squared", beta=beta, n_lifted=p, alpha=start, max_iter=3000,
                tol=1e-12, rank_bound=p * (p + 1) // 2, span=span,
            )
        assert calls == [1]
        assert bool(descents) == (method != "interior point"), method
        _assert_squared_refit_at_clarabels_optimum(
            result, H, y, weight, beta, p, n_outputs, optimum=optimum
        )


@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("method", ["interior point", "working sets"])
def test_squared_refit_without_a_small_range_solves_the_lasso_on_every_row(
    n_outputs, method, monkeypatch
):
    # rank_bound=None: no range reduction, so the lasso is solved on the
    # weighted rows themselves (the interior point where _interior_point_applies
    # says so, else working sets, past 200 columns), never by FISTA, from a
    # dense start (as Algorithm 1's) that coordinate descent does not use.
    H, y, weight, p = _problem(n_outputs, seed=11, n=40, m=250, p=6)
    beta = 1e-3
    start = np.full((H.shape[1], n_outputs), 0.01)

    def no_fista(*args):
        raise AssertionError("the squared loss went to FISTA")

    with monkeypatch.context() as patch:
        patch.setattr(second_layer, "_refit", no_fista)
        if method == "working sets":
            patch.setattr(second_layer, "_interior_point_applies", lambda *args: False)
        result = refit_second_layer(
            H, y, weight, loss="squared", beta=beta, n_lifted=p, alpha=start, max_iter=3000,
            tol=1e-12,
        )
    _assert_squared_refit_at_clarabels_optimum(result, H, y, weight, beta, p, n_outputs)


def _assert_squared_refit_at_clarabels_optimum(
    result, H, y, weight, beta, p, n_outputs, optimum=None
):
    """The refit's reported objective is its alpha's, no worse than its start, and CLARABEL's optimum."""
    if optimum is None:
        optimum = _clarabel_optimum(H, y, weight, "squared", beta, p, n_outputs)
    recomputed = loss_value(H @ result.alpha, y, weight, "squared", n_outputs)
    recomputed += beta * p * np.abs(result.alpha).sum()
    assert result.objective == pytest.approx(recomputed, rel=1e-12)
    assert result.objective <= result.initial_objective
    assert optimum - 1e-7 <= result.objective <= optimum * (1 + 1e-6)


def _random_lasso(seed, r=12, m=80):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((r, 3)) @ rng.standard_normal((3, m))
    A += 0.3 * rng.standard_normal((r, m))
    return A, rng.standard_normal(r)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("tol", [1e-4, 1e-9])
def test_lasso_interior_point_certifies_its_gap_against_clarabel(seed, tol):
    # Correlated columns, many more than rows: the duality gap the interior
    # point stops at bounds its distance to CLARABEL's optimum, and its dual
    # value (the bound it certifies with) is below that optimum.
    A, c = _random_lasso(seed)
    penalty, offset = 0.05, 0.7
    point, steps = second_layer._lasso_interior_point(A, c, penalty, tol, offset)
    assert point is not None and 0 < steps < second_layer._INTERIOR_POINT_MAX_STEPS
    a = cp.Variable(A.shape[1])
    problem = cp.Problem(cp.Minimize(cp.sum_squares(A @ a - c) + penalty * cp.norm1(a)))
    problem.solve(solver="CLARABEL")
    value = float(np.sum((A @ point[:, 0] - c) ** 2) + penalty * np.abs(point).sum())
    assert problem.value - 1e-8 <= value <= problem.value + tol * (value + offset) + 1e-8
    # The certificate at a poor dual point (s = c / 10) still bounds the optimum.
    s = 0.1 * c
    gap = second_layer._relative_gaps(c[None], penalty, np.array([value]), s[None], (A.T @ s)[None], offset)[0]
    assert value - gap * (value + offset) <= problem.value + 1e-9
    if tol < 1e-6:
        # Near the optimum (at most r nonzeros here) the small entries are zeroed.
        assert np.count_nonzero(point) <= A.shape[0]


def test_lasso_interior_point_certifies_every_output_of_a_joint_solve():
    # The outputs step together and stop one by one (a zero target at once, a
    # large one last): each column is certified against CLARABEL on its own,
    # and its test used a K-th of the offset.
    A, c = _random_lasso(4)
    rng = np.random.default_rng(5)
    targets = np.column_stack([c, np.zeros_like(c), 30.0 * rng.standard_normal(c.size), 0.01 * c])
    penalty, offset, tol = 0.05, 0.8, 1e-8
    point, steps = second_layer._lasso_interior_point(A, targets, penalty, tol, offset)
    assert point.shape == (A.shape[1], 4) and 0 < steps < second_layer._INTERIOR_POINT_MAX_STEPS
    np.testing.assert_array_equal(point[:, 1], 0.0)
    a = cp.Variable(A.shape[1])
    for k in range(4):
        target = cp.Parameter(A.shape[0], value=targets[:, k])
        problem = cp.Problem(cp.Minimize(cp.sum_squares(A @ a - target) + penalty * cp.norm1(a)))
        problem.solve(solver="CLARABEL")
        value = float(np.sum((A @ point[:, k] - targets[:, k]) ** 2) + penalty * np.abs(point[:, k]).sum())
        assert problem.value - 1e-7 <= value <= problem.value + tol * (value + offset / 4) + 1e-7


def test_lasso_interior_point_returns_exact_zeros_when_the_penalty_wins():
    # penalty > 2 max |A_jᵀ c|: the optimum is zero, which the multipliers
    # only approach; the point returned is exactly zero.
    A, c = _random_lasso(3)
    penalty = 2.5 * np.max(np.abs(A.T @ c))
    point, _ = second_layer._lasso_interior_point(A, c, penalty, 1e-9)
    np.testing.assert_array_equal(point, 0.0)


def test_lasso_interior_point_declines_without_a_penalty():
    A, c = _random_lasso(2)
    assert second_layer._lasso_interior_point(A, c, 0.0, 1e-7)[0] is None


@pytest.mark.parametrize("collide", [False, True])
def test_merged_columns_groups_equal_and_opposite_columns_exactly(collide, monkeypatch):
    # Columns 3 and 5 repeat 0 (one negated), 4 repeats 2; column 1 starts
    # with a zero (its sign comes from its first nonzero entry), and column 6
    # differs from 0 in one bit only. With every hash equal (a collision),
    # the bitwise grouping must give the same answer.
    if collide:
        monkeypatch.setattr(
            second_layer, "_column_hashes", lambda words: np.zeros(words.shape[1], np.uint64)
        )
    rng = np.random.default_rng(0)
    H = rng.standard_normal((20, 3))
    H[0, 1] = 0.0
    H = np.column_stack([H, H[:, 0], H[:, 2], -H[:, 0], np.nextafter(H[:, 0], np.inf)])
    columns, first, group, signs = second_layer._merged_columns(H)
    assert columns.shape[1] == 4
    np.testing.assert_array_equal(columns[:, group] * signs, H)
    assert group[3] == group[5] == group[0] and group[4] == group[2]
    np.testing.assert_array_equal(first, [0, 1, 2, 6])
    assert second_layer._merged_columns(H[:, [0, 1, 2, 6]]) is None


def test_lasso_working_sets_end_on_collinear_columns_with_a_tiny_penalty(monkeypatch):
    # Squared binary neurons (1,000 columns in a space of far lower rank) and a
    # penalty near zero: Lasso's inner point leaves violations outside its set,
    # and a set chosen afresh each round took the same columns forever. A stalled
    # round's set grows, and rounds ending on their sweeps double them, so the rounds
    # stay within the docstring's bound; the point descends.
    rng = np.random.default_rng(0)
    r, m, k = 300, 1000, 40
    A = (rng.standard_normal((r, k)) @ rng.choice([-1.0, 1.0], size=(k, m))) ** 2 / k
    A -= A.mean(axis=0)
    c = A[:, :5] @ rng.standard_normal(5) + 0.1 * rng.standard_normal(r)
    max_iter = 500
    ending_on_sweeps = int(np.log2(10 * max_iter / second_layer._FIRST_SWEEPS)) + 1
    bound = ending_on_sweeps * (m // second_layer._WORKING_EXTRA + 2)
    rounds, inner = [], second_layer._lasso_fit

    def counted(*args, **kwargs):
        rounds.append(args[0].shape[1])
        assert len(rounds) <= bound, "the working-set rounds do not end"
        return inner(*args, **kwargs)

    monkeypatch.setattr(second_layer, "_lasso_fit", counted)
    for penalty in (1e-4, 1e-6):
        rounds.clear()
        point, used = second_layer._lasso_working_sets(A, c, penalty, np.zeros(m), max_iter, 1e-8)
        assert used < 10 * max_iter
        objective = np.sum((A @ point - c) ** 2) + penalty * np.abs(point).sum()
        assert objective < 0.01 * np.sum(c**2)


def test_interior_point_takes_the_lasso_whose_neurons_outnumber_its_rows_at_a_small_penalty():
    # 250 rows x 1000 columns (r² m above the small bound): the interior point at a
    # penalty far below the zeroing one, coordinate descent near it, and with more
    # rows than columns whatever the penalty.
    rng = np.random.default_rng(0)
    A = rng.standard_normal((250, 1000))
    target = rng.standard_normal(250)
    zeroing = 2.0 * np.max(np.abs(A.T @ target))
    assert A.shape[0] ** 2 * A.shape[1] > second_layer._INTERIOR_POINT_SMALL_WORK
    assert second_layer._interior_point_applies(A, target, 1e-3 * zeroing)
    assert not second_layer._interior_point_applies(A, target, 0.5 * zeroing)
    tall = rng.standard_normal((1500, 1000))
    assert not second_layer._interior_point_applies(tall, rng.standard_normal(1500), 1e-6)
