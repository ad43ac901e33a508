"""skquad.convex.relaxation: the solver choice, its options and the device."""

import numpy as np
import pytest
import torch

from skquad.convex import InputLifting, solve_relaxation, solve_sdp
from skquad._torch_utils import resolve_device


def _problem(seed=0, n=30, d=2):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y, np.ones(n)


def test_auto_and_none_solve_on_the_cpu():
    # the solver resolves its device through the one device rule
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("AUTO") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cpu")
    assert resolve_device("CPU") == torch.device("cpu")
    with pytest.raises(ValueError):
        resolve_device("tpu")


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
    ],
)
def test_native_solver_options_are_checked_by_name(options, message):
    X, y, weight = _problem()
    with pytest.raises(ValueError, match=message):
        solve_relaxation(InputLifting(), X, y, weight, loss="logistic", beta=1e-2, n_outputs=1,
                         solver_options=options)
