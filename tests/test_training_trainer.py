"""Tests of the training loop (skquad._training._trainer)."""

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network._stochastic_optimizers import AdamOptimizer, SGDOptimizer

from skquad._training import ParameterGroup, Trainer, TrainingConfig


def cross_entropy(outputs, y):
    return torch.nn.functional.cross_entropy(outputs, y, reduction="none")


def linear_model(n_in, n_out, seed=0, dtype=torch.float64):
    generator = torch.Generator().manual_seed(seed)
    module = torch.nn.Linear(n_in, n_out, dtype=dtype)
    with torch.no_grad():
        module.weight.copy_(torch.randn(module.weight.shape, generator=generator, dtype=dtype) * 0.1)
        module.bias.zero_()
    return module


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(
        n_samples=240, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    return X, y


def make_trainer(module, config, seed=0, **kwargs):
    return Trainer(
        module,
        cross_entropy,
        config=config,
        dtype=torch.float64,
        generator=torch.Generator().manual_seed(seed),
        **kwargs,
    )


def softmax_loss_and_gradient(module):
    """Explicit forward/backward of a linear softmax model (the fast path)."""

    def loss_and_gradient(X, y, w):
        logits = torch.addmm(module.bias, X, module.weight.T)
        log_p = torch.log_softmax(logits, dim=1)
        loss = -(log_p.gather(1, y[:, None])[:, 0] * w).sum()
        delta = torch.softmax(logits, dim=1)
        delta[torch.arange(len(y)), y] -= 1.0
        delta *= w[:, None]
        torch.mm(delta.T, X, out=module.weight.grad)
        torch.sum(delta, 0, out=module.bias.grad)
        return loss

    return loss_and_gradient


@pytest.mark.parametrize("solver", ["sgd", "adam"])
def test_optimizer_steps_match_scikit_learn(solver):
    # The flat-buffer update must be exactly MLPClassifier's rule.
    rng = np.random.RandomState(0)
    module = linear_model(4, 3)
    config = TrainingConfig(solver=solver, learning_rate=0.05, momentum=0.8, nesterov=True)
    trainer = make_trainer(module, config)
    trainer._init_optimizer_state()
    params = [module.weight.detach().numpy().copy(), module.bias.detach().numpy().copy()]
    if solver == "sgd":
        reference = SGDOptimizer(params, learning_rate_init=0.05, momentum=0.8, nesterov=True)
    else:
        reference = AdamOptimizer(params, learning_rate_init=0.05)
    for _ in range(5):
        grads = [rng.randn(3, 4), rng.randn(3)]
        module.weight.grad.copy_(torch.as_tensor(grads[0]))
        module.bias.grad.copy_(torch.as_tensor(grads[1]))
        trainer._optimizer_step()
        reference.update_params(params, grads)
    np.testing.assert_allclose(module.weight.detach().numpy(), params[0], rtol=1e-12)
    np.testing.assert_allclose(module.bias.detach().numpy(), params[1], rtol=1e-12)


def test_lbfgs_with_group_penalty_reaches_logistic_regression_optimum(data):
    X, y = data
    C = 0.5
    module = linear_model(X.shape[1], 3)
    groups = [
        ParameterGroup([module.weight], name="weights", l2=1.0 / C),
        ParameterGroup([module.bias], name="intercepts"),
    ]
    config = TrainingConfig(solver="lbfgs", tol=1e-10)
    result = make_trainer(module, config, parameter_groups=groups).fit(X, y, max_iter=500)
    reference = LogisticRegression(C=C, tol=1e-10, max_iter=1000).fit(X, y)
    weight = module.weight.detach().numpy()
    bias = module.bias.detach().numpy()
    # Softmax is invariant to adding a constant to every class score.
    np.testing.assert_allclose(weight - weight.mean(0), reference.coef_ - reference.coef_.mean(0), atol=5e-4)
    np.testing.assert_allclose(bias - bias.mean(), reference.intercept_ - reference.intercept_.mean(), atol=5e-4)
    assert result.n_iter == len(result.loss_curve) > 0
    assert result.best_loss == pytest.approx(min(result.loss_curve), rel=1e-8)


@pytest.mark.parametrize("solver", ["sgd", "adam"])
def test_explicit_gradient_path_matches_autograd(data, solver):
    X, y = data
    config = TrainingConfig(solver=solver, learning_rate=0.01, batch_size=32, warn_on_max_iter=False)
    autograd_module = linear_model(X.shape[1], 3)
    make_trainer(autograd_module, config).fit(X, y, max_iter=5)
    explicit_module = linear_model(X.shape[1], 3)
    make_trainer(
        explicit_module, config, loss_and_gradient=softmax_loss_and_gradient(explicit_module)
    ).fit(X, y, max_iter=5)
    np.testing.assert_allclose(
        explicit_module.weight.detach().numpy(), autograd_module.weight.detach().numpy(), rtol=1e-10
    )


def test_group_learning_rate_scale_and_unlisted_parameters(data):
    X, y = data
    module = linear_model(X.shape[1], 3)
    frozen_weight = module.weight.detach().clone()
    bias_before = module.bias.detach().clone()
    groups = [ParameterGroup([module.weight], name="slow", learning_rate_scale=0.0)]
    trainer = make_trainer(module, TrainingConfig(learning_rate=0.01), parameter_groups=groups)
    assert trainer.n_parameters == module.weight.numel() + module.bias.numel()
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(3\\)"):
        trainer.fit(X, y, max_iter=3)
    torch.testing.assert_close(module.weight.detach(), frozen_weight)
    assert not torch.equal(module.bias.detach(), bias_before)


def test_parameter_in_two_groups_is_an_error():
    module = linear_model(3, 2)
    groups = [ParameterGroup([module.weight], name="a"), ParameterGroup([module.weight], name="b")]
    with pytest.raises(ValueError, match="both groups 'a' and 'b'"):
        make_trainer(module, TrainingConfig(), parameter_groups=groups)
    with pytest.raises(ValueError, match="learning_rate_scale"):
        ParameterGroup([module.weight], learning_rate_scale=-1.0)
    with pytest.raises(ValueError, match="solver"):
        TrainingConfig(solver="rmsprop")


def test_frozen_parameters_are_left_alone(data):
    X, y = data
    module = linear_model(X.shape[1], 3)
    module.bias.requires_grad_(False)
    bias = module.bias.detach().clone()
    trainer = make_trainer(module, TrainingConfig(learning_rate=0.01))
    assert trainer.n_parameters == module.weight.numel()
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(2\\)"):
        trainer.fit(X, y, max_iter=2)
    torch.testing.assert_close(module.bias, bias)


def test_divergence_restores_best_parameters_and_warns(data):
    X, y = data
    X = X * 100
    # Two linear layers in a row: each update scales the other layer's
    # gradient, so a large learning rate overflows float32 within a few steps.
    module = torch.nn.Sequential(linear_model(6, 8, dtype=torch.float32), linear_model(8, 3, seed=1, dtype=torch.float32))
    config = TrainingConfig(solver="sgd", learning_rate=10.0, momentum=0.9)
    trainer = Trainer(module, cross_entropy, config=config, generator=torch.Generator().manual_seed(0))
    initial = trainer.flat_parameters.clone()
    with pytest.warns(ConvergenceWarning, match="diverged.*smaller learning_rate_init"):
        result = trainer.fit(X, y, max_iter=50)
    assert result.diverged and not result.converged
    assert torch.isfinite(trainer.flat_parameters).all()
    assert result.n_iter < 50
    if result.n_iter == 0:
        torch.testing.assert_close(trainer.flat_parameters, initial)
    with torch.no_grad():
        assert torch.isfinite(module(torch.as_tensor(X, dtype=torch.float32))).all()


def test_early_stopping_uses_stratified_validation_and_restores_best(data):
    X, y = data
    module = linear_model(X.shape[1], 3)
    config = TrainingConfig(
        learning_rate=0.05, early_stopping=True, validation_fraction=0.25, n_iter_no_change=3
    )

    def accuracy(outputs, y_val, weights):
        return np.average((outputs.argmax(1) == y_val).cpu().numpy(), weights=weights)

    trainer = make_trainer(module, config, validation_score=accuracy)
    result = trainer.fit(X, y, max_iter=300)
    assert result.converged and result.n_iter < 300
    assert len(result.validation_scores) == result.n_iter
    assert result.best_validation_score == max(result.validation_scores)
    # the restored parameters score the best validation accuracy
    (_, _, _), (X_val, y_val, w_val) = make_trainer(
        linear_model(X.shape[1], 3), config
    )._split_validation(X, y, np.ones(len(y)))
    assert np.bincount(y_val).tolist() == [20, 20, 20]  # stratified
    with torch.no_grad():
        restored = accuracy(module(torch.as_tensor(X_val)), torch.as_tensor(y_val), w_val)
    assert restored == pytest.approx(result.best_validation_score)


def test_partial_fit_chunks_equal_fit_without_shuffle(data):
    X, y = data
    config = TrainingConfig(solver="adam", learning_rate=0.01, batch_size=40, shuffle=False, tol=-np.inf)
    whole = linear_model(X.shape[1], 3)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(3\\)"):
        make_trainer(whole, config).fit(X, y, max_iter=3)
    chunked = linear_model(X.shape[1], 3)
    trainer = make_trainer(chunked, config)
    for _ in range(3):
        for start in range(0, len(y), 80):
            trainer.partial_fit(X[start : start + 80], y[start : start + 80])
    torch.testing.assert_close(chunked.weight, whole.weight, rtol=1e-12, atol=1e-12)


def test_fit_with_shuffle_equals_one_partial_fit_per_epoch(data):
    # fit shuffles every epoch into one buffer kept for the call and steps on
    # split views of it; partial_fit makes a fresh shuffled copy per call. The
    # same generator draws the same orders, so the two must agree exactly
    # (a stale or aliased buffer would not).
    X, y = data
    config = TrainingConfig(solver="adam", learning_rate=0.01, batch_size=50, tol=-np.inf, warn_on_max_iter=False)
    whole = linear_model(X.shape[1], 3)
    make_trainer(whole, config, seed=5).fit(X, y, max_iter=3)
    epochs = linear_model(X.shape[1], 3)
    trainer = make_trainer(epochs, config, seed=5)
    for _ in range(3):
        trainer.partial_fit(X, y)
    torch.testing.assert_close(epochs.weight, whole.weight, rtol=0, atol=0)
    torch.testing.assert_close(epochs.bias, whole.bias, rtol=0, atol=0)


def test_sample_weight_equals_repetition_in_full_batch(data):
    X, y = data
    X, y = X[:60], y[:60]
    weights = np.random.RandomState(0).randint(0, 3, size=60)
    config = TrainingConfig(learning_rate=0.05, batch_size=1000, warn_on_max_iter=False)
    weighted = linear_model(X.shape[1], 3)
    groups = [ParameterGroup([weighted.weight], name="w", l2=0.1, l1=0.01)]
    make_trainer(weighted, config, parameter_groups=groups).fit(X, y, weights, max_iter=20)
    repeated = linear_model(X.shape[1], 3)
    groups = [ParameterGroup([repeated.weight], name="w", l2=0.1, l1=0.01)]
    make_trainer(repeated, config, parameter_groups=groups).fit(
        X.repeat(weights, 0), y.repeat(weights), max_iter=20
    )
    torch.testing.assert_close(weighted.weight, repeated.weight, rtol=1e-9, atol=1e-12)


def test_same_seed_same_result_and_verbose_lines(data, capsys):
    X, y = data
    config = TrainingConfig(learning_rate=0.01, batch_size=16, verbose=True, warn_on_max_iter=False)
    first, second = linear_model(6, 3), linear_model(6, 3)
    make_trainer(first, config, seed=3).fit(X, y, max_iter=4)
    make_trainer(second, config, seed=3).fit(X, y, max_iter=4)
    torch.testing.assert_close(first.weight, second.weight, rtol=0, atol=0)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 8
    assert all(line.startswith("Iteration") and "loss = " in line and "elapsed" in line for line in lines)
    third = linear_model(6, 3)
    make_trainer(third, TrainingConfig(learning_rate=0.01, batch_size=16, warn_on_max_iter=False), seed=4).fit(
        X, y, max_iter=4
    )
    assert not torch.equal(first.weight, third.weight)


def test_max_iter_warning_and_loss_decreases(data):
    X, y = data
    module = linear_model(6, 3)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(5\\)"):
        result = make_trainer(module, TrainingConfig(learning_rate=0.01)).fit(X, y, max_iter=5)
    assert result.loss_curve[-1] < result.loss_curve[0]
    assert result.n_steps == 5 * 2  # 240 samples, batches of 200


def test_adam_blow_up_that_stays_finite_is_divergence(data):
    """Issue 10: adam at 1e6 left the loss near 2e18, finite, with diverged_=False."""
    X, y = data
    module = torch.nn.Sequential(linear_model(6, 8), torch.nn.ReLU(), linear_model(8, 3, seed=1))
    trainer = make_trainer(module, TrainingConfig(solver="adam", learning_rate=1e6))
    with pytest.warns(ConvergenceWarning, match="diverged.*learning_rate_init \\(now 1e\\+06\\)"):
        result = trainer.fit(X, y, max_iter=50)
    assert result.diverged and not result.converged
    # the kept parameters are no worse than the start (uniform-ish, loss ~ log 3)
    with torch.no_grad():
        losses = cross_entropy(module(torch.as_tensor(X)), torch.as_tensor(y))
    assert float(losses.mean()) == pytest.approx(result.loss)
    assert result.loss < 2.0
    # the same network at a sane rate does not trip the guard
    sane = make_trainer(
        torch.nn.Sequential(linear_model(6, 8), torch.nn.ReLU(), linear_model(8, 3, seed=1)),
        TrainingConfig(solver="adam", learning_rate=1e-2),
    )
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        assert not sane.fit(X, y, max_iter=20).diverged


def test_loss_is_the_last_epoch_loss(data):
    X, y = data
    trainer = make_trainer(linear_model(6, 3), TrainingConfig(learning_rate=0.01))
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(3\\)"):
        result = trainer.fit(X, y, max_iter=3)
    assert result.loss == result.loss_curve[-1]


def test_early_stopping_with_zero_weight_validation_split_is_a_clear_error(data):
    X, y = data
    config = TrainingConfig(early_stopping=True, validation_fraction=0.2, stratify=False)
    # weights that are zero exactly on the rows the split sets aside (same seed,
    # same split: the row numbers travel through the split as weights)
    probe = make_trainer(linear_model(6, 3), config)
    _, validation_part = probe._split_validation(X, y, np.arange(len(y), dtype=float))
    validation_rows = validation_part[2].astype(int)
    weights = np.ones(len(y))
    weights[validation_rows] = 0.0
    with pytest.raises(ValueError, match="validation split.*sample_weight of zero.*validation_fraction"):
        make_trainer(linear_model(6, 3), config).fit(X, y, weights, max_iter=5)


def test_a_restarted_trainer_fits_as_a_new_one(data):
    """``restart`` gives the kept module and buffers a new history, update rule and guard:
    the next fit from the same start is a new trainer's, step for step."""
    X, y = data
    config = TrainingConfig(solver="adam", learning_rate=0.01, batch_size=40, shuffle=False,
                            tol=-np.inf, warn_on_max_iter=False)
    fresh = linear_model(X.shape[1], 3, seed=1)
    expected = make_trainer(fresh, config).fit(X, y, max_iter=3)
    kept = linear_model(X.shape[1], 3, seed=1)
    trainer = make_trainer(kept, config)
    trainer.fit(X, y, max_iter=5)
    with torch.no_grad():
        for name, value in linear_model(X.shape[1], 3, seed=1).named_parameters():
            getattr(kept, name).copy_(value)
    trainer.restart()
    history = trainer.fit(X, y, max_iter=3)
    assert history.n_iter == expected.n_iter == 3
    assert history.loss_curve == expected.loss_curve
    torch.testing.assert_close(kept.weight, fresh.weight, rtol=0, atol=0)
