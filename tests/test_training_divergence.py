"""Tests of the divergence guard (skquad._training._divergence)."""

import math

import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from skquad._training import TrainingConfig
from skquad._training._divergence import DivergenceGuard, divergence_message


def test_growth_is_measured_against_the_best_the_start_and_one():
    theta = torch.zeros(3, dtype=torch.float64)
    guard = DivergenceGuard(TrainingConfig(loss_growth_limit=1e4), theta)
    assert not guard.diverged(9_999.0, best_loss=math.inf)  # scale 1: below 1e4 x 1
    assert guard.diverged(10_001.0, best_loss=math.inf)
    guard.observe_first_loss(5.0)
    assert not guard.diverged(40_000.0, best_loss=0.5)  # scale: the start's 5
    assert guard.diverged(60_000.0, best_loss=0.5)
    assert guard.diverged(math.nan, best_loss=0.5)
    theta[1] = math.inf
    assert guard.diverged(1.0, best_loss=0.5)  # non-finite parameters


def test_recovery_keeps_the_better_of_best_and_start():
    theta = torch.tensor([1.0, 1.0], dtype=torch.float64)
    guard = DivergenceGuard(TrainingConfig(), theta)  # start = [1, 1]
    theta.copy_(torch.tensor([2.0, 2.0]))
    guard.remember_best()  # best = [2, 2]
    theta.copy_(torch.tensor([1e30, math.nan]))
    # loss of the current parameters: distance to [1, 1] (the start wins) ...
    loss = lambda: float(((theta - 1.0) ** 2).sum())
    assert guard.recover(loss) == 0.0 and theta.tolist() == [1.0, 1.0]
    # ... or to [2, 2] (the best snapshot wins)
    theta.copy_(torch.tensor([math.inf, 0.0]))
    assert guard.recover(lambda: float(((theta - 2.0) ** 2).sum())) == 0.0
    assert theta.tolist() == [2.0, 2.0]


def test_the_warning_names_the_remedies_in_the_estimators_words():
    config = TrainingConfig(solver="sgd", learning_rate=0.5, divergence_advice="a larger beta (now 1)")
    message = divergence_message(config)
    assert "a smaller learning_rate_init (now 0.5) or a larger beta (now 1)" in message
    guard = DivergenceGuard(config, torch.zeros(1))
    with pytest.warns(ConvergenceWarning, match="Training diverged"):
        guard.warn()
