"""skquad/benchmarks/_estimators.py: the default specs and the specs of your estimators."""

import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier

from skquad.benchmarks._estimators import (
    DEFAULT_ESTIMATOR_NAMES,
    default_regression_specs,
    default_specs,
    user_spec,
)


def test_default_specs_build_unfitted_seeded_classifiers_with_valid_grids():
    specs = default_specs()
    assert tuple(spec.name for spec in specs) == DEFAULT_ESTIMATOR_NAMES
    assert len(set(DEFAULT_ESTIMATOR_NAMES)) == len(specs)
    assert {spec.kind for spec in specs} == {"skquad", "baseline"}
    for spec in specs:
        model = spec.build(7, "cpu")
        assert is_classifier(model), spec.name
        assert not hasattr(model, "n_features_in_"), spec.name  # unfitted
        params = model.get_params()
        if spec.kind == "skquad":  # seeded by the run (baselines keep their defaults)
            assert params["random_state"] == 7, spec.name
        # a tune=True grid names parameters of the estimator itself
        assert set(spec.grid) <= set(params), spec.name


def test_default_regression_specs_build_regressors():
    specs = default_regression_specs()
    assert len({spec.name for spec in specs}) == len(specs)
    for spec in specs:
        model = spec.build(0, "cpu")
        assert is_regressor(model), spec.name
        assert set(spec.grid) <= set(model.get_params()), spec.name


@pytest.mark.parametrize(
    "estimator, expected_seed",
    [(LogisticRegression(), 5), (LogisticRegression(random_state=1), 1), (KNeighborsClassifier(), None)],
)
def test_user_spec_clones_and_seeds_only_an_unseeded_estimator(estimator, expected_seed):
    spec = user_spec("mine", estimator, grid={"C": [1.0]})
    first, second = spec.build(5, "cpu"), spec.build(5, "cpu")
    assert first is not estimator and first is not second
    assert spec.kind == "yours" and spec.grid == {"C": [1.0]} and spec.settings == repr(estimator)
    assert first.get_params().get("random_state") == expected_seed
    assert estimator.get_params().get("random_state") in (None, 1)  # the user's object is untouched


def test_optional_specs_are_selectable_by_name_but_not_run_by_default():
    from skquad import SDPQuantizedClassifierCV
    from skquad.benchmarks._estimators import OPTIONAL_ESTIMATOR_NAMES, optional_specs
    from skquad.benchmarks._protocol import _as_specs

    assert OPTIONAL_ESTIMATOR_NAMES == ("SDPCV",)
    assert not set(OPTIONAL_ESTIMATOR_NAMES) & set(DEFAULT_ESTIMATOR_NAMES)
    model = optional_specs()[0].build(3, "cpu")
    assert isinstance(model, SDPQuantizedClassifierCV) and model.random_state == 3
    assert not hasattr(model, "n_features_in_")
    chosen = _as_specs(["SDP", "SDPCV"], include_defaults=True, quick=False)
    assert [spec.name for spec in chosen] == ["SDP", "SDPCV"]
    assert "SDPCV" not in [spec.name for spec in _as_specs(None, True, False)]
    # the regression suite's SDPCV is its default regressor, not this classifier
    regression = _as_specs(["SDPCV"], include_defaults=True, quick=False, task="regression")
    assert is_regressor(regression[0].build(0, "cpu"))
