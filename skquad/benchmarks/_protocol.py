"""The benchmark protocol: repeated splits, one pipeline per fit, one row per fit.

Classification: for each dataset, ``repeats`` stratified shuffle splits (``test_size`` test);
on each split every estimator is fitted as
``Pipeline([("preprocess", preprocessor), ("model", estimator)])`` on the
training part only (so imputation, one-hot categories and scaling never see the
test part), then scored on the test part. Fit time is the wall time of
``Pipeline.fit``. With ``tune=True`` the pipeline is wrapped in a 3-fold
``GridSearchCV`` fitted on the training part (nested: the test part stays
unseen) and the fit time includes the search.

Regression: ``repeats`` times ``n_splits``-fold cross-validation
(``RepeatedKFold``); each fit is
``TransformedTargetRegressor(Pipeline([("preprocess", ...), ("model", ...)]),
transformer=log (where the target is skewed) then standardize)``, scored by R²
and RMSE on the held-out fold on the target's own scale. A model that fits one
output at a time (SVR, HistGradientBoostingRegressor) is wrapped in a
``MultiOutputRegressor`` for a 2-D target.
"""

import contextlib
import time
import warnings
from collections import Counter
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.metrics import r2_score, root_mean_squared_error
from sklearn.model_selection import GridSearchCV, KFold, RepeatedKFold, StratifiedShuffleSplit
from sklearn.multioutput import MultiOutputRegressor
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_array, check_is_fitted

from .._foundation._torch_utils import resolve_device
from ._report import thread_limit  # noqa: F401 (the command's one thread rule, shared with the suites)
from ..datasets import (
    REGRESSION_DATASETS,
    load_regression,
    load_uci,
    make_regression_preprocessor,
    make_uci_preprocessor,
    resolve_uci_name,
)
from ._estimators import default_regression_specs, default_specs, optional_specs, user_spec
from ._size import parameter_count

__all__ = [
    "BUNDLED_DATASETS",
    "BUNDLED_REGRESSION_DATASETS",
    "regression_target_transformer",
    "require_bench",
    "resolve_datasets",
    "resolve_regression_datasets",
    "resolve_task",
    "run_protocol",
]

BUNDLED_DATASETS = ("iris", "wine", "breast_cancer", "digits")
# scikit-learn's regression sets that need no download (linnerud: 3 outputs).
BUNDLED_REGRESSION_DATASETS = ("diabetes", "linnerud")

RUN_COLUMNS = [
    "dataset", "estimator", "kind", "repeat", "seed", "n_train", "n_test", "n_features",
    "n_features_model", "n_classes", "tuned", "accuracy", "fit_time", "predict_time",
    "n_parameters", "best_params", "warnings", "error",
]
REGRESSION_RUN_COLUMNS = [
    "dataset", "estimator", "kind", "repeat", "fold", "seed", "n_samples", "n_used", "n_train",
    "n_test", "n_features", "n_features_model", "n_outputs", "log_target", "tuned", "r2", "rmse",
    "fit_time", "predict_time", "n_parameters", "best_params", "warnings", "error",
]
TASKS = ("auto", "classification", "regression")


def require_bench(what="skquad.benchmarks"):
    """pandas, or an ImportError that names the ``bench`` extra."""
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            f"{what} needs pandas and matplotlib, which come with skquad's 'bench' extra: "
            "pip install 'skquad[bench]'"
        ) from exc
    return pandas


def resolve_datasets(names):
    """Canonical names: scikit-learn's bundled datasets or UCI file/OpenML names.

    Raises ValueError naming the first unknown one.
    """
    resolved = []
    for name in names:
        key = name.strip().lower().replace("-", "_")
        if key in BUNDLED_DATASETS:
            resolved.append(key)
            continue
        dataset = resolve_uci_name(name)
        if dataset is None:
            raise ValueError(
                f"unknown dataset {name!r}; choose from scikit-learn's bundled "
                f"{list(BUNDLED_DATASETS)} or the UCI datasets (file or OpenML names, "
                "see skquad.datasets.UCI_DATASETS)"
            )
        resolved.append(dataset.file_name)
    return resolved


def resolve_regression_datasets(names):
    """Canonical names of regression sets: the shared CSV sets or scikit-learn's bundled ones.

    Raises ValueError naming the first unknown one.
    """
    resolved = []
    for name in names:
        key = str(name).strip().lower().removesuffix(".csv").replace("-", "_")
        if key not in REGRESSION_DATASETS and key not in BUNDLED_REGRESSION_DATASETS:
            raise ValueError(
                f"unknown regression dataset {name!r}; choose from {list(REGRESSION_DATASETS)} "
                f"(skquad.datasets.load_regression) or scikit-learn's bundled "
                f"{list(BUNDLED_REGRESSION_DATASETS)}"
            )
        resolved.append(key)
    return resolved


def _is_regression_name(name):
    key = str(name).strip().lower().removesuffix(".csv").replace("-", "_")
    return key in REGRESSION_DATASETS or key in BUNDLED_REGRESSION_DATASETS


def resolve_task(task, data, y=None):
    """``"classification"`` or ``"regression"`` for what :func:`run_protocol` accepts.

    ``task="auto"`` reads it from the target (see :func:`_looks_continuous`);
    named datasets are regression sets or classification sets.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {list(TASKS)}; got {task!r}")
    if task != "auto":
        return task
    if y is not None:
        targets = [y]
    elif isinstance(data, str) or (
        isinstance(data, (list, tuple)) and data and all(isinstance(n, str) for n in data)
    ):
        names = [data] if isinstance(data, str) else list(data)
        # "diabetes" names both scikit-learn's regression set and the UCI (Pima)
        # classification set: the other names decide, and alone it is regression.
        decided = [name for name in names
                   if not (_is_regression_name(name) and resolve_uci_name(name) is not None)]
        kinds = {_is_regression_name(name) for name in decided or names}
        if len(kinds) > 1:
            raise ValueError(
                "data mixes regression and classification datasets; run them separately "
                f"(regression: {[n for n in names if _is_regression_name(n)]})"
            )
        return "regression" if kinds.pop() else "classification"
    elif isinstance(data, dict):
        targets = [value[1] for value in data.values()
                   if isinstance(value, tuple) and len(value) == 2]
    else:
        return "classification"  # _as_datasets names the problem
    kinds = {_looks_continuous(target) for target in targets}
    if len(kinds) > 1:
        raise ValueError(
            "the datasets' targets mix continuous and class labels; pass task='regression' "
            "or task='classification', or run them separately"
        )
    return "regression" if kinds and kinds.pop() else "classification"


# A float target with more distinct values than this is a measurement, not class
# labels, even when its values are whole numbers (diabetes' progression score).
MAX_FLOAT_CLASSES = 20


def _looks_continuous(y):
    """Regression target: scikit-learn's ``type_of_target`` says continuous, or floats
    with more than ``MAX_FLOAT_CLASSES`` distinct values. Integers, strings and a few
    distinct floats are class labels (pass ``task="regression"`` for counts)."""
    y = np.asarray(y)
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("the target y has NaN or infinite values; drop those rows")
    if type_of_target(y) in ("continuous", "continuous-multioutput"):
        return True
    return y.dtype.kind == "f" and len(np.unique(y)) > MAX_FLOAT_CLASSES


class TrainingRangeBound(TransformerMixin, BaseEstimator):
    """The identity on the training targets; bounds predictions to their range.

    ``inverse_transform`` (what :class:`~sklearn.compose.TransformedTargetRegressor`
    applies to a model's predictions) clips every output to the range the
    training targets had. A tree ensemble's predictions are averages of
    training targets, so always in that range; a linear, quadratic or network
    model extrapolates, and on a log target ``exp`` turns an extrapolated log
    into a prediction orders of magnitude beyond any price seen (a quadratic
    model on a diamond recorded with depth ``z = 0`` predicted $1.6 million).
    """

    def fit(self, y, _=None):
        y = check_array(y, ensure_2d=False)
        self.data_min_, self.data_max_ = np.min(y, axis=0), np.max(y, axis=0)
        return self

    def transform(self, y):
        return y

    def inverse_transform(self, y):
        check_is_fitted(self)
        return np.clip(y, self.data_min_, self.data_max_)


def regression_target_transformer(log_target):
    """The target's side of the regression pipeline: log (skewed targets), standardize, bound.

    Standardizing puts every target on one scale, so that default
    regularization (Ridge's and KernelRidge's ``alpha``, SVR's ``epsilon``, a
    network's initialization) means the same on every dataset; predictions are
    bounded to the training targets' range (:class:`TrainingRangeBound`);
    R² and RMSE are computed on the original scale, after the inverse
    transform.
    """
    steps = [FunctionTransformer(np.log, inverse_func=np.exp, check_inverse=False)] if log_target else []
    return make_pipeline(*steps, StandardScaler(), TrainingRangeBound())


def _load_named(name):
    if name in BUNDLED_DATASETS:
        from sklearn import datasets

        return getattr(datasets, f"load_{name}")(return_X_y=True)
    return load_uci(name, return_X_y=True, as_frame=True)


def _take(X, indices):
    return X.iloc[indices] if hasattr(X, "iloc") else X[indices]


def subsample_indices(y, max_samples, seed, *, stratify=True):
    """Sorted subsample of ``max_samples`` indices (all when fewer).

    Stratified by the class labels ``y``; ``stratify=False`` (a continuous
    target) draws uniformly.
    """
    n = len(y)
    if max_samples is None or n <= max_samples:
        return np.arange(n)
    from sklearn.model_selection import train_test_split

    indices, _ = train_test_split(
        np.arange(n), train_size=max_samples, stratify=np.asarray(y) if stratify else None,
        random_state=seed,
    )
    return np.sort(indices)


def _describe_warnings(caught):
    """``"ConvergenceWarning: message (x3); ..."``: each distinct warning once, with its text."""
    counts = Counter(
        (w.category.__name__, " ".join(str(w.message).split()))
        for w in caught
        if not issubclass(w.category, DeprecationWarning)
    )
    return "; ".join(
        f"{category}: {message}" + (f" (x{count})" if count > 1 else "")
        for (category, message), count in sorted(counts.items())
    )


def _assemble(spec, preprocessor, seed, device, *, multi_output_target=False,
              target_transformer=None):
    """The model of one fit and the names its tuning grid takes there."""
    model, grid = spec.build(seed, device), dict(spec.grid)
    if multi_output_target and not spec.multi_output:
        model = MultiOutputRegressor(model)
        grid = {f"estimator__{key}": values for key, values in grid.items()}
    steps = [("model", model)]
    if preprocessor is not None:
        steps.insert(0, ("preprocess", clone(preprocessor)))
    model, prefix = Pipeline(steps), "model__"
    if target_transformer is not None:
        model = TransformedTargetRegressor(
            regressor=model, transformer=clone(target_transformer), check_inverse=False
        )
        prefix = "regressor__model__"
    return model, {f"{prefix}{key}": values for key, values in grid.items()}, prefix


def _classification_scores(y_true, y_pred):
    return {"accuracy": float(np.mean(np.asarray(y_pred) == np.asarray(y_true)))}


def _regression_scores(y_true, y_pred):
    # Uniform averages over the outputs of a multi-output target (scikit-learn's default).
    return {"r2": float(r2_score(y_true, y_pred)),
            "rmse": float(root_mean_squared_error(y_true, y_pred))}


def _fit_one(spec, preprocessor, X_train, y_train, X_test, y_test, *, seed, device, tune,
             task="classification", target_transformer=None):
    """Fit and score one estimator; never raises (failures are recorded)."""
    regression = task == "regression"
    score_names = ("r2", "rmse") if regression else ("accuracy",)
    record = {"error": "", "warnings": "", "best_params": "", "n_parameters": np.nan}
    caught = []
    try:
        model, grid, prefix = _assemble(
            spec, preprocessor, seed, device,
            multi_output_target=regression and np.ndim(y_train) == 2,
            target_transformer=target_transformer,
        )
        if tune and grid:
            model = GridSearchCV(
                model, grid, error_score=np.nan,
                cv=KFold(3, shuffle=True, random_state=seed) if regression else 3,
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            model.fit(X_train, y_train)
            record["fit_time"] = time.perf_counter() - start
            start = time.perf_counter()
            y_pred = model.predict(X_test)
            record["predict_time"] = time.perf_counter() - start
        record.update((_regression_scores if regression else _classification_scores)(y_test, y_pred))
        fitted = model.best_estimator_ if hasattr(model, "best_estimator_") else model
        if isinstance(fitted, TransformedTargetRegressor):
            fitted = fitted.regressor_
        width = X_test.shape[1]
        if preprocessor is not None:
            width = fitted.named_steps["preprocess"].transform(_take(X_test, [0])).shape[1]
        record["n_features_model"] = int(width)
        record["n_parameters"] = parameter_count(fitted.named_steps["model"])
        if hasattr(model, "best_params_"):
            record["best_params"] = str(
                {key.removeprefix(prefix): value for key, value in model.best_params_.items()}
            )
    except Exception as exc:  # one broken fit must not end a long run
        record.update(dict.fromkeys(score_names, np.nan), fit_time=np.nan, predict_time=np.nan)
        record["error"] = f"{type(exc).__name__}: {exc}"[:300]
    record["warnings"] = _describe_warnings(caught)
    return record


def _load_regression_named(name):
    if name in BUNDLED_REGRESSION_DATASETS:
        from sklearn import datasets

        return getattr(datasets, f"load_{name}")(return_X_y=True)
    return load_regression(name, return_X_y=True, as_frame=True)


def _as_datasets(data, y, task="classification"):
    """``{name: loader}`` from the forms run_benchmark accepts."""
    if y is not None:
        _check_pair("X and y", data, y)
        return {"data": lambda: (data, y)}
    if isinstance(data, str):
        data = [data]
    if isinstance(data, dict):
        out = {}
        for name, value in data.items():
            if not (isinstance(value, tuple) and len(value) == 2):
                raise ValueError(
                    f"data[{name!r}] must be an (X, y) pair; got {type(value).__name__}"
                )
            _check_pair(f"data[{name!r}]", *value)
            out[str(name)] = lambda value=value: value
        return out
    if isinstance(data, (list, tuple)) and all(isinstance(name, str) for name in data):
        if task == "regression":
            return {name: lambda name=name: _load_regression_named(name)
                    for name in resolve_regression_datasets(data)}
        return {name: lambda name=name: _load_named(name) for name in resolve_datasets(data)}
    raise TypeError(
        "data must be X (with y), a dataset name, a list of dataset names, or a dict "
        f"{{name: (X, y)}}; got {type(data).__name__}"
    )


def _check_pair(what, X, y):
    """Refuse an (X, y) pair whose rows and labels do not pair up."""
    n_rows, n_labels = (X.shape[0] if hasattr(X, "shape") else len(X)), len(y)
    if n_rows != n_labels:
        raise ValueError(
            f"{what}: X has {n_rows} rows but y has {n_labels} labels; they must pair "
            "row for row."
        )


def _as_specs(estimators, include_defaults, quick, task="classification"):
    defaults = default_regression_specs if task == "regression" else default_specs
    specs = defaults() if include_defaults else []
    if quick:
        specs = [spec for spec in specs if spec.quick]
    if estimators is None:
        if not specs:
            raise ValueError("no estimators: pass estimators= or include_defaults=True")
        return specs
    if isinstance(estimators, (list, tuple)) and all(isinstance(e, str) for e in estimators):
        # names select among the defaults whatever include_defaults says
        selectable = defaults() + (optional_specs() if task != "regression" else [])
        known = {spec.name: spec for spec in selectable if spec.quick or not quick}
        unknown = [name for name in estimators if name not in known]
        if unknown:
            raise ValueError(f"unknown estimators {unknown}; choose from {list(known)}")
        return [known[name] for name in estimators]
    if not isinstance(estimators, dict):
        raise TypeError(
            "estimators must be a dict {name: estimator} or a list of default estimator "
            f"names; got {type(estimators).__name__}"
        )
    names = {spec.name for spec in specs}
    clash = sorted(names & set(estimators))
    if clash:
        raise ValueError(f"estimator names {clash} are already used by the defaults; rename yours")
    return specs + [user_spec(name, estimator) for name, estimator in estimators.items()]


def run_protocol(
    data, y=None, *, estimators=None, include_defaults=True, quick=False, repeats=3,
    test_size=0.25, max_train=None, tune=False, preprocessor="auto", random_state=0,
    device="auto", n_threads=None, progress=None, task="auto", n_splits=5, log_target="auto",
    max_samples=None, n_jobs=1,
):
    """The rows of every fit (a DataFrame), the specs run, and the datasets; see run_benchmark.

    The task (``"classification"`` or ``"regression"``) is the runs' columns:
    ``accuracy`` or ``r2``.
    """
    pd = require_bench("run_benchmark")
    if not isinstance(repeats, Integral) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer; got {repeats!r}")
    for name, value in (("max_train", max_train), ("max_samples", max_samples)):
        if value is not None and (not isinstance(value, Integral) or value < 1):
            raise ValueError(f"{name} must be None or a positive integer; got {value!r}")
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1); got {test_size!r}")
    if n_threads is not None and (
        isinstance(n_threads, bool) or not isinstance(n_threads, Integral) or n_threads < 1
    ):
        raise ValueError(f"n_threads must be None or a positive integer; got {n_threads!r}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a positive integer; got {n_jobs!r}")
    # The estimators' own device check, once up front: an unavailable device
    # (device="mps", "cuda" without CUDA) is an error here, not a runs table
    # in which every fit failed.
    resolve_device(device)
    task = resolve_task(task, data, y)
    if task == "regression":
        if not isinstance(n_splits, Integral) or n_splits < 2:
            raise ValueError(f"n_splits must be an integer of at least 2; got {n_splits!r}")
        if not (log_target == "auto" or isinstance(log_target, (bool, np.bool_))):
            raise ValueError(f"log_target must be 'auto', True or False; got {log_target!r}")
    datasets = _as_datasets(data, y, task)
    specs = _as_specs(estimators, include_defaults, quick, task)
    if isinstance(preprocessor, str):
        if preprocessor != "auto":
            raise ValueError(f"preprocessor must be 'auto', None or a transformer; got {preprocessor!r}")
        preprocessor = make_regression_preprocessor() if task == "regression" else make_uci_preprocessor()
    progress = progress or (lambda message: None)
    with thread_limit(n_threads):
        runs = _run_fits(
            datasets, specs, preprocessor, task=task, repeats=repeats, n_splits=n_splits,
            test_size=test_size, max_samples=max_samples, max_train=max_train, tune=tune,
            random_state=random_state, device=device, progress=progress, log_target=log_target,
            n_jobs=n_jobs, n_threads=n_threads,
        )
    columns = REGRESSION_RUN_COLUMNS if task == "regression" else RUN_COLUMNS
    return pd.DataFrame(runs).reindex(columns=columns), specs, list(datasets)


def _regression_target(y, dataset, log_target):
    """``y`` as a float array, checked: finite, and positive where a log is taken."""
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if y.dtype.kind not in "biuf":
        raise ValueError(
            f"the target of {dataset!r} is not numeric (dtype {y.dtype}); regression needs "
            "numbers (pass task='classification' for class labels)"
        )
    y = y.astype(np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if not np.all(np.isfinite(y)):
        raise ValueError(f"the target of {dataset!r} has NaN or infinite values; drop those rows")
    if log_target and np.any(y <= 0):
        raise ValueError(
            f"log_target needs a positive target, and {dataset!r} has values <= 0; pass "
            "log_target=False"
        )
    return y


def _protocol_tasks(datasets, specs, preprocessor, *, regression, repeats, test_size, n_splits,
                    max_samples, max_train, tune, random_state, device, log_target, splitter=None,
                    target_transformer=regression_target_transformer):
    """Every fit of the protocol: each spec on each split (after a subsample of the training part).

    ``splitter`` replaces the protocol's (``n_splits`` splits per repeat);
    ``target_transformer(log)`` makes the regression target's transformer.
    """
    for dataset, load in datasets.items():
        X, y = load()
        columns, options = {}, dict(device=device, tune=tune)
        if regression:
            if log_target == "auto":  # the README's advice for the shared sets; none for others
                log = dataset in REGRESSION_DATASETS and REGRESSION_DATASETS[dataset].skewed_target
            else:
                log = bool(log_target)
            y = _regression_target(y, dataset, log)
            columns.update(n_samples=len(y), log_target=log)
            # A large set is subsampled once, uniformly, before the splits.
            kept = subsample_indices(y, max_samples, random_state, stratify=False)
            X, y = _take(X, kept), y[kept]
            columns.update(n_used=len(y), n_outputs=1 if y.ndim == 1 else y.shape[1])
            options.update(task="regression", target_transformer=target_transformer(log))
        else:
            y = np.asarray(y)
            columns.update(n_classes=len(np.unique(y)))
        if splitter is None:
            splitter = (RepeatedKFold(n_splits=n_splits, n_repeats=repeats, random_state=random_state)
                        if regression else
                        StratifiedShuffleSplit(n_splits=repeats, test_size=test_size, random_state=random_state))
        for index, (train, test) in enumerate(splitter.split(np.zeros(len(y)), y)):
            repeat, fold = divmod(index, n_splits) if regression else (index, None)
            seed = random_state + repeat
            used = train[subsample_indices(y[train], max_train, seed, stratify=not regression)]
            data = (_take(X, used), y[used], _take(X, test), y[test])
            for spec in specs:
                row = {
                    "dataset": dataset, "estimator": spec.name, "kind": spec.kind, "repeat": repeat,
                    "seed": seed, "n_train": len(used), "n_test": len(test), "n_features": X.shape[1],
                    "tuned": bool(tune and spec.grid), **columns,
                    **({"fold": fold} if regression else {}),
                }
                yield _FitTask(row, (spec, preprocessor, *data), dict(options, seed=seed))


def _run_fits(datasets, specs, preprocessor, *, task, repeats, n_splits, n_jobs, n_threads, progress,
              **options):
    """The rows of the protocol's fits (:func:`_protocol_tasks`), with a progress line each."""
    regression = task == "regression"

    def describe(row):
        if row["error"]:
            status = f"FAILED {row['error'][:80]}"
        elif regression:
            status = f"R2 {row['r2']:.3f}  fit {row['fit_time']:.2f}s"
        else:
            status = f"acc {row['accuracy']:.3f}  fit {row['fit_time']:.2f}s"
        where = (f"repeat {row['repeat'] + 1}/{repeats} fold {row['fold'] + 1}/{n_splits}" if regression
                 else f"split {row['repeat'] + 1}/{repeats}")
        return f"{row['dataset']} {where} {row['estimator']}: {status}"

    tasks = _protocol_tasks(datasets, specs, preprocessor, regression=regression, repeats=repeats,
                            n_splits=n_splits, **options)
    n_fits = len(datasets) * repeats * (n_splits if regression else 1) * len(specs)
    return _execute(tasks, n_fits=n_fits, n_jobs=n_jobs, n_threads=n_threads, progress=progress,
                    describe=describe)


class _FitTask(NamedTuple):
    """One fit of the protocol: the row's identifying columns and ``_fit_one``'s arguments."""

    row: dict
    args: tuple
    kwargs: dict


def _run_task(task, threads):
    """Fit one task (in a worker process when ``n_jobs > 1``) and return its row."""
    with thread_limit(threads) if threads else contextlib.nullcontext():
        record = _fit_one(*task.args, **task.kwargs)
    return {**task.row, **record}


def _execute(tasks, *, n_fits, n_jobs, n_threads, progress, describe):
    """The rows of ``tasks``, in order, fitted in this process or in ``n_jobs`` worker processes.

    Every fit is seeded by its split (the rows do not depend on ``n_jobs``); each worker runs one
    fit at a time under the run's thread limit, which a child process does not inherit.
    """
    start_time = time.perf_counter()
    if n_jobs == 1:
        results = (_run_task(task, None) for task in tasks)  # the caller's thread limit applies
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=n_jobs, return_as="generator")(
            delayed(_run_task)(task, n_threads) for task in tasks
        )
    rows = []
    for done, row in enumerate(results, 1):
        rows.append(row)
        progress(f"[{done}/{n_fits} {time.perf_counter() - start_time:6.0f}s] {describe(row)}")
    return rows
