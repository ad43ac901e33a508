"""skquad/inspection/_contributions.py: the main effects and pairs of each sample."""

import numpy as np
import pytest

from skquad import QuadraticRegression
from skquad.inspection import local_contributions
from _local_explanation_cases import EXACT, quadratic_data


def _zeroed(X, features):
    Z = X.copy()
    Z[:, list(features)] = 0.0
    return Z


def test_terms_are_what_the_model_does_when_features_are_switched_off():
    # Read through the estimator's predict, not its coefficients: a pair's
    # contribution is the mixed difference f(x) - f(x, a=0) - f(x, c=0) + f(x, a=c=0)
    # and a main effect is f(x_a e_a) - f(0).
    X, target = quadratic_data(d=5)
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


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_pairs": -1}, "max_pairs must be None or a non-negative integer"),
        ({"max_pairs": 1.5}, "max_pairs must be None or a non-negative integer"),
        ({"max_pairs": True}, "max_pairs must be None or a non-negative integer"),
    ],
)
def test_bad_max_pairs(kwargs, message):
    X, target = quadratic_data()
    model = QuadraticRegression().fit(X, target)
    with pytest.raises(ValueError, match=message):
        local_contributions(model, X, **kwargs)
