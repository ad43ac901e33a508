"""Bad input at fit and predict gets scikit-learn's error, on every classifier's defaults."""

import numpy as np
import pytest
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

from _estimator_cases import DEFAULTS, data, fit_allowing_convergence_warning


def _bad_inputs(X, y):
    Xnan = X.copy()
    Xnan[3, 1] = np.nan
    Xinf = X.copy()
    Xinf[0, 0] = np.inf
    return {
        "nan": (Xnan, y, ValueError, "NaN"),
        "inf": (Xinf, y, ValueError, "infinity"),
        "empty": (X[:0], y[:0], ValueError, "0 sample"),
        "no_features": (X[:, :0], y, ValueError, "0 feature"),
        "one_class": (X, np.zeros_like(y), ValueError, "class"),
        "1d_X": (X[:, 0], y, ValueError, "2D array"),
        "3d_X": (X[:, :, None], y, ValueError, "dim 3"),
        "strings": (
            np.array([["a", "b"]] * len(y)),
            y,
            ValueError,
            "could not convert|dtype",
        ),
        "y_too_short": (X, y[:-1], ValueError, "inconsistent numbers of samples"),
        "continuous_y": (
            X,
            np.linspace(0, 1, len(y)),
            ValueError,
            "Unknown label type",
        ),
        "sample_weight_negative": (
            X,
            y,
            ValueError,
            "Negative values in data passed to `sample_weight`",
        ),
        "sample_weight_wrong_length": (
            X,
            y,
            ValueError,
            r"sample_weight.shape == \(\d+,\), expected",
        ),
        "sample_weight_nan": (X, y, ValueError, "NaN"),
    }


_BAD_WEIGHTS = {
    "sample_weight_negative": lambda n: np.r_[-1.0, np.ones(n - 1)],
    "sample_weight_wrong_length": lambda n: np.ones(n + 1),
    "sample_weight_nan": lambda n: np.r_[np.nan, np.ones(n - 1)],
}


@pytest.mark.parametrize(
    "case",
    list(_bad_inputs(np.zeros((4, 2)), np.array([0, 1, 0, 1]))),
)
@pytest.mark.parametrize("name", DEFAULTS)
def test_bad_input_at_fit_gets_a_clear_sklearn_error(name, case, data):
    X, y = data
    X_bad, y_bad, error, message = _bad_inputs(X, y)[case]
    kwargs = {}
    if case in _BAD_WEIGHTS:
        kwargs["sample_weight"] = _BAD_WEIGHTS[case](len(y))
    with pytest.raises(error, match=message):
        DEFAULTS[name]().fit(X_bad, y_bad, **kwargs)


@pytest.fixture(scope="module")
def fitted_defaults():
    X, y = make_classification(
        n_samples=60, n_features=4, n_informative=3, n_redundant=0, random_state=0
    )
    return {name: fit_allowing_convergence_warning(make(), X, y) for name, make in DEFAULTS.items()}, X


@pytest.mark.parametrize("name", DEFAULTS)
def test_bad_input_at_predict_gets_a_clear_sklearn_error(name, fitted_defaults):
    estimators, X = fitted_defaults
    estimator = estimators[name]
    with pytest.raises(
        ValueError, match="X has 3 features, but .* is expecting 4 features"
    ):
        estimator.predict(X[:, :3])
    Xnan = X.copy()
    Xnan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        estimator.predict_proba(Xnan)
    with pytest.raises(ValueError, match="2D array"):
        estimator.predict(X[0])
    with pytest.raises(ValueError, match="could not convert"):
        estimator.decision_function(np.full(X.shape, "x"))
    with pytest.raises(NotFittedError):
        DEFAULTS[name]().predict(X)


@pytest.mark.parametrize("name", DEFAULTS)
def test_sparse_input_is_a_clear_error_where_not_supported(name, fitted_defaults):
    import scipy.sparse

    estimators, X = fitted_defaults
    estimator = estimators[name]
    if estimator._accept_sparse:
        pytest.skip(f"{name} takes sparse input")
    assert not estimator.__sklearn_tags__().input_tags.sparse
    with pytest.raises(TypeError, match="Sparse data was passed"):
        estimator.predict(scipy.sparse.csr_matrix(X))




def test_string_labels_are_sorted_as_a_string_array_with_the_same_classes():
    """Object arrays of Python strings are sorted as a numpy string array (in C):
    the same classes, in the same order (code points, non-ASCII included), kept as
    an object array, and the same encoding; mixed or non-string objects are left
    to scikit-learn's checks as they are."""
    from skquad import QuadraticLogisticRegression
    from skquad._base import _sortable_labels

    rng = np.random.RandomState(0)
    y = np.array(["é", "Z", "a", "ab", "b"], dtype=object)[rng.randint(0, 5, 60)]
    X = rng.randn(60, 3)
    model = QuadraticLogisticRegression()
    _, y_encoded, _ = model._validate_training_data(X, y)
    expected = np.unique(y)
    assert model.classes_.dtype == object and list(model.classes_) == list(expected)
    assert all(type(label) is str for label in model.classes_)
    np.testing.assert_array_equal(y_encoded, np.searchsorted(expected, y))
    assert _sortable_labels(y).dtype.kind == "U"
    for other in (np.array([1, "a"], dtype=object), np.array([1, 2], dtype=object), y.astype(str),
                  np.array(["a", "a\0"], dtype=object)):
        assert _sortable_labels(other) is other
    _, y_encoded, _ = model._validate_training_data(X[:2], np.array(["a", "a\0"], dtype=object))
    assert len(model.classes_) == 2 and list(y_encoded) == [0, 1]
    with pytest.raises(ValueError, match="Unknown label type"):
        model._validate_training_data(X[:2], np.array([1, "a"], dtype=object))


def _regressors():
    import skquad
    from sklearn.base import is_regressor

    from _estimator_configs import SMALL_CONFIGS

    return [
        getattr(skquad, name)(**SMALL_CONFIGS[name])
        for name in skquad.__all__
        if is_regressor(getattr(skquad, name)())
    ]


def _regression_data(n=30):
    rng = np.random.RandomState(0)
    X = rng.randn(n, 3)
    return X, X[:, 0] * X[:, 1] + X[:, 2]


@pytest.mark.parametrize("estimator", _regressors(), ids=lambda e: type(e).__name__)
def test_a_polars_series_as_y_fits_every_regressor(estimator):
    """A polars Series as y crashed every regressor ('Float64' object has no
    attribute 'kind'; issue 38, item 9)."""
    pl = pytest.importorskip("polars")
    X, y = _regression_data()
    fit_allowing_convergence_warning(estimator, X, pl.Series("y", y))
    assert estimator.predict(X).shape == y.shape


@pytest.mark.parametrize("estimator", _regressors(), ids=lambda e: type(e).__name__)
def test_targets_that_overflow_float32_are_refused_naming_y(estimator):
    """float32 X with y near 1e39 (inf once cast to float32): QR blamed X, the
    SDP regressor raised "cannot convert float NaN to integer", the networks
    "Training diverged" (issue 38, item 9)."""
    X, y = _regression_data()
    with pytest.raises(ValueError, match=r"`y`.*float32"):
        estimator.fit(X.astype(np.float32), 1e39 * y)
