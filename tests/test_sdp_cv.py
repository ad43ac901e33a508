"""SDPQuantizedClassifierCV (skquad/quantized/_sdp_cv.py): beta by cross-validation."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

import skquad.quantized._sdp_cv as cv_module
from skquad.quantized import SDPQuantizedClassifier, SDPQuantizedClassifierCV


@pytest.fixture(scope="module")
def cancer():
    X, y = load_breast_cancer(return_X_y=True)
    return train_test_split(X[:, :8], y, test_size=0.3, random_state=0, stratify=y)


@pytest.fixture(scope="module")
def fitted(cancer):
    X_train, _, y_train, _ = cancer
    return SDPQuantizedClassifierCV(n_neurons=100, betas=5, cv=3, random_state=0).fit(X_train, y_train)


def test_path_scores_and_choice(fitted, cancer):
    X_train, X_test, y_train, y_test = cancer
    model = fitted
    assert model.betas_.shape == (5,) and np.all(np.diff(model.betas_) < 0)
    assert model.scores_.shape == (3, 5)
    best = int(np.argmax(model.scores_.mean(axis=0)))
    assert model.beta_ == model.betas_[best]
    # The largest beta is the zero network's: the linear term alone (linear_term="auto" on a
    # binary problem); the chosen one is at least as good.
    zero = SDPQuantizedClassifier(n_neurons=100, beta=model.betas_[0], random_state=0).fit(X_train, y_train)
    assert np.all(zero.alpha_ == 0)
    inside = np.clip(X_test, zero.data_min_, zero.data_max_)  # clip_inputs
    np.testing.assert_allclose(zero.decision_function(X_test), inside @ zero.linear_coef_[0] + zero.intercept_[0])
    assert model.scores_[:, best].mean() >= model.scores_[:, 0].mean() > 0.9
    assert model.score(X_test, y_test) > 0.9  # majority class: 0.63
    # The scores are those of SDPQuantizedClassifier at each beta on each fold.
    folds = list(StratifiedKFold(3).split(X_train, y_train))
    train, test = folds[1]
    single = SDPQuantizedClassifier(n_neurons=100, beta=model.betas_[2], random_state=0)
    single.fit(X_train[train], y_train[train])
    assert single.score(X_train[test], y_train[test]) == pytest.approx(model.scores_[1, 2])


def test_one_standard_error_takes_the_largest_beta_within_it(fitted, cancer):
    X_train, _, y_train, _ = cancer
    model = clone(fitted).set_params(selection_rule="one_standard_error").fit(X_train, y_train)
    np.testing.assert_allclose(model.scores_, fitted.scores_)
    mean = fitted.scores_.mean(axis=0)
    best = int(np.argmax(mean))
    standard_error = fitted.scores_[:, best].std(ddof=1) / np.sqrt(3)
    within = np.flatnonzero(mean >= mean[best] - standard_error)
    assert model.beta_ == fitted.betas_[within[0]] >= fitted.beta_


def test_refitted_model_is_the_single_estimator_at_beta(fitted, cancer):
    X_train, X_test, y_train, _ = cancer
    single = SDPQuantizedClassifier(n_neurons=100, beta=fitted.beta_, random_state=0).fit(X_train, y_train)
    np.testing.assert_array_equal(fitted.U_, single.U_)
    np.testing.assert_allclose(fitted.decision_function(X_test), single.decision_function(X_test))
    assert fitted.lower_bound_ == pytest.approx(single.lower_bound_)
    assert fitted.objective_ == pytest.approx(single.objective_)
    # Methods of the single estimator work on the CV one, at beta_.
    resampled = clone(fitted).fit(X_train, y_train).resample(50, random_state=1)
    single.resample(50, random_state=1)
    assert resampled.objective_ == pytest.approx(single.objective_)


def test_path_is_warm_started_from_the_largest_beta(cancer, monkeypatch):
    X_train, _, y_train, _ = cancer
    seen = []
    original = cv_module.SDPQuantizedClassifier.fit

    def recording_fit(self, X, y, sample_weight=None):
        seen.append((self.warm_start, self.beta))
        return original(self, X, y, sample_weight=sample_weight)

    monkeypatch.setattr(cv_module.SDPQuantizedClassifier, "fit", recording_fit)
    model = SDPQuantizedClassifierCV(n_neurons=30, betas=[1e-3, 1e-1, 1e-2], cv=2, random_state=0)
    model.fit(X_train, y_train)
    np.testing.assert_array_equal(model.betas_, [1e-1, 1e-2, 1e-3])
    path = seen[:3]
    assert [beta for _, beta in path] == [1e-1, 1e-2, 1e-3]
    assert all(warm for warm, _ in path)
    assert len(seen) == 2 * 3 + 1  # two folds along the path, then the refit


def test_refit_false_and_scoring(cancer):
    X_train, _, y_train, _ = cancer
    model = SDPQuantizedClassifierCV(
        n_neurons=30, betas=3, cv=2, refit=False, scoring="roc_auc", random_state=0
    ).fit(X_train, y_train)
    assert model.scores_.shape == (2, 3) and np.all(model.scores_ <= 1.0)
    assert model.predict(X_train).shape == y_train.shape


def test_bad_betas(cancer):
    X_train, _, y_train, _ = cancer
    with pytest.raises(ValueError, match="betas"):
        SDPQuantizedClassifierCV(betas=[-1.0]).fit(X_train, y_train)
    with pytest.raises(ValueError, match="betas"):
        SDPQuantizedClassifierCV(betas=0).fit(X_train, y_train)


# A short path and solver budget: the checks exercise the API, not the optimum.
@parametrize_with_checks([SDPQuantizedClassifierCV(n_neurons=50, betas=2, cv=2, max_iter=200, tol=1e-3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_parallel_folds_give_the_same_search(cancer):
    X_train, _, y_train, _ = cancer
    common = {"n_neurons": 30, "betas": 3, "cv": 2, "random_state": 0}
    serial = SDPQuantizedClassifierCV(**common).fit(X_train, y_train)
    parallel = SDPQuantizedClassifierCV(n_jobs=2, **common).fit(X_train, y_train)
    np.testing.assert_allclose(parallel.scores_, serial.scores_)
    assert parallel.beta_ == serial.beta_


def _accuracy_unless_large_beta(threshold):
    """A scorer that fails (NaN) for the betas at or above ``threshold``."""

    def score(estimator, X, y):
        if estimator.beta >= threshold:
            return np.nan
        return float(np.mean(estimator.predict(X) == y))

    return score


def test_non_finite_fold_scores_rank_last_with_a_warning():
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    betas = [1e-1, 1e-2, 1e-3]
    # The largest beta would win a NaN-blind argmax (it is first on the path).
    model = SDPQuantizedClassifierCV(
        betas=betas, cv=2, n_neurons=30, scoring=_accuracy_unless_large_beta(5e-2), random_state=0
    )
    with pytest.warns(UserWarning, match="non-finite cross-validated scores"):
        model.fit(X, y)
    assert model.beta_ < 5e-2
    assert np.isnan(model.scores_[:, 0]).all()


def test_all_non_finite_fold_scores_raise():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = (X[:, 0] > 0).astype(int)
    model = SDPQuantizedClassifierCV(
        betas=[1e-1, 1e-2], cv=2, n_neurons=20, scoring=_accuracy_unless_large_beta(0.0)
    )
    with pytest.raises(ValueError, match="non-finite"):
        model.fit(X, y)
    assert not hasattr(model, "beta_")


@pytest.mark.parametrize(
    "params", [{"weight_levels": 3}, {"activation": (1.0, 0.5, -0.2)}, {"loss": "hinge"}]
)
def test_the_top_of_the_path_is_the_zero_network_for_every_lifting(params):
    """The path starts where the fit's own lifting certifies the zero network."""
    rng = np.random.RandomState(1)
    X = rng.randn(40, 3)
    y = (X[:, 0] * X[:, 1] > 0).astype(int)
    model = SDPQuantizedClassifierCV(betas=3, n_neurons=20, **params)
    model._validate_params()
    X_checked, y_encoded, weight = model._validate_training_data(X, y)
    top = model._path(X_checked, y_encoded, weight)[0]
    single = SDPQuantizedClassifier(beta=top, n_neurons=20, **params)
    with pytest.warns(UserWarning, match="relaxed optimum is the zero network"):
        single.fit(X, y)
    np.testing.assert_array_equal(single.rho_, 0.0)


def test_fold_scores_weight_held_out_rows_as_repetitions():
    # Issue 19: held-out rows were scored without their weights, so an integer
    # weight did not score as that many repeated rows, and the chosen beta (and
    # sklearn's check_sample_weight_equivalence) depended on near-ties.
    from sklearn.model_selection import LeaveOneGroupOut

    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    y = (X[:, 0] + 0.5 * rng.randn(30) > 0).astype(int)
    weight = rng.randint(1, 4, size=30)
    groups = np.arange(30) % 2
    X_rep, y_rep, g_rep = (np.repeat(a, weight, axis=0) for a in (X, y, groups))
    common = dict(n_neurons=20, betas=[1e-1, 1e-3], max_iter=100, random_state=0)
    weighted = SDPQuantizedClassifierCV(
        cv=list(LeaveOneGroupOut().split(X, groups=groups)), **common
    ).fit(X, y, sample_weight=weight)
    repeated = SDPQuantizedClassifierCV(
        cv=list(LeaveOneGroupOut().split(X_rep, groups=g_rep)), **common
    ).fit(X_rep, y_rep)
    # accuracy with integer weights is a ratio of integers: exactly equal
    # unless a held-out prediction sits on the boundary (none does here: the
    # two fits agree to solver rounding, far from the 1/45 accuracy step)
    np.testing.assert_allclose(weighted.scores_, repeated.scores_, rtol=0, atol=1e-12)


def test_the_path_from_weights_is_the_path_from_repeated_rows():
    # beta_max is computed on the merged distribution, as the fit sees it: a
    # summation over repeated rows in another order moved it by an ulp, and
    # the L1 refit of the second layer amplified that to 1e-7 in
    # predict_proba (check_sample_weight_equivalence failed on some draws).
    rng = np.random.RandomState(0)
    X = rng.rand(12, 4)
    y = rng.randint(0, 2, size=12)
    weight = rng.randint(1, 4, size=12)
    order = rng.permutation(int(weight.sum()))
    X_repeated, y_repeated = np.repeat(X, weight, axis=0)[order], np.repeat(y, weight)[order]
    paths = []
    for data in ((X, y, weight), (X_repeated, y_repeated, None)):
        search = SDPQuantizedClassifierCV(betas=3)
        X_valid, y_encoded, sample_weight = search._validate_training_data(*data)
        paths.append(search._path(X_valid, y_encoded, sample_weight))
    np.testing.assert_array_equal(paths[0], paths[1])
