"""The squared loss's sufficient statistics (skquad/convex/statistics.py) and what reads them.

Each entry point that takes statistics is checked against its row version
on the same data: the compact solve and its certificate, beta_max, the
neurons' outputs and the second layer's refit.
"""

import numpy as np
import pytest
import torch

from skquad.convex import InputLifting, LiftedData, dual_bound, zero_network_beta
from skquad.convex.compact_solver import lifted_svecs, solve_compact, solve_compact_statistics
from skquad.convex.certificate import statistics_dual_bound
from skquad.convex.second_layer import refit_from_statistics, refit_second_layer
from skquad.convex.statistics import LiftedStatistics, neuron_svecs


def _problem(n=400, n_outputs=1, activation="bilinear", seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] + 0.1 * rng.standard_normal(n)
    if n_outputs > 1:
        y = np.column_stack([y, X[:, 2] ** 2])
    weight = rng.uniform(0.5, 2.0, n)
    lifting = InputLifting(activation=activation)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=1e-3,
                                   n_outputs=n_outputs)
    features = data.features.numpy()
    statistics = LiftedStatistics.of_rows(
        features, data.target.numpy(), data.weight.numpy(), data.polynomial
    )
    return lifting, X, y, weight, data, statistics


def test_statistics_of_blocks_add_up_to_those_of_all_rows():
    _, _, _, _, data, whole = _problem(activation=(0.5, 1.0, 0.2))
    Z, t, w = data.features.numpy(), data.target.numpy(), data.weight.numpy()
    parts = [LiftedStatistics.of_rows(Z[i::3], t[i::3], w[i::3], data.polynomial) for i in range(3)]
    summed = parts[0] + parts[1] + parts[2]
    Phi = lifted_svecs(data)
    np.testing.assert_allclose(summed.gram, whole.gram, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(whole.gram, Phi.T @ (w[:, None] * Phi), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(summed.cross, Phi.T @ (w[:, None] * t), rtol=1e-12, atol=1e-14)
    assert summed.weight == pytest.approx(1.0)


@pytest.mark.parametrize("n_outputs", [1, 2])
def test_the_compact_solve_of_the_statistics_is_the_solve_of_the_rows(n_outputs):
    _, _, _, _, data, statistics = _problem(n_outputs=n_outputs)
    rows = solve_compact(data, tol=1e-6)
    sums = solve_compact_statistics(statistics, data.beta, tol=1e-6)
    assert sums.value == pytest.approx(rows.value, rel=1e-9)
    assert sums.lower_bound == pytest.approx(rows.lower_bound, rel=1e-9)
    assert sums.lower_bound <= sums.value
    np.testing.assert_allclose(sums.Q, rows.Q, atol=1e-8)


def test_the_certificate_of_the_statistics_is_the_certificate_of_the_rows():
    # At any point, not only the optimum: the rows' dual_bound at lam = 2 (f - t).
    _, _, _, _, data, statistics = _problem(n_outputs=2)
    rng = np.random.default_rng(1)
    D = 0.1 * rng.standard_normal((statistics.gram.shape[0], 2))
    scores = torch.as_tensor(2.0 * lifted_svecs(data) @ D)
    penalty = data.penalty_per_rho
    from_rows = dual_bound(data, 2.0 * (scores - data.target))
    from_sums = statistics_dual_bound(statistics, D, penalty)
    assert from_sums.lower_bound == pytest.approx(from_rows.lower_bound, rel=1e-9)


def test_beta_max_of_the_statistics_is_zero_network_beta():
    lifting, X, y, weight, _, statistics = _problem()
    expected = zero_network_beta(lifting, X, y, weight, loss="squared", n_outputs=1)
    assert statistics.beta_max() == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_refit_from_the_statistics_is_the_refit_on_the_rows(fit_intercept):
    lifting, X, _, _, data, statistics = _problem()
    rng = np.random.default_rng(2)
    U, V = rng.choice([-1.0, 1.0], (2, 60, 4))
    outputs = lifting.bilinear(X, U, V)
    S = neuron_svecs(U, V)
    np.testing.assert_allclose(lifted_svecs(data) @ S, outputs, rtol=1e-10, atol=1e-10)
    alpha = np.full((60, 1), 0.01)
    t, w = data.target.numpy()[:, 0], data.weight.numpy()
    rows = refit_second_layer(outputs, t, w, loss="squared", beta=1e-3, n_lifted=4, alpha=alpha,
                              fit_intercept=fit_intercept)
    sums = refit_from_statistics(S, statistics, beta=1e-3, n_lifted=4, alpha=alpha,
                                 fit_intercept=fit_intercept)
    assert sums.objective == pytest.approx(rows.objective, rel=1e-5)
    assert sums.initial_objective == pytest.approx(rows.initial_objective, rel=1e-9)
    np.testing.assert_allclose(sums.intercept, rows.intercept, atol=1e-4)
