"""skquad.convex.certificate: the certified lower bound against CLARABEL's optimum."""

import numpy as np
import pytest
import torch

from skquad.convex import InputLifting, LiftedData, dual_bound, solve_sdp
from skquad.convex.certificate import align_factor
from skquad.convex.losses import dual_point


def _data(loss, n_outputs, seed=0, n=30, d=2):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d))
    if n_outputs > 1:
        y = rng.randint(0, n_outputs, size=n)
    elif loss == "squared":
        y = X[:, 0] * X[:, 1] + 0.1 * rng.standard_normal(n)
    else:
        y = np.where(X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    weight = rng.uniform(0.5, 1.5, size=n)
    lifting = InputLifting()
    return lifting, X, y, weight


# The reference optimum to 1e-10: the tightness test below compares the bound
# at this point with its value, and at Clarabel's default 1e-8 the direction
# Z / rho was off enough on another machine (OpenBLAS 0.3.31, numpy 2.5) to leave a
# bound 1.1e-4 below, against 7e-8 here.
_ACCURATE = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def _clarabel(lifting, X, y, weight, loss, n_outputs, beta):
    return solve_sdp(
        lifting.matrices(X), y, weight, loss=loss, beta=beta, n_outputs=n_outputs,
        solver="CLARABEL", solver_options=_ACCURATE,
    )


@pytest.mark.parametrize("loss, n_outputs", [("logistic", 1), ("squared", 1), ("logistic", 3)])
def test_bound_at_the_reference_optimum_is_tight_and_below_it(loss, n_outputs):
    beta = 1e-2
    lifting, X, y, weight = _data(loss, n_outputs)
    reference = _clarabel(lifting, X, y, weight, loss, n_outputs, beta)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss=loss, beta=beta, n_outputs=n_outputs)
    scores = torch.as_tensor(reference.scores)
    directions = [
        torch.as_tensor(reference.Z[k] / max(reference.rho[k], 1e-300)) for k in range(n_outputs)
    ]
    certificate = dual_bound(data, dual_point(scores, data.target, loss), directions,
                             feasible_value=reference.value)
    # Weak duality: below the optimum. CLARABEL stops at a relative gap near
    # 1e-10, so its value is the optimum to within 1e-6 relative.
    assert certificate.lower_bound <= reference.value + 1e-6 * abs(reference.value)
    # Exact at the optimum (l'(f*) is the optimal dual): tight up to
    # CLARABEL's accuracy and the eigenvalue guard.
    assert certificate.lower_bound >= reference.value - 1e-4 * abs(reference.value)
    assert 0.0 <= certificate.theta <= 1.0
    assert len(certificate.trace_bounds) == n_outputs


@pytest.mark.parametrize("loss", ["hinge", "logistic", "squared"])
def test_bound_from_any_dual_point_stays_below_the_optimum(loss):
    beta = 1e-2
    lifting, X, y, weight = _data(loss, 1, seed=1)
    reference = _clarabel(lifting, X, y, weight, loss, 1, beta)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss=loss, beta=beta, n_outputs=1)
    generator = torch.Generator().manual_seed(0)
    for _ in range(5):
        lam = torch.randn(data.target.shape, generator=generator, dtype=torch.float64)
        bound = dual_bound(data, lam).lower_bound
        assert bound <= reference.value + 1e-6 * abs(reference.value)


@pytest.mark.parametrize("beta, multiple, feasible_fraction, where", [
    (10.0, 4.0, None, "vertex before the kink"),
    (1.0, 4.0, 1e-2, "vertex after the kink"),
    (1e-2, 2.0, None, "the kink"),
    (10.0, 0.5, None, "the end, theta = 1"),
])
def test_squared_bound_is_the_best_theta_in_closed_form(beta, multiple, feasible_fraction, where):
    """The squared loss's LB(theta) is maximised in closed form (no search):
    its value is LB's largest on a fine grid of [0, 1], wherever the maximum
    lies (lam = -multiple * t plus noise; a small feasible value flattens LB
    after the kink)."""
    from skquad.convex.losses import conjugate

    lifting, X, y, weight = _data("squared", 3, seed=4)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="squared", beta=beta, n_outputs=3)
    generator = torch.Generator().manual_seed(1)
    lam = -multiple * data.target + 0.3 * torch.randn(
        data.target.shape, generator=generator, dtype=torch.float64
    )
    zero_value = data.zero_network_value()
    feasible = None if feasible_fraction is None else feasible_fraction * zero_value
    certificate = dual_bound(data, lam, feasible_value=feasible)
    penalty = data.penalty_per_rho
    rho_sum_max = (zero_value if feasible is None else feasible) / penalty
    largest = max(certificate.trace_bounds)

    def lb(theta):
        dual = -float(data.weight @ conjugate(theta * lam, data.target, "squared"))
        return dual - rho_sum_max * max(0.0, theta * largest - penalty)

    thetas = np.linspace(0.0, 1.0, 4001)
    values = [lb(theta) for theta in thetas]
    best = int(np.argmax(values))
    kink = penalty / largest
    located = {
        "vertex before the kink": 0 < thetas[best] < min(kink, 1.0) - 1e-3,
        "vertex after the kink": kink + 1e-3 < thetas[best] < 1.0,
        "the kink": abs(thetas[best] - kink) < 1e-3,
        "the end, theta = 1": best == thetas.size - 1,
    }
    assert located[where]
    assert certificate.lower_bound >= values[best] - 1e-12 * abs(values[best])
    assert certificate.lower_bound == pytest.approx(lb(certificate.theta), rel=1e-12, abs=1e-15)


def test_any_mu_candidate_keeps_the_bound_below_the_optimum():
    """``mu_candidates`` (a conic solver's trace multipliers) are lifted by the
    eigenvalue test like the first-order guess: random vectors, of either sign,
    never put the bound above CLARABEL's optimum, and never loosen it."""
    beta = 1e-2
    lifting, X, y, weight = _data("logistic", 3, seed=3)
    reference = _clarabel(lifting, X, y, weight, "logistic", 3, beta)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="logistic", beta=beta, n_outputs=3)
    lam = dual_point(torch.as_tensor(reference.scores), data.target, "logistic")
    plain = dual_bound(data, lam).lower_bound
    generator = torch.Generator().manual_seed(0)
    p = data.n_lifted
    for scale in (1e-3, 1.0, -1.0):
        mus = [scale * torch.randn(p, generator=generator, dtype=torch.float64) for _ in range(3)]
        bound = dual_bound(data, lam, mu_candidates=mus).lower_bound
        assert plain <= bound <= reference.value + 1e-6 * abs(reference.value)


def test_a_smaller_feasible_value_never_loosens_the_bound():
    beta = 1e-3
    lifting, X, y, weight = _data("logistic", 1, seed=2)
    reference = _clarabel(lifting, X, y, weight, "logistic", 1, beta)
    data = LiftedData.from_lifting(lifting, X, y, weight, loss="logistic", beta=beta, n_outputs=1)
    lam = dual_point(torch.as_tensor(0.5 * reference.scores), data.target, "logistic")
    loose = dual_bound(data, lam).lower_bound
    tight = dual_bound(data, lam, feasible_value=reference.value).lower_bound
    assert tight >= loose
    assert tight <= reference.value + 1e-6 * abs(reference.value)


def test_align_factor_lowers_the_linear_objective_on_unit_rows():
    generator = torch.Generator().manual_seed(0)
    A = torch.randn((6, 6), generator=generator, dtype=torch.float64)
    M = 0.5 * (A + A.T)
    start = torch.randn((6, 4), generator=generator, dtype=torch.float64)
    start = start / torch.linalg.vector_norm(start, dim=1, keepdim=True)
    signs = torch.tensor([1.0, 1.0, -1.0, -1.0], dtype=torch.float64)
    before = start.clone()
    aligned = align_factor(M, start, signs, iterations=50)
    assert torch.equal(start, before)  # the input is not modified

    def objective(F):
        return float(((M @ F) * F * signs).sum())

    torch.testing.assert_close(torch.linalg.vector_norm(aligned, dim=1), torch.ones(6, dtype=torch.float64))
    assert objective(aligned) < objective(start)
    # The minimum over unit rows is -sum_i |lambda|... bounded below by -p ||M||_2
    # (|<M, D>| <= ||M||_2 tr|D| <= ||M||_2 p for diag(P + N) = 1).
    assert objective(aligned) >= -6 * float(torch.linalg.matrix_norm(M, ord=2)) - 1e-9
