"""skquad/inspection/_analysis.py: quadric_analysis against decision_function's level sets, raw units."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QNNClassifier, QuadraticLogisticRegression, RPQNNClassifier
from skquad.inspection import quadric_analysis
from _inspection_cases import _ellipsoid_data, _xor_data


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
    """Points found on decision_function's zero set lie where the analysis says.

    The rays leave the training range: the analysis describes the model itself,
    so the decision function is read without clipping (``clip_inputs=False``).
    """
    function = model.set_params(clip_inputs=False).decision_function  # acts at predict time
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
    model.set_params(clip_inputs=False)  # the lines leave the training range: the model itself
    assert analysis.surface_type == "pair of hyperplanes" and analysis.is_hyperbolic
    assert analysis.inertia == (1, 1, 0) and analysis.center_value == 0.0
    # the decision function vanishes on both lines through the center
    Q = analysis.Q
    for sign in (1, -1):  # directions u with u^T Q u = 0
        lam = analysis.eigenvalues
        u = analysis.axes @ np.array([np.sqrt(-lam[1]), sign * np.sqrt(lam[0])])
        points = analysis.center + np.outer(np.linspace(-2, 2, 5), u)
        assert np.all(np.abs(model.decision_function(points)) < 1e-8 * (1 + np.abs(Q).max()))


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
