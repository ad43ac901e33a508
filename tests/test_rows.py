"""skquad._foundation._rows: merging duplicate rows changes no weighted objective (the one merge, used by _training and convex)."""

import numpy as np
import pytest
import scipy.sparse

from skquad._foundation._rows import duplicate_groups, merge_duplicate_samples


def _data():
    rng = np.random.RandomState(0)
    X = rng.randint(0, 3, size=(40, 2)).astype(np.float64)  # many exact duplicates
    y = rng.randint(0, 2, size=40).astype(np.int64)
    weight = rng.uniform(0.0, 2.0, size=40)
    weight[:5] = 0.0
    return X, y, weight


def _weighted_sums(X, y, weight):
    """The weighted empirical distribution as {(x, y): total weight} (positive only)."""
    totals = {}
    for row, label, w in zip(np.asarray(X), y, weight):
        if w > 0:
            key = (tuple(row), int(label))
            totals[key] = totals.get(key, 0.0) + w
    return totals


@pytest.mark.parametrize("sparse", [False, True])
def test_merged_rows_carry_the_same_weighted_distribution(sparse):
    X, y, weight = _data()
    merged_X, merged_y, merged_weight = merge_duplicate_samples(
        scipy.sparse.csr_matrix(X) if sparse else X, y, weight
    )
    dense = merged_X.toarray() if sparse else merged_X
    expected = _weighted_sums(X, y, weight)
    got = _weighted_sums(dense, merged_y, merged_weight)
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == pytest.approx(expected[key], rel=1e-12)
    # distinct pairs only, no zero weight
    assert len(set(zip(map(tuple, dense), merged_y))) == len(merged_y)
    assert np.all(merged_weight > 0)
    assert merged_y.dtype == y.dtype


def test_weight_two_and_a_repeated_row_give_the_very_same_arrays():
    X, y, weight = _data()
    keep = weight > 0
    X, y, weight = X[keep], y[keep], weight[keep]
    doubled = merge_duplicate_samples(X, y, np.where(np.arange(len(y)) == 3, 2 * weight, weight))
    repeated = merge_duplicate_samples(
        np.vstack([X, X[3:4]]), np.append(y, y[3]), np.append(weight, weight[3])
    )
    for a, b in zip(doubled, repeated):
        np.testing.assert_array_equal(a, b)
    # and the row order does not matter
    order = np.random.RandomState(1).permutation(len(y))
    shuffled = merge_duplicate_samples(X[order], y[order], weight[order])
    reference = merge_duplicate_samples(X, y, weight)
    for a, b in zip(shuffled[:2], reference[:2]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(shuffled[2], reference[2], rtol=1e-14)


def test_dtypes_are_kept_and_float32_rows_merge_exactly():
    X, y, weight = _data()
    X32 = (X + 0.1).astype(np.float32)  # 0.1 is not exact in float32: rows must not be re-rounded
    merged_X, merged_y, merged_w = merge_duplicate_samples(X32, y, weight)
    assert merged_X.dtype == np.float32 and merged_y.dtype == np.int64
    assert set(map(tuple, merged_X.tolist())) == set(map(tuple, X32[weight > 0].tolist()))
    assert merged_w.sum() == pytest.approx(weight.sum())


def test_two_dimensional_real_targets_are_part_of_the_row():
    X = np.array([[0.0], [0.0], [0.0], [1.0]])
    Y = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, 3.0], [1.0, 2.0]])
    merged_X, merged_Y, merged_w = merge_duplicate_samples(X, Y, np.ones(4))
    assert merged_Y.shape == (3, 2)
    np.testing.assert_array_equal(merged_w, [2.0, 1.0, 1.0])  # only the identical (x, y) pair merges


@pytest.mark.parametrize("one_sort", [0, 1 << 16])
def test_ranks_are_lexicographic_on_both_paths(monkeypatch, one_sort):
    # one pass per column (0) or the tied rows in one sort: the same dense
    # ranks as numpy's own lexicographic unique, with -0.0 equal to 0.0
    import skquad._foundation._rows as rows_module

    monkeypatch.setattr(rows_module, "_ONE_SORT_NUMBERS", one_sort)
    rng = np.random.RandomState(3)
    X = rng.randint(-1, 2, size=(300, 4)).astype(np.float64)
    X[:, 0] = np.where(rng.rand(300) < 0.5, rng.randn(300), 0.0)
    X[::7, 1] = -0.0
    y = rng.randint(0, 2, size=300).astype(np.int64)
    kept = np.flatnonzero(rng.rand(300) < 0.9)
    rank, n_groups = rows_module._lexicographic_ranks([X, y[:, None]], kept)
    rows = np.column_stack([X, y]).astype(np.float64)[kept] + 0.0  # (-0.0 + 0.0 is 0.0)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    assert n_groups == unique.shape[0]
    np.testing.assert_array_equal(rank, inverse.ravel())


@pytest.mark.parametrize("ties", [False, True])
def test_tensor_rows_group_as_numpy(ties):
    # a torch X (array API input) is ranked on its device in the same order, with the same weights
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, (200, 3)).astype(float) if ties else rng.standard_normal((200, 3))
    y, weight = rng.integers(0, 2, 200), rng.integers(0, 3, 200).astype(float)
    rows, summed = duplicate_groups(X, y, weight)
    tensor_rows, tensor_summed = duplicate_groups(torch.asarray(X), y, weight)
    np.testing.assert_array_equal(X[tensor_rows], X[rows])
    np.testing.assert_array_equal(y[tensor_rows], y[rows])
    np.testing.assert_array_equal(tensor_summed, summed)


def test_row_folds_are_the_same_for_dense_sparse_and_tensor_rows():
    """A row's fold is a hash of its values: the same for its sparse form (zeros add nothing)
    and for a torch tensor hashed on its device, and for every row order."""
    import torch

    from skquad._foundation._rows import row_folds

    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 7))
    X[rng.random(X.shape) < 0.5] = 0.0
    X[3] = 0.0  # an empty sparse row
    folds = row_folds(X, 5)
    assert np.bincount(folds, minlength=5).min() > 40  # spread over the folds
    np.testing.assert_array_equal(row_folds(scipy.sparse.csr_matrix(X), 5), folds)
    np.testing.assert_array_equal(row_folds(scipy.sparse.csc_matrix(X), 5), folds)
    np.testing.assert_array_equal(row_folds(torch.asarray(X), 5), folds)
    order = rng.permutation(len(X))
    np.testing.assert_array_equal(row_folds(X[order], 5), folds[order])


def test_ordered_rows_are_the_reordered_array_in_every_form():
    from skquad._foundation._rows import OrderedRows

    rng = np.random.RandomState(0)
    base = rng.standard_normal((50, 4))
    order = rng.permutation(50)[:37]
    rows = OrderedRows(base, order)
    expected = base[order]
    assert rows.shape == expected.shape and rows.nbytes == expected.nbytes and len(rows) == 37
    np.testing.assert_array_equal(np.asarray(rows), expected)
    np.testing.assert_array_equal(np.asarray(rows, dtype=np.float32), expected.astype(np.float32))
    np.testing.assert_array_equal(rows[5:20], expected[5:20])
    out = np.empty((10, 4))
    assert rows.gather(3, 13, out=out) is out
    np.testing.assert_array_equal(out, expected[3:13])
    rows.CHUNK_ELEMENTS = 8  # two rows a chunk: several chunks, the same rows
    np.testing.assert_array_equal(np.concatenate([chunk for _, _, chunk in rows.chunks()]), expected)
    np.testing.assert_array_equal(np.asarray(rows, dtype=np.float32), expected.astype(np.float32))
    with pytest.raises(TypeError):
        rows[np.arange(3)]
