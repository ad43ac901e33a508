"""SDPQuantizedClassifier (skquad/quantized/_sdp.py): sampling, refit, warnings, predict paths."""

import dataclasses
import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.datasets import load_iris, load_wine, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

import skquad.quantized._sdp as quantized_module
from skquad import SDPQuantizedClassifier, SDPQuantizedRegressor
from skquad.convex import loss_value
from skquad.convex.routes import route, use_routes
from skquad.datasets import make_planted_quantized
from test_quantized_common import masking_classes


@pytest.fixture(scope="module")
def planted():
    X, y = make_planted_quantized(n_samples=100, n_features=8, n_planted=5, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def planted_model(planted):
    X, y = planted
    # Algorithm 1's network as the paper defines it (shared second-layer weights).
    return SDPQuantizedClassifier(
        n_neurons=10, loss="hinge", beta=1e-3, solver="CLARABEL", refit_output_layer=False,
        random_state=0,
    ).fit(X, y)


def test_sampled_objective_approaches_the_bound_and_never_falls_below(planted_model):
    model = planted_model
    gaps = {}
    for m in (10, 100, 1000, 10000):
        objectives = [model.resample(m, random_state=seed).objective_ for seed in range(5)]
        assert min(objectives) >= model.lower_bound_ - 1e-7
        gaps[m] = np.mean(objectives) - model.lower_bound_
    assert gaps[10] > gaps[100] > gaps[1000] > gaps[10000]
    # Theorem 3: the gap shrinks like 1/sqrt(m); with 10000 neurons it is a
    # small fraction of the bound.
    assert gaps[10000] < 0.25 * model.lower_bound_ + 0.02
    # The relaxed solution itself fits the planted labels; so does the network.
    X, y = make_planted_quantized(n_samples=100, n_features=8, n_planted=5, random_state=0)
    model.resample(10000, random_state=0)
    assert model.score(X, y) > 0.9
    assert np.mean(model.relaxed_predict(X) == y) > 0.9


def test_resample_and_warm_start_do_not_solve_again(planted, monkeypatch):
    X, y = planted
    calls = []
    original = quantized_module.solve_relaxation

    def counting_solve(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(quantized_module, "solve_relaxation", counting_solve)
    model = SDPQuantizedClassifier(n_neurons=50, beta=0.01, warm_start=True, random_state=0).fit(X, y)
    bound = model.lower_bound_
    model.set_params(n_neurons=500).fit(X, y)
    assert model.U_.shape[0] == 500 and model.solve_time_ == 0.0
    model.resample(20, random_state=1)
    assert model.n_neurons_ == 20 and model.U_.shape[0] == 20 and model.n_neurons == 500
    assert len(calls) == 1 and model.lower_bound_ == bound
    # New data or new SDP parameters do solve again.
    model.fit(X[:80], y[:80])
    model.set_params(beta=0.05).fit(X[:80], y[:80])
    assert len(calls) == 3
    # The covariance step is redone without a new SDP solve.
    krivine = model.covariance_.copy()
    model.set_params(covariance="sdp").fit(X[:80], y[:80])
    assert len(calls) == 3 and not np.array_equal(model.covariance_, krivine)
    p = model.n_lifted_features_
    np.testing.assert_allclose(model.covariance_[0][:p, p:], krivine[0][:p, p:], atol=1e-2)


def test_same_random_state_same_model(planted):
    X, y = planted
    # At a fixed beta the relaxation does not depend on the seed ("auto" chooses among sampled networks).
    first = SDPQuantizedClassifier(n_neurons=30, beta=0.01, random_state=3).fit(X, y)
    second = SDPQuantizedClassifier(n_neurons=30, beta=0.01, random_state=3).fit(X, y)
    third = SDPQuantizedClassifier(n_neurons=30, beta=0.01, random_state=4).fit(X, y)
    np.testing.assert_array_equal(first.U_, second.U_)
    np.testing.assert_array_equal(first.V_, second.V_)
    np.testing.assert_array_equal(first.decision_function(X), second.decision_function(X))
    assert not np.array_equal(first.U_, third.U_)
    assert first.lower_bound_ == third.lower_bound_


def test_sampling_uses_local_generators_and_records_the_device(planted):
    # The first layer is drawn from the runtime policy's generator: the global
    # numpy and torch generators are left alone, a RandomState instance is
    # drawn from once per fit (as the torch estimators' random_state), and the
    # same seed at resample draws the same network as at fit.
    X, y = planted
    numpy_state, torch_state = np.random.get_state()[1].copy(), torch.get_rng_state()
    model = SDPQuantizedClassifier(n_neurons=30, random_state=3).fit(X, y)
    np.testing.assert_array_equal(np.random.get_state()[1], numpy_state)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert model.device_ == "cpu"
    first_U = model.U_.copy()
    model.resample(30, random_state=3)
    np.testing.assert_array_equal(model.U_, first_U)
    random_state, one_draw = np.random.RandomState(3), np.random.RandomState(3)
    SDPQuantizedClassifier(n_neurons=30, random_state=random_state).fit(X, y)
    one_draw.randint(np.iinfo(np.int32).max)
    np.testing.assert_array_equal(random_state.randint(1000, size=5), one_draw.randint(1000, size=5))


def test_attributes_and_probabilities(planted_model, planted):
    X, y = planted
    model = planted_model.resample(100, random_state=0)
    p = model.n_lifted_features_
    assert p == X.shape[1] + 1
    assert model.U_.dtype == np.int8 and set(np.unique(model.U_)) == {-1, 1}
    assert SDPQuantizedClassifier(n_neurons=5, loss="logistic").fit(X, y).solver_ == "native"
    assert model.Q_.shape == (1, 2 * p, 2 * p) and model.Z_.shape == (1, p, p)
    np.testing.assert_allclose(model.alpha_, model.alpha_[0, 0])  # one shared weight
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(axis=1)], model.predict(X))
    # objective_ is the network's own objective, recomputed here from scratch
    Xs = (X - model.feature_mean_) / model.feature_scale_
    Z = np.hstack([Xs, np.ones((len(X), 1))])
    scores = ((Z @ model.U_.T) * (Z @ model.V_.T)) @ model.alpha_
    np.testing.assert_allclose(scores[:, 0], model.decision_function(X))
    expected = np.mean(np.maximum(0, 1 - y * scores[:, 0])) + 1e-3 * p * np.abs(model.alpha_).sum()
    np.testing.assert_allclose(model.objective_, expected, rtol=1e-10)


def test_multiclass_vector_output_on_wine():
    X, y = load_wine(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    model = SDPQuantizedClassifier(n_neurons=3000, loss="squared", beta=1e-2, random_state=0)
    model.fit(X_train, y_train)
    assert model.alpha_.shape == (3000, 3) and model.Q_.shape[0] == 3
    assert np.all(np.bincount(model.neuron_class_) == 1000)
    assert np.mean(model.relaxed_predict(X_test) == y_test) > 0.9
    assert model.score(X_test, y_test) > 0.9
    assert model.objective_ >= model.lower_bound_ - 1e-4


@pytest.mark.parametrize("levels", [2, 3])
def test_multilevel_weights_equivalence(planted, levels):
    X, y = planted
    model = SDPQuantizedClassifier(
        n_neurons=40, weight_levels=levels, standardize=False, random_state=0
    ).fit(X, y)
    assert model.n_lifted_features_ == (X.shape[1] + 1) * levels
    weights = model.integer_weights()
    allowed = set(range(-levels, levels + 1, 2))
    assert set(np.unique(weights["U"])) <= allowed and set(np.unique(weights["U_bias"])) <= allowed
    t_u = X @ weights["U"].T + weights["U_bias"]
    t_v = X @ weights["V"].T + weights["V_bias"]
    # the network and the linear term (linear_term="auto": a binary squared-loss fit has one)
    linear = X @ model.linear_coef_[0]
    np.testing.assert_allclose(
        (t_u * t_v) @ model.alpha_[:, 0] + model.intercept_[0] + linear, model.decision_function(X), rtol=1e-9
    )

    # The multi-level model is the binary model on replicated inputs (the hinge loss: the
    # squared loss's output intercept comes with fit_intercept, which the replicas replace).
    model = SDPQuantizedClassifier(
        n_neurons=40, weight_levels=levels, standardize=False, loss="hinge", random_state=0
    ).fit(X, y)
    replicated = np.repeat(np.hstack([X, np.ones((len(X), 1))]), levels, axis=1)
    binary = SDPQuantizedClassifier(
        n_neurons=40, fit_intercept=False, standardize=False, loss="hinge", random_state=0
    ).fit(replicated, y)
    np.testing.assert_allclose(binary.lower_bound_, model.lower_bound_, rtol=1e-6)
    np.testing.assert_allclose(
        binary.decision_function(replicated), model.decision_function(X), rtol=1e-6, atol=1e-8
    )


def test_polynomial_activation_equivalence(planted):
    X, y = planted
    a, b, c = 0.5, 1.0, 0.2
    model = SDPQuantizedClassifier(n_neurons=60, activation=(a, b, c), random_state=0).fit(X, y)
    assert model.n_lifted_features_ == X.shape[1] + 2
    w = model.integer_weights()
    Xs = (X - model.feature_mean_) / model.feature_scale_
    t_u = Xs @ w["U"].T + w["U_bias"]
    t_v = Xs @ w["V"].T + w["V_bias"]
    neurons = a * t_u * t_v + 0.5 * b * (w["V_lift"] * t_u + w["U_lift"] * t_v) + c * w["U_lift"] * w["V_lift"]
    linear = X @ model.linear_coef_[0]  # the linear term ("auto": binary, squared loss)
    np.testing.assert_allclose(
        neurons @ model.alpha_[:, 0] + model.intercept_[0] + linear, model.decision_function(X), rtol=1e-9
    )
    # Neurons with u = v compute the polynomial activation itself.
    sigma = a * t_u**2 + b * t_u * w["U_lift"] + c
    same = np.all(model.U_ == model.V_, axis=1)
    np.testing.assert_allclose(neurons[:, same], sigma[:, same])
    assert model.lower_bound_ <= model.objective_


def test_export_equivalence(planted):
    X, y = planted
    for kwargs in ({}, {"weight_levels": 2}, {"activation": (1.0, 0.5, 0.0)}):
        model = SDPQuantizedClassifier(n_neurons=25, random_state=0, **kwargs).fit(X, y)
        network = model.export_quadratic_network()
        assert network.weights.shape[0] == 75
        np.testing.assert_allclose(network.scores(X)[:, 0], model.decision_function(X), rtol=1e-9, atol=1e-9)


def test_covariance_by_sdp_option_gives_same_distribution(planted):
    X, y = planted
    krivine = SDPQuantizedClassifier(n_neurons=20, beta=0.01, random_state=0).fit(X, y)
    by_sdp = SDPQuantizedClassifier(n_neurons=20, beta=0.01, covariance="sdp", random_state=0).fit(X, y)
    p = krivine.n_lifted_features_
    np.testing.assert_allclose(krivine.covariance_[0][:p, p:], by_sdp.covariance_[0][:p, p:], atol=1e-2)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"activation": (1.0, 2.0)}, "three finite numbers"),
        ({"activation": (0.0, 0.0, 1.0)}, "constant"),
        ({"solver": "NOT_A_SOLVER"}, "not an installed CVXPY solver"),
        ({"n_neurons": 2}, "smaller than the number of classes"),
        ({"beta": -1.0}, "beta"),
        ({"loss": "absolute"}, "loss"),
    ],
)
def test_bad_parameters(params, message):
    X, y = load_wine(return_X_y=True)
    if "n_neurons" not in params:
        X, y = X[:60], y[:60]
    with pytest.raises(ValueError, match=message):
        SDPQuantizedClassifier(**params).fit(X, y)


def test_bad_input(planted):
    X, y = planted
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        SDPQuantizedClassifier().fit(X_nan, y)
    with pytest.raises(ValueError, match="Unknown label type"):
        SDPQuantizedClassifier().fit(X, y + 0.5)
    model = SDPQuantizedClassifier(n_neurons=10).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :3])
    with pytest.raises(ValueError, match="n_neurons"):
        model.resample(0)


def test_solver_failure_through_the_estimator(planted):
    # SCS stopped after 2 iterations returns "optimal_inaccurate": a
    # ConvergenceWarning that names the remedy, never a silent result.
    X, y = planted
    with pytest.warns(ConvergenceWarning, match="CLARABEL"):
        SDPQuantizedClassifier(
            loss="logistic", solver="SCS", solver_options={"max_iters": 2}
        ).fit(X, y)


# ------------------------------------------------------- second-layer refit
@pytest.mark.parametrize("loss", ["squared", "logistic", "hinge"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_refit_lowers_the_objective_and_stays_above_the_bound(loss, n_classes):
    X, y = make_classification(
        n_samples=90, n_features=4, n_informative=3, n_redundant=0, n_classes=n_classes,
        n_clusters_per_class=1, random_state=0,
    )
    weight = np.random.default_rng(0).uniform(0.2, 3.0, len(y))
    common = {"n_neurons": 60, "loss": loss, "beta": 3e-3, "solver": "CLARABEL", "random_state": 0}
    paper = SDPQuantizedClassifier(refit_output_layer=False, **common).fit(X, y, sample_weight=weight)
    refit = SDPQuantizedClassifier(refit_output_layer=True, **common).fit(X, y, sample_weight=weight)
    # Same draw, same first layer; only the second layer differs.
    np.testing.assert_array_equal(paper.U_, refit.U_)
    assert refit.sampled_objective_ == pytest.approx(paper.objective_, rel=1e-12)
    assert refit.objective_ <= paper.objective_ + 1e-12
    assert refit.objective_ >= refit.lower_bound_ - 1e-6
    # objective_ is the refitted network's own objective, recomputed here.
    targets = 2.0 * y - 1 if n_classes == 2 else y
    scores = refit.decision_function(X).reshape(len(y), -1)
    expected = loss_value(scores, targets, weight, loss, n_outputs=scores.shape[1])
    expected += 3e-3 * refit.n_lifted_features_ * np.abs(refit.alpha_).sum()
    np.testing.assert_allclose(refit.objective_, expected, rtol=1e-9)
    # Resampling refits too, and never ends above the paper's network.
    for seed in range(3):
        refit.resample(30, random_state=seed)
        assert refit.objective_ <= refit.sampled_objective_ + 1e-12


def test_iris_narrow_network_is_fixed_by_the_refit_or_warns():
    # Issue 9: resample(150) on iris gave 39 % training accuracy, silently.
    X, y = load_iris(return_X_y=True)
    # beta="rule" for both: one solve, whatever the refit (the search's candidates refit as
    # their model does, so on held-out rows the two may choose different betas)
    paper = SDPQuantizedClassifier(refit_output_layer=False, beta="rule", random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match=r"about \d+ neurons would bring it"):
        paper.resample(150, random_state=0)
    # The paper's network at m = 150 scored 0.39 (issue 9) and 0.89 on another
    # CPU (issue 19): its accuracy depends on which signs rounding gives a few
    # near-zero projections, so it is not asserted; what the warning promises
    # is: an objective far above the certified bound (2.04 against 0.145 here,
    # a 14x margin over the warning's 1.05 threshold).
    assert paper.objective_ > 1.05 * paper.lower_bound_
    model = SDPQuantizedClassifier(refit_output_layer=True, beta="rule", random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model.resample(150, random_state=0)
    assert model.score(X, y) > 0.95  # majority class: 0.33
    assert model.objective_ < 1.05 * model.lower_bound_
    # Same solve, same draw: the refit only re-solves the output layer (a convex
    # problem) over the paper's first layer, so it can only lower the objective.
    np.testing.assert_array_equal(model.U_, paper.U_)
    assert model.objective_ <= paper.objective_


def test_logistic_refit_stays_in_the_certified_class():
    # The masking case (test_quantized_common), where "auto" takes the logistic refit.
    X, y = masking_classes()
    auto = SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(X, y)
    assert auto.refit_loss_ == "logistic"
    # The intercept stays the labels' mean, so the network stays in the class the bound
    # certifies; objective_ is its squared-loss objective, recomputed.
    np.testing.assert_allclose(auto.intercept_, np.bincount(y) / len(y), rtol=1e-12)
    scores = auto.decision_function(X)
    centred = np.eye(5)[y] - np.bincount(y) / len(y)
    expected = loss_value(scores - auto.intercept_, centred, np.ones(len(y)), "squared", 5)
    expected += auto.beta_ * auto.n_lifted_features_ * np.abs(auto.alpha_).sum()
    assert auto.objective_ == pytest.approx(expected, rel=1e-9)
    assert auto.objective_ >= auto.lower_bound_
    # The scores are the logits of predict_proba.
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(auto.predict_proba(X), shifted / shifted.sum(axis=1, keepdims=True))


def test_auto_keeps_the_squared_refit_unless_held_out_rows_favour_the_logistic_one(monkeypatch):
    # Three classes the squared refit separates: no candidate is better by a standard
    # error on the held-out rows, so "auto" keeps the SDP's own loss, exactly.
    X, y = make_classification(n_samples=240, n_features=4, n_informative=4, n_redundant=0,
                               n_classes=3, class_sep=2.0, random_state=0)
    common = dict(n_neurons=80, random_state=0)
    squared = SDPQuantizedClassifier(refit_output_layer=True, **common).fit(X, y)
    auto = SDPQuantizedClassifier(**common).fit(X, y)
    assert auto.refit_loss_ == "squared"
    np.testing.assert_array_equal(auto.alpha_, squared.alpha_)
    assert auto.objective_ == squared.objective_
    # The choice is the held-out rule's: the logistic refit where it picks the second.
    import skquad.quantized._common as common_module

    chosen = []
    monkeypatch.setattr(common_module, "one_standard_error_choice",
                        lambda errors: chosen.append(errors.shape) or 1)
    assert SDPQuantizedClassifier(**common).fit(X, y).refit_loss_ == "logistic"
    # fifths of the rows held out in turn until at least 100 are scored; two candidates
    assert len(chosen) == 1 and chosen[0][1] == 2 and 100 <= chosen[0][0] < len(y)


def test_auto_refit_without_rows_to_hold_out_or_in_dask_is_the_squared_refit():
    X, y = make_classification(n_samples=15, n_features=3, n_informative=3, n_redundant=0,
                               n_classes=3, n_clusters_per_class=1, random_state=0)
    model = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, y)
    assert model.refit_loss_ == "squared"
    unrefitted = SDPQuantizedClassifier(n_neurons=30, refit_output_layer=False, random_state=0)
    assert unrefitted.fit(X, y).refit_loss_ is None


def test_auto_refit_of_a_binary_problem_is_the_squared_refit():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    auto = SDPQuantizedClassifier(n_neurons=60, random_state=0).fit(X, y)
    squared = SDPQuantizedClassifier(n_neurons=60, refit_output_layer=True, random_state=0).fit(X, y)
    np.testing.assert_array_equal(auto.alpha_, squared.alpha_)
    assert auto.objective_ == squared.objective_


def test_the_regressor_refuses_the_logistic_refit():
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = make_classification(n_samples=40, n_features=4, random_state=0)
    with pytest.raises(InvalidParameterError, match="refit_output_layer"):
        SDPQuantizedRegressor(refit_output_layer="logistic").fit(X, y.astype(float))


def test_standardize_threshold_is_relative_to_the_feature_scale():
    X, y = make_classification(n_samples=200, n_features=5, random_state=0)
    reference = SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(X, y)
    tiny = SDPQuantizedClassifier(n_neurons=200, random_state=0).fit(X * 1e-13, y)
    assert tiny.score(X * 1e-13, y) == pytest.approx(reference.score(X, y))
    assert reference.score(X, y) > 0.9  # majority class: 0.5
    # A truly constant column still gets scale 1.
    X_constant = np.column_stack([X, np.full(len(y), 3.0)])
    model = SDPQuantizedClassifier(n_neurons=50, random_state=0).fit(X_constant, y)
    assert model.feature_scale_[-1] == 1.0


def test_predict_is_batched_and_equals_the_unbatched_scores(monkeypatch, planted_model, planted):
    import skquad.quantized._common as common

    X, _ = planted
    model = planted_model.resample(100, random_state=0)
    full = model.decision_function(X)
    # Batches of 2 rows: same scores.
    monkeypatch.setattr(common, "PREDICT_BATCH_BYTES", 2 * 3 * 8 * 100)
    np.testing.assert_allclose(model.decision_function(X), full, rtol=1e-12, atol=1e-12)


def test_huge_width_is_refused_before_the_solve(planted, monkeypatch):
    X, y = planted
    calls = []
    monkeypatch.setattr(quantized_module, "solve_relaxation", lambda *a, **k: calls.append(1))
    with pytest.raises(MemoryError, match="n_neurons=10000000000"):
        SDPQuantizedClassifier(n_neurons=10**10).fit(X, y)
    assert not calls


def test_drop_training_data(planted):
    X, y = planted
    model = SDPQuantizedClassifier(n_neurons=20, random_state=0).fit(X, y)
    size = len(pickle.dumps(model))
    before = model.predict(X)
    model.drop_training_data()
    assert len(pickle.dumps(model)) < size - X.nbytes // 2
    np.testing.assert_array_equal(model.predict(X), before)
    with pytest.raises(ValueError, match="drop_training_data"):
        model.resample(10)


def test_relaxed_predict_matches_the_relaxed_scores(planted_model, planted):
    X, _ = planted
    scores = planted_model.relaxed_decision_function(X)
    np.testing.assert_array_equal(
        planted_model.relaxed_predict(X), planted_model.classes_[(scores > 0).astype(int)]
    )


# ------------------------------------------- solver_options and callback subtasks
@pytest.mark.parametrize(
    "options, key",
    [
        ({"rank": 0}, "rank"),
        ({"rank": -3}, "rank"),
        ({"rank": 2.5}, "rank"),
        ({"rank": float("nan")}, "rank"),
        ({"rank": True}, "rank"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"history_size": 0}, "history_size"),
        ({"hinge_sigma": -1}, "hinge_sigma"),
        ({"hinge_sigma": float("inf")}, "hinge_sigma"),
        ({"align_iterations": -1}, "align_iterations"),
        ({"rank": 8, "max_rank": 4}, "rank"),
    ],
)
def test_invalid_solver_options_name_the_key(options, key):
    rng = np.random.RandomState(0)
    X, y = rng.randn(40, 3), np.arange(40) % 2
    with pytest.raises(ValueError, match=rf"solver_options\['{key}'\]"):
        SDPQuantizedClassifier(n_neurons=20, solver_options=options).fit(X, y)


@pytest.mark.parametrize(
    "params",
    [
        {"max_iter": 0},
        {"max_iter": 1},
        {"max_iter": 0, "loss": "logistic"},
        {"max_iter": 1, "loss": "logistic"},
        {"max_iter": 120, "loss": "logistic", "tol": 1e-12},
    ],
)
def test_any_number_of_solver_chunks_fits_the_callback_context(params):
    from sklearn.callback import ScoringMonitor

    rng = np.random.RandomState(0)
    X, y = rng.randn(40, 3), np.arange(40) % 2
    X[:, 0] += y
    model = SDPQuantizedClassifier(n_neurons=400, random_state=0, **params)
    model.set_callbacks(ScoringMonitor(scoring="accuracy"))
    with warnings.catch_warnings():
        # Stopping early at max_iter is the point here; its warning is tested elsewhere.
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X, y)
    assert model.lower_bound_ <= model.relaxed_objective_ + 1e-12


def test_solver_hook_only_with_a_callback_so_blocks_run_in_parallel(monkeypatch):
    # Every fit opens a callback root context; without a callback nothing
    # observes the solver's chunks, and no hook lets a many-class squared loss
    # solve its blocks in parallel (blocks._block_workers).
    from sklearn.callback import ScoringMonitor

    from skquad.convex import blocks

    hooks = []
    original = blocks._block_workers

    def record(data, callback, verbose, options):
        hooks.append(callback)
        return original(data, callback, verbose, options)

    monkeypatch.setattr(blocks, "_block_workers", record)
    rng = np.random.RandomState(0)
    X, y = rng.randn(60, 36), np.arange(60) % 3  # p = 37: the factor solver, not the compact form
    params = dict(n_neurons=30, max_iter=50, tol=1e-2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        SDPQuantizedClassifier(**params).fit(X, y)
        assert hooks[-1] is None
        model = SDPQuantizedClassifier(**params)
        model.set_callbacks(ScoringMonitor(scoring="accuracy"))
        model.fit(X, y)
    assert callable(hooks[-1])


@pytest.mark.parametrize("estimator", ["SDP", "BackpropQ"])
@pytest.mark.parametrize("column_scale", [[1e160] * 3, [1e-170, 1.0, 1.0]], ids=["1e160", "1e-170"])
def test_standardization_neither_overflows_nor_underflows(estimator, column_scale):
    # Issue 19: at X * 1e160 the SDP failed in eigh and BackpropQ fitted a NaN
    # objective; a column near 1e-170 had its variance underflow to 0 and was
    # dropped as constant. Standardized data is the same whatever the scale.
    from skquad import BackpropQuantizedClassifier

    Est = SDPQuantizedClassifier if estimator == "SDP" else BackpropQuantizedClassifier
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = np.arange(40) % 2
    X[:, 0] += y
    # A fixed beta: beta="auto"'s held-out fifths are a hash of the rows' values, which a
    # rescaled column changes (as a new shuffle of KFold would).
    params = dict(n_neurons=20, random_state=0, **({"beta": 0.01} if estimator == "SDP" else {}))
    reference = Est(**params).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaled = Est(**params).fit(X * np.asarray(column_scale), y)
    # (X - mean) / std differs from the unscaled one by rounding only (a few
    # eps relative per entry); the fits' scores agree to 1e-9 of their size,
    # orders of magnitude beyond that and far below a changed model's O(1).
    reference_scores = reference.decision_function(X)
    np.testing.assert_allclose(
        scaled.decision_function(X * np.asarray(column_scale)), reference_scores,
        rtol=0, atol=1e-9 * np.abs(reference_scores).max(),
    )
    assert np.all(np.isfinite(scaled.feature_scale_)) and np.all(scaled.feature_scale_ > 0)


# ----------------------------------------------------------------- the solve: native default,
# CVXPY reference, warm starts, messages (formerly tests/test_convex_estimator.py)
@pytest.fixture(scope="module")
def solve_planted():
    return make_planted_quantized(n_samples=120, n_features=5, n_planted=4, random_state=1)


@pytest.fixture(scope="module")
def solve_wine():
    X, y = load_wine(return_X_y=True)
    return X[::2, :6], y[::2]


@pytest.mark.parametrize("dataset", ["solve_planted", "solve_wine"])
def test_native_default_brackets_clarabel_and_predicts_like_its_relaxation(dataset, request):
    X, y = request.getfixturevalue(dataset)
    params = {"loss": "logistic", "beta": 1e-2, "n_neurons": 50, "random_state": 0}
    native = SDPQuantizedClassifier(**params).fit(X, y)
    reference = SDPQuantizedClassifier(solver="CLARABEL", **params).fit(X, y)
    optimum = reference.relaxed_objective_
    # solver=None: many classes (wine) go to the compact cone form, two to the factor solver.
    expected = "compact" if len(np.unique(y)) > 2 else "native"
    assert native.solver_ == expected and native.solver_status_ == "optimal"
    assert native.lower_bound_ <= optimum + 1e-7 <= native.relaxed_objective_ + 1e-6
    assert native.certified_gap_ == pytest.approx(native.relaxed_objective_ - native.lower_bound_)
    assert native.certified_gap_ <= 1e-4 * native.relaxed_objective_
    assert reference.lower_bound_ <= optimum
    # Same relaxed model up to the solvers' accuracy.
    agree = np.mean(native.relaxed_predict(X) == reference.relaxed_predict(X))
    assert agree >= 0.97
    p = native.n_lifted_features_
    for k, rho in enumerate(native.rho_):
        np.testing.assert_allclose(np.diag(native.Q_[k]), rho, rtol=1e-12)
        np.testing.assert_array_equal(native.Z_[k], native.Q_[k][:p, p:])


def test_warm_start_with_a_new_beta_starts_from_the_previous_factors(solve_planted):
    X, y = solve_planted
    starts = []
    native = route("native")

    def recording(problem):
        starts.append(problem.init)
        return native.solve(problem)

    model = SDPQuantizedClassifier(loss="logistic", beta=2e-2, warm_start=True, random_state=0)
    with use_routes(dataclasses.replace(native, solve=recording)):
        model.fit(X, y)
        cold_iterations = model.n_iter_
        model.set_params(beta=1e-2).fit(X, y)
    assert starts[0] is None and starts[1] is not None
    assert starts[1].factors is not None and starts[1].rho[0] > 0
    fresh = SDPQuantizedClassifier(loss="logistic", beta=1e-2, random_state=0).fit(X, y)
    assert model.n_iter_ < fresh.n_iter_ or model.n_iter_ < cold_iterations
    np.testing.assert_allclose(model.relaxed_objective_, fresh.relaxed_objective_, rtol=2e-4)


def test_huge_beta_says_the_optimum_is_the_zero_network(solve_planted):
    X, y = solve_planted
    for solver in (None, "CLARABEL"):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = SDPQuantizedClassifier(beta=1e6, solver=solver, linear_term=False, random_state=0).fit(X, y)
        messages = [str(w.message) for w in caught]
        assert any("zero network" in m and "beta" in m for m in messages), messages
        assert not any(issubclass(w.category, ConvergenceWarning) for w in caught), messages
        labels = np.where(y == model.classes_[1], 1.0, -1.0)
        # the squared loss of the zero network, whose output is the labels' mean
        assert model.lower_bound_ == pytest.approx(np.var(labels), rel=1e-6)


def test_stopping_short_warns_with_the_remedies(solve_planted):
    X, y = solve_planted
    with pytest.warns(ConvergenceWarning, match="max_iter") as caught:
        model = SDPQuantizedClassifier(loss="logistic", max_iter=3, random_state=0).fit(X, y)
    assert "tol=" in str(caught[0].message)
    assert model.solver_status_ == "max_iter" and model.lower_bound_ <= model.relaxed_objective_


def test_verbose_prints_the_solver_progress(solve_planted, capsys):
    X, y = solve_planted
    SDPQuantizedClassifier(loss="logistic", verbose=1, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines and all(line.startswith("Iteration ") for line in lines)
    assert all("lower bound = " in line and "gap = " in line and "rank = " in line for line in lines)


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"solver": "OSQP"}, ValueError, "cannot solve semidefinite programs"),
        ({"solver_options": {"bogus": 1}}, TypeError, "solver_options"),
        ({"solver": "CLARABEL", "solver_options": {"bogus": 1}}, TypeError, "solver_options"),
        ({"device": "tpu"}, ValueError, "device"),
    ],
)
def test_solver_parameter_errors_are_clear(solve_planted, params, error, message):
    X, y = solve_planted
    with pytest.raises(error, match=message):
        SDPQuantizedClassifier(**params).fit(X, y)


def test_rule_beta_on_beta_max_through_the_fit_lifting():
    """beta="rule" on three classes: beta_max from the lifted, standardized, class-weighted
    data, then the (p / n)^2 rule."""
    from skquad.convex import InputLifting
    from skquad.convex.path import default_beta, zero_network_beta

    X, y = load_wine(return_X_y=True)
    X, y = X[::3, :4], y[::3]
    model = SDPQuantizedClassifier(
        n_neurons=30, weight_levels=2, class_weight="balanced", beta="rule", random_state=0
    ).fit(X, y)
    # An independent beta_max: the weighted standardization and one-hot
    # targets written out here, the class weights n / (K n_k).
    counts = np.bincount(y)
    weight = (len(y) / (len(counts) * counts))[y]
    mean = weight @ X / weight.sum()
    scale = np.sqrt(weight @ (X - mean) ** 2 / weight.sum())
    lifting = InputLifting(levels=2, center=mean, scale=scale)
    # One-hot targets centred at their weighted mean: the squared loss's output intercept.
    onehot = np.eye(3)[y]
    targets = onehot - weight @ onehot / weight.sum()
    beta_max = zero_network_beta(lifting, X, targets, weight, loss="squared", n_outputs=3)
    assert model.beta_max_ == pytest.approx(beta_max, rel=1e-9)
    expected, _ = default_beta(lifting, X, targets, weight, loss="squared", n_outputs=3)
    assert model.beta_ == pytest.approx(expected, rel=1e-9)
    assert 0 < model.beta_ < model.beta_max_
    # The same fit as the float it resolved to.
    fixed = SDPQuantizedClassifier(
        n_neurons=30, weight_levels=2, class_weight="balanced", beta=model.beta_,
        random_state=0,
    ).fit(X, y)
    assert fixed.beta_ == model.beta_
    assert not hasattr(fixed, "beta_max_")
    np.testing.assert_allclose(fixed.rho_, model.rho_, rtol=1e-9)
    np.testing.assert_array_equal(fixed.predict(X), model.predict(X))
    # A refit at a float forgets the earlier data's beta_max_.
    model.set_params(beta=model.beta_ / 2).fit(X, y)
    assert not hasattr(model, "beta_max_")


def test_bad_beta_string_names_the_parameter():
    X, y = load_wine(return_X_y=True)
    with pytest.raises(ValueError, match="'beta' parameter"):
        SDPQuantizedClassifier(beta="automatic").fit(X[:60], y[:60])


def _zero_network_warnings(estimator, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        estimator.fit(X, y)
    return [w for w in caught if "relaxed optimum is the zero network" in str(w.message)]


@pytest.mark.parametrize(
    "estimator, target",
    [
        (SDPQuantizedClassifier(
            beta=1e-12, n_neurons=10, max_iter=10, solver_options={"hinge_sigma": 1.0}, random_state=0
        ), "labels"),
        (SDPQuantizedRegressor(beta=1e-9, n_neurons=10, max_iter=10, random_state=0), "1e6"),
    ],
    ids=["tiny-beta", "regression-on-1e6"],
)
def test_the_zero_network_warning_fires_only_at_the_zero_network(estimator, target):
    """The warning compared the penalty with the objective, so it fired for
    every tiny beta: at beta=1e-12 (objective 0.4 against the zero network's
    1.0) and on targets near 1e6 fitted with R^2 0.996 (issue 38, item 8)."""
    rng = np.random.RandomState(0)
    X = rng.randn(30, 3)
    signal = X[:, 0] * X[:, 1] + X[:, 2]
    y = (signal > 0).astype(int) if target == "labels" else 1e6 * signal
    assert not _zero_network_warnings(estimator, X, y)
    # a beta past the zero network's threshold still warns
    assert _zero_network_warnings(clone(estimator).set_params(beta=1e9), X, y)


@pytest.mark.parametrize("beta", ["rule", "auto"])
def test_extreme_class_weights_are_solved_to_tol(beta):
    """scikit-learn's class-weight check (weights 1000 and 1e-4): the centred residual labels have
    a weighted root mean square of 6e-4, far from the order 1 the solvers' tolerances are set
    for. Solved for the targets over their power-of-two scale, as the regressor's are, the fit
    certifies ``tol`` without running to ``max_iter``."""
    from sklearn.datasets import make_blobs

    X, y = make_blobs(centers=2, random_state=0, cluster_std=20)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, random_state=0)
    model = SDPQuantizedClassifier(class_weight={0: 1000, 1: 1e-4}, beta=beta, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        model.fit(X_train, y_train)
    assert model._target_scale_ < 2.0**-8
    assert model.certified_gap_ <= model.tol * model.relaxed_objective_
    assert np.mean(model.predict(X_test) == 0) > 0.87


def test_the_refit_asks_the_separate_calls_thread_rule_for_its_products(monkeypatch):
    # The sampled network's refit is a sequence of products with Python work between them: one
    # decision for all of it, from its largest product (the hidden outputs, 4 n p m flops), under
    # which the refit runs; the rule itself is tested in test_runtime.py.
    from threadpoolctl import threadpool_info

    import skquad._foundation._runtime as runtime

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    asked, inside = [], []

    def thread_count(n_threads, device, flops, *, separate_calls=False):
        asked.append((n_threads, device, flops, separate_calls))
        return 1

    real_refit = SDPQuantizedClassifier._rows_refit_on_threads

    def refit(self, *args):
        inside.append(min(info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"))
        return real_refit(self, *args)

    monkeypatch.setattr(runtime, "thread_count", thread_count)  # what separate_calls_blas asks
    monkeypatch.setattr(SDPQuantizedClassifier, "_rows_refit_on_threads", refit)
    model = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, y)
    n_rows, p = model._training_data[0].shape[0], model.U_.shape[1]
    assert ("auto", "cpu", 4.0 * n_rows * p * 30, True) in asked
    assert inside and set(inside) == {1}


def test_predictions_ask_the_separate_calls_thread_rule_for_a_batchs_products(monkeypatch):
    # Predictions are row batches of the hidden outputs and the scores: one decision from a
    # batch's hidden outputs (4 rows p m flops), under which every batch runs (each batch's
    # hidden outputs ask again with the same flops, which changes nothing).
    import skquad._foundation._runtime as runtime

    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    model = SDPQuantizedClassifier(n_neurons=30, random_state=0).fit(X, y)
    expected = model.decision_function(X)
    asked = []

    def thread_count(n_threads, device, flops, *, separate_calls=False):
        asked.append((n_threads, device, flops, separate_calls))
        return 1

    monkeypatch.setattr(runtime, "thread_count", thread_count)  # what separate_calls_blas asks
    np.testing.assert_array_equal(model.decision_function(X), expected)
    assert set(asked) == {("auto", "cpu", 4.0 * 60 * model.U_.shape[1] * 30, True)}
