"""skquad/benchmarks/_size.py: the parameter count of the benchmark's tables."""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression
from skquad.benchmarks._size import parameter_count


def test_counts_free_parameters_and_gives_nan_where_unknown():
    X, y = make_classification(n_samples=60, n_features=3, n_informative=3, n_redundant=0, random_state=0)
    # a symmetric Q counts d(d+1)/2 free entries, then w and b
    qlr = make_pipeline(StandardScaler(), QuadraticLogisticRegression()).fit(X, y)
    assert parameter_count(qlr) == 3 * 4 / 2 + 3 + 1
    assert parameter_count(LogisticRegression().fit(X, y)) == 3 + 1
    # a tree ensemble is not counted: NaN, not a partial count
    assert np.isnan(parameter_count(RandomForestClassifier(n_estimators=2, random_state=0).fit(X, y)))
