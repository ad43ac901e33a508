"""The papers' cached backward passes against autograd and finite differences."""

import pytest
import torch
from torch.autograd import gradcheck

from skquad.nn import (
    CachedBilinearProduct,
    CachedQuadraticForm,
    PackedQuadraticForm,
    QuadraticLayer,
    ReducedQuadraticLayer,
)
from skquad.nn.backward import PackedPairIndex

F64 = torch.float64


def _generator(seed=0):
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed=0, dtype=F64):
    return torch.randn(*shape, generator=_generator(seed), dtype=dtype).requires_grad_()


def _symmetric(n_out, n_in, seed=0):
    raw = torch.randn(n_out, n_in, n_in, generator=_generator(seed), dtype=F64)
    return (0.5 * (raw + raw.transpose(1, 2))).requires_grad_()


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("batch, n_in, n_out", [(1, 1, 1), (6, 4, 3), (5, 7, 2)])
def test_algorithm_1_gradcheck(batch, n_in, n_out, with_bias):
    a = _randn(batch, n_in, seed=1)
    weight = _randn(n_out, n_in, seed=2)
    bias = _randn(n_out, seed=3) if with_bias else None
    quadratic = _symmetric(n_out, n_in, seed=4)
    assert gradcheck(CachedQuadraticForm.apply, (a, weight, bias, quadratic))


@pytest.mark.parametrize("power_term", [False, True])
@pytest.mark.parametrize("batch, n_in, n_out", [(1, 1, 1), (6, 4, 3), (5, 7, 2)])
def test_algorithm_2_gradcheck(batch, n_in, n_out, power_term):
    power = (
        (_randn(n_out, n_in, seed=6), _randn(n_out, seed=7)) if power_term else (None, None)
    )
    inputs = (
        _randn(batch, n_in, seed=1),
        _randn(n_out, n_in, seed=2),
        _randn(n_out, seed=3),
        _randn(n_out, n_in, seed=4),
        _randn(n_out, seed=5),
        *power,
    )
    assert gradcheck(CachedBilinearProduct.apply, inputs)


@pytest.mark.parametrize("row_loop", [True, False])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("batch, n_in, n_out", [(1, 1, 1), (6, 4, 3), (3, 9, 2)])
def test_packed_algorithm_gradcheck(batch, n_in, n_out, with_bias, row_loop):
    # The packed triangle is the free parametrisation: gradcheck may perturb
    # every entry independently. Both the row-block loops (one thread) and the
    # gathers (several threads) are checked.
    index = PackedPairIndex(n_in)
    index.row_loop = row_loop
    a = _randn(batch, n_in, seed=1)
    weight = _randn(n_out, n_in, seed=2)
    bias = _randn(n_out, seed=3) if with_bias else None
    packed = _randn(n_out, n_in * (n_in + 1) // 2, seed=4)

    def function(a, weight, bias, packed):
        return PackedQuadraticForm.apply(a, weight, bias, packed, index)

    assert gradcheck(function, (a, weight, bias, packed))
    expected = a @ weight.T + torch.einsum("bi,kij,bj->bk", a, index.unpack(packed), a)
    if with_bias:
        expected = expected + bias
    torch.testing.assert_close(function(a, weight, bias, packed), expected)


def test_packed_index_unpacks_symmetric_matrices_and_packs_back():
    index = PackedPairIndex(4)
    packed = torch.arange(2 * 10, dtype=F64).reshape(2, 10)
    matrices = index.unpack(packed)
    torch.testing.assert_close(matrices, matrices.transpose(1, 2))
    assert matrices[0, 0, 1] == 1 and matrices[0, 1, 0] == 1 and matrices[1, 3, 3] == 19
    torch.testing.assert_close(index.pack(matrices), packed)


LAYERS = [
    ("quadratic-full", lambda bw: QuadraticLayer(5, 3, backward=bw, dtype=F64)),
    (
        "quadratic-packed",
        lambda bw: QuadraticLayer(5, 3, backward=bw, quadratic_storage="packed", dtype=F64),
    ),
    ("quadratic-nobias", lambda bw: QuadraticLayer(5, 3, backward=bw, bias=False, dtype=F64)),
    ("reduced", lambda bw: ReducedQuadraticLayer(5, 3, backward=bw, dtype=F64)),
    (
        "power",
        lambda bw: ReducedQuadraticLayer(5, 3, backward=bw, power_term=True, dtype=F64),
    ),
]


def _layer_as_function(layer):
    names = [name for name, _ in layer.named_parameters()]

    def function(a, *parameters):
        return torch.func.functional_call(layer, dict(zip(names, parameters)), (a,))

    parameters = [p.detach().clone().requires_grad_() for p in layer.parameters()]
    return function, parameters


@pytest.mark.parametrize("backward", ["cached", "autograd"])
@pytest.mark.parametrize("make", [m for _, m in LAYERS], ids=[n for n, _ in LAYERS])
def test_every_layer_gradcheck(make, backward):
    # Through the layer's own parametrisation (full P -> symmetric part, packed
    # triangle -> matrix): gradcheck perturbs single entries of P, including
    # asymmetric perturbations, so this checks the parametrisation too.
    layer = make(backward).reset_parameters(_generator(), relinear=False)
    function, parameters = _layer_as_function(layer)
    a = _randn(6, 5, seed=7)
    assert gradcheck(function, (a, *parameters))


@pytest.mark.parametrize("make", [m for _, m in LAYERS], ids=[n for n, _ in LAYERS])
@pytest.mark.parametrize("dtype, tolerance", [(F64, 1e-10), (torch.float32, 1e-4)])
def test_cached_gradients_equal_autograd_gradients(make, dtype, tolerance, thread_counts):
    cached = make("cached").to(dtype).reset_parameters(_generator(), relinear=False)
    plain = make("autograd").to(dtype)
    plain.load_numpy_state(cached.state_to_numpy())
    a_cached = _randn(9, 5, seed=8, dtype=dtype)
    a_plain = a_cached.detach().clone().requires_grad_()
    upstream = torch.randn(9, 3, generator=_generator(9), dtype=dtype)
    cached(a_cached).backward(upstream)
    plain(a_plain).backward(upstream)
    torch.testing.assert_close(a_cached.grad, a_plain.grad, rtol=tolerance, atol=tolerance)
    for (name, p_cached), (_, p_plain) in zip(
        cached.named_parameters(), plain.named_parameters()
    ):
        torch.testing.assert_close(
            p_cached.grad, p_plain.grad, rtol=tolerance, atol=tolerance, msg=name
        )


def test_packed_gradient_is_the_symmetric_sum_of_the_matrix_gradient():
    # For packed entry q_ij (i < j) appearing at Q_ij and Q_ji: dL/dq_ij =
    # G_ij + G_ji with G = dL/dQ; on the diagonal dL/dq_ii = G_ii.
    layer = QuadraticLayer(4, 2, quadratic_storage="packed", dtype=F64)
    layer.reset_parameters(_generator(), relinear=False)
    a = _randn(8, 4, seed=3).detach()
    upstream = torch.randn(8, 2, generator=_generator(4), dtype=F64)
    layer(a).backward(upstream)
    matrix_gradient = torch.einsum("bk,bi,bj->kij", upstream, a, a)
    rows, cols = torch.triu_indices(4, 4)
    expected = matrix_gradient[:, rows, cols] + matrix_gradient[:, cols, rows]
    expected = torch.where(rows == cols, matrix_gradient[:, rows, cols], expected)
    torch.testing.assert_close(layer.quadratic_weight.grad, expected)


def test_input_without_gradient_skips_its_gradient():
    # First layer of a network: the data does not require a gradient.
    layer = QuadraticLayer(4, 2, dtype=F64)
    a = torch.randn(3, 4, generator=_generator(), dtype=F64)
    layer(a).sum().backward()
    assert a.grad is None
    assert layer.quadratic_weight.grad is not None


def test_cached_backward_is_once_differentiable():
    layer = ReducedQuadraticLayer(3, 2, backward="cached", dtype=F64)
    a = _randn(4, 3)
    upstream = torch.ones(4, 2, dtype=F64, requires_grad=True)
    (grad,) = torch.autograd.grad(layer(a), a, upstream, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        grad.sum().backward()


def test_wide_packed_layer_uses_the_triangle_algorithm_and_matches_autograd(thread_counts):
    from skquad.nn import layers

    n_in = layers.PACKED_TRIANGLE_MIN_FEATURES
    cached = QuadraticLayer(n_in, 2, quadratic_storage="packed", dtype=F64)
    cached.reset_parameters(_generator(), relinear=False)
    plain = QuadraticLayer(n_in, 2, quadratic_storage="packed", backward="autograd", dtype=F64)
    plain.load_numpy_state(cached.state_to_numpy())
    a_cached = _randn(3, n_in, seed=5)
    a_plain = a_cached.detach().clone().requires_grad_()
    z = cached(a_cached)
    assert z.grad_fn.name() == "PackedQuadraticFormBackward"
    torch.testing.assert_close(z, plain(a_plain))
    upstream = torch.randn(3, 2, generator=_generator(6), dtype=F64)
    z.backward(upstream)
    plain(a_plain).backward(upstream)
    torch.testing.assert_close(a_cached.grad, a_plain.grad)
    torch.testing.assert_close(cached.quadratic_weight.grad, plain.quadratic_weight.grad)
    torch.testing.assert_close(cached.weight.grad, plain.weight.grad)
