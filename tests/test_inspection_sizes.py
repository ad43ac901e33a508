"""skquad.inspection.model_size: parameter counts from the arrays, FLOPs by hand."""

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.svm import SVC

from skquad import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
)
from skquad.inspection import ModelSize, model_size


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))
    y_binary = (X[:, 0] * X[:, 1] > 0).astype(int)
    y_multi = np.digitize(X[:, 2], [-0.5, 0.5])
    return X, y_binary, y_multi


def _free_entries(state):
    """Free entries of one network layer's arrays (a symmetric Q: its triangle)."""
    total = 0
    for key, value in state.items():
        if key in ("kind", "options"):
            continue
        if key == "quadratic":
            n_out, d, _ = value.shape
            total += n_out * d * (d + 1) // 2
        else:
            total += np.size(value)
    return total


def test_qlr_counts(data):
    X, y, y_multi = data
    binary = QuadraticLogisticRegression().fit(X, y)
    multi = QuadraticLogisticRegression().fit(X, y_multi)
    for model in (binary, multi):
        K, d = model.coef_.shape
        expected = K * d * (d + 1) // 2 + model.coef_.size + model.intercept_.size
        assert model_size(model).n_parameters == expected
    # by hand, d = 3: 6 pair products; per score 2 * (6 + 3) + 1 = 19
    assert model_size(binary).n_flops == 6 + 19
    assert model_size(multi).n_flops == 6 + 3 * 19
    low_rank = QuadraticLogisticRegression(rank=2, Q_init="random", random_state=0).fit(X, y)
    size = model_size(low_rank)
    assert size.n_parameters == low_rank.Q_vectors_.size + low_rank.Q_scales_.size + 3 + 1
    # V^T x: 12, squares 2, scaled sum 4, w^T x 6, bias 1
    assert size.n_flops == 12 + 2 + 4 + 6 + 1


def test_qlr_is_the_size_of_polynomial_features_and_logistic_regression(data):
    X, y, y_multi = data
    for target in (y, y_multi):
        qlr = model_size(QuadraticLogisticRegression().fit(X, target))
        poly = make_pipeline(PolynomialFeatures(2, include_bias=False), LogisticRegression()).fit(X, target)
        assert model_size(poly) == qlr


def test_network_counts(data):
    X, y, _ = data
    qnn = QNNClassifier((2,), quadratic_layers="all", solver="lbfgs", max_iter=300, random_state=0).fit(X, y)
    rpqnn = RPQNNClassifier((2,), quadratic_layers="all", solver="lbfgs", max_iter=300, random_state=0).fit(X, y)
    power = RPQNNClassifier((2,), quadratic_layers="all", power_term=True, solver="lbfgs", max_iter=300, random_state=0).fit(X, y)
    for model in (qnn, rpqnn, power):
        assert model_size(model).n_parameters == sum(_free_entries(s) for s in model.layers_)
    # 3 -> 2 (quadratic) -> relu -> 1 (quadratic), by hand:
    # layer 0: 6 products + 2 * (2 * (6 + 3) + 1) = 44; relu 2; layer 1: 3 + 2 * (3 + 2) + 1 = 14
    assert model_size(qnn).n_flops == 44 + 2 + 14
    assert model_size(qnn).n_parameters == 2 * (6 + 3 + 1) + (3 + 2 + 1)
    # reduced: two affine maps and a product: 2 * (2*3*2 + 2) + 2 = 30; relu 2; 2 * (2*2 + 1) + 1 = 11
    assert model_size(rpqnn).n_flops == 30 + 2 + 11
    assert model_size(rpqnn).n_parameters == 2 * (6 + 2) + 2 * (2 + 1)
    # power term: squares (n_in), one more affine map, one more add
    assert model_size(power).n_flops == 30 + (3 + 14 + 2) + 2 + 11 + (2 + 5 + 1)


def test_quantized_counts(data):
    X, y, y_multi = data
    # Algorithm 1's network: one shared output scale
    sdp = SDPQuantizedClassifier(n_neurons=10, refit_output_layer=False, random_state=0).fit(X, y)
    size = model_size(sdp)
    assert size.n_binary_parameters == sdp.U_.size + sdp.V_.size == 2 * 10 * 4
    assert size.n_parameters == 80 + 1  # one scale
    # the refitted output layer (the default) has one weight per neuron
    refit = SDPQuantizedClassifier(n_neurons=10, random_state=0).fit(X, y)
    assert model_size(refit).n_parameters == 80 + np.unique(refit.alpha_[refit.alpha_ != 0]).size
    # standardize 2*3; per neuron two ±1 sums over p = 4 and a product; output 10 MACs
    assert size.n_flops == 6 + 10 * (2 * 4 + 1) + 2 * 10
    multi = model_size(
        SDPQuantizedClassifier(n_neurons=9, refit_output_layer=False, random_state=0).fit(X, y_multi)
    )
    assert multi.n_real_parameters == 3
    # the paper's baseline: one scale; the refitted output layer (the default): a weight per neuron
    paper = BackpropQuantizedClassifier(
        n_neurons=10, max_iter=3, random_state=0, refit_output_layer=False).fit(X, y)
    assert model_size(paper).n_parameters == paper.U_.size + paper.V_.size + paper.scale_.size
    backprop = BackpropQuantizedClassifier(n_neurons=10, max_iter=3, random_state=0).fit(X, y)
    assert model_size(backprop).n_parameters == 80 + np.unique(backprop.alpha_[backprop.alpha_ != 0]).size


def test_sklearn_models_and_pipelines(data):
    X, y, _ = data
    mlp = MLPClassifier((4,), solver="lbfgs", max_iter=2000, random_state=0).fit(X, y)
    # 3 -> 4 -> relu -> 1: 2*12 + 4 + 4 + 2*4 + 1
    assert model_size(mlp) == ModelSize(n_parameters=12 + 4 + 4 + 1, n_flops=24 + 4 + 4 + 9)
    assert model_size(LogisticRegression().fit(X, y)) == ModelSize(4, 7)
    pipeline = make_pipeline(StandardScaler(), PolynomialFeatures(2), LogisticRegression()).fit(X, y)
    # scaler 6; 6 degree-2 products; logistic regression on 10 features (bias column included)
    assert model_size(pipeline) == ModelSize(11, 6 + 6 + 21)
    columns = ColumnTransformer([("scale", StandardScaler(), [0, 1]), ("keep", "passthrough", [2])]).fit(X)
    assert model_size(columns).n_flops == 4


def test_unknown_steps(data):
    X, y, _ = data
    svc = SVC().fit(X, y)
    with pytest.raises(TypeError, match="cannot count a SVC"):
        model_size(svc)
    size = model_size(make_pipeline(StandardScaler(), SVC()).fit(X, y), unknown="ignore")
    assert size.uncounted == ("SVC",) and size.n_flops == 6


def test_regressors_are_counted_as_their_scikit_learn_equivalents(data):
    from sklearn.linear_model import Ridge
    from sklearn.neural_network import MLPRegressor

    from skquad import QuadraticRegression

    X, _, _ = data
    y = X[:, 0] * X[:, 1] + X[:, 2]
    for target in (y, np.column_stack([y, -y])):  # 1-D coef_ and (k, d) coef_
        ours = model_size(QuadraticRegression().fit(X, target))
        poly = make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge()).fit(X, target)
        assert ours == model_size(poly)
    mlp = MLPRegressor(hidden_layer_sizes=(4,), max_iter=5).fit(X, y)
    assert model_size(mlp).n_parameters == 3 * 4 + 4 + 4 + 1 and not model_size(mlp).uncounted
