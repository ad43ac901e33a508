"""skquad.convex.losses: values, dual points and conjugates against autograd and Fenchel-Young."""

import numpy as np
import pytest
import torch

from skquad.convex.losses import (
    conjugate,
    dual_point,
    hinge_dual_point,
    hinge_prox,
    initial_hinge_dual,
    loss_per_sample,
    project_dual,
)

LOSSES = ["hinge", "logistic", "squared"]


def _problem(n_outputs, loss, n=25, seed=0):
    generator = torch.Generator().manual_seed(seed)
    scores = 2.0 * torch.randn((n, n_outputs), generator=generator, dtype=torch.float64)
    if n_outputs == 1:
        if loss == "squared":
            target = torch.randn((n, 1), generator=generator, dtype=torch.float64)
        else:
            target = torch.where(torch.rand((n, 1), generator=generator) < 0.5, -1.0, 1.0).double()
    else:
        labels = torch.randint(0, n_outputs, (n,), generator=generator)
        target = torch.nn.functional.one_hot(labels, n_outputs).double()
    return scores, target


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_loss_values_match_their_definitions(loss, n_outputs):
    scores, target = _problem(n_outputs, loss)
    f, t = scores.numpy(), target.numpy()
    if n_outputs == 1:
        expected = {
            "hinge": np.maximum(0.0, 1.0 - t[:, 0] * f[:, 0]),
            "logistic": np.log1p(np.exp(-t[:, 0] * f[:, 0])),
            "squared": (f[:, 0] - t[:, 0]) ** 2,
        }[loss]
    else:
        true = (f * t).sum(axis=1)
        expected = {
            "hinge": np.max(f + 1.0 - t, axis=1) - true,  # Crammer-Singer
            "logistic": np.log(np.exp(f).sum(axis=1)) - true,
            "squared": ((f - t) ** 2).sum(axis=1),
        }[loss]
    # a few float64 roundings of O(10) values
    np.testing.assert_allclose(loss_per_sample(scores, target, loss).numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_dual_point_is_the_gradient_of_the_loss(loss, n_outputs):
    scores, target = _problem(n_outputs, loss)
    scores.requires_grad_(True)
    loss_per_sample(scores, target, loss).sum().backward()
    # autograd and the closed form differ by rounding only
    torch.testing.assert_close(dual_point(scores.detach(), target, loss), scores.grad, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_conjugate_meets_fenchel_young_with_equality_at_the_dual_point(loss, n_outputs):
    scores, target = _problem(n_outputs, loss)
    lam = dual_point(scores, target, loss)
    values = loss_per_sample(scores, target, loss)
    # l(f) = <lam, f> - l*(lam) exactly at lam = l'(f) (up to rounding of log terms)
    torch.testing.assert_close(
        values, (lam * scores).sum(dim=1) - conjugate(lam, target, loss), rtol=1e-10, atol=1e-10
    )
    # and l(f') >= <lam, f'> - l*(lam) at any other scores f'
    others, _ = _problem(n_outputs, loss, seed=1)
    gap = loss_per_sample(others, target, loss) - ((lam * others).sum(dim=1) - conjugate(lam, target, loss))
    assert float(gap.min()) >= -1e-12


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_hinge_dual_points_meet_fenchel_young(n_outputs):
    scores, target = _problem(n_outputs, "hinge")
    generator = torch.Generator().manual_seed(3)
    if n_outputs == 1:
        dual = torch.rand((scores.shape[0], 1), generator=generator, dtype=torch.float64)
    else:
        dual = torch.softmax(torch.randn(scores.shape, generator=generator, dtype=torch.float64), dim=1)
    lam = hinge_dual_point(dual, target)
    gap = loss_per_sample(scores, target, "hinge") - ((lam * scores).sum(dim=1) - conjugate(lam, target, "hinge"))
    assert float(gap.min()) >= -1e-12


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_project_dual_lands_in_the_domain_and_keeps_dual_points(loss, n_outputs):
    scores, target = _problem(n_outputs, loss)
    wild = 3.0 * torch.randn(scores.shape, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    projected = project_dual(wild, target, loss)
    if loss == "squared":
        assert torch.equal(projected, wild)  # no constraint
    elif n_outputs == 1:
        s = -target * projected
        assert float(s.min()) >= 0.0 and float(s.max()) <= 1.0
    else:
        pi = projected + target
        assert float(pi.min()) >= -1e-15
        torch.testing.assert_close(pi.sum(dim=1), torch.ones(len(pi), dtype=torch.float64))
    # idempotent: a point of the domain stays where it is
    torch.testing.assert_close(project_dual(projected, target, loss), projected, rtol=0, atol=1e-14)
    if loss != "hinge":
        exact = dual_point(scores, target, loss)
        torch.testing.assert_close(project_dual(exact, target, loss), exact, rtol=0, atol=1e-14)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_hinge_prox_is_below_the_hinge_and_reaches_it_at_a_fixed_point(n_outputs):
    scores, target = _problem(n_outputs, "hinge")
    dual = initial_hinge_dual(target)
    hinge = loss_per_sample(scores, target, "hinge")
    values, new = hinge_prox(scores, target, dual, sigma=0.7)
    assert float((values - hinge).max()) <= 1e-12
    # iterating the dual update with the scores fixed converges to the
    # hinge's subgradient, where the proximal form equals the loss
    for _ in range(200):
        values, new = hinge_prox(scores, target, new, sigma=0.7)
    torch.testing.assert_close(values, hinge, rtol=0, atol=1e-9)


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_hinge_prox_gradient_is_its_updated_dual(n_outputs):
    scores, target = _problem(n_outputs, "hinge")
    dual = initial_hinge_dual(target)
    scores.requires_grad_(True)
    values, new = hinge_prox(scores, target, dual, sigma=0.5)
    values.sum().backward()
    # envelope theorem: d phi / d f = lam(new dual)
    torch.testing.assert_close(scores.grad, hinge_dual_point(new, target), rtol=1e-12, atol=1e-12)
