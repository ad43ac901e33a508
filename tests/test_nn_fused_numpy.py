"""Tests of skquad.nn._fused_numpy: the fused step on numpy views of the same tensors.

Its gradients against autograd, and its NaN on an overflowed score, are checked
for every spelling beside the torch step's in ``test_nn_fused.py``.
"""

import numpy as np
import torch

from skquad import QNNClassifier
from test_nn_fused import BACKENDS, _fused, _network_and_loss


def test_numpy_and_torch_steps_agree_in_float32(thread_counts):
    # The numpy step reads the same float32 tensors; its products round
    # differently (another BLAS, another summation order), so the agreement
    # is float32's: ~1e-6 relative on O(1) numbers.
    estimator = QNNClassifier((6,), activation="relu", relinear=False)
    rng = np.random.RandomState(2)
    X = torch.as_tensor(rng.randn(40, 5), dtype=torch.float32)
    y = torch.as_tensor(rng.randint(0, 4, size=40))
    weights = torch.full((40,), 1 / 40, dtype=torch.float32)
    module, output = _network_and_loss(estimator, X, y.numpy())
    module = module.to(torch.float32)
    for parameter in module.parameters():
        parameter.grad = torch.zeros_like(parameter)
    results = {}
    for backend in BACKENDS:
        with torch.no_grad():
            loss = _fused(module, output, backend)(X, y, weights)
        assert loss.dtype == torch.float32
        results[backend] = (loss, [p.grad.clone() for p in module.parameters()])
    for backend in BACKENDS[1:]:
        torch.testing.assert_close(results[backend][0], results["torch"][0], rtol=1e-6, atol=1e-6)
        for numpy_gradient, torch_gradient in zip(results[backend][1], results["torch"][1]):
            torch.testing.assert_close(numpy_gradient, torch_gradient, rtol=1e-5, atol=1e-6)


def test_numpy_step_follows_a_deep_copy_of_the_trainer(thread_counts):
    # The numpy step caches numpy views of the parameters; a deep copy of the
    # trainer (an atomic fit's working copy) must step its own buffers, and
    # both must then train exactly alike (issue 19's failure mode).
    import copy

    rng = np.random.RandomState(3)
    X, y = rng.randn(60, 4), rng.randint(0, 3, size=60)
    clf = QNNClassifier((5,), random_state=0, max_iter=1).partial_fit(X, y, classes=[0, 1, 2])
    trainer = clf._trainer
    twin = copy.deepcopy(trainer)
    before = trainer.flat_parameters.clone()
    twin.partial_fit(X, y)
    torch.testing.assert_close(trainer.flat_parameters, before, rtol=0, atol=0)
    assert not torch.equal(twin.flat_parameters, before)
    trainer.partial_fit(X, y)
    torch.testing.assert_close(trainer.flat_parameters, twin.flat_parameters, rtol=0, atol=0)


def test_torch_matmul_twins_follow_the_buffers():
    # matmul="torch" keeps a torch twin of each array that lives across steps;
    # the twins go with the buffers when a new batch size starts afresh
    # (memory stays bounded) and the gradients stay those of numpy's products.
    estimator = QNNClassifier((4,), relinear=False)
    rng = np.random.RandomState(5)
    X = torch.as_tensor(rng.randn(30, 3))
    y = torch.as_tensor(rng.randint(0, 3, size=30))
    module, output = _network_and_loss(estimator, X, y.numpy())
    twin_step, numpy_step = _fused(module, output, "numpy-torch-matmul"), _fused(module, output, "numpy")
    with torch.no_grad():
        for batch in (10, 11, 12, 13, 10):
            weights = torch.full((batch,), 1.0 / batch, dtype=torch.float64)
            twin_step(X[:batch], y[:batch], weights)
            twin_gradient = [p.grad.clone() for p in module.parameters()]
            numpy_step(X[:batch], y[:batch], weights)
            for a, b in zip(twin_gradient, module.parameters()):
                torch.testing.assert_close(a, b.grad, rtol=1e-12, atol=1e-14)
            step = twin_step._numpy_step
            kept = {id(array) for array in step._workspace.values()}
            kept |= {id(value) for layer in step._layers for value in vars(layer).values() if isinstance(value, np.ndarray)}
            assert set(step._tensors) <= kept
            for array, tensor in step._tensors.values():
                assert tensor.data_ptr() == array.ctypes.data
