"""skquad.nn.quadratic_moments: the normal equations from the distinct degree-4 moments.

The reference is the SYRK route of :func:`skquad.nn.quadratic_ridge.normal_equations` (the
centred features' ``Φᵀ Φ``), itself checked against scikit-learn's Ridge on
PolynomialFeatures(2) in test_nn_quadratic_ridge.py. Both sum the same products in another
order, so they agree to a few units of round-off of the Gram's largest entry; the shifted
columns' map back is exact algebra, so it keeps that agreement on offset data.
"""

import itertools

import numpy as np
import pytest
import scipy.sparse
from sklearn.linear_model import Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures

from skquad.linear_model import QuadraticRegression
from skquad.nn import quadratic_moments, quadratic_ridge


def _both_routes(monkeypatch, X, Y, weight, fit_intercept=True):
    """``(G, R)`` by the moments and by the SYRK, at the features' weighted mean."""
    d = X.shape[1]
    rows, cols = quadratic_ridge.pairs_of(d)
    mean = (quadratic_ridge._feature_means(X, weight, rows, cols) if fit_intercept
            else np.zeros(quadratic_ridge.expansion_size(d)))
    y_mean = weight @ Y / weight.sum() if fit_intercept else np.zeros(Y.shape[1])
    moments = quadratic_moments.moment_normal_equations(
        X, Y, weight, mean, y_mean, (rows, cols), quadratic_ridge._dense_blocks)
    monkeypatch.setattr(quadratic_ridge, "uses_moments", lambda *args: False)
    syrk = quadratic_ridge.normal_equations(X, Y, weight, mean, y_mean)
    monkeypatch.undo()
    return moments, syrk


def _assert_same(found, expected, rtol=1e-13):
    for value, reference in zip(found, expected):
        np.testing.assert_allclose(value, reference, rtol=0, atol=rtol * np.abs(reference).max())


def _table(n=400, d=12, seed=0, offset=0.0):
    """Standardized columns, a rare and a common dummy, one column far from zero."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.5, 2.0, d)
    X[:, 0] = rng.uniform(size=n) < 0.05
    X[:, 1] = rng.uniform(size=n) < 0.8
    X[:, 2] += offset
    Y = X[:, 3:4] * X[:, 4:5] + X[:, 2:3] + 0.1 * rng.standard_normal((n, 2))
    return X, Y, rng.uniform(0.0, 2.0, n)


@pytest.mark.parametrize("offset", [0.0, 1e3])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("unit_weights", [True, False])
def test_the_moments_give_the_syrks_normal_equations(monkeypatch, offset, fit_intercept, unit_weights):
    X, Y, weight = _table(offset=offset)
    weight = np.ones(X.shape[0]) if unit_weights else weight
    found, expected = _both_routes(monkeypatch, X, Y, weight, fit_intercept)
    assert found[0].shape == expected[0].shape == (90, 90) and found[1].shape == (90, 2)
    _assert_same(found, expected)


def test_the_widest_route_gives_the_syrks_normal_equations(monkeypatch):
    # d = 62, the widest the rule takes: 2016 pairs in 43 groups
    X, Y, weight = _table(n=120, d=62, offset=5.0)
    found, expected = _both_routes(monkeypatch, X, Y, weight)
    _assert_same(found, expected)


def _structure(X, weight=None):
    weight = np.ones(X.shape[0]) if weight is None else weight
    d = X.shape[1]
    rows, cols = quadratic_ridge.pairs_of(d)
    mean = quadratic_ridge._feature_means(X, weight, rows, cols)
    return quadratic_moments._column_structure(X, mean[:d], mean[d:][rows == cols],
                                               quadratic_ridge._dense_blocks)


def test_offset_columns_are_shifted_and_the_others_are_not():
    # a continuous column shifts by its mean where the mean exceeds its spread (the offset
    # one), a two-valued one by its more frequent value (the common dummy, by 1, to {-1, 0});
    # the centred columns and the rare dummy stay
    X, _, weight = _table(offset=1e3)
    structure = _structure(X, weight)
    rows, cols = quadratic_ridge.pairs_of(X.shape[1])
    mean = quadratic_ridge._feature_means(X, weight, rows, cols)
    assert np.flatnonzero(structure.shift).tolist() == [1, 2]
    assert structure.shift[1] == 1.0 and structure.shift[2] == mean[2]
    assert np.flatnonzero(structure.two_valued).tolist() == [0, 1]
    assert structure.scale.tolist() == [1.0, -1.0] + [1.0] * 10
    assert not structure.exclusive.any()  # the two dummies are nonzero together in some rows


def test_the_shift_keeps_the_digits_the_uncentred_sums_lose(monkeypatch):
    # with no column shifted, an offset of 1e4 cancels ~8 of the 16 digits in the centring
    X, Y, weight = _table(offset=1e4)
    found, expected = _both_routes(monkeypatch, X, Y, weight)
    _assert_same(found, expected)
    monkeypatch.setattr(quadratic_moments, "_mean_shift", lambda linear, square: np.zeros_like(linear))
    unshifted, _ = _both_routes(monkeypatch, X, Y, weight)
    error = np.abs(unshifted[0] - expected[0]).max() / np.abs(expected[0]).max()
    assert error > 1e-11


def test_row_blocks_and_sparse_rows_add_up_to_the_whole(monkeypatch):
    X, Y, weight = _table(n=500)
    whole, _ = _both_routes(monkeypatch, X, Y, weight)
    # the two dummies' squares are their linear terms: 89 of the 91 pairs are multiplied
    monkeypatch.setattr(quadratic_moments, "_BLOCK_ELEMENTS", 2 * 89 * 64)  # 64 rows a block
    workspaces = []
    allocate = quadratic_moments._Workspace.of
    monkeypatch.setattr(quadratic_moments._Workspace, "of",
                        lambda *args: workspaces.append(args) or allocate(*args))
    blocked, _ = _both_routes(monkeypatch, scipy.sparse.csr_matrix(X), Y, weight)
    _assert_same(blocked, whole)
    # the eight blocks (the last one short) share one workspace, allocated for 64 rows
    assert [args[1:3] for args in workspaces] == [(89, 64)]


def test_the_route_rule(monkeypatch):
    assert quadratic_moments.uses_moments(1000, 18, None)
    assert not quadratic_moments.uses_moments(999, 18, None)
    assert not quadratic_moments.uses_moments(1000, 17, None)
    assert not quadratic_moments.uses_moments(10_000, 30, np.ones((30, 30), dtype=bool))
    # the gather's index: P = (d + 1)(d + 2) / 2 = 2016 at d = 62, 2080 at d = 63
    assert quadratic_moments.uses_moments(10_000, 62, None)
    assert not quadratic_moments.uses_moments(10_000, 63, None)


def test_the_regression_on_the_moments_is_the_pipelines_optimum():
    # 1,200 rows of 20 columns take the moments; the pipeline forms the features
    rng = np.random.default_rng(1)
    X = rng.standard_normal((1200, 20))
    X[:, :3] = rng.uniform(size=(1200, 3)) < [[0.1, 0.5, 0.9]]
    y = X[:, 5] * X[:, 6] - X[:, 3] ** 2 + X[:, 0] + 0.1 * rng.standard_normal(1200)
    assert quadratic_moments.uses_moments(*X.shape, None)
    model = QuadraticRegression(alpha=1.0, clip_outputs=False).fit(X, y)
    pipeline = make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge(alpha=1.0)).fit(X, y)
    expected = pipeline.predict(X)
    np.testing.assert_allclose(model.predict(X), expected, rtol=0, atol=1e-9 * np.abs(expected).max())


def test_the_default_regression_on_the_moments_is_the_one_on_the_syrk(monkeypatch):
    # the default constructor (penalties by leave-one-out, then the fit) takes the moments
    # on 1,200 rows of 20 columns and predicts as it does through the symmetric product
    rng = np.random.default_rng(2)
    X = rng.standard_normal((1200, 20)) + np.r_[3.0, np.zeros(19)]  # one offset column
    y = np.exp(X[:, 1] * X[:, 2] / 4 + 0.2 * rng.standard_normal(1200))
    model = QuadraticRegression().fit(X, y)
    monkeypatch.setattr(quadratic_ridge, "uses_moments", lambda *args: False)
    reference = QuadraticRegression().fit(X, y)
    assert model.alpha_ == reference.alpha_ and model.quadratic_alpha_ == reference.quadratic_alpha_
    expected = reference.predict(X)
    np.testing.assert_allclose(model.predict(X), expected, rtol=0, atol=1e-10 * np.abs(expected).max())


def test_the_centring_correction_is_the_symmetric_rank_two_update_of_the_trailing_block():
    rng = np.random.default_rng(0)
    H = rng.standard_normal((7, 7))
    H = H + H.T
    v, m = rng.standard_normal(6), rng.standard_normal(6)
    expected = H.copy()
    expected[1:, 1:] -= np.outer(v, m) + np.outer(m, v)
    quadratic_moments._subtract_symmetric_outer(H, v, m)  # in place
    np.testing.assert_allclose(H, expected, rtol=0, atol=1e-14)
    np.testing.assert_array_equal(H[0], expected[0])  # the first row and column are not touched
    np.testing.assert_array_equal(H[:, 0], expected[:, 0])


def _one_hot_table(n=1500, seed=0, standardize=False):
    """Two categoricals one-hot encoded (3 and 4 levels, one level rare), a 0/1 flag that is
    mostly 1, a constant column and 16 standardized numeric columns: 24 columns."""
    rng = np.random.default_rng(seed)
    first = rng.choice(3, n, p=[0.6, 0.3, 0.1])
    second = rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])
    flag = (rng.uniform(size=n) < 0.85).astype(float)
    dummies = np.column_stack([np.eye(3)[first], np.eye(4)[second], flag, np.ones(n)])
    if standardize:  # StandardScaler after OneHotEncoder: two values, neither of them 0
        scale = dummies.std(axis=0)
        dummies = (dummies - dummies.mean(axis=0)) / np.where(scale == 0, 1.0, scale)
    numeric = rng.standard_normal((n, 15))
    X = np.column_stack([dummies, numeric])
    Y = np.column_stack([X[:, 0] * X[:, 10] + numeric[:, 3] ** 2, X[:, 4] - X[:, 8] * X[:, 12]])
    return X, Y + 0.1 * rng.standard_normal(Y.shape), rng.uniform(0.0, 2.0, n)


@pytest.mark.parametrize("standardize", [False, True])
def test_one_hot_columns_are_two_valued_and_exclusive_within_their_category(standardize):
    X, _, _ = _one_hot_table(standardize=standardize)
    structure = _structure(X)
    assert np.flatnonzero(structure.two_valued).tolist() == list(range(9))
    # each column shifted by its more frequent value (the mostly-1 flag and the first level by
    # their high value), so that it is nonzero in at most half the rows ...
    low, high = X[:, :9].min(axis=0), X[:, :9].max(axis=0)
    by_high = (X[:, :9] == high).mean(axis=0) > 0.5
    np.testing.assert_array_equal(structure.shift[:9], np.where(by_high, high, low))
    z = (X[:, :9] - structure.shift[:9]) / structure.scale[:9]
    assert set(np.unique(z)) <= {0.0, 1.0} and np.all(z.mean(axis=0) <= 0.5)
    # ... and two levels of one categorical are never nonzero together; a level shifted by its
    # high value is nonzero where the others are, and the constant column nowhere
    together = (z != 0).T.astype(int) @ (z != 0).astype(int)
    expected = together == 0
    np.fill_diagonal(expected, False)
    np.testing.assert_array_equal(structure.exclusive[:9, :9], expected)
    assert structure.exclusive[1, 2] and structure.exclusive[3, 6] and not structure.exclusive[1, 3]
    assert structure.exclusive[8, :8].all()  # the constant column
    assert not structure.exclusive[9:].any() and not structure.exclusive[:, 9:].any()


def test_columns_with_two_values_in_each_block_but_three_in_all_are_not_two_valued(monkeypatch):
    rng = np.random.default_rng(3)
    n = 400
    X = np.column_stack([
        np.r_[np.zeros(200), rng.integers(0, 2, 200) * 5.0],  # {0} then {0, 5}: two values
        np.r_[rng.integers(0, 2, 200), rng.integers(1, 3, 200)].astype(float),  # {0, 1}, {1, 2}
        np.r_[np.full(200, 2.0), np.full(200, -1.0)],  # {2} then {-1}: two values
        rng.standard_normal(n),
    ])
    monkeypatch.setattr(quadratic_moments, "_BLOCK_ELEMENTS", 4 * 100)  # blocks of 100 rows
    columns, low, high, values = quadratic_moments.two_valued_columns(X, quadratic_ridge._dense_blocks)
    assert columns.tolist() == [0, 2] and values is None  # several blocks: not kept
    assert low.tolist() == [0.0, -1.0] and high.tolist() == [5.0, 2.0]
    monkeypatch.undo()
    columns, _, _, values = quadratic_moments.two_valued_columns(X, quadratic_ridge._dense_blocks)
    assert columns.tolist() == [0, 2]
    np.testing.assert_array_equal(values, X[:, [0, 2]].T)  # one block: its values kept


@pytest.mark.parametrize("standardize", [False, True])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("unit_weights", [True, False])
def test_one_hot_moments_give_the_syrks_normal_equations(monkeypatch, standardize, fit_intercept,
                                                          unit_weights):
    X, Y, weight = _one_hot_table(standardize=standardize)
    weight = np.ones(X.shape[0]) if unit_weights else weight
    assert quadratic_moments.uses_moments(*X.shape, None)
    found, expected = _both_routes(monkeypatch, X, Y, weight, fit_intercept)
    _assert_same(found, expected)


def test_one_hot_moments_over_blocks_and_sparse_rows(monkeypatch):
    X, Y, weight = _one_hot_table()
    whole, expected = _both_routes(monkeypatch, X, Y, weight)
    monkeypatch.setattr(quadratic_moments, "_BLOCK_ELEMENTS", 2 * 300 * 50)  # 50 to 100 rows
    blocked, _ = _both_routes(monkeypatch, scipy.sparse.csr_matrix(X), Y, weight)
    _assert_same(blocked, expected)
    _assert_same(whole, expected)


def test_one_hot_pairs_are_not_multiplied():
    # 25 entries of z: 9 two-valued (their 9 squares), the 3 + 6 pairs within the categoricals,
    # the 8 with the constant column and the flag's pair with the first level shifted by 1
    X, _, _ = _one_hot_table()
    structure = _structure(X)
    layout = quadratic_moments._layout(X.shape[1] + 1, structure.key())
    dead = 9 + int(np.triu(structure.exclusive).sum())
    assert layout.pairs == 325 and layout.kept == 325 - dead
    assert layout.size < 0.7 * quadratic_moments._layout(X.shape[1] + 1).size
    # a row's pairs are written in at most two runs of adjacent columns: a level's pairs with
    # the rest of its category and with the constant column are skipped
    runs_per_row = np.bincount([row for row, *_ in layout.row_runs])
    assert runs_per_row.max() == 2 and runs_per_row.sum() == len(layout.row_runs)


def test_a_repeated_two_valued_index_becomes_the_constants_and_the_four_are_sorted_again():
    two_valued = np.array([False, True, True, False])
    quadruples = np.array([[1, 1, 1, 1], [0, 1, 1, 2], [1, 1, 2, 2], [1, 1, 3, 3], [3, 3, 3, 3],
                           [1, 2, 2, 3]])
    found = np.column_stack(quadratic_moments._canonical(*quadruples.T, two_valued))
    expected = [[0, 0, 0, 1], [0, 0, 1, 2], [0, 0, 1, 2], [0, 1, 3, 3], [3, 3, 3, 3], [0, 1, 2, 3]]
    np.testing.assert_array_equal(found, expected)


def test_the_sorting_network_sorts():
    rng = np.random.default_rng(0)
    values = rng.integers(0, 5, size=(1000, 4))
    np.testing.assert_array_equal(np.column_stack(quadratic_moments._sort4(*values.T)),
                                  np.sort(values, axis=1))


def test_the_groups_are_the_cheapest_partition():
    # against every partition of 9 larger indices into consecutive ranges
    rng = np.random.default_rng(4)
    per_larger = rng.integers(1, 10, 9)
    columns_of = np.sort(rng.integers(1, 60, 9))[::-1].copy()
    columns_of[3] = 70  # a two-valued index needs fewer columns than the one before it

    def cost(groups):
        return sum((per_larger[lo:hi].sum() + quadratic_moments._GROUP_ROWS) * columns_of[lo:hi].max()
                   for lo, hi in groups)

    found = quadratic_moments._groups(per_larger, columns_of)
    assert [lo for lo, _ in found][1:] == [hi for _, hi in found][:-1] and found[-1][1] == 9
    best = min(cost(list(zip((0,) + cuts, cuts + (9,))))
               for k in range(9) for cuts in itertools.combinations(range(1, 9), k))
    assert cost(found) == best


def test_a_dummys_first_needed_column_is_the_one_after_its_category():
    # z = [1, a, b, c, x]: a, b and c one categorical's levels, x continuous
    two_valued = np.array([False, True, True, True, False])
    exclusive = np.zeros((5, 5), dtype=bool)
    exclusive[1:4, 1:4] = ~np.eye(3, dtype=bool)
    assert quadratic_moments._first_needed(two_valued, exclusive).tolist() == [0, 4, 4, 4, 4]
    exclusive[3, 4] = exclusive[4, 3] = False
    two_valued[4] = True  # the last two-valued index needs none: past the end
    assert quadratic_moments._first_needed(two_valued, exclusive).tolist() == [0, 4, 4, 4, 5]


def test_only_dummies_and_zero_weights_give_the_syrks_normal_equations(monkeypatch):
    # four categoricals of five levels, no numeric column: every pair of two columns either
    # exclusive or a product of two dummies; some rows weigh nothing
    rng = np.random.default_rng(5)
    n = 1200
    levels = rng.integers(0, 5, size=(n, 4))
    X = np.hstack([np.eye(5)[levels[:, j]] for j in range(4)])
    Y = (levels[:, :1] == levels[:, 1:2]) + 0.1 * rng.standard_normal((n, 1))
    weight = rng.uniform(0.0, 2.0, n) * (rng.uniform(size=n) > 0.1)
    structure = _structure(X, weight)
    assert structure.two_valued.all() and int(np.triu(structure.exclusive).sum()) == 4 * 10
    found, expected = _both_routes(monkeypatch, X, Y, weight)
    _assert_same(found, expected)
