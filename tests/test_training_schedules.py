"""Learning-rate schedules against MLPClassifier's (skquad._training._schedules)."""

import re

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.neural_network import MLPClassifier
from sklearn.neural_network._stochastic_optimizers import SGDOptimizer

from skquad._training import LearningRateSchedule, Trainer, TrainingConfig


def cross_entropy(outputs, y):
    return torch.nn.functional.cross_entropy(outputs, y, reduction="none")


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=150, n_features=5, n_informative=3, random_state=0)


def test_invscaling_rates_equal_sgd_optimizer():
    ours = LearningRateSchedule(0.3, "invscaling", power_t=0.7)
    theirs = SGDOptimizer([np.zeros(1)], learning_rate_init=0.3, lr_schedule="invscaling", power_t=0.7)
    for epoch in range(1, 20):
        ours.epoch_ends(150 * epoch)
        theirs.iteration_ends(150 * epoch)
        assert ours.learning_rate == theirs.learning_rate


def test_adaptive_decisions_equal_sgd_optimizer():
    ours = LearningRateSchedule(0.1, "adaptive")
    theirs = SGDOptimizer([np.zeros(1)], learning_rate_init=0.1, lr_schedule="adaptive")
    for _ in range(12):
        stop, _ = ours.should_stop()
        assert stop == theirs.trigger_stopping("", verbose=False)
        assert ours.learning_rate == theirs.learning_rate
        if stop:
            break
    assert stop  # 0.1 / 5**k reaches the 1e-6 floor


def test_schedules_apply_to_sgd_only():
    adam = LearningRateSchedule(0.1, "invscaling", solver="adam")
    adam.epoch_ends(1000)
    assert adam.learning_rate == 0.1 and adam.should_stop()[0]


def _trainer(X, y, **config):
    module = torch.nn.Linear(X.shape[1], 2, dtype=torch.float64)
    return Trainer(module, cross_entropy, config=TrainingConfig(solver="sgd", **config),
                   dtype=torch.float64, generator=torch.Generator().manual_seed(0))


def test_invscaling_effective_rate_equals_mlp_after_epochs(data):
    X, y = data
    mlp = MLPClassifier((3,), solver="sgd", learning_rate="invscaling", power_t=0.25,
                        learning_rate_init=0.05, max_iter=7, random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(7\\)"):
        mlp.fit(X, y)
    trainer = _trainer(X, y, learning_rate=0.05, learning_rate_schedule="invscaling", power_t=0.25)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(7\\)"):
        result = trainer.fit(X, y, max_iter=7)
    assert result.n_samples_seen == mlp.t_
    assert result.learning_rate == pytest.approx(mlp._optimizer.learning_rate, rel=1e-15)


def test_adaptive_schedule_follows_mlp_epoch_by_epoch(data, capsys):
    """A tol no epoch can meet: the rate is divided by 5 on the same epochs as MLP's."""
    X, y = data
    settings = dict(tol=100.0, n_iter_no_change=2)
    mlp = MLPClassifier((3,), solver="sgd", learning_rate="adaptive", learning_rate_init=0.1,
                        max_iter=200, random_state=0, verbose=True, **settings)
    mlp.fit(X, y)
    mlp_out = capsys.readouterr().out
    trainer = _trainer(X, y, learning_rate=0.1, learning_rate_schedule="adaptive", verbose=True,
                       **settings)
    result = trainer.fit(X, y, max_iter=200)
    our_out = capsys.readouterr().out

    def decisions(text):
        return re.findall(r"(Setting learning rate to [0-9.]+|Learning rate too small\. Stopping\.)", text)

    assert decisions(our_out) == decisions(mlp_out)
    # eight divisions (0.1 / 5**8 < 1e-6), then "too small": the ninth decision stops
    assert len(decisions(our_out)) == 9
    assert result.n_iter == mlp.n_iter_ and result.converged
    assert result.learning_rate == mlp._optimizer.learning_rate
