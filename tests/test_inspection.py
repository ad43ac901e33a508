"""skquad.inspection: quadric types, interactions on planted data, displays."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import (
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
)
from skquad.inspection import (
    InteractionDisplay,
    QuadricSliceDisplay,
    analyze_quadric,
    interaction_table,
    quadratic_neurons,
    quadric_analysis,
)


# ------------------------------------------------------------------ the classification
@pytest.mark.parametrize(
    "diagonal, w, b, expected, flat",
    [
        ([1, 4, 9], [0, 0, 0], -1, "ellipsoid", 0),
        ([1, 1, -1], [0, 0, 0], -1, "hyperboloid of one sheet", 0),
        ([1, -1, -1], [0, 0, 0], -1, "hyperboloid of two sheets", 0),
        ([1, -1], [0, 0], -1, "hyperboloid of two sheets", 0),  # a hyperbola: two branches
        ([1, 1, 0], [0, 0, -1], 0, "elliptic paraboloid", 0),
        ([1, -1, 0], [0, 0, -1], 0, "hyperbolic paraboloid", 0),
        ([1, 1, 0], [0, 0, 0], -1, "elliptic cylinder", 1),
        ([1, -1, 0], [0, 0, 0], -1, "hyperbolic cylinder", 1),
        ([1, 0, 0], [0, 1, 0], 0, "parabolic cylinder", 1),
        ([1, 1, -1], [0, 0, 0], 0, "cone", 0),
        ([1, -1, 0], [0, 0, 0], 0, "pair of hyperplanes", 1),
        ([1, 0, 0], [0, 0, 0], 0, "double hyperplane", 2),
        ([1, 1, 1], [0, 0, 0], 1, "empty", 0),
        ([1, 1, 1], [0, 0, 0], 0, "point", 0),
        ([0, 0, 0], [1, 0, 0], 0, "hyperplane", 0),
    ],
)
def test_quadric_types_of_canonical_forms_in_a_rotated_frame(diagonal, w, b, expected, flat):
    # The type is affine-invariant: rotate and translate the canonical form.
    d = len(diagonal)
    rotation, _ = np.linalg.qr(np.random.default_rng(d).standard_normal((d, d)))
    shift = np.arange(1.0, d + 1)
    Q = rotation @ np.diag(np.asarray(diagonal, float)) @ rotation.T
    w_rot = rotation @ np.asarray(w, float)
    # f(x) = g(R^T (x - shift)) with g the canonical form
    w_x = w_rot - 2 * Q @ shift
    b_x = shift @ Q @ shift - w_rot @ shift + b
    analysis = analyze_quadric(Q, w_x, b_x)
    assert analysis.surface_type == expected
    assert analysis.n_cylinder_directions == flat
    if expected in ("ellipsoid", "hyperboloid of one sheet", "cone", "point", "empty"):
        np.testing.assert_allclose(analysis.center, shift, atol=1e-9)


# ------------------------------------------------------------------ planted interactions
def _planted(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10))
    logit = 2 * X[:, 3] * X[:, 7] - X[:, 1] ** 2 + 0.3 * X[:, 0] - 0.2 * X[:, 5] + 1.0
    y = (rng.random(n) < expit(logit)).astype(int)
    return X, y


@pytest.fixture(scope="module")
def planted_pipeline():
    X, y = _planted()
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(10)])
    return make_pipeline(StandardScaler(), QuadraticLogisticRegression(C=1.0)).fit(frame, y), frame


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


def test_interaction_display_heat_map_and_bars(planted_pipeline):
    model, frame = planted_pipeline
    display = InteractionDisplay.from_estimator(model, frame)
    matrix = display.matrix_
    off = matrix - np.diag(np.diag(matrix))
    assert set(np.unravel_index(np.argmax(np.abs(off)), off.shape)) == {3, 7}
    assert off[3, 7] > 0 and matrix[1, 1] < 0
    assert display.figure_ is display.ax_.figure and display.image_ is not None
    _, ax = plt.subplots()
    bars = InteractionDisplay.from_estimator(model, frame, kind="bar", top_k=4, ax=ax)
    assert bars.ax_ is ax and len(bars.bars_) == 4
    assert bars.ax_.get_yticklabels()[0].get_text() == "f3 × f7"  # the top bar
    plt.close("all")


# ------------------------------------------------------------------ geometry vs decision_function
def _ellipsoid_data(n=1500, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 3))
    center = np.array([0.5, -0.5, 0.2])
    inside = (((X - center) / np.array([2.0, 1.0, 1.5])) ** 2).sum(axis=1) < 1
    return X, inside.astype(int), center


def _xor_data(n=800, seed=2):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, 2))
    # off-center threshold: a hyperbola with two branches, not a cone
    return X, (X[:, 0] * X[:, 1] > 0.3).astype(int)


def _level_set_root(function, center, direction, radius):
    """Bisection for f(center + t u) = 0 on (0, radius]; None without a sign change."""
    low, high = 0.0, radius
    f_low = function(center[None, :])[0]
    f_high = function((center + high * direction)[None, :])[0]
    if np.sign(f_low) == np.sign(f_high):
        return None
    for _ in range(80):
        middle = 0.5 * (low + high)
        value = function((center + middle * direction)[None, :])[0]
        if np.sign(value) == np.sign(f_low):
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def _check_level_set(model, analysis, rng, n_rays=12, radius=50.0):
    """Points found on decision_function's zero set lie where the analysis says."""
    function = model.decision_function
    d = analysis.w.shape[0]
    found = 0
    for _ in range(n_rays):
        u = rng.standard_normal(d)
        u /= np.linalg.norm(u)
        curvature = u @ analysis.Q @ u
        ratio = -analysis.center_value / curvature
        root = _level_set_root(function, analysis.center, u, radius)
        if ratio > 0 and np.sqrt(ratio) < radius:
            # the reported equation y^T Q y = -center_value along the ray
            assert root == pytest.approx(np.sqrt(ratio), rel=1e-6)
            point = analysis.center + root * u
            assert abs(analysis.value(point[None, :])[0]) < 1e-6 * (1 + abs(analysis.b))
            found += 1
        else:
            assert root is None
    return found


@pytest.mark.parametrize("make_model", [
    lambda: QuadraticLogisticRegression(C=100.0),
    lambda: QNNClassifier(hidden_layer_sizes=(), solver="lbfgs", dtype="float64", alpha=1e-3, max_iter=300, random_state=0),
], ids=["qlr", "qnn"])
def test_ellipse_class_gives_an_ellipsoid_at_its_center(make_model):
    X, y, center = _ellipsoid_data()
    model = make_model().fit(X, y)
    (analysis,) = quadric_analysis(model)
    assert analysis.surface_type == "ellipsoid"
    assert analysis.inertia == (0, 3, 0)  # inside is positive: a cap
    np.testing.assert_allclose(analysis.center, center, atol=0.2)
    np.testing.assert_allclose(np.sort(analysis.semi_axes), [1.0, 1.5, 2.0], rtol=0.15)
    # every ray from the center crosses the fitted surface once, where reported
    assert _check_level_set(model, analysis, np.random.default_rng(0)) == 12


@pytest.mark.parametrize("make_model", [
    lambda: QuadraticLogisticRegression(C=10.0),
    lambda: QNNClassifier(hidden_layer_sizes=(), solver="lbfgs", dtype="float64", max_iter=300, random_state=0),
], ids=["qlr", "qnn"])
def test_xor_gives_a_hyperbolic_type(make_model):
    X, y = _xor_data()
    model = make_model().fit(X, y)
    (analysis,) = quadric_analysis(model)
    assert analysis.surface_type == "hyperboloid of two sheets" and analysis.is_hyperbolic
    assert analysis.inertia == (1, 1, 0)
    assert np.linalg.norm(analysis.center) < 0.3
    # rays of one curvature sign cross the boundary, the others never do
    found = _check_level_set(model, analysis, np.random.default_rng(1), n_rays=16)
    assert 0 < found < 16


def test_rpqnn_neuron_on_xor_is_a_pair_of_lines():
    # (w^T x + b)(u^T x + c) = 0 is two lines: the degenerate hyperbolic type
    X, y = _xor_data()
    model = RPQNNClassifier(
        hidden_layer_sizes=(), solver="lbfgs", dtype="float64", relinear=False, max_iter=300, random_state=0
    ).fit(X, y)
    assert model.score(X, y) > 0.9
    (analysis,) = quadric_analysis(model)
    assert analysis.surface_type == "pair of hyperplanes" and analysis.is_hyperbolic
    assert analysis.inertia == (1, 1, 0) and analysis.center_value == 0.0
    # the decision function vanishes on both lines through the center
    Q = analysis.Q
    for sign in (1, -1):  # directions u with u^T Q u = 0
        lam = analysis.eigenvalues
        u = analysis.axes @ np.array([np.sqrt(-lam[1]), sign * np.sqrt(lam[0])])
        points = analysis.center + np.outer(np.linspace(-2, 2, 5), u)
        assert np.all(np.abs(model.decision_function(points)) < 1e-8 * (1 + np.abs(Q).max()))


def test_rpqnn_neurons_are_rank_two_quadrics_equal_to_the_layer():
    X, y = _xor_data()
    X = np.hstack([X, np.random.default_rng(3).standard_normal((X.shape[0], 3))])
    model = RPQNNClassifier(
        hidden_layer_sizes=(4,), quadratic_layers="all", power_term=False, relinear=False,
        solver="lbfgs", dtype="float64", max_iter=500, random_state=0,
    ).fit(X, y)
    neurons = quadratic_neurons(model)
    first = [n for n in neurons if n.layer == 0]
    assert len(first) == 4 and neurons[-1].layer == 1
    for neuron in first:
        assert np.linalg.matrix_rank(neuron.Q, tol=1e-10) <= 2
    # the output neuron composed with the first layer's ReLU is the network
    hidden = np.maximum(np.column_stack([n.value(X) for n in first]), 0)
    np.testing.assert_allclose(neurons[-1].value(hidden), model.decision_function(X), rtol=1e-10, atol=1e-10)
    assert list(neurons[-1].feature_names[:2]) == ["layer 0, unit 0", "layer 0, unit 1"]


def test_sdp_network_and_relaxed_quadrics_reproduce_their_scores():
    X, y, _ = _ellipsoid_data(n=300)
    model = SDPQuantizedClassifier(
        n_neurons=200, loss="squared", beta=1e-3, class_weight="balanced", random_state=0
    ).fit(X * 10 + 3, y)
    for which, function in (("sampled", model.decision_function), ("relaxed", model.relaxed_decision_function)):
        (neuron,) = quadratic_neurons(model, which=which)
        np.testing.assert_allclose(neuron.value(X * 10 + 3), function(X * 10 + 3), rtol=1e-8, atol=1e-8)
    (relaxed,) = quadric_analysis(model, which="relaxed")
    assert relaxed.surface_type == "ellipsoid"
    # within a third of the shortest semi-axis (10 after scaling)
    np.testing.assert_allclose(relaxed.center, np.array([0.5, -0.5, 0.2]) * 10 + 3, atol=3.3)


def test_raw_units_through_a_standard_scaler():
    X, y, center = _ellipsoid_data()
    raw = X * np.array([100.0, 0.01, 5.0]) + np.array([1000.0, -2.0, 0.0])
    model = make_pipeline(StandardScaler(), QuadraticLogisticRegression(C=100.0)).fit(raw, y)
    (standardized,) = quadric_analysis(model)
    (in_raw,) = quadric_analysis(model, units="raw")
    np.testing.assert_allclose(in_raw.value(raw), model.decision_function(raw), rtol=1e-9, atol=1e-9)
    assert in_raw.surface_type == standardized.surface_type == "ellipsoid"
    scaler = model[0]
    np.testing.assert_allclose(in_raw.center, scaler.mean_ + scaler.scale_ * standardized.center, rtol=1e-9)
    units = np.array([100.0, 0.01, 5.0])
    assert np.all(np.abs(in_raw.center - (center * units + [1000.0, -2.0, 0.0])) < 0.2 * units)


def test_slice_display_is_the_neuron_on_the_grid():
    X, y, _ = _ellipsoid_data()
    model = QuadraticLogisticRegression(C=100.0).fit(X, y)
    display = QuadricSliceDisplay.from_estimator(model, X, y, features=(0, 2), fixed={1: -0.5}, grid_resolution=30)
    grid = np.column_stack([display.xx0_.ravel(), np.full(900, -0.5), display.xx1_.ravel()])
    np.testing.assert_allclose(display.response_.ravel(), model.decision_function(grid), rtol=1e-10, atol=1e-10)
    assert display.slice_analysis_.surface_type == "ellipsoid"  # through the ellipsoid's middle
    assert display.boundary_ is not None and display.ax_.get_xlabel() == "x0"
    plt.close("all")


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


def test_backprop_float_and_quantized_networks_and_bad_data():
    from skquad import BackpropQuantizedClassifier

    X, y, _ = _ellipsoid_data(n=300)
    model = BackpropQuantizedClassifier(n_neurons=30, max_iter=20, random_state=0).fit(X, y)
    (quantized,) = quadratic_neurons(model)
    (real,) = quadratic_neurons(model, which="float")
    np.testing.assert_allclose(quantized.value(X), model.decision_function(X), rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(real.value(X), model.float_decision_function(X), rtol=1e-8, atol=1e-8)
    with pytest.raises(ValueError, match="which='relaxed' is not available"):
        quadratic_neurons(model, which="relaxed")
    X_missing = X.copy()
    X_missing[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite values"):
        interaction_table(model, X_missing)


# ---------------------------------------------------------------- regressors
def test_regressors_are_read_as_quadrics_and_sized():
    from skquad import QuadraticRegression, SDPQuantizedRegressor
    from skquad.inspection import interaction_table, model_size

    rng = np.random.RandomState(0)
    X = rng.randn(200, 3)
    y = 2.0 * X[:, 0] * X[:, 1] + X[:, 2]
    model = QuadraticRegression(alpha=1e-8).fit(X, y)
    table = interaction_table(model, X)
    top = table.iloc[0]
    assert top["neuron"] == "prediction" and {top["feature_1"], top["feature_2"]} == {"x0", "x1"}
    # d(d+3)/2 coefficients and the intercept, as PolynomialFeatures(2) + Ridge.
    assert model_size(model).n_parameters == 3 * 6 // 2 + 1
    two = QuadraticRegression().fit(X, np.column_stack([y, X[:, 2]]))
    assert set(interaction_table(two, X)["neuron"]) == {"output 0", "output 1"}
    sdp = SDPQuantizedRegressor(n_neurons=50, random_state=0).fit(X, y)
    assert interaction_table(sdp, X).iloc[0][["feature_1", "feature_2"]].tolist() in (["x0", "x1"], ["x1", "x0"])


def test_interaction_table_refuses_reordered_columns_as_predict_does():
    # Issue 19: a frame with the fitted columns in another order was read as the
    # wrong features; predict refuses it, and so does the table now.
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = QuadraticLogisticRegression().fit(frame, y)
    reordered = frame[["c", "b", "a"]]
    with pytest.raises(ValueError, match="same order as they were in fit") as from_predict:
        model.predict(reordered)
    with pytest.raises(ValueError, match="same order as they were in fit") as from_table:
        interaction_table(model, reordered)
    assert str(from_table.value) == str(from_predict.value)
    # the fitted order still works
    assert interaction_table(model, frame)["importance"].notna().all()


def _issue19_model():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    return QuadraticLogisticRegression().fit(X, y), X, y


def test_quadratic_neurons_refuses_arguments_that_do_not_apply():
    # Issue 19: which="bogus", layer=99 were ignored where they do not apply.
    from skquad import QNNClassifier

    model, X, y = _issue19_model()
    with pytest.raises(ValueError, match=r"layer=99 applies to the quadratic networks"):
        quadratic_neurons(model, layer=99)
    with pytest.raises(ValueError, match=r"which='bogus' applies to the quantized networks"):
        quadratic_neurons(model, which="bogus")
    network = QNNClassifier(hidden_layer_sizes=(2,), max_iter=5, random_state=0)
    with pytest.warns(ConvergenceWarning):
        network.fit(X, y)
    with pytest.raises(ValueError, match=r"layer=99 is not an index of QNNClassifier.layers_ \(0 to 1\)"):
        quadratic_neurons(network, layer=99)
    with pytest.raises(ValueError, match=r"which='sampled' applies to the quantized"):
        quadratic_neurons(network, which="sampled")
    assert quadratic_neurons(network, layer=1)  # a valid index still reads the layer


def test_analyze_quadric_refuses_a_nan_quadric():
    # Issue 19: a NaN Q was answered "constant".
    with pytest.raises(ValueError, match="Q has non-finite values"):
        analyze_quadric(np.full((2, 2), np.nan), np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="w has non-finite values"):
        analyze_quadric(np.eye(2), np.array([np.inf, 0.0]), 0.0)


def test_slice_display_on_one_feature_says_it_needs_two():
    # Issue 19: the message was "features must name two ..., got (0, 1)".
    X = np.random.RandomState(0).randn(40, 1)
    y = (X[:, 0] ** 2 > 0.5).astype(int)
    model = QuadraticLogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"plane of two features.* has 1 input feature \(\['x0'\]\)"):
        QuadricSliceDisplay.from_estimator(model)
