"""The top of the beta path: beta_max through the fit's own lifting."""

import numpy as np
import pytest

from skquad.convex import InputLifting, solve_relaxation
from skquad.convex.path import zero_network_beta

LIFTINGS = {
    "bilinear": InputLifting(),
    "weight_levels": InputLifting(levels=3),
    "polynomial": InputLifting(activation=(1.0, 0.5, -0.2)),
}


def _data(n_outputs, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((30, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0) if n_outputs == 1 else rng.randint(0, 3, 30)
    return X, y, rng.uniform(0.5, 2.0, 30)


@pytest.mark.parametrize("name", list(LIFTINGS))
@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
def test_beta_max_is_the_spectral_norm_of_the_lifted_slope_matrix(name, loss):
    """Brute force: M = Σ w_i l'(0) L(x_i) with the explicit lifted matrices."""
    lifting = LIFTINGS[name]
    X, y, w = _data(1)
    slope = {"squared": -2.0 * y, "logistic": -0.5 * y, "hinge": -y}[loss]
    weight = w / w.sum()
    M = np.einsum("n,nij->ij", weight * slope, lifting.matrices(X))
    expected = np.max(np.abs(np.linalg.eigvalsh(0.5 * (M + M.T))))
    got = zero_network_beta(lifting, X, y, w, loss=loss, n_outputs=1)
    # Two summation orders of the same O(n p²) terms.
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("name", list(LIFTINGS))
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_beta_max_gives_the_zero_network_and_a_smaller_beta_does_not(name, n_outputs):
    lifting = LIFTINGS[name]
    X, y, w = _data(n_outputs, seed=1)
    beta_max = zero_network_beta(lifting, X, y, w, loss="logistic", n_outputs=n_outputs)
    with pytest.warns(UserWarning, match="relaxed optimum is the zero network"):
        at_max = solve_relaxation(
            lifting, X, y, w, loss="logistic", beta=beta_max, n_outputs=n_outputs
        )
    # A certified zero network: the bound reaches the zero network's value.
    np.testing.assert_array_equal(at_max.rho, 0.0)
    below = solve_relaxation(
        lifting, X, y, w, loss="logistic", beta=beta_max / 20, n_outputs=n_outputs
    )
    assert below.rho.max() > 0


@pytest.mark.parametrize(
    "n_samples, loss, fraction",
    [
        (12, "squared", 5e-2),
        (60, "squared", (12 / 60) ** 2),
        (400, "squared", (12 / 400) ** 2),
        (2000, "squared", 1e-4),  # the compact form's floor (p (p + 1) / 2 = 78 <= 300)
        (400, "logistic", 1e-3),  # the factor solver's floor
    ],
)
def test_default_beta_is_beta_max_times_the_clipped_squared_width_ratio(n_samples, loss, fraction):
    """p / n = 12 / n (3 features and the intercept, 3 replicas of each)."""
    from skquad.convex.path import default_beta

    lifting = InputLifting(levels=3)
    rng = np.random.RandomState(0)
    X = rng.standard_normal((n_samples, 3))
    y = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
    w = np.ones(n_samples)
    beta, beta_max = default_beta(lifting, X, y, w, loss=loss, n_outputs=1)
    assert beta_max == zero_network_beta(lifting, X, y, w, loss=loss, n_outputs=1)
    assert beta == pytest.approx(fraction * beta_max, rel=1e-12)


def test_default_beta_counts_an_integer_weight_as_repeated_rows():
    from skquad.convex.path import default_beta

    X, y, _ = _data(1)
    counts = np.arange(len(y)) % 3 + 1
    weighted = default_beta(InputLifting(), X, y, counts, loss="logistic", n_outputs=1)
    repeated = default_beta(
        InputLifting(), np.repeat(X, counts, axis=0), np.repeat(y, counts),
        np.ones(counts.sum()), loss="logistic", n_outputs=1,
    )
    np.testing.assert_allclose(weighted, repeated, rtol=1e-10)
