"""skquad/inspection/_quadratic_form.py: every quadratic estimator's score read whole, or refused."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from skquad import QNNClassifier, QuadraticRegression
from skquad.inspection import LocalExplanationDisplay, local_contributions, shap_values
from _local_explanation_cases import (
    EXACT,
    QUADRATIC_MODELS,
    binary,
    fit_quadratic_model,
    model_score,
    quadratic_data,
)


@pytest.fixture(scope="module", params=sorted(QUADRATIC_MODELS))
def fitted(request):
    X, target = quadratic_data()
    return request.param, fit_quadratic_model(request.param, X, target), X


def test_contributions_add_up_to_the_score(fitted):
    name, model, X = fitted
    score = model_score(model, X)
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
    np.testing.assert_allclose(explanation.score, model_score(model, X), rtol=0, atol=EXACT)
    np.testing.assert_allclose(explanation.base_values, model_score(model, background).mean(axis=0), rtol=0, atol=EXACT)


def test_a_clipping_estimator_is_explained_at_its_clipped_input():
    X, target = quadratic_data()
    model = QuadraticRegression().fit(X, target)
    model.clip_inputs = True
    # a range narrower than the training rows', so that clipping moves them
    model.data_min_, model.data_max_ = 0.5 * X.min(axis=0), 0.5 * X.max(axis=0)
    outside = 3.0 * X[:20]
    clipped = np.clip(outside, model.data_min_, model.data_max_)
    model.clip_inputs = False
    unclipped = model.predict(outside)
    model.clip_inputs = True
    assert not np.allclose(unclipped, model.predict(outside))  # clipping moves these rows
    terms = local_contributions(model, outside)
    np.testing.assert_allclose(terms.score, model.predict(clipped), rtol=0, atol=EXACT)
    np.testing.assert_array_equal(terms.data, clipped)
    explanation = shap_values(model, outside, background=outside)
    np.testing.assert_allclose(explanation.score, model.predict(clipped), rtol=0, atol=EXACT)
    np.testing.assert_allclose(explanation.base_values, model.predict(clipped).mean(), rtol=0, atol=EXACT)


def test_a_network_with_hidden_layers_is_refused_with_the_reason():
    X, target = quadratic_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = QNNClassifier(hidden_layer_sizes=(3,), quadratic_layers="all", max_iter=5).fit(X, binary(target))
    message = r"hidden_layer_sizes=\(3,\) is not a quadratic form of its input.*'relu' activation.*hidden_layer_sizes=\(\)"
    with pytest.raises(ValueError, match=message):
        local_contributions(model, X)
    with pytest.raises(ValueError, match=message):
        shap_values(model, X, X)
    with pytest.raises(ValueError, match=message):
        LocalExplanationDisplay.from_estimator(model, X)


def test_an_estimator_that_is_not_quadratic_is_refused():
    X, target = quadratic_data()
    with pytest.raises(TypeError, match="LogisticRegression is not a fitted skquad quadratic estimator"):
        local_contributions(LogisticRegression().fit(X, binary(target)), X)
