"""Property-based tests of the public estimators (Hypothesis).

Random shapes, float32/float64, C/F layouts, scales from 1e-200 to 1e200,
integer/string/boolean/float labels and sample weights. For every input an
estimator gives either a clear error (a ``ValueError`` with a message) or a
finite model: finite fitted arrays and finite predictions on its own
training data, probabilities that are probabilities. Where the fit is
deterministic in the data, the model does not depend on the order of the rows,
and duplicating every row with half its weight gives the same model.

The example budget comes from the Hypothesis profile (see ``conftest.py``):
``ci`` (the default) keeps this module to a few seconds per estimator,
``SKQUAD_HYPOTHESIS_PROFILE=nightly`` explores many more inputs.
"""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from sklearn.base import clone, is_classifier
from sklearn.exceptions import ConvergenceWarning

from skquad import (
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    QNNClassifier,
    QNNRegressor,
    QuadraticLogisticRegression,
    QuadraticRegression,
    RPQNNClassifier,
    RPQNNRegressor,
    SDPQuantizedClassifier,
    SDPQuantizedRegressor,
)

# Small settings: a fit takes tens of milliseconds.
_SDP = dict(n_neurons=10, max_iter=50, tol=1e-3, random_state=0)
_BACKPROP = dict(n_neurons=10, max_iter=10, random_state=0)
_NETWORK = dict(hidden_layer_sizes=(4,), solver="lbfgs", max_iter=20, random_state=0)
ESTIMATORS = [
    QuadraticLogisticRegression(max_iter=50, random_state=0),
    QuadraticRegression(),
    QNNClassifier(**_NETWORK),
    QNNRegressor(**_NETWORK),
    RPQNNClassifier(**_NETWORK),
    RPQNNRegressor(**_NETWORK),
    SDPQuantizedClassifier(**_SDP),
    SDPQuantizedRegressor(**_SDP),
    BackpropQuantizedClassifier(**_BACKPROP),
    BackpropQuantizedRegressor(**_BACKPROP),
]

# Deterministic in the data: the rows are put in a canonical order with exact
# duplicates merged (their weights summed; w/2 + w/2 == w exactly) before any
# arithmetic, so a permutation or a duplication with halved weights of
# distinct rows is the very same computation: the models must be equal bit
# for bit. (Rows that are already duplicates, e.g. float32 subnormals that
# round to one value, have their weights summed in another order: equal up
# to rounding only, and the SDP's sampled signs may then flip.)
EXACTLY_INVARIANT = [
    QuadraticLogisticRegression(max_iter=50, random_state=0),
    SDPQuantizedClassifier(**_SDP),
    SDPQuantizedRegressor(**_SDP),
]


def _ids(estimators):
    return [
        f"{type(e).__name__}" + ("" if i == 0 else f"-{i}")
        for i, e in enumerate(estimators)
    ]


_LABEL_KINDS = {
    "int": lambda codes: codes * 3 - 1,
    "str": lambda codes: np.array(["no", "yes", "maybe"])[codes],
    "bool": lambda codes: codes.astype(bool),
    "float": lambda codes: codes * 0.5 + 0.25,
}


@st.composite
def problems(draw, classifier):
    """``(X, y, sample_weight)`` with random shape, scale, dtype, layout, labels and weights."""
    n_samples = draw(st.integers(4, 24))
    n_features = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    log_scale = draw(st.integers(-200, 200) | st.sampled_from([-200, -30, -8, 0, 8, 30, 200]))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    order = draw(st.sampled_from("CF"))
    rng = np.random.RandomState(seed)
    base = rng.randn(n_samples, n_features)
    with np.errstate(over="ignore", under="ignore"):
        # float32 cannot hold beyond ~3e38 (inf: validation must refuse it)
        # nor below ~1e-45 (zeros: constant columns must be handled).
        X = np.asarray(base * 10.0**log_scale, dtype=dtype, order=order)
    signal = base[:, 0] + 0.5 * rng.randn(n_samples)
    if classifier:
        kind = draw(st.sampled_from(sorted(_LABEL_KINDS)))
        n_classes = 2 if kind == "bool" else draw(st.integers(2, 3))
        edges = np.quantile(signal, np.linspace(0, 1, n_classes + 1)[1:-1])
        y = _LABEL_KINDS[kind](np.searchsorted(edges, signal))
    else:
        y = signal * 10.0 ** draw(st.sampled_from([-8, 0, 8]))
    weighted = draw(st.booleans())
    sample_weight = rng.uniform(0.5, 2.0, n_samples) if weighted else None
    return X, y, sample_weight


def _fit_or_clear_error(estimator, X, y, sample_weight):
    """The fitted estimator, or None after a ValueError with a message."""
    try:
        with warnings.catch_warnings():
            # Convergence and advice warnings of tiny fits are allowed here;
            # their own tests assert them.
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", UserWarning)
            return clone(estimator).fit(X, y, sample_weight=sample_weight)
    except ValueError as exc:
        assert str(exc).strip(), f"{type(estimator).__name__} raised an empty ValueError"
        return None


def _predictions(model, X):
    if is_classifier(model):
        return model.decision_function(X)
    return model.predict(X)


def _check_finite_model(model, X):
    for name, value in vars(model).items():
        if name.endswith("_") and isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert not np.isnan(value).any(), f"{type(model).__name__}.{name} holds NaN"
    scores = _predictions(model, X)
    assert np.all(np.isfinite(scores)), f"{type(model).__name__}: non-finite predictions"
    if is_classifier(model):
        proba = model.predict_proba(X)
        assert np.all((proba >= 0) & (proba <= 1))
        # Each of the K probabilities is rounded once in its dtype (float32 for
        # float32 input) and the normalization once more: |sum - 1| <= (K + 1) eps.
        eps = np.finfo(proba.dtype).eps
        np.testing.assert_allclose(
            proba.sum(axis=1), 1.0, rtol=0, atol=(proba.shape[1] + 1) * eps
        )
        assert np.isin(model.predict(X), model.classes_).all()


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=_ids(ESTIMATORS))
def test_any_input_gives_a_clear_error_or_a_finite_model(estimator):
    @given(problem=problems(is_classifier(estimator)))
    def check(problem):
        X, y, sample_weight = problem
        model = _fit_or_clear_error(estimator, X, y, sample_weight)
        if model is not None:
            _check_finite_model(model, X)

    check()


@pytest.mark.parametrize("estimator", EXACTLY_INVARIANT, ids=_ids(EXACTLY_INVARIANT))
def test_row_order_and_halved_duplicates_give_the_same_model(estimator):
    @given(problem=problems(is_classifier(estimator)), data=st.data())
    def check(problem, data):
        X, y, sample_weight = problem
        assume(np.unique(X, axis=0).shape[0] == X.shape[0])  # distinct rows, see above
        model = _fit_or_clear_error(estimator, X, y, sample_weight)
        if model is None:
            return
        expected = _predictions(model, X)
        weight = np.ones(X.shape[0]) if sample_weight is None else sample_weight
        permutation = np.asarray(data.draw(st.permutations(range(X.shape[0]))))
        shuffled = _fit_or_clear_error(
            estimator, X[permutation], y[permutation], weight[permutation]
        )
        doubled = _fit_or_clear_error(
            estimator, np.concatenate([X, X]), np.concatenate([y, y]),
            np.concatenate([weight, weight]) / 2,
        )
        for twin in (shuffled, doubled):
            assert twin is not None, "the same problem was refused when reordered"
            np.testing.assert_array_equal(_predictions(twin, X), expected)

    check()
