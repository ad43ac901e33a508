"""skquad/inspection/_shap.py: the closed-form SHAP values against the enumeration of coalitions and shap."""

import itertools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from skquad import QuadraticRegression
from skquad.inspection import local_contributions, shap_values
from _local_explanation_cases import EXACT, fit_quadratic_model, model_score, quadratic_data


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
    X, target = quadratic_data(d=5, seed=1)
    model = fit_quadratic_model(name, X, target)
    rng = np.random.default_rng(2)
    background, weight = X[:25] + 0.5 * rng.standard_normal((25, 5)), rng.uniform(0.1, 2.0, 25)
    explanation = shap_values(model, X[:6], background, background_weight=weight)
    for i in range(6):
        expected = _brute_force_shapley(lambda Z: model_score(model, Z), X[i], background, weight)
        np.testing.assert_allclose(explanation.values[i], expected, rtol=0, atol=EXACT)


# Run in a child interpreter with numba's JIT off: shap's exact explainer then
# runs its kernels as plain Python (the same arithmetic) instead of compiling
# them first, which takes about a minute.
_SHAP_COMPARISON = """
import json, sys
import numpy as np
import shap
sys.path.insert(0, "tests")
from _local_explanation_cases import quadratic_data, three_classes
from skquad import QuadraticLogisticRegression
from skquad.inspection import local_contributions, shap_values
X, target = quadratic_data(d=5, seed=3)
model = QuadraticLogisticRegression(C=10.0).fit(X, three_classes(target))
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


def test_bad_background():
    X, target = quadratic_data()
    model = QuadraticRegression().fit(X, target)
    with pytest.raises(ValueError, match="background has no rows"):
        shap_values(model, X, X[:0])
    with pytest.raises(ValueError, match="background_weight: Sample weights must contain at least one non-zero"):
        shap_values(model, X, X[:5], background_weight=np.zeros(5))
    with pytest.raises(ValueError, match="background_weight: Negative values in data passed to `sample_weight`"):
        shap_values(model, X, X[:2], background_weight=[1.0, -1.0])
    with pytest.raises(ValueError, match="X has 3 features"):
        shap_values(model, X, X[:, :3])


def test_against_the_origin_shap_values_are_the_contributions_with_pairs_halved():
    X, target = quadratic_data(d=5, seed=4)
    model = QuadraticRegression(alpha=0.1).fit(X, target)
    against_origin = shap_values(model, X[:10], background=np.zeros((1, 5)))
    terms = local_contributions(model, X[:10])
    halves = terms.main_effects.copy()
    for (a, c), values in zip(terms.pairs, terms.pair_effects.T):
        halves[:, a] += values / 2
        halves[:, c] += values / 2
    np.testing.assert_allclose(against_origin.values, halves, rtol=0, atol=EXACT)
    np.testing.assert_allclose(against_origin.base_values, terms.intercept, rtol=0, atol=EXACT)
