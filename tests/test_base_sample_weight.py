"""The base's class_weight and sample_weight rules, on every classifier."""

import numpy as np
import pytest

from _estimator_cases import ESTIMATORS, DEFAULTS, data


@pytest.mark.parametrize("name", DEFAULTS)
def test_class_weight_key_matching_no_class_is_an_error(name, data):
    X, y = data
    with pytest.raises(
        ValueError, match=r"The classes, \[1\], are not in class_weight"
    ):
        DEFAULTS[name](class_weight={0: 1.0, 7: 2.0}).fit(X, y)


@pytest.mark.parametrize("value", [np.inf, np.nan, -1.0, "heavy"])
@pytest.mark.parametrize("name", DEFAULTS)
def test_class_weight_values_must_be_finite_and_non_negative(name, value, data):
    X, y = data
    with pytest.raises(
        ValueError, match=r"class_weight values must be finite non-negative"
    ):
        DEFAULTS[name](class_weight={0: value, 1: 1.0}).fit(X, y)


@pytest.mark.parametrize("scale", [1e-300, 1e307])
@pytest.mark.parametrize("name", ["QLR", "QNN", "RPQNN", "BackpropQ"])
def test_weights_out_of_range_are_rejected_where_their_scale_matters(name, scale, data):
    X, y = data
    with pytest.raises(ValueError, match="sum of sample_weight"):
        ESTIMATORS[name]().fit(X, y, sample_weight=np.full(len(y), scale))


@pytest.mark.parametrize("scale", [1e-300, 1e307])
def test_sdp_rescales_weights_out_of_range_exactly(scale, data):
    """At a float ``beta`` the SDP's objective is a weighted mean: only the weights' ratios matter.

    The rescaled weights equal the reference ones to rounding; the native solver
    stops on a certified gap (tol=1e-4), so rounding may move its stopping point
    and the models agree to the solver's tolerance, not to the last bit. Under
    ``beta="auto"`` the weights count samples (the default beta shrinks with
    their sum, as with repeated rows), so a sum out of range is refused instead.
    """
    X, y = data
    ratios = np.random.RandomState(0).uniform(0.5, 2.0, len(y))
    with pytest.raises(ValueError, match="sum of sample_weight .* out of the range"):
        ESTIMATORS["SDP"]().fit(X, y, sample_weight=ratios * scale)
    reference = ESTIMATORS["SDP"]().set_params(beta=1e-2).fit(X, y, sample_weight=ratios)
    scaled = ESTIMATORS["SDP"]().set_params(beta=1e-2).fit(X, y, sample_weight=ratios * scale)
    np.testing.assert_allclose(scaled.lower_bound_, reference.lower_bound_, rtol=1e-4)
    np.testing.assert_allclose(
        scaled.predict_proba(X), reference.predict_proba(X), rtol=0, atol=1e-3
    )


@pytest.mark.parametrize("name", DEFAULTS)
def test_all_zero_weights_are_an_error(name, data):
    X, y = data
    with pytest.raises(ValueError, match="at least one non-zero"):
        DEFAULTS[name]().fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="zero for every sample"):
        DEFAULTS[name](class_weight={0: 0, 1: 0}).fit(X, y)


