"""Tests of the behaviour QNNClassifier and RPQNNClassifier share (skquad.neural_network._base)."""

import copy
import functools
import pickle

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

from skquad import QNNClassifier, RPQNNClassifier
from skquad.neural_network import _base as base_module



@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_backward_options_train_the_same_model(iris, Estimator, thread_counts, perturb_ulps):
    X, y = iris
    X = perturb_ulps(X)
    probas = []
    for backward in ("fused", "cached", "autograd"):
        clf = Estimator(
            (6,), quadratic_layers="all", backward=backward, dtype="float64", max_iter=30,
            learning_rate_init=0.01, random_state=0,
        )
        with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
            probas.append(clf.fit(X, y).predict_proba(X))
    np.testing.assert_allclose(probas[1], probas[0], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(probas[2], probas[0], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_partial_fit_on_chunks_matches_fit(iris, Estimator):
    X, y = iris
    order = np.random.RandomState(0).permutation(len(y))
    X, y = X[order], y[order]
    params = dict(
        hidden_layer_sizes=(5,), batch_size=30, shuffle=False, learning_rate_init=0.02,
        random_state=0, n_iter_no_change=1000, tol=0.0,
    )
    whole = Estimator(max_iter=4, **params)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        whole.fit(X, y)
    chunked = Estimator(**params)
    for epoch in range(4):
        for start in range(0, len(y), 30):
            chunked.partial_fit(X[start : start + 30], y[start : start + 30], classes=np.unique(y))
    np.testing.assert_allclose(chunked.predict_proba(X), whole.predict_proba(X), rtol=1e-4, atol=1e-6)
    # t_ counts the samples seen, as MLPClassifier's
    assert chunked.t_ == whole.t_ == 4 * len(y)


def test_determinism_and_seed_dependence(iris):
    X, y = iris
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        fits = [QNNClassifier((4,), max_iter=20, random_state=seed).fit(X, y) for seed in (1, 1, 2)]
    for first, second in zip(fits[0].layers_, fits[1].layers_):
        for key in ("weight", "bias", "quadratic"):
            if key in first:
                np.testing.assert_array_equal(first[key], second[key])
    assert not np.array_equal(fits[0].layers_[0]["weight"], fits[2].layers_[0]["weight"])


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_pickle_keeps_numpy_only_and_predicts(iris, Estimator):
    X, y = iris
    clf = Estimator((4,), quadratic_layers="all", max_iter=20, random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        clf.fit(X, y)
    expected = clf.predict_proba(X)
    data = pickle.dumps(clf)
    assert b"torch" not in data  # no tensors or modules, only numpy arrays
    restored = pickle.loads(data)
    np.testing.assert_allclose(restored.predict_proba(X), expected, rtol=1e-6)
    # it keeps learning after unpickling (with a fresh optimizer state)
    restored.partial_fit(X, y)
    # n_iter_ counts the call's epochs (MLPClassifier); the curve and t_ accumulate
    assert restored.n_iter_ == 1
    assert len(restored.loss_curve_) == len(clf.loss_curve_) + 1


def test_relinear_start_is_a_conventional_network(iris):
    X, y = iris
    params = dict(hidden_layer_sizes=(5,), max_iter=15, random_state=0, dtype="float64")
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        frozen = QNNClassifier(quadratic_layers="all", quadratic_learning_rate_scale=0.0, **params).fit(X, y)
        conventional = QNNClassifier(quadratic_layers=[False, False], **params).fit(X, y)
        rp_frozen = RPQNNClassifier(quadratic_layers="all", quadratic_learning_rate_scale=0.0, **params).fit(X, y)
    # Quadratic parts start at zero (U = 0, c = 1) and never move: the network
    # is exactly the conventional one.
    assert all(np.all(layer["quadratic"] == 0) for layer in frozen.layers_)
    np.testing.assert_allclose(frozen.predict_proba(X), conventional.predict_proba(X), rtol=1e-10)
    np.testing.assert_allclose(rp_frozen.predict_proba(X), conventional.predict_proba(X), rtol=1e-10)


def test_early_stopping_and_verbose(iris, capsys):
    X, y = iris
    clf = QNNClassifier((5,), early_stopping=True, validation_fraction=0.2, learning_rate_init=0.02,
                        n_iter_no_change=5, verbose=True, random_state=0, max_iter=500).fit(X, y)
    assert clf.n_iter_ < 500
    assert len(clf.validation_scores_) == clf.n_iter_
    assert clf.best_validation_score_ == max(clf.validation_scores_)
    lines = capsys.readouterr().out.strip().splitlines()
    epoch_lines = [line for line in lines if line.startswith("Iteration")]
    assert len(epoch_lines) == clf.n_iter_
    assert "validation score" in epoch_lines[0] and "elapsed" in epoch_lines[0]


def test_sample_and_class_weight_shift_the_decision(binary_data):
    X, y = binary_data
    params = dict(hidden_layer_sizes=(), solver="lbfgs", random_state=0)
    plain = QNNClassifier(**params).fit(X, y)
    heavy = QNNClassifier(class_weight={0: 20.0, 1: 1.0}, **params).fit(X, y)
    weighted = QNNClassifier(**params).fit(X, y, sample_weight=np.where(y == 0, 20.0, 1.0))
    assert np.mean(heavy.predict(X) == 0) > np.mean(plain.predict(X) == 0)
    np.testing.assert_allclose(heavy.predict_proba(X), weighted.predict_proba(X), rtol=1e-5, atol=1e-6)


def test_dtype_follows_the_input_unless_forced(iris):
    X, y = iris
    params = dict(hidden_layer_sizes=(3,), max_iter=5, random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        clf64 = QNNClassifier(**params).fit(X, y)
        clf32 = QNNClassifier(**params).fit(X.astype(np.float32), y)
        forced = QNNClassifier(dtype="float32", **params).fit(X, y)
    assert clf64.layers_[0]["weight"].dtype == np.float64
    assert clf32.layers_[0]["weight"].dtype == np.float32
    assert forced.layers_[0]["weight"].dtype == np.float32
    assert [c.shape for c in clf64.coefs_] == [(4, 3), (3, 3)]
    # the same seed draws the same start, so both precisions learn the same model
    np.testing.assert_allclose(clf32.predict_proba(X), clf64.predict_proba(X), atol=1e-4)
    np.testing.assert_array_equal(forced.predict_proba(X), clf32.predict_proba(X))


def test_warm_start_continues(iris):
    X, y = iris
    clf = QNNClassifier((4,), max_iter=5, warm_start=True, random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        clf.fit(X, y)
        first_curve = list(clf.loss_curve_)
        clf.fit(X, y)
    # as MLPClassifier: n_iter_ counts this fit's epochs, the curve accumulates
    assert clf.n_iter_ == 5 and len(clf.loss_curve_) == 10 and clf.loss_curve_[:5] == first_curve
    with pytest.raises(ValueError, match="same features"):
        clf.fit(X[:, :3], y)


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_warm_start_on_new_classes_raises_up_front(iris, Estimator):
    X, y = iris
    binary = y < 2
    clf = Estimator((4,), solver="lbfgs", warm_start=True, random_state=0).fit(X[binary], y[binary])
    expected = clf.predict_proba(X)
    with pytest.raises(ValueError, match="warm_start can only be used where `y` has the same classes"):
        clf.fit(X, y)
    np.testing.assert_array_equal(clf.classes_, [0, 1])  # refused before anything changed
    np.testing.assert_array_equal(clf.predict_proba(X), expected)


def test_bad_input_and_parameters(iris):
    X, y = iris
    with pytest.raises(ValueError, match="hidden_layer_sizes must contain positive integers"):
        QNNClassifier(hidden_layer_sizes=(3, 0)).fit(X, y)
    with pytest.raises(ValueError, match="one bool per layer"):
        QNNClassifier(hidden_layer_sizes=(3,), quadratic_layers=[True]).fit(X, y)
    with pytest.raises(InvalidParameterError, match="activation"):
        QNNClassifier(activation="softplus").fit(X, y)
    with pytest.raises(InvalidParameterError, match="quadratic_learning_rate_scale"):
        RPQNNClassifier(quadratic_learning_rate_scale=-1).fit(X, y)
    with pytest.raises(ValueError, match="classes must be passed"):
        QNNClassifier().partial_fit(X, y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        QNNClassifier().fit(X[:10], np.zeros(10))
    with pytest.raises(ValueError, match="NaN"):
        QNNClassifier().fit(np.full_like(X, np.nan), y)
    clf = QNNClassifier((3,), max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        clf.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.predict(X[:, :2])
    with pytest.raises(ValueError, match="not seen in the first call"):
        clf.partial_fit(X, y + 10)
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            QNNClassifier(device="cuda").fit(X, y)


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_hidden_layer_of_zero_neurons_is_refused_before_the_data(iris, Estimator):
    X, y = iris
    clf = Estimator((0,))
    with pytest.raises(ValueError, match="hidden_layer_sizes must contain positive integers"):
        clf.fit(X, y)
    assert not hasattr(clf, "classes_")  # refused before anything was set


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_partial_fit_is_hidden_for_lbfgs_as_in_mlp(Estimator):
    assert not hasattr(Estimator(solver="lbfgs"), "partial_fit")
    assert hasattr(Estimator(solver="sgd"), "partial_fit")
    with pytest.raises(AttributeError, match="has no attribute .partial_fit."):
        getattr(Estimator(solver="lbfgs"), "partial_fit")


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_partial_fit_with_other_classes_later_raises(iris, Estimator):
    X, y = iris
    clf = Estimator((3,), random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    clf.partial_fit(X, y, classes=[0, 1, 2])  # the same classes again are fine
    with pytest.raises(ValueError, match="is not the same as on last call to partial_fit"):
        clf.partial_fit(X, y, classes=[0, 1, 2, 3])


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_accepts_every_mlp_parameter(Estimator):
    mlp = MLPClassifier(learning_rate="invscaling", power_t=0.25, solver="sgd", activation="logistic")
    clf = Estimator(**mlp.get_params())
    assert {k: clf.get_params()[k] for k in mlp.get_params()} == mlp.get_params()
    config = clf._training_config()
    assert (config.learning_rate_schedule, config.power_t, config.solver) == ("invscaling", 0.25, "sgd")


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_mlp_style_attributes(iris, Estimator):
    X, y = iris
    clf = Estimator((4,), solver="lbfgs", max_iter=50, random_state=0, n_threads=1)
    with pytest.warns(ConvergenceWarning, match="lbfgs failed to converge"):
        clf.fit(X, y)
    assert clf.loss_ == clf.loss_curve_[-1]
    assert clf.n_layers_ == 3 and clf.out_activation_ == "softmax"
    assert clf.hidden_activation_ == "relu"


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_lbfgs_takes_scipys_steps_on_the_numpy_engine(iris, Estimator, monkeypatch):
    """solver="lbfgs" runs the training engine's numpy L-BFGS, whose iterates are
    scipy's L-BFGS-B's (MLPClassifier's) up to round-off: equal after a few steps."""
    X, y = iris
    params = dict(hidden_layer_sizes=(4,), solver="lbfgs", max_iter=8, alpha=1e-3, random_state=0,
                  n_threads=1)
    assert Estimator(**params)._training_config().lbfgs_engine == "compact"
    with pytest.warns(ConvergenceWarning, match="lbfgs failed to converge"):
        numpy_engine = Estimator(**params).fit(X, y)
    monkeypatch.setattr(base_module, "TrainingConfig",
                        functools.partial(base_module.TrainingConfig, lbfgs_engine="scipy"))
    with pytest.warns(ConvergenceWarning, match="lbfgs failed to converge"):
        scipy_engine = Estimator(**params).fit(X, y)
    assert numpy_engine.n_iter_ == scipy_engine.n_iter_ == 8
    for ours, theirs in zip(numpy_engine.coefs_, scipy_engine.coefs_):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-9)
    assert numpy_engine.loss_ == pytest.approx(scipy_engine.loss_, rel=1e-9)


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_fit_and_predict_leave_torch_global_generator_alone(iris, Estimator):
    X, y = iris
    torch.manual_seed(123)
    expected = torch.rand(5)
    torch.manual_seed(123)
    clf = Estimator((4,), quadratic_layers="all", relinear=False, solver="lbfgs", random_state=0).fit(X, y)
    restored = pickle.loads(pickle.dumps(clf))
    restored.predict_proba(X)  # rebuilds the network from layers_
    assert torch.equal(torch.rand(5), expected)


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_pickling_does_not_change_the_live_estimator(iris, Estimator):
    # Saving a checkpoint between partial_fit calls must not drop the
    # optimizer state of the running model.
    X, y = iris
    live = Estimator((4,), random_state=0)
    twin = Estimator((4,), random_state=0)
    for clf in (live, twin):
        for _ in range(3):
            clf.partial_fit(X, y, classes=[0, 1, 2])
    pickle.dumps(live)
    for clf in (live, twin):
        for _ in range(3):
            clf.partial_fit(X, y)
    np.testing.assert_array_equal(live.predict_proba(X), twin.predict_proba(X))


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_predictions_come_from_the_fitted_structure(iris, Estimator):
    X, y = iris
    clf = Estimator((4,), quadratic_layers="all", solver="lbfgs", random_state=0).fit(X, y)
    expected = clf.predict_proba(X)
    clf.set_params(activation="tanh", backward="autograd", output_activation="sigmoid", dtype="float32")
    np.testing.assert_array_equal(clf.predict_proba(X), expected)
    np.testing.assert_array_equal(copy.deepcopy(clf).predict_proba(X), expected)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(clf)).predict_proba(X), expected)


def test_network_too_large_for_memory_is_refused_naming_the_parameter():
    # 10 quadratic output neurons on 20000 inputs: 4e9 parameters, ~250 GiB to train.
    rng = np.random.RandomState(0)
    X, y = rng.randn(50, 8), np.arange(50) % 10
    clf = QNNClassifier(hidden_layer_sizes=(20000,), max_iter=1)
    # MemoryError, as every estimator's memory refusal (skquad._foundation._memory.check_memory)
    with pytest.raises(MemoryError, match=r"hidden_layer_sizes=\(20000,\).*GiB.*quadratic_layers"):
        clf.fit(X, y)


def test_divergence_advice_names_the_parameters_once(binary_data):
    X, y = binary_data
    clf = QNNClassifier((8, 8), quadratic_layers="all", relinear=False, quadratic_learning_rate_scale=1.0,
                        solver="sgd", learning_rate_init=10.0, max_iter=50, random_state=0, dtype="float32")
    with pytest.warns(ConvergenceWarning) as record:
        clf.fit(X * 50, y)
    message = str(record[0].message)
    assert "diverged" in message and clf.diverged_
    assert message.count("learning_rate_init") == 1 and message.count("now 10") == 1
    assert "learning rate" not in message  # the engine's generic wording is replaced, not repeated
    assert "quadratic_learning_rate_scale (now 1)" in message and "solver='adam'" in message


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
# (the defaults once, alpha's held-out search with them; the other options at a fixed alpha)
@pytest.mark.parametrize("options", [{}, {"quadratic_layers": "all", "alpha": 1e-4},
                                     {"solver": "lbfgs", "alpha": 1e-4},
                                     {"backward": "autograd", "alpha": 1e-4}])
def test_sparse_input_trains_and_predicts_like_dense(iris, Estimator, options, thread_counts, perturb_ulps):
    X, y = iris
    # Another thread count and a few ulps off the data: the comparison must
    # hold for any rounding, not for this machine's (issue 19).
    X = perturb_ulps(np.where(np.abs(X) < 0.5, 0.0, X))
    params = dict(hidden_layer_sizes=(5,), max_iter=30, random_state=0, **options)
    with pytest.warns(ConvergenceWarning):
        dense = Estimator(**params).fit(X, y)
        on_sparse = Estimator(**params).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(on_sparse.predict_proba(sp.csc_matrix(X)), dense.predict_proba(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(on_sparse.predict_proba(X), dense.predict_proba(X), rtol=1e-9, atol=1e-9)


def test_one_hot_column_transformer_pipeline_stays_sparse():
    rng = np.random.RandomState(0)
    frame = {"city": rng.choice(list("abcdefghij"), 400), "size": rng.randn(400)}
    import pandas as pd

    frame = pd.DataFrame(frame)
    y = (frame["city"].isin(list("abc")) ^ (frame["size"] > 0)).astype(int)
    encode = ColumnTransformer([("city", OneHotEncoder(), ["city"])], remainder="passthrough", sparse_threshold=1.0)
    assert sp.issparse(encode.fit_transform(frame))
    model = make_pipeline(encode, RPQNNClassifier((8,), solver="lbfgs", random_state=0)).fit(frame, y)
    # city in {a, b, c} XOR size > 0: a product of two features, one quadratic neuron's job
    assert model.score(frame, y) > 0.95


def test_fitted_activation_is_what_the_trainer_used(iris):
    X, y = iris
    clf = QNNClassifier((4,), random_state=0).partial_fit(X, y, classes=[0, 1, 2])
    clf.set_params(activation="tanh", output_activation="sigmoid")
    clf.partial_fit(X, y)  # the running optimizer continues the relu/softmax network
    assert (clf.hidden_activation_, clf.out_activation_) == ("relu", "softmax")
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_early_stopping_auto_holds_out_where_adam_trains_on_more_than_the_lbfgs_rows():
    from skquad.neural_network._base import AUTO_LBFGS_MAX_SAMPLES, fit_early_stopping

    many, few = AUTO_LBFGS_MAX_SAMPLES + 1, AUTO_LBFGS_MAX_SAMPLES
    assert fit_early_stopping("auto", "adam", many) and fit_early_stopping("auto", "sgd", many)
    assert not fit_early_stopping("auto", "adam", few)
    assert not fit_early_stopping("auto", "lbfgs", many)
    assert not fit_early_stopping("auto", "adam", many, incremental=True)
    assert fit_early_stopping(True, "adam", few) and not fit_early_stopping(False, "adam", many)


def _noisy_linear(n_train, seed=0):
    """A linear signal under noise of about twice its spread: little for a network to learn."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n_train + 800, 16)
    score = X @ (rng.randn(16) / 4)
    return X, score + 1.5 * rng.randn(len(score)), n_train


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_default_stops_early_on_many_noisy_rows_where_training_every_epoch_overfits(Estimator):
    X, target, n = _noisy_linear(1600)
    y = (target > 0).astype(int)
    reference = LogisticRegression().fit(X[:n], y[:n]).score(X[n:], y[n:])
    model = Estimator(random_state=0).fit(X[:n], y[:n])
    assert model.validation_scores_ is not None and model.best_loss_ is None
    assert model.score(X[n:], y[n:]) > reference - 0.02
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        every_epoch = Estimator(random_state=0, early_stopping=False, alpha=1e-4).fit(X[:n], y[:n])
    assert every_epoch.score(X[n:], y[n:]) < reference - 0.03
    # without early stopping, the default alpha="auto" checks MLP's 1e-4 on held-out rows
    checked = Estimator(random_state=0, early_stopping=False).fit(X[:n], y[:n])
    assert checked.alpha_ > 1e-4 and checked.score(X[n:], y[n:]) > every_epoch.score(X[n:], y[n:]) + 0.04


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_default_trains_every_epoch_on_few_rows_and_partial_fit_never_holds_out(Estimator):
    X, target, _ = _noisy_linear(200)
    y = (target > 0).astype(int)
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        model = Estimator((5,), max_iter=5, random_state=0).fit(X, y)  # 1,000 rows
    assert model.validation_scores_ is None and model.best_loss_ is not None
    model.partial_fit(X, y)  # "auto" is no refusal: partial_fit has nothing to hold out
    assert model.validation_scores_ is None and model.best_loss_ is not None


@pytest.mark.parametrize("Estimator", [QNNClassifier, RPQNNClassifier])
def test_default_trains_on_every_row_where_no_validation_split_can_be_scored(Estimator):
    # a class of one sample cannot be stratified: "auto" trains as without early stopping,
    # where early_stopping=True refuses the data as MLPClassifier does
    rng = np.random.RandomState(0)
    X = rng.randn(1500, 5)
    y = (X[:, 0] > 0).astype(int)
    y[0] = 2
    with pytest.warns(ConvergenceWarning, match="Maximum iterations"):
        model = Estimator((5,), max_iter=3, random_state=0).fit(X, y)
    assert model.validation_scores_ is None and model.best_loss_ is not None
    with pytest.raises(ValueError, match="could not set aside a stratified validation set"):
        Estimator((5,), max_iter=3, random_state=0, early_stopping=True).fit(X, y)
