"""beta="auto" chosen on held-out rows (skquad/quantized/_beta_search.py), and the linear term
of SDPQuantizedClassifier (linear_term="auto") beside which it chooses."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_circles
from sklearn.linear_model import LogisticRegression

import skquad.quantized._beta_search as beta_search
from skquad import SDPQuantizedClassifier, SDPQuantizedClassifierCV, SDPQuantizedRegressor
from skquad._foundation._held_out import HeldOutMisclassifications
from skquad.convex.path import auto_beta


def _noisy_linear(seed, n_train=300, n_test=1000, d=30):
    """Two classes by the sign of ``x0 + x1`` plus noise, among ``d`` standard normal inputs."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_train + n_test, d))
    y = (X[:, 0] + X[:, 1] + rng.standard_normal(len(X)) > 0).astype(int)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _rule(model, n_samples):
    """The (p / n)^2 rule's beta on the fitted model's beta_max_."""
    return auto_beta(model.beta_max_, "squared", model.n_lifted_features_, n_samples)


def test_linear_term_auto_is_fitted_on_two_classes_with_the_squared_loss():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((120, 4))
    binary, three = (X[:, 0] > 0).astype(int), np.digitize(X[:, 0], [-0.5, 0.5])
    params = dict(n_neurons=20, beta=0.01, random_state=0)
    assert SDPQuantizedClassifier(**params).fit(X, binary).linear_coef_.shape == (1, 4)
    # three classes' one-vs-rest squared scores can mask one: "auto" fits none, True does
    assert not hasattr(SDPQuantizedClassifier(**params).fit(X, three), "linear_coef_")
    assert SDPQuantizedClassifier(linear_term=True, **params).fit(X, three).linear_coef_.shape == (3, 4)
    for kwargs in ({"loss": "hinge"}, {"loss": "logistic"}, {"fit_intercept": False}, {"linear_term": False}):
        assert not hasattr(SDPQuantizedClassifier(**params | kwargs).fit(X, binary), "linear_coef_"), kwargs
    with pytest.raises(ValueError, match=r"linear_term=True needs loss='squared'.*loss='logistic'"):
        SDPQuantizedClassifier(linear_term=True, loss="logistic", **params).fit(X, binary)


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_scores_as_logistic_regression_on_a_noisy_linear_boundary(seed):
    """The paper's problem at the (p / n)^2 rule fits the noise with ±1 neurons that cannot
    isolate two inputs; the linear term and the held-out beta recover the linear model."""
    X, y, X_test, y_test = _noisy_linear(seed)
    linear = LogisticRegression().fit(X, y).score(X_test, y_test)
    model = SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(X, y)
    assert model.score(X_test, y_test) >= linear - 0.02
    assert model.beta_ == model.beta_max_  # the held-out rows preferred the linear term alone
    network_alone = SDPQuantizedClassifier(n_neurons=200, linear_term=False, random_state=0).fit(X, y)
    paper = SDPQuantizedClassifier(n_neurons=200, linear_term=False, beta=_rule(network_alone, len(y)),
                                   random_state=0).fit(X, y)
    assert paper.score(X_test, y_test) < linear - 0.1


def test_auto_keeps_the_network_where_the_classes_need_it():
    X, y = make_circles(n_samples=600, noise=0.1, factor=0.5, random_state=0)
    X_train, y_train, X_test, y_test = X[:400], y[:400], X[400:], y[400:]
    model = SDPQuantizedClassifier(n_neurons=300, random_state=0).fit(X_train, y_train)
    assert model.beta_ < model.beta_max_ and np.any(model.alpha_ != 0)
    assert model.score(X_test, y_test) > 0.9
    assert LogisticRegression().fit(X_train, y_train).score(X_test, y_test) < 0.7


def test_a_weight_of_two_chooses_as_a_repeated_row():
    X, y, _, _ = _noisy_linear(2, n_train=150, d=6)
    weight = np.where(np.arange(150) % 3 == 0, 2.0, 1.0)
    repeated = np.repeat(np.arange(150), weight.astype(int))
    params = dict(n_neurons=50, random_state=0)
    weighted = SDPQuantizedClassifier(**params).fit(X, y, sample_weight=weight)
    copies = SDPQuantizedClassifier(**params).fit(X[repeated], y[repeated])
    assert weighted.beta_ == copies.beta_
    np.testing.assert_allclose(weighted.decision_function(X), copies.decision_function(X), rtol=1e-8, atol=1e-10)


def test_class_weights_count_once_in_the_search():
    X, y, _, _ = _noisy_linear(3, n_train=200, d=6)
    params = dict(n_neurons=50, random_state=0)
    by_class = SDPQuantizedClassifier(class_weight={0: 1.0, 1: 3.0}, **params).fit(X, y)
    by_sample = SDPQuantizedClassifier(**params).fit(X, y, sample_weight=np.where(y == 1, 3.0, 1.0))
    assert by_class.beta_ == by_sample.beta_
    np.testing.assert_allclose(by_class.decision_function(X), by_sample.decision_function(X), rtol=1e-8, atol=1e-10)


def test_the_misclassification_scorer_keeps_each_rows_weighted_error():
    class Fixed:
        def predict(self, X):
            return np.array([0, 1, 1, 0])

    scorer = HeldOutMisclassifications()
    assert scorer(Fixed(), None, np.array([0, 1, 0, 1])) == -2.0
    assert scorer(Fixed(), None, np.array([1, 1, 1, 1]), sample_weight=np.array([1.0, 2.0, 3.0, 4.0])) == -5.0
    np.testing.assert_array_equal(scorer.by_candidate(2), [[0, 1], [0, 0], [1, 0], [1, 4]])


def test_where_the_rows_leave_no_choice_auto_is_the_rule():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((60, 3))
    y = (X[:, 0] > 0).astype(int)
    few = SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X[:15], y[:15])  # under 20 rows
    assert few.beta_ == pytest.approx(_rule(few, 15), rel=1e-12)
    # a class of one distinct row (weight 30) is missing from the training fifths that hold it out
    X2, y2 = np.vstack([X[y == 0], np.full((1, 3), 3.0)]), np.append(y[y == 0], 1)
    weight = np.append(np.ones(len(X2) - 1), 30.0)
    lonely = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X2, y2, sample_weight=weight)
    assert lonely.beta_ == pytest.approx(_rule(lonely, weight.sum()), rel=1e-12)


def _spy_on_the_search(monkeypatch, chosen_fraction):
    """Replace the search by one that records its arguments and returns ``chosen_fraction`` of
    the largest candidate's beta."""
    import skquad.quantized._sdp as sdp

    calls = []

    def held_out_beta(candidate, X, y, sample_weight, betas, scorer, *, choice):
        calls.append(dict(params=candidate.get_params(), betas=betas, choice=choice))
        return float(betas[0] * chosen_fraction)

    monkeypatch.setattr(sdp, "held_out_beta", held_out_beta)
    return calls


def test_three_classes_search_and_keep_the_rule_unless_held_out_rows_prefer_another(monkeypatch):
    """Without a linear term (three classes by default) the strongest penalties leave a
    near-constant network, no safer a model: the rule's beta is a candidate, kept unless
    another's held-out error is lower by more than one standard error, and beta_max (a
    constant) is never offered. With a term (two classes) the rule of one standard error
    towards the term alone stays."""
    from skquad._foundation._held_out import (
        one_standard_error_choice, preferred_within_one_standard_error,
    )

    rng = np.random.default_rng(9)
    X = rng.standard_normal((200, 3))
    three = np.digitize(X[:, 0] + 0.5 * rng.standard_normal(200), [-0.5, 0.5])
    calls = _spy_on_the_search(monkeypatch, 0.5)
    model = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, three)
    assert not hasattr(model, "linear_coef_")
    choice, betas = calls[0]["choice"], calls[0]["betas"]
    assert len(calls) == 1 and choice.func is preferred_within_one_standard_error
    assert betas[choice.keywords["preferred"]] == pytest.approx(_rule(model, 200), rel=1e-9)
    assert np.all(betas < model.beta_max_) and np.all(np.diff(betas) < 0)
    assert model.beta_ == betas[0] * 0.5
    binary = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, (three > 0).astype(int))
    assert hasattr(binary, "linear_coef_") and calls[1]["choice"] is one_standard_error_choice
    assert calls[1]["betas"][0] == binary.beta_max_  # the linear term alone is offered


@pytest.mark.parametrize("refit, candidates_refit", [("auto", True), ("logistic", True), (False, False)])
def test_the_candidates_refit_by_least_squares(monkeypatch, refit, candidates_refit):
    """The logistic refit and "auto"'s held-out choice of it cost most of a three-class fit:
    the candidates refit by least squares, the fit at the chosen beta as asked."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((150, 3))
    y = np.digitize(X[:, 0] * X[:, 1], [-0.3, 0.3])
    calls = _spy_on_the_search(monkeypatch, 1.0)
    model = SDPQuantizedClassifier(n_neurons=30, refit_output_layer=refit, random_state=0).fit(X, y)
    assert calls[0]["params"]["refit_output_layer"] is candidates_refit
    expected = {"auto": ("squared", "logistic"), "logistic": ("logistic",), False: (None,)}[refit]
    assert model.refit_loss_ in expected


def test_a_three_class_search_chooses_the_logistic_refit_once(monkeypatch):
    """A three-class default fit searches (many solves) and makes the held-out choice between
    the squared and the logistic refit once, at the chosen beta."""
    import skquad.quantized._sdp as sdp
    from skquad.quantized._sdp import _SDPQuantizedNetwork

    choices, solves = [], []
    original_choice, original_solve = _SDPQuantizedNetwork._held_out_refit_loss, sdp.solve_relaxation

    def counted_choice(self, *args, **kwargs):
        choices.append(self.beta_)
        return original_choice(self, *args, **kwargs)

    def counted_solve(*args, **kwargs):
        solves.append(1)
        return original_solve(*args, **kwargs)

    monkeypatch.setattr(_SDPQuantizedNetwork, "_held_out_refit_loss", counted_choice)
    monkeypatch.setattr(sdp, "solve_relaxation", counted_solve)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((150, 3))
    y = np.digitize(X[:, 0] + X[:, 1] ** 2, [0.0, 1.5])
    model = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, y)
    assert len(solves) > 10  # the candidates' solves on the held-out fifths, then the fit's
    assert choices == [model.beta_]


def test_without_a_linear_term_the_search_never_offers_a_constant():
    X, y, X_test, y_test = _noisy_linear(10, n_train=300, d=30)
    model = SDPQuantizedClassifier(n_neurons=100, linear_term=False, random_state=0).fit(X, y)
    assert model.beta_ < model.beta_max_ and np.any(model.alpha_ != 0)


def test_beyond_the_size_bound_auto_is_the_rule(monkeypatch):
    X, y, _, _ = _noisy_linear(5, n_train=200, d=6)
    monkeypatch.setattr(beta_search, "AUTO_SEARCH_MAX_SIZE", 200 * 7**2 - 1)
    model = SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y)
    assert model.beta_ == pytest.approx(_rule(model, 200), rel=1e-12)
    monkeypatch.setattr(beta_search, "AUTO_SEARCH_MAX_SIZE", 200 * 7**2)
    assert SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y).beta_ == model.beta_max_


def test_the_certificate_with_the_linear_term_is_clarabels():
    """The relaxation is solved on the ±1 labels less the linear term: an independent interior
    point (CVXPY + CLARABEL) on the same residuals certifies the same bound."""
    pytest.importorskip("cvxpy")
    X, y, _, _ = _noisy_linear(6, n_train=120, d=5)
    y = (X[:, 0] * X[:, 1] + 0.5 * X[:, 2] > 0).astype(int)
    params = dict(n_neurons=200, beta=0.005, random_state=0)
    native = SDPQuantizedClassifier(**params).fit(X, y)
    clarabel = SDPQuantizedClassifier(solver="CLARABEL", **params).fit(X, y)
    np.testing.assert_allclose(native.linear_coef_, clarabel.linear_coef_, rtol=1e-12)
    assert native.lower_bound_ == pytest.approx(clarabel.lower_bound_, rel=2e-4)
    assert native.relaxed_objective_ == pytest.approx(clarabel.relaxed_objective_, rel=2e-4)
    for model in (native, clarabel):
        # the network at its own b = 0 is in the certified class; the refit keeps the intercept
        assert model.lower_bound_ <= model.objective_ + 1e-9


@pytest.mark.parametrize("exception", [RuntimeError("boom"), KeyboardInterrupt()], ids=["failure", "interrupt"])
@pytest.mark.parametrize("Estimator, kind", [
    (SDPQuantizedClassifier, "two classes"), (SDPQuantizedClassifier, "three classes"),
    (SDPQuantizedRegressor, "real")])
def test_a_search_cut_short_leaves_the_model_as_it_was(monkeypatch, exception, Estimator, kind):
    """The held-out search fits clones; a fit that stops inside it keeps the fitted model,
    numpy's error state and the warning filters."""
    X, y, _, _ = _noisy_linear(7, n_train=200, d=25)
    targets = {"two classes": y, "three classes": np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5]),
               "real": X[:, 0] * X[:, 1] + X[:, 2]}[kind]
    model = Estimator(n_neurons=30, random_state=0).fit(X, targets)
    state = {name: np.copy(value) for name, value in vars(model).items() if isinstance(value, np.ndarray)}
    beta = model.beta_

    def broken_path(*args, **kwargs):
        np.seterr(all="ignore")
        raise exception

    monkeypatch.setattr(beta_search, "fit_path", broken_path)
    errors, filters = np.geterr(), list(warnings.filters)
    with pytest.raises(type(exception)):
        model.fit(X, (targets + 1) % 3 if kind == "three classes" else 1 - targets)
    assert np.geterr() == errors and warnings.filters == filters
    assert model.beta_ == beta
    for name, value in state.items():
        np.testing.assert_array_equal(getattr(model, name), value, err_msg=name)


def test_the_cv_estimator_takes_linear_term():
    X, y, _, _ = _noisy_linear(8, n_train=150, d=4)
    params = dict(n_neurons=30, betas=3, cv=3, random_state=0)
    assert SDPQuantizedClassifierCV(**params).fit(X, y).linear_coef_.shape == (1, 4)
    assert not hasattr(SDPQuantizedClassifierCV(linear_term=False, **params).fit(X, y), "linear_coef_")
