"""skquad/inspection/_local_display.py: one sample's waterfall and bar chart."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from skquad import QuadraticLogisticRegression
from skquad.inspection import LocalExplanationDisplay, local_contributions, shap_values
from _local_explanation_cases import EXACT, quadratic_data, three_classes


def _bar_ends(display):
    return np.array([bar.get_x() + bar.get_width() for bar in display.bars_])


def test_waterfall_runs_from_the_intercept_to_the_score():
    X, target = quadratic_data(d=5)
    model = QuadraticLogisticRegression(C=10.0).fit(X, three_classes(target))
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
    X, target = quadratic_data()
    model = QuadraticLogisticRegression().fit(X, three_classes(target))
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
