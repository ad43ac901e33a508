"""skquad/export/_onnx.py: ONNX round trips of every estimator, in a Pipeline."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression
from _export_cases import with_rows_outside


def test_onnx_reproduces_predict_proba(exported_pipeline):
    pytest.importorskip("onnxruntime")
    skl2onnx = pytest.importorskip("skl2onnx")
    import onnxruntime

    from skquad.export import register_onnx_converters

    name, model, X = exported_pipeline
    X = with_rows_outside(X)  # clip_inputs clips these: the graph must clip them alike
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
    # rows outside the training range, which clip_inputs clips
    frame = pd.concat([frame, frame[:10].assign(a=4 * frame.a[:10], b=-4 * frame.b[:10])], ignore_index=True)
    n = len(frame)
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
    X = with_rows_outside(X)
    onx = skl2onnx.to_onnx(model, X[:1].astype(np.float32))
    session = onnxruntime.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {session.get_inputs()[0].name: X.astype(np.float32)})
    assert out.dtype == np.float32
    # float32 rounding (eps 1.2e-7) of the input and of sums of a few dozen
    # terms, relative to the predictions' scale: 1e-4 leaves a wide margin.
    expected = model.predict(X)
    np.testing.assert_allclose(out[:, 0], expected, rtol=0, atol=1e-4 * np.abs(expected).max())
