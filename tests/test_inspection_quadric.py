"""skquad/inspection/_quadric.py: the classification of a quadric and its checks."""

import numpy as np
import pytest

from skquad.inspection import analyze_quadric


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


def test_analyze_quadric_refuses_a_nan_quadric():
    # Issue 19: a NaN Q was answered "constant".
    with pytest.raises(ValueError, match="Q has non-finite values"):
        analyze_quadric(np.full((2, 2), np.nan), np.zeros(2), 0.0)
    with pytest.raises(ValueError, match="w has non-finite values"):
        analyze_quadric(np.eye(2), np.array([np.inf, 0.0]), 0.0)


def test_analyze_quadric_keeps_the_name_it_is_given():
    # the name given, not a loop variable of the finiteness check
    analysis = analyze_quadric(np.eye(2), np.zeros(2), -1.0, name="neuron 3")
    assert analysis.name == "neuron 3"
    assert analysis.summary().startswith("neuron 3: ellipsoid")
