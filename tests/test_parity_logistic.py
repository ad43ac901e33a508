"""scikit-learn's own LogisticRegression tests, run against QuadraticLogisticRegression.

Adapted from ``sklearn/linear_model/tests/test_logistic.py`` (scikit-learn 1.9):
each test below names its source. ``LogisticRegression`` becomes
QuadraticLogisticRegression (QLR) with the same data, parameters and
assertions; sklearn's ``global_random_seed`` fixture becomes seeds 0 and 42.
Where QLR has a quadratic part that the assertion's linear model lacks, the
assertion covers ``Q_`` too (said in place).

Left out, with the reason:

* tests of solvers, penalties and options QLR does not have (liblinear, sag,
  saga, newton-cg, newton-cholesky, l1 and elastic-net penalties,
  ``penalty=None``, ``dual``, ``intercept_scaling``, ``n_jobs``,
  ``sparsify``/``densify``): ``test_check_solver_option``,
  ``test_elasticnet_l1_ratio_err_helpful``, ``test_sparsify``,
  ``test_liblinear_*``, ``test_sample_and_class_weight_equivalence_liblinear``,
  ``test_logreg_intercept_scaling_zero``, ``test_logreg_l1``,
  ``test_saga_vs_liblinear``, ``test_elastic_net_*``,
  ``test_LogisticRegression_elastic_net_objective``, ``test_l1_ratio_*``,
  ``test_warm_start_newton_solver``, ``test_newton_cholesky_fallback_to_lbfgs``,
  ``test_penalty_none`` (QLR's ``penalty`` chooses the quadratic penalty's
  form; ``C=np.inf`` is its unpenalized fit, tested by
  ``test_c_inf_no_warning``), ``test_penalty_deprecated``,
  ``test_lr_penalty_l1ratio_incompatible``,
  ``test_logisticregression_warns_with_n_jobs``, ``test_liblinear_multiclass_raises``;
* the regularization path function (``test_consistency_path``,
  ``test_logistic_regression_path_*``) and ``LogisticRegressionCV`` tests
  that read its internals or options QuadraticLogisticRegressionCV (QLRCV,
  whose API tests are at the end of this file) does not have:
  ``test_logistic_cv_multinomial_score`` (``_log_reg_scoring_path``),
  ``test_multinomial_cv_iris`` (OvR and other solvers),
  ``test_logistic_regressioncv_class_weights`` (solvers agreeing),
  ``test_LogisticRegressionCV_GridSearchCV_elastic_net``,
  ``test_LogisticRegressionCV_elasticnet_attribute_shapes``,
  ``test_scores_attribute_layout_elasticnet``,
  ``test_logistic_cv_refit_false_non_elasticnet`` (``l1_ratios``),
  ``test_logisticregressioncv_warns_with_use_legacy_attributes`` and
  ``test_lr_scoring_warns`` (QLRCV has the new attribute layout, without
  the ``l1_ratios`` axis, and accuracy as its settled default), and
  ``test_logistic_cv_folds_with_classes_missing`` (a fold's model knows the
  classes of its training rows only: QLRCV refuses such folds,
  ``test_folds_missing_a_class_are_refused``);
* numbers that belong to a linear model or to other solvers:
  ``test_logistic_glmnet`` (glmnet's linear coefficients),
  ``test_logistic_regression_solvers*`` (solvers agreeing to 1e-3: QLR's
  ``solver="sgd"`` is Noel et al.'s plain SGD, which does not converge that
  tightly);
* private internals: ``test_logreg_predict_proba_multinomial``'s
  ``_predict_proba_lr`` assertion (the public one is kept);
* array API: ``test_logistic_regression_array_api_*`` (QLR computes in torch,
  not through the array API);
* float32 kept (``test_dtype_match``): issue 22's float32 item belongs to the
  runtime work (engineer "runtime"), not to this module;
* ``test_logistic_regression_callback_support_warning``: LogisticRegression
  supports callbacks for lbfgs only and warns for the others; QLR reports its
  SGD epochs too, so there is nothing to warn about.
"""

import re
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_almost_equal, assert_array_equal
from scipy import sparse
from sklearn.callback.tests._utils import RecordingCallback
from sklearn import config_context
from sklearn.datasets import load_iris, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import get_scorer, log_loss
from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.preprocessing import LabelEncoder, scale
from sklearn.utils import compute_class_weight
from sklearn.utils.fixes import _sparse_random_array

from skquad import QuadraticLogisticRegression as QLR
from skquad import QuadraticLogisticRegressionCV as QLRCV

SEEDS = [0, 42]
X = [[-1, 0], [0, 1], [1, 1]]
Y1 = [0, 1, 1]
Y2 = [2, 1, 0]
iris = load_iris()


def _compute_class_weight_dictionary(y):
    # test_logistic.py's helper of the same name
    classes = np.unique(y)
    class_weight = compute_class_weight("balanced", classes=classes, y=y)
    return dict(zip(classes, class_weight))


def check_predictions(clf, X, y):
    # test_logistic.py::check_predictions
    n_samples = len(y)
    classes = np.unique(y)
    n_classes = classes.shape[0]

    predicted = clf.fit(X, y).predict(X)
    assert_array_equal(clf.classes_, classes)
    assert predicted.shape == (n_samples,)
    assert_array_equal(predicted, y)

    probabilities = clf.predict_proba(X)
    assert probabilities.shape == (n_samples, n_classes)
    assert_allclose(probabilities.sum(axis=1), np.ones(n_samples))
    assert_array_equal(probabilities.argmax(axis=1), y)


def test_predict_2_classes():
    # test_logistic.py::test_predict_2_classes
    for clf in (QLR(), QLR(C=100), QLR(fit_intercept=False)):
        check_predictions(clf, X, Y1)
        check_predictions(clf, sparse.csr_matrix(X), Y1)


def test_predict_3_classes():
    # test_logistic.py::test_predict_3_classes
    check_predictions(QLR(C=10), X, Y2)
    check_predictions(QLR(C=10), sparse.csr_matrix(X), Y2)


def test_inconsistent_input():
    # test_logistic.py::test_inconsistent_input
    rng = np.random.RandomState(0)
    X_ = rng.random_sample((5, 10))
    y_ = np.ones(X_.shape[0])
    y_[0] = 0
    clf = QLR(random_state=0)
    with pytest.raises(ValueError, match="Found input variables with inconsistent number"):
        clf.fit(X, y_[:-1])
    with pytest.raises(ValueError, match="X has 12 features, but"):
        clf.fit(X_, y_).predict(rng.random_sample((3, 12)))


def test_write_parameters():
    # test_logistic.py::test_write_parameters; the quadratic part Q_ is
    # written too (the linear model has none).
    clf = QLR()
    clf.fit(X, Y1)
    clf.coef_[:] = 0
    clf.intercept_[:] = 0
    clf.Q_[:] = 0
    assert_array_almost_equal(clf.decision_function(X), 0)


def test_nan():
    # test_logistic.py::test_nan
    Xnan = np.array(X, dtype=np.float64)
    Xnan[0, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN."):
        QLR().fit(Xnan, Y1)


def test_multinomial_logistic_regression_string_inputs():
    # test_logistic.py::test_multinomial_logistic_regression_string_inputs
    # (the LogisticRegression half; QLR has no CV estimator)
    X_ref, y = make_classification(
        n_samples=50, n_features=5, n_classes=3, n_informative=3, random_state=0
    )
    y_str = LabelEncoder().fit(["bar", "baz", "foo"]).inverse_transform(y)
    y = np.array(y) - 1
    lr = QLR().fit(X_ref, y)
    lr_str = QLR().fit(X_ref, y_str)
    assert_allclose(lr.coef_, lr_str.coef_)
    assert_allclose(lr.Q_, lr_str.Q_)
    assert_allclose(lr.predict_proba(X_ref), lr_str.predict_proba(X_ref))
    assert sorted(lr_str.classes_) == ["bar", "baz", "foo"]
    assert sorted(np.unique(lr_str.predict(X_ref))) == ["bar", "baz", "foo"]
    # class weights with string labels
    weighted = QLR(class_weight={"bar": 1, "baz": 2, "foo": 0}).fit(X_ref, y_str)
    assert sorted(np.unique(weighted.predict(X_ref))) == ["bar", "baz"]


@pytest.mark.parametrize("seed", SEEDS)
def test_logistic_regression_sample_weights(seed):
    # test_logistic.py::test_logistic_regression_sample_weights (problem
    # "single", lbfgs: the full-batch solver; SGD's sampling differs between
    # a weighted and a repeated data set by design)
    n_samples_per_cv_group = 200
    X, y = make_classification(
        n_samples=n_samples_per_cv_group * 3, n_features=5, n_informative=3, n_classes=2,
        n_redundant=0, random_state=seed,
    )
    rng = np.random.RandomState(seed)
    sw = np.ones(y.shape[0])
    sw[:n_samples_per_cv_group] = rng.randint(0, 5, size=n_samples_per_cv_group)
    X_repeated = np.repeat(X, sw.astype(int), axis=0)
    y_repeated = np.repeat(y, sw.astype(int), axis=0)
    kw = {"random_state": seed, "fit_intercept": False, "max_iter": 1_000, "tol": 1e-8}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = QLR(**kw).fit(X, y, sample_weight=sw)
        repeated = QLR(**kw).fit(X_repeated, y_repeated)
    assert_allclose(weighted.coef_, repeated.coef_, atol=1e-5)
    assert_allclose(weighted.Q_, repeated.Q_, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_logistic_regression_solver_class_weights(seed):
    # test_logistic.py::test_logistic_regression_solver_class_weights (lbfgs)
    X, y = make_classification(n_samples=300, n_features=5, n_informative=3, n_classes=2,
                               random_state=seed)
    kw = {"random_state": seed, "fit_intercept": False, "max_iter": 100_000, "tol": 1e-8}
    clf_cw_12 = QLR(class_weight={0: 1, 1: 2}, **kw, quadratic_C=None).fit(X, y)
    clf_sw_12 = QLR(**kw, quadratic_C=None).fit(X, y, sample_weight=y + 1)
    assert_allclose(clf_cw_12.coef_, clf_sw_12.coef_, atol=1e-6)
    assert_allclose(clf_cw_12.Q_, clf_sw_12.Q_, atol=1e-6)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_logistic_regression_class_weights(solver):
    # test_logistic.py::test_logistic_regression_class_weights (csr input)
    X_iris = scale(iris.data)
    X = sparse.csr_matrix(X_iris[45:, :])
    y = iris.target[45:]
    class_weight_dict = _compute_class_weight_dictionary(y)
    # (SGD: 200 epochs; the equivalences hold at any epoch, it is the same computation)
    params = dict(solver=solver, max_iter=2000 if solver == "lbfgs" else 200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf1 = QLR(class_weight="balanced", **params).fit(X, y)
        clf2 = QLR(class_weight=class_weight_dict, **params).fit(X, y)
        assert len(clf1.classes_) == 3
        assert_allclose(clf1.coef_, clf2.coef_, rtol=1e-4)
        sw = np.ones(X.shape[0])
        for c in clf1.classes_:
            sw[y == c] *= class_weight_dict[c]
        clf3 = QLR(**params).fit(X, y, sample_weight=sw)
    assert_allclose(clf3.coef_, clf2.coef_, rtol=1e-4)

    # Binary case
    X, y = X_iris[45:100, :], iris.target[45:100]
    class_weight_dict = _compute_class_weight_dictionary(y)
    params = dict(solver=solver, max_iter=1000 if solver == "lbfgs" else 200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf1 = QLR(class_weight="balanced", **params).fit(X, y)
        clf2 = QLR(class_weight=class_weight_dict, **params).fit(X, y)
    assert_array_almost_equal(clf1.coef_, clf2.coef_, decimal=6)


@pytest.mark.parametrize("seed", SEEDS)
def test_logreg_predict_proba_multinomial(seed):
    # test_logistic.py::test_logreg_predict_proba_multinomial (without the
    # private _predict_proba_lr comparison)
    X, y = make_classification(n_samples=10, n_features=20, random_state=seed, n_classes=3,
                               n_informative=10)
    clf_multi = QLR().fit(X, y)
    clf_ovr = OneVsRestClassifier(QLR()).fit(X, y)
    assert log_loss(y, clf_ovr.predict_proba(X)) > log_loss(y, clf_multi.predict_proba(X))


@pytest.mark.parametrize("max_iter", np.arange(1, 5))
def test_max_iter(max_iter):
    # test_logistic.py::test_max_iter (lbfgs)
    X, y_bin = iris.data, iris.target.copy()
    y_bin[y_bin == 2] = 0
    lr = QLR(max_iter=max_iter, tol=1e-15, random_state=0)
    with pytest.warns(ConvergenceWarning, match="lbfgs failed to converge"):
        lr.fit(X, y_bin)
    assert lr.n_iter_[0] == max_iter


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_n_iter(solver):
    # test_logistic.py::test_n_iter (the LogisticRegression half)
    X, y = scale(iris.data), iris.target
    y_bin = y.copy()
    y_bin[y_bin == 2] = 0
    clf = QLR(tol=1e-2, C=1.0, solver=solver, random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y_bin)
        assert clf.n_iter_.shape == (1,)
        # multinomial: one optimization problem for all classes at once
        clf.fit(X, y)
    assert clf.n_iter_.shape == (1,)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
@pytest.mark.parametrize("warm_start", (True, False))
@pytest.mark.parametrize("fit_intercept", (True, False))
def test_warm_start(solver, warm_start, fit_intercept):
    # test_logistic.py::test_warm_start: a 1-iteration second fit stays near
    # the first with warm starting and far from it without. The parameters
    # compared are coef_ and Q_ (2.0 is the linear test's threshold on coef_).
    X, y = iris.data, iris.target
    clf = QLR(tol=1e-4, warm_start=warm_start, solver=solver, random_state=0,
              fit_intercept=fit_intercept)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(X, y)
        first = np.concatenate([clf.coef_.ravel(), clf.Q_.ravel()])
        clf.max_iter = 1
        clf.fit(X, y)
    cum_diff = np.sum(np.abs(first - np.concatenate([clf.coef_.ravel(), clf.Q_.ravel()])))
    if warm_start:
        assert 2.0 > cum_diff
    else:
        assert cum_diff > 2.0


@pytest.mark.parametrize("seed", SEEDS)
def test_warm_start_converge_LR(seed):
    # test_logistic.py::test_warm_start_converge_LR (solver "sag" -> lbfgs)
    rng = np.random.RandomState(seed)
    X = np.concatenate((rng.randn(100, 2) + [1, 1], rng.randn(100, 2)))
    y = np.array([1] * 100 + [-1] * 100)
    lr_no_ws = QLR(warm_start=False, tol=1e-6, random_state=seed)
    lr_ws = QLR(warm_start=True, tol=1e-6, random_state=seed)
    lr_no_ws_loss = log_loss(y, lr_no_ws.fit(X, y).predict_proba(X))
    for _ in range(5):
        lr_ws.fit(X, y)
    assert_allclose(lr_no_ws_loss, log_loss(y, lr_ws.predict_proba(X)), rtol=1e-5)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_c_inf_no_warning(solver):
    # test_logistic.py::test_c_inf_no_warning
    X, y = make_classification(n_samples=100, n_redundant=0, random_state=42)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=ConvergenceWarning)
        model = QLR(C=np.inf, solver=solver).fit(X, y)
    assert np.all(np.isfinite(model.Q_)) and np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_multinomial_identifiability_on_iris(fit_intercept):
    # test_logistic.py::test_multinomial_identifiability_on_iris (lbfgs): the
    # penalized optimum has sum_k coef_k = 0, and so sum_k Q_k = 0 for the
    # quadratic part (the softmax is invariant to adding one vector to every
    # class, the penalty is not).
    target = iris.target_names[iris.target]
    clf = QLR(C=len(iris.data), fit_intercept=fit_intercept)
    clf.fit(scale(iris.data), target)
    assert_allclose(clf.coef_.sum(axis=0), 0, atol=1e-10)
    assert_allclose(clf.Q_.sum(axis=0), 0, atol=1e-10)
    if fit_intercept:
        assert clf.intercept_.sum(axis=0) == pytest.approx(0, abs=1e-11)


@pytest.mark.parametrize("class_weight", [{0: 1.0, 1: 10.0, 2: 1.0}, "balanced"])
def test_sample_weight_not_modified(class_weight):
    # test_logistic.py::test_sample_weight_not_modified
    X, y = load_iris(return_X_y=True)
    W = np.ones(len(X))
    W[: len(X) // 2] = 2
    expected = W.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        QLR(class_weight=class_weight, max_iter=200).fit(X, y, sample_weight=W)
    assert_allclose(expected, W)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_large_sparse_matrix(solver):
    # test_logistic.py::test_large_sparse_matrix: int64 sparse indices accepted
    X = sparse.csr_matrix(_sparse_random_array((20, 10), random_state=42))
    for attr in ["indices", "indptr"]:
        setattr(X, attr, getattr(X, attr).astype("int64"))
    y = np.random.RandomState(42).randint(2, size=X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        wide = QLR(solver=solver, random_state=0).fit(X, y)
        narrow = QLR(solver=solver, random_state=0).fit(sparse.csr_matrix(X.toarray()), y)
    # int64 indices give the same model as the same matrix with int32 ones
    assert_allclose(wide.predict_proba(X), narrow.predict_proba(X), rtol=1e-12)


def test_single_feature_newton_cg():
    # test_logistic.py::test_single_feature_newton_cg (one feature and an
    # intercept, with QLR's lbfgs)
    X = np.array([[0.5, 0.65, 1.1, 1.25, 0.8, 0.54, 0.95, 0.7]]).T
    y = np.array([1, 1, 0, 0, 1, 1, 0, 1])
    model = QLR(fit_intercept=True).fit(X, y)
    assert model.Q_.shape == (1, 1, 1) and np.all(np.isfinite(model.intercept_))
    assert model.score(X, y) >= 0.75  # the 8 points are almost separable by x <= 0.95


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_zero_max_iter(solver):
    # test_logistic.py::test_zero_max_iter. LogisticRegression's lbfgs takes
    # scipy's one step at maxiter=0 (the test's XXX comment) and skips the
    # zero-coefficient assertions; QLR returns the starting model, so they
    # hold for both of its solvers.
    X, y = load_iris(return_X_y=True)
    y = y == 2
    with pytest.warns(ConvergenceWarning):
        clf = QLR(solver=solver, max_iter=0).fit(X, y)
    assert clf.n_iter_ == 0
    assert_allclose(clf.coef_, np.zeros_like(clf.coef_))
    assert_allclose(clf.Q_, np.zeros_like(clf.Q_))
    assert_allclose(clf.decision_function(X), np.full(shape=X.shape[0], fill_value=clf.intercept_))
    assert_allclose(clf.predict_proba(X), np.full(shape=(X.shape[0], 2), fill_value=0.5))
    assert clf.score(X, y) < 0.7


@pytest.mark.parametrize("max_iter", [0, 2, 1000])
def test_logistic_regression_callback_support(max_iter):
    # test_logistic.py::test_logistic_regression_callback_support. The root
    # task, one per iteration, and L-BFGS's last empty one; LogisticRegression
    # counts "at least one" iteration because scipy steps once at max_iter=0,
    # QLR runs none then (see test_zero_max_iter).
    X, y = make_classification(n_features=4, random_state=0)
    cb = RecordingCallback()
    lr = QLR(solver="lbfgs", max_iter=max_iter).set_callbacks(cb)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lr.fit(X, y)
    count = lambda name: sum(record["name"] == name for record in cb.record)
    assert count("setup") == 1
    assert count("teardown") == 1
    assert count("on_fit_task_begin") == 1 + lr.n_iter_[0] + 1
    assert count("on_fit_task_end") == 1 + lr.n_iter_[0] + 1


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_logistic_regression_callback_fitted_estimator(n_classes, fit_intercept):
    # test_logistic.py::test_logistic_regression_callback_fitted_estimator;
    # Q_ is compared too.
    X, y = make_classification(n_features=4, n_informative=4, n_redundant=0,
                               n_classes=n_classes, random_state=0)
    cb = RecordingCallback()
    params = {"solver": "lbfgs", "fit_intercept": fit_intercept}
    lr = QLR(**params, quadratic_C=None).set_callbacks(cb).fit(X, y)
    n_iter = lr.n_iter_[0]

    def records(name):
        return [r for r in cb.record if r["name"] == name and "iter" in r["context"].task_name]

    for i, (begin, end) in enumerate(zip(records("on_fit_task_begin"), records("on_fit_task_end"))):
        assert begin["context"].task_id == i
        assert end["context"].task_id == i
        checks = []
        if i > 0:
            checks.append((begin["kwargs"]["fitted_estimator"], i))
        if i < n_iter:
            checks.append((end["kwargs"]["fitted_estimator"], i + 1))
        else:
            assert end["kwargs"]["fitted_estimator"] is None  # L-BFGS's extra empty task
        for est, iterations in checks:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                expected = QLR(**params, max_iter=iterations, quadratic_C=None).fit(X, y)
            assert_allclose(est.coef_, expected.coef_)
            assert_allclose(est.Q_, expected.Q_)
            assert_allclose(est.intercept_, expected.intercept_)
            assert_allclose(est.predict(X), expected.predict(X))


# ---------------------------------------------------------- LogisticRegressionCV
@pytest.mark.parametrize("seed", SEEDS)
def test_logistic_cv(seed):
    # test_logistic.py::test_logistic_cv (use_legacy_attributes=False; QLRCV
    # has no l1_ratios axis; lbfgs for liblinear)
    n_samples, n_features, n_cv = 50, 5, 3
    rng = np.random.RandomState(seed)
    X_ref = rng.randn(n_samples, n_features)
    y = np.sign(X_ref.dot(5 * rng.randn(n_features)))
    X_ref -= X_ref.mean()
    X_ref /= X_ref.std()
    lr_cv = QLRCV(Cs=[1.0], fit_intercept=False, cv=n_cv, scoring="neg_log_loss",
                  random_state=seed, tol=1e-10)
    lr_cv.fit(X_ref, y)
    lr = QLR(C=1.0, fit_intercept=False, random_state=seed, tol=1e-10, quadratic_C=None).fit(X_ref, y)
    assert_array_almost_equal(lr.coef_, lr_cv.coef_)
    assert_array_almost_equal(lr.Q_, lr_cv.Q_)
    assert lr_cv.coef_.shape == (1, n_features)
    assert_array_equal(lr_cv.classes_, [-1, 1])
    assert lr_cv.Cs_.shape == (1,)
    assert lr_cv.coefs_paths_.shape == (n_cv, 1, 1, n_features)
    assert isinstance(lr_cv.C_, float)
    assert lr_cv.scores_.shape == (n_cv, 1)


def test_logistic_cv_mock_scorer():
    # test_logistic.py::test_logistic_cv_mock_scorer
    class MockScorer:
        def __init__(self):
            self.calls = 0
            self.scores = [0.1, 0.4, 0.8, 0.5]

        def __call__(self, model, X, y, sample_weight=None):
            score = self.scores[self.calls % len(self.scores)]
            self.calls += 1
            return score

    mock_scorer = MockScorer()
    Cs = [1, 2, 3, 4]
    cv = 2
    lr = QLRCV(Cs=Cs, scoring=mock_scorer, cv=cv)
    X, y = make_classification(random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        lr.fit(X, y)
    # Cs[2] has the highest score (0.8) from MockScorer
    assert lr.C_ == Cs[2]
    assert mock_scorer.calls == cv * len(Cs)
    mock_scorer.calls = 0
    custom_score = lr.score(X, lr.predict(X))
    assert custom_score == mock_scorer.scores[0]
    assert mock_scorer.calls == 1


def test_multinomial_logistic_regression_cv_string_inputs():
    # test_logistic.py::test_multinomial_logistic_regression_string_inputs (the
    # LogisticRegressionCV half)
    X_ref, y = make_classification(n_samples=50, n_features=5, n_classes=3, n_informative=3,
                                   random_state=0)
    y_str = LabelEncoder().fit(["bar", "baz", "foo"]).inverse_transform(y)
    y = np.array(y) - 1
    lr_cv = QLRCV(Cs=3, scoring="neg_log_loss").fit(X_ref, y)
    lr_cv_str = QLRCV(Cs=3, scoring="neg_log_loss").fit(X_ref, y_str)
    assert_allclose(lr_cv.coef_, lr_cv_str.coef_)
    assert_allclose(lr_cv.predict_proba(X_ref), lr_cv_str.predict_proba(X_ref))
    assert sorted(lr_cv_str.classes_) == ["bar", "baz", "foo"]
    assert set(np.unique(lr_cv_str.predict(X_ref))) <= {"bar", "baz", "foo"}
    lr_cv_str = QLRCV(Cs=[1, 2, 10], scoring="neg_log_loss").fit(X_ref, y_str)
    assert sorted(np.unique(lr_cv_str.predict(X_ref))) == ["bar", "baz", "foo"]


@pytest.mark.parametrize("seed", SEEDS)
def test_logistic_cv_sparse(seed):
    # test_logistic.py::test_logistic_cv_sparse (lbfgs)
    X, y = make_classification(n_samples=100, n_features=5, random_state=seed)
    X[X < 0.0] = 0.0  # make it a bit sparse
    params = dict(Cs=[1e-1, 1, 1e1], max_iter=10_000, tol=1e-7, random_state=42,
                  scoring="neg_log_loss")
    clf = QLRCV(**params).fit(X, y)
    clfs = QLRCV(**params).fit(sparse.csr_matrix(X), y)
    # 1e-4 where the linear test has 1e-5: the dense and sparse objectives
    # round differently, and the degree-2 problem's L-BFGS stops on the
    # objective's relative change (64 eps) with the parameters a few 1e-5 apart
    assert_allclose(clfs.coef_, clf.coef_, rtol=1e-4, atol=1e-4)
    assert_allclose(clfs.Q_, clf.Q_, rtol=1e-4, atol=1e-6)
    assert_allclose(clfs.intercept_, clf.intercept_, rtol=1e-4)
    assert clfs.C_ == clf.C_


@pytest.mark.parametrize("seed", SEEDS)
def test_logistic_regression_cv_refit(seed):
    # test_logistic.py::test_logistic_regression_cv_refit (the L2 case, lbfgs):
    # the refit warm-starts from the folds' mean and reaches the fit at C
    X, y = make_classification(n_samples=100, n_features=20, random_state=seed)
    common_params = dict(random_state=seed, max_iter=10000, tol=1e-10)
    lr_cv = QLRCV(Cs=[1.0], refit=True, scoring="neg_log_loss", **common_params).fit(X, y)
    lr = QLR(C=1.0, **common_params, quadratic_C=None).fit(X, y)
    assert_allclose(lr_cv.coef_, lr.coef_, atol=1e-6)
    assert_allclose(lr_cv.Q_, lr.Q_, atol=1e-6)


@pytest.mark.parametrize("n_classes", (2, 3))
def test_LogisticRegressionCV_no_refit(n_classes):
    # test_logistic.py::test_LogisticRegressionCV_no_refit (new attribute layout)
    n_features = 20
    X, y = make_classification(n_samples=200, n_classes=n_classes, n_informative=n_classes,
                               n_features=n_features, random_state=0)
    Cs = np.logspace(-4, 4, 3)
    lrcv = QLRCV(Cs=Cs, random_state=0, tol=1e-2, refit=False, scoring="neg_log_loss")
    lrcv.fit(X, y)
    n_scores = 1 if n_classes == 2 else n_classes
    assert isinstance(lrcv.C_, float)
    assert lrcv.coef_.shape == (n_scores, n_features)
    assert lrcv.Q_.shape == (n_scores, n_features, n_features)


def test_LogisticRegressionCV_on_folds():
    # test_logistic.py::test_LogisticRegressionCV_on_folds: the path's model
    # on a fold at a C is the fit on that fold at that C. scikit-learn's test
    # runs newton-cholesky at tol=1e-8, quadratically converged where it stops;
    # L-BFGS's gradient test at tol leaves the flat directions of the larger Cs
    # (curvature about 1 / (C n)) within tol / curvature, 1e-5 at C = 21.5
    # here, so the test takes tol=1e-10 for the same accuracy
    X, y = scale(iris.data), iris.target
    lrcv = QLRCV(tol=1e-10, scoring="neg_log_loss").fit(X, y)
    folds = list(StratifiedKFold(5).split(X, y))
    for idx_fold, idx_C in [[0, 0], [0, 1], [3, 6]]:
        train = folds[idx_fold][0]
        lr = QLR(C=lrcv.Cs_[idx_C], tol=1e-10).fit(X[train], y[train])
        assert_allclose(lrcv.coefs_paths_[idx_fold, idx_C], lr.coef_, atol=1e-5)
        assert_allclose(lrcv.intercepts_paths_[idx_fold, idx_C], lr.intercept_, atol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_lr_cv_scores_differ_when_sample_weight_is_requested(seed):
    # test_logistic.py::test_lr_cv_scores_differ_when_sample_weight_is_requested
    # (scores_[1] is the linear test's class-1 entry of its legacy dict; here
    # the scores of the second fold)
    with config_context(enable_metadata_routing=True):
        rng = np.random.RandomState(seed)
        X, y = make_classification(n_samples=2000, random_state=rng)
        X_t, y_t = make_classification(n_samples=2000, random_state=rng)
        sample_weight = np.ones(len(y))
        sample_weight[: len(y) // 2] = 2
        kwargs = {"sample_weight": sample_weight}
        scorer1 = get_scorer("accuracy").set_score_request(sample_weight=False)
        lr_cv1 = QLRCV(Cs=3, scoring=scorer1).fit(X, y, **kwargs)
        scorer2 = get_scorer("accuracy").set_score_request(sample_weight=True)
        lr_cv2 = QLRCV(Cs=3, scoring=scorer2).fit(X, y, **kwargs)
        assert not np.allclose(lr_cv1.scores_, lr_cv2.scores_)
        err_msg = (
            "QuadraticLogisticRegressionCV.score got unexpected argument(s) "
            "{'sample_weight'}, which are not routed to any object."
        )
        with pytest.raises(TypeError, match=re.escape(err_msg)):
            lr_cv1.score(X_t, y_t, **kwargs)
        score_1 = lr_cv1.score(X_t, y_t)
        score_2 = lr_cv2.score(X_t, y_t, **kwargs)
    assert not np.allclose(score_1, score_2)


def test_lr_cv_scores_without_enabling_metadata_routing():
    # test_logistic.py::test_lr_cv_scores_without_enabling_metadata_routing
    rng = np.random.RandomState(10)
    X, y = make_classification(n_samples=10, random_state=rng)
    X_t, y_t = make_classification(n_samples=10, random_state=rng)
    sample_weight = np.ones(len(y))
    sample_weight[: len(y) // 2] = 2
    kwargs = {"sample_weight": sample_weight}
    with config_context(enable_metadata_routing=False):
        lr_cv1 = QLRCV(Cs=3, scoring=get_scorer("accuracy")).fit(X, y, **kwargs)
        score_1 = lr_cv1.score(X_t, y_t, **kwargs)
    with config_context(enable_metadata_routing=True):
        scorer2 = get_scorer("accuracy").set_score_request(sample_weight=True)
        lr_cv2 = QLRCV(Cs=3, scoring=scorer2).fit(X, y, **kwargs)
        score_2 = lr_cv2.score(X_t, y_t, **kwargs)
    assert_allclose(lr_cv1.scores_, lr_cv2.scores_)
    assert_allclose(score_1, score_2)


def test_passing_params_without_enabling_metadata_routing():
    # test_logistic.py::test_passing_params_without_enabling_metadata_routing
    X, y = make_classification(n_samples=10, random_state=0)
    lr_cv = QLRCV(scoring="neg_log_loss")
    msg = "is only supported if enable_metadata_routing=True"
    with config_context(enable_metadata_routing=False):
        params = {"extra_param": 1.0}
        with pytest.raises(ValueError, match=msg):
            lr_cv.fit(X, y, **params)
        with pytest.raises(ValueError, match=msg):
            lr_cv.score(X, y, **params)


def test_get_default_scorer():
    # test_logistic.py::test_get_default_scorer
    assert QLRCV()._get_scorer()._score_func.__name__ == "accuracy_score"


def test_groups_are_routed_to_the_splitter():
    # LogisticRegressionCV's routing of fit's groups to a group splitter: the
    # scores are those of the group folds, computed by hand
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    groups = np.repeat(np.arange(6), 20)
    with config_context(enable_metadata_routing=True):
        clf = QLRCV(Cs=[0.1, 1.0], cv=GroupKFold(3)).fit(X, y, groups=groups)
        with pytest.raises(ValueError, match="groups"):
            QLRCV(Cs=[0.1, 1.0], cv=GroupKFold(3)).fit(X, y)
    for fold, (train, test) in enumerate(GroupKFold(3).split(X, y, groups)):
        for index, C in enumerate([0.1, 1.0]):
            model = QLR(C=C, quadratic_C=None).fit(X[train], y[train])
            assert clf.scores_[fold, index] == pytest.approx(model.score(X[test], y[test]))


def test_folds_missing_a_class_are_refused():
    # test_logistic.py::test_logistic_cv_folds_with_classes_missing's folds:
    # a fold's model knows the classes of its training rows only, so QLRCV
    # refuses them with a message naming cv (LogisticRegressionCV fits them)
    y = np.array(["a", "a", "b", "b", "c", "c"])
    X = np.arange(6.0)[:, None]
    with pytest.raises(ValueError, match="every training fold needs every class"):
        QLRCV(cv=KFold(n_splits=3), Cs=[1.0]).fit(X, y)
