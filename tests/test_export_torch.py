"""skquad/export/_torch.py: to_torch for every estimator, in a Pipeline."""

import numpy as np
import pytest
import torch
from sklearn.pipeline import make_pipeline

from skquad import QuadraticLogisticRegression
from skquad.export import to_torch
from _export_cases import _data, with_rows_outside


def test_to_torch_equals_decision_function(exported_pipeline):
    _, model, X = exported_pipeline
    X = with_rows_outside(X)  # clip_inputs clips these: the module must clip them alike
    module = to_torch(model)
    # float64 in, as scikit-learn standardizes; the module casts to its own precision
    scores = module(torch.as_tensor(X)).detach().numpy()
    expected = model.decision_function(X)
    assert scores.shape == expected.shape
    np.testing.assert_allclose(scores, expected, rtol=1e-6, atol=1e-6)
    # the estimator's own method exports it without the scaler
    inner = model[-1].to_torch()
    Z = model[0].transform(X)
    np.testing.assert_allclose(inner(torch.as_tensor(Z)).detach().numpy(), model[-1].decision_function(Z), rtol=1e-6, atol=1e-6)


def test_to_torch_module_trains(exported_pipeline):
    _, model, X = exported_pipeline
    module = to_torch(model, dtype=torch.float64).train()
    scores = module(torch.as_tensor(X))
    scores.pow(2).mean().backward()
    trainable = [p for p in module.parameters() if p.requires_grad]
    assert trainable and all(p.grad is not None and torch.isfinite(p.grad).all() for p in trainable)


def test_to_torch_rejects_what_it_cannot_export():
    from sklearn.preprocessing import PolynomialFeatures

    X, y = _data("binary")
    X = (X - X.mean(0)) / X.std(0)
    model = make_pipeline(PolynomialFeatures(1), QuadraticLogisticRegression()).fit(X, y)
    with pytest.raises(TypeError, match="StandardScaler steps followed by a skquad estimator"):
        to_torch(model)


# ---------------------------------------------------------------- regressors
@pytest.mark.parametrize("n_outputs", [None, 2])
@pytest.mark.parametrize(
    "make",
    [
        lambda: __import__("skquad").QuadraticRegression(),
        lambda: __import__("skquad").QNNRegressor(hidden_layer_sizes=(4,), max_iter=5),
        lambda: __import__("skquad").RPQNNRegressor(hidden_layer_sizes=(4,), max_iter=5),
        lambda: __import__("skquad").SDPQuantizedRegressor(n_neurons=20),
        lambda: __import__("skquad").BackpropQuantizedRegressor(n_neurons=20, max_iter=5),
    ],
    ids=["QuadraticRegression", "QNNRegressor", "RPQNNRegressor", "SDPQuantizedRegressor", "BackpropQuantizedRegressor"],
)
def test_regressors_export_to_torch_as_their_predict(make, n_outputs):
    import warnings

    import torch
    from sklearn.exceptions import ConvergenceWarning

    from skquad.export import to_torch

    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = X[:, 0] * X[:, 1] if n_outputs is None else np.column_stack([X[:, 0] * X[:, 1], X[:, 2]])
    with warnings.catch_warnings():
        # A few epochs are enough to export; convergence is not the subject.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = make().fit(X, y)
    X = with_rows_outside(X)  # clipped by clip_inputs (the default): so by the module too
    output = to_torch(model)(torch.as_tensor(X)).detach().numpy()
    # The same float64 operations in torch and numpy: rounding-level agreement.
    np.testing.assert_allclose(output.reshape(-1, *y.shape[1:]), model.predict(X), rtol=1e-9, atol=1e-9)
