"""Datasets for quadratic-neuron experiments.

Loaders
-------
load_uci
    A UCI classification dataset from an ARFF file (``data_home`` or the
    ``SKQUAD_DATA`` environment variable) or, failing that, from OpenML.
make_uci_preprocessor
    Unfitted ColumnTransformer: impute + one-hot nominal columns, impute +
    standardize numeric ones.
resolve_uci_name
    The UCI dataset a file or OpenML name refers to.
load_regression
    A tabular regression dataset (concrete, diamonds, wage, cpus, car_prices,
    chem_proc_yield, meats) from a CSV file in the same data directory.
REGRESSION_DATASETS
    What the loader knows of each: targets, origin, license, skew.
UCI_DATASETS
    The 13 UCI datasets the project's tests and benchmarks use, with their
    file names, OpenML names, targets and sizes.

Generators
----------
make_xor
    The XOR problem's four points (Noel et al.).
make_nonlinear_clusters
    Noel et al.'s six Gaussian clusters, train and test parts.
make_planted_quantized
    Data labelled by a planted binary bilinear network (Bartan & Pilanci).
"""

from ._generators import make_nonlinear_clusters, make_planted_quantized, make_xor
from ._regression import REGRESSION_DATASETS, RegressionDataset, load_regression
from ._uci import (
    UCI_DATASETS,
    UCIDataset,
    get_data_home,
    load_uci,
    make_uci_preprocessor,
    nominal_columns,
    numeric_columns,
    resolve_uci_name,
)

__all__ = [
    "REGRESSION_DATASETS",
    "RegressionDataset",
    "UCI_DATASETS",
    "UCIDataset",
    "get_data_home",
    "load_regression",
    "load_uci",
    "make_nonlinear_clusters",
    "make_planted_quantized",
    "make_uci_preprocessor",
    "make_xor",
    "nominal_columns",
    "numeric_columns",
    "resolve_uci_name",
]
