"""The network regressors' target scaling: weighted moments, constant columns, Poisson, blocks."""

import numpy as np
from numpy.testing import assert_allclose

from skquad._foundation._target_scaling import (
    scaled_targets,
    scaling_from_moments,
    target_scaling,
    unscaled_predictions,
)


def test_the_weighted_standardization_round_trips():
    rng = np.random.RandomState(0)
    y = 1e4 + 50.0 * rng.randn(40, 2)
    w = rng.uniform(0.5, 2.0, 40)
    shift, scale = target_scaling(y, w)
    assert_allclose(shift, np.average(y, axis=0, weights=w))
    assert_allclose(scale, np.sqrt(np.average((y - shift) ** 2, axis=0, weights=w)))
    z = scaled_targets(y, shift, scale)
    assert_allclose(np.average(z, axis=0, weights=w), 0.0, atol=1e-12)
    assert_allclose(unscaled_predictions(z, shift, scale), y, rtol=1e-14)


def test_a_constant_column_predicts_its_constant_and_poisson_is_only_divided():
    y = np.column_stack([np.full(10, 7.5), np.arange(10.0)])
    shift, scale = target_scaling(y, np.ones(10))
    assert scale[0] == 0.0 and shift[0] == 7.5
    assert_allclose(unscaled_predictions(np.zeros((3, 2)), shift, scale)[:, 0], 7.5)
    _, first_batch_scale = target_scaling(y, np.ones(10), all_data=False)
    assert first_batch_scale[0] == 1.0
    shift, scale = target_scaling(y + 1.0, np.ones(10), loss="poisson")
    assert_allclose(shift, 0.0) and assert_allclose(scale, np.mean(y + 1.0, axis=0))


def test_the_moments_of_row_blocks_give_the_in_memory_scaling():
    rng = np.random.RandomState(1)
    y, w = rng.randn(30, 3) * [1.0, 10.0, 1e-3], rng.uniform(0, 1, 30)
    blocks = [slice(0, 7), slice(7, 20), slice(20, 30)]
    mean = sum(w[b] @ y[b] for b in blocks) / w.sum()
    variance = sum(w[b] @ (y[b] - mean) ** 2 for b in blocks) / w.sum()
    for expected, got in zip(target_scaling(y, w), scaling_from_moments(mean, variance)):
        assert_allclose(got, expected, rtol=1e-12)
