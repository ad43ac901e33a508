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
