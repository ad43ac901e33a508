"""QuadraticLogisticRegression: optimum, solvers, scikit-learn behaviour."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from scipy.special import log_expit, log_softmax
from sklearn.datasets import load_iris, make_circles
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skquad import QuadraticLogisticRegression

XOR_X = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
XOR_Y = np.array([0, 1, 1, 0])


def _feature_scale(n_features, penalty):
    """Scale of the explicit feature ``x_i x_j`` whose plain L2 penalty is ``P(Q)``.

    ``"polynomial"``: plain ``x_i x_j`` (as PolynomialFeatures), coefficient
    ``2 Q_ij``. ``"frobenius"``: ``sqrt(2) x_i x_j`` carries ``sqrt(2) Q_ij``,
    whose square ``2 Q_ij^2`` is what the pair ``(i, j)`` pays in ``||Q||_F^2``.
    """
    rows, cols = np.triu_indices(n_features)
    off = np.sqrt(2.0) if penalty == "frobenius" else 1.0
    return rows, cols, np.where(rows == cols, 1.0, off)


def _degree2_features(X, penalty):
    rows, cols, scale = _feature_scale(X.shape[1], penalty)
    return np.hstack([X[:, rows] * X[:, cols] * scale, X])


def _penalty(Q, penalty):
    off_diagonal = Q - np.einsum("kii->ki", Q)[:, :, None] * np.eye(Q.shape[1])
    weight = 1.0 if penalty == "frobenius" else 2.0
    return np.sum(Q**2) + (weight - 1.0) * np.sum(off_diagonal**2)


def _objective(X, y_index, sample_weight, C, Q, coef, intercept, penalty="polynomial"):
    """C * sum_i s_i l_i + (P(Q) + ||w||^2) / 2, in plain numpy."""
    scores = np.einsum("ni,kij,nj->nk", X, Q, X) + X @ coef.T + intercept
    if scores.shape[1] == 1:
        z = scores[:, 0]
        per_sample = -np.where(y_index == 1, log_expit(z), log_expit(-z))
    else:
        per_sample = -log_softmax(scores, axis=1)[np.arange(len(y_index)), y_index]
    return C * np.sum(sample_weight * per_sample) + 0.5 * (
        _penalty(Q, penalty) + np.sum(coef**2)
    )


def _reference_optimum(X, y, sample_weight, C, penalty):
    """Solve the same problem with LogisticRegression on explicit features."""
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=100_000)
    ref.fit(_degree2_features(X, penalty), y, sample_weight=sample_weight)
    d = X.shape[1]
    rows, cols, scale = _feature_scale(d, penalty)
    n_quad = rows.shape[0]
    Q = np.zeros((ref.coef_.shape[0], d, d))
    for k, beta in enumerate(ref.coef_):
        upper = beta[:n_quad] * scale / np.where(rows == cols, 1.0, 2.0)
        Q[k, rows, cols] = upper
        Q[k, cols, rows] = upper
    return Q, ref.coef_[:, n_quad:], ref.intercept_


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


@pytest.mark.parametrize("penalty", ["polynomial", "frobenius"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_optimum_matches_independent_solve(iris, n_classes, penalty):
    X, y = iris
    if n_classes == 2:
        # versicolor vs virginica: not separable, a finite optimum
        keep = y > 0
        X, y = X[keep], y[keep] - 1
    sample_weight = np.random.RandomState(0).uniform(0.2, 3.0, size=y.shape[0])
    C = 3.0
    clf = QuadraticLogisticRegression(C=C, penalty=penalty, tol=1e-10, max_iter=2000, quadratic_C=None)
    clf.fit(X, y, sample_weight=sample_weight)
    Q_ref, coef_ref, intercept_ref = _reference_optimum(X, y, sample_weight, C, penalty)
    objective = lambda *p: _objective(X, y, sample_weight, C, *p, penalty=penalty)
    ours = objective(clf.Q_, clf.coef_, clf.intercept_)
    reference = objective(Q_ref, coef_ref, intercept_ref)
    assert ours == pytest.approx(reference, rel=1e-6)
    assert ours <= reference * (1 + 1e-9)
    # strictly convex with the penalty: the minimiser is unique
    np.testing.assert_allclose(clf.Q_, Q_ref, atol=2e-3)
    np.testing.assert_allclose(clf.intercept_, intercept_ref, atol=2e-3)


@pytest.mark.parametrize(
    "params",
    [
        dict(solver="lbfgs", C=np.inf),
        dict(solver="sgd", C=np.inf, batch_size=1, learning_rate_init=0.1, max_iter=500),
        dict(solver="sgd", C=np.inf, batch_size=1, learning_rate_init=0.1, max_iter=500,
             Q_init="random"),
    ],
)
def test_xor_is_separated_by_one_neuron(params):
    clf = QuadraticLogisticRegression(random_state=0, **params).fit(XOR_X, XOR_Y)
    assert clf.score(XOR_X, XOR_Y) == 1.0
    # the decisive term is x1 * x2: a negative off-diagonal Q entry
    assert clf.Q_[0, 0, 1] < 0
    np.testing.assert_allclose(clf.Q_[0], clf.Q_[0].T)


def test_xor_from_identity_is_an_ellipse_when_first_separated():
    """The paper's Fig. 1(b): from Q = I, SGD first separates XOR with an ellipse."""
    clf = QuadraticLogisticRegression(
        C=np.inf, solver="sgd", batch_size=1, learning_rate_init=0.05, max_iter=1,
        Q_init="identity", warm_start=True, random_state=0,
    )
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(1\\)"):
        for _ in range(100):
            clf.fit(XOR_X, XOR_Y)
            if clf.score(XOR_X, XOR_Y) == 1.0:
                break
    assert clf.score(XOR_X, XOR_Y) == 1.0
    eigenvalues = np.linalg.eigvalsh(clf.Q_[0])
    assert np.all(eigenvalues > 0), eigenvalues


def test_sample_weight_two_equals_repeating_samples(iris):
    X, y = iris
    weights = np.ones(y.shape[0])
    weights[::3] = 2.0
    repeated = np.repeat(np.arange(y.shape[0]), weights.astype(int))
    kwargs = dict(C=2.0, tol=1e-10, max_iter=1000)
    weighted = QuadraticLogisticRegression(**kwargs).fit(X, y, sample_weight=weights)
    plain = QuadraticLogisticRegression(**kwargs).fit(X[repeated], y[repeated])
    np.testing.assert_allclose(weighted.Q_, plain.Q_, atol=1e-5)
    np.testing.assert_allclose(weighted.predict_proba(X), plain.predict_proba(X), atol=1e-6)


def test_class_weight_equals_sample_weight(iris):
    X, y = iris
    class_weight = {0: 1.0, 1: 3.0, 2: 0.5}
    kwargs = dict(tol=1e-10, max_iter=1000)
    by_class = QuadraticLogisticRegression(class_weight=class_weight, **kwargs).fit(X, y)
    by_sample = QuadraticLogisticRegression(**kwargs).fit(
        X, y, sample_weight=np.vectorize(class_weight.get)(y)
    )
    np.testing.assert_allclose(by_class.Q_, by_sample.Q_, atol=1e-7)


def test_string_labels_and_shapes():
    X, y = make_circles(n_samples=120, noise=0.05, factor=0.5, random_state=0)
    labels = np.array(["outer", "inner"])[y]
    clf = QuadraticLogisticRegression(C=10.0).fit(X, labels)
    assert list(clf.classes_) == ["inner", "outer"]
    assert clf.score(X, labels) == 1.0
    assert clf.Q_.shape == (1, 2, 2) and clf.coef_.shape == (1, 2)
    assert clf.intercept_.shape == (1,)
    assert clf.decision_function(X).shape == (120,)
    assert set(clf.predict(X)) == {"inner", "outer"}
    # the score is the log-odds of "outer", large where x^T Q x is: Q is
    # positive definite and the boundary an ellipse
    assert np.all(np.linalg.eigvalsh(clf.Q_[0]) > 0)


def test_multiclass_shapes_and_accuracy(iris):
    X, y = iris
    clf = QuadraticLogisticRegression().fit(X, y)
    assert clf.Q_.shape == (3, 4, 4) and clf.coef_.shape == (3, 4)
    assert clf.predict_proba(X).shape == (150, 3)
    assert clf.score(X, y) > 0.95


@pytest.mark.parametrize(
    "params",
    [dict(solver="sgd", max_iter=20), dict(Q_init="random", C=np.inf, max_iter=20),
     dict(rank=2, max_iter=30)],
)
def test_same_random_state_same_model(iris, params):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="max_iter|Maximum iterations"):
        first = QuadraticLogisticRegression(random_state=7, **params).fit(X, y)
        second = QuadraticLogisticRegression(random_state=7, **params).fit(X, y)
        other = QuadraticLogisticRegression(random_state=8, **params).fit(X, y)
    np.testing.assert_array_equal(first.Q_, second.Q_)
    np.testing.assert_array_equal(first.coef_, second.coef_)
    assert not np.array_equal(first.Q_, other.Q_)


def test_random_state_leaves_global_torch_generator_alone(iris):
    X, y = iris
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(3\\)"):
        QuadraticLogisticRegression(solver="sgd", max_iter=3, random_state=0, Q_init="random").fit(
            X, y
        )
    torch.testing.assert_close(torch.rand(3), expected)


def test_pickle_round_trip(iris):
    X, y = iris
    for clf in (QuadraticLogisticRegression(), QuadraticLogisticRegression(rank=2, random_state=0)):
        clf.fit(X, y)
        restored = pickle.loads(pickle.dumps(clf))
        assert isinstance(restored.Q_, np.ndarray)
        np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize(
    "X, y, error, match",
    [
        (np.array([[0.0, np.nan], [1.0, 2.0]]), [0, 1], ValueError, "NaN"),
        (np.array([[0.0, np.inf], [1.0, 2.0]]), [0, 1], ValueError, "infinity"),
        (np.empty((0, 2)), [], ValueError, "0 sample"),
        (np.array([[0.0, 1.0], [1.0, 2.0]]), [1, 1], ValueError, "one class"),
        (np.array([[0.0, 1.0], [1.0, 2.0]]), [0.5, 1.5], ValueError, "Unknown label type"),
    ],
)
def test_bad_training_input(X, y, error, match):
    with pytest.raises(error, match=match):
        QuadraticLogisticRegression().fit(X, y)


def test_bad_predict_input(iris):
    X, y = iris
    with pytest.raises(NotFittedError):
        QuadraticLogisticRegression().predict(X)
    clf = QuadraticLogisticRegression().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :3])
    with pytest.raises(ValueError, match="NaN"):
        clf.predict(np.where(X > 2, np.nan, X))


def test_bad_parameters(iris):
    X, y = iris
    from sklearn.utils._param_validation import InvalidParameterError

    for params in (dict(C=0.0), dict(solver="adam"), dict(Q_init="ones"), dict(rank=0)):
        with pytest.raises(InvalidParameterError):
            QuadraticLogisticRegression(**params).fit(X, y)
    with pytest.raises(ValueError, match="device"):
        QuadraticLogisticRegression(device="tpu").fit(X, y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA message")
def test_cuda_request_without_cuda_is_a_clear_error(iris):
    X, y = iris
    with pytest.raises(ValueError, match="CUDA is not available"):
        QuadraticLogisticRegression(device="cuda").fit(X, y)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(iris):
    X, y = iris
    cpu = QuadraticLogisticRegression(device="cpu", tol=1e-10, max_iter=500).fit(X, y)
    gpu = QuadraticLogisticRegression(device="cuda", tol=1e-10, max_iter=500).fit(X, y)
    np.testing.assert_allclose(gpu.Q_, cpu.Q_, atol=1e-6)
    np.testing.assert_allclose(gpu.predict_proba(X), cpu.predict_proba(X), atol=1e-7)


def test_convergence_warnings(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        QuadraticLogisticRegression(max_iter=2).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        QuadraticLogisticRegression(solver="sgd", max_iter=2, random_state=0).fit(X, y)


@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_divergence_is_reported(iris, solver):
    X, y = iris
    # finite squares (1e200), but the first steps' scores overflow: the loss is
    # not finite there
    clf = QuadraticLogisticRegression(solver=solver, random_state=0)
    with pytest.warns(UserWarning, match="magnitudes from .* Standardize"):
        with pytest.warns(ConvergenceWarning, match="diverged.*StandardScaler") as record:
            clf.fit(X * 1e100, y)
    assert clf.diverged_
    assert np.all(np.isfinite(clf.Q_)) and np.isfinite(clf.loss_)
    # the warnings point at this file, not at skquad's own lines
    assert all(warning.filename == __file__ for warning in record)


@pytest.mark.parametrize("scale", [1e8, 1e80, 1e-80])
def test_extreme_scales_are_never_a_silent_poor_model(scale):
    # Issue 19: X * 1e80 gave an all-zero model "converged" (the L-BFGS
    # objective returned (inf, zeros), read as a zero gradient), X * 1e8 a
    # poor one, X * 1e-80 the zero model, all without a word.
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = QuadraticLogisticRegression().fit(X * scale, y)
    messages = [str(warning.message) for warning in caught]
    assert any("Standardize the features" in message for message in messages), messages
    if scale == 1e80:  # overflowed line-search points: reported as divergence
        assert model.diverged_
        assert any("diverged" in message for message in messages)
    assert np.all(np.isfinite(model.Q_))
    # the standardized data fits well and silently (the pipeline's problem; the default,
    # which searches quadratic_C on these rows, silently too)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert QuadraticLogisticRegression(quadratic_C=None).fit(X, y).score(X, y) > 0.7
        assert QuadraticLogisticRegression().fit(X, y).quadratic_C_ < 1.0


def test_features_whose_squares_overflow_are_refused(iris):
    X, y = iris
    with pytest.raises(ValueError, match=r"squares overflow float64.*StandardScaler"):
        QuadraticLogisticRegression().fit(X * 1e160, y)



def test_the_scale_check_reads_the_rows_the_fit_reads(iris):
    """A full-batch fit drops rows of zero weight, so their scale is not refused; SGD reads
    every row, so it still refuses them."""
    X, y = iris
    far = np.vstack([X, np.full((1, X.shape[1]), 1e160)])
    y_far = np.append(y, y[0])
    weight = np.append(np.ones(len(y)), 0.0)
    model = QuadraticLogisticRegression(max_iter=300).fit(far, y_far, sample_weight=weight)
    dropped = QuadraticLogisticRegression(max_iter=300).fit(X, y)
    np.testing.assert_array_equal(model.Q_, dropped.Q_)
    with pytest.raises(ValueError, match=r"squares overflow float64"):
        QuadraticLogisticRegression(solver="sgd", random_state=0).fit(far, y_far, sample_weight=weight)

def test_sgd_blow_up_that_stays_finite_is_divergence(iris):
    """Issue 10: a step of 1e6 took the loss to 1e91 (finite) and "converged"."""
    X, y = iris
    clf = QuadraticLogisticRegression(solver="sgd", learning_rate_init=1e6, random_state=0)
    with pytest.warns(ConvergenceWarning, match="diverged.*learning_rate_init \\(now 1e\\+06\\)"):
        clf.fit(X, y)
    assert clf.diverged_
    # the starting model (loss log(3)) was put back, not the blown-up one
    assert clf.loss_ <= np.log(3) + 1e-9
    assert np.abs(clf.decision_function(X)).max() < 10
    good = QuadraticLogisticRegression(solver="sgd", learning_rate_init=0.1, random_state=0,
                                       max_iter=5)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(5\\)"):
        good.fit(X, y)
    assert not good.diverged_ and good.loss_ < 0.7 < np.log(3)


def test_warm_start_continues_from_previous_fit(iris):
    X, y = iris
    clf = QuadraticLogisticRegression(warm_start=True, tol=1e-8, max_iter=1000).fit(X, y)
    first_Q = clf.Q_.copy()
    clf.fit(X, y)
    assert clf.n_iter_ <= 2
    np.testing.assert_allclose(clf.Q_, first_Q, atol=1e-6)
    cold = QuadraticLogisticRegression(tol=1e-8, max_iter=1000).fit(X, y)
    assert cold.n_iter_ > 5


def test_fit_intercept_false(iris):
    X, y = iris
    clf = QuadraticLogisticRegression(fit_intercept=False).fit(X, y)
    np.testing.assert_array_equal(clf.intercept_, 0.0)
    sgd = QuadraticLogisticRegression(fit_intercept=False, solver="sgd", max_iter=5,
                                      random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(5\\)"):
        sgd.fit(X, y)
    np.testing.assert_array_equal(sgd.intercept_, 0.0)


def test_float32_input_is_computed_in_float32_unless_dtype_says_otherwise(iris):
    X, y = iris
    X32 = X.astype(np.float32)
    reference = QuadraticLogisticRegression(tol=1e-10, max_iter=500).fit(X, y)
    forced = QuadraticLogisticRegression(tol=1e-10, max_iter=500, dtype="float64").fit(X32, y)
    np.testing.assert_allclose(forced.Q_, QuadraticLogisticRegression(
        tol=1e-10, max_iter=500).fit(X32.astype(np.float64), y).Q_, atol=1e-12)
    followed = QuadraticLogisticRegression(max_iter=500).fit(X32, y)
    # Fitted arrays keep the training dtype, as LogisticRegression's coef_ (issue 22).
    assert forced.Q_.dtype == forced.coef_.dtype == forced.intercept_.dtype == np.float64
    assert followed.Q_.dtype == followed.coef_.dtype == followed.intercept_.dtype == np.float32
    assert followed.predict_proba(X32).dtype == np.float32
    assert followed.decision_function(X32).dtype == np.float32
    assert followed.predict_proba(X).dtype == np.float64  # result_type(X, coef_), as LogisticRegression
    # float32 arithmetic: the same optimum to float32 accuracy, not to float64's
    np.testing.assert_allclose(followed.predict_proba(X), reference.predict_proba(X), atol=2e-3)
    assert not np.array_equal(followed.Q_, forced.Q_)


def test_low_rank_path(iris):
    X, y = iris
    full = QuadraticLogisticRegression(tol=1e-10, max_iter=2000).fit(X, y)
    low = QuadraticLogisticRegression(rank=1, random_state=0, max_iter=500).fit(X, y)
    assert low.Q_vectors_.shape == (3, 4, 1) and low.Q_scales_.shape == (3, 1)
    for k in range(3):
        assert np.linalg.matrix_rank(low.Q_[k], tol=1e-8) <= 1
    # scores from the factors equal the dense formula with Q_
    expected = np.einsum("ni,kij,nj->nk", X, low.Q_, X) + X @ low.coef_.T + low.intercept_
    np.testing.assert_allclose(low.decision_function(X), expected, rtol=1e-10)
    assert low.score(X, y) > 0.9
    # a rank above d can represent the full optimum, and the non-convex path
    # reaches it here; a PSD start (identity) with rank d stays in a worse
    # local optimum (no sign of s_j crosses zero): the non-convexity is real
    sw = np.ones(len(y))
    full_objective = _objective(X, y, sw, 1.0, full.Q_, full.coef_, full.intercept_)
    high = QuadraticLogisticRegression(rank=6, random_state=0, tol=1e-10, max_iter=3000)
    high.fit(X, y)
    high_objective = _objective(X, y, sw, 1.0, high.Q_, high.coef_, high.intercept_)
    assert high_objective >= full_objective * (1 - 1e-9)
    assert high_objective == pytest.approx(full_objective, rel=1e-6)
    psd = QuadraticLogisticRegression(rank=4, Q_init="identity", random_state=0, tol=1e-10,
                                      max_iter=3000).fit(X, y)
    psd_objective = _objective(X, y, sw, 1.0, psd.Q_, psd.coef_, psd.intercept_)
    assert psd_objective > full_objective * 1.01
    # a refit without rank drops the factors
    low.set_params(rank=None).fit(X, y)
    assert not hasattr(low, "Q_vectors_")


def test_pipeline_and_grid_search():
    X, y = make_circles(n_samples=200, noise=0.1, factor=0.4, random_state=1)
    X = X * 30.0 + 5.0  # unscaled on purpose: the pipeline standardises
    pipe = make_pipeline(StandardScaler(), QuadraticLogisticRegression())
    search = GridSearchCV(
        pipe,
        {"quadraticlogisticregression__C": [0.01, 10.0],
         "quadraticlogisticregression__solver": ["lbfgs"]},
        cv=3,
    )
    search.fit(X, y)
    assert search.best_params_["quadraticlogisticregression__C"] == 10.0
    assert search.score(X, y) > 0.95


def test_verbose_prints_progress(iris, capsys):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        QuadraticLogisticRegression(verbose=1, max_iter=3).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(2\\)"):
        QuadraticLogisticRegression(verbose=1, solver="sgd", max_iter=2, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "Iteration 1", "Iteration 2", "Iteration 3", "Iteration 1", "Iteration 2"
    ]
    # one format for both solvers (skquad._foundation._reporting.progress_line), elapsed cumulative
    elapsed = [float(line.rsplit("elapsed = ", 1)[1].rstrip("s")) for line in lines]
    assert elapsed[0] <= elapsed[1] <= elapsed[2] and elapsed[3] <= elapsed[4]
    assert all(", loss = " in line for line in lines)


def test_docstring_examples_run():
    import doctest

    import skquad.linear_model._logistic

    result = doctest.testmod(skquad.linear_model._logistic, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_partial_fit_learns_from_parts(iris):
    X, y = iris
    order = np.random.RandomState(0).permutation(len(y))
    X, y = X[order], y[order]
    clf = QuadraticLogisticRegression(solver="sgd", learning_rate_init=0.1, random_state=0)
    with pytest.raises(ValueError, match="classes must be passed"):
        clf.partial_fit(X[:10], y[:10])
    # the first part holds a single class: fine once the classes are given
    first = np.flatnonzero(y == 0)[:5]
    clf.partial_fit(X[first], y[first], classes=[0, 1, 2])
    assert clf.n_iter_ == 1 and list(clf.classes_) == [0, 1, 2]
    for _ in range(30):
        for part in np.array_split(np.arange(len(y)), 3):
            clf.partial_fit(X[part], y[part])
    assert clf.n_iter_ == 91 and len(clf.loss_curve_) == 91
    assert clf.score(X, y) > 0.9
    with pytest.raises(ValueError, match="not the same as on the first call"):
        clf.partial_fit(X, y, classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match="features"):
        clf.partial_fit(X[:, :3], y)
    # reproducible from random_state
    again = QuadraticLogisticRegression(solver="sgd", learning_rate_init=0.1, random_state=0)
    again.partial_fit(X[first], y[first], classes=[0, 1, 2])
    for _ in range(30):
        for part in np.array_split(np.arange(len(y)), 3):
            again.partial_fit(X[part], y[part])
    np.testing.assert_array_equal(again.Q_, clf.Q_)


def test_partial_fit_is_for_sgd_only():
    assert not hasattr(QuadraticLogisticRegression(), "partial_fit")
    assert hasattr(QuadraticLogisticRegression(solver="sgd"), "partial_fit")


@pytest.mark.parametrize("before, after", [(None, 2), (2, None), (2, 3)])
def test_partial_fit_refuses_a_changed_rank(before, after):
    # Issue 19: partial_fit after set_params(rank=2) silently started over.
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    model = QuadraticLogisticRegression(solver="sgd", rank=before, random_state=0)
    for _ in range(3):
        model.partial_fit(X, y, classes=[0, 1])
    state = (model.n_iter_, model.t_, list(model.loss_curve_), model.Q_.copy())
    model.set_params(rank=after)
    with pytest.raises(ValueError, match=rf"rank={after!r} differs .* rank={before!r}.*call fit"):
        model.partial_fit(X, y)
    assert (model.n_iter_, model.t_, model.loss_curve_) == state[:3]
    np.testing.assert_array_equal(model.Q_, state[3])
    model.set_params(rank=before).partial_fit(X, y)  # back to the fitted rank: continues
    assert model.n_iter_ == state[0] + 1


@pytest.mark.parametrize("container", ["csr", "csc"])
@pytest.mark.parametrize(
    "params",
    [dict(tol=1e-10), dict(rank=2, random_state=0), dict(solver="sgd", random_state=0, max_iter=20)],
)
def test_sparse_input_gives_the_dense_model(iris, params, container, thread_counts, perturb_ulps):
    import scipy.sparse

    X, y = iris
    # A few ulps off the bit pattern: the comparison must hold for any rounding
    # of the data, not for one (issue 19); zeros stay zeros.
    X = perturb_ulps(np.where(np.abs(X) < 0.5, 0.0, X))  # 40 % zeros
    sparse = getattr(scipy.sparse, f"{container}_matrix")(X)
    models = []
    for data in (X, sparse):
        model = QuadraticLogisticRegression(**params)
        if "solver" in params:
            with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(20\\)"):
                models.append(model.fit(data, y))
        else:
            models.append(model.fit(data, y))
    dense_model, sparse_model = models
    # The two fits do the same arithmetic in another order (sparse products,
    # merged rows in another order): each gradient differs by rounding,
    # n * eps * sum|terms| ~ 150 * 1.1e-16 relative. The convex fit, run to
    # tol=1e-10, contracts such errors (at the default tol=1e-4 each fit stops
    # anywhere within about tol / curvature of the optimum: the two paths
    # stopped 1.3e-5 apart under another OpenBLAS build); the rank-2 fit
    # (non-convex, 77 L-BFGS steps) and SGD carry them along their path, where
    # they grow with the steps' condition numbers. Measured on this machine under 1 and 2 threads and 4-ulp input
    # perturbations: at most 4e-10 of the largest decision value (rank 2),
    # 3e-14 (convex). The bound below, 1e-6 of the largest score,
    # leaves a 2500x margin for other CPUs' rounding, and stays 1e5 times
    # smaller than what a wrong row, column or weight would change (O(1)).
    scale = np.abs(dense_model.decision_function(X)).max()
    tol = 1e-6 * scale
    np.testing.assert_allclose(sparse_model.Q_, dense_model.Q_, rtol=0, atol=tol)
    dense_scores = dense_model.decision_function(X)
    np.testing.assert_allclose(sparse_model.decision_function(sparse), dense_scores,
                               rtol=0, atol=tol)
    np.testing.assert_allclose(
        sparse_model.predict_proba(sparse), dense_model.predict_proba(X), rtol=0, atol=tol
    )
    # Labels agree wherever the margin is beyond rounding (a tie can go either way).
    ordered = np.sort(dense_scores, axis=1)
    clear = ordered[:, -1] - ordered[:, -2] > 2 * tol
    np.testing.assert_array_equal(sparse_model.predict(sparse)[clear], dense_model.predict(X)[clear])
    # a model fitted on sparse data predicts dense data alike, and back
    np.testing.assert_allclose(sparse_model.decision_function(X),
                               dense_model.decision_function(sparse), rtol=0, atol=tol)


def test_cuda_fitted_model_predicts_after_unpickling_without_cuda(iris):
    """Issue 10: a QLR fitted with device="cuda" must predict on a CPU-only machine."""
    X, y = iris
    clf = QuadraticLogisticRegression(device="cpu").fit(X, y)
    expected = clf.predict_proba(X)
    clf.device = "cuda"  # as if fitted on a GPU
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(restored.predict_proba(X), expected, rtol=1e-12)
    assert restored.device == "cuda"  # the parameter is kept as the user set it


@pytest.mark.parametrize("rank", [None, 2])
def test_weights_are_exactly_repetitions_for_lbfgs(iris, rank):
    """A deterministic solver: sample_weight=k gives the model of k repeated rows."""
    X, y = iris
    weights = np.random.RandomState(0).randint(0, 4, size=len(y))
    weighted = QuadraticLogisticRegression(rank=rank, random_state=0).fit(X, y, sample_weight=weights)
    order = np.random.RandomState(1).permutation(int(weights.sum()))
    repeated = QuadraticLogisticRegression(rank=rank, random_state=0).fit(
        np.repeat(X, weights, axis=0)[order], np.repeat(y, weights)[order]
    )
    np.testing.assert_array_equal(weighted.Q_, repeated.Q_)
    np.testing.assert_array_equal(weighted.predict_proba(X), repeated.predict_proba(X))


def test_float_learning_rate_is_deprecated_for_learning_rate_init(iris):
    X, y = iris
    old = QuadraticLogisticRegression(solver="sgd", learning_rate=0.05, max_iter=3, random_state=0)
    with pytest.warns(FutureWarning, match="learning_rate_init=0.05") as record:
        with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
            old.fit(X, y)
    assert any(item.filename == __file__ for item in record)
    new = QuadraticLogisticRegression(solver="sgd", learning_rate_init=0.05, max_iter=3,
                                      random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        new.fit(X, y)
    np.testing.assert_array_equal(old.Q_, new.Q_)


def test_invscaling_schedule_uses_samples_seen(iris):
    X, y = iris
    constant = QuadraticLogisticRegression(solver="sgd", learning_rate_init=0.5, max_iter=4,
                                           random_state=0)
    scaled = QuadraticLogisticRegression(solver="sgd", learning_rate="invscaling",
                                         learning_rate_init=0.5, power_t=0.5, max_iter=4,
                                         random_state=0)
    for model in (constant, scaled):
        with pytest.warns(ConvergenceWarning, match="Maximum iterations \\(4\\)"):
            model.fit(X, y)
    assert scaled.t_ == constant.t_ == 4 * len(y)
    # one batch per epoch: epoch k reports the loss before its step, so the
    # first two agree (the first step is at learning_rate_init in both)
    assert scaled.loss_curve_[:2] == constant.loss_curve_[:2]
    assert scaled.loss_curve_[2] != constant.loss_curve_[2]


def test_max_fun_stops_lbfgs_and_is_named(iris):
    X, y = iris
    clf = QuadraticLogisticRegression(max_fun=1)
    with pytest.warns(ConvergenceWarning, match="max_fun=1") as record:
        clf.fit(X, y)
    assert "max_iter" not in str(record[0].message)
    assert clf.n_iter_ <= 1


_CONCURRENT_FITS = """
import json, threading
from concurrent.futures import ThreadPoolExecutor
import torch
from sklearn.datasets import load_iris
from sklearn.preprocessing import StandardScaler
from skquad import QuadraticLogisticRegression
X, y = load_iris(return_X_y=True)
X = StandardScaler().fit_transform(X)
torch.set_num_threads(2)
with ThreadPoolExecutor(4) as pool:
    scores = list(pool.map(
        lambda C: QuadraticLogisticRegression(C=C).fit(X, y).score(X, y),
        [0.1, 1.0, 10.0, 100.0, 0.5, 5.0, 50.0, 2.0],
    ))
    after = list(pool.map(lambda _: torch.get_num_threads(), range(8)))
print(json.dumps({"scores": scores, "after": after, "main": torch.get_num_threads()}))
"""


def test_concurrent_fits_leave_torch_threads_as_they_were():
    """Issue 10: concurrent fits in a thread pool left workers at 1 torch thread.

    In a fresh interpreter: torch's thread counts are process-wide state, which
    the tests run before this one in the same process (pytest-xdist) may have set.
    """
    import json
    import subprocess
    import sys

    output = subprocess.run([sys.executable, "-c", _CONCURRENT_FITS], capture_output=True,
                            text=True, check=True).stdout
    result = json.loads(output.splitlines()[-1])
    assert min(result["scores"]) > 0.9
    assert set(result["after"]) == {2} and result["main"] == 2


def test_a_fit_too_large_for_memory_is_refused_before_allocating(monkeypatch):
    # Issue 19: 10 000 features at full rank tried to allocate tens of GB.
    import skquad._foundation._memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda: 2**28)  # 256 MiB
    X = np.zeros((20, 2_000))
    X[:, :2] = np.random.RandomState(0).randn(20, 2)
    # three classes: L-BFGS (a binary problem with 20 rows is fitted by the
    # dual Newton solver, whose memory is O(d^2 + n^2): 0.1 GiB here)
    y = np.arange(20) % 3
    # 3 x (2000 x 2000 + 2001) = 1.2e7 parameters x 26 float64 copies = 2.3 GiB
    with pytest.raises(MemoryError, match=r"rank=None needs about 2\.3 GiB .* set a small rank"):
        QuadraticLogisticRegression().fit(X, y)
    # at rank 8: 5.4e4 parameters, 11 MiB
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        QuadraticLogisticRegression(rank=8, max_iter=2, random_state=0).fit(X, y)


def test_predictions_in_row_blocks_equal_whole(monkeypatch):
    """Large X is scored in float64 row blocks (no float64 copy of the whole X): same scores."""
    import skquad.linear_model._logistic as logistic

    rng = np.random.RandomState(0)
    X = rng.standard_normal((300, 6)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = QuadraticLogisticRegression().fit(X, y)
    whole = model.decision_function(X)
    monkeypatch.setattr(logistic, "_PREDICTION_ROW_ELEMENTS", 6 * 7)  # blocks of 7 rows
    blocks = model.decision_function(X)
    assert blocks.dtype == whole.dtype == np.float32
    np.testing.assert_array_equal(blocks, whole)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_float64_fit_through_its_float32_twin_reaches_the_float64_fits_optimum(monkeypatch, n_classes):
    """A float64 L-BFGS fit runs its first phase on float32 products (the float32 twin)
    and ends on a float64 gradient test: the same objective as the fit without the twin,
    to what tol allows, and a float64 loss_. X * 1e10 has no twin (float32 squares)."""
    from skquad.nn import quadratic_form

    rng = np.random.RandomState(0)
    X = rng.randn(1200, 9)
    y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).astype(int) + (n_classes == 3) * (X[:, 3] > 0.5)
    twins = []
    original = quadratic_form.float32_twin
    monkeypatch.setattr(quadratic_form, "float32_twin",
                        lambda *a: twins.append(original(*a)) or twins[-1])
    params = dict(solver="lbfgs", tol=1e-6)
    mixed = QuadraticLogisticRegression(**params, quadratic_C=None).fit(X, y)
    assert twins and twins[-1] is not None
    monkeypatch.setattr(quadratic_form, "float32_twin", lambda *a: None)
    pure = QuadraticLogisticRegression(**params, quadratic_C=None).fit(X, y)
    assert mixed.Q_.dtype == np.float64
    # |J - J*| <= |g|^2 / (2 mu) with mu >= l2 = 1/1200 and |g|_inf <= 1e-6 on ~165 entries
    assert abs(mixed.loss_ - pure.loss_) <= 1e-8
    np.testing.assert_allclose(mixed.predict_proba(X), pure.predict_proba(X), atol=1e-4)
    twins.clear()
    monkeypatch.setattr(quadratic_form, "float32_twin",
                        lambda *a: twins.append(original(*a)) or twins[-1])
    with warnings.catch_warnings():
        # two iterations on badly scaled rows: the fit warns that it stopped and that X needs scaling
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UserWarning)
        QuadraticLogisticRegression(**params, max_iter=2, quadratic_C=None).fit(X * 1e10, y)
    assert twins == [None]


def test_float32_twin_is_skipped_when_its_copy_does_not_fit_in_memory(monkeypatch):
    """The float32 copy of the rows is an optional speed-up: with too little memory
    for it the fit runs in float64 only (no coarse objective built), reaches the
    same optimum, and is not refused."""
    from skquad.nn import quadratic_form

    rng = np.random.RandomState(1)
    X = rng.randn(800, 6)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    coarse_rows = []
    build = quadratic_form.packed_logistic_objective

    def recording(rows, *args, **kwargs):
        if rows.dtype == np.float32:
            coarse_rows.append(rows.shape)
        return build(rows, *args, **kwargs)

    monkeypatch.setattr(quadratic_form, "packed_logistic_objective", recording)
    with_twin = QuadraticLogisticRegression(solver="lbfgs", tol=1e-6).fit(X, y)
    assert coarse_rows
    coarse_rows.clear()
    monkeypatch.setattr(quadratic_form, "available_memory", lambda: X.nbytes // 2)
    without = QuadraticLogisticRegression(solver="lbfgs", tol=1e-6).fit(X, y)
    assert coarse_rows == []
    assert abs(with_twin.loss_ - without.loss_) <= 1e-8
