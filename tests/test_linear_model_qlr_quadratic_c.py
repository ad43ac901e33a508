"""QuadraticLogisticRegression's ``quadratic_C``: the problem it states and ``"auto"``'s choice."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_circles, make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import PolynomialFeatures

from skquad import QuadraticLogisticRegression
from skquad.linear_model import _qlr_quadratic_c


def _linear_noisy(seed, n_train=300, n_test=2000, d=20):
    """Classes set by a linear score under noise: 230 quadratic terms with nothing to learn."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_train + n_test, d))
    w = rng.standard_normal(d) / np.sqrt(d)
    y = (X @ w + 0.7 * rng.standard_normal(len(X)) > 0).astype(int)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _scaled_pipeline(X, y, C, quadratic_C):
    """LogisticRegression on PolynomialFeatures(2) whose degree-2 columns are scaled by
    ``sqrt(quadratic_C / C)``: the two-penalty problem, written out."""
    scale = np.sqrt(quadratic_C / C)
    expand = lambda X: np.hstack([X, scale * PolynomialFeatures(2, include_bias=False)
                                  .fit_transform(X)[:, X.shape[1]:]])
    model = LogisticRegression(C=C, tol=1e-12, max_iter=20000).fit(expand(X), y)
    return lambda X: model.predict_proba(expand(X))


@pytest.mark.parametrize("n_classes, n_rows, solver", [
    (2, 40, "newton-dual"), (2, 400, "lbfgs"), (3, 300, "lbfgs")])
def test_a_number_is_the_pipeline_on_scaled_quadratic_columns(n_classes, n_rows, solver):
    X, y = make_classification(n_rows, 8, n_informative=5, n_classes=n_classes, random_state=0)
    model = QuadraticLogisticRegression(C=2.0, quadratic_C=0.05, tol=1e-10, max_iter=5000)
    model.fit(X, y)
    assert model.solver_ == solver and model.quadratic_C_ == 0.05
    # both at their optima to within tol: the probabilities agree well below 1e-4
    np.testing.assert_allclose(model.predict_proba(X), _scaled_pipeline(X, y, 2.0, 0.05)(X),
                               atol=1e-5)


@pytest.mark.parametrize("penalty", ["polynomial", "frobenius"])
def test_every_driver_weighs_the_quadratic_penalty_alike(penalty):
    X, y = make_classification(150, 25, n_informative=5, random_state=0)
    params = dict(C=1.0, quadratic_C=0.05, penalty=penalty, tol=1e-9, max_iter=5000)
    dual = QuadraticLogisticRegression(**params).fit(X, y)
    lbfgs = QuadraticLogisticRegression(**params, solver="lbfgs").fit(X, y)
    torch_path = QuadraticLogisticRegression(**params, solver="lbfgs", dtype="float32").fit(X, y)
    assert (dual.solver_, lbfgs.solver_) == ("newton-dual", "lbfgs")
    np.testing.assert_allclose(dual.Q_, lbfgs.Q_, atol=1e-6)
    np.testing.assert_allclose(dual.coef_, lbfgs.coef_, atol=1e-5)
    assert dual.loss_ == pytest.approx(lbfgs.loss_, rel=1e-9)
    np.testing.assert_allclose(torch_path.predict_proba(X), lbfgs.predict_proba(X), atol=1e-3)


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_keeps_the_quadratic_part_from_fitting_noise(seed):
    X, y, X_test, y_test = _linear_noisy(seed)
    default = QuadraticLogisticRegression().fit(X, y)
    pipeline = QuadraticLogisticRegression(quadratic_C=None).fit(X, y)
    linear = LogisticRegression().fit(X, y).score(X_test, y_test)
    assert default.quadratic_C_ < default.C
    assert default.score(X_test, y_test) >= linear - 0.02
    assert pipeline.score(X_test, y_test) <= linear - 0.05


def test_auto_keeps_the_quadratic_part_where_the_classes_need_it():
    X, y = make_circles(600, noise=0.1, factor=0.5, random_state=0)
    model = QuadraticLogisticRegression().fit(X[:300], y[:300])
    assert model.quadratic_C_ == model.C
    assert model.score(X[300:], y[300:]) > 0.95


def test_a_weight_of_two_chooses_as_a_repeated_row():
    X, y, _, _ = _linear_noisy(2, n_train=200, d=8)
    weight = np.where(np.arange(200) % 3 == 0, 2.0, 1.0)
    repeated = np.repeat(np.arange(200), weight.astype(int))
    weighted = QuadraticLogisticRegression(tol=1e-10).fit(X, y, sample_weight=weight)
    copies = QuadraticLogisticRegression(tol=1e-10).fit(X[repeated], y[repeated])
    assert weighted.quadratic_C_ == copies.quadratic_C_
    np.testing.assert_allclose(weighted.Q_, copies.Q_, atol=1e-6)


def test_class_weights_count_once_in_the_search():
    X, y, _, _ = _linear_noisy(3, n_train=240, d=8)
    y = np.where(np.arange(240) < 60, y, 0)  # 0 the larger class
    balanced = QuadraticLogisticRegression(class_weight="balanced", tol=1e-10).fit(X, y)
    weights = len(y) / (2.0 * np.bincount(y))
    explicit = QuadraticLogisticRegression(tol=1e-10).fit(X, y, sample_weight=weights[y])
    assert balanced.quadratic_C_ == explicit.quadratic_C_
    np.testing.assert_allclose(balanced.Q_, explicit.Q_, atol=1e-6)


def test_auto_is_C_where_it_does_not_search(monkeypatch):
    X, y, _, _ = _linear_noisy(0, n_train=300, d=6)
    C = 0.5
    cases = {
        "sgd": dict(solver="sgd", max_iter=5, random_state=0),
        "l1": dict(penalty="l1", max_iter=50),
        "rank": dict(rank=2, random_state=0),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # l1's and sgd's convergence notes
        for params in cases.values():
            assert QuadraticLogisticRegression(C=C, **params).fit(X, y).quadratic_C_ == C
    partial = QuadraticLogisticRegression(C=C, solver="sgd", random_state=0)
    assert partial.partial_fit(X, y, classes=[0, 1]).quadratic_C_ == C
    assert QuadraticLogisticRegression(C=C).fit(X[:15], y[:15]).quadratic_C_ == C  # 15 rows
    with pytest.warns(UserWarning, match="Standardize"):  # its fits would not converge either
        assert QuadraticLogisticRegression(C=C).fit(X * 1e6, y).quadratic_C_ == C
    assert QuadraticLogisticRegression(C=np.inf).fit(X, y).quadratic_C_ == np.inf
    # the search's fits cost one over its bound here
    assert QuadraticLogisticRegression(C=C).fit(X, y).quadratic_C_ < C
    monkeypatch.setattr(_qlr_quadratic_c, "AUTO_SEARCH_MAX_FLOPS", 3.0 * 300 * 36 - 1)
    assert QuadraticLogisticRegression(C=C).fit(X, y).quadratic_C_ == C


def test_auto_is_C_where_a_training_fold_lacks_a_class():
    # on 100 rows every fifth is held out in turn: the one row of a third class is held
    # out once, and that fold's model cannot score it
    X, y, _, _ = _linear_noisy(0, n_train=100, d=6)
    y = y.copy()
    y[0] = 2
    model = QuadraticLogisticRegression().fit(X, y)
    assert model.quadratic_C_ == model.C


def test_names_in_interaction_constraints_reach_the_search():
    pd = pytest.importorskip("pandas")
    X, y, _, _ = _linear_noisy(0, n_train=300, d=4)
    frame = pd.DataFrame(X, columns=list("abcd"))
    by_name = QuadraticLogisticRegression(interaction_cst=[["a", "b"], ["c", "d"]]).fit(frame, y)
    by_index = QuadraticLogisticRegression(interaction_cst=[[0, 1], [2, 3]]).fit(X, y)
    assert by_name.quadratic_C_ == by_index.quadratic_C_
    np.testing.assert_array_equal(by_name.Q_, by_index.Q_)
    assert by_name.Q_[0, 0, 2] == 0.0


@pytest.mark.parametrize("params, match", [
    (dict(quadratic_C=0.1, penalty="l1"), "weighs the L2 penalties"),
    (dict(quadratic_C=0.1, C=np.inf), "needs a finite C"),
    (dict(quadratic_C=0.0), "quadratic_C"),
    (dict(quadratic_C=np.inf), "quadratic_C"),
])
def test_numbers_without_a_penalty_to_weigh_are_refused(params, match):
    X, y, _, _ = _linear_noisy(0, n_train=60, d=3)
    with pytest.raises(ValueError, match=match):
        QuadraticLogisticRegression(**params).fit(X, y)


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_a_refit_cut_short_in_the_search_leaves_the_model_as_it_was(monkeypatch, failure):
    X, y, _, _ = _linear_noisy(0, n_train=300, d=6)
    model = QuadraticLogisticRegression().fit(X, y)
    before = {name: np.copy(value) for name, value in vars(model).items()
              if name.endswith("_") and isinstance(value, (np.ndarray, float))}
    state = np.geterr()

    def broken(*args):
        raise failure("stopped in the search")

    monkeypatch.setattr(_qlr_quadratic_c, "_log_losses", broken)
    with pytest.raises(failure):
        model.fit(X, 1 - y)
    monkeypatch.undo()
    for name, value in before.items():
        np.testing.assert_array_equal(getattr(model, name), value)
    assert np.geterr() == state
    np.testing.assert_array_equal(model.predict(X), QuadraticLogisticRegression().fit(X, y).predict(X))


@pytest.mark.parametrize("rank", [None, 2])
def test_dask_fits_weigh_the_quadratic_penalty_as_in_memory_and_take_C_for_auto(rank):
    dask = pytest.importorskip("dask")
    import dask.array as da

    X, y, _, _ = _linear_noisy(0, n_train=300, d=6)
    blocks = da.from_array(X, chunks=100), da.from_array(y, chunks=100)
    params = dict(C=0.5, quadratic_C=0.01, rank=rank, random_state=0, tol=1e-8, max_iter=2000)
    with dask.config.set(scheduler="synchronous"):
        remote = QuadraticLogisticRegression(**params).fit(*blocks)
        default = QuadraticLogisticRegression(C=0.5).fit(*blocks)
    local = QuadraticLogisticRegression(**params).fit(X, y)
    assert remote.loss_ == pytest.approx(local.loss_, rel=1e-6)
    np.testing.assert_allclose(remote.predict_proba(X), local.predict_proba(X), atol=1e-4)
    assert default.quadratic_C_ == 0.5  # on Dask, "auto" is C


def test_the_search_solves_few_rows_by_newton_from_cold_starts(monkeypatch):
    # where the rule solves a cold start by Newton's method on the dual (binary, fewer rows
    # than degree-2 features), every fit of the search starts cold there, not warm by L-BFGS
    X, y = make_classification(150, 40, n_informative=5, random_state=0)
    routes = []
    route = QuadraticLogisticRegression._route

    def recording(self, *args, **kwargs):
        chosen = route(self, *args, **kwargs)
        routes.append(chosen.solver)
        return chosen

    monkeypatch.setattr(QuadraticLogisticRegression, "_route", recording)
    model = QuadraticLogisticRegression().fit(X, y)
    assert model.solver_ == "newton-dual"
    assert len(routes) > len(_qlr_quadratic_c.AUTO_FRACTIONS)  # the search's fits and the fit
    assert set(routes) == {"newton-dual"}
