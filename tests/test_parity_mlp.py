"""scikit-learn's own MLP tests, run against the quadratic networks.

Adapted from ``sklearn/neural_network/tests/test_mlp.py`` (scikit-learn 1.9):
each test below names its source. ``MLPClassifier`` becomes QNNClassifier and
RPQNNClassifier, ``MLPRegressor`` QNNRegressor and RPQNNRegressor, with the same
data, parameters and assertions. Left out, as the issue allows: tests that read
MLP's private internals (``test_fit`` and ``test_gradient`` set and read
``coefs_`` and ``_backprop``; ``test_learning_rate_warmstart`` reads
``_optimizer``) and assertions of exact numbers that belong to a network of
linear neurons. Where a test's assertion reads a private attribute next to
public ones (``_no_improvement_count``, ``_optimizer.learning_rate``), the
public assertions are kept and the private one is dropped (said in place).
Where a loop over activations or epochs was shortened to keep the suite fast,
the comment says so.
"""

import re
import warnings

import joblib
import numpy as np
import pytest
from scipy import sparse
from sklearn.datasets import (
    load_digits,
    load_iris,
    make_classification,
    make_multilabel_classification,
    make_regression,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import PoissonRegressor
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import MinMaxScaler, scale

from skquad import QNNClassifier, QNNRegressor, RPQNNClassifier, RPQNNRegressor

CLASSIFIERS = [QNNClassifier, RPQNNClassifier]
REGRESSORS = [QNNRegressor, RPQNNRegressor]
ACTIVATION_TYPES = ["identity", "logistic", "tanh", "relu"]

X_digits, y_digits = load_digits(n_class=3, return_X_y=True)
X_digits_multi = MinMaxScaler().fit_transform(X_digits[:200])
y_digits_multi = y_digits[:200]
X_digits, y_digits = load_digits(n_class=2, return_X_y=True)
X_digits_binary = MinMaxScaler().fit_transform(X_digits[:200])
y_digits_binary = y_digits[:200]
classification_datasets = [(X_digits_multi, y_digits_multi), (X_digits_binary, y_digits_binary)]

X_reg, y_reg = make_regression(n_samples=200, n_features=10, bias=20.0, noise=100.0, random_state=7)
y_reg = scale(y_reg)

X_iris, y_iris = load_iris(return_X_y=True)


# --------------------------------------------------------------- classification
@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_alpha(Classifier):
    # test_mlp.py::test_alpha: a larger alpha gives weights closer to zero.
    X, y = X_digits_binary[:100], y_digits_binary[:100]
    sums = []
    for alpha in (0, 1):
        mlp = Classifier(hidden_layer_sizes=10, alpha=alpha, random_state=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mlp.fit(X, y)
        sums.append(np.array([np.abs(mlp.coefs_[0]).sum(), np.abs(mlp.coefs_[1]).sum()]))
    assert (sums[0] > sums[1]).all()


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
@pytest.mark.parametrize("X,y", classification_datasets, ids=["multiclass", "binary"])
def test_lbfgs_classification(Classifier, X, y):
    # test_mlp.py::test_lbfgs_classification
    X_train, y_train, X_test = X[:150], y[:150], X[150:]
    expected_shape_dtype = (X_test.shape[0], y_train.dtype.kind)
    for activation in ACTIVATION_TYPES:
        mlp = Classifier(solver="lbfgs", hidden_layer_sizes=50, max_iter=150, shuffle=True,
                         random_state=1, activation=activation)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mlp.fit(X_train, y_train)
        y_predict = mlp.predict(X_test)
        assert mlp.score(X_train, y_train) > 0.95
        assert (y_predict.shape[0], y_predict.dtype.kind) == expected_shape_dtype


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
@pytest.mark.parametrize("X,y", classification_datasets, ids=["multiclass", "binary"])
def test_lbfgs_classification_maxfun(Classifier, X, y):
    # test_mlp.py::test_lbfgs_classification_maxfun, with tol=0.0 as in its
    # regression twin: on the binary digits the quadratic network with an
    # identity activation reaches scipy's gtol=1e-4 within 10 evaluations
    # (loss 1.2e-4, MLPClassifier 3.9e-4), a true convergence that rightly
    # does not warn; tol=0.0 makes max_fun the only limit, as the test intends.
    max_fun = 10
    for activation in ACTIVATION_TYPES:
        mlp = Classifier(solver="lbfgs", hidden_layer_sizes=50, max_iter=150, max_fun=max_fun, tol=0.0,
                         shuffle=True, random_state=1, activation=activation)
        with pytest.warns(ConvergenceWarning):
            mlp.fit(X, y)
            assert max_fun >= mlp.n_iter_


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_multilabel_classification(Classifier):
    # test_mlp.py::test_multilabel_classification
    X, y = make_multilabel_classification(n_samples=50, random_state=0, return_indicator=True)
    mlp = Classifier(solver="lbfgs", hidden_layer_sizes=50, alpha=1e-5, max_iter=150, random_state=0,
                     activation="logistic", learning_rate_init=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y)
    assert mlp.score(X, y) > 0.97

    # test partial fit method
    mlp = Classifier(solver="sgd", hidden_layer_sizes=50, max_iter=150, random_state=0,
                     activation="logistic", alpha=1e-5, learning_rate_init=0.2)
    for _ in range(100):
        mlp.partial_fit(X, y, classes=[0, 1, 2, 3, 4])
    assert mlp.score(X, y) > 0.9

    # early stopping works on multilabel y (its split is not stratified)
    mlp = Classifier(early_stopping=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y).predict(X)


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_partial_fit_classes_error(Classifier):
    # test_mlp.py::test_partial_fit_classes_error
    X, y = [[3, 2]], [0]
    clf = Classifier(solver="sgd")
    clf.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ValueError):
        clf.partial_fit(X, y, classes=[1, 2])


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_partial_fit_classification(Classifier):
    # test_mlp.py::test_partial_fit_classification: partial_fit gives fit's result.
    for X, y in classification_datasets:
        mlp = Classifier(solver="sgd", max_iter=100, random_state=1, tol=0, alpha=1e-5, learning_rate_init=0.2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mlp.fit(X, y)
        pred1 = mlp.predict(X)
        mlp = Classifier(solver="sgd", random_state=1, alpha=1e-5, learning_rate_init=0.2)
        for _ in range(100):
            mlp.partial_fit(X, y, classes=np.unique(y))
        pred2 = mlp.predict(X)
        np.testing.assert_array_equal(pred1, pred2)
        assert mlp.score(X, y) > 0.95


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_partial_fit_unseen_classes(Classifier):
    # test_mlp.py::test_partial_fit_unseen_classes
    clf = Classifier(random_state=0)
    clf.partial_fit([[1], [2], [3]], ["a", "b", "c"], classes=["a", "b", "c", "d"])
    clf.partial_fit([[4]], ["d"])
    assert clf.score([[1], [2], [3], [4]], ["a", "b", "c", "d"]) > 0


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_partial_fit_errors(Classifier):
    # test_mlp.py::test_partial_fit_errors
    X, y = [[3, 2], [1, 6]], [1, 0]
    with pytest.raises(ValueError):
        Classifier(solver="sgd").partial_fit(X, y, classes=[2])
    assert not hasattr(Classifier(solver="lbfgs"), "partial_fit")


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_predict_proba_binary(Classifier):
    # test_mlp.py::test_predict_proba_binary
    X, y = X_digits_binary[:50], y_digits_binary[:50]
    clf = Classifier(hidden_layer_sizes=5, activation="logistic", random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    y_proba = clf.predict_proba(X)
    y_log_proba = clf.predict_log_proba(X)
    assert y_proba.shape == (y.shape[0], 2)
    np.testing.assert_array_equal(y_proba.argmax(axis=1), y_log_proba.argmax(axis=1))
    np.testing.assert_allclose(y_log_proba, np.log(y_proba))
    assert roc_auc_score(y, y_proba[:, 1]) == 1.0


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_predict_proba_multiclass(Classifier):
    # test_mlp.py::test_predict_proba_multiclass
    X, y = X_digits_multi[:10], y_digits_multi[:10]
    clf = Classifier(hidden_layer_sizes=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    y_proba = clf.predict_proba(X)
    y_log_proba = clf.predict_log_proba(X)
    assert y_proba.shape == (y.shape[0], np.unique(y).size)
    np.testing.assert_array_equal(y_proba.argmax(axis=1), y_log_proba.argmax(axis=1))
    np.testing.assert_allclose(y_log_proba, np.log(y_proba))


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_predict_proba_multilabel(Classifier):
    # test_mlp.py::test_predict_proba_multilabel: one sigmoid per label, not a softmax.
    X, Y = make_multilabel_classification(n_samples=50, random_state=0, return_indicator=True)
    n_samples, n_classes = Y.shape
    clf = Classifier(solver="lbfgs", hidden_layer_sizes=30, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, Y)
    y_proba = clf.predict_proba(X)
    assert y_proba.shape == (n_samples, n_classes)
    np.testing.assert_array_equal(y_proba > 0.5, Y)
    y_log_proba = clf.predict_log_proba(X)
    assert (y_proba.sum(1) - 1).dot(y_proba.sum(1) - 1) > 1e-10
    np.testing.assert_array_equal(y_proba.argmax(axis=1), y_log_proba.argmax(axis=1))
    np.testing.assert_allclose(y_log_proba, np.log(y_proba))
    # predict returns the indicator matrix, as MLPClassifier's
    np.testing.assert_array_equal(clf.predict(X), Y)


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_sparse_matrices(Classifier):
    # test_mlp.py::test_sparse_matrices (one CSR container)
    X, y = X_digits_binary[:50], y_digits_binary[:50]
    X_sparse = sparse.csr_matrix(X)
    mlp = Classifier(solver="lbfgs", hidden_layer_sizes=15, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y)
        pred1 = mlp.predict(X)
        mlp.fit(X_sparse, y)
    pred2 = mlp.predict(X_sparse)
    np.testing.assert_almost_equal(pred1, pred2)
    np.testing.assert_array_equal(mlp.predict(X), mlp.predict(X_sparse))


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_tolerance(Classifier):
    # test_mlp.py::test_tolerance
    clf = Classifier(tol=0.5, max_iter=3000, solver="sgd")
    clf.fit([[3, 2], [1, 6]], [1, 0])
    assert clf.max_iter > clf.n_iter_


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_verbose_sgd(Classifier, capsys):
    # test_mlp.py::test_verbose_sgd
    X, y = [[3, 2], [1, 6]], [1, 0]
    clf = Classifier(solver="sgd", max_iter=2, verbose=10, hidden_layer_sizes=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
    clf.partial_fit(X, y)
    out, _ = capsys.readouterr()
    assert "Iteration" in out


@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
def test_early_stopping(Estimator):
    # test_mlp.py::test_early_stopping
    X, y = X_digits_binary[:100], y_digits_binary[:100]
    tol = 0.2
    mlp = Estimator(tol=tol, max_iter=3000, solver="sgd", early_stopping=True)
    mlp.fit(X, y)
    assert mlp.max_iter > mlp.n_iter_
    assert mlp.best_loss_ is None
    assert isinstance(mlp.validation_scores_, list)
    valid_scores = mlp.validation_scores_
    best_valid_score = mlp.best_validation_score_
    assert max(valid_scores) == best_valid_score
    assert best_valid_score + tol > valid_scores[-2]
    assert best_valid_score + tol > valid_scores[-1]

    mlp = Estimator(tol=tol, max_iter=3000, solver="sgd", early_stopping=False)
    mlp.fit(X, y)
    assert mlp.validation_scores_ is None
    assert mlp.best_validation_score_ is None
    assert mlp.best_loss_ is not None


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_adaptive_learning_rate(Classifier):
    # test_mlp.py::test_adaptive_learning_rate (the learning rate itself is
    # MLP's private _optimizer.learning_rate: only the public assertion is kept)
    clf = Classifier(tol=0.5, max_iter=3000, solver="sgd", learning_rate="adaptive")
    clf.fit([[3, 2], [1, 6]], [1, 0])
    assert clf.max_iter > clf.n_iter_


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_warm_start(Classifier):
    # test_mlp.py::test_warm_start
    X, y = X_iris, y_iris
    y_2classes = np.array([0] * 75 + [1] * 75)
    y_3classes = np.array([0] * 40 + [1] * 40 + [2] * 70)
    y_3classes_alt = np.array([0] * 50 + [1] * 50 + [3] * 50)
    y_4classes = np.array([0] * 37 + [1] * 37 + [2] * 38 + [3] * 38)
    y_5classes = np.array([0] * 30 + [1] * 30 + [2] * 30 + [3] * 30 + [4] * 30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf = Classifier(hidden_layer_sizes=2, solver="lbfgs", warm_start=True, random_state=42, tol=1e-2).fit(X, y)
        clf.fit(X, y)
        clf.fit(X, y_3classes)
        for y_i in (y_2classes, y_3classes_alt, y_4classes, y_5classes):
            clf = Classifier(hidden_layer_sizes=2, solver="lbfgs", warm_start=True, random_state=42,
                             tol=1e-2).fit(X, y)
            message = (
                "warm_start can only be used where `y` has the same classes as in the previous "
                "call to fit. Previously got [0 1 2], `y` has %s" % np.unique(y_i)
            )
            with pytest.raises(ValueError, match=re.escape(message)):
                clf.fit(X, y_i)


@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
def test_warm_start_full_iteration(Estimator):
    # test_mlp.py::test_warm_start_full_iteration: n_iter_ counts each fit's epochs.
    max_iter = 3
    clf = Estimator(hidden_layer_sizes=2, solver="sgd", warm_start=True, max_iter=max_iter)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_iris, y_iris)
        assert max_iter == clf.n_iter_
        clf.fit(X_iris, y_iris)
        assert max_iter == clf.n_iter_


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_n_iter_no_change(Classifier):
    # test_mlp.py::test_n_iter_no_change (MLP's private _no_improvement_count
    # is not read; the public assertion is kept)
    X, y = X_digits_binary[:100], y_digits_binary[:100]
    for n_iter_no_change in [2, 5, 10, 50, 100]:
        clf = Classifier(tol=0.01, max_iter=3000, solver="sgd", n_iter_no_change=n_iter_no_change)
        clf.fit(X, y)
        assert 3000 > clf.n_iter_


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_n_iter_no_change_inf(Classifier):
    # test_mlp.py::test_n_iter_no_change_inf (max_iter 300 instead of 3000, to
    # stay fast; _no_improvement_count is private and not read)
    clf = Classifier(tol=1e9, max_iter=300, solver="sgd", n_iter_no_change=np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X_digits_binary[:100], y_digits_binary[:100])
    assert clf.n_iter_ == 300


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_early_stopping_stratified(Classifier):
    # test_mlp.py::test_early_stopping_stratified
    mlp = Classifier(early_stopping=True)
    with pytest.raises(ValueError, match=r"The least populated class(es)? in y (has|have) only 1 member"):
        mlp.fit([[1, 2], [2, 3], [3, 4], [4, 5]], [0, 0, 0, 1])


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_mlp_early_stopping_string_labels(Classifier):
    # test_mlp.py::test_mlp_early_stopping_string_labels
    X, y = make_classification(n_samples=200, n_features=10, n_classes=3, n_informative=5, random_state=42)
    y = np.array(["class_a", "class_b", "class_c"], dtype=object)[y]
    mlp = Classifier(early_stopping=True, max_iter=50, random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y)
    assert mlp.validation_scores_ is not None
    assert len(mlp.validation_scores_) == mlp.n_iter_
    assert np.isfinite(mlp.validation_scores_).all()


@pytest.mark.parametrize("Classifier", CLASSIFIERS)
def test_mlp_classifier_dtypes_casting(Classifier):
    # test_mlp.py::test_mlp_classifier_dtypes_casting
    def fitted(X):
        mlp = Classifier(alpha=1e-5, hidden_layer_sizes=(5, 3), random_state=1, max_iter=100, tol=1e-1)
        return mlp.fit(X, y_digits[:300])

    mlp_64, mlp_32 = fitted(X_digits[:300]), fitted(X_digits[:300].astype(np.float32))
    np.testing.assert_array_equal(mlp_64.predict(X_digits[300:]), mlp_32.predict(X_digits[300:].astype(np.float32)))
    np.testing.assert_allclose(
        mlp_64.predict_proba(X_digits[300:]), mlp_32.predict_proba(X_digits[300:].astype(np.float32)), rtol=1e-2
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
def test_mlp_param_dtypes(dtype, Estimator):
    # test_mlp.py::test_mlp_param_dtypes: the input dtype is the weights' and predictions'.
    X, y = X_digits.astype(dtype), y_digits
    mlp = Estimator(alpha=1e-5, hidden_layer_sizes=(5, 3), random_state=1, max_iter=50, tol=1e-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X[:300], y[:300])
    pred = mlp.predict(X[300:])
    assert all(intercept.dtype == dtype for intercept in mlp.intercepts_)
    assert all(coef.dtype == dtype for coef in mlp.coefs_)
    if Estimator in REGRESSORS:
        assert pred.dtype == dtype


@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
def test_preserve_feature_names(Estimator):
    # test_mlp.py::test_preserve_feature_names
    pd = pytest.importorskip("pandas")
    rng = np.random.RandomState(0)
    X = pd.DataFrame(data=rng.randn(10, 2), columns=["colname_a", "colname_b"])
    y = pd.Series(data=np.full(10, 1), name="colname_y")
    if Estimator in CLASSIFIERS:
        y.iloc[:5] = 0  # MLPClassifier's test data has one class; ours needs two
    model = Estimator(early_stopping=True, validation_fraction=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    np.testing.assert_array_equal(model.feature_names_in_, ["colname_a", "colname_b"])


@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
def test_mlp_warm_start_with_early_stopping(Estimator):
    # test_mlp.py::test_mlp_warm_start_with_early_stopping
    mlp = Estimator(max_iter=10, random_state=0, warm_start=True, early_stopping=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X_iris, y_iris)
        n_validation_scores = len(mlp.validation_scores_)
        mlp.set_params(max_iter=20)
        mlp.fit(X_iris, y_iris)
    assert len(mlp.validation_scores_) > n_validation_scores


@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
@pytest.mark.parametrize("solver", ["sgd", "adam", "lbfgs"])
def test_mlp_warm_start_no_convergence(Estimator, solver):
    # test_mlp.py::test_mlp_warm_start_no_convergence
    model = Estimator(solver=solver, warm_start=True, early_stopping=False, max_iter=10,
                      n_iter_no_change=np.inf, random_state=0)
    with pytest.warns(ConvergenceWarning):
        model.fit(X_iris, y_iris)
    assert model.n_iter_ == 10
    model.set_params(max_iter=20)
    with pytest.warns(ConvergenceWarning):
        model.fit(X_iris, y_iris)
    assert model.n_iter_ == 20


@pytest.mark.parametrize("Estimator", CLASSIFIERS + REGRESSORS)
def test_mlp_partial_fit_after_fit(Estimator):
    # test_mlp.py::test_mlp_partial_fit_after_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp = Estimator(early_stopping=True, random_state=0).fit(X_iris, y_iris)
    with pytest.raises(ValueError, match="partial_fit does not support early_stopping=True"):
        mlp.partial_fit(X_iris, y_iris)


# ------------------------------------------------------------------- regression
@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_lbfgs_regression(Regressor):
    # test_mlp.py::test_lbfgs_regression. With a logistic hidden layer the
    # quadratic output layer (50 x 50 more weights) needs more L-BFGS
    # iterations than MLPRegressor's 137: at max_iter=200 it stops at R^2
    # 0.980 (QNN) / 0.979 (RPQNN), at the threshold; 400 gives 0.997 / 0.994.
    # MLPRegressor's alpha (the regressors' default, 1.0, fits the training rows less closely).
    for activation in ACTIVATION_TYPES:
        mlp = Regressor(solver="lbfgs", hidden_layer_sizes=50, max_iter=400 if activation == "logistic" else 200,
                        tol=1e-3, shuffle=True, random_state=1, activation=activation, alpha=1e-4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mlp.fit(X_reg, y_reg)
        if activation == "identity":
            assert mlp.score(X_reg, y_reg) > 0.80
        else:
            assert mlp.score(X_reg, y_reg) > 0.98


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_lbfgs_regression_maxfun(Regressor):
    # test_mlp.py::test_lbfgs_regression_maxfun
    max_fun = 10
    for activation in ACTIVATION_TYPES:
        mlp = Regressor(solver="lbfgs", hidden_layer_sizes=50, tol=0.0, max_iter=150, max_fun=max_fun,
                        shuffle=True, random_state=1, activation=activation)
        with pytest.warns(ConvergenceWarning):
            mlp.fit(X_reg, y_reg)
            assert max_fun >= mlp.n_iter_


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_multioutput_regression(Regressor):
    # test_mlp.py::test_multioutput_regression
    X, y = make_regression(n_samples=200, n_targets=5, random_state=11)
    mlp = Regressor(solver="lbfgs", hidden_layer_sizes=50, max_iter=200, tol=1e-2, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        mlp.fit(X, y)
    assert mlp.score(X, y) > 0.9


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_partial_fit_regression(Regressor):
    # test_mlp.py::test_partial_fit_regression: partial_fit gives fit's result.
    for momentum in [0, 0.9]:
        options = dict(solver="sgd", activation="relu", learning_rate_init=0.01, random_state=1,
                       batch_size=X_reg.shape[0], momentum=momentum)
        mlp = Regressor(max_iter=100, **options)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            mlp.fit(X_reg, y_reg)
        pred1 = mlp.predict(X_reg)
        mlp = Regressor(**options)
        for _ in range(100):
            mlp.partial_fit(X_reg, y_reg)
        np.testing.assert_allclose(pred1, mlp.predict(X_reg))
        assert mlp.score(X_reg, y_reg) > 0.65


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_shuffle(Regressor):
    # test_mlp.py::test_shuffle
    X, y = make_regression(n_samples=50, n_features=5, n_targets=1, random_state=0)
    # solver="adam": MLPRegressor's default (the regressors' "auto" is L-BFGS on 50 rows)
    options = dict(hidden_layer_sizes=1, max_iter=1, batch_size=1, random_state=0, solver="adam")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for shuffle in [True, False]:
            mlp1 = Regressor(shuffle=shuffle, **options).fit(X, y)
            mlp2 = Regressor(shuffle=shuffle, **options).fit(X, y)
            assert np.array_equal(mlp1.coefs_[0], mlp2.coefs_[0])
        mlp1 = Regressor(shuffle=True, **options).fit(X, y)
        mlp2 = Regressor(shuffle=False, **options).fit(X, y)
    assert not np.array_equal(mlp1.coefs_[0], mlp2.coefs_[0])


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_mlp_regressor_dtypes_casting(Regressor):
    # test_mlp.py::test_mlp_regressor_dtypes_casting
    def fitted(X):
        # solver="adam": MLPRegressor's default (the regressors' "auto" is L-BFGS on 300 rows)
        mlp = Regressor(alpha=1e-5, hidden_layer_sizes=(5, 3), random_state=1, max_iter=150, tol=1e-3,
                        solver="adam")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return mlp.fit(X, y_digits[:300])

    pred_64 = fitted(X_digits[:300]).predict(X_digits[300:])
    pred_32 = fitted(X_digits[:300].astype(np.float32)).predict(X_digits[300:].astype(np.float32))
    np.testing.assert_allclose(pred_64, pred_32, rtol=5e-4)


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_mlp_loading_from_joblib_partial_fit(Regressor, tmp_path):
    # test_mlp.py::test_mlp_loading_from_joblib_partial_fit
    # MLPRegressor trains on y as given (scale_target=False), with alpha=1e-4 and adam
    model = Regressor(hidden_layer_sizes=(42,), random_state=42, learning_rate_init=0.01, max_iter=200,
                      scale_target=False, alpha=1e-4, solver="adam")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit([[2]], [4])
    joblib.dump(model, tmp_path / "mlp.pkl")
    loaded = joblib.load(tmp_path / "mlp.pkl")
    for _ in range(200):
        loaded.partial_fit([[2]], [1])
    np.testing.assert_allclose(loaded.predict([[2]]), [1], rtol=1e-4)


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_mlp_sample_weight_with_early_stopping(Regressor):
    # test_mlp.py::test_mlp_sample_weight_with_early_stopping
    X, y = make_regression(n_samples=100, n_features=2, n_informative=2, random_state=42)
    params = dict(hidden_layer_sizes=10, solver="adam", early_stopping=True, tol=1e-2, learning_rate_init=0.01,
                  batch_size=10, random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m1 = Regressor(**params).fit(X, y, sample_weight=np.ones_like(y))
        m2 = Regressor(**params).fit(X, y, sample_weight=None)
    np.testing.assert_allclose(m1.predict(X), m2.predict(X))


@pytest.mark.parametrize("Regressor", REGRESSORS)
@pytest.mark.parametrize("seed", [0, 1])
def test_mlp_vs_poisson_glm_equivalent(Regressor, seed):
    # test_mlp.py::test_mlp_vs_poisson_glm_equivalent. The MLP test needs a
    # 1-unit identity hidden layer to be a GLM; here the network is a GLM
    # exactly: no hidden layer and a linear output layer (quadratic_layers).
    n = 100
    rng = np.random.default_rng(seed)
    X = np.linspace(0, 1, n)
    y = rng.poisson(np.exp(X + 1))
    X = X.reshape(n, -1)
    glm = PoissonRegressor(alpha=0, tol=1e-7).fit(X, y)
    options = dict(hidden_layer_sizes=(), quadratic_layers=[False], alpha=0, solver="lbfgs", tol=1e-7,
                   random_state=seed + 1)
    mlp = Regressor(loss="poisson", **options).fit(X, y)
    np.testing.assert_allclose(mlp.predict(X), glm.predict(X), rtol=1e-4)
    # squared error has an identity output: not the GLM
    mlp = Regressor(loss="squared_error", **options).fit(X, y)
    assert not np.allclose(mlp.predict(X), glm.predict(X), rtol=1e-4)


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_minimum_input_sample_size(Regressor):
    # test_mlp.py::test_minimum_input_sample_size
    X, y = make_regression(n_samples=2, n_features=5, random_state=0)
    with pytest.raises(ValueError, match="The validation set is too small"):
        Regressor(early_stopping=True, random_state=0).fit(X, y)


@pytest.mark.parametrize("Regressor", REGRESSORS)
def test_mlp_diverging_loss(Regressor):
    # test_mlp.py::test_mlp_diverging_loss: a diverging fit with early stopping
    # raises no error. MLPRegressor then records a NaN validation score; skquad's
    # divergence guard stops, restores the better of the best and the starting
    # weights and says so (ConvergenceWarning, diverged_), so every recorded
    # score is a finite float.
    mlp = Regressor(hidden_layer_sizes=100, activation="identity", solver="sgd", alpha=0.0001,
                    learning_rate="constant", learning_rate_init=1, shuffle=True, max_iter=20,
                    early_stopping=True, n_iter_no_change=10, random_state=0)
    with pytest.warns(ConvergenceWarning, match="diverged"):
        mlp.fit(X_iris, y_iris)
    assert mlp.diverged_
    assert all(isinstance(score, float) and np.isfinite(score) for score in mlp.validation_scores_)
    assert np.all(np.isfinite(mlp.predict(X_iris)))
