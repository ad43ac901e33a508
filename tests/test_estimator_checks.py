"""scikit-learn's estimator checks on the estimators as users build them.

Every estimator's default constructor, and the full-batch variants (QNN and
RPQNN with ``solver="lbfgs"``, the low-rank QLR), must pass every check, with
no expected-failure list. (scikit-learn allows stochastic solvers to fail the
sample-weight equivalence check; ours pass it because their default batch,
``min(200, n_samples)``, covers the checks' small data sets whole.)
"""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skquad import (
    BackpropQuantizedClassifier,
    BackpropQuantizedRegressor,
    QNNClassifier,
    QNNRegressor,
    QuadraticLogisticRegression,
    QuadraticRegression,
    QuadraticRegressionCV,
    RPQNNClassifier,
    RPQNNRegressor,
    SDPQuantizedClassifier,
    SDPQuantizedRegressor,
)

ESTIMATORS = [
    QuadraticLogisticRegression(),
    QuadraticLogisticRegression(rank=2),
    QNNClassifier(),
    QNNClassifier(solver="lbfgs"),
    QNNRegressor(),
    QNNRegressor(solver="lbfgs"),
    RPQNNClassifier(),
    RPQNNClassifier(solver="lbfgs"),
    RPQNNRegressor(),
    RPQNNRegressor(solver="lbfgs"),
    SDPQuantizedClassifier(),
    BackpropQuantizedClassifier(),
    QuadraticRegression(),
    QuadraticRegression(solver="cg"),
    QuadraticRegression(solver="kernel"),
    QuadraticRegressionCV(),
    QuadraticRegressionCV(cv=3),
    SDPQuantizedRegressor(),
    BackpropQuantizedRegressor(),
    QNNRegressor(),
    QNNRegressor(solver="lbfgs"),
    RPQNNRegressor(),
    RPQNNRegressor(solver="lbfgs"),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
