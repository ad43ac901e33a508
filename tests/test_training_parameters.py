"""skquad._training._parameters: a module's parameters as views of one flat buffer.

The penalty and its gradient are compared with autograd on the penalty written
parameter by parameter; float64 throughout, so the tolerances are a few ulps of
the sums (1e-12 relative).
"""

import copy

import pytest
import torch

from skquad._training import ParameterGroup
from skquad._training._parameters import FlatParameters


def _module():
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    generator = torch.Generator().manual_seed(0)  # never the global generator
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    return module


def _flat(module, groups):
    return FlatParameters(module, groups, device=torch.device("cpu"), dtype=torch.float64)


def test_parameters_become_views_that_keep_their_values():
    module = _module()
    before = [p.detach().clone() for p in module.parameters()]
    flat = _flat(module, [])
    assert flat.size == sum(p.numel() for p in before) == 3 * 4 + 4 + 4 * 2 + 2
    for parameter, value in zip(module.parameters(), before):
        torch.testing.assert_close(parameter.detach(), value, rtol=0, atol=0)
    # writing the buffer moves the module, and backward writes the flat gradient
    flat.values.mul_(2.0)
    torch.testing.assert_close(module[0].weight.detach(), 2.0 * before[0], rtol=0, atol=0)
    module(torch.ones(5, 3, dtype=torch.float64)).sum().backward()
    assert flat.gradient.abs().sum() > 0
    assert module[2].bias.grad.data_ptr() == flat.gradient[flat.size - 2 :].data_ptr()


def test_groups_get_their_ranges_and_the_rest_is_other():
    module = _module()
    first = ParameterGroup([module[0].weight, module[0].bias], name="first", learning_rate_scale=0.5)
    flat = _flat(module, [first])
    assert flat.slices == {"first": slice(0, 16), "other": slice(16, 26)}
    rates = flat.learning_rates(0.1)
    torch.testing.assert_close(rates[:16], torch.full((16,), 0.05, dtype=torch.float64))
    torch.testing.assert_close(rates[16:], torch.full((10,), 0.1, dtype=torch.float64))


def test_agreeing_groups_keep_scalars():
    module = _module()
    flat = _flat(module, [ParameterGroup(list(module.parameters()), learning_rate_scale=2.0)])
    assert flat.learning_rates(0.1) == pytest.approx(0.2)
    assert not flat.has_penalty


def test_penalty_and_its_gradient_match_autograd():
    module = _module()
    groups = [
        ParameterGroup([module[0].weight], name="w0", l1=0.3, l2=0.7),
        ParameterGroup([module[2].weight], name="w2", l2=0.1),
    ]  # the biases: "other", unpenalized
    flat = _flat(module, groups)
    assert flat.has_penalty
    reference = copy.deepcopy(module)
    w0, w2 = reference[0].weight, reference[2].weight
    penalty = 0.5 * 0.7 * (w0**2).sum() + 0.3 * w0.abs().sum() + 0.5 * 0.1 * (w2**2).sum()
    assert flat.penalty_value() == pytest.approx(float(penalty.detach()), rel=1e-12)
    penalty.backward()
    weight_sum = 4.0  # the batch's total weight divides the penalty's gradient
    flat.gradient.zero_()
    flat.add_penalty_gradient(1.0 / weight_sum)
    # the buffer holds the groups in order, then "other" (the two biases)
    assert flat.slices == {"w0": slice(0, 12), "w2": slice(12, 20), "other": slice(20, 26)}
    expected = torch.cat([w0.grad.flatten(), w2.grad.flatten(), torch.zeros(6, dtype=torch.float64)])
    expected /= weight_sum
    torch.testing.assert_close(flat.gradient, expected, rtol=1e-12, atol=1e-15)


def test_bind_reseats_a_deep_copy():
    module = _module()
    flat = _flat(module, [])
    module_copy, flat_copy = copy.deepcopy((module, flat))
    flat_copy.bind(module_copy)
    flat_copy.values.zero_()
    assert all(float(p.detach().abs().sum()) == 0.0 for p in module_copy.parameters())
    assert float(module[0].weight.detach().abs().sum()) > 0  # the original is untouched


def test_a_parameter_in_two_groups_is_refused():
    module = _module()
    groups = [ParameterGroup([module[0].weight], name="a"), ParameterGroup([module[0].weight], name="b")]
    with pytest.raises(ValueError, match="both groups 'a' and 'b'"):
        _flat(module, groups)


def test_a_parameter_of_another_module_is_refused():
    module = _module()
    stranger = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))
    with pytest.raises(ValueError, match="not trainable parameters of the module"):
        _flat(module, [ParameterGroup([stranger])])


def test_a_module_without_trainable_parameters_is_refused():
    module = _module().requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameters"):
        _flat(module, [])
