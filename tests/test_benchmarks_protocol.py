"""skquad/benchmarks/_protocol.py: the regression protocol's scores against the same pipeline by hand, targets, subsampling."""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.compose import TransformedTargetRegressor
from sklearn.linear_model import Ridge
from sklearn.metrics import r2_score, root_mean_squared_error
from sklearn.model_selection import RepeatedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, MinMaxScaler, PolynomialFeatures, StandardScaler

from skquad.benchmarks import run_benchmark
from skquad.benchmarks._protocol import regression_target_transformer, resolve_task, run_protocol


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3))
    y = 3.0 + X[:, 0] * X[:, 1] + 0.5 * X[:, 2] + 0.1 * rng.standard_normal(60)
    return X, y


def _by_hand(X, y, model, *, log=False, n_splits=3):
    """The first fold's R² and RMSE of ``model`` with the benchmark's pipeline, built by hand.

    Features clipped to their training range, then standardized; predictions
    bounded to the training targets' range.
    """
    train, test = next(RepeatedKFold(n_splits=n_splits, n_repeats=1, random_state=0).split(X))
    steps = [FunctionTransformer(np.log, inverse_func=np.exp)] if log else []
    fitted = TransformedTargetRegressor(
        make_pipeline(MinMaxScaler(clip=True), StandardScaler(), model),
        transformer=make_pipeline(*steps, StandardScaler()),
    ).fit(X[train], y[train])
    prediction = np.clip(fitted.predict(X[test]), y[train].min(), y[train].max())
    return r2_score(y[test], prediction), root_mean_squared_error(y[test], prediction)


def test_scores_are_those_of_the_same_pipeline_by_hand(data):
    X, y = data
    result = run_benchmark(X, y, estimators=["Ridge", "Poly2+Ridge"], repeats=2, n_splits=3)
    runs = result.runs
    assert len(runs) == 2 * 3 * 2 and runs["error"].fillna("").eq("").all()
    assert {"r2", "rmse", "fold", "n_outputs"} <= set(runs.columns) and "accuracy" not in runs
    first = runs[(runs["repeat"] == 0) & (runs["fold"] == 0)].set_index("estimator")
    # Same folds, same pipeline: the same numbers up to float64 rounding.
    r2, rmse = _by_hand(X, y, Ridge())
    assert first.loc["Ridge", "r2"] == pytest.approx(r2, rel=1e-10)
    assert first.loc["Ridge", "rmse"] == pytest.approx(rmse, rel=1e-10)
    assert first.loc["Poly2+Ridge", "n_parameters"] == 3 + 6 + 1
    # The quadratic truth: the degree-2 model explains what Ridge cannot.
    assert first.loc["Poly2+Ridge", "r2"] > 0.9 > first.loc["Ridge", "r2"]
    assert set(result.summary.columns) >= {"r2_mean", "r2_std", "rmse_mean", "rmse_std"}
    assert "### Test R²" in result.markdown and "3-fold" in result.markdown


def test_quadratic_regression_at_alpha_1_is_its_pipeline_in_the_benchmark(data):
    X, y = data
    # QuadReg runs the default alpha="auto"; at Ridge's alpha=1.0 it is the pipeline's optimum
    from skquad import QuadraticRegression

    runs = run_benchmark(X, y, estimators=["QuadReg", "Poly2+Ridge"], repeats=1, n_splits=3).runs
    pivot = runs.pivot(index="fold", columns="estimator", values="r2")
    assert np.all(np.isfinite(pivot["QuadReg"]))
    explicit = make_pipeline(PolynomialFeatures(2, include_bias=False), Ridge(alpha=1.0)).fit(X, y)
    model = QuadraticRegression(alpha=1.0, clip_outputs=False).fit(X, y)  # Ridge does not clip
    np.testing.assert_allclose(model.predict(X), explicit.predict(X), rtol=1e-6)


def test_log_target_and_its_errors(data):
    X, y = data
    runs = run_benchmark(X, np.exp(y / 3), estimators=["Ridge"], repeats=1, n_splits=3,
                         log_target=True).runs
    r2, _ = _by_hand(X, np.exp(y / 3), Ridge(), log=True)
    assert runs["log_target"].all() and runs.loc[0, "r2"] == pytest.approx(r2, rel=1e-10)
    with pytest.raises(ValueError, match="log_target needs a positive target"):
        run_benchmark(X, y - 10, estimators=["Ridge"], repeats=1, n_splits=3, log_target=True)
    with pytest.raises(ValueError, match="log_target must be"):
        run_benchmark(X, y, estimators=["Ridge"], repeats=1, log_target="yes")
    with pytest.raises(ValueError, match="NaN or infinite"):
        run_benchmark(X, np.where(np.arange(60) == 3, np.nan, y), estimators=["Ridge"], repeats=1)
    with pytest.raises(ValueError, match="n_splits"):
        run_benchmark(X, y, estimators=["Ridge"], repeats=1, n_splits=1)


def test_predictions_are_bounded_to_the_training_targets_range():
    # Two outputs, bounded each to its own range, on the log scale too.
    Y = np.column_stack([np.linspace(1.0, 2.0, 10), np.linspace(10.0, 50.0, 10)])
    for log in (False, True):
        bound = regression_target_transformer(log).fit(Y)
        far = bound.transform(np.array([[0.5, 5.0], [1.5, 30.0], [9.0, 500.0]]))
        np.testing.assert_allclose(bound.inverse_transform(far),
                                   [[1.0, 10.0], [1.5, 30.0], [2.0, 50.0]], rtol=1e-12)
        # The training targets themselves go through unchanged.
        np.testing.assert_allclose(bound.inverse_transform(bound.transform(Y)), Y, rtol=1e-12)


def test_n_jobs_is_checked(data):
    # (The parallel path itself is what the committed suite run used; starting
    # worker processes takes too long for a unit test.)
    X, y = data
    for bad in (0, 1.5, True):
        with pytest.raises(ValueError, match="n_jobs must be a positive integer"):
            run_protocol(X, y, estimators=["Ridge"], repeats=1, n_splits=2, n_jobs=bad)


def test_multi_output_targets_wrap_single_output_models(data):
    X, y = data
    Y = np.column_stack([y, -2 * y])
    runs = run_benchmark(X, Y, estimators=["SVR", "Ridge"], repeats=1, n_splits=2).runs
    assert runs["error"].fillna("").eq("").all(), runs["error"]
    assert (runs["n_outputs"] == 2).all() and runs["r2"].between(-1, 1).all()


def test_task_detection():
    rng = np.random.default_rng(1)
    assert resolve_task("auto", None, rng.standard_normal(30)) == "regression"
    assert resolve_task("auto", None, np.arange(30, dtype=float)) == "regression"  # 30 values
    assert resolve_task("auto", None, np.array([0.0, 1.0] * 15)) == "classification"
    assert resolve_task("auto", None, np.arange(30)) == "classification"  # integers: labels
    assert resolve_task("regression", None, np.arange(30)) == "regression"
    assert resolve_task("auto", ["concrete", "diabetes"]) == "regression"
    # "diabetes" is also the UCI (Pima) classification set: the full uci suite's list
    assert resolve_task("auto", ["iris", "diabetes"]) == "classification"
    assert resolve_task("auto", ["breast.cancer", "diabetes", "letter"]) == "classification"
    assert resolve_task("auto", "iris") == "classification"
    with pytest.raises(ValueError, match="mixes regression and classification"):
        resolve_task("auto", ["concrete", "iris"])
    with pytest.raises(ValueError, match="task must be one of"):
        resolve_task("regresion", None, np.arange(3.0))


class _Broken(RegressorMixin, BaseEstimator):
    def fit(self, X, y):
        raise RuntimeError("no fit today")

    def predict(self, X):  # pragma: no cover - never reached
        return np.zeros(len(X))


def test_subsampling_tuning_and_failures_are_reported(data):
    X, y = data
    result = run_benchmark(
        {"big": (np.tile(X, (5, 1)), np.tile(y, 5))}, estimators={"broken": _Broken()},
        include_defaults=False, repeats=1, n_splits=2, max_samples=100,
    )
    assert result.runs["r2"].isna().all() and "no fit today" in result.runs.loc[0, "error"]
    assert "subsampled to 100 of its 300 rows" in result.markdown
    assert "### Failed fits" in result.markdown
    tuned = run_benchmark(X, y, estimators=["Ridge"], repeats=1, n_splits=2, tune=True).runs
    assert tuned["tuned"].all() and tuned["best_params"].str.startswith("{'alpha'").all()
