"""skquad/nn/losses.py: the per-sample losses are scikit-learn's MLP losses."""

import numpy as np
import pytest
import torch
from sklearn.metrics import log_loss

from skquad.nn.losses import OUTPUT_LOSSES, per_sample_loss


def test_poisson_loss_is_half_the_deviance_as_in_mlp():
    # skquad.nn.losses' "poisson" is sklearn's poisson_loss (half the Poisson
    # deviance, y log(y / mu) - y + mu) of mu = exp(score), per sample.
    from sklearn.neural_network._base import poisson_loss

    rng = np.random.RandomState(0)
    scores = rng.randn(20, 1)
    y = rng.poisson(1.5, size=(20, 1)).astype(float)
    ours = per_sample_loss("poisson")(torch.as_tensor(scores), torch.as_tensor(y)).numpy()
    np.testing.assert_allclose(ours.mean(), poisson_loss(y, np.exp(scores)), rtol=1e-12)


@pytest.mark.parametrize("output, n_scores", [("binary", 1), ("softmax", 3), ("sigmoid", 3)])
def test_classification_losses_are_log_losses(output, n_scores):
    rng = np.random.RandomState(0)
    scores = rng.randn(30, n_scores)
    y = rng.randint(0, max(n_scores, 2), size=30)
    losses = per_sample_loss(output)(torch.as_tensor(scores), torch.as_tensor(y)).numpy()
    assert losses.shape == (30,)
    if output == "binary":
        probabilities = 1.0 / (1.0 + np.exp(-scores[:, 0]))
        expected = log_loss(y, probabilities, labels=[0, 1]) * 30
    elif output == "softmax":
        probabilities = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
        expected = log_loss(y, probabilities, labels=[0, 1, 2]) * 30
    else:  # one binary log-loss per score, summed over the scores
        indicator = np.eye(3)[y]
        probabilities = 1.0 / (1.0 + np.exp(-scores))
        expected = -np.sum(indicator * np.log(probabilities) + (1 - indicator) * np.log1p(-probabilities))
    np.testing.assert_allclose(losses.sum(), expected, rtol=1e-10)


def test_unknown_output_kind_names_the_known_ones():
    with pytest.raises(ValueError, match=r"Unknown output kind 'hinge'; expected one of " + repr(sorted(OUTPUT_LOSSES)).replace("[", r"\[").replace("]", r"\]")):
        per_sample_loss("hinge")
