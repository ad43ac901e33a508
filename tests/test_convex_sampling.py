"""The covariance step and the sign sampler (paper 002, Algorithm 1)."""

import numpy as np
import pytest
import torch

from skquad.convex import (
    GAMMA,
    InputLifting,
    covariance_by_sdp,
    covariance_objective,
    krivine_covariance,
    neuron_scale,
    normalized_block,
    sample_sign_pairs,
    solve_sdp,
)


def _random_correlation(p, seed, rank=3):
    """A unit-diagonal PSD matrix of size 2p (like a normalized SDP block)."""
    rng = np.random.RandomState(seed)
    vectors = rng.standard_normal((2 * p, rank))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors @ vectors.T


def _sdp_block(seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((40, 3))
    y = np.sign(X[:, 0] * X[:, 1] - 0.2)
    solution = solve_sdp(InputLifting().matrices(X), y, np.ones(40), loss="hinge", beta=0.01, solver="CLARABEL")
    return normalized_block(solution.Q[0], solution.rho[0])


@pytest.mark.parametrize("source", ["random", "sdp"])
def test_krivine_covariance_solves_the_covariance_step_exactly(source):
    Q = _random_correlation(4, seed=1) if source == "random" else _sdp_block()
    p = Q.shape[0] // 2
    K = krivine_covariance(Q)
    np.testing.assert_allclose(np.diag(K), 1.0, atol=1e-12)
    assert np.linalg.eigvalsh(K)[0] > -1e-10
    # eq. 27 reaches its optimum 0: arcsin(K_12) = gamma Z_s (Theorem 2).
    assert covariance_objective(K, Q[:p, p:]) < 1e-12
    np.testing.assert_allclose(np.arcsin(K[:p, p:]), GAMMA * Q[:p, p:], atol=1e-8)


def test_closed_form_agrees_with_the_papers_convex_covariance_problem():
    Q = _sdp_block(seed=2)
    p = Q.shape[0] // 2
    by_sdp = covariance_by_sdp(Q[:p, p:], solver="CLARABEL")
    closed_form = krivine_covariance(Q)
    # Both reach the optimum of eq. 27 (zero); the minimiser is not unique
    # in the diagonal blocks, but the block that drives the sampler is.
    assert covariance_objective(by_sdp, Q[:p, p:]) < 1e-6
    assert covariance_objective(closed_form, Q[:p, p:]) < 1e-12
    np.testing.assert_allclose(by_sdp[:p, p:], closed_form[:p, p:], atol=1e-3)
    np.testing.assert_allclose(np.diag(by_sdp), 1.0, atol=1e-8)


def test_grothendieck_identity_for_the_sampler():
    Q = _random_correlation(3, seed=5)
    p = 3
    K = krivine_covariance(Q)
    n = 200_000
    U, V = sample_sign_pairs(K, n, torch.Generator().manual_seed(0))
    assert U.dtype == np.int8 and set(np.unique(U)) <= {-1, 1}
    empirical = U.T.astype(float) @ V / n
    expected = 2.0 / np.pi * np.arcsin(K[:p, p:])
    # each entry is a mean of n ±1 variables: standard error <= 1/sqrt(n)
    np.testing.assert_allclose(empirical, expected, atol=5.0 / np.sqrt(n))
    # ... which is (2 gamma / pi) Z_s: the scale alpha = rho pi / (gamma m)
    # makes the sampled network match 2 Z* in expectation.
    np.testing.assert_allclose(empirical, 2 * GAMMA / np.pi * Q[:p, p:], atol=5.0 / np.sqrt(n))
    m = 1000
    np.testing.assert_allclose(neuron_scale(2.0, m) * m * (2 * GAMMA / np.pi) / 2.0, 2.0)


def test_sampler_is_deterministic_per_seed_and_leaves_the_global_generators_alone():
    K = krivine_covariance(_random_correlation(4, seed=0))
    numpy_state, torch_state = np.random.get_state()[1].copy(), torch.get_rng_state()
    first = sample_sign_pairs(K, 50, torch.Generator().manual_seed(7))
    again = sample_sign_pairs(K, 50, torch.Generator().manual_seed(7))
    other = sample_sign_pairs(K, 50, torch.Generator().manual_seed(8))
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], other[0])
    np.testing.assert_array_equal(np.random.get_state()[1], numpy_state)
    assert torch.equal(torch.get_rng_state(), torch_state)


def test_sampler_needs_a_generator():
    K = krivine_covariance(_random_correlation(2, seed=0))
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample_sign_pairs(K, 5, 0)


def test_zero_block_gives_identity_covariance():
    np.testing.assert_array_equal(normalized_block(np.zeros((4, 4)), 0.0), np.eye(4))
