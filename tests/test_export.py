"""skquad.export: to_torch and ONNX round trips for the five estimators, in a Pipeline."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
    SDPQuantizedClassifierCV,
)
from skquad.export import to_torch

ESTIMATORS = {
    "qlr": lambda: QuadraticLogisticRegression(C=10.0),
    "qlr-rank": lambda: QuadraticLogisticRegression(rank=2, Q_init="random", random_state=0),
    "qnn": lambda: QNNClassifier((4,), quadratic_layers="all", solver="lbfgs", max_iter=300, random_state=0),
    "rpqnn": lambda: RPQNNClassifier(
        (4,), activation="tanh", quadratic_layers="all", power_term=True, output_activation="sigmoid",
        relinear=False, solver="lbfgs", max_iter=300, random_state=0,
    ),
    "sdp": lambda: SDPQuantizedClassifier(n_neurons=40, random_state=0),
    "sdp-poly": lambda: SDPQuantizedClassifier(
        n_neurons=40, weight_levels=2, activation=(1.0, 0.5, 0.25), random_state=0
    ),
    "backprop": lambda: BackpropQuantizedClassifier(n_neurons=40, max_iter=20, random_state=0),
    "sdp-cv": lambda: SDPQuantizedClassifierCV(n_neurons=30, betas=[1e-1, 1e-2], cv=2, random_state=0),
}


def _data(problem):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((150, 4)) * [1.0, 10.0, 0.1, 3.0] + [0.0, 50.0, 1.0, -2.0]
    Z = (X - X.mean(0)) / X.std(0)
    if problem == "binary":
        y = np.where(Z[:, 0] * Z[:, 1] + 0.3 * Z[:, 2] > 0, "yes", "no")  # string labels
    else:
        y = np.digitize(Z[:, 0] * Z[:, 1] + Z[:, 3], [-0.5, 0.5])  # 0, 1, 2
    return X, y


@pytest.fixture(scope="module", params=[(name, problem) for name in ESTIMATORS for problem in ("binary", "multiclass")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def fitted(request):
    name, problem = request.param
    X, y = _data(problem)
    model = make_pipeline(StandardScaler(), ESTIMATORS[name]()).fit(X, y)
    return name, model, X


def test_to_torch_equals_decision_function(fitted):
    _, model, X = fitted
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


def test_to_torch_module_trains(fitted):
    _, model, X = fitted
    module = to_torch(model, dtype=torch.float64).train()
    scores = module(torch.as_tensor(X))
    scores.pow(2).mean().backward()
    trainable = [p for p in module.parameters() if p.requires_grad]
    assert trainable and all(p.grad is not None and torch.isfinite(p.grad).all() for p in trainable)


def test_onnx_reproduces_predict_proba(fitted):
    pytest.importorskip("onnxruntime")
    skl2onnx = pytest.importorskip("skl2onnx")
    import onnxruntime

    from skquad.export import register_onnx_converters

    name, model, X = fitted
    register_onnx_converters()
    for dtype in (np.float32, np.float64):
        onx = skl2onnx.to_onnx(model, X[:1].astype(dtype), options={"zipmap": False})
        session = onnxruntime.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
        labels, proba = session.run(None, {session.get_inputs()[0].name: X.astype(dtype)})
        np.testing.assert_allclose(proba, model.predict_proba(X), atol=1e-5)
        confident = np.abs(proba.max(axis=1) - np.sort(proba, axis=1)[:, -2]) > 1e-4
        np.testing.assert_array_equal(labels[confident], model.predict(X)[confident])
        if name.startswith(("sdp", "backprop")):
            int8 = [t for t in onx.graph.initializer if t.data_type == 3]  # TensorProto.INT8
            values = np.concatenate([np.frombuffer(t.raw_data, dtype=np.int8) for t in int8])
            assert len(int8) >= 2 and set(np.unique(values)) <= {-2, -1, 0, 1, 2}
            if name != "sdp-poly":
                weights = [np.frombuffer(t.raw_data, dtype=np.int8) for t in int8 if len(t.dims) == 2]
                assert weights and all(set(np.unique(w)) <= {-1, 1} for w in weights)


def test_importing_skquad_does_not_import_onnx():
    code = (
        "import sys, skquad, skquad.export, skquad.inspection; "
        "assert not {'onnx', 'skl2onnx', 'onnxruntime', 'matplotlib'} & set(sys.modules), sys.modules.keys()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


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
    output = to_torch(model)(torch.as_tensor(X)).detach().numpy()
    # The same float64 operations in torch and numpy: rounding-level agreement.
    np.testing.assert_allclose(output.reshape(y.shape), model.predict(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("labels", ["float", "bool"])
def test_onnx_refuses_float_and_bool_labels_and_says_why(labels):
    # Issue 19: the refusal named the dtype only.
    skl2onnx = pytest.importorskip("skl2onnx")
    from skquad import QuadraticLogisticRegression
    from skquad.export import register_onnx_converters

    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    y = X[:, 0] > 0
    y = y.astype(float) if labels == "float" else y  # 0.0 and 1.0: classes to sklearn
    model = QuadraticLogisticRegression().fit(X, y)
    register_onnx_converters()
    with pytest.raises(TypeError, match=r"int64 or a string tensor.*y\.astype\(int\)"):
        skl2onnx.to_onnx(model, X[:1], options={"zipmap": False})


_NON_NETWORK_REGRESSORS = {
    "QuadraticRegression": lambda: __import__("skquad").QuadraticRegression(),
    "QuadraticRegressionCV": lambda: __import__("skquad").QuadraticRegressionCV(),
    "SDPQuantizedRegressor": lambda: __import__("skquad").SDPQuantizedRegressor(n_neurons=30, random_state=0),
    "SDPQuantizedRegressorCV": lambda: __import__("skquad").SDPQuantizedRegressorCV(
        n_neurons=20, betas=[1e-1, 1e-2], cv=2, random_state=0
    ),
    "BackpropQuantizedRegressor": lambda: __import__("skquad").BackpropQuantizedRegressor(
        n_neurons=20, max_iter=5, random_state=0
    ),
}


@pytest.mark.parametrize("two_outputs", [False, True])
@pytest.mark.parametrize("name", list(_NON_NETWORK_REGRESSORS))
def test_onnx_regressor_in_a_column_transformer_pipeline(name, two_outputs):
    """Issue 23: the non-network regressors convert inside a Pipeline with a ColumnTransformer."""
    import warnings

    import onnxruntime
    import pandas as pd
    import skl2onnx
    from sklearn.compose import ColumnTransformer
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from skquad.export import register_onnx_converters

    register_onnx_converters()
    rng = np.random.RandomState(0)
    n = 80
    frame = pd.DataFrame(
        {"a": rng.randn(n), "b": rng.randn(n), "c": rng.randn(n), "kind": rng.choice(["x", "y", "z"], n)}
    )
    y = frame.a * frame.b + (frame.kind == "x") + 0.1 * rng.randn(n)
    y = np.column_stack([y, frame.a**2]) if two_outputs else y.to_numpy()
    columns = ColumnTransformer(
        [("scale", StandardScaler(), ["a", "b", "c"]), ("onehot", OneHotEncoder(sparse_output=False), ["kind"])]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a few epochs suffice to export
        pipeline = make_pipeline(columns, _NON_NETWORK_REGRESSORS[name]()).fit(frame, y)
    onx = skl2onnx.to_onnx(pipeline, frame[:1])
    session = onnxruntime.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {column: frame[[column]].to_numpy() for column in frame.columns})
    expected = pipeline.predict(frame)
    assert out.shape == (n, 2 if two_outputs else 1)
    # The same float64 products in another order: rounding-level agreement.
    np.testing.assert_allclose(out.reshape(expected.shape), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["QuadraticRegression", "SDPQuantizedRegressor", "BackpropQuantizedRegressor"])
def test_onnx_regressor_float32_input(name):
    import warnings

    import onnxruntime
    import skl2onnx
    from sklearn.exceptions import ConvergenceWarning

    from skquad.export import register_onnx_converters

    register_onnx_converters()
    rng = np.random.RandomState(1)
    X = rng.randn(60, 4)
    y = X[:, 0] * X[:, 1] + X[:, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = _NON_NETWORK_REGRESSORS[name]().fit(X, y)
    onx = skl2onnx.to_onnx(model, X[:1].astype(np.float32))
    session = onnxruntime.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {session.get_inputs()[0].name: X.astype(np.float32)})
    assert out.dtype == np.float32
    # float32 rounding (eps 1.2e-7) of the input and of sums of a few dozen
    # terms, relative to the predictions' scale: 1e-4 leaves a wide margin.
    expected = model.predict(X)
    np.testing.assert_allclose(out[:, 0], expected, rtol=0, atol=1e-4 * np.abs(expected).max())
