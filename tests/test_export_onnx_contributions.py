"""skquad/export/_onnx_contributions.py: the ``contributions`` option of the ONNX converters."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")

from _export_cases import with_rows_outside  # noqa: E402
from _local_explanation_cases import QUADRATIC_MODELS, fit_quadratic_model, quadratic_data  # noqa: E402

from skquad.inspection import local_contributions  # noqa: E402

# A float32 or float64 graph rounds each term to a few units of its dtype's eps
# relative to the terms' scale (the input's rounding, a product or two; the
# quantized networks' form read by polarization on one side, expanded on the
# other). 64 eps leaves a margin of ten and still fails on a wrong term.
_EPS_FACTOR = 64


@pytest.fixture(scope="module")
def register():
    from skquad.export import register_onnx_converters

    register_onnx_converters()


@pytest.fixture(scope="module")
def fitted():
    """Each model of QUADRATIC_MODELS fitted once, and the rows to explain (some outside the
    training range, which ``clip_inputs`` clips)."""
    X, target = quadratic_data()
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = fit_quadratic_model(name, X, target)
        return cache[name], X, with_rows_outside(X)

    return get


def _run(onx, X):
    import onnxruntime

    session = onnxruntime.InferenceSession(onx.SerializeToString(), providers=["CPUExecutionProvider"])
    values = session.run(None, {session.get_inputs()[0].name: X})
    return {output.name: value for output, value in zip(session.get_outputs(), values)}


def _options(model, **extra):
    return {id(model): {"contributions": True, **({"zipmap": False} if hasattr(model, "classes_") else {}), **extra}}


def _all_terms(terms):
    """local_contributions' terms in the output's order: main effects, then the pairs."""
    return np.concatenate([terms.main_effects, terms.pair_effects], axis=1)


def _through_the_link(model, scores):
    """What the graph outputs from the scores: a classifier's probabilities, a regressor's prediction."""
    if hasattr(model, "classes_"):
        if scores.ndim == 1:
            positive = 1.0 / (1.0 + np.exp(-scores))
            return np.column_stack([1.0 - positive, positive])
        if getattr(model, "output_activation", "softmax") == "sigmoid":
            sigmoids = 1.0 / (1.0 + np.exp(-scores))
            return sigmoids / sigmoids.sum(axis=1, keepdims=True)
        exponentials = np.exp(scores - scores.max(axis=1, keepdims=True))
        return exponentials / exponentials.sum(axis=1, keepdims=True)
    prediction = np.exp(scores) if getattr(model, "out_activation_", None) == "exp" else scores
    if getattr(model, "clip_outputs", False):
        prediction = np.clip(prediction, model.target_min_, model.target_max_)
    return prediction.reshape(len(scores), -1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(QUADRATIC_MODELS))
def test_contributions_are_local_contributions_and_add_up_to_the_output(register, fitted, name, dtype):
    model, X_train, X = fitted(name)
    onx = skl2onnx.to_onnx(model, X_train[:1].astype(dtype), options=_options(model))
    outputs = _run(onx, X.astype(dtype))
    terms = local_contributions(model, X)
    expected = _all_terms(terms)
    got = outputs["contributions"]
    assert got.dtype == dtype and got.shape == expected.shape
    tolerance = _EPS_FACTOR * np.finfo(dtype).eps * np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=tolerance)
    # the intercept plus the terms is the score behind the graph's own output
    score = terms.intercept + got.astype(np.float64).sum(axis=1)
    output = outputs["probabilities" if hasattr(model, "classes_") else "variable"]
    scale = (np.abs(terms.intercept) + np.abs(expected).sum(axis=1)).max()
    tolerance = _EPS_FACTOR * np.finfo(dtype).eps * scale
    np.testing.assert_allclose(output, _through_the_link(model, score), rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    "options",
    [
        lambda pipeline: {id(pipeline[-1]): {"contributions": True}},
        lambda pipeline: {type(pipeline[-1]): {"contributions": True}},
        lambda pipeline: {"quadraticlogisticregression__contributions": True},
    ],
    ids=["id", "type", "step name"],
)
def test_contributions_in_a_pipeline_with_the_zipmap(register, planted_pipeline, options):
    pipeline, frame = planted_pipeline
    X = frame.to_numpy().astype(np.float32)  # ONNX's ZipMap takes float probabilities only
    onx = skl2onnx.to_onnx(pipeline, X[:1], options=options(pipeline))
    outputs = _run(onx, X)
    assert list(outputs) == ["output_label", "output_probability", "contributions"]
    # the terms of the scaled features, which the estimator sees
    expected = _all_terms(local_contributions(pipeline, frame))
    np.testing.assert_allclose(outputs["contributions"], expected, rtol=0,
                               atol=_EPS_FACTOR * np.finfo(np.float32).eps * np.abs(expected).max())


def test_one_feature_has_no_pairs(register):
    from skquad import QuadraticRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 1))
    model = QuadraticRegression().fit(X, X[:, 0] ** 2 - X[:, 0])
    outputs = _run(skl2onnx.to_onnx(model, X[:1], options=_options(model)), X)
    np.testing.assert_allclose(outputs["contributions"], local_contributions(model, X).main_effects,
                               rtol=0, atol=_EPS_FACTOR * np.finfo(np.float64).eps)


@pytest.mark.parametrize("name", ["QLR 3 classes", "QR 2 outputs", "SDP classifier"])
def test_the_option_off_leaves_the_graph_as_it_is(register, fitted, name):
    model, X_train, _ = fitted(name)
    plain = {id(model): {"zipmap": False}} if hasattr(model, "classes_") else None
    off = _options(model, contributions=False)
    onx = skl2onnx.to_onnx(model, X_train[:1], options=plain)
    assert skl2onnx.to_onnx(model, X_train[:1], options=off).SerializeToString() == onx.SerializeToString()
    assert "contributions" not in [o.name for o in onx.graph.output]
    on = skl2onnx.to_onnx(model, X_train[:1], options=_options(model))
    # the option only adds nodes: every node of the plain graph is in it, unchanged
    with_option = {n.SerializeToString() for n in on.graph.node}
    assert {n.SerializeToString() for n in onx.graph.node} <= with_option
    assert len(on.graph.node) > len(onx.graph.node)


@pytest.mark.parametrize("kind", ["QNNClassifier", "QNNRegressor"])
def test_networks_with_hidden_layers_refuse_the_option(register, kind):
    import skquad

    X, target = quadratic_data(n=60)
    y = (target > 0).astype(int) if kind == "QNNClassifier" else target
    model = getattr(skquad, kind)(hidden_layer_sizes=(3,), max_iter=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # five epochs: a network to export, not to use
        model.fit(X, y)
    with pytest.raises(ValueError, match=r"option contributions=True.*hidden_layer_sizes=\(3,\).*"
                                         r"hidden_layer_sizes=\(\) or export it without"):
        skl2onnx.to_onnx(model, X[:1], options=_options(model))
    skl2onnx.to_onnx(model, X[:1], options=_options(model, contributions=False))  # off: converts as before
