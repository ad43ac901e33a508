"""load_regression on the shared CSV files (skipped where they are not beside the checkout)."""

import os
from pathlib import Path

import numpy as np
import pytest

from skquad import QuadraticRegression
from skquad.datasets import REGRESSION_DATASETS, load_regression, make_uci_preprocessor

UCI = Path(os.environ.get("SKQUAD_DATA", "missing"))
needs_data = pytest.mark.skipif(
    not (UCI.parent / "regression" / "concrete.csv").exists(),
    reason="the shared regression data (../shared/datasets/regression) is not beside the checkout",
)

SHAPES = {
    "concrete": (1030, 8, 1),
    "diamonds": (53940, 9, 1),
    "wage": (3000, 9, 1),
    "cpus": (209, 6, 1),
    "car_prices": (804, 17, 1),
    "chem_proc_yield": (176, 57, 1),
    "meats": (215, 100, 3),
}


@needs_data
@pytest.mark.parametrize("name", sorted(REGRESSION_DATASETS))
def test_every_set_loads_with_its_shape_and_finite_targets(name):
    n, d, k = SHAPES[name]
    bunch = load_regression(name)
    assert bunch.data.shape == (n, d)
    assert bunch.target.shape == ((n,) if k == 1 else (n, k))
    assert np.all(np.isfinite(bunch.target))
    assert len(bunch.feature_names) == d and len(bunch.target_names) == k
    assert name in bunch.DESCR


@needs_data
def test_frames_keep_strings_and_missing_values():
    X, y = load_regression("wage", as_frame=True, return_X_y=True)
    assert X["education"].map(type).eq(str).all() and y.name == "wage"
    X = load_regression("chem_proc_yield").data
    assert np.isnan(X).any()  # the README's missing values are kept for the imputer


@needs_data
def test_the_preprocessed_set_fits_a_quadratic_model():
    X, y = load_regression("wage", return_X_y=True)
    Z = make_uci_preprocessor().fit_transform(X)
    assert np.all(np.isfinite(Z))
    assert QuadraticRegression(alpha=10.0).fit(Z[:2000], np.log(y[:2000])).score(Z[2000:], np.log(y[2000:])) > 0.2


def test_unknown_names_and_missing_files_say_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="choose one of"):
        load_regression("boston")
    with pytest.raises(FileNotFoundError, match="concrete.csv"):
        load_regression("concrete", data_home=tmp_path)


def test_a_csv_in_the_data_home_is_found(tmp_path):
    (tmp_path / "regression").mkdir()
    (tmp_path / "regression" / "cpus.csv").write_text("syct,mmin,perf\n1,2,3.5\n4,5,6.5\n")
    X, y = load_regression("cpus", data_home=tmp_path, return_X_y=True)
    np.testing.assert_array_equal(X, [[1.0, 2.0], [4.0, 5.0]])
    np.testing.assert_array_equal(y, [3.5, 6.5])
