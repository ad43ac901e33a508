"""The estimators the benchmark compares, with their benchmark settings.

Each entry says how to build the estimator for one fit (seed, device, data
size), an optional cap on the training size, and the small grid that ``--tune``
searches. skquad estimators are looked up by name in :mod:`skquad`, so one that
has not been built yet is listed as unavailable instead of breaking the suite.
"""

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.svm import SVC

__all__ = ["EstimatorSpec", "available_specs", "ALL_ESTIMATOR_NAMES"]


@dataclass
class EstimatorSpec:
    """How the benchmark builds and describes one estimator.

    Attributes
    ----------
    name : str
        Short name used in tables and on the command line.
    kind : {"skquad", "baseline"}
    build : callable
        ``build(seed, device, n_features, n_classes) -> estimator`` (unfitted,
        without preprocessing: the suite puts it after the preprocessor).
    settings : str
        The non-default settings, in words, for the report.
    grid : dict
        ``--tune`` grid, parameter names of the estimator itself.
    max_train : int or None
        Cap on the training size (a stratified subsample of the training part)
        where the estimator's cost makes the full part unaffordable here.
    quick : bool
        Part of the ``--quick`` run.
    skip : callable or None
        ``skip(n_features, n_classes) -> reason or None``, with ``n_features``
        after preprocessing: datasets where one fit would take minutes here.
    """

    name: str
    kind: str
    build: Callable
    settings: str
    grid: dict = field(default_factory=dict)
    max_train: int | None = None
    quick: bool = True
    skip: Callable | None = None


def _with_existing_params(estimator, **params):
    """Set only the parameters the estimator has (skquad's are still growing)."""
    known = estimator.get_params(deep=False)
    estimator.set_params(**{key: value for key, value in params.items() if key in known})
    return estimator


def _skquad_class(name):
    import skquad

    return getattr(skquad, name, None)


# The three torch networks and MLPClassifier all run with their defaults, which
# are the same (one hidden ReLU layer of 100, Adam, 200 epochs at most), so the
# comparison is between neuron types, not training recipes. (early_stopping
# was tried: on the small datasets its 10 % validation split stops MLPs far too
# early.)
_NETWORK_SETTINGS = {}


SDP_MAX_TRAIN = 300
SDP_MAX_SIZE = 60000


def _sdp_too_large(n_features, n_classes):
    size = (2 * n_features) ** 2 * (1 if n_classes == 2 else n_classes)
    if size > SDP_MAX_SIZE:
        return (
            f"(2d)^2 x classes = {size} > {SDP_MAX_SIZE} (d={n_features}, "
            f"{n_classes} classes): minutes per SDP solve"
        )
    return None


def _skquad_specs():
    specs = []
    QLR = _skquad_class("QuadraticLogisticRegression")
    if QLR is not None:
        specs.append(
            EstimatorSpec(
                "QLR",
                "skquad",
                lambda seed, device, n_features, n_classes: _with_existing_params(
                    QLR(), random_state=seed, device=device
                ),
                "QuadraticLogisticRegression, defaults (L-BFGS, C=1)",
                grid={"C": [0.1, 1.0, 10.0]},
            )
        )
    # The two networks share their benchmark settings and tuning grid.
    for short_name, class_name, output_layer in (
        ("QNN", "QNNClassifier", "quadratic output layer"),
        ("RPQNN", "RPQNNClassifier", "reduced-parameter quadratic output layer"),
    ):
        network = _skquad_class(class_name)
        if network is None:
            continue
        specs.append(
            EstimatorSpec(
                short_name,
                "skquad",
                lambda seed, device, n_features, n_classes, network=network: _with_existing_params(
                    network(), random_state=seed, device=device, **_NETWORK_SETTINGS
                ),
                f"{class_name}, defaults (one hidden ReLU layer of 100, {output_layer}, "
                "Adam, ReLinear)",
                grid={"alpha": [1e-4, 1e-2], "hidden_layer_sizes": [(30,), (100,)]},
            )
        )
    SDP = _skquad_class("SDPQuantizedClassifier")
    if SDP is not None:
        specs.append(
            EstimatorSpec(
                "SDP",
                "skquad",
                lambda seed, device, n_features, n_classes: _with_existing_params(
                    SDP(), random_state=seed
                ),
                "SDPQuantizedClassifier, defaults (SCS); training part capped at "
                f"{SDP_MAX_TRAIN} samples and skipped where (2d)^2 x classes > "
                f"{SDP_MAX_SIZE} (d after one-hot encoding), because the SDP's cost grows "
                "with n and with (2d)^2 per class: on optdigits (d=64, 10 classes) one "
                "solve takes about 2 minutes here even on 200 samples",
                grid={"beta": [1e-3, 1e-2, 1e-1]},
                max_train=SDP_MAX_TRAIN,
                skip=_sdp_too_large,
            )
        )
    BPQ = _skquad_class("BackpropQuantizedClassifier")
    if BPQ is not None:
        specs.append(
            EstimatorSpec(
                "BackpropQ",
                "skquad",
                lambda seed, device, n_features, n_classes: _with_existing_params(
                    BPQ(), random_state=seed, device=device
                ),
                "BackpropQuantizedClassifier, defaults (paper 002's baseline: SGD, then "
                "sign quantization and one scale)",
                grid={"beta": [1e-4, 1e-2]},
            )
        )
    return specs


def _baseline_specs():
    return [
        EstimatorSpec(
            "LogReg",
            "baseline",
            lambda seed, device, n_features, n_classes: LogisticRegression(max_iter=1000),
            "LogisticRegression(max_iter=1000)",
            grid={"C": [0.1, 1.0, 10.0]},
        ),
        EstimatorSpec(
            "Poly2+LogReg",
            "baseline",
            lambda seed, device, n_features, n_classes: make_pipeline(
                PolynomialFeatures(2, include_bias=False),
                StandardScaler(),
                LogisticRegression(max_iter=1000),
            ),
            "PolynomialFeatures(2) + StandardScaler + LogisticRegression(max_iter=1000): "
            "the explicit-feature route to the same model family as QLR",
            grid={"logisticregression__C": [0.1, 1.0, 10.0]},
        ),
        EstimatorSpec(
            "MLP",
            "baseline",
            lambda seed, device, n_features, n_classes: MLPClassifier(
                random_state=seed, **_NETWORK_SETTINGS
            ),
            "MLPClassifier, defaults (one hidden ReLU layer of 100, Adam)",
            grid={"alpha": [1e-4, 1e-2], "hidden_layer_sizes": [(30,), (100,)]},
        ),
        EstimatorSpec(
            "SVC-rbf",
            "baseline",
            lambda seed, device, n_features, n_classes: SVC(),
            "SVC(kernel='rbf'), defaults",
            grid={"C": [1.0, 10.0], "gamma": ["scale", 0.01]},
        ),
        EstimatorSpec(
            "SVC-poly2",
            "baseline",
            lambda seed, device, n_features, n_classes: SVC(kernel="poly", degree=2, coef0=1.0),
            "SVC(kernel='poly', degree=2, coef0=1): the full degree-2 kernel (with "
            "coef0=0 the kernel has no linear part and fails on several datasets)",
            grid={"C": [0.1, 1.0, 10.0]},
        ),
        EstimatorSpec(
            "HistGB",
            "baseline",
            lambda seed, device, n_features, n_classes: HistGradientBoostingClassifier(
                random_state=seed
            ),
            "HistGradientBoostingClassifier, defaults",
            grid={"learning_rate": [0.05, 0.1], "max_leaf_nodes": [15, 31]},
        ),
    ]


ALL_ESTIMATOR_NAMES = (
    "QLR", "QNN", "RPQNN", "SDP", "BackpropQ",
    "LogReg", "Poly2+LogReg", "MLP", "SVC-rbf", "SVC-poly2", "HistGB",
)


def available_specs():
    """The estimator specs available in this installation, skquad's first."""
    return _skquad_specs() + _baseline_specs()


def describe_missing(specs):
    """Names of skquad estimators the benchmark knows but this checkout lacks."""
    present = {spec.name for spec in specs}
    return [name for name in ALL_ESTIMATOR_NAMES if name not in present]


def subsample_indices(y, max_samples, seed):
    """Stratified subsample of ``max_samples`` indices (all when fewer)."""
    n = len(y)
    if max_samples is None or n <= max_samples:
        return np.arange(n)
    from sklearn.model_selection import train_test_split

    indices, _ = train_test_split(
        np.arange(n), train_size=max_samples, stratify=np.asarray(y), random_state=seed
    )
    return np.sort(indices)
