"""scikit-learn's estimator checks for every skquad estimator, with no
expected-failure list: each estimator must pass all of them."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skquad import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
)

# Fast settings: small networks, float64 so that sample-weight equivalence
# (weights vs repeated rows, compared at rtol 1e-7) is not lost to float32
# rounding; the defaults of every other parameter are the estimators' own.
ESTIMATORS = [
    QNNClassifier(hidden_layer_sizes=(5,), dtype="float64", max_iter=100, learning_rate_init=0.01),
    RPQNNClassifier(hidden_layer_sizes=(5,), dtype="float64", max_iter=100, learning_rate_init=0.01),
    QuadraticLogisticRegression(),
    QuadraticLogisticRegression(solver="sgd", learning_rate=0.05, max_iter=50, random_state=0),
    SDPQuantizedClassifier(),
    BackpropQuantizedClassifier(n_neurons=100),
]


@parametrize_with_checks(ESTIMATORS)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
