"""skquad/inspection/_interactions.py: interaction tables on planted data, errors, several scores."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline

from skquad import QNNClassifier, QuadraticLogisticRegression
from skquad.inspection import (
    InteractionDisplay,
    analyze_quadric,
    interaction_table,
    quadratic_neurons,
    quadric_analysis,
)
from _inspection_cases import _ellipsoid_data, _xor_data


def test_planted_pair_and_square_rank_first_with_their_signs(planted_pipeline):
    model, frame = planted_pipeline
    table = interaction_table(model, frame)
    assert isinstance(table, pd.DataFrame)
    pairs = table[table["term"] == "interaction"]
    top = pairs.iloc[0]
    assert {top["feature_1"], top["feature_2"]} == {"f3", "f7"}  # names through the Pipeline
    assert top["rank"] == 1 and top["coefficient"] > 1.0
    # the planted pair stands out: far above the next one
    assert top["importance"] > 5 * pairs.iloc[1]["importance"]
    squares = table[table["term"] == "self"]
    assert squares.iloc[0]["feature_1"] == "f1" and squares.iloc[0]["coefficient"] < -0.5
    linear = table[table["term"] == "linear"]
    assert linear.iloc[0]["feature_1"] == "f0" and linear.iloc[0]["coefficient"] > 0


def test_interaction_table_without_pandas_shape_and_coefficients(planted_pipeline):
    model, frame = planted_pipeline
    from skquad.inspection._interactions import interaction_records

    records = interaction_records(model, frame)
    Q = model[-1].Q_[0]
    assert len(records["term"]) == 45 + 10 + 10
    i = np.flatnonzero((records["feature_1"] == "f3") & (records["feature_2"] == "f7"))[0]
    assert records["coefficient"][i] == pytest.approx(2 * Q[3, 7])
    # importance: mean |t - mean t| of the term 2 Q_37 z_3 z_7 on the standardized data
    Z = model[0].transform(frame)
    term = 2 * Q[3, 7] * Z[:, 3] * Z[:, 7]
    assert records["importance"][i] == pytest.approx(np.mean(np.abs(term - term.mean())))


def test_clear_errors():
    X, y = _xor_data()
    linear_first = QNNClassifier(hidden_layer_sizes=(3,), solver="lbfgs", max_iter=500, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="No quadratic neuron .* acts on its input features"):
        interaction_table(linear_first, X)
    qlr = QuadraticLogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="neuron=5"):
        interaction_table(qlr, X, neuron=5)
    with pytest.raises(TypeError, match="units=.raw. needs every step"):
        from sklearn.preprocessing import PolynomialFeatures

        quadric_analysis(make_pipeline(PolynomialFeatures(1), QuadraticLogisticRegression()).fit(X, y), units="raw")
    with pytest.raises(TypeError, match="not a fitted skquad quadratic estimator"):
        from sklearn.linear_model import LogisticRegression

        quadratic_neurons(LogisticRegression().fit(X, y))


def test_multiclass_neurons_and_selection():
    X, y, _ = _ellipsoid_data(n=600)
    labels = np.where(y == 1, "inside", np.where(X[:, 0] > 0, "right", "left"))
    model = QuadraticLogisticRegression(C=10.0).fit(X, labels)
    table = interaction_table(model, X)
    assert list(dict.fromkeys(table["neuron"])) == ["score of inside", "score of left", "score of right"]
    one = interaction_table(model, X, neuron="score of inside")
    assert set(one["neuron"]) == {"score of inside"} and len(one) == 3 + 3 + 3
    display = InteractionDisplay.from_estimator(model, X)
    assert np.all(display.matrix_ >= 0)  # summed over the three scores: unsigned
    plt.close("all")
    # the boundary between two classes is the quadric of the score difference
    Q, w, b = model.Q_, model.coef_, model.intercept_
    between = analyze_quadric(Q[0] - Q[1], w[0] - w[1], b[0] - b[1])
    np.testing.assert_allclose(
        between.value(X), model.decision_function(X)[:, 0] - model.decision_function(X)[:, 1], rtol=1e-9, atol=1e-9
    )
