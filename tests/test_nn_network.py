"""Tests of skquad.nn.network: building, exporting and rebuilding networks."""

import pytest
import torch

from skquad.nn import QuadraticLayer, ReducedQuadraticLayer
from skquad.nn.network import (
    count_parameters,
    network_from_states,
    network_to_states,
    new_network,
)

CASES = [
    ("QuadraticLayer", {"quadratic_storage": "full"}, [True, True]),
    ("QuadraticLayer", {"quadratic_storage": "packed"}, [False, True]),
    ("ReducedQuadraticLayer", {"power_term": False}, [True, False]),
    ("ReducedQuadraticLayer", {"power_term": True}, [True, True]),
]


def _network(kind, options, flags, seed=0):
    return new_network([5, 4, 3], flags, "tanh", quadratic_kind=kind, quadratic_options=options,
                       generator=torch.Generator().manual_seed(seed), relinear=False)


@pytest.mark.parametrize("kind, options, flags", CASES)
def test_structure_and_parameter_count(kind, options, flags):
    network = _network(kind, options, flags)
    layer_types = [type(item) for item in network]
    quadratic = {"QuadraticLayer": QuadraticLayer, "ReducedQuadraticLayer": ReducedQuadraticLayer}[kind]
    assert layer_types == [quadratic if flags[0] else torch.nn.Linear, torch.nn.Tanh,
                           quadratic if flags[1] else torch.nn.Linear]
    assert all(p.dtype == torch.float64 for p in network.parameters())
    counted = count_parameters([5, 4, 3], flags, kind, quadratic_storage=options.get("quadratic_storage", "full"),
                               power_term=options.get("power_term", False))
    assert counted == sum(p.numel() for p in network.parameters())


@pytest.mark.parametrize("kind, options, flags", CASES)
def test_states_round_trip_computes_the_same_function(kind, options, flags):
    network = _network(kind, options, flags)
    x = torch.randn(6, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(3)
    expected_draw = torch.rand(2)
    torch.manual_seed(3)
    rebuilt = network_from_states(network_to_states(network), "tanh", dtype=torch.float64)
    assert torch.equal(torch.rand(2), expected_draw)  # rebuilding draws nothing
    torch.testing.assert_close(rebuilt(x), network(x))


def test_same_seed_same_network_other_seed_other_network():
    first, second, third = (_network(*CASES[0], seed=seed) for seed in (0, 0, 1))
    for p1, p2, p3 in zip(first.parameters(), second.parameters(), third.parameters()):
        assert torch.equal(p1, p2)
        assert not torch.equal(p1, p3)
