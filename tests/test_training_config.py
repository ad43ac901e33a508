"""skquad._training._config: what the engine accepts and refuses, by name."""

import math

import pytest
import torch

from skquad._training import SOLVERS, ParameterGroup, TrainingConfig, TrainingResult


def test_defaults_follow_mlpclassifier():
    # MLPClassifier's defaults: adam, learning_rate_init=1e-3, tol=1e-4,
    # n_iter_no_change=10, momentum=0.9 with Nesterov, beta_1/beta_2/epsilon.
    from sklearn.neural_network import MLPClassifier

    mlp = MLPClassifier()
    config = TrainingConfig()
    assert config.solver == mlp.solver
    assert config.learning_rate == mlp.learning_rate_init
    assert config.learning_rate_schedule == mlp.learning_rate
    assert (config.tol, config.n_iter_no_change, config.validation_fraction) == (
        mlp.tol, mlp.n_iter_no_change, mlp.validation_fraction
    )
    assert (config.momentum, config.nesterov, config.power_t) == (mlp.momentum, mlp.nesterovs_momentum, mlp.power_t)
    assert (config.beta_1, config.beta_2, config.epsilon, config.max_fun) == (
        mlp.beta_1, mlp.beta_2, mlp.epsilon, mlp.max_fun
    )
    assert SOLVERS == ("sgd", "adam", "lbfgs")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"solver": "rmsprop"}, "solver must be one of"),
        ({"learning_rate_schedule": "cosine"}, "learning_rate must be one of"),
        ({"loss_growth_limit": 1.0}, "loss_growth_limit must be > 1"),
    ],
)
def test_bad_settings_are_refused_by_name(options, message):
    with pytest.raises(ValueError, match=message):
        TrainingConfig(**options)


@pytest.mark.parametrize("attribute", ["learning_rate_scale", "l1", "l2"])
@pytest.mark.parametrize("value", [-1.0, math.inf, math.nan])
def test_parameter_group_refuses_bad_scales_and_penalties(attribute, value):
    weight = torch.nn.Parameter(torch.zeros(2))
    with pytest.raises(ValueError, match=f"'quadratic': {attribute} must be a finite non-negative"):
        ParameterGroup([weight], name="quadratic", **{attribute: value})


def test_parameter_group_materialises_its_parameters():
    module = torch.nn.Linear(2, 1)
    group = ParameterGroup(module.parameters())  # a generator, read once
    assert len(group.parameters) == 2 and len(group.parameters) == 2


def test_training_result_starts_empty():
    result = TrainingResult()
    assert result.loss_curve == [] and result.n_iter == 0 and result.best_loss == math.inf
    assert TrainingResult().loss_curve is not result.loss_curve  # no shared default list
