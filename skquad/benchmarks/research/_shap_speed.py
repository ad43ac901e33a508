"""The closed-form SHAP values of a quadratic model against the ``shap`` package (``--suite shap-speed``).

``shap``'s ``Exact`` explainer evaluates the model on all ``2^d`` coalitions
times the background rows per sample, so it is timed on a few samples and its
time extrapolated (linear in the samples); its default explainer (an estimate)
is timed on all. Both get a small background, which favours them. The report
states the problem and the target. Without ``shap`` only the closed form is timed.
"""

import time

import numpy as np

from skquad import QuadraticRegression
from skquad.inspection import shap_values

from .._report import markdown_table

__all__ = ["run"]

# (samples, features, background rows, samples timed with the exact explainer)
PROBLEM = (1000, 20, 10, 2)
QUICK_PROBLEM = (100, 8, 10, 4)
SPEED_TARGET = 100.0
AGREEMENT = 1e-8


def _problem(n, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = X[:, 0] * X[:, 1] - X[:, 2] ** 2 + X[:, 3] + 0.1 * rng.standard_normal(n)
    return QuadraticRegression().fit(X, y), X


def _best_time(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def _shap_rows(model, X, background, n_exact, reference, progress):
    """Timings of shap's Exact (a few samples, after a first call that compiles) and default explainers."""
    try:
        import shap
    except ImportError:
        progress("shap is not installed: only the closed form is timed")
        return []
    d = X.shape[1]
    masker = shap.maskers.Independent(background, max_samples=background.shape[0])
    exact = shap.explainers.Exact(model.predict, masker)
    evaluations = 2**d + 1
    exact(X[:1], max_evals=evaluations, silent=True)  # numba compiles its kernels on the first call
    progress(f"shap Exact on {n_exact} samples ({2**d} coalitions each)")
    seconds, values = _best_time(lambda: exact(X[1 : 1 + n_exact], max_evals=evaluations, silent=True).values, 1)
    difference = np.max(np.abs(values - reference[1 : 1 + n_exact]))
    rows = [("shap Exact", n_exact, seconds, seconds / n_exact * X.shape[0], difference)]
    default = shap.Explainer(model.predict, masker)
    progress(f"shap's default explainer ({type(default).__name__}) on {X.shape[0]} samples")
    seconds, values = _best_time(lambda: default(X, silent=True).values, 1)
    name = f"shap default ({type(default).__name__}, an estimate)"
    rows.append((name, X.shape[0], seconds, seconds, np.max(np.abs(values - reference))))
    return rows


def run(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """Time the closed-form SHAP values against ``shap``'s explainers; the suite contract.

    ``quick``: 100 samples of 8 features instead of 1,000 of 20. ``repeats``:
    timings of the closed form, the best kept (default 5). ``datasets`` and
    ``device`` are not used (a synthetic problem on the CPU); no figure.
    """
    import pandas as pd

    n, d, n_background, n_exact = QUICK_PROBLEM if quick else PROBLEM
    repeats = 5 if repeats is None else repeats
    model, X = _problem(n, d)
    background = X[:n_background]
    seconds, explanation = _best_time(lambda: shap_values(model, X, background), repeats)
    rows = [("skquad shap_values (closed form)", n, seconds, seconds, 0.0)]
    rows += _shap_rows(model, X, background, n_exact, explanation.values, progress)
    table = pd.DataFrame(rows, columns=["method", "samples timed", "seconds", f"seconds for {n} samples", "max |difference|"])
    table["closed form faster by"] = table[f"seconds for {n} samples"] / seconds
    markdown = [
        f"{n} samples x {d} features, a QuadraticRegression, a background of {n_background} rows; "
        f"the exact explainer's time for {n} samples is extrapolated from {n_exact}.",
        "",
        markdown_table(table),
    ]
    exact = table[table["method"] == "shap Exact"]
    if len(exact):
        ratio, difference = float(exact["closed form faster by"].iloc[0]), float(exact["max |difference|"].iloc[0])
        met = ratio >= SPEED_TARGET and difference <= AGREEMENT
        markdown += [
            "",
            f"Closed form / shap Exact: {ratio:.3g}x faster, values equal to {difference:.2g} "
            f"(target: {SPEED_TARGET:.0f}x, {AGREEMENT:g}): {'met' if met else 'NOT met'}.",
        ]
    title = "Closed-form SHAP values against shap"
    return {"title": title, "markdown": "\n".join(markdown), "tables": {"shap_speed": table}, "figures": []}
