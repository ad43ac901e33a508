"""QLR on rows gathered by chunks (OrderedRows): every driver and reader gets the numbers of the copied rows.

Large dense rows are kept as the validated rows and their canonical order
(``_qlr_drivers.GATHERED_ROWS_BYTES``); these tests force small problems
through that path and compare each result with the copied rows' exactly.
"""

import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import ConvergenceWarning

from skquad import QuadraticLogisticRegression, QuadraticLogisticRegressionCV
from skquad._foundation._rows import OrderedRows
from skquad.linear_model import _qlr_drivers as drivers
from skquad.linear_model._qlr_problem import build_problem, whole_rows_bytes
from skquad.nn import quadratic_form as qf


def _data(n, d, n_classes=2, dtype=np.float64, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.standard_normal((n, d)).astype(dtype)
    X = np.vstack([X, X[: n // 10]])  # duplicates for the merge
    y = (X[:, 0] * X[:, 1] > 0).astype(int) if n_classes == 2 else np.arange(len(X)) % n_classes
    return X, y, rng.uniform(0.5, 2.0, size=len(X))


def _solve(X, y, w, gather_above, **params):
    model = QuadraticLogisticRegression(solver="lbfgs", max_iter=12, **params)
    model._validate_params()
    X, y_encoded, w = model._validate_training_data(X, y, w)
    data = drivers.training_rows(X, y_encoded, w, model.classes_, merge=True, gather_above=gather_above)
    problem = build_problem(model, drivers.LBFGS, data, None, step_size=(0.01, "constant"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # max_iter: the same stop on both rows
        solution = drivers.LBFGS.solve(problem, data)
    return data, [p.numpy() for p in solution.params], solution.n_iter


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_lbfgs_row_chunks_gathered_give_the_copied_rows_iterates(dtype, n_classes):
    """Past the small-problem and design-matrix paths: the chunked CPU objective, gathering."""
    X, y, w = _data(1000, 70, n_classes, dtype)
    copied, expected, n_iter = _solve(X, y, w, np.inf)
    gathered, params, gathered_iter = _solve(X, y, w, 0)
    assert isinstance(gathered.X, OrderedRows) and isinstance(copied.X, np.ndarray)
    assert gathered_iter == n_iter
    for got, want in zip(params, expected):
        np.testing.assert_array_equal(got, want)


def test_float64_twin_scales_of_gathered_rows_are_the_arrays():
    X, y, w = _data(300, 6)
    rows = OrderedRows(X, np.random.RandomState(1).permutation(len(X)))
    rows.CHUNK_ELEMENTS = 60  # ten rows a chunk
    weights = w / w.sum()
    magnitudes, scale = qf._twin_scales(rows, weights)
    np.testing.assert_array_equal(magnitudes, qf.column_magnitudes(np.asarray(rows)))
    assert scale == qf.weighted_row_scale(np.asarray(rows), weights)


@pytest.mark.parametrize(
    "params",
    [
        {"solver": "lbfgs"},
        {"solver": "lbfgs", "dtype": "float32"},
        {"solver": "lbfgs", "interaction_only": True},
        {"solver": "lbfgs", "rank": 2},
        {"solver": "sgd"},
        {"solver": "auto"},
        {"penalty": "l1", "C": 10.0},
    ],
    ids=["lbfgs", "float32-compute", "interaction-only", "rank", "sgd", "newton", "proximal"],
)
def test_every_route_fits_gathered_rows_as_copied_rows(monkeypatch, params):
    _assert_gathered_fit_is_copied_fit(monkeypatch, params)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("solver", ["lbfgs", "sgd"])
def test_a_device_fit_gathers_the_rows_onto_it_as_copied(monkeypatch, solver):
    _assert_gathered_fit_is_copied_fit(monkeypatch, {"solver": solver, "device": "cuda"})


def _assert_gathered_fit_is_copied_fit(monkeypatch, params):
    X, y, w = _data(120, 5, n_classes=2)
    fits = {}
    for limit in (np.inf, 0):
        monkeypatch.setattr(drivers, "GATHERED_ROWS_BYTES", limit)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the same stop on both rows
            model = QuadraticLogisticRegression(**{"max_iter": 20, "random_state": 0, **params})
            fits[limit] = model.fit(X, y, sample_weight=w)
    for name in ("Q_", "coef_", "intercept_", "n_iter_"):
        np.testing.assert_array_equal(getattr(fits[0], name), getattr(fits[np.inf], name))


def test_a_regularisation_path_on_gathered_rows_is_the_copied_rows_path(monkeypatch):
    X, y, _ = _data(150, 4, n_classes=3)
    fits = {}
    for limit in (np.inf, 0):
        monkeypatch.setattr(drivers, "GATHERED_ROWS_BYTES", limit)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[limit] = QuadraticLogisticRegressionCV(Cs=3, cv=2, max_iter=20).fit(X, y)
    np.testing.assert_array_equal(fits[0].Q_, fits[np.inf].Q_)
    np.testing.assert_array_equal(fits[0].C_, fits[np.inf].C_)


def test_the_memory_check_counts_the_copy_of_readers_that_gather_rows_whole():
    X, y, w = _data(100, 5)
    model = QuadraticLogisticRegression(solver="lbfgs")
    model._validate_params()
    X, y_encoded, w = model._validate_training_data(X, y, w)
    data = drivers.training_rows(X, y_encoded, w, model.classes_, merge=True, gather_above=0)
    chunked = build_problem(model, drivers.LBFGS, data, None, step_size=(0.01, "constant"))
    assert whole_rows_bytes(drivers.LBFGS, chunked, data) == 0
    for route, params in [(drivers.LBFGS, {"rank": 2}), (drivers.PROXIMAL, {"penalty": "l1"})]:
        model.set_params(**params)
        problem = build_problem(model, route, data, None, step_size=(0.01, "constant"))
        assert whole_rows_bytes(route, problem, data) == data.X.nbytes > 0
        model.set_params(rank=None, penalty="polynomial")


def test_the_memory_estimate_counts_the_products_over_the_rows_a_driver_reads_at_once(monkeypatch):
    """L-BFGS's packed CPU objective forms ``X Q_k`` a chunk of rows at a time: its estimate
    counts a chunk per thread, not the products over every row (which the torch module path,
    at low rank or on sparse rows, does form and is estimated with)."""
    import scipy.sparse

    from skquad._foundation._runtime import RuntimePolicy
    from skquad.linear_model import _qlr_problem

    asked = []
    monkeypatch.setattr(RuntimePolicy, "require_memory",
                        staticmethod(lambda required, *args, **kwargs: asked.append(required)))
    monkeypatch.setattr(_qlr_problem, "cpu_chunk_rows", lambda n_features: 10)
    X, y, w = _data(200, 5)
    model = QuadraticLogisticRegression(solver="lbfgs", n_threads=1)
    model._validate_params()
    X, y_encoded, w = model._validate_training_data(X, y, w)
    for rows, params, read_at_once in [(X, {}, 10), (X, {"rank": 2}, None),
                                       (scipy.sparse.csr_matrix(X), {}, None)]:
        model.set_params(**{"rank": None, **params})
        data = drivers.training_rows(rows, y_encoded, w, model.classes_, merge=True)
        problem = build_problem(model, drivers.LBFGS, data, None, step_size=(0.01, "constant"))
        expected = problem.lbfgs_memory(data.n_rows if read_at_once is None else read_at_once)
        assert asked[-1] == expected and data.n_rows > 10
