"""Interaction constraints (``interaction_only``, ``interaction_cst``) of the quadratic linear models.

The constrained model is the linear model on ``PolynomialFeatures(2)``'s
columns of the allowed pairs: every solver must reach that optimum with
``Q`` exactly zero elsewhere.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse
from scipy.special import log_expit
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression, Ridge, RidgeCV
from sklearn.preprocessing import PolynomialFeatures

from skquad import QuadraticLogisticRegression, QuadraticRegression, QuadraticRegressionCV
from skquad.linear_model._interactions import allowed_entries, pair_groups
from skquad.nn import quadratic_form

CONSTRAINTS = [
    ([[0, 1, 2], [2, 3]], False),  # overlapping groups; 4.. form one more group
    ("no_interactions", True),  # the linear model
    ("no_interactions", False),  # squares only
    (None, True),  # every cross term, no square
    ([[0, 1], [4, 5]], True),
]


def _objective(X, y, sample_weight, C, Q, coef, intercept):
    """C * sum_i s_i l_i + (P(Q) + ||w||^2) / 2 with the polynomial penalty, in numpy."""
    scores = np.einsum("ni,kij,nj->nk", X, Q, X) + X @ coef.T + intercept
    z = scores[:, 0]
    loss = -np.where(y == 1, log_expit(z), log_expit(-z))
    off = Q - np.einsum("kii->ki", Q)[:, :, None] * np.eye(Q.shape[1])
    penalty = np.sum(Q**2) + np.sum(off**2) + np.sum(coef**2)
    return C * np.sum(sample_weight * loss) + 0.5 * penalty


def _explicit_columns(d, allowed):
    """PolynomialFeatures(2)'s columns of the allowed pairs, and those pairs."""
    rows, cols = np.triu_indices(d)
    keep = allowed[rows, cols]
    return np.concatenate([np.arange(d), d + np.flatnonzero(keep)]), rows[keep], cols[keep]


def _as_model(coef, d, rows, cols):
    """``(Q, w)`` of the explicit model's coefficients (x_a x_b's is 2 Q_ab)."""
    Q = np.zeros((coef.shape[0], d, d))
    Q[:, rows, cols] = coef[:, d:]
    return 0.5 * (Q + Q.transpose(0, 2, 1)), coef[:, :d]


def _data(n, d, seed=0, n_classes=2):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    score = X[:, 0] * X[:, 1] + X[:, 2] - 0.5 * X[:, 3] ** 2 + 0.3 * rng.randn(n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y, score


# ------------------------------------------------------------------ the rule
def test_groups_follow_histgradientboosting():
    """The unlisted features form one group (HGB's rule); squares are left to interaction_only."""
    d = 6
    groups = HistGradientBoostingRegressor(interaction_cst=[[0, 1], [1, 2]])._check_interaction_cst(d)
    expected = np.zeros((d, d), dtype=bool)
    for group in groups:
        members = sorted(group)
        expected[np.ix_(members, members)] = True
    assert groups[-1] == {3, 4, 5}
    np.testing.assert_array_equal(allowed_entries([[0, 1], [1, 2]], False, d), expected)
    assert allowed_entries("pairwise", False, d) is None  # every pair: no constraint
    assert allowed_entries(None, False, d) is None
    np.testing.assert_array_equal(allowed_entries("no_interactions", False, d), np.eye(d, dtype=bool))
    only = allowed_entries(None, True, d)
    np.testing.assert_array_equal(only, ~np.eye(d, dtype=bool))


def test_pair_groups_allow_exactly_the_pairs():
    d, pairs = 6, np.array([[0, 3], [1, 3]])
    allowed = allowed_entries(pair_groups(pairs, d), False, d)
    off = allowed & ~np.eye(d, dtype=bool)
    # only the listed pairs (both orientations), every square; none for no pairs
    assert {(a, b) for a, b in zip(*np.nonzero(off)) if a < b} == {(0, 3), (1, 3)}
    assert np.all(np.diag(allowed))
    empty = allowed_entries(pair_groups(np.empty((0, 2), int), d), False, d)
    np.testing.assert_array_equal(empty, np.eye(d, dtype=bool))


def test_groups_by_name():
    names = np.array(["a", "b", "c", "d"], dtype=object)
    np.testing.assert_array_equal(
        allowed_entries([["a", "c"], ["b", 3]], False, 4, names),
        allowed_entries([[0, 2], [1, 3]], False, 4),
    )


@pytest.mark.parametrize(
    "interaction_cst, message",
    [
        ([[0, 7]], r"integer indices in \[0, n_features - 1\] = \[0, 3\]"),
        ([[0, -1]], "integer indices"),
        ([[0, 1.5]], "integer indices"),
        ([[True, 1]], "integer indices"),
        ([3, 4], "sequence of groups"),
        (["ab"], "sequence of groups"),
        ([["x0", "nope"]], "'nope', which is not in X"),
    ],
)
@pytest.mark.parametrize("Estimator", [QuadraticLogisticRegression, QuadraticRegression])
def test_bad_groups_are_refused_naming_the_parameter(Estimator, interaction_cst, message):
    X, y, score = _data(40, 4)
    X = pd.DataFrame(X, columns=["x0", "x1", "x2", "x3"])
    target = y if Estimator is QuadraticLogisticRegression else score
    with pytest.raises(ValueError, match="interaction_cst") as error:
        Estimator(interaction_cst=interaction_cst).fit(X, target)
    assert error.match(message)


def test_names_without_feature_names_are_refused():
    X, y, _ = _data(40, 4)
    with pytest.raises(ValueError, match="X has no feature names"):
        QuadraticLogisticRegression(interaction_cst=[["a", "b"]]).fit(X, y)


def test_string_constraint_is_validated():
    X, y, _ = _data(40, 4)
    with pytest.raises(ValueError, match="interaction_cst"):
        QuadraticLogisticRegression(interaction_cst="all").fit(X, y)


def test_low_rank_is_refused():
    X, y, _ = _data(40, 4)
    with pytest.raises(ValueError, match="rank=2 cannot be combined with interaction_only"):
        QuadraticLogisticRegression(rank=2, interaction_only=True).fit(X, y)


# ------------------------------------------------------------- the classifier
def _logistic_reference(X, y, allowed, C, sample_weight=None):
    columns, rows, cols = _explicit_columns(X.shape[1], allowed)
    explicit = PolynomialFeatures(2, include_bias=False).fit_transform(X)[:, columns]
    ref = LogisticRegression(C=C, tol=1e-12, max_iter=100_000)
    ref.fit(explicit, y, sample_weight=sample_weight)
    return (*_as_model(ref.coef_, X.shape[1], rows, cols), ref.intercept_)


# (n, d, the path L-BFGS's objective takes, or Newton's method on the dual)
PATHS = {
    "newton-dual": (30, 10, {}),
    "design": (200, 6, {}),
    "streamed-design": (300, 8, {"_DESIGN_MATRIX_ELEMENTS": 256, "_PAIRS_RATE": 0}),
    "matrix-form": (300, 8, {"_DESIGN_MATRIX_ELEMENTS": 0, "_PAIRS_RATE": 1e9}),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("interaction_cst, interaction_only", CONSTRAINTS)
def test_classifier_optimum_is_the_restricted_explicit_model(
    monkeypatch, path, interaction_cst, interaction_only
):
    n, d, settings = PATHS[path]
    for name, value in settings.items():
        monkeypatch.setattr(quadratic_form, name, value)
    X, y, _ = _data(n, d)
    allowed = allowed_entries(interaction_cst, interaction_only, d)
    model = QuadraticLogisticRegression(
        C=0.5, interaction_cst=interaction_cst, interaction_only=interaction_only, tol=1e-10,
        dtype="float64", solver="auto" if path == "newton-dual" else "lbfgs", quadratic_C=None,
    ).fit(X, y)
    expected_solver = "newton-dual" if path == "newton-dual" else "lbfgs"
    if path == "newton-dual" and X.shape[0] > np.count_nonzero(np.triu(allowed)) + d:
        expected_solver = "lbfgs"  # fewer degree-2 features than rows: the rule takes L-BFGS
    assert model.solver_ == expected_solver
    assert np.all(model.Q_[0][~allowed] == 0.0)
    Q, coef, intercept = _logistic_reference(X, y, allowed, 0.5)
    objective = lambda *p: _objective(X, y, np.ones(n), 0.5, *p)
    ours, reference = objective(model.Q_, model.coef_, model.intercept_), objective(Q, coef, intercept)
    assert ours <= reference * (1 + 1e-10)
    # both L-BFGS runs stop on the objective's relative change (64 eps): the
    # parameters then agree to a few 1e-6
    np.testing.assert_allclose(model.Q_, Q, atol=1e-5)
    np.testing.assert_allclose(model.coef_, coef, atol=1e-5)
    np.testing.assert_allclose(model.intercept_, intercept, atol=1e-5)


def test_multinomial_and_weights_match_the_explicit_model():
    X, y, _ = _data(150, 5, seed=1, n_classes=3)
    weight = np.random.RandomState(2).uniform(0.5, 2.0, X.shape[0])
    cst = [[0, 1], [2, 3, 4]]
    allowed = allowed_entries(cst, True, 5)
    model = QuadraticLogisticRegression(
        C=2.0, interaction_cst=cst, interaction_only=True, tol=1e-10, quadratic_C=None
    ).fit(X, y, sample_weight=weight)
    Q, coef, intercept = _logistic_reference(X, y, allowed, 2.0, weight)
    assert np.all(model.Q_[:, ~allowed] == 0.0)
    # the softmax's scores are defined up to a common shift: compare centred
    centre = lambda a: a - a.mean(axis=0)
    np.testing.assert_allclose(centre(model.Q_), centre(Q), atol=1e-6)
    np.testing.assert_allclose(centre(model.coef_), centre(coef), atol=1e-6)


@pytest.mark.parametrize("Q_init", ["zeros", "identity", "random"])
def test_sgd_and_starts_keep_the_excluded_entries_zero(Q_init):
    X, y, _ = _data(200, 6)
    allowed = allowed_entries([[0, 1, 2]], True, 6)
    model = QuadraticLogisticRegression(
        solver="sgd", Q_init=Q_init, interaction_cst=[[0, 1, 2]], interaction_only=True,
        max_iter=5, random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # five epochs: not the point here
        model.fit(X, y)
    assert np.all(model.Q_[0][~allowed] == 0.0)
    assert np.any(model.Q_[0][allowed] != 0.0)


def test_warm_start_from_an_unconstrained_model_is_projected():
    X, y, _ = _data(200, 6)
    model = QuadraticLogisticRegression(warm_start=True, tol=1e-10).fit(X, y)
    assert np.count_nonzero(model.Q_) == 36
    model.set_params(interaction_cst="no_interactions").fit(X, y)
    np.testing.assert_array_equal(model.Q_[0], np.diag(np.diag(model.Q_[0])))
    cold = QuadraticLogisticRegression(interaction_cst="no_interactions", tol=1e-10).fit(X, y)
    np.testing.assert_allclose(model.Q_, cold.Q_, atol=1e-6)


def test_names_from_a_dataframe():
    X, y, _ = _data(200, 5)
    frame = pd.DataFrame(X, columns=list("abcde"))
    by_name = QuadraticLogisticRegression(interaction_cst=[["a", "b"], ["c", "d"]]).fit(frame, y)
    by_index = QuadraticLogisticRegression(interaction_cst=[[0, 1], [2, 3]]).fit(X, y)
    np.testing.assert_array_equal(by_name.feature_names_in_, list("abcde"))
    np.testing.assert_allclose(by_name.Q_, by_index.Q_, rtol=1e-12, atol=1e-14)


# -------------------------------------------------------------- the regressor
def _ridge_reference(X, y, allowed, alpha):
    columns, rows, cols = _explicit_columns(X.shape[1], allowed)
    explicit = PolynomialFeatures(2, include_bias=False).fit_transform(X)[:, columns]
    ref = Ridge(alpha=alpha, solver="svd").fit(explicit, y)
    Q, coef = _as_model(ref.coef_[None, :], X.shape[1], rows, cols)
    return Q[0], coef[0], ref.intercept_, explicit


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("solver", ["cholesky", "kernel", "cg"])
@pytest.mark.parametrize("interaction_cst, interaction_only", CONSTRAINTS)
def test_regressor_optimum_is_the_restricted_ridge(solver, sparse, interaction_cst, interaction_only):
    X, _, y = _data(40, 8)
    allowed = allowed_entries(interaction_cst, interaction_only, 8)
    model = QuadraticRegression(
        0.3, solver=solver, tol=1e-12, interaction_cst=interaction_cst,
        interaction_only=interaction_only,
    ).fit(scipy.sparse.csr_matrix(X) if sparse else X, y)
    Q, coef, intercept, _ = _ridge_reference(X, y, allowed, 0.3)
    assert np.all(model.Q_[~allowed] == 0.0)
    np.testing.assert_allclose(model.Q_, Q, atol=1e-8)
    np.testing.assert_allclose(model.coef_, coef, atol=1e-8)
    np.testing.assert_allclose(model.intercept_, intercept, atol=1e-8)


@pytest.mark.parametrize("n", [9, 200])  # the kernel route (n < D) and the normal equations
@pytest.mark.parametrize("interaction_cst, interaction_only", [CONSTRAINTS[0], CONSTRAINTS[4]])
def test_auto_penalties_are_the_two_penalty_restricted_ridge(n, interaction_cst, interaction_only):
    """alpha='auto': the model is Ridge on the allowed pairs' features, the quadratic ones
    penalised by quadratic_alpha_ (Ridge alpha_ on them scaled by sqrt(alpha_ / quadratic_alpha_))."""
    X, _, y = _data(n, 8)
    allowed = allowed_entries(interaction_cst, interaction_only, 8)
    model = QuadraticRegression(
        interaction_cst=interaction_cst, interaction_only=interaction_only
    ).fit(X, y)
    assert np.all(model.Q_[~allowed] == 0.0)
    columns, rows, cols = _explicit_columns(8, allowed)
    explicit = PolynomialFeatures(2, include_bias=False).fit_transform(X)[:, columns]
    assert model.solver_ == ("kernel" if n < explicit.shape[1] else "cholesky")
    scale = np.ones(explicit.shape[1])
    scale[8:] = np.sqrt(model.alpha_ / model.quadratic_alpha_)
    ref = Ridge(alpha=model.alpha_, solver="svd").fit(explicit * scale, y)
    Q, coef = _as_model((ref.coef_ * scale)[None, :], 8, rows, cols)
    np.testing.assert_allclose(model.Q_, Q[0], atol=1e-8)
    np.testing.assert_allclose(model.coef_, coef[0], atol=1e-8)
    np.testing.assert_allclose(model.intercept_, ref.intercept_, atol=1e-8)


def test_auto_solver_counts_the_allowed_features():
    """n between d + (allowed pairs) and d(d+3)/2: the normal equations, not the kernel."""
    X, _, y = _data(30, 8)
    assert QuadraticRegression().fit(X, y).solver_ == "kernel"
    assert QuadraticRegression(interaction_cst="no_interactions").fit(X, y).solver_ == "cholesky"


@pytest.mark.parametrize("gcv_mode", ["gram", "cov"])
@pytest.mark.parametrize("interaction_cst, interaction_only", CONSTRAINTS[:2] + CONSTRAINTS[3:4])
def test_regressor_cv_is_ridgecv_on_the_restricted_features(gcv_mode, interaction_cst, interaction_only):
    X, _, y = _data(60, 6)
    allowed = allowed_entries(interaction_cst, interaction_only, 6)
    alphas = [0.03, 0.3, 3.0]
    model = QuadraticRegressionCV(
        alphas=alphas, quadratic_ratios=(1.0,), gcv_mode=gcv_mode,
        interaction_cst=interaction_cst, interaction_only=interaction_only,
    ).fit(X, y)
    *_, explicit = _ridge_reference(X, y, allowed, 1.0)
    ref = RidgeCV(alphas=alphas).fit(explicit, y)
    assert model.alpha_ == ref.alpha_
    np.testing.assert_allclose(model.best_score_, ref.best_score_, rtol=1e-8)
    assert np.all(model.Q_[~allowed] == 0.0)


def test_regressor_cv_folds_keep_named_groups():
    X, _, y = _data(90, 4)
    frame = pd.DataFrame(X, columns=list("abcd"))
    model = QuadraticRegressionCV(cv=3, interaction_cst=[["a", "b"]], interaction_only=True)
    model.fit(frame, y)
    allowed = allowed_entries([[0, 1]], True, 4)
    assert np.all(model.Q_[~allowed] == 0.0) and np.any(model.Q_[allowed] != 0.0)


# ----------------------------------------------------------------------- Dask
def test_dask_fits_keep_the_constraints():
    dask = pytest.importorskip("dask")
    dd = pytest.importorskip("dask.dataframe")
    import dask.array as da

    X, y, score = _data(300, 6)
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    cst = [["f0", "f1"], ["f2", "f3"]]
    with dask.config.set(scheduler="synchronous"):
        for model, target in [
            (QuadraticRegression(0.3), score),
            (QuadraticLogisticRegression(C=0.5, tol=1e-10, dtype="float64", quadratic_C=None), y),
        ]:
            model.set_params(interaction_cst=cst, interaction_only=True)
            in_memory = model.fit(frame, target).Q_.copy()
            blocks = model.fit(
                dd.from_pandas(frame, npartitions=3), da.from_array(target, chunks=100)
            ).Q_
            assert np.count_nonzero(blocks) == 6  # (0,1), (2,3), (4,5), both halves
            np.testing.assert_allclose(blocks, in_memory, atol=1e-6)


def test_restricted_packing_torch_and_numpy_paths_agree():
    """The device (torch) gathers of a restricted packing are the CPU (numpy) ones."""
    import torch

    allowed = allowed_entries([[0, 1, 2]], True, 5)
    packing = quadratic_form.SymmetricPacking(5, allowed)
    v = torch.randn(2, packing.rows.size, dtype=torch.float64)
    Q = packing.unpack(v)
    np.testing.assert_array_equal(packing._unpack_torch(v).numpy(), Q.numpy())
    assert np.all(Q.numpy()[:, ~allowed] == 0.0)
    np.testing.assert_allclose(packing._pack_torch(Q.reshape(2, -1)).numpy(), v.numpy())
    G = torch.randn(2, 5, 5, dtype=torch.float64)
    np.testing.assert_allclose(
        packing._gradient_torch(G.reshape(2, -1)).numpy(), packing.gradient(G).numpy()
    )
