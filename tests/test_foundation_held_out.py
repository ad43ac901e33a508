"""The held-out choice of a penalty (skquad._foundation._held_out): enough rows, Breiman's rule."""

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skquad._foundation._held_out import (
    MIN_HELD_OUT_ROWS,
    MIN_ROWS,
    SELECTION_RULES,
    HeldOutErrors,
    HeldOutMisclassifications,
    can_hold_out,
    held_out_folds,
    one_standard_error_choice,
    smallest_error_choice,
)


@pytest.mark.parametrize("rows, folds", [(38, 5), (200, 3), (499, 2), (500, 1), (10**6, 1), (0, 5)])
def test_folds_are_held_out_until_enough_rows_are_scored(rows, folds):
    assert held_out_folds(rows, 5) == folds
    scored = held_out_folds(rows, 5) * rows / 5
    assert scored >= min(rows, MIN_HELD_OUT_ROWS)


def test_breimans_rule_takes_the_simplest_candidate_within_one_standard_error():
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((40, 1))
    # candidate 2 is better by far less than the noise of 40 rows: the first is taken
    jitter = 0.5 * rng.standard_normal((40, 2))
    jitter -= jitter.mean(axis=0)
    # means 1, 1.1 and 0.95; the paired differences' standard error is about 0.5 / sqrt(40) = 0.08
    close = np.hstack([1.0 + noise, 1.1 + noise + jitter[:, :1], 0.95 + noise + jitter[:, 1:]])
    assert smallest_error_choice(close) == 2
    assert one_standard_error_choice(close) == 0
    # better by much more than its standard error: it is taken
    clear = np.hstack([2.0 + noise, 1.0 + noise + 0.01 * rng.standard_normal((40, 1))])
    assert one_standard_error_choice(clear) == 1


class _Constant:
    def __init__(self, value):
        self.value = value

    def predict(self, X):
        return np.full((len(X), 2), self.value)


def test_errors_are_per_row_weighted_and_over_each_outputs_variance():
    y = np.array([[0.0, 0.0], [2.0, 20.0]])
    scorer = HeldOutErrors(y, np.ones(2))  # variances 1 and 100
    for value in (0.0, 1.0):  # fold 1: two candidates
        scorer(_Constant(value), np.zeros((2, 1)), y, sample_weight=np.array([1.0, 3.0]))
    errors = scorer.by_candidate(2)
    np.testing.assert_allclose(errors[:, 0], [0.0, 3.0 * (4.0 / 1 + 400.0 / 100)])
    np.testing.assert_allclose(errors[:, 1], [1.0 / 1 + 1.0 / 100, 3.0 * (1.0 / 1 + 361.0 / 100)])


def test_rows_count_as_their_weights_for_the_smallest_search():
    assert can_hold_out(np.full(MIN_ROWS // 2, 2.0))  # ten rows of weight 2: twenty rows
    assert not can_hold_out(np.ones(MIN_ROWS - 1))


@pytest.mark.parametrize("name", ["QNNRegressor", "SDPQuantizedRegressor", "QNNClassifier"])
def test_an_interrupted_search_leaves_the_model_and_the_warning_filters(name, monkeypatch):
    """A fit interrupted inside its held-out search keeps the previous model, and the
    search's warning filters are undone."""
    import warnings

    import skquad

    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 3))  # the classifiers search from 100 rows
    y = X[:, 0] * X[:, 1] + X[:, 2] + rng.standard_normal(120)
    if name == "QNNClassifier":
        y = (y > 0).astype(int)
    options = {"n_neurons": 30} if name == "SDPQuantizedRegressor" else {"hidden_layer_sizes": (4,)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # Adam's max_iter: not this test's
        model = getattr(skquad, name)(random_state=0, **options).fit(X, y)
    before, state = model.predict(X), vars(model).copy()
    calls = []

    def interrupted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    scorer = HeldOutMisclassifications if name == "QNNClassifier" else HeldOutErrors
    original = scorer.add
    monkeypatch.setattr(scorer, "add", interrupted)
    filters = list(warnings.filters)
    with pytest.raises(KeyboardInterrupt):
        model.fit(2.0 * X, y)
    assert len(calls) == 2 and warnings.filters == filters
    np.testing.assert_array_equal(model.predict(X), before)
    assert vars(model).keys() == state.keys()


def test_the_cv_estimators_rule_is_glmnets_lambda_1se():
    # 3 folds' errors of 4 candidates, the most penalised first; each fold shifts all alike
    folds = np.array([-0.2, 0.0, 0.2])[:, None]
    errors = np.array([3.0, 1.05, 1.0, 1.02]) + folds
    assert SELECTION_RULES["best"](errors) == 2
    # the best's standard error over the folds, 0.2 / sqrt(3): 1.05 is within it
    assert SELECTION_RULES["one_standard_error"](errors) == 1
    # paired, the folds' common shift cancels and nothing is within noise of the best
    assert one_standard_error_choice(errors) == 2


def test_the_preferred_candidate_is_left_only_beyond_one_standard_error():
    from skquad._foundation._held_out import preferred_within_one_standard_error

    rng = np.random.default_rng(0)
    noise = rng.standard_normal((400, 1))
    spread = 0.5 * np.resize([1.0, -1.0], (400, 1))  # the rows' differences: standard error 0.025
    # candidate 1 better than the preferred 0 by 0.01 on average: noise on these rows
    close = np.hstack([noise, noise - 0.01 + spread])
    assert preferred_within_one_standard_error(close, preferred=0) == 0
    # better by 0.1: evidence
    far = np.hstack([noise, noise - 0.1 + spread])
    assert preferred_within_one_standard_error(far, preferred=0) == 1
    assert preferred_within_one_standard_error(far, preferred=1) == 1


def test_a_label_indicator_row_is_misclassified_where_any_label_is():
    scorer = HeldOutMisclassifications()
    truth = np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0]])
    scorer.add(truth, np.array([[1, 0, 1], [0, 1, 1], [0, 0, 0]]), np.array([1.0, 2.0, 3.0]))
    scorer.add(np.array([0, 1, 2]), np.array([0, 2, 2]))
    np.testing.assert_array_equal(scorer.errors[0], [0.0, 2.0, 3.0])
    np.testing.assert_array_equal(scorer.errors[1], [0.0, 1.0, 0.0])
