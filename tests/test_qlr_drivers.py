"""skquad.linear_model._qlr_drivers: the rows the in-memory drivers read, and the driver rule."""

import numpy as np
import pytest

from skquad import QuadraticLogisticRegression
from skquad.linear_model import _qlr_drivers as drivers


def test_training_rows_merge_duplicates_and_sort_by_class():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 2.0]])
    y = np.array([1, 0, 1, 0])
    w = np.array([1.0, 2.0, 3.0, 4.0])
    data = drivers.training_rows(X, y, w, np.array(["a", "b"]), merge=True)
    assert data.n_rows == 3 and data.total_weight == 10.0
    assert data.y.tolist() == [0, 0, 1] and data.class_blocks == [(0, 2), (2, 3)]
    # the duplicated row of class 1 carries both weights
    np.testing.assert_array_equal(data.X[2], [1.0, 0.0])
    assert data.w[2] == 4.0
    assert data.user_data[1].tolist() == ["b", "a", "b", "a"]
    unmerged = drivers.training_rows(X, y, w, np.array(["a", "b"]), merge=False)
    assert unmerged.n_rows == 4 and unmerged.class_blocks == [(0, 2), (2, 4)]


@pytest.mark.parametrize(
    "params, partial, expected",
    [
        ({}, False, drivers.NEWTON),
        ({"solver": "lbfgs"}, False, drivers.LBFGS),
        ({"solver": "sgd"}, False, drivers.SGD),
        ({"solver": "sgd"}, True, drivers.SGD_EPOCH),
        ({"rank": 2}, False, drivers.LBFGS),
    ],
)
def test_the_estimator_rule_chooses_one_route(params, partial, expected):
    rng = np.random.RandomState(0)
    X = rng.standard_normal((30, 8))
    y = (X[:, 0] > 0).astype(int)
    data = drivers.training_rows(X, y, np.ones(30), np.array([0, 1]), merge=not partial)
    model = QuadraticLogisticRegression(**params)
    model.classes_ = np.array([0, 1])
    assert model._route(data, None, partial) is expected


def test_training_rows_are_gathered_past_the_limit_in_c_order_only():
    from skquad._foundation._rows import OrderedRows

    rng = np.random.RandomState(0)
    X = rng.standard_normal((20, 3))
    y = (X[:, 0] > 0).astype(int)
    w = np.ones(20)
    copied = drivers.training_rows(X, y, w, np.array([0, 1]), merge=True, gather_above=X.nbytes)
    gathered = drivers.training_rows(X, y, w, np.array([0, 1]), merge=True, gather_above=X.nbytes - 1)
    assert isinstance(copied.X, np.ndarray) and isinstance(gathered.X, OrderedRows)
    np.testing.assert_array_equal(np.asarray(gathered.X), copied.X)
    assert (gathered.n_rows, gathered.n_features, gathered.dtype) == (20, 3, X.dtype)
    fortran = drivers.training_rows(np.asfortranarray(X), y, w, np.array([0, 1]), merge=True,
                                    gather_above=0)
    assert isinstance(fortran.X, np.ndarray)
    np.testing.assert_array_equal(fortran.X, copied.X)
