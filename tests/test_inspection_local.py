"""skquad/inspection/_contributions.py, _shap.py, _local_display.py: exact local explanations."""

import itertools
import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from skquad import (
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    QNNClassifier,
    QNNRegressor,
    QuadraticLogisticRegression,
    QuadraticRegression,
    QuadraticRegressionCV,
    RPQNNClassifier,
    RPQNNRegressor,
    SDPQuantizedClassifier,
    SDPQuantizedClassifierCV,
    SDPQuantizedRegressor,
    SDPQuantizedRegressorCV,
)
from skquad.inspection import LocalExplanationDisplay, local_contributions, shap_values

# Agreement of the explanations with the estimator's own score (float64).
EXACT = 1e-10


def _data(n=120, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    target = X[:, 0] * X[:, 1] - 0.5 * X[:, 2] ** 2 + X[:, -1]
    return X, target


def _binary(target):
    return (target > np.median(target)).astype(int)


def _three_classes(target):
    return np.digitize(target, np.quantile(target, [1 / 3, 2 / 3]))


def _poisson(target):
    return np.exp(0.3 * target)


# (estimator, target) for every model whose score is a quadratic form of its input
QUADRATIC_MODELS = {
    "QLR binary": (lambda: QuadraticLogisticRegression(), _binary),
    "QLR 3 classes": (lambda: QuadraticLogisticRegression(), _three_classes),
    "QR": (lambda: QuadraticRegression(), lambda t: t),
    "QR 2 outputs": (lambda: QuadraticRegression(), lambda t: np.column_stack([t, -2 * t + 1])),
    "QRCV": (lambda: QuadraticRegressionCV(), lambda t: t),
    "QNN classifier": (lambda: QNNClassifier(hidden_layer_sizes=(), max_iter=20, random_state=0), _three_classes),
    "QNN regressor": (lambda: QNNRegressor(hidden_layer_sizes=(), max_iter=20, random_state=0), lambda t: t),
    "QNN Poisson": (
        lambda: QNNRegressor(hidden_layer_sizes=(), loss="poisson", max_iter=20, random_state=0), _poisson
    ),
    "QNN linear layer": (
        lambda: QNNRegressor(hidden_layer_sizes=(), quadratic_layers=[False], max_iter=20, random_state=0),
        lambda t: t,
    ),
    "RPQNN classifier": (lambda: RPQNNClassifier(hidden_layer_sizes=(), max_iter=20, random_state=0), _binary),
    "RPQNN regressor power": (
        lambda: RPQNNRegressor(hidden_layer_sizes=(), power_term=True, max_iter=20, random_state=0),
        lambda t: t,
    ),
    "SDP classifier": (lambda: SDPQuantizedClassifier(n_neurons=8, random_state=0), _binary),
    "SDP polynomial 3 classes": (
        lambda: SDPQuantizedClassifier(n_neurons=9, activation=(1.0, 0.5, 0.2), random_state=0),
        _three_classes,
    ),
    "SDP regressor": (lambda: SDPQuantizedRegressor(n_neurons=8, random_state=0), lambda t: t),
    "SDP classifier CV": (lambda: SDPQuantizedClassifierCV(n_neurons=8, cv=2, random_state=0), _binary),
    "SDP regressor CV": (lambda: SDPQuantizedRegressorCV(n_neurons=8, cv=2, random_state=0), lambda t: t),
    "Backprop classifier": (lambda: BackpropQuantizedClassifier(n_neurons=8, max_iter=5, random_state=0), _binary),
    "Backprop regressor": (lambda: BackpropQuantizedRegressor(n_neurons=8, max_iter=5, random_state=0), lambda t: t),
}


def _fit(name, X, target):
    make, to_target = QUADRATIC_MODELS[name]
    with warnings.catch_warnings():
        # small, unconverged fits are enough: the explanations are of the fitted form
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        return make().fit(X, to_target(target))


def _score(model, X):
    """The score the explanations add up to: decision function, prediction, or its log (Poisson)."""
    if hasattr(model, "classes_"):
        return model.decision_function(X)
    prediction = model.predict(X)
    return np.log(prediction) if getattr(model, "out_activation_", None) == "exp" else prediction


@pytest.fixture(scope="module", params=sorted(QUADRATIC_MODELS))
def fitted(request):
    X, target = _data()
    return request.param, _fit(request.param, X, target), X


def test_contributions_add_up_to_the_score(fitted):
    name, model, X = fitted
    score = _score(model, X)
    terms = local_contributions(model, X)
    total = terms.main_effects.sum(axis=1) + terms.pair_effects.sum(axis=1) + terms.other_pairs
    np.testing.assert_allclose(total, score - terms.intercept, rtol=0, atol=EXACT)
    assert terms.pairs.shape == (6, 2) and not np.any(terms.other_pairs)
    few = local_contributions(model, X, max_pairs=2)
    np.testing.assert_allclose(few.score, score, rtol=0, atol=EXACT)
    assert few.pair_effects.shape[:2] == (X.shape[0], 2)


def test_shap_values_add_up_to_the_score_minus_the_background_mean(fitted):
    name, model, X = fitted
    background = X[:40] * 1.5 + 0.3
    explanation = shap_values(model, X, background)
    np.testing.assert_allclose(explanation.score, _score(model, X), rtol=0, atol=EXACT)
    np.testing.assert_allclose(explanation.base_values, _score(model, background).mean(axis=0), rtol=0, atol=EXACT)


def _zeroed(X, features):
    Z = X.copy()
    Z[:, list(features)] = 0.0
    return Z


def test_terms_are_what_the_model_does_when_features_are_switched_off():
    # Read through the estimator's predict, not its coefficients: a pair's
    # contribution is the mixed difference f(x) - f(x, a=0) - f(x, c=0) + f(x, a=c=0)
    # and a main effect is f(x_a e_a) - f(0).
    X, target = _data(d=5)
    model = QuadraticRegression(alpha=0.1).fit(X, target)
    terms = local_contributions(model, X[:10])
    f = model.predict
    for p, (a, c) in enumerate(terms.pairs):
        mixed = f(X[:10]) - f(_zeroed(X[:10], [a])) - f(_zeroed(X[:10], [c])) + f(_zeroed(X[:10], [a, c]))
        np.testing.assert_allclose(terms.pair_effects[:, p], mixed, rtol=0, atol=EXACT)
    for a in range(5):
        alone = _zeroed(X[:10], [b for b in range(5) if b != a])
        np.testing.assert_allclose(terms.main_effects[:, a], f(alone) - f(np.zeros_like(alone)), rtol=0, atol=EXACT)
    np.testing.assert_allclose(terms.intercept, f(np.zeros((1, 5)))[0], rtol=0, atol=EXACT)


def test_max_pairs_lists_the_strongest_pairs_and_adds_up_the_rest(planted_pipeline):
    model, frame = planted_pipeline
    everything = local_contributions(model, frame.iloc[:200])
    top = local_contributions(model, frame.iloc[:200], max_pairs=3)
    assert top.pair_names[0] == "f3 × f7"  # the planted pair, by its name in the frame
    strength = np.abs(everything.pair_effects).mean(axis=0)
    listed = [np.flatnonzero((everything.pairs == pair).all(axis=1))[0] for pair in top.pairs]
    np.testing.assert_array_equal(np.sort(strength)[::-1][:3], strength[listed])
    rest = np.delete(everything.pair_effects, listed, axis=1).sum(axis=1)
    np.testing.assert_allclose(top.other_pairs, rest, rtol=0, atol=EXACT)
    none = local_contributions(model, frame.iloc[:200], max_pairs=0)
    np.testing.assert_allclose(none.other_pairs, everything.pair_effects.sum(axis=1), rtol=0, atol=EXACT)
    assert list(top.feature_names) == list(frame.columns)
    # the data are the pipeline's output, the standardized features
    np.testing.assert_allclose(top.data, model[:-1].transform(frame.iloc[:200]))


def test_a_clipping_estimator_is_explained_at_its_clipped_input():
    X, target = _data()
    model = QuadraticRegression().fit(X, target)
    model.clip_inputs = True
    model.data_min_, model.data_max_ = X.min(axis=0), X.max(axis=0)
    outside = 3.0 * X[:20]
    clipped = np.clip(outside, model.data_min_, model.data_max_)
    assert not np.allclose(model.predict(outside), model.predict(clipped))
    terms = local_contributions(model, outside)
    np.testing.assert_allclose(terms.score, model.predict(clipped), rtol=0, atol=EXACT)
    np.testing.assert_array_equal(terms.data, clipped)
    explanation = shap_values(model, outside, background=outside)
    np.testing.assert_allclose(explanation.score, model.predict(clipped), rtol=0, atol=EXACT)
    np.testing.assert_allclose(explanation.base_values, model.predict(clipped).mean(), rtol=0, atol=EXACT)


def _brute_force_shapley(score, x, background, weight):
    """Interventional Shapley values by enumerating the 2^d coalitions, through ``score``."""
    d = x.shape[0]
    weight = weight / weight.sum()

    coalitions = [S for r in range(d + 1) for S in itertools.combinations(range(d), r)]
    hybrids = np.tile(background, (len(coalitions), 1, 1))  # one call of the model for all of them
    for hybrid, S in zip(hybrids, coalitions):
        hybrid[:, list(S)] = x[list(S)]
    scores = np.asarray(score(hybrids.reshape(-1, d)))
    scores = scores.reshape((len(coalitions), background.shape[0]) + scores.shape[1:])
    values = {S: np.tensordot(weight, scores[i], axes=(0, 0)) for i, S in enumerate(coalitions)}
    phi = np.zeros((d,) + np.shape(values[()]))
    for a in range(d):
        for S, v in values.items():
            if a not in S:
                with_a = tuple(sorted(S + (a,)))
                share = math.factorial(len(S)) * math.factorial(d - len(S) - 1) / math.factorial(d)
                phi[a] += share * (values[with_a] - v)
    return phi


@pytest.mark.parametrize("name", ["QLR 3 classes", "QR", "SDP classifier"])
def test_shap_values_equal_the_enumeration_of_coalitions(name):
    X, target = _data(d=5, seed=1)
    model = _fit(name, X, target)
    rng = np.random.default_rng(2)
    background, weight = X[:25] + 0.5 * rng.standard_normal((25, 5)), rng.uniform(0.1, 2.0, 25)
    explanation = shap_values(model, X[:6], background, background_weight=weight)
    for i in range(6):
        expected = _brute_force_shapley(lambda Z: _score(model, Z), X[i], background, weight)
        np.testing.assert_allclose(explanation.values[i], expected, rtol=0, atol=EXACT)


# Run in a child interpreter with numba's JIT off: shap's exact explainer then
# runs its kernels as plain Python (the same arithmetic) instead of compiling
# them first, which takes about a minute.
_SHAP_COMPARISON = """
import json, sys
import numpy as np
import shap
sys.path.insert(0, "tests")
from test_inspection_local import _data, _three_classes
from skquad import QuadraticLogisticRegression
from skquad.inspection import shap_values
X, target = _data(d=5, seed=3)
model = QuadraticLogisticRegression(C=10.0).fit(X, _three_classes(target))
background = X[:30]
masker = shap.maskers.Independent(background, max_samples=background.shape[0])
reference = shap.explainers.Exact(model.decision_function, masker)(X[:8])
explanation = shap_values(model, X[:8], background)
converted = explanation.to_explanation()
print(json.dumps({
    "values": float(np.max(np.abs(explanation.values - reference.values))),
    "base_values": float(np.max(np.abs(explanation.base_values - reference.base_values))),
    "shape": list(reference.values.shape),
    "converted": bool(np.array_equal(converted.values, explanation.values)
                      and converted.base_values.shape == reference.base_values.shape),
}))
"""


def test_shap_values_equal_the_shap_packages_exact_explainer():
    pytest.importorskip("shap")
    root = Path(__file__).resolve().parents[1]
    environment = {**os.environ, "NUMBA_DISABLE_JIT": "1", "PYTHONPATH": str(root)}
    completed = subprocess.run(
        [sys.executable, "-c", _SHAP_COMPARISON], cwd=root, env=environment, capture_output=True, text=True
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads(completed.stdout.splitlines()[-1])
    assert result["shape"] == [8, 5, 3]
    assert result["values"] <= 1e-8 and result["base_values"] <= 1e-8
    assert result["converted"]


def test_a_network_with_hidden_layers_is_refused_with_the_reason():
    X, target = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QNNClassifier(hidden_layer_sizes=(3,), quadratic_layers="all", max_iter=5).fit(X, _binary(target))
    message = r"hidden_layer_sizes=\(3,\) is not a quadratic form of its input.*'relu' activation.*hidden_layer_sizes=\(\)"
    with pytest.raises(ValueError, match=message):
        local_contributions(model, X)
    with pytest.raises(ValueError, match=message):
        shap_values(model, X, X)
    with pytest.raises(ValueError, match=message):
        LocalExplanationDisplay.from_estimator(model, X)


def test_an_estimator_that_is_not_quadratic_is_refused():
    X, target = _data()
    with pytest.raises(TypeError, match="LogisticRegression is not a fitted skquad quadratic estimator"):
        local_contributions(LogisticRegression().fit(X, _binary(target)), X)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_pairs": -1}, "max_pairs must be None or a non-negative integer"),
        ({"max_pairs": 1.5}, "max_pairs must be None or a non-negative integer"),
        ({"max_pairs": True}, "max_pairs must be None or a non-negative integer"),
    ],
)
def test_bad_max_pairs(kwargs, message):
    X, target = _data()
    model = QuadraticRegression().fit(X, target)
    with pytest.raises(ValueError, match=message):
        local_contributions(model, X, **kwargs)


def test_bad_background():
    X, target = _data()
    model = QuadraticRegression().fit(X, target)
    with pytest.raises(ValueError, match="background has no rows"):
        shap_values(model, X, X[:0])
    with pytest.raises(ValueError, match="background_weight: Sample weights must contain at least one non-zero"):
        shap_values(model, X, X[:5], background_weight=np.zeros(5))
    with pytest.raises(ValueError, match="background_weight: Negative values in data passed to `sample_weight`"):
        shap_values(model, X, X[:2], background_weight=[1.0, -1.0])
    with pytest.raises(ValueError, match="X has 3 features"):
        shap_values(model, X, X[:, :3])


def _bar_ends(display):
    return np.array([bar.get_x() + bar.get_width() for bar in display.bars_])


def test_waterfall_runs_from_the_intercept_to_the_score():
    X, target = _data(d=5)
    model = QuadraticLogisticRegression(C=10.0).fit(X, _three_classes(target))
    display = LocalExplanationDisplay.from_estimator(model, X, sample=7, max_terms=4)
    scores = model.decision_function(X[7:8])[0]
    predicted = int(np.argmax(scores))
    assert display.score_name == f"score of {model.classes_[predicted]}"
    np.testing.assert_allclose(display.score_value, scores[predicted], rtol=0, atol=EXACT)
    np.testing.assert_allclose(display.base_value, model.intercept_[predicted], rtol=0, atol=EXACT)
    # the top bar ends at the score; the bottom one starts at the intercept
    assert len(display.bars_) == 5 and display.labels[-1] == "11 other terms"
    np.testing.assert_allclose(_bar_ends(display)[0], display.score_value, rtol=0, atol=EXACT)
    np.testing.assert_allclose(display.bars_[-1].get_x(), display.base_value, rtol=0, atol=EXACT)
    np.testing.assert_array_equal(np.abs(display.values[:4]), np.sort(np.abs(display.values[:4]))[::-1])
    assert display.ax_.get_title().startswith("sample 7: ")
    plt.close("all")


def test_bar_chart_of_shap_values_on_a_given_axes(planted_pipeline):
    model, frame = planted_pipeline
    _, ax = plt.subplots()
    display = LocalExplanationDisplay.from_estimator(
        model, frame, sample=-1, background=frame.iloc[:100], kind="bar", score=0, ax=ax, max_terms=10
    )
    expected = shap_values(model, frame.iloc[-1:], frame.iloc[:100])
    assert display.ax_ is ax and len(display.bars_) == 10
    assert display.labels[0].startswith(str(frame.columns[np.argmax(np.abs(expected.values[0]))]) + " = ")
    np.testing.assert_allclose(display.values.sum(), expected.values.sum(), rtol=0, atol=EXACT)
    np.testing.assert_allclose([bar.get_x() for bar in display.bars_], 0.0)
    assert display.base_label == "mean score on the background"
    plt.close("all")


def test_display_refuses_bad_arguments():
    X, target = _data()
    model = QuadraticLogisticRegression().fit(X, _three_classes(target))
    terms = local_contributions(model, X[:3])
    with pytest.raises(ValueError, match="kind must be one of"):
        LocalExplanationDisplay.from_explanation(terms, kind="pie")
    with pytest.raises(ValueError, match="sample=3 is not a row of the 3 explained samples"):
        LocalExplanationDisplay.from_explanation(terms, sample=3)
    with pytest.raises(ValueError, match=r"score='bogus' is not one of the scores \['score of 0'"):
        LocalExplanationDisplay.from_explanation(terms, score="bogus")
    with pytest.raises(ValueError, match="score=5 is not an index of the 3 scores"):
        LocalExplanationDisplay.from_explanation(terms, score=5)
    with pytest.raises(ValueError, match="max_terms must be a positive integer"):
        LocalExplanationDisplay.from_explanation(terms, max_terms=0)
    with pytest.raises(ValueError, match=r"sample=120 is not a row of X \(120 rows\)"):
        LocalExplanationDisplay.from_estimator(model, X, sample=120)
    with pytest.raises(TypeError, match="explanation must be LocalContributions or ShapValues"):
        LocalExplanationDisplay.from_explanation(X)
    plt.close("all")
