"""skquad.convex.routes: the solver table is what chooses, continues and reports the solver."""

import dataclasses
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skquad import SDPQuantizedClassifier
from skquad.convex import (
    ROUTES, InputLifting, LiftedData, Route, default_beta, solve_factored, solve_relaxation,
)
from skquad.convex.routes import (
    Problem, active_routes, cpu_only_names, first_route, native_names, route, use_routes,
)


def _problem(seed=0, n=40, d=3):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    return X, y, np.ones(n)


def _toy_solve(problem):
    """A toy solver: the torch factor solver under another name."""
    return solve_factored(
        problem.data, tol=problem.tol, max_iter=problem.max_iter, init=problem.init
    )


def _logistic(problem):
    return problem.data.loss == "logistic"


def test_the_default_table_and_the_names_it_gives():
    assert [row.name for row in ROUTES] == [
        "hinge_dual", "compact", "squared_dual", "native_numpy", "native"
    ]
    assert active_routes() == ROUTES
    assert cpu_only_names() == ("hinge_dual", "compact", "squared_dual")
    assert set(native_names()) == {row.name for row in ROUTES}
    # Every row's continuation names a row of the table.
    assert all(route(name) in ROUTES for row in ROUTES for name in row.then)


@pytest.mark.parametrize("n, d, name", [
    (1200, 150, "squared_dual"),  # past 1,000 rows, its Newton steps the cheaper
    (30, 450, "squared_dual"),  # past 400 lifted coordinates
    (1200, 30, "native_numpy"),  # many rows, narrow: the factor solver's iterations are cheaper
])
def test_wide_squared_blocks_are_routed_by_the_cost_of_the_duals_newton_steps(n, d, name):
    X = np.random.RandomState(0).standard_normal((n, d))
    data = LiftedData.from_lifting(
        InputLifting(), X, X[:, 0] * X[:, 1], np.ones(n), loss="squared", beta=1e-2, n_outputs=1
    )
    assert first_route(Problem(data, {})).name == name


def test_a_registered_toy_route_is_chosen_where_it_applies():
    toy = Route("toy", applies=_logistic, solve=_toy_solve, summary="A toy.")
    X, y, weight = _problem()
    lifting = InputLifting()
    with use_routes(toy, *ROUTES):
        assert native_names()[0] == "toy"
        logistic = solve_relaxation(lifting, X, y, weight, loss="logistic", beta=1e-2, n_outputs=1)
        hinge = solve_relaxation(lifting, X, y, weight, loss="hinge", beta=1e-2, n_outputs=1)
    assert logistic.solver == "toy" and logistic.solver_path == ("toy",)
    assert logistic.info["device"] == "cpu" and logistic.converged
    assert hinge.solver == "hinge_dual"  # where the toy does not apply, the table goes on
    # Outside the block the default table chooses again.
    assert solve_relaxation(
        lifting, X, y, weight, loss="logistic", beta=1e-2, n_outputs=1
    ).solver == "native"


def test_a_route_that_declines_gives_way_and_one_that_stops_short_is_continued():
    X, y, weight = _problem(1)
    lifting = InputLifting()
    declining = Route("declining", applies=_logistic, solve=lambda problem: None, summary="No.")
    with use_routes(declining, "native"):
        solution = solve_relaxation(lifting, X, y, weight, loss="logistic", beta=1e-2, n_outputs=1)
    assert solution.solver == "native" and solution.solver_path == ("native",)

    def short(problem):  # two iterations: short of tol
        return _toy_solve(dataclasses.replace(problem, max_iter=2))

    staged = Route("short", applies=_logistic, solve=short, summary="Short.", then=("native",))
    with use_routes(staged, "native"):
        solution = solve_relaxation(lifting, X, y, weight, loss="logistic", beta=1e-2, n_outputs=1)
    assert solution.solver == "native" and solution.solver_path == ("short", "native")
    assert solution.converged


def test_solver_options_skip_the_rows_that_do_not_take_them():
    X, y, weight = _problem(2)
    toy = Route("toy", applies=_logistic, solve=_toy_solve, summary="A toy.")
    with use_routes(toy, "native"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 5 iterations
        solution = solve_relaxation(
            InputLifting(), X, y, weight, loss="logistic", beta=1e-2, n_outputs=1,
            solver_options={"rank": 3}, max_iter=5,
        )
    assert solution.solver == "native"


def test_a_table_no_row_of_which_applies_is_a_clear_error():
    X, y, weight = _problem()
    toy = Route("toy", applies=_logistic, solve=_toy_solve, summary="A toy.")
    with use_routes(toy), pytest.raises(ValueError, match="No native solver route"):
        solve_relaxation(InputLifting(), X, y, weight, loss="hinge", beta=1e-2, n_outputs=1)
    with pytest.raises(KeyError, match="nowhere"):
        route("nowhere")


def test_the_documented_example_fits_an_estimator_with_a_new_route():
    X, y, _ = _problem(3, n=60)
    mine = Route("mine", applies=_logistic, solve=_toy_solve, summary="Mine.")
    with use_routes(mine, *ROUTES):
        model = SDPQuantizedClassifier(loss="logistic", n_neurons=20, random_state=0).fit(X, y)
    assert model.solver_ == "mine" and model.solver_path_ == ("mine",)
    assert model.device_ == "cpu"


def test_the_estimators_report_every_stage():
    X, y, _ = _problem(4, n=80, d=4)
    model = SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y)
    assert model.solver_ == "compact" and model.solver_path_ == ("compact",)
    # The squared dual first, stopped after its first stage: the factor solver continues.
    first = dataclasses.replace(route("squared_dual"), lead=lambda data: 0)
    short = dataclasses.replace(first, solve=lambda problem: first.solve(
        dataclasses.replace(problem, tol=1e-300)))
    with use_routes(short, "native_numpy", "native"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y)
    assert model.solver_path_ == ("squared_dual", "native_numpy")
    assert model.solver_ == "native_numpy"


def test_beta_auto_reads_its_floor_from_the_table():
    rng = np.random.RandomState(0)
    X = rng.standard_normal((2000, 3))
    y = np.sign(X[:, 0] * X[:, 1])
    args = (InputLifting(), X, y, np.ones(2000))
    beta, beta_max = default_beta(*args, loss="squared", n_outputs=1)
    assert np.isclose(beta, 1e-4 * beta_max)  # (4 / 2000)^2 clipped to the compact row's floor
    with use_routes(*(row for row in ROUTES if row.name != "compact")):
        beta, beta_max = default_beta(*args, loss="squared", n_outputs=1)
    assert np.isclose(beta, 1e-3 * beta_max)
