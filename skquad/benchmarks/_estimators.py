"""The estimators the benchmark compares by default, with their benchmark settings.

Each entry says how to build the estimator for one fit (seed, device) and the
small grid that ``tune=True`` searches.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from sklearn.base import clone
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from sklearn.svm import SVC

from .. import (
    BackpropQuantizedClassifier,
    QNNClassifier,
    QuadraticLogisticRegression,
    RPQNNClassifier,
    SDPQuantizedClassifier,
    SDPQuantizedClassifierCV,
)

__all__ = [
    "DEFAULT_ESTIMATOR_NAMES",
    "OPTIONAL_ESTIMATOR_NAMES",
    "REGRESSION_ESTIMATOR_NAMES",
    "EstimatorSpec",
    "default_regression_specs",
    "default_specs",
    "missing_regressors",
    "optional_specs",
    "user_spec",
]


@dataclass
class EstimatorSpec:
    """How the benchmark builds and describes one estimator.

    Attributes
    ----------
    name : str
        Short name used in tables, plots and on the command line.
    kind : {"skquad", "baseline", "yours"}
    build : callable
        ``build(seed, device) -> estimator`` (unfitted, without preprocessing:
        the protocol puts it after the preprocessor).
    settings : str
        The estimator and its non-default settings, in words, for the report.
    grid : dict
        ``tune=True`` grid, parameter names of the estimator itself.
    quick : bool
        Part of the ``--quick`` run.
    multi_output : bool
        Fits a 2-D regression target itself; the regression protocol wraps the
        others (SVR, HistGradientBoostingRegressor) in a MultiOutputRegressor.
    """

    name: str
    kind: str
    build: Callable
    settings: str
    grid: dict = field(default_factory=dict)
    quick: bool = True
    multi_output: bool = True


def user_spec(name, estimator, grid=None):
    """A spec for an estimator the user passes: cloned for every fit, seeded when it can be."""

    def build(seed, device):
        model = clone(estimator)
        if "random_state" in model.get_params(deep=False) and model.get_params()["random_state"] is None:
            model.set_params(random_state=seed)
        return model

    return EstimatorSpec(name, "yours", build, repr(estimator), grid=dict(grid or {}))


# The torch networks and MLPClassifier run at their defaults: one hidden ReLU layer of 100,
# Adam, at most 200 epochs; above 1,000 rows the networks stop early on a held-out tenth
# (early_stopping="auto") where MLPClassifier trains every epoch.

# The SDP's settings for every suite that builds SDPQuantizedClassifier, in one place.
SDP_SETTINGS = {}
# The networks' tuning grid, classifiers and regressors alike.
_NETWORK_GRID = {"alpha": [1e-4, 1e-2], "hidden_layer_sizes": [(30,), (100,)]}


def _sdp_spec():
    return EstimatorSpec(
        "SDP",
        "skquad",
        lambda seed, device: SDPQuantizedClassifier(random_state=seed, **SDP_SETTINGS),
        "SDPQuantizedClassifier (Bartan & Pilanci), defaults (a ridge linear term on two classes, "
        "beta chosen on held-out rows)"
        + (f" with {SDP_SETTINGS}" if SDP_SETTINGS else ""),
        grid={"beta": [1e-3, 1e-2, 1e-1]},
    )


def _skquad_specs():
    networks = [
        (short, network, f"{network.__name__} (Noel et al.), defaults (one hidden ReLU layer of 100, "
         f"{output_layer}, Adam, stopping early above 1,000 rows and alpha checked on held-out rows "
         f"below, ReLinear of Fan et al.)", _NETWORK_GRID)
        for short, network, output_layer in (
            ("QNN", QNNClassifier, "quadratic output layer"),
            ("RPQNN", RPQNNClassifier, "reduced-parameter quadratic output layer"),
        )
    ]
    rows = [
        ("QLR", QuadraticLogisticRegression,
         "QuadraticLogisticRegression (Noel et al.), defaults (L-BFGS, C=1, "
         "quadratic_C chosen on held-out rows)", {"C": [0.1, 1.0, 10.0]}),
        *networks,
        ("BackpropQ", BackpropQuantizedClassifier,
         "BackpropQuantizedClassifier, defaults (the baseline of Bartan & Pilanci: SGD, "
         "then sign quantization and one scale)", {"beta": [1e-4, 1e-2]}),
    ]
    specs = [
        EstimatorSpec(name, "skquad", lambda seed, device, cls=cls: cls(random_state=seed, device=device),
                      settings, grid=dict(grid))
        for name, cls, settings, grid in rows
    ]
    specs.insert(3, _sdp_spec())  # the order of the reports: QLR, QNN, RPQNN, SDP, BackpropQ
    return specs


def _baseline_specs():
    return [
        EstimatorSpec(
            "LogReg",
            "baseline",
            lambda seed, device: LogisticRegression(max_iter=1000),
            "LogisticRegression(max_iter=1000)",
            grid={"C": [0.1, 1.0, 10.0]},
        ),
        EstimatorSpec(
            "Poly2+LogReg",
            "baseline",
            lambda seed, device: make_pipeline(
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
            lambda seed, device: MLPClassifier(
                random_state=seed
            ),
            "MLPClassifier, defaults (one hidden ReLU layer of 100, Adam)",
            grid={"alpha": [1e-4, 1e-2], "hidden_layer_sizes": [(30,), (100,)]},
        ),
        EstimatorSpec(
            "SVC-rbf",
            "baseline",
            lambda seed, device: SVC(),
            "SVC(kernel='rbf'), defaults",
            grid={"C": [1.0, 10.0], "gamma": ["scale", 0.01]},
        ),
        EstimatorSpec(
            "SVC-poly2",
            "baseline",
            lambda seed, device: SVC(kernel="poly", degree=2, coef0=1.0),
            "SVC(kernel='poly', degree=2, coef0=1): the full degree-2 kernel (with "
            "coef0=0 the kernel has no linear part and fails on several datasets)",
            grid={"C": [0.1, 1.0, 10.0]},
        ),
        EstimatorSpec(
            "HistGB",
            "baseline",
            lambda seed, device: HistGradientBoostingClassifier(
                random_state=seed
            ),
            "HistGradientBoostingClassifier, defaults",
            grid={"learning_rate": [0.05, 0.1], "max_leaf_nodes": [15, 31]},
        ),
    ]


def default_specs():
    """The estimators every benchmark run compares: skquad's five, then the baselines."""
    return _skquad_specs() + _baseline_specs()


DEFAULT_ESTIMATOR_NAMES = tuple(spec.name for spec in default_specs())


def optional_specs():
    """Classifiers a run compares only when named (``--estimators``, ``estimators=``).

    SDPQuantizedClassifierCV chooses ``beta`` by cross-validation along its path:
    tens of times the default SDP's fit time, too slow for every run, but the
    measure of how far the default ``beta="auto"`` is from the cross-validated one.
    """
    return [
        EstimatorSpec(
            "SDPCV",
            "skquad",
            lambda seed, device: SDPQuantizedClassifierCV(random_state=seed, **SDP_SETTINGS),
            "SDPQuantizedClassifierCV, defaults (beta chosen by its own cross-validation "
            "along the path from beta_max)",
            grid={},
        )
    ]


OPTIONAL_ESTIMATOR_NAMES = tuple(spec.name for spec in optional_specs())


# ----------------------------------------------------------------- regression
# skquad's regressors by benchmark name: (public class name, description, grid).
# They are looked up on the skquad package when a run starts, so the suite runs
# with whichever of them this install has and names the missing ones.
_RIDGE_GRID = {"alpha": [0.1, 1.0, 10.0, 100.0]}
_SKQUAD_REGRESSORS = (
    ("QuadReg", "QuadraticRegression",
     "QuadraticRegression, defaults (alpha='auto': the linear and the quadratic penalties "
     "chosen by the exact leave-one-out)", _RIDGE_GRID),
    ("QuadRegCV", "QuadraticRegressionCV",
     "QuadraticRegressionCV, defaults (alpha and the quadratic ratio chosen by its "
     "leave-one-out)", {}),
    ("QNN", "QNNRegressor",
     "QNNRegressor (Noel et al.), defaults (one hidden ReLU layer of 100; solver, alpha and "
     "early_stopping 'auto')", _NETWORK_GRID),
    ("RPQNN", "RPQNNRegressor",
     "RPQNNRegressor (Noel et al.), defaults (reduced-parameter quadratic output layer)",
     _NETWORK_GRID),
    ("SDP", "SDPQuantizedRegressor",
     "SDPQuantizedRegressor (Bartan & Pilanci, squared loss), defaults (a ridge linear term, "
     "beta='auto')",
     {"beta": [1e-3, 1e-2, 1e-1]}),
    ("SDPCV", "SDPQuantizedRegressorCV",
     "SDPQuantizedRegressorCV, defaults (beta chosen by its own cross-validation)", {}),
    ("BackpropQ", "BackpropQuantizedRegressor",
     "BackpropQuantizedRegressor, defaults (the baseline of Bartan & Pilanci)",
     {"beta": [1e-4, 1e-2]}),
)


def _skquad_class(class_name):
    """The public skquad class, or None where this install has none of that name."""
    import skquad

    try:
        return getattr(skquad, class_name)
    except AttributeError:
        return None


def _seeded(cls, seed, device, **params):
    """``cls(**params)`` with the split's seed and the run's device where it takes them."""
    model = cls(**params)
    own = model.get_params(deep=False)
    if "random_state" in own:
        model.set_params(random_state=seed)
    if "device" in own:
        model.set_params(device=device)
    return model


def missing_regressors():
    """The skquad regressors of the suite that this install does not have (class names)."""
    return [cls for _, cls, _, _ in _SKQUAD_REGRESSORS if _skquad_class(cls) is None]


def _skquad_regression_specs():
    specs = []
    for name, class_name, settings, grid in _SKQUAD_REGRESSORS:
        cls = _skquad_class(class_name)
        if cls is None:
            continue
        specs.append(EstimatorSpec(
            name, "skquad", lambda seed, device, cls=cls: _seeded(cls, seed, device),
            settings, grid=dict(grid),
        ))
    return specs


def _regression_baseline_specs():
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.kernel_ridge import KernelRidge
    from sklearn.linear_model import Ridge
    from sklearn.neural_network import MLPRegressor
    from sklearn.svm import SVR

    return [
        EstimatorSpec("Ridge", "baseline", lambda seed, device: Ridge(), "Ridge, defaults (alpha=1)",
                      grid=dict(_RIDGE_GRID)),
        EstimatorSpec(
            "Poly2+Ridge", "baseline",
            lambda seed, device: make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge()),
            "PolynomialFeatures(2) + Ridge, defaults: the explicit-feature route to "
            "QuadraticRegression's model (the same alpha penalizes the same coefficients)",
            grid={"ridge__alpha": _RIDGE_GRID["alpha"]},
        ),
        EstimatorSpec("MLP", "baseline", lambda seed, device: MLPRegressor(random_state=seed),
                      "MLPRegressor, defaults (one hidden ReLU layer of 100, Adam, 200 epochs)",
                      grid=dict(_NETWORK_GRID)),
        EstimatorSpec("SVR", "baseline", lambda seed, device: SVR(),
                      "SVR(kernel='rbf'), defaults (one per output for a multi-output target)",
                      grid={"C": [0.1, 1.0, 10.0], "gamma": ["scale", 0.01]}, multi_output=False),
        EstimatorSpec(
            "KRR-poly2", "baseline", lambda seed, device: KernelRidge(kernel="poly", degree=2),
            "KernelRidge(kernel='poly', degree=2), defaults (coef0=1, gamma=1/n_features): the "
            "degree-2 kernel route",
            grid={"alpha": [0.1, 1.0, 10.0]},
        ),
        EstimatorSpec(
            "HistGB", "baseline",
            lambda seed, device: HistGradientBoostingRegressor(random_state=seed),
            "HistGradientBoostingRegressor, defaults (one per output for a multi-output target)",
            grid={"learning_rate": [0.05, 0.1], "max_leaf_nodes": [15, 31]}, multi_output=False,
        ),
    ]


def default_regression_specs():
    """The regressors the regression suite compares: skquad's (those installed), then the baselines."""
    return _skquad_regression_specs() + _regression_baseline_specs()


REGRESSION_ESTIMATOR_NAMES = tuple(name for name, _, _, _ in _SKQUAD_REGRESSORS) + tuple(
    spec.name for spec in _regression_baseline_specs()
)
