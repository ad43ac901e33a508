"""skquad._foundation._reporting: warnings point at the user's line; one verbose line format."""

import inspect
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skquad
from skquad._foundation._reporting import progress_line, warn_user

# A toy estimator compiled as if it were a module of skquad, so that its frames
# count as library frames, as those of the real estimators do.
_TOY_SOURCE = """
import numpy as np
from skquad._base import BaseQuadraticClassifier
from skquad._foundation._reporting import warn_user
from sklearn.exceptions import ConvergenceWarning


def _deep_inside():
    warn_user("toy did not converge", ConvergenceWarning)


class Toy(BaseQuadraticClassifier):
    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def fit(self, X, y, sample_weight=None):
        X, y, sw = self._validate_training_data(X, y, sample_weight)
        _deep_inside()
        self.mean_ = X.mean(axis=0)
        return self

    def _raw_scores(self, X):
        return (X - self.mean_).sum(axis=1)
"""
_namespace = {}
_TOY_FILE = str(Path(skquad.__file__).parent / "_toy_for_tests.py")
exec(compile(_TOY_SOURCE, _TOY_FILE, "exec"), _namespace)  # noqa: S102 - a module that looks like skquad's
Toy = _namespace["Toy"]


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    return rng.normal(size=(30, 2)), np.repeat([0, 1], 15)


def test_warning_points_at_the_users_fit_call(data):
    X, y = data
    with pytest.warns(ConvergenceWarning, match="toy did not converge") as record:
        Toy().fit(X, y)  # the user's line
    warning = record[0]
    assert warning.filename == __file__
    source, start = inspect.getsourcelines(test_warning_points_at_the_users_fit_call)
    expected = start + next(
        i for i, line in enumerate(source) if "# the user's line" in line
    )
    assert warning.lineno == expected


def test_warning_points_at_the_user_through_pipeline_and_grid_search(data):
    X, y = data
    search = GridSearchCV(
        make_pipeline(StandardScaler(), Toy()), {"toy__alpha": [1.0]}, cv=2
    )
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        search.fit(X, y)  # the user's search
    ours = [w for w in record if "toy did not converge" in str(w.message)]
    assert ours and all(w.filename == __file__ for w in ours)
    source, start = inspect.getsourcelines(
        test_warning_points_at_the_user_through_pipeline_and_grid_search
    )
    expected = start + next(
        i for i, line in enumerate(source) if "# the user's search" in line
    )
    assert {w.lineno for w in ours} == {expected}


def test_warn_user_called_from_user_code_points_at_that_line():
    with pytest.warns(UserWarning) as record:
        warn_user("plain")
    assert record[0].filename == __file__


def test_progress_line_format():
    line = progress_line(
        12, 0.123456789, 1.23456, validation_score=0.93, gap=1.2e-5, solver="SCS"
    )
    assert line == (
        "Iteration 12, loss = 0.12345679, validation score = 0.93, gap = 1.2e-05, "
        "solver = SCS, elapsed = 1.235s"
    )
    assert (
        progress_line(1, 2.0, 0.0) == "Iteration 1, loss = 2.00000000, elapsed = 0.000s"
    )
