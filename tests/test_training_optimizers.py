"""Tests of the update rules (skquad._training._optimizers) against scikit-learn's."""

import numpy as np
import pytest
import torch
from sklearn.neural_network._stochastic_optimizers import AdamOptimizer as SklearnAdam
from sklearn.neural_network._stochastic_optimizers import SGDOptimizer as SklearnSGD

from skquad._training import TrainingConfig
from skquad._training._optimizers import AdamOptimizer, SGDOptimizer, _has_fused_adam, make_optimizer


def _reference(solver, params, nesterov):
    if solver == "sgd":
        return SklearnSGD(params, learning_rate_init=0.05, momentum=0.8, nesterov=nesterov)
    return SklearnAdam(params, learning_rate_init=0.05, beta_1=0.8, beta_2=0.99, epsilon=1e-7)


# Adam runs torch's fused kernel where torch has it, else the written-out
# step: both must be scikit-learn's rule ("adam-unfused" forces the latter).
@pytest.mark.parametrize(
    "solver,nesterov", [("sgd", True), ("sgd", False), ("adam", False), ("adam-unfused", False)]
)
def test_flat_buffer_updates_are_scikit_learns_rules(solver, nesterov):
    rng = np.random.RandomState(0)
    start = rng.randn(7)
    theta = torch.as_tensor(start.copy())
    unfused = solver == "adam-unfused"
    solver = "adam" if unfused else solver
    config = TrainingConfig(solver=solver, momentum=0.8, nesterov=nesterov, beta_1=0.8,
                            beta_2=0.99, epsilon=1e-7)
    optimizer = make_optimizer(config, theta)
    assert isinstance(optimizer, SGDOptimizer if solver == "sgd" else AdamOptimizer)
    if solver == "adam":
        assert optimizer._fused is _has_fused_adam("cpu", torch.float64)
        if unfused:
            optimizer._fused = False
    params = [start.copy()]
    reference = _reference(solver, params, nesterov)
    for _ in range(6):
        gradient = rng.randn(7)
        optimizer.step(torch.as_tensor(gradient), 0.05)
        reference.update_params(params, [gradient])
    # Same operations in float64, in another order: a few ulps per step.
    np.testing.assert_allclose(theta.numpy(), params[0], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("solver", ["sgd", "adam"])
def test_a_per_element_rate_equals_separate_optimizers_per_group(solver):
    # ReLinear's groups: one flat buffer with a rate vector must update each
    # group exactly as a separate optimizer with that group's scalar rate.
    rng = np.random.RandomState(1)
    start = rng.randn(5)
    config = TrainingConfig(solver=solver, momentum=0.9, nesterov=True)
    rates = torch.tensor([0.1, 0.1, 0.1, 0.001, 0.001], dtype=torch.float64)
    together = torch.as_tensor(start.copy())
    parts = [torch.as_tensor(start[:3].copy()), torch.as_tensor(start[3:].copy())]
    joint = make_optimizer(config, together)
    separate = [make_optimizer(config, part) for part in parts]
    for _ in range(4):
        gradient = torch.as_tensor(rng.randn(5))
        joint.step(gradient, rates)
        separate[0].step(gradient[:3], 0.1)
        separate[1].step(gradient[3:], 0.001)
    np.testing.assert_allclose(together.numpy(), torch.cat(parts).numpy(), rtol=1e-13)


def test_lbfgs_has_no_stochastic_rule():
    with pytest.raises(ValueError, match="solver='lbfgs'"):
        make_optimizer(TrainingConfig(solver="lbfgs"), torch.zeros(3))
