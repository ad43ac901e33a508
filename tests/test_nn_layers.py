"""Tests of skquad.nn.layers: forward math, initialisation, parameter groups,
weight transfer, numpy state and input checks."""

import math
import pickle

import numpy as np
import pytest
import torch
from torch import nn

from skquad.nn import QuadraticLayer, ReducedQuadraticLayer

F64 = torch.float64

QUADRATIC_OPTIONS = [
    {"backward": backward, "quadratic_storage": storage, "bias": bias}
    for backward in ("cached", "autograd")
    for storage in ("full", "packed")
    for bias in (True, False)
]
REDUCED_OPTIONS = [
    {"backward": backward, "power_term": power}
    for backward in ("cached", "autograd")
    for power in (False, True)
]


# Every layer kind, 5 -> 3, float64.
LAYER_MAKERS = [
    lambda: QuadraticLayer(5, 3, dtype=F64, quadratic_storage="full"),
    lambda: QuadraticLayer(5, 3, dtype=F64, quadratic_storage="packed"),
    lambda: ReducedQuadraticLayer(5, 3, dtype=F64),
    lambda: ReducedQuadraticLayer(5, 3, dtype=F64, power_term=True),
]
LAYER_IDS = ["full", "packed", "reduced", "power"]


def _generator(seed=0):
    return torch.Generator().manual_seed(seed)


def _inputs(batch=7, n_in=5, seed=1, dtype=F64):
    return torch.randn(batch, n_in, generator=_generator(seed), dtype=dtype)


def _reference_quadratic(layer, a):
    """z_k = b_k + W_k a + a^T Q^(k) a written out with einsum."""
    q = layer.quadratic_matrices().detach()
    z = a @ layer.weight.detach().T + torch.einsum("bi,kij,bj->bk", a, q, a)
    if layer.bias is not None:
        z = z + layer.bias.detach()
    return z


def _reference_reduced(layer, a):
    w, b = layer.weight.detach(), layer.bias.detach()
    u, c = layer.factor_weight.detach(), layer.factor_bias.detach()
    z = (a @ w.T + b) * (a @ u.T + c)
    if layer.power_term:
        z = z + (a * a) @ layer.power_weight.detach().T + layer.power_bias.detach()
    return z


@pytest.mark.parametrize("options", QUADRATIC_OPTIONS)
def test_quadratic_layer_forward_matches_formula(options):
    layer = QuadraticLayer(5, 3, dtype=F64, **options)
    layer.reset_parameters(_generator(), relinear=False)
    a = _inputs()
    torch.testing.assert_close(layer(a), _reference_quadratic(layer, a))
    q = layer.quadratic_matrices()
    assert q.shape == (3, 5, 5)
    torch.testing.assert_close(q, q.transpose(1, 2))
    assert q.abs().max() > 0


@pytest.mark.parametrize("options", REDUCED_OPTIONS)
def test_reduced_layer_forward_matches_formula(options):
    layer = ReducedQuadraticLayer(5, 3, dtype=F64, **options)
    layer.reset_parameters(_generator(), relinear=False)
    a = _inputs()
    torch.testing.assert_close(layer(a), _reference_reduced(layer, a))


def test_full_and_packed_storage_compute_the_same_function():
    full = QuadraticLayer(6, 4, quadratic_storage="full", dtype=F64)
    assert QuadraticLayer(6, 4).quadratic_storage == QuadraticLayer.default_storage
    full.reset_parameters(_generator(3), relinear=False)
    packed = QuadraticLayer.from_numpy_state(
        full.state_to_numpy(), dtype=F64, quadratic_storage="packed"
    )
    assert packed.quadratic_weight.shape == (4, 21)
    a = _inputs(n_in=6)
    torch.testing.assert_close(packed(a), full(a))
    torch.testing.assert_close(packed.quadratic_matrices(), full.quadratic_matrices())


def test_same_generator_gives_the_same_matrices_in_either_storage():
    full = QuadraticLayer(5, 3, quadratic_storage="full", dtype=F64)
    packed = QuadraticLayer(5, 3, quadratic_storage="packed", dtype=F64)
    full.reset_parameters(_generator(4), relinear=False)
    packed.reset_parameters(_generator(4), relinear=False)
    torch.testing.assert_close(full.quadratic_matrices(), packed.quadratic_matrices())
    torch.testing.assert_close(full.weight, packed.weight)


def test_full_storage_uses_the_symmetric_part():
    # An asymmetric P and its symmetric part define the same quadratic form.
    layer = QuadraticLayer(4, 2, dtype=F64, backward="autograd", quadratic_storage="full")
    with torch.no_grad():
        layer.quadratic_weight.copy_(torch.randn(2, 4, 4, generator=_generator(), dtype=F64))
    a = _inputs(n_in=4)
    z_autograd = layer(a)
    layer.backward = "cached"
    torch.testing.assert_close(layer(a), z_autograd)
    torch.testing.assert_close(z_autograd, _reference_quadratic(layer, a))


@pytest.mark.parametrize("make", LAYER_MAKERS, ids=LAYER_IDS)
def test_relinear_start_is_a_conventional_neuron(make):
    layer = make().reset_parameters(_generator(), relinear=True)
    a = _inputs()
    expected = nn.functional.linear(a, layer.weight, layer.bias)
    torch.testing.assert_close(layer(a), expected)
    # ... but the linear part is random, not zero.
    assert layer.weight.abs().min() > 0


@pytest.mark.parametrize("make", LAYER_MAKERS, ids=LAYER_IDS)
def test_random_quadratic_start_differs_from_linear(make):
    layer = make().reset_parameters(_generator(), relinear=False)
    a = _inputs()
    linear = nn.functional.linear(a, layer.weight, layer.bias)
    assert (layer(a) - linear).abs().max() > 1e-3


def test_linear_part_initialised_like_torch_linear():
    n_in, n_out = 64, 300
    layer = QuadraticLayer(n_in, n_out, quadratic_storage="packed")
    layer.reset_parameters(_generator(5))
    bound = 1.0 / math.sqrt(n_in)
    weight = layer.weight.detach()
    assert weight.abs().max() <= bound
    # Uniform on [-bound, bound]: standard deviation bound / sqrt(3).
    assert abs(weight.std().item() - bound / math.sqrt(3)) < 0.02 * bound
    assert layer.bias.detach().abs().max() <= bound
    reference = nn.Linear(n_in, n_out)
    assert abs(reference.weight.detach().std().item() - weight.std().item()) < 0.03 * bound


@pytest.mark.parametrize("cls", [QuadraticLayer, ReducedQuadraticLayer])
def test_initialisation_is_reproducible_and_leaves_global_rng_alone(cls):
    global_state = torch.random.get_rng_state()
    first = cls(6, 4).reset_parameters(_generator(11), relinear=False)
    second = cls(6, 4).reset_parameters(_generator(11), relinear=False)
    third = cls(6, 4).reset_parameters(_generator(12), relinear=False)
    # Constructing layers draws from the global generator (as nn.Linear does);
    # reset_parameters with a local generator must not.
    torch.random.set_rng_state(global_state)
    layer = cls(6, 4)
    after_construct = torch.random.get_rng_state()
    layer.reset_parameters(_generator(11), relinear=False)
    assert torch.equal(torch.random.get_rng_state(), after_construct)
    for (name, p1), (_, p2), (_, p3) in zip(
        first.named_parameters(), second.named_parameters(), third.named_parameters()
    ):
        assert torch.equal(p1, p2), name
        if p1.numel() > 1 and name not in ("power_bias",):
            assert not torch.equal(p1, p3), name


@pytest.mark.parametrize(
    "layer",
    [
        QuadraticLayer(4, 3),
        QuadraticLayer(4, 3, bias=False),
        ReducedQuadraticLayer(4, 3),
        ReducedQuadraticLayer(4, 3, power_term=True),
    ],
    ids=["quadratic", "quadratic-nobias", "reduced", "power"],
)
def test_parameter_groups_partition_the_parameters(layer):
    linear = list(layer.linear_parameters())
    quadratic = list(layer.quadratic_parameters())
    assert {id(p) for p in linear}.isdisjoint({id(p) for p in quadratic})
    assert {id(p) for p in linear} | {id(p) for p in quadratic} == {
        id(p) for p in layer.parameters()
    }
    assert any(p is layer.weight for p in linear)
    assert len(linear) + len(quadratic) == len(list(layer.parameters()))


@pytest.mark.parametrize("make", LAYER_MAKERS, ids=LAYER_IDS)
def test_load_linear_from_reproduces_the_linear_layer(make):
    linear = nn.Linear(5, 3, dtype=F64)
    layer = make().reset_parameters(_generator(), relinear=False)
    layer.load_linear_from(linear)
    a = _inputs()
    torch.testing.assert_close(layer(a), linear(a))
    # The copy is a copy: training the quadratic layer leaves the Linear alone.
    with torch.no_grad():
        layer.weight.add_(1.0)
    assert not torch.equal(layer.weight, linear.weight)


def test_load_linear_from_can_keep_the_quadratic_part():
    layer = QuadraticLayer(5, 3, dtype=F64).reset_parameters(_generator(), relinear=False)
    before = layer.quadratic_weight.detach().clone()
    layer.load_linear_from(nn.Linear(5, 3, dtype=F64), reset_quadratic=False)
    assert torch.equal(layer.quadratic_weight, before)


def test_load_linear_from_rejects_mismatches():
    layer = QuadraticLayer(5, 3)
    with pytest.raises(ValueError, match=r"Linear\(4, 3\)"):
        layer.load_linear_from(nn.Linear(4, 3))
    with pytest.raises(ValueError, match="bias"):
        layer.load_linear_from(nn.Linear(5, 3, bias=False))
    with pytest.raises(TypeError, match="torch.nn.Linear"):
        layer.load_linear_from(ReducedQuadraticLayer(5, 3))


@pytest.mark.parametrize(
    "make, overrides",
    [
        (lambda: QuadraticLayer(5, 3, dtype=F64), {"quadratic_storage": "packed"}),
        (
            lambda: QuadraticLayer(5, 3, dtype=F64, bias=False, quadratic_storage="packed"),
            {"backward": "autograd"},
        ),
        (lambda: ReducedQuadraticLayer(5, 3, dtype=F64), {"backward": "autograd"}),
        (lambda: ReducedQuadraticLayer(5, 3, dtype=F64, power_term=True), {}),
    ],
)
def test_numpy_state_round_trip(make, overrides):
    layer = make().reset_parameters(_generator(), relinear=False)
    state = pickle.loads(pickle.dumps(layer.state_to_numpy()))
    for key, value in state.items():
        if key not in ("kind", "options"):
            assert isinstance(value, np.ndarray), key
    rebuilt = type(layer).from_numpy_state(state, dtype=F64, **overrides)
    a = _inputs()
    torch.testing.assert_close(rebuilt(a), layer(a))
    # float32 rebuild of a float64 state: same function up to float32 rounding.
    single = type(layer).from_numpy_state(state, dtype=torch.float32)
    assert single.weight.dtype == torch.float32
    torch.testing.assert_close(single(a.float()).double(), layer(a).detach(), rtol=1e-4, atol=1e-4)


def test_load_numpy_state_rejects_bad_states():
    layer = QuadraticLayer(4, 2)
    state = layer.state_to_numpy()
    with pytest.raises(ValueError, match="state is for in_features=4, out_features=2"):
        QuadraticLayer(3, 2).load_numpy_state(state)
    without_options = {key: value for key, value in state.items() if key != "options"}
    bad = {**without_options, "quadratic": state["quadratic"][:, :3, :3]}
    with pytest.raises(ValueError, match=r"quadratic has shape \(2, 3, 3\)"):
        layer.load_numpy_state(bad)
    bad = dict(state)
    bad["weight"] = np.full_like(state["weight"], np.nan)
    with pytest.raises(ValueError, match="weight contains NaN"):
        layer.load_numpy_state(bad)
    with pytest.raises(ValueError, match="exported from a QuadraticLayer"):
        ReducedQuadraticLayer(4, 2).load_numpy_state(state)
    reduced_state = ReducedQuadraticLayer(4, 2).state_to_numpy()
    with pytest.raises(ValueError, match="power_weight"):
        ReducedQuadraticLayer(4, 2, power_term=True).load_numpy_state(reduced_state)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"in_features": 0, "out_features": 2}, "in_features must be a positive integer"),
        ({"in_features": 2, "out_features": 2.5}, "out_features must be a positive integer"),
        ({"in_features": 2, "out_features": 2, "backward": "fast"}, "backward must be one of"),
        (
            {"in_features": 2, "out_features": 2, "quadratic_storage": "upper"},
            "quadratic_storage must be one of",
        ),
    ],
)
def test_constructor_rejects_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        QuadraticLayer(**kwargs)


def test_reduced_constructor_rejects_bad_options():
    with pytest.raises(ValueError, match="power_term must be a bool"):
        ReducedQuadraticLayer(3, 2, power_term="yes")
    with pytest.raises(ValueError, match="backward must be one of"):
        ReducedQuadraticLayer(3, 2, backward=None)


@pytest.mark.parametrize("layer", [QuadraticLayer(3, 2), ReducedQuadraticLayer(3, 2)])
def test_forward_rejects_wrong_input_shape(layer):
    with pytest.raises(ValueError, match=r"input of shape \(batch, 3\), got \(4, 2\)"):
        layer(torch.ones(4, 2))
    with pytest.raises(ValueError, match=r"got \(3,\)"):
        layer(torch.ones(3))
    with pytest.raises(ValueError, match="torch.float32 parameters .* input is torch.float64"):
        layer(torch.ones(4, 3, dtype=F64))
    with pytest.raises(TypeError, match="expects a torch.Tensor, got ndarray"):
        layer(np.ones((4, 3), dtype=np.float32))


def test_dtype_conversion_moves_index_buffers():
    layer = QuadraticLayer(4, 2, quadratic_storage="packed").double()
    assert layer.quadratic_weight.dtype == F64
    a = _inputs(n_in=4)
    torch.testing.assert_close(layer(a), _reference_quadratic(layer, a))
    # The index buffers are not part of the saved state dict.
    assert set(layer.state_dict()) == {"weight", "bias", "quadratic_weight"}


@pytest.mark.parametrize("backward", ["cached", "autograd"])
def test_full_storage_stays_symmetric_under_training(backward):
    layer = QuadraticLayer(4, 3, backward=backward, quadratic_storage="full", dtype=F64)
    layer.reset_parameters(_generator(), relinear=False)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.05, weight_decay=1e-3)
    a = _inputs(batch=20, n_in=4)
    target = torch.randn(20, 3, generator=_generator(9), dtype=F64)
    for _ in range(20):
        optimizer.zero_grad()
        nn.functional.mse_loss(layer(a), target).backward()
        optimizer.step()
    p = layer.quadratic_weight.detach()
    torch.testing.assert_close(p, p.transpose(1, 2), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "make",
    [
        lambda: QuadraticLayer(2, 1, quadratic_storage="full"),
        lambda: QuadraticLayer(2, 1, quadratic_storage="packed", backward="autograd"),
        lambda: ReducedQuadraticLayer(2, 1, backward="cached"),
        lambda: ReducedQuadraticLayer(2, 1, power_term=True),
    ],
)
def test_one_quadratic_neuron_learns_xor(make):
    # XOR in bipolar encoding is not linearly separable; x1 * x2 separates it,
    # and every layer here can represent that product.
    x = torch.tensor([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
    y = torch.tensor([[0.0], [1.0], [1.0], [0.0]])
    layer = make().reset_parameters(_generator(2), relinear=False)
    optimizer = torch.optim.Adam(layer.parameters(), lr=0.2)
    for _ in range(100):
        optimizer.zero_grad()
        nn.functional.binary_cross_entropy_with_logits(layer(x), y).backward()
        optimizer.step()
    predictions = (layer(x) > 0).float()
    assert torch.equal(predictions, y)


def test_layers_do_not_change_global_torch_state():
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()
    layer = QuadraticLayer(8, 4, dtype=F64)
    layer(_inputs(n_in=8)).sum().backward()
    ReducedQuadraticLayer(8, 4, power_term=True)(_inputs(n_in=8).float()).sum().backward()
    assert torch.get_num_threads() == threads
    assert torch.get_default_dtype() == dtype


@pytest.mark.parametrize("kind", ["Linear", "QuadraticLayer", "ReducedQuadraticLayer"])
def test_new_layer_and_rebuild_never_touch_the_global_generator(kind):
    from skquad.nn.layers import layer_from_numpy_state, layer_to_numpy_state, new_layer

    torch.manual_seed(7)
    expected = torch.rand(3)
    torch.manual_seed(7)
    layer = new_layer(kind, 5, 3, generator=_generator(1), relinear=False, dtype=F64)
    again = new_layer(kind, 5, 3, generator=_generator(1), relinear=False, dtype=F64)
    rebuilt = layer_from_numpy_state(layer_to_numpy_state(layer), dtype=torch.float32)
    assert torch.equal(torch.rand(3), expected)
    assert type(layer) is type(rebuilt) and type(layer).__name__ == kind
    for (name, p1), (_, p2), (_, p3) in zip(
        layer.named_parameters(), again.named_parameters(), rebuilt.named_parameters()
    ):
        assert torch.equal(p1, p2), name
        torch.testing.assert_close(p3, p1.float(), msg=name)
    bound = 1 / math.sqrt(5)
    assert layer.weight.abs().max() <= bound and layer.weight.abs().max() > 0.5 * bound
