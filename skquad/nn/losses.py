"""Per-sample losses of the networks' output layers (the autograd reference).

One function per output kind, ``loss(scores, y) -> (n,)`` with no reduction,
as :class:`skquad._training.Trainer` takes them. They define the objective of
the "cached" and "autograd" backward options and of validation;
:class:`~skquad.nn.fused.FusedNetwork` computes the same losses with their
gradients written out (``tests/test_nn_fused.py`` compares the two).

The kinds follow scikit-learn's MLP:

* "binary": one score, the log-loss of its sigmoid (``y``: 0/1 indices);
* "softmax": the cross-entropy of the softmax (``y``: class indices);
* "sigmoid": one binary log-loss per score, summed (``y``: class indices, or
  the indicator matrix of a multilabel problem);
* "squared_error" and "poisson": MLPRegressor's losses with an identity and
  an ``exp`` output (:func:`skquad.nn.fused.regression_loss`).
"""

from torch.nn import functional

from .fused import regression_loss

__all__ = ["OUTPUT_LOSSES", "per_sample_loss"]


def _binary(scores, y):
    return functional.binary_cross_entropy_with_logits(scores[:, 0], y.to(scores.dtype), reduction="none")


def _softmax(scores, y):
    return functional.cross_entropy(scores, y, reduction="none")


def _sigmoid(scores, y):
    targets = y.to(scores.dtype) if y.dim() == 2 else functional.one_hot(y, scores.shape[1]).to(scores.dtype)
    return functional.binary_cross_entropy_with_logits(scores, targets, reduction="none").sum(1)


def _squared_error(scores, y):
    return regression_loss("squared_error", scores, y)


def _poisson(scores, y):
    return regression_loss("poisson", scores, y)


OUTPUT_LOSSES = {
    "binary": _binary,
    "softmax": _softmax,
    "sigmoid": _sigmoid,
    "squared_error": _squared_error,
    "poisson": _poisson,
}


def per_sample_loss(output):
    """The per-sample loss of an output kind (see the module docstring)."""
    try:
        return OUTPUT_LOSSES[output]
    except KeyError:
        raise ValueError(f"Unknown output kind {output!r}; expected one of {sorted(OUTPUT_LOSSES)}.") from None
