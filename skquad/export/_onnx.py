"""skl2onnx converters and shape calculators for the skquad classifiers and regressors.

Imported only by :func:`skquad.export.register_onnx_converters`: importing
skquad never imports onnx or skl2onnx. Each converter writes the estimator's
scores as ONNX operators (computed in the input's precision, float or
double), then the probabilities with the estimator's link (sigmoid, softmax, or
normalized sigmoids for ``output_activation="sigmoid"``) and the label
(``ArgMax`` into ``classes_``); skl2onnx's classifier parser adds the ZipMap
(option ``zipmap``) as for its own classifiers. The quantized networks' ±1
weights are int8 initializers, cast at run time. The regressors' converter
writes ``predict`` (the scores: a network's, the quantized networks', or the
quadratic forms of QuadraticRegression(CV); ``exp`` for a network's
``loss="poisson"``) as one ``[N, n_outputs_]`` tensor. With ``clip_inputs``
both start with ``Max``/``Min`` nodes that clip each feature to its training
range (ONNX's ``Clip`` takes one scalar bound only), as the estimator does. A
classifier fitted on multilabel ``y`` is refused (skl2onnx's classifier parser
has one label per sample).
The option ``contributions`` (``_onnx_contributions.py``) makes the parsers
declare one more output, the per-sample terms of the score; without it the
parsers are skl2onnx's own and the graph is what it is without the option.
"""

import numpy as np
from onnx import TensorProto, numpy_helper
from skl2onnx import update_registered_converter
from skl2onnx._parse import _apply_zipmap, _parse_sklearn_classifier, _parse_sklearn_simple_model
from skl2onnx.common.data_types import (
    DoubleTensorType,
    FloatTensorType,
    Int64TensorType,
    guess_proto_type,
    guess_tensor_type,
)
from skl2onnx.common.shape_calculator import (
    _infer_linear_classifier_output_types,
    calculate_linear_classifier_output_shapes,
)
from skl2onnx.common.utils import check_input_and_output_numbers

from ..nn.polarization import layer_quadratic_forms
from . import _onnx_contributions as contributions
from ._torch import bilinear_parts

__all__ = ["register"]

_ACTIVATION_OPS = {"relu": "Relu", "sigmoid": "Sigmoid", "logistic": "Sigmoid", "tanh": "Tanh", "identity": None}


class _Graph:
    """Small helper over skl2onnx's scope and container: constants and nodes."""

    def __init__(self, scope, operator, container):
        self.scope, self.operator, self.container = scope, operator, container
        self.proto = guess_proto_type(operator.inputs[0].type)
        if self.proto not in (TensorProto.FLOAT, TensorProto.DOUBLE):
            raise TypeError("skquad's ONNX converters need a float or double input.")
        self.float = np.float32 if self.proto == TensorProto.FLOAT else np.float64

    def const(self, array, dtype=None):
        array = np.asarray(array, dtype=self.float if dtype is None else dtype)
        name = self.scope.get_unique_variable_name("skquad_const")
        if array.dtype == object:  # strings: a value list (string tensors have no raw data)
            values = [str(v).encode() for v in array.ravel()]
            self.container.add_initializer(name, TensorProto.STRING, list(array.shape), values)
        else:
            tensor = numpy_helper.from_array(array, name)
            self.container.add_initializer(name, None, list(array.shape), tensor)
        return name

    def node(self, op_type, *inputs, domain="", **attrs):
        output = self.scope.get_unique_variable_name(f"skquad_{op_type.lower()}")
        self.container.add_node(
            op_type, list(inputs), [output], op_domain=domain,
            name=self.scope.get_unique_operator_name(f"Skquad{op_type}"), **attrs,
        )
        return output

    def matmul(self, x, matrix):
        return self.node("MatMul", x, self.const(matrix))

    def affine(self, x, weight, bias):
        """``x @ weight.T + bias`` for a (n_out, n_in) weight."""
        out = self.matmul(x, np.asarray(weight).T)
        return out if bias is None else self.node("Add", out, self.const(bias))

    def int_weights(self, x, integer_weights):
        """``x @ W.T`` with W stored as int8 and cast at run time."""
        weights = self.const(np.asarray(integer_weights).T, np.int8)
        return self.node("MatMul", x, self.node("Cast", weights, to=self.proto))

    def quadratic_form(self, x, Q, weight, bias):
        """``x^T Q_k x + w_k^T x + b_k`` for every k: (n, K)."""
        Q = np.asarray(Q, dtype=np.float64)
        K, d = Q.shape[0], Q.shape[1]
        stacked = Q.transpose(1, 0, 2).reshape(d, K * d)
        xq = self.node("Reshape", self.matmul(x, stacked), self.const([-1, K, d], np.int64))
        x3 = self.node("Reshape", x, self.const([-1, 1, d], np.int64))
        summed = self.node("MatMul", self.node("Mul", xq, x3), self.const(np.ones((d, 1))))
        quadratic = self.node("Reshape", summed, self.const([-1, K], np.int64))
        return self.node("Add", quadratic, self.affine(x, weight, bias))


def _layer(graph, x, state):
    if state["kind"] == "Linear":
        return graph.affine(x, state["weight"], state["bias"])
    if state["kind"] == "ReducedQuadraticLayer":
        first = graph.affine(x, state["weight"], state["bias"])
        second = graph.affine(x, state["factor_weight"], state["factor_bias"])
        out = graph.node("Mul", first, second)
        if "power_weight" in state:
            power = graph.affine(graph.node("Mul", x, x), state["power_weight"], state["power_bias"])
            out = graph.node("Add", out, power)
        return out
    # full quadratic layers, and any other quadratic layer read off by polarization
    return graph.quadratic_form(x, *layer_quadratic_forms(state))


def _clipped_input(graph, x, estimator):
    """``x`` clipped to ``[data_min_, data_max_]`` per feature when the estimator clips its inputs."""
    if not estimator.clip_inputs:
        return x
    low = graph.node("Max", x, graph.const(estimator.data_min_[None, :]))
    return graph.node("Min", low, graph.const(estimator.data_max_[None, :]))


def _network_scores(graph, x, estimator):
    # the activation the network was trained with (set_params may change `activation`)
    activation = _ACTIVATION_OPS[getattr(estimator, "hidden_activation_", estimator.activation)]
    for index, state in enumerate(estimator.layers_):
        x = _layer(graph, x, state)
        if index < len(estimator.layers_) - 1 and activation is not None:
            x = graph.node(activation, x)
    return x


def _bilinear_scores(graph, x, estimator):
    parts = bilinear_parts(estimator)
    linear = graph.matmul(x, parts["linear"].T)
    if parts["center"] is not None:
        x = graph.node("Div", graph.node("Sub", x, graph.const(parts["center"])), graph.const(parts["scale"]))
    projections = []
    for name in ("U", "V"):
        t = graph.int_weights(x, parts[name])
        if parts[f"{name}_bias"] is not None:
            bias = graph.node("Cast", graph.const(parts[f"{name}_bias"], np.int8), to=graph.proto)
            t = graph.node("Add", t, bias)
        projections.append(t)
    t_u, t_v = projections
    hidden = graph.node("Mul", t_u, t_v)
    if parts["activation"] is not None:
        a, b, c = parts["activation"]
        u0, v0 = parts["U_lift"].astype(np.float64), parts["V_lift"].astype(np.float64)
        mixed = graph.node("Add", graph.node("Mul", t_u, graph.const(0.5 * b * v0)), graph.node("Mul", t_v, graph.const(0.5 * b * u0)))
        hidden = graph.node("Add", graph.node("Mul", hidden, graph.const(a)), mixed)
        hidden = graph.node("Add", hidden, graph.const(c * u0 * v0))
    scores = graph.node("Add", graph.matmul(hidden, parts["alpha"]), graph.const(parts["intercept"]))
    return graph.node("Add", scores, linear)


def _probabilities(graph, scores, estimator, n_scores):
    if n_scores == 1:
        positive = graph.node("Sigmoid", scores)
        negative = graph.node("Sub", graph.const([[1.0]]), positive)
        return graph.node("Concat", negative, positive, axis=1)
    if getattr(estimator, "output_activation", "softmax") == "sigmoid":
        sigmoids = graph.node("Sigmoid", scores)
        total = graph.node("MatMul", sigmoids, graph.const(np.ones((n_scores, 1))))
        return graph.node("Div", sigmoids, total)
    return graph.node("Softmax", scores, axis=1)


def _refuse_multilabel(estimator):
    if getattr(estimator, "_multilabel", False):
        raise NotImplementedError(
            f"ONNX export of a {type(estimator).__name__} fitted on multilabel y (a label "
            "indicator matrix) is not supported: skl2onnx's classifier outputs one label per "
            "sample. Use skquad.export.to_torch (its output is the per-label log-odds)."
        )


def _tensor_type(operator, shape):
    """A float output in the input's precision (float or double)."""
    input_type = operator.inputs[0].type
    tensor_type = input_type.__class__ if isinstance(input_type, (FloatTensorType, DoubleTensorType)) else FloatTensorType
    return tensor_type([operator.inputs[0].get_first_dimension(), *shape])


def _n_scores(estimator):
    """A classifier's decision scores (one for two classes), a regressor's outputs."""
    if hasattr(estimator, "classes_"):
        return 1 if len(estimator.classes_) == 2 else len(estimator.classes_)
    return estimator.n_outputs_


def _contributions_shape(operator):
    """``[N, n_terms]``, or ``[N, n_terms, k]`` for k scores, on the last output."""
    estimator = operator.raw_operator
    n_scores = _n_scores(estimator)
    shape = [contributions.n_terms(estimator.n_features_in_)] + ([n_scores] if n_scores > 1 else [])
    operator.outputs[-1].type = _tensor_type(operator, shape)


def _classifier_output_shapes(operator):
    _refuse_multilabel(operator.raw_operator)
    if len(operator.outputs) == 2:
        calculate_linear_classifier_output_shapes(operator)
        return
    # the label, the probabilities and the contributions
    check_input_and_output_numbers(operator, input_count_range=1, output_count_range=3)
    _infer_linear_classifier_output_types(operator)
    _contributions_shape(operator)


def _regressor_output_shapes(operator):
    """``[N, n_outputs_]`` predictions in the input's precision (float or double), and the contributions."""
    check_input_and_output_numbers(operator, input_count_range=1, output_count_range=[1, 2])
    operator.outputs[0].type = _tensor_type(operator, [operator.raw_operator.n_outputs_])
    if len(operator.outputs) == 2:
        _contributions_shape(operator)


def _alias(cls):
    return f"Skquad{cls.__name__}"


def _wants_contributions(scope, model):
    return bool(scope.get_options(model, {contributions.OPTION: False})[contributions.OPTION])


def _parse_classifier(scope, model, inputs, custom_parsers=None):
    """skl2onnx's classifier parser, or with the contributions option: label, probabilities, contributions.

    The ZipMap (option ``zipmap``) then applies to the label and probabilities only.
    """
    if not _wants_contributions(scope, model):
        return _parse_sklearn_classifier(scope, model, inputs, custom_parsers=custom_parsers)
    contributions.check_supported(model)
    operator = scope.declare_local_operator(_alias(type(model)), model)
    operator.inputs = inputs
    label = scope.declare_local_variable("label", Int64TensorType())
    probabilities = scope.declare_local_variable("probabilities", guess_tensor_type(inputs[0].type))
    operator.outputs.extend([label, probabilities])
    zipmap = scope.get_options(model, {"zipmap": True})["zipmap"]
    outputs = [label, probabilities]
    if zipmap is not False:
        outputs = _apply_zipmap(zipmap, scope, model, inputs[0].type, outputs)
    # declared last, so that the graph lists it after the label and the probabilities
    terms = scope.declare_local_variable(contributions.OPTION, guess_tensor_type(inputs[0].type))
    operator.outputs.append(terms)
    return [*outputs, terms]


def _parse_regressor(scope, model, inputs, custom_parsers=None):
    """skl2onnx's parser of a simple model (one output), or the prediction and the contributions."""
    if not _wants_contributions(scope, model):
        return _parse_sklearn_simple_model(scope, model, inputs, custom_parsers=custom_parsers)
    contributions.check_supported(model)
    operator = scope.declare_local_operator(_alias(type(model)), model)
    operator.inputs = inputs
    for name in ("variable", contributions.OPTION):
        operator.outputs.append(scope.declare_local_variable(name, guess_tensor_type(inputs[0].type)))
    return list(operator.outputs)


def _quadratic_model_scores(graph, x, estimator):
    """A single quadratic neuron per output; Ridge's shapes ((d, d), (d,), a float) for 1-D y."""
    coef = np.atleast_2d(estimator.coef_)
    Q = np.reshape(estimator.Q_, (coef.shape[0], coef.shape[1], coef.shape[1]))
    return graph.quadratic_form(x, Q, coef, np.reshape(estimator.intercept_, -1))


def _scores(graph, x, estimator):
    """The estimator's raw scores of the clipped input ``x``: network, bilinear or quadratic form."""
    if hasattr(estimator, "layers_"):
        return _network_scores(graph, x, estimator)
    if hasattr(estimator, "U_"):
        return _bilinear_scores(graph, x, estimator)
    return _quadratic_model_scores(graph, x, estimator)


def _convert_regressor(scope, operator, container):
    """A regressor's ``predict`` as ``[N, n_outputs_]`` from its scores, then ``exp`` (poisson),
    ``shift + scale * output`` (``scale_target``) and the targets' range (``clip_outputs``)."""
    estimator = operator.raw_operator
    graph = _Graph(scope, operator, container)
    x = _clipped_input(graph, operator.inputs[0].full_name, estimator)
    scores = _scores(graph, x, estimator)
    if getattr(estimator, "out_activation_", None) == "exp":
        scores = graph.node("Exp", scores)
    if hasattr(estimator, "target_scale_"):  # the networks' scale_target: shift + scale * output
        scale = np.reshape(estimator.target_scale_, (1, -1))
        shift = np.reshape(estimator.target_shift_, (1, -1))
        scores = graph.node("Add", graph.node("Mul", scores, graph.const(scale)), graph.const(shift))
    if getattr(estimator, "clip_outputs", False):  # per output, as the estimator's predict
        scores = graph.node("Max", scores, graph.const(estimator.target_min_[None, :]))
        scores = graph.node("Min", scores, graph.const(estimator.target_max_[None, :]))
    container.add_node(
        "Identity", [scores], [operator.outputs[0].full_name],
        name=scope.get_unique_operator_name("SkquadPrediction"),
    )
    if len(operator.outputs) == 2:  # the parser declared the contributions (option)
        contributions.add_contributions(graph, x, estimator, operator.outputs[1].full_name)


def _convert(scope, operator, container):
    estimator = operator.raw_operator
    _refuse_multilabel(estimator)
    graph = _Graph(scope, operator, container)
    x = _clipped_input(graph, operator.inputs[0].full_name, estimator)
    scores = _scores(graph, x, estimator)
    proba = _probabilities(graph, scores, estimator, _n_scores(estimator))
    container.add_node(
        "Identity", [proba], [operator.outputs[1].full_name],
        name=scope.get_unique_operator_name("SkquadProbabilities"),
    )
    classes = estimator.classes_
    if np.issubdtype(classes.dtype, np.integer):
        class_values = graph.const(classes.astype(np.int64), np.int64)
    elif classes.dtype.kind in "OUS":
        class_values = graph.const(np.array([str(c) for c in classes], dtype=object), object)
    else:
        raise TypeError(
            f"ONNX export supports integer or string class labels, but {type(estimator).__name__}"
            f" was fitted on labels of dtype {classes.dtype}: an ONNX classifier's label "
            "output is an int64 or a string tensor (skl2onnx's convention), which cannot "
            "give back float or bool labels as they were. Fit on integer or string labels "
            "(e.g. y.astype(int) for booleans, y.astype(str) for floats), or use the "
            "probability output, whose columns follow classes_."
        )
    index = graph.node("ArgMax", proba, axis=1, keepdims=0)
    picked = graph.node("ArrayFeatureExtractor", class_values, index, domain="ai.onnx.ml")
    container.add_node(
        "Reshape", [picked, graph.const([-1], np.int64)], [operator.outputs[0].full_name],
        name=scope.get_unique_operator_name("SkquadLabel"),
    )
    if len(operator.outputs) == 3:  # the parser declared the contributions (option)
        contributions.add_contributions(graph, x, estimator, operator.outputs[2].full_name)


# The estimators whose converters register() adds, by their name in skquad.
_CLASSIFIERS = ("QuadraticLogisticRegression", "QNNClassifier", "RPQNNClassifier",
                "SDPQuantizedClassifier", "SDPQuantizedClassifierCV", "BackpropQuantizedClassifier")
_REGRESSORS = ("QuadraticRegression", "QuadraticRegressionCV", "QNNRegressor", "RPQNNRegressor",
               "SDPQuantizedRegressor", "SDPQuantizedRegressorCV", "BackpropQuantizedRegressor")


def register():
    """Register the converters (idempotent)."""
    import skquad

    for cls in (getattr(skquad, name) for name in _CLASSIFIERS):
        update_registered_converter(
            cls,
            _alias(cls),
            _classifier_output_shapes,
            _convert,
            parser=_parse_classifier,
            options={"zipmap": [True, False, "columns"], "nocl": [True, False], contributions.OPTION: [False, True]},
        )
    for cls in (getattr(skquad, name) for name in _REGRESSORS):
        update_registered_converter(
            cls, _alias(cls), _regressor_output_shapes, _convert_regressor,
            parser=_parse_regressor, options={contributions.OPTION: [False, True]},
        )
