"""skquad/datasets/_uci.py: the UCI loader (ARFF files, the OpenML fallback) and the preprocessing helper."""

import os
from pathlib import Path
from urllib.error import URLError

import numpy as np
import pandas as pd
import pytest
from scipy.io import arff as scipy_arff
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import Bunch

import skquad.datasets._uci as uci_module
from skquad.datasets import (
    UCI_DATASETS,
    load_uci,
    make_uci_preprocessor,
    nominal_columns,
)


DATA_HOME = os.environ.get("SKQUAD_DATA")


needs_data = pytest.mark.skipif(
    not DATA_HOME or not Path(DATA_HOME).is_dir(),
    reason="SKQUAD_DATA does not point at the UCI ARFF folder",
)


# --------------------------------------------------------------------- loader
@needs_data
@pytest.mark.parametrize("name", sorted(UCI_DATASETS))
def test_every_shipped_dataset_matches_the_readme_table(name):
    info = UCI_DATASETS[name]
    bunch = load_uci(name, as_frame=True)
    X, y = bunch.data, bunch.target

    assert X.shape == (info.n_samples, info.n_features)
    assert y.shape == (info.n_samples,)
    assert y.nunique() == info.n_classes
    assert list(y.cat.categories) == sorted(set(y), key=list(y.cat.categories).index)
    assert info.target not in X.columns
    assert bunch.target_names == [info.target]
    assert len(nominal_columns(X)) == info.n_nominal
    assert sorted(bunch.categories) == sorted(nominal_columns(X))
    assert bunch.frame.shape == (info.n_samples, info.n_features + 1)

    Xt = make_uci_preprocessor().fit_transform(X)
    assert Xt.dtype == np.float64 and Xt.shape[0] == info.n_samples
    assert not np.isnan(Xt).any()
    n_one_hot = sum(X[column].nunique() for column in nominal_columns(X))
    assert Xt.shape[1] == info.n_features - info.n_nominal + n_one_hot

    # The array form gives the same matrix after preprocessing.
    X_array, y_array = load_uci(name, return_X_y=True)
    expected_dtype = object if info.n_nominal else np.float64
    assert X_array.dtype == expected_dtype
    np.testing.assert_allclose(make_uci_preprocessor().fit_transform(X_array), Xt)
    np.testing.assert_array_equal(y_array, y.astype(str).to_numpy())


@needs_data
@pytest.mark.parametrize(
    "name", sorted(set(UCI_DATASETS) - {"pendigits"})  # scipy rejects pendigits' padding
)
def test_values_agree_with_scipy_arff_reader(name):
    reference, meta = scipy_arff.loadarff(Path(DATA_HOME) / f"{name}.arff")
    bunch = load_uci(name, as_frame=True)
    frame = bunch.frame
    for column in meta.names():
        ours = frame[column.strip("'")]  # scipy keeps the quotes of quoted names
        theirs = reference[column]
        if meta[column][0] == "nominal":
            theirs = np.array([value.decode() for value in theirs], dtype=object)
            theirs[theirs == "?"] = None
            np.testing.assert_array_equal(
                ours.astype(object).where(ours.notna(), None).to_numpy(), theirs
            )
        else:
            np.testing.assert_allclose(ours.to_numpy(dtype=float), theirs.astype(float))


@needs_data
def test_padded_values_and_first_column_target():
    X, y = load_uci("pendigits", return_X_y=True)
    # First data row of the file: " 47,100, 27, 81, 57, 37, 26,  0,  0, 23, 56, 53,100, 90, 40, 98, 8"
    np.testing.assert_array_equal(
        X[0], [47, 100, 27, 81, 57, 37, 26, 0, 0, 23, 56, 53, 100, 90, 40, 98]
    )
    assert y[0] == "8"

    wine = load_uci("wine", as_frame=True)
    assert wine.feature_names[0] == "Alcohol" and "class" not in wine.feature_names
    assert wine.data.iloc[0, 0] == pytest.approx(14.23)
    assert wine.target.iloc[0] == "1"


@needs_data
def test_missing_values_and_quoted_names():
    credit = load_uci("credit.a", as_frame=True)
    assert int(credit.data.isna().sum().sum()) == 67
    assert isinstance(credit.data["A1"].dtype, pd.CategoricalDtype)
    assert credit.categories["A4"] == ["u", "y", "l", "t"]
    vehicle = load_uci("vehicle", as_frame=True)
    assert "DISTANCE CIRCULARITY" in vehicle.feature_names
    glass = load_uci("glass", as_frame=True)
    # The header declares 7 types, only 6 occur: classes are the ones present.
    assert "build wind float" in list(glass.target.cat.categories)
    assert len(glass.target.cat.categories) == 6


@needs_data
@pytest.mark.parametrize("alias", ["credit-approval", "credit.a.arff", "CREDIT.A", "credit_approval"])
def test_file_and_openml_names_are_accepted(alias):
    X, y = load_uci(alias, return_X_y=True, as_frame=True)
    assert X.shape == (690, 15)


def test_data_home_argument_beats_the_environment(tmp_path, monkeypatch):
    (tmp_path / "tiny.arff").write_text(
        "@relation tiny\n@attribute a numeric\n@attribute class {x,y}\n@data\n1,x\n2,y\n"
    )
    monkeypatch.setenv("SKQUAD_DATA", str(tmp_path / "does-not-exist"))
    X, y = load_uci("tiny", data_home=tmp_path, return_X_y=True)
    np.testing.assert_array_equal(X, [[1.0], [2.0]])
    np.testing.assert_array_equal(y, ["x", "y"])
    with pytest.raises(FileNotFoundError, match="does-not-exist.*SKQUAD_DATA"):
        load_uci("tiny")


def test_rows_without_a_target_are_dropped_with_a_warning(tmp_path):
    # Issue 19: they were dropped silently.
    (tmp_path / "tiny.arff").write_text(
        "@relation tiny\n@attribute a numeric\n@attribute class {x,y}\n@data\n"
        "1,x\n2,?\n3,y\n4,x\n"
    )
    with pytest.warns(UserWarning, match=r"'tiny': 1 of 4 rows have no value of the target"):
        X, y = load_uci("tiny", data_home=tmp_path, return_X_y=True)
    np.testing.assert_array_equal(X, [[1.0], [3.0], [4.0]])
    np.testing.assert_array_equal(y, ["x", "y", "x"])


def test_missing_file_without_network_says_where_to_put_it(tmp_path, monkeypatch):
    def offline(**kwargs):
        raise URLError("no network")

    monkeypatch.setattr("sklearn.datasets.fetch_openml", offline)
    with pytest.raises(FileNotFoundError) as error:
        load_uci("credit-approval", data_home=tmp_path)
    message = str(error.value)
    assert str(tmp_path / "credit.a.arff") in message
    assert "SKQUAD_DATA" in message and "data_home" in message


def test_unknown_dataset_error(tmp_path, monkeypatch):
    def no_such_dataset(**kwargs):
        raise ValueError("No active dataset nope found.")

    monkeypatch.setattr("sklearn.datasets.fetch_openml", no_such_dataset)
    with pytest.raises(ValueError, match="Unknown dataset 'nope'.*Known names"):
        load_uci("nope", data_home=tmp_path)
    with pytest.raises(TypeError, match="non-empty string"):
        load_uci(3)


@needs_data
def test_openml_fallback_gives_the_same_format(tmp_path, monkeypatch):
    reference = load_uci("credit.a", as_frame=True)
    calls = []

    def fake_fetch_openml(**kwargs):
        calls.append(kwargs)
        data = reference.data.copy()
        data["A2"] = data["A2"].astype("float32")  # OpenML frames are not all float64
        return Bunch(
            data=data,
            target=reference.target.astype(object),
            DESCR="credit-approval from OpenML",
        )

    monkeypatch.setattr(uci_module, "get_data_home", lambda data_home=None: tmp_path)
    monkeypatch.setattr("sklearn.datasets.fetch_openml", fake_fetch_openml)
    X, y = load_uci("credit.a", return_X_y=True)
    assert calls[0]["name"] == "credit-approval" and calls[0]["version"] == 1
    X_reference, y_reference = load_uci("credit.a", data_home=DATA_HOME, return_X_y=True)
    assert X.dtype == object
    np.testing.assert_array_equal(y, y_reference)
    pd.testing.assert_frame_equal(pd.DataFrame(X), pd.DataFrame(X_reference))


# ----------------------------------------------------------------- ARFF files
def test_arff_edge_cases_through_load_uci(tmp_path):
    (tmp_path / "odd.arff").write_bytes(
        b"% a comment\r\n"
        b"@RELATION 'odd one'\r\n"
        b"@attribute 'first name' {'a b', \"c,d\", e}\r\n"
        b"@attribute   value   REAL\r\n"
        b"@attribute note string\r\n"
        b"@attribute class {yes,no}\r\n"
        b"@data\r\n"
        b"% comment inside the data\r\n"
        b"'a b',  1.5 , 'it\\'s', yes\r\n"
        b"\r\n"
        b"\"c,d\", ?, '?', no\r\n"
        b"?,-2e3,plain,yes\r\n"
    )
    bunch = load_uci("odd", data_home=tmp_path, as_frame=True)
    assert bunch.feature_names == ["first name", "value", "note"]
    assert list(bunch.data["first name"].cat.categories) == ["a b", "c,d", "e"]
    assert bunch.data["first name"].tolist()[:2] == ["a b", "c,d"]
    assert pd.isna(bunch.data["first name"].iloc[2])
    np.testing.assert_array_equal(bunch.data["value"], [1.5, np.nan, -2000.0])
    assert bunch.data["note"].tolist() == ["it's", "?", "plain"]  # a quoted '?' is a value
    assert bunch.target.tolist() == ["yes", "no", "yes"]
    assert "odd one" in bunch.DESCR and str(tmp_path) not in bunch.DESCR


@pytest.mark.parametrize(
    "body",
    [
        "@attribute a numeric\n@attribute b numeric\n@data\n1\n",
        "@attribute a {x,y}\n@attribute b numeric\n@data\nz,1\n",
        "@attribute a numeric\n@attribute b numeric\n@data\nabc,1\n",
        "no header at all\n",
    ],
)
def test_malformed_arff_names_the_file(tmp_path, body):
    (tmp_path / "bad.arff").write_text("@relation bad\n" + body)
    with pytest.raises(ValueError, match="bad.arff is not a readable ARFF file"):
        load_uci("bad", data_home=tmp_path, target="b")


# ------------------------------------------------------------- preprocessor
def test_preprocessor_on_numeric_array_equals_standard_scaler():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(50, 3)) * [1, 10, 100]
    np.testing.assert_allclose(
        make_uci_preprocessor().fit_transform(X), StandardScaler().fit_transform(X)
    )


def test_preprocessor_learns_on_training_data_only():
    train = pd.DataFrame(
        {"colour": pd.Categorical(["red", "blue", "red", None]), "size": [1.0, 2.0, np.nan, 5.0]}
    )
    test = pd.DataFrame(
        {"colour": pd.Categorical(["green", "blue"]), "size": [100.0, np.nan]}
    )
    preprocessor = make_uci_preprocessor().fit(train)
    Xt = preprocessor.transform(test)
    # Unseen category -> all-zero one-hot; missing size -> training median (2.0).
    mean, std = np.mean([1.0, 2.0, 2.0, 5.0]), np.std([1.0, 2.0, 2.0, 5.0])
    np.testing.assert_allclose(Xt[0], [0, 0, (100 - mean) / std])
    np.testing.assert_allclose(Xt[1], [1, 0, (2 - mean) / std])
    Xt_train = preprocessor.transform(train)
    np.testing.assert_allclose(Xt_train[3, :2], [0, 1])  # missing colour -> most frequent


def test_preprocessor_constant_strategy_and_no_scaling():
    X = np.array([["a", 1.0], [np.nan, 3.0]], dtype=object)
    Xt = make_uci_preprocessor(nominal_strategy="constant", scale=False).fit_transform(X)
    np.testing.assert_allclose(Xt, [[1, 0, 1.0], [0, 1, 3.0]])


@needs_data
def test_preprocessor_in_a_pipeline_classifies_credit():
    from sklearn.model_selection import cross_val_score

    X, y = load_uci("credit-approval", return_X_y=True, as_frame=True)
    model = make_pipeline(make_uci_preprocessor(), LogisticRegression(max_iter=1000))
    # Published accuracies for credit approval with linear models are 85-87 %.
    assert cross_val_score(model, X, y, cv=5).mean() > 0.83
