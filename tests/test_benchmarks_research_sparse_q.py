"""skquad/benchmarks/research/_sparse_q.py: the sparse-q suite's parts on quick sizes."""

import numpy as np

from skquad.benchmarks.research import _sparse_q


def test_planted_data_hold_the_named_pairs():
    X, y, pairs = _sparse_q._planted(0, 200, 8)
    assert X.shape == (200, 8) and len(pairs) == 5
    assert all(0 <= a < b < 8 for a, b in pairs)
    # the target carries each planted pair: its correlation with the product is clearly positive
    for a, b in pairs:
        assert np.corrcoef(X[:, a] * X[:, b], y)[0, 1] > 0.1


def test_constraints_part_times_every_group_size(tmp_path):
    result = _sparse_q.constraints(output_dir=tmp_path, quick=True, repeats=1, progress=lambda _: None)
    table = result["tables"]["sparse_q_constraints"]
    assert list(table["group size"]) == [2, 4, 8, 16]
    # groups of 2 allow one pair each; one group of all 16 features allows every pair
    assert table["allowed pairs"].iloc[0] == 8 and table["allowed pairs"].iloc[-1] == 16 * 15 // 2
    assert (table["fit seconds"] > 0).all() and "allowed pairs" in result["markdown"]


def test_the_l1_grid_starts_at_the_empty_model():
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler

    from skquad import QuadraticLogisticRegression

    for X, y in (load_wine(return_X_y=True), _sparse_q._planted(0, 300, 5, classification=True)[:2]):
        X = StandardScaler().fit_transform(X)
        grid = _sparse_q.l1_grid(X, y)
        assert grid.shape == (13,) and np.isclose(grid[-1] / grid[0], 1e3)
        fit = lambda C: QuadraticLogisticRegression(penalty="l1", C=C, tol=1e-8,
                                                    max_iter=20000).fit(X, y)
        # just below the first C the model is empty; a little above, some term enters
        below, above = fit(0.98 * grid[0]), fit(1.5 * grid[0])
        assert not below.Q_.any() and not below.coef_.any()
        assert above.Q_.any() or above.coef_.any()


def test_path_part_reports_medians_of_interleaved_pairs(tmp_path, monkeypatch):
    """The first pair is a warm-up (not timed into the table); the rest give medians."""
    calls = []

    def fake_pair(X, y, Cs):
        index = len(calls) % 4  # per size: the warm-up, then three timed pairs
        calls.append(index)
        # the warm-up pair is far slower, as a process's first fits are
        return (100.0, 1.0, 7) if index == 0 else (1.0 + index, 1.0, 7)

    monkeypatch.setattr(_sparse_q, "_path_and_one_fit", fake_pair)
    result = _sparse_q.path(output_dir=tmp_path, quick=True, repeats=3, progress=lambda _: None)
    table = result["tables"]["sparse_q_path"]
    assert len(calls) == 2 * 4  # two sizes, one warm-up and three timed pairs each
    assert list(table["ratio"]) == [3.0, 3.0] and list(table["one fit iterations"]) == [7, 7]
    assert "Largest ratio 3.00" in result["markdown"]


def test_path_and_one_fit_times_both_and_counts_the_fits_iterations():
    X, y, _ = _sparse_q._planted(0, 300, 4, classification=True)
    path_seconds, one, iterations = _sparse_q._path_and_one_fit(X, y, np.logspace(-2, 2, 3))
    assert path_seconds > 0 and one > 0 and iterations >= 1
