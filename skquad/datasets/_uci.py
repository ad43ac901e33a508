"""The UCI classification datasets: loader and preprocessing helper.

The datasets are read from ARFF files in a data directory (the ``data_home``
argument, else the ``SKQUAD_DATA`` environment variable). When a file is not
there, the same dataset is fetched from OpenML with
:func:`sklearn.datasets.fetch_openml`, which needs a network connection.
"""

import os
from dataclasses import dataclass
from numbers import Real
from pathlib import Path

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils import Bunch

from .._foundation._reporting import warn_user

__all__ = [
    "UCI_DATASETS",
    "UCIDataset",
    "get_data_home",
    "load_uci",
    "make_uci_preprocessor",
    "nominal_columns",
    "numeric_columns",
]

DATA_ENV_VAR = "SKQUAD_DATA"


@dataclass(frozen=True)
class UCIDataset:
    """What is known about one of the shipped UCI datasets.

    Attributes
    ----------
    file_name : str
        Stem of the ARFF file in the data directory (``credit.a`` for
        ``credit.a.arff``).
    openml_name : str
        Name on OpenML (``fetch_openml(name=openml_name, version=1)``).
    target : str
        Name of the target attribute (not always the last one: wine's is first).
    n_samples, n_features, n_nominal, n_classes : int
        As documented by the data's README; the tests check them.
    """

    file_name: str
    openml_name: str
    target: str
    n_samples: int
    n_features: int
    n_nominal: int
    n_classes: int


# The 13 datasets of the project's data folder, smallest first within each group:
# the four of the SDP paper's experiments, then the rest by size.
UCI_DATASETS = {
    dataset.file_name: dataset
    for dataset in (
        UCIDataset("breast.cancer", "breast-cancer", "Class", 286, 9, 9, 2),
        UCIDataset("ionosphere", "ionosphere", "class", 351, 34, 0, 2),
        UCIDataset("credit.a", "credit-approval", "class", 690, 15, 9, 2),
        UCIDataset("vehicle", "vehicle", "Class", 846, 18, 0, 4),
        UCIDataset("wine", "wine", "class", 178, 13, 0, 3),
        UCIDataset("glass", "glass", "Type", 214, 9, 0, 6),
        UCIDataset("diabetes", "diabetes", "class", 768, 8, 0, 2),
        UCIDataset("segment", "segment", "class", 2310, 19, 0, 7),
        UCIDataset("spambase", "spambase", "class", 4601, 57, 0, 2),
        UCIDataset("waveform5000", "waveform-5000", "class", 5000, 40, 0, 3),
        UCIDataset("optdigits", "optdigits", "class", 5620, 64, 0, 10),
        UCIDataset("pendigits", "pendigits", "class", 10992, 16, 0, 10),
        UCIDataset("letter", "letter", "class", 20000, 16, 0, 26),
    )
}


def _normalise(name):
    name = name.strip().lower()
    if name.endswith(".arff"):
        name = name[: -len(".arff")]
    return name.replace("_", "-")


_ALIASES = {}
for _dataset in UCI_DATASETS.values():
    for _alias in (_dataset.file_name, _dataset.openml_name):
        _ALIASES[_normalise(_alias)] = _dataset
        _ALIASES[_normalise(_alias).replace(".", "-")] = _dataset
_ALIASES["credit-a"] = UCI_DATASETS["credit.a"]
_ALIASES["breast-cancer"] = UCI_DATASETS["breast.cancer"]
_ALIASES["waveform"] = UCI_DATASETS["waveform5000"]


def resolve_uci_name(name):
    """The :class:`UCIDataset` that ``name`` refers to, or None if unknown.

    File names (``"credit.a"``, ``"credit.a.arff"``) and OpenML names
    (``"credit-approval"``) are accepted, in any case.

    Parameters
    ----------
    name : str
        A file or OpenML name of one of :data:`UCI_DATASETS`.

    Returns
    -------
    dataset : UCIDataset or None

    Examples
    --------
    >>> from skquad.datasets import resolve_uci_name
    >>> resolve_uci_name("Credit-Approval").file_name
    'credit.a'
    >>> resolve_uci_name("no such data") is None
    True
    """
    return _ALIASES.get(_normalise(name))


def get_data_home(data_home=None):
    """The folder that :func:`load_uci` reads ARFF files from.

    Parameters
    ----------
    data_home : str or path-like, default=None
        If given, this folder. Otherwise the ``SKQUAD_DATA`` environment
        variable, if it is set.

    Returns
    -------
    data_home : pathlib.Path or None
        None when neither is set (then :func:`load_uci` goes to OpenML).
    """
    if data_home is None:
        data_home = os.environ.get(DATA_ENV_VAR) or None
    if data_home is None:
        return None
    return Path(data_home).expanduser()


def existing_data_home(data_home, holding):
    """:func:`get_data_home`, or FileNotFoundError when it names a missing folder.

    The one rule every loader follows: ``data_home``, else ``SKQUAD_DATA``;
    None when neither is set; a folder that does not exist is an error naming
    where it came from. ``holding`` says what the folder should hold.
    """
    directory = get_data_home(data_home)
    if directory is not None and not directory.is_dir():
        raise FileNotFoundError(
            f"The data directory {directory} does not exist (it comes from "
            f"{'data_home' if data_home is not None else DATA_ENV_VAR}). Point it "
            f"at the folder holding {holding}."
        )
    return directory


def _find_arff(directory, name, dataset):
    if directory is None:
        return None
    candidates = [name if name.lower().endswith(".arff") else f"{name}.arff"]
    if dataset is not None:
        candidates += [f"{dataset.file_name}.arff", f"{dataset.openml_name}.arff"]
    for candidate in candidates:
        path = directory / candidate
        if path.is_file():
            return path
    return None


def _require_pandas(what):
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - pandas is in every extra
        raise ImportError(
            f"{what} needs pandas; install it with `pip install pandas`."
        ) from exc
    return pandas


def _read_arff(path):
    """The decoded content of an ARFF file (liac-arff), errors naming the file."""
    import arff

    with open(path, encoding="utf-8") as handle:
        try:
            return arff.load(handle)
        except arff.ArffException as exc:
            raise ValueError(f"{path} is not a readable ARFF file: {exc}") from exc


def _frame_from_arff(path, dataset, target):
    """(features DataFrame, target Series, description) from an ARFF file."""
    pd = _require_pandas("load_uci")
    content = _read_arff(path)
    attributes = content["attributes"]
    names = [name for name, _ in attributes]
    if target is None:
        target = dataset.target if dataset is not None else _guess_target(names)
    if target not in names:
        raise ValueError(
            f"{path} has no attribute {target!r} to use as the target; "
            f"its attributes are {names}."
        )
    rows = content["data"]
    columns = {}
    for index, (name, kind) in enumerate(attributes):
        values = [row[index] for row in rows]
        if isinstance(kind, list):  # nominal: the declared categories, in order
            columns[name] = pd.Categorical(values, categories=kind)
        elif kind.upper() in ("NUMERIC", "REAL", "INTEGER"):
            columns[name] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        else:  # string and date attributes stay text
            columns[name] = pd.Series([np.nan if v is None else v for v in values], dtype=object)
    frame = pd.DataFrame(columns)
    description = (
        f"{content['relation']} (read from {path.name})\n\n{content['description']}".rstrip() + "\n"
    )
    return frame.drop(columns=target), frame[target], description


def _guess_target(names):
    """OpenML's convention: the attribute called class, else the last one."""
    return next((name for name in names if name.lower() == "class"), names[-1])


def _frame_from_openml(name, dataset, data_home, directory):
    """(features DataFrame, target Series, description) from OpenML."""
    pd = _require_pandas("load_uci")
    from sklearn.datasets import fetch_openml

    openml_name = dataset.openml_name if dataset is not None else name
    file_name = f"{dataset.file_name if dataset is not None else name}.arff"
    where = (
        f"{directory / file_name}" if directory is not None else
        f"a folder of your choice as {file_name}"
    )
    try:
        bunch = fetch_openml(
            name=openml_name,
            version=1,
            as_frame=True,
            data_home=None if data_home is None else str(data_home),
        )
    except OSError as exc:  # URLError, timeouts and refused connections
        raise FileNotFoundError(
            f"Dataset {name!r} is not in the data directory and could not be "
            f"downloaded from OpenML ({type(exc).__name__}: {exc}). Put the ARFF "
            f"file at {where}, and pass that folder as data_home= or set the "
            f"{DATA_ENV_VAR} environment variable to it."
        ) from exc
    except ValueError as exc:  # OpenML knows no such dataset
        known = sorted({d.file_name for d in UCI_DATASETS.values()})
        raise ValueError(
            f"Unknown dataset {name!r}: no ARFF file {file_name} in the data "
            f"directory ({directory}) and OpenML answered: {exc}. Known names: "
            f"{known} (or their OpenML names)."
        ) from exc
    features = bunch.data.copy()
    for column in features.columns:
        if not isinstance(features[column].dtype, pd.CategoricalDtype):
            if pd.api.types.is_numeric_dtype(features[column]):
                features[column] = features[column].astype(np.float64)
    target = bunch.target
    if isinstance(target, pd.DataFrame):
        target = target.iloc[:, 0]
    return features, target, bunch.DESCR


def load_uci(name, *, data_home=None, return_X_y=False, as_frame=False, target=None):
    """Load a UCI classification dataset from an ARFF file or OpenML.

    The file ``NAME.arff`` is read from ``data_home``, else from the folder
    named by the ``SKQUAD_DATA`` environment variable. When it is not there the
    dataset is fetched with ``sklearn.datasets.fetch_openml(name=..., version=1)``;
    without a network connection the error says where to put the file.

    The features come back raw: nominal attributes as categories (``as_frame=True``)
    or strings, missing values as NaN. Preprocess them inside a Pipeline, for
    example with :func:`make_uci_preprocessor`, so that the imputation and scaling
    statistics come from the training part only.

    Parameters
    ----------
    name : str
        A file name of the data directory (``"credit.a"``, ``"breast.cancer"``,
        with or without ``.arff``) or an OpenML name (``"credit-approval"``,
        ``"breast-cancer"``). See ``skquad.datasets.UCI_DATASETS`` for the 13
        datasets the project ships tests and benchmarks for; other ARFF files of
        the data directory and other OpenML datasets load too.
    data_home : str or path-like, default=None
        Folder with the ARFF files. Default: the ``SKQUAD_DATA`` environment
        variable. Also used as scikit-learn's OpenML cache folder when given.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.
    as_frame : bool, default=False
        If True, ``data`` is a pandas DataFrame (nominal columns with a
        categorical dtype), ``target`` a categorical Series and ``frame`` both
        together. If False, ``data`` is a float64 array when every feature is
        numeric, else an object array (strings for nominal values, floats for
        numbers, NaN for missing values); ``target`` is an array of strings.
    target : str, default=None
        Name of the target attribute. Default: the known target of the shipped
        datasets, else the attribute called ``class`` (any case), else the last.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        With ``data``, ``target``, ``frame`` (None unless ``as_frame``),
        ``feature_names``, ``target_names`` (the name of the target column, as
        in :func:`~sklearn.datasets.fetch_openml`), ``categories`` (the declared
        values of each nominal feature) and ``DESCR``.
    (data, target) : tuple
        If ``return_X_y`` is True.

    Examples
    --------
    >>> from skquad.datasets import load_uci
    >>> X, y = load_uci("credit.a", return_X_y=True, as_frame=True)  # doctest: +SKIP
    >>> X.shape, sorted(y.unique())  # doctest: +SKIP
    ((690, 15), ['+', '-'])
    """
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"name must be a non-empty string, got {name!r}.")
    if target is not None and not isinstance(target, str):
        raise TypeError(f"target must be a string or None, got {target!r}.")
    dataset = resolve_uci_name(name)
    directory = existing_data_home(data_home, "the ARFF files")
    path = _find_arff(directory, name.strip(), dataset)
    if path is not None:
        features, y, description = _frame_from_arff(path, dataset, target)
    else:
        features, y, description = _frame_from_openml(name, dataset, data_home, directory)
        if target is not None and target != y.name:
            raise ValueError(
                f"target={target!r} is not OpenML's target {y.name!r} for {name!r}; "
                "load the ARFF file from a data directory to choose another target."
            )

    # Classes are the labels that occur: an ARFF header may declare more (glass
    # declares 7 types, 6 occur), and an empty class would break estimators.
    pd = _require_pandas("load_uci")
    y = y.astype("category").cat.remove_unused_categories()
    y = y.cat.rename_categories([str(category) for category in y.cat.categories])
    if y.isna().any():
        keep = ~y.isna().to_numpy()
        # A row without a target cannot be trained or scored on; drop it and say so.
        warn_user(
            f"{name!r}: {int((~keep).sum())} of {keep.shape[0]} rows have no value of "
            f"the target {str(y.name)!r} and were dropped.",
            UserWarning,
        )
        features, y = features.loc[keep].reset_index(drop=True), y.loc[keep].reset_index(drop=True)

    categories = {
        column: [str(value) for value in features[column].cat.categories]
        for column in features.columns
        if isinstance(features[column].dtype, pd.CategoricalDtype)
    }
    feature_names = [str(column) for column in features.columns]
    if as_frame:
        data, target_values = features, y
        frame = pd.concat([features, y], axis=1)
    else:
        data = _frame_to_array(features, pd)
        target_values = y.astype(object).to_numpy()
        frame = None
    if return_X_y:
        return data, target_values
    return Bunch(
        data=data,
        target=target_values,
        frame=frame,
        feature_names=feature_names,
        target_names=[str(y.name)],
        categories=categories,
        DESCR=description,
    )


def _frame_to_array(features, pd):
    numeric = [pd.api.types.is_numeric_dtype(features[c]) and not
               isinstance(features[c].dtype, pd.CategoricalDtype) for c in features.columns]
    if all(numeric):
        return features.to_numpy(dtype=np.float64)
    array = np.empty(features.shape, dtype=object)
    for position, column in enumerate(features.columns):
        values = features[column]
        if numeric[position]:
            array[:, position] = values.to_numpy(dtype=np.float64)
        else:
            array[:, position] = [
                np.nan if pd.isna(value) else str(value) for value in values.to_numpy(dtype=object)
            ]
    return array


def _is_nominal_array_column(column):
    """Any boolean or non-number (None, a missing value, is neither)."""
    return any(isinstance(value, (bool, np.bool_))
               or not (value is None or isinstance(value, (Real, np.number))) for value in column)


def nominal_columns(X):
    """The nominal (non-numeric) columns of ``X``: a column selector.

    Parameters
    ----------
    X : DataFrame or ndarray of shape (n_samples, n_features)

    Returns
    -------
    columns : list of str or ndarray of bool
        Column names for a DataFrame (categorical, string, object and boolean
        columns), a boolean mask for an array (an object column holding any
        non-number, e.g. strings).
    """
    if hasattr(X, "dtypes") and hasattr(X, "columns"):
        from pandas.api.types import is_bool_dtype, is_numeric_dtype

        return [
            column for column in X.columns
            if is_bool_dtype(X[column]) or not is_numeric_dtype(X[column])
        ]
    X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D array, got an array of shape {X.shape}.")
    if X.dtype.kind in "biufc":
        return np.zeros(X.shape[1], dtype=bool) | (X.dtype.kind == "b")
    return np.array([_is_nominal_array_column(X[:, j]) for j in range(X.shape[1])], dtype=bool)


def numeric_columns(X):
    """The numeric columns of ``X``: the complement of :func:`nominal_columns`."""
    nominal = nominal_columns(X)
    if isinstance(nominal, list):
        return [column for column in X.columns if column not in set(nominal)]
    return ~nominal


def make_uci_preprocessor(*, numeric_strategy="median", nominal_strategy="most_frequent",
                          scale=True):
    """An unfitted transformer from raw UCI features to a dense numeric matrix.

    Nominal columns are imputed and one-hot encoded (categories unseen in
    training encode as all zeros); numeric columns are imputed and
    standardized. It works on the DataFrame of ``load_uci(as_frame=True)``, on
    the object array of ``load_uci()`` and on plain numeric arrays. Put it first
    in a Pipeline so that its statistics come from the training data only.

    Parameters
    ----------
    numeric_strategy : {"mean", "median", "most_frequent"}, default="median"
        :class:`~sklearn.impute.SimpleImputer` strategy for numeric columns.
    nominal_strategy : {"most_frequent", "constant"}, default="most_frequent"
        Strategy for nominal columns; ``"constant"`` makes "missing" a category
        of its own.
    scale : bool, default=True
        Standardize the numeric columns (quadratic models need it: their
        scores grow with the square of the inputs).

    Returns
    -------
    preprocessor : :class:`~sklearn.compose.ColumnTransformer`
        Unfitted; its output is a dense float64 array without NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.datasets import make_uci_preprocessor
    >>> X = np.array([["red", 1.0], ["blue", np.nan], [np.nan, 3.0]], dtype=object)
    >>> make_uci_preprocessor().fit_transform(X).round(2)
    array([[ 0.  ,  1.  , -1.22],
           [ 1.  ,  0.  ,  0.  ],
           [ 1.  ,  0.  ,  1.22]])
    """
    numeric_steps = [SimpleImputer(strategy=numeric_strategy)]
    if scale:
        numeric_steps.append(StandardScaler())
    nominal_pipeline = make_pipeline(
        SimpleImputer(strategy=nominal_strategy, fill_value="missing"),
        OneHotEncoder(handle_unknown="ignore", sparse_output=False),
    )
    return ColumnTransformer(
        [
            ("nominal", nominal_pipeline, nominal_columns),
            ("numeric", make_pipeline(*numeric_steps), numeric_columns),
        ],
        sparse_threshold=0.0,
    )
