"""The SDP relaxation: a lower bound on every binary network, solver agreement, failures."""

import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skquad.convex import (
    InputLifting,
    SolverFailedError,
    aggregate_samples,
    bilinear_network_scores,
    default_solver,
    loss_value,
    network_objective,
    solve_relaxation,
    solve_sdp,
)


def _tiny_problem(seed=0, n=16, d=2):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    labels = np.sign(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n))
    labels[labels == 0] = 1
    return X, labels


def _brute_force_best(features, y, loss, beta, p, max_neurons):
    """Best objective over all networks with <= max_neurons binary neurons.

    Neurons ``(Xu)∘(Xv)`` are enumerated up to the symmetries that alpha
    absorbs (u <-> -u, v <-> -v, u <-> v); for each set of neurons the
    second layer is optimized exactly (a convex problem in alpha).
    """
    n, width = features.shape
    patterns = []
    seen = set()
    for signs in itertools.product((-1, 1), repeat=2 * width):
        u, v = np.array(signs[:width]), np.array(signs[width:])
        column = (features @ u) * (features @ v)
        key = tuple(np.round(column, 10))
        if key not in seen and tuple(-np.array(key)) not in seen:
            seen.add(key)
            patterns.append(column)
    hidden = cp.Parameter((n, max_neurons))
    alpha = cp.Variable(max_neurons)
    scores = hidden @ alpha
    weight = np.full(n, 1.0 / n)
    if loss == "squared":
        data_loss = weight @ cp.square(scores - y)
    else:
        data_loss = weight @ cp.pos(1 - cp.multiply(y, scores))
    problem = cp.Problem(cp.Minimize(data_loss + beta * p * cp.norm1(alpha)))
    best = np.inf
    for combo in itertools.combinations_with_replacement(range(len(patterns)), max_neurons):
        hidden.value = np.column_stack([patterns[i] for i in combo])
        problem.solve(solver="CLARABEL")
        best = min(best, problem.value)
    return best, len(patterns)


@pytest.mark.parametrize("loss", ["squared", "hinge"])
def test_sdp_value_below_every_brute_force_network(loss):
    X, y = _tiny_problem()
    lifting = InputLifting(fit_intercept=True)
    features = lifting.features(X)
    beta = 0.02
    solution = solve_sdp(
        lifting.matrices(X), y, np.ones(len(y)), loss=loss, beta=beta, solver="CLARABEL"
    )
    native = solve_relaxation(lifting, X, y, np.ones(len(y)), loss=loss, beta=beta, n_outputs=1)
    p = features.shape[1]
    for m in (1, 2):
        best, n_patterns = _brute_force_best(features, y, loss, beta, p, m)
        assert n_patterns > 4
        assert solution.lower_bound <= best + 1e-9, (m, solution.lower_bound, best)
        assert native.lower_bound <= best + 1e-9, (m, native.lower_bound, best)
    # The bound is informative: not trivially far below the best network.
    assert solution.lower_bound > 0.3 * best and native.lower_bound > 0.3 * best


def test_network_maps_to_feasible_sdp_point_with_same_objective():
    """The construction behind the penalty 2*beta*p*rho (formulation docstring)."""
    rng = np.random.RandomState(1)
    X = rng.standard_normal((30, 3))
    lifting = InputLifting(fit_intercept=True)
    p = lifting.n_lifted(3)
    U = rng.choice([-1, 1], size=(4, p))
    V = rng.choice([-1, 1], size=(4, p))
    alpha = rng.standard_normal((4, 1))
    w = np.hstack([U, np.sign(alpha) * V])
    Q = (w.T * (np.abs(alpha[:, 0]) / 2)) @ w
    rho = np.abs(alpha).sum() / 2
    np.testing.assert_allclose(np.diag(Q), rho)
    assert np.linalg.eigvalsh(Q)[0] > -1e-10
    Z = Q[:p, p:]
    sdp_scores = 2 * np.einsum("nij,ij->n", lifting.matrices(X), Z)
    network = bilinear_network_scores(lifting, X, U, V, alpha)[:, 0]
    np.testing.assert_allclose(sdp_scores, network, rtol=1e-10, atol=1e-10)
    y = np.sign(network + 0.1)
    beta = 0.01
    objective = network_objective(network, y, np.ones(30), "hinge", alpha, beta, p)
    sdp_objective = loss_value(sdp_scores, y, np.ones(30), "hinge") + 2 * beta * p * rho
    np.testing.assert_allclose(objective, sdp_objective)


@pytest.mark.parametrize("loss", ["squared", "hinge", "logistic"])
def test_scs_and_clarabel_agree_and_value_matches_numpy_loss(loss):
    X, y = _tiny_problem(seed=3, n=40, d=3)
    lifted = InputLifting().matrices(X)
    weight = np.random.RandomState(0).uniform(0.5, 2.0, size=len(y))
    reference = solve_sdp(lifted, y, weight, loss=loss, beta=0.01, solver="CLARABEL")
    scs = solve_sdp(
        lifted,
        y,
        weight,
        loss=loss,
        beta=0.01,
        solver="SCS",
        solver_options={"eps_abs": 1e-7, "eps_rel": 1e-7, "max_iters": 50000},
    )
    np.testing.assert_allclose(scs.value, reference.value, rtol=1e-3)
    p = lifted.shape[1]
    recomputed = loss_value(reference.scores, y, weight, loss) + 2 * 0.01 * p * reference.rho.sum()
    np.testing.assert_allclose(recomputed, reference.value, rtol=1e-6)
    np.testing.assert_allclose(np.diag(reference.Q[0]), reference.rho[0], atol=1e-7)


@pytest.mark.parametrize("loss, n_outputs", [("squared", 1), ("hinge", 1), ("logistic", 1), ("logistic", 3)])
def test_a_loose_conic_solve_is_made_a_feasible_upper_bound(loss, n_outputs):
    """SCS stopped at eps 1e-3 returns a point off the feasible set (diagonal
    and PSD violations of 1e-9 to 1e-2 here). The reported point must be
    exactly feasible, so that ``value`` is an upper bound on the optimum:
    never below CLARABEL's certified lower bound (an independent solver's),
    nor below its own. Without the correction the blocks' diagonals are off
    by the violation and the first assertion fails."""
    X, y = _tiny_problem(seed=3, n=40, d=3)
    if n_outputs > 1:
        y = np.digitize(X[:, 0] * X[:, 1] + X[:, 2], [-0.5, 0.5])
    lifted = InputLifting().matrices(X)
    weight = np.random.RandomState(0).uniform(0.5, 2.0, size=len(y))
    kwargs = dict(loss=loss, beta=1e-3, n_outputs=n_outputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        loose = solve_sdp(lifted, y, weight, solver="SCS",
                          solver_options={"eps_abs": 1e-3, "eps_rel": 1e-3}, **kwargs)
    reference = solve_sdp(lifted, y, weight, solver="CLARABEL", **kwargs)
    assert loose.info["violation"] > 1e-12  # the solver's own point is infeasible
    for block, rho in zip(loose.Q, loose.rho):
        np.testing.assert_allclose(np.diag(block), rho, rtol=1e-14, atol=0)
        np.testing.assert_allclose(block, block.T, rtol=0, atol=0)
        assert np.linalg.eigvalsh(block)[0] >= -1e-12 * max(rho, 1.0)
    # The objective is recomputed at the feasible point.
    p = lifted.shape[1]
    scores = 2 * np.einsum("nij,kij->nk", lifted, loose.Q[:, :p, p:])
    np.testing.assert_allclose(loose.scores, scores, rtol=1e-10, atol=1e-12)
    assert loose.value >= reference.lower_bound - 1e-12 * abs(reference.lower_bound)
    assert loose.value >= loose.lower_bound
    assert loose.relative_gap >= 0.0


def test_feasible_block_keeps_the_off_diagonal_and_raises_the_diagonal_only():
    """A nearly feasible block (diagonal off by 1e-4, an eigenvalue of -1e-4):
    PSD with a constant diagonal afterwards, every off-diagonal entry (Z,
    hence the scores) the solver's own, and rho at most the violation above
    the largest diagonal entry."""
    from skquad.convex.formulation import _feasible_block

    rng = np.random.default_rng(0)
    F = rng.standard_normal((8, 3))
    exact = F @ F.T
    exact = exact / np.sqrt(np.outer(np.diag(exact), np.diag(exact)))  # unit diagonal
    values, vectors = np.linalg.eigh(exact)
    near = exact + 1e-4 * np.diag(rng.uniform(-1, 1, 8)) - 2e-4 * np.outer(vectors[:, 0], vectors[:, 0])
    near = 0.5 * (near + near.T)
    assert np.linalg.eigvalsh(near)[0] < 0
    block, rho = _feasible_block(near)
    off = ~np.eye(8, dtype=bool)
    np.testing.assert_array_equal(block[off], near[off])
    np.testing.assert_array_equal(np.diag(block), np.full(8, rho))
    assert np.linalg.eigvalsh(block)[0] >= -1e-14
    assert np.diag(near).max() <= rho <= np.diag(near).max() + 3e-4


def test_vector_output_squared_loss_decouples_into_scalar_problems():
    """With the squared loss, eq. 67 is one scalar SDP per class (one-hot targets)."""
    rng = np.random.RandomState(2)
    X = rng.standard_normal((36, 2))
    y = rng.randint(0, 3, size=36)
    lifted = InputLifting().matrices(X)
    weight = np.ones(36)
    joint = solve_sdp(lifted, y, weight, loss="squared", beta=0.01, n_outputs=3, solver="CLARABEL")
    separate = [
        solve_sdp(lifted, (y == k).astype(float), weight, loss="squared", beta=0.01, solver="CLARABEL")
        for k in range(3)
    ]
    np.testing.assert_allclose(joint.value, sum(s.value for s in separate), rtol=1e-5)
    for k, s in enumerate(separate):
        np.testing.assert_allclose(joint.scores[:, k], s.scores[:, 0], atol=1e-4)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_vector_output_losses_match_numpy(loss):
    rng = np.random.RandomState(4)
    X = rng.standard_normal((30, 2))
    y = rng.randint(0, 3, size=30)
    solution = solve_sdp(
        InputLifting().matrices(X), y, np.ones(30), loss=loss, beta=0.01, n_outputs=3, solver="CLARABEL"
    )
    p = InputLifting().n_lifted(2)
    recomputed = loss_value(solution.scores, y, np.ones(30), loss, n_outputs=3)
    recomputed += 2 * 0.01 * p * solution.rho.sum()
    np.testing.assert_allclose(recomputed, solution.value, rtol=1e-6)


def test_aggregate_samples_makes_weights_and_repeats_the_same_problem():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((10, 3))
    y = rng.randint(0, 2, size=10)
    counts = rng.randint(0, 4, size=10)
    counts[0] = 2
    weighted = aggregate_samples(X, y, counts.astype(float))
    order = rng.permutation(int(counts.sum()))
    repeated = aggregate_samples(
        np.repeat(X, counts, axis=0)[order], np.repeat(y, counts)[order], np.ones(counts.sum())
    )
    for a, b in zip(weighted, repeated):
        np.testing.assert_array_equal(a, b)
    assert len(weighted[0]) == np.count_nonzero(counts)
    np.testing.assert_allclose(weighted[2].sum(), 1.0)


def test_solver_error_becomes_clear_failure(monkeypatch):
    X, y = _tiny_problem()

    def broken_solve(self, *args, **kwargs):
        raise cp.error.SolverError("mocked breakdown")

    monkeypatch.setattr(cp.Problem, "solve", broken_solve)
    with pytest.raises(SolverFailedError, match="CLARABEL"):
        solve_sdp(InputLifting().matrices(X), y, np.ones(len(y)), solver="SCS")
    with pytest.raises(SolverFailedError, match="solver=None") as info:
        solve_sdp(InputLifting().matrices(X), y, np.ones(len(y)), solver="CLARABEL")
    assert "solver='CLARABEL'" not in str(info.value)


def test_solver_without_solution_becomes_clear_failure(monkeypatch):
    X, y = _tiny_problem()

    def infeasible_solve(self, *args, **kwargs):
        self._status = cp.INFEASIBLE
        return np.inf

    monkeypatch.setattr(cp.Problem, "solve", infeasible_solve)
    monkeypatch.setattr(cp.Problem, "status", property(lambda self: self._status))
    with pytest.raises(SolverFailedError, match="status 'infeasible'"):
        solve_sdp(InputLifting().matrices(X), y, np.ones(len(y)), solver="SCS")


def test_too_few_iterations_warn_with_the_certified_gap():
    """SCS stopped after 2 iterations: a ConvergenceWarning with the certified gap."""
    X, y = _tiny_problem(n=40, d=3)
    lifted = InputLifting().matrices(X)
    with pytest.warns(ConvergenceWarning, match="certified relative gap") as caught:
        solution = solve_sdp(
            lifted, y, np.ones(len(y)), loss="logistic", solver="SCS",
            solver_options={"max_iters": 2}, tol=1e-4,
        )
    assert "solver=None" in str(caught[0].message) and "max_iters" in str(caught[0].message)
    reference = solve_sdp(lifted, y, np.ones(len(y)), loss="logistic", solver="CLARABEL")
    assert solution.lower_bound <= reference.value + 1e-9


def test_clarabel_iteration_limit_names_its_own_option():
    X, y = _tiny_problem(n=40, d=3)
    lifted = InputLifting().matrices(X)
    with pytest.raises(SolverFailedError) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        solve_sdp(lifted, y, np.ones(len(y)), loss="logistic", solver="CLARABEL",
                  solver_options={"max_iter": 1}, tol=1e-4)
    message = str(info.value)
    assert "solver='CLARABEL'" not in message.split("Try", 1)[1]
    assert "'max_iter'" in message and "solver=None" in message


def test_bad_solver_options_name_the_parameter():
    X, y = _tiny_problem()
    with pytest.raises(TypeError, match="solver_options"):
        solve_sdp(InputLifting().matrices(X), y, np.ones(len(y)), solver="CLARABEL",
                  solver_options={"bogus": 1})


def test_solver_that_cannot_do_sdp_is_rejected():
    X, y = _tiny_problem()
    with pytest.raises(ValueError, match="cannot solve semidefinite programs"):
        solve_sdp(InputLifting().matrices(X), y, np.ones(len(y)), solver="OSQP")


def test_unknown_loss_is_rejected():
    X, y = _tiny_problem()
    with pytest.raises(ValueError, match="loss must be one of"):
        solve_sdp(InputLifting().matrices(X), y, np.ones(len(y)), loss="absolute")


def test_default_solver_follows_the_measurements():
    assert default_solver("squared", 10) == "SCS"
    assert default_solver("logistic", 10) == "SCS"
    assert default_solver("hinge", 10) == "SCS"
    assert default_solver("hinge", 10, n_outputs=4) == "CLARABEL"
    assert default_solver("hinge", 35, n_outputs=4) == "SCS"
    assert default_solver() == "SCS"
