"""load_regression on the shared CSV files (skipped where they are not beside the checkout)."""

import os
from pathlib import Path

import numpy as np
import pytest

from skquad import QuadraticRegression
from skquad.datasets import (
    REGRESSION_DATASETS,
    list_regression_datasets,
    load_regression,
    make_regression_preprocessor,
    make_uci_preprocessor,
)

# conftest.py points SKQUAD_DATA at ../shared/datasets/uci when it is beside the
# checkout; the regression CSVs are in the regression/ folder next to it.
UCI = Path(os.environ.get("SKQUAD_DATA", "missing"))
needs_data = pytest.mark.skipif(
    not (UCI.parent / "regression").is_dir(),
    reason="no regression data directory: ../shared/datasets/regression is not beside the "
    "checkout and SKQUAD_DATA does not point next to one (the loader's own rules are "
    "tested on temporary files regardless)",
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


@needs_data
def test_every_set_is_listed_and_values_match_the_csv():
    import pandas as pd

    assert list_regression_datasets() == list(REGRESSION_DATASETS)
    # An independent reading of the file: the loader adds or drops nothing.
    raw = pd.read_csv(UCI.parent / "regression" / "meats.csv")
    X, Y = load_regression("meats", return_X_y=True)
    np.testing.assert_array_equal(Y, raw[["water", "fat", "protein"]].to_numpy())
    np.testing.assert_array_equal(X, raw.drop(columns=["water", "fat", "protein"]).to_numpy())
    bunch = load_regression("cpus", as_frame=True)
    assert list(bunch.frame.columns) == list(pd.read_csv(UCI.parent / "regression" / "cpus.csv").columns)
    assert bunch.skewed_target and "GPL-2" in bunch.DESCR and "MASS" in bunch.DESCR


@needs_data
@pytest.mark.parametrize("as_frame", [False, True])
def test_the_regression_preprocessor_one_hot_encodes_and_imputes(as_frame):
    X = load_regression("wage", as_frame=as_frame).data
    Z = make_regression_preprocessor().fit_transform(X)
    # year and age stay, each string column becomes one column per level.
    levels = sum(len(set(np.asarray(X)[:, j])) for j in range(2, 9))
    assert Z.shape == (3000, 2 + levels) and np.all(np.isfinite(Z))
    X = load_regression("chem_proc_yield", as_frame=as_frame).data
    Z = make_regression_preprocessor().fit_transform(X)
    assert Z.shape == (176, 57) and np.all(np.isfinite(Z))
    # Standardized numeric columns: zero mean; unit variance where not constant.
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-9)


def test_the_regression_preprocessor_clips_to_the_training_range():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3)) * [1.0, 10.0, 0.1] + [0.0, 5.0, -2.0]
    clipped = make_regression_preprocessor().fit(X)
    plain = make_regression_preprocessor(clip=False).fit(X)
    # The training data are transformed as without clipping (standardized).
    np.testing.assert_allclose(clipped.transform(X), plain.transform(X), atol=1e-12)
    # A value beyond the training range becomes the range's end; inside, nothing changes.
    beyond = np.array([[100.0, 5.0, -2.0], [-100.0, 5.0, -2.0]])
    expected = plain.transform(np.array([[X[:, 0].max(), 5.0, -2.0], [X[:, 0].min(), 5.0, -2.0]]))
    np.testing.assert_allclose(clipped.transform(beyond), expected, atol=1e-12)
    assert plain.transform(beyond)[0, 0] > 50  # what a model would have extrapolated to
    # Without scaling, the clipped columns are min-max scaled to [0, 1].
    unscaled = make_regression_preprocessor(scale=False).fit(X)
    Z = unscaled.transform(np.vstack([X, beyond]))
    assert Z.min() == 0.0 and Z.max() == 1.0


def test_listing_follows_the_data_home_rules(tmp_path, monkeypatch):
    monkeypatch.delenv("SKQUAD_DATA", raising=False)
    assert list_regression_datasets() == []  # no directory set: nothing to load
    (tmp_path / "regression").mkdir()
    (tmp_path / "regression" / "wage.csv").write_text("age,wage\n30,80.5\n")
    (tmp_path / "concrete.csv").write_text("age,compressive_strength\n28,40.0\n")
    assert list_regression_datasets(data_home=tmp_path) == ["concrete", "wage"]
    monkeypatch.setenv("SKQUAD_DATA", str(tmp_path))
    assert list_regression_datasets() == ["concrete", "wage"]
    with pytest.raises(FileNotFoundError, match="does not exist .*data_home"):
        load_regression("wage", data_home=tmp_path / "nowhere")
    monkeypatch.setenv("SKQUAD_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="SKQUAD_DATA"):
        list_regression_datasets()


def test_a_csv_without_its_target_column_is_refused(tmp_path):
    (tmp_path / "meats.csv").write_text("x_001,water,fat\n1.0,60.0,20.0\n")
    with pytest.raises(ValueError, match="protein"):
        load_regression("meats", data_home=tmp_path)
