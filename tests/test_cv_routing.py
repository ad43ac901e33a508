"""Metadata routing of ``groups`` to the splitter of every skquad CV estimator.

With routing enabled, ``fit(X, y, groups=...)`` reaches ``cv``'s ``split``:
the estimator then scores the same folds as with those folds given as a list.
Without routing, extra ``fit`` parameters are refused (LogisticRegressionCV's
rule). QuadraticLogisticRegressionCV's routing is tested with scikit-learn's
LogisticRegressionCV tests (tests/test_parity_logistic.py).
"""

import numpy as np
import pytest
from sklearn import config_context
from sklearn.datasets import make_classification
from sklearn.model_selection import GroupKFold

from skquad import (
    QuadraticLogisticRegressionCV,
    QuadraticRegressionCV,
    SDPQuantizedClassifierCV,
    SDPQuantizedRegressorCV,
)

GROUPS = np.repeat(np.arange(6), 10)


def _data(regression):
    X, y = make_classification(n_samples=60, n_features=3, n_informative=2, n_redundant=0,
                               random_state=0)
    # groups of unequal difficulty, so that the folds' scores depend on the grouping
    X[GROUPS >= 4] *= 3.0
    return X, (X[:, 0] * X[:, 1] + y if regression else y)


CASES = [
    (QuadraticRegressionCV(alphas=[0.1, 10.0], cv=GroupKFold(3)), True, "best_score_"),
    (QuadraticLogisticRegressionCV(Cs=[0.1, 10.0], cv=GroupKFold(3)), False, "scores_"),
    (SDPQuantizedClassifierCV(4, betas=2, cv=GroupKFold(3), random_state=0), False, "scores_"),
    (SDPQuantizedRegressorCV(4, betas=2, cv=GroupKFold(3), random_state=0), True, "scores_"),
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # the SDP's small-data certificate notes
@pytest.mark.parametrize("estimator, regression, attribute", CASES,
                         ids=lambda case: type(case).__name__ if hasattr(case, "fit") else "")
def test_groups_reach_the_splitter(estimator, regression, attribute):
    X, y = _data(regression)
    folds = list(GroupKFold(3).split(X, y, GROUPS))
    with config_context(enable_metadata_routing=True):
        routed = estimator.fit(X, y, groups=GROUPS)
        routed_scores = np.copy(getattr(routed, attribute))
        with pytest.raises(ValueError, match="groups"):
            estimator.fit(X, y)  # a group splitter without groups
    given = estimator.set_params(cv=folds).fit(X, y)
    np.testing.assert_array_equal(routed_scores, getattr(given, attribute))


@pytest.mark.parametrize("estimator, regression, attribute", CASES[:1] + CASES[2:3],
                         ids=lambda case: type(case).__name__ if hasattr(case, "fit") else "")
def test_extra_params_need_routing(estimator, regression, attribute):
    X, y = _data(regression)
    with config_context(enable_metadata_routing=False):
        with pytest.raises(ValueError, match="only supported if enable_metadata_routing=True"):
            estimator.fit(X, y, groups=GROUPS)
