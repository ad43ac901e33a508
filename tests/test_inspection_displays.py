"""skquad/inspection/_displays.py: the interaction heat map and bars, the quadric slice."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest

from skquad import QuadraticLogisticRegression
from skquad.inspection import InteractionDisplay, QuadricSliceDisplay
from _inspection_cases import _ellipsoid_data


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


def test_slice_display_is_the_neuron_on_the_grid():
    X, y, _ = _ellipsoid_data()
    model = QuadraticLogisticRegression(C=100.0).fit(X, y)
    display = QuadricSliceDisplay.from_estimator(model, X, y, features=(0, 2), fixed={1: -0.5}, grid_resolution=30)
    grid = np.column_stack([display.xx0_.ravel(), np.full(900, -0.5), display.xx1_.ravel()])
    # the display draws the neuron itself, the unclipped model (the grid leaves the training range)
    unclipped = model.set_params(clip_inputs=False).decision_function(grid)
    np.testing.assert_allclose(display.response_.ravel(), unclipped, rtol=1e-10, atol=1e-10)
    assert display.slice_analysis_.surface_type == "ellipsoid"  # through the ellipsoid's middle
    assert display.boundary_ is not None and display.ax_.get_xlabel() == "x0"
    plt.close("all")


def test_slice_display_on_one_feature_says_it_needs_two():
    # Issue 19: the message was "features must name two ..., got (0, 1)".
    X = np.random.RandomState(0).randn(40, 1)
    y = (X[:, 0] ** 2 > 0.5).astype(int)
    model = QuadraticLogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match=r"plane of two features.* has 1 input feature \(\['x0'\]\)"):
        QuadricSliceDisplay.from_estimator(model)
