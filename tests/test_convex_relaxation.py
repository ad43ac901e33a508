"""skquad.convex.relaxation: the solver choice, its options and the device."""

import numpy as np
import pytest

from skquad.convex import InputLifting, solve_relaxation, solve_sdp


def _problem(seed=0, n=30, d=2):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y, np.ones(n)


@pytest.mark.parametrize("device", ["auto", "AUTO", None, "CPU"])
def test_auto_and_none_solve_on_the_cpu(device):
    # the one device parser (skquad._foundation._torch_utils.resolve_device), not a copy of it
    X, y, weight = _problem()
    solution = solve_relaxation(InputLifting(), X, y, weight, loss="squared", beta=1e-2, n_outputs=1,
                                device=device)
    assert solution.converged and np.isfinite(solution.lower_bound)


def test_an_unknown_device_is_refused_naming_it():
    X, y, weight = _problem()
    with pytest.raises(ValueError, match="device must be 'auto', 'cpu', 'cuda'.*'tpu'"):
        solve_relaxation(InputLifting(), X, y, weight, loss="squared", beta=1e-2, n_outputs=1, device="tpu")


def test_a_cvxpy_name_gives_the_reference_formulation():
    X, y, weight = _problem()
    lifting = InputLifting()
    through = solve_relaxation(lifting, X, y, weight, loss="logistic", beta=1e-2, n_outputs=1, solver="CLARABEL")
    direct = solve_sdp(lifting.matrices(X), y, weight, loss="logistic", beta=1e-2, solver="CLARABEL")
    assert through.solver == "CLARABEL"
    # the same problem handed to the same deterministic solver
    np.testing.assert_allclose(through.value, direct.value, rtol=1e-9)


def test_the_native_solver_brackets_the_reference_optimum():
    X, y, weight = _problem(seed=1)
    lifting = InputLifting()
    reference = solve_sdp(lifting.matrices(X), y, weight, loss="logistic", beta=1e-2, solver="CLARABEL")
    native = solve_relaxation(lifting, X, y, weight, loss="logistic", beta=1e-2, n_outputs=1, tol=1e-5)
    assert native.solver == "native"
    # lower bound <= optimum <= objective at the returned point (CLARABEL: 1e-6 relative)
    assert native.lower_bound <= reference.value * (1 + 1e-6)
    assert native.value >= reference.value * (1 - 1e-6)
    assert native.relative_gap <= 1e-5


@pytest.mark.parametrize(
    "options, message",
    [
        ({"rank": 0}, r"solver_options\['rank'\] must be an integer >= 1"),
        ({"rank": 2.5}, r"solver_options\['rank'\] must be an integer"),
        ({"chunk_size": True}, r"solver_options\['chunk_size'\] must be an integer"),
        ({"hinge_sigma": float("nan")}, r"solver_options\['hinge_sigma'\] must be a finite number > 0"),
        ({"rank": 5, "max_rank": 2}, r"'rank'\]=5 is larger than"),
        ({"time_limit": 0}, r"solver_options\['time_limit'\] must be a finite number > 0"),
        ({"time_limit": float("inf")}, r"solver_options\['time_limit'\] must be a finite number"),
    ],
)
def test_native_solver_options_are_checked_by_name(options, message):
    X, y, weight = _problem()
    with pytest.raises(ValueError, match=message):
        solve_relaxation(InputLifting(), X, y, weight, loss="logistic", beta=1e-2, n_outputs=1,
                         solver_options=options)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_time_limit_stops_with_a_valid_bound_and_a_warning_giving_the_gap(n_outputs):
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.RandomState(4)
    X = rng.standard_normal((200, 5))
    y = rng.randint(0, 3, size=200) if n_outputs == 3 else np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    weight = np.ones(len(y))
    lifting = InputLifting()
    reference = solve_sdp(lifting.matrices(X), y, weight, loss="logistic", beta=1e-3,
                          n_outputs=n_outputs, solver="CLARABEL")
    # The limit is checked after each chunk: 1e-9 s stops after the first one.
    # rank (its default, ceil(sqrt(2 p)) = 4) asks for the factor solver: three
    # classes would otherwise go to the compact interior point, which has no chunks.
    with pytest.warns(ConvergenceWarning, match=r"time limit .* certified relative gap of"):
        solution = solve_relaxation(lifting, X, y, weight, loss="logistic", beta=1e-3,
                                    n_outputs=n_outputs, tol=1e-9,
                                    solver_options={"time_limit": 1e-9, "rank": 4})
    assert solution.status == "time_limit" and not solution.converged
    assert solution.n_iter <= 60
    # CLARABEL's value is optimal to about 1e-6 relative here.
    assert solution.lower_bound <= reference.value * (1 + 1e-6) <= solution.value * (1 + 2e-6)


def test_time_limit_spans_the_squared_loss_blocks():
    from sklearn.exceptions import ConvergenceWarning

    rng = np.random.RandomState(5)
    X = rng.standard_normal((150, 8))
    y = rng.randint(0, 4, size=150)
    # rank=4 asks for the factor solver (not the compact interior point).
    with pytest.warns(ConvergenceWarning, match="time limit"):
        solution = solve_relaxation(InputLifting(), X, y, np.ones(150), loss="squared", beta=1e-3,
                                    n_outputs=4, tol=1e-12,
                                    solver_options={"time_limit": 1e-9, "rank": 4})
    assert solution.status == "time_limit"
    # The first block stops after one chunk; the others keep the zero network.
    assert solution.info["blocks"][0]["n_iter"] <= 60
    assert all(block["n_iter"] == 0 for block in solution.info["blocks"][1:])
