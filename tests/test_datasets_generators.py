"""skquad/datasets/_generators.py: the papers' data generators."""

import numpy as np
import pytest
from sklearn.discriminant_analysis import QuadraticDiscriminantAnalysis
from sklearn.linear_model import LogisticRegression
from sklearn.utils._param_validation import InvalidParameterError

from skquad.datasets import make_nonlinear_clusters, make_planted_quantized, make_xor


# ----------------------------------------------------------------- generators
def test_make_xor():
    X, y = make_xor()
    assert X.shape == (4, 2)
    np.testing.assert_array_equal(y, np.where(X[:, 0] * X[:, 1] < 0, 1, -1))
    X01, y01 = make_xor("binary")
    np.testing.assert_array_equal(X01, (X + 1) / 2)
    np.testing.assert_array_equal(y01, np.logical_xor(X01[:, 0], X01[:, 1]))
    # Not linearly separable: a linear model cannot get all four right.
    assert LogisticRegression().fit(X, y).score(X, y) < 1.0
    with pytest.raises(InvalidParameterError):
        make_xor("unary")


def test_make_nonlinear_clusters_matches_paper_table():
    X_train, X_test, y_train, y_test = make_nonlinear_clusters(random_state=0)
    assert X_train.shape == (12000, 2) and X_test.shape == (3000, 2)
    np.testing.assert_array_equal(np.bincount(y_train), [2000] * 6)
    np.testing.assert_array_equal(np.bincount(y_test), [500] * 6)
    means = [(-16, 0), (-8, 0), (0, 0), (0, 10), (-8, 10), (-16, 10)]
    correlations = [-0.3, 0.0, 0.3, -0.3, 0.0, 0.3]
    for label, (mean, correlation) in enumerate(zip(means, correlations)):
        cluster = X_train[y_train == label]
        np.testing.assert_allclose(cluster.mean(axis=0), mean, atol=0.08)
        np.testing.assert_allclose(
            np.cov(cluster.T), [[1, correlation], [correlation, 1]], atol=0.08
        )
    # Rows are shuffled, not grouped by class.
    assert len(np.unique(y_train[:30])) > 1
    # Quadratic boundaries separate it (the paper reports 99.97 % for a QNN).
    qda = QuadraticDiscriminantAnalysis().fit(X_train, y_train)
    assert qda.score(X_test, y_test) > 0.995


def test_make_nonlinear_clusters_is_reproducible():
    first = make_nonlinear_clusters(50, 10, random_state=3)
    second = make_nonlinear_clusters(50, 10, random_state=3)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    X_train, X_test, y_train, y_test = make_nonlinear_clusters(5, 0, random_state=1)
    assert X_test.shape == (0, 2) and y_test.shape == (0,)
    with pytest.raises(InvalidParameterError):
        make_nonlinear_clusters(0)


def test_make_planted_quantized_is_a_planted_network():
    X, y, planted = make_planted_quantized(random_state=0, return_planted=True)
    assert X.shape == (100, 20) and y.dtype == np.int64
    assert planted.U.shape == planted.V.shape == (10, 20)
    assert planted.U.dtype == np.int8 and set(np.unique(planted.U)) <= {-1, 1}
    assert np.all((planted.alpha >= 0.5) & (planted.alpha <= 1.5))
    # f(x) = sum_j (x.u_j)(x.v_j) alpha_j = x^T Z x, and the labels are its sign.
    network = np.array(
        [sum(a * (x @ u) * (x @ v) for u, v, a in zip(planted.U, planted.V, planted.alpha)) for x in X]
    )
    np.testing.assert_allclose(network, planted.scores)
    np.testing.assert_allclose(np.einsum("ij,jk,ik->i", X, planted.Z, X), network)
    np.testing.assert_array_equal(y, np.where(network >= 0, 1, -1))
    assert 10 < (y == 1).sum() < 90
    # X is standard Gaussian.
    big_X, _ = make_planted_quantized(5000, 5, random_state=1)
    np.testing.assert_allclose(big_X.mean(axis=0), 0, atol=0.05)
    np.testing.assert_allclose(big_X.std(axis=0), 1, atol=0.05)


def test_make_planted_quantized_noise_and_continuous_target():
    X, values, planted = make_planted_quantized(
        target="continuous", random_state=0, return_planted=True
    )
    np.testing.assert_allclose(values, planted.scores)
    _, noisy, planted_noisy = make_planted_quantized(
        n_samples=2000, noise=0.5, target="continuous", random_state=0, return_planted=True
    )
    residual = noisy - planted_noisy.scores
    assert residual.std() == pytest.approx(0.5 * planted_noisy.scores.std(), rel=0.1)
    _, labels, planted_labels = make_planted_quantized(
        n_samples=2000, noise=0.5, random_state=0, return_planted=True
    )
    flipped = np.mean(labels != np.where(planted_labels.scores >= 0, 1, -1))
    assert 0.05 < flipped < 0.4
    a = make_planted_quantized(random_state=7)
    b = make_planted_quantized(random_state=7)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(InvalidParameterError):
        make_planted_quantized(noise=-1)
    with pytest.raises(InvalidParameterError):
        make_planted_quantized(target="labels")
