"""The benchmark protocol: repeated stratified splits, one pipeline per fit, one row per fit.

For each dataset, ``repeats`` stratified shuffle splits (``test_size`` test);
on each split every estimator is fitted as
``Pipeline([("preprocess", preprocessor), ("model", estimator)])`` on the
training part only (so imputation, one-hot categories and scaling never see the
test part), then scored on the test part. Fit time is the wall time of
``Pipeline.fit``. With ``tune=True`` the pipeline is wrapped in a 3-fold
``GridSearchCV`` fitted on the training part (nested: the test part stays
unseen) and the fit time includes the search.
"""

import time
import warnings
from collections import Counter
from numbers import Integral

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit
from sklearn.pipeline import Pipeline

from ..datasets import load_uci, make_uci_preprocessor, resolve_uci_name
from ._estimators import default_specs, user_spec
from .._training import limit_threads
from ._size import parameter_count

__all__ = ["BUNDLED_DATASETS", "require_bench", "resolve_datasets", "run_protocol"]

BUNDLED_DATASETS = ("iris", "wine", "breast_cancer", "digits")

RUN_COLUMNS = [
    "dataset", "estimator", "kind", "repeat", "seed", "n_train", "n_test", "n_features",
    "n_features_model", "n_classes", "tuned", "accuracy", "fit_time", "predict_time",
    "n_parameters", "best_params", "warnings", "error",
]


def thread_limit(threads):
    """Limit torch's and the BLAS/OpenMP pools' threads to ``threads``; 0 or None: no limit.

    The training engine's own policy (:func:`skquad._training.limit_threads`),
    so that a benchmark run and the fits inside it agree on thread counts.
    """
    return limit_threads(threads or None, blas=threads or None)


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


def _load_named(name):
    if name in BUNDLED_DATASETS:
        from sklearn import datasets

        return getattr(datasets, f"load_{name}")(return_X_y=True)
    return load_uci(name, return_X_y=True, as_frame=True)


def _take(X, indices):
    return X.iloc[indices] if hasattr(X, "iloc") else X[indices]


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


def _fit_one(spec, preprocessor, X_train, y_train, X_test, y_test, *, seed, device, tune):
    """Fit and score one estimator; never raises (failures are recorded)."""
    record = {"error": "", "warnings": "", "best_params": "", "n_parameters": np.nan}
    caught = []
    try:
        steps = [("model", spec.build(seed, device))]
        if preprocessor is not None:
            steps.insert(0, ("preprocess", clone(preprocessor)))
        model = Pipeline(steps)
        if tune and spec.grid:
            model = GridSearchCV(
                model,
                {f"model__{key}": values for key, values in spec.grid.items()},
                cv=3,
                error_score=np.nan,
            )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            model.fit(X_train, y_train)
            record["fit_time"] = time.perf_counter() - start
            start = time.perf_counter()
            y_pred = model.predict(X_test)
            record["predict_time"] = time.perf_counter() - start
        record["accuracy"] = float(np.mean(np.asarray(y_pred) == np.asarray(y_test)))
        fitted = model.best_estimator_ if hasattr(model, "best_estimator_") else model
        width = X_test.shape[1]
        if preprocessor is not None:
            width = fitted.named_steps["preprocess"].transform(_take(X_test, [0])).shape[1]
        record["n_features_model"] = int(width)
        record["n_parameters"] = parameter_count(fitted.named_steps["model"])
        if hasattr(model, "best_params_"):
            record["best_params"] = str(
                {key.removeprefix("model__"): value for key, value in model.best_params_.items()}
            )
    except Exception as exc:  # one broken fit must not end a long run
        record.update(accuracy=np.nan, fit_time=np.nan, predict_time=np.nan)
        record["error"] = f"{type(exc).__name__}: {exc}"[:300]
    record["warnings"] = _describe_warnings(caught)
    return record


def _as_datasets(data, y):
    """``{name: loader}`` from the forms run_benchmark accepts."""
    if y is not None:
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
            out[str(name)] = lambda value=value: value
        return out
    if isinstance(data, (list, tuple)) and all(isinstance(name, str) for name in data):
        return {name: lambda name=name: _load_named(name) for name in resolve_datasets(data)}
    raise TypeError(
        "data must be X (with y), a dataset name, a list of dataset names, or a dict "
        f"{{name: (X, y)}}; got {type(data).__name__}"
    )


def _as_specs(estimators, include_defaults, quick):
    specs = default_specs() if include_defaults else []
    if quick:
        specs = [spec for spec in specs if spec.quick]
    if estimators is None:
        if not specs:
            raise ValueError("no estimators: pass estimators= or include_defaults=True")
        return specs
    if isinstance(estimators, (list, tuple)) and all(isinstance(e, str) for e in estimators):
        known = {spec.name: spec for spec in specs}
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
    device="auto", n_threads=None, progress=None,
):
    """The rows of every fit (a DataFrame), the specs run, and the datasets; see run_benchmark."""
    pd = require_bench("run_benchmark")
    if not isinstance(repeats, Integral) or repeats < 1:
        raise ValueError(f"repeats must be a positive integer; got {repeats!r}")
    if max_train is not None and (not isinstance(max_train, Integral) or max_train < 1):
        raise ValueError(f"max_train must be None or a positive integer; got {max_train!r}")
    if not 0 < test_size < 1:
        raise ValueError(f"test_size must be in (0, 1); got {test_size!r}")
    datasets = _as_datasets(data, y)
    specs = _as_specs(estimators, include_defaults, quick)
    if isinstance(preprocessor, str):
        if preprocessor != "auto":
            raise ValueError(f"preprocessor must be 'auto', None or a transformer; got {preprocessor!r}")
        preprocessor = make_uci_preprocessor()
    progress = progress or (lambda message: None)
    with thread_limit(n_threads):
        runs = _run_fits(datasets, specs, preprocessor, repeats=repeats, test_size=test_size,
                         max_train=max_train, tune=tune, random_state=random_state,
                         device=device, progress=progress)
    return pd.DataFrame(runs).reindex(columns=RUN_COLUMNS), specs, list(datasets)


def _run_fits(datasets, specs, preprocessor, *, repeats, test_size, max_train, tune,
              random_state, device, progress):
    rows = []
    n_fits = len(datasets) * repeats * len(specs)  # fixed for the whole run
    done = 0
    start_time = time.perf_counter()
    for dataset, load in datasets.items():
        X, labels = load()
        labels = np.asarray(labels)
        splitter = StratifiedShuffleSplit(
            n_splits=repeats, test_size=test_size, random_state=random_state
        )
        for repeat, (train, test) in enumerate(splitter.split(np.zeros(len(labels)), labels)):
            seed = random_state + repeat
            X_test, y_test = _take(X, test), labels[test]
            used = train[subsample_indices(labels[train], max_train, seed)]
            for spec in specs:
                record = _fit_one(
                    spec, preprocessor, _take(X, used), labels[used], X_test, y_test,
                    seed=seed, device=device, tune=tune,
                )
                done += 1
                rows.append(
                    {
                        "dataset": dataset, "estimator": spec.name, "kind": spec.kind,
                        "repeat": repeat, "seed": seed, "n_train": len(used),
                        "n_test": len(test), "n_features": X.shape[1],
                        "n_classes": len(np.unique(labels)),
                        "tuned": bool(tune and spec.grid), **record,
                    }
                )
                status = (
                    f"FAILED {record['error'][:80]}" if record["error"]
                    else f"acc {record['accuracy']:.3f}  fit {record['fit_time']:.2f}s"
                )
                progress(
                    f"[{done}/{n_fits} {time.perf_counter() - start_time:6.0f}s] "
                    f"{dataset} split {repeat + 1}/{repeats} {spec.name}: {status}"
                )
    return rows
