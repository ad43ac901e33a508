"""Sparse Q and interaction constraints (``--suite sparse-q``, issue 42).

``planted``: the CV estimators (``penalty="l1"``) select pairs on planted data;
the F1 score of ``interactions_`` against the true pairs. ``uci``: held-out
accuracy and share of pairs of the sparse QLR (C by cross-validation on the
log-loss, also relaxed) against the dense default. ``constraints``: QLR's fit
time against the pairs ``interaction_cst`` allows. ``path``:
QuadraticLogisticRegressionCV's path against one fit at its final ``C``.
Each report states its protocol and target.
"""

import time

import numpy as np
from sklearn.base import clone

from skquad import (
    QuadraticLogisticRegression,
    QuadraticLogisticRegressionCV,
    QuadraticRegressionCV,
)

from .._report import markdown_table

__all__ = ["constraints", "path", "planted", "uci"]

F1_TARGET, ACCURACY_PP, PAIR_SHARE, PATH_RATIO = 0.9, 0.5, 0.1, 3.0
RELAX_CS = [1.0, 10.0, 100.0]  # the relaxed refits' Cs, chosen by the folds with each C


def _planted(seed, n, d, n_pairs=5, classification=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    pairs = set()
    while len(pairs) < n_pairs:
        a, b = sorted(rng.choice(d, 2, replace=False))
        pairs.add((int(a), int(b)))
    signal = sum(X[:, a] * X[:, b] for a, b in pairs) + X[:, :3].sum(axis=1)
    noise = rng.logistic(size=n) if classification else rng.standard_normal(n)
    y = signal + noise
    return X, ((y > 0).astype(int) if classification else y), pairs


def _f1(found, true):
    found = {tuple(int(v) for v in pair) for pair in found}
    hits = len(found & true)
    return 0.0 if hits == 0 else 2 * hits / (len(found) + len(true))


def _one_standard_error(model, X, y):
    """``model`` (a CV estimator) refitted with ``selection_rule="one_standard_error"``."""
    return clone(model).set_params(selection_rule="one_standard_error").fit(X, y)


def _empty_model_c(X, y):
    """The largest ``C`` whose ``penalty="l1"`` QLR is the empty model (LassoCV's ``alpha_max``): no
    feature's gradient at the class priors (``X^T diag(r_k) X``, ``X^T r_k``) exceeds ``1 / (C n)``."""
    classes, codes = np.unique(y, return_inverse=True)
    onehot = np.eye(classes.shape[0])[codes]
    residuals = (onehot.mean(axis=0) - onehot) / X.shape[0]
    if classes.shape[0] == 2:  # one score, the second class's
        residuals = residuals[:, 1:]
    largest = max(max(np.abs(X.T @ (r[:, None] * X)).max(), np.abs(X.T @ r).max())
                  for r in residuals.T)
    return 1.0 / (X.shape[0] * largest)


def l1_grid(X, y, n_cs=13, decades=3):
    """``n_cs`` values of ``C`` from the empty model's up ``decades`` decades (ElasticNetCV's eps=1e-3)."""
    return _empty_model_c(X, y) * np.logspace(0, decades, n_cs)


def planted(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """F1 of the selected pairs on planted data, both CV estimators, ``repeats`` seeds (5).

    The CV optimum (``selection_rule="best"``, as LassoCV and LogisticRegressionCV select)
    against ``selection_rule="one_standard_error"`` (glmnet's ``lambda.1se``).
    """
    import pandas as pd

    n, d = (1000, 12) if quick else (5000, 50)
    rows = []
    for seed in range(repeats or (2 if quick else 5)):
        for name, classification in (("QuadraticRegressionCV", False),
                                     ("QuadraticLogisticRegressionCV", True)):
            X, y, pairs = _planted(seed, n, d, classification=classification)
            model = (QuadraticLogisticRegressionCV(Cs=np.logspace(-2.5, -0.5, 17), penalty="l1",
                                                   cv=3)
                     if classification else QuadraticRegressionCV(alphas=30, penalty="l1", cv=3))
            progress(f"planted seed {seed}: {name}")
            start = time.perf_counter()
            model.fit(X, y)
            seconds = time.perf_counter() - start
            sparser = _one_standard_error(model, X, y)
            rows.append((name, seed, model.n_interactions_, _f1(model.interactions_, pairs),
                         sparser.n_interactions_, _f1(sparser.interactions_, pairs), seconds))
    table = pd.DataFrame(rows, columns=["estimator", "seed", "pairs selected", "F1",
                                        "pairs (1-SE rule)", "F1 (1-SE rule)", "CV fit seconds"])
    means = table.groupby("estimator")[["F1", "F1 (1-SE rule)"]].mean()
    lines = [f"n={n}, d={d}: 5 true pairs among {d * (d - 1) // 2}; 3-fold CV, "
             "QuadraticRegressionCV on 30 alphas from alpha_max, QuadraticLogisticRegressionCV "
             "(accuracy) on 17 Cs from 10^-2.5 to 10^-0.5.", "", markdown_table(table), ""]
    verdict = lambda f1: "met" if f1 >= F1_TARGET else "NOT met"
    lines += [f"{name} (target F1 {F1_TARGET}): mean F1 {row['F1']:.3f} at the CV optimum "
              f"(selection_rule='best', {verdict(row['F1'])}), {row['F1 (1-SE rule)']:.3f} with "
              f"selection_rule='one_standard_error' ({verdict(row['F1 (1-SE rule)'])})."
              for name, row in means.iterrows()]
    return {"title": "Sparse Q: planted pairs", "markdown": "\n".join(lines),
            "tables": {"sparse_q_planted": table}, "figures": []}


def uci(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """Held-out accuracy and pair share of the sparse QLR against the dense one on the UCI sets."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer, load_wine
    from sklearn.metrics import accuracy_score
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from skquad.datasets import load_uci, make_uci_preprocessor

    if quick:
        sets = {"breast_cancer": load_breast_cancer(return_X_y=True),
                "wine": load_wine(return_X_y=True)}
    else:
        names = datasets or ["breast.cancer", "ionosphere", "credit.a", "vehicle", "wine",
                             "glass", "diabetes", "segment", "spambase"]
        sets = {name: load_uci(name, return_X_y=True, as_frame=True) for name in names}
    rows = []
    for name, (X, y) in sets.items():
        for seed in range(repeats or (1 if quick else 2)):
            X_train, X_test, y_train, y_test = train_test_split(
                X, y, test_size=0.25, random_state=seed, stratify=y)
            # standardized features (the UCI preprocessor scales; the bundled sets are numeric)
            prep = (StandardScaler() if quick else make_uci_preprocessor()).fit(X_train, y_train)
            train, test = prep.transform(X_train), prep.transform(X_test)
            y_train, y_test = np.asarray(y_train), np.asarray(y_test)
            # C on the log-loss, a proper score that ranks the models where accuracy ties
            # on small folds, along the path from the empty model up, so that the 1-SE
            # rule can reach the sparsest models
            sparse = QuadraticLogisticRegressionCV(Cs=l1_grid(train, y_train), penalty="l1",
                                                   cv=3, scoring="neg_log_loss")
            models = {"dense": QuadraticLogisticRegression(), "l1": sparse,
                      "relaxed": clone(sparse).set_params(relax=True, relax_C=RELAX_CS)}
            scores = {}
            for kind, model in models.items():
                progress(f"{name} seed {seed}: {kind}")
                # (accuracy: the CV estimator's own score is its scoring's)
                scores[kind] = 100 * accuracy_score(y_test, model.fit(train, y_train).predict(test))
            sparser = _one_standard_error(models["l1"], train, y_train)
            d = train.shape[1]
            pairs = lambda model: model.n_interactions_ / max(1, d * (d - 1) // 2)
            rows.append((name, seed, scores["dense"], scores["l1"], pairs(models["l1"]),
                         100 * accuracy_score(y_test, sparser.predict(test)), pairs(sparser),
                         scores["relaxed"], pairs(models["relaxed"])))
    table = pd.DataFrame(rows, columns=["dataset", "seed", "dense accuracy %", "l1 accuracy %",
                                        "share of pairs", "l1 1-SE accuracy %",
                                        "1-SE share of pairs", "relaxed accuracy %",
                                        "relaxed share of pairs"])
    lines = ["l1: 3-fold CV on the log-loss, 13 Cs from the empty model's up 3 decades; "
             f"relaxed: the same with relax=True (each C's pairs refitted with the L2 penalty "
             f"at each relax_C of {RELAX_CS}, the refits scored).", "", markdown_table(table), ""]
    for rule, accuracy, share in (("CV optimum", "l1 accuracy %", "share of pairs"),
                                  ("1-SE rule", "l1 1-SE accuracy %", "1-SE share of pairs"),
                                  ("Relaxed", "relaxed accuracy %", "relaxed share of pairs")):
        gap = float((table["dense accuracy %"] - table[accuracy]).mean())
        met = gap <= ACCURACY_PP and float(table[share].mean()) <= PAIR_SHARE
        lines.append(f"{rule}: mean accuracy loss {gap:.2f} pp (target <= {ACCURACY_PP}), mean "
                     f"share of pairs {table[share].mean():.3f} (target <= {PAIR_SHARE}): "
                     f"{'met' if met else 'NOT met'}.")
    return {"title": "Sparse Q on the UCI sets", "markdown": "\n".join(lines),
            "tables": {"sparse_q_uci": table}, "figures": []}


def constraints(*, output_dir, quick=False, repeats=None, datasets=None, device="auto",
                progress=print):
    """QLR's fit time with ``interaction_cst`` groups of growing size (best of ``repeats``)."""
    import pandas as pd

    n, d = (1000, 16) if quick else (5000, 40)
    X, y, _ = _planted(0, n, d, classification=True)
    rows = []
    for size in sorted({2, 4, 8, d // 2, d}):
        groups = [list(range(start, min(start + size, d))) for start in range(0, d, size)]
        allowed = sum(len(g) * (len(g) - 1) // 2 for g in groups)
        times = []
        for _ in range(repeats or 3):
            start = time.perf_counter()
            QuadraticLogisticRegression(quadratic_C=None, interaction_cst=groups,
                                        n_threads=1).fit(X, y)
            times.append(time.perf_counter() - start)
        progress(f"interaction_cst groups of {size}: {allowed} pairs, {min(times):.3f} s")
        rows.append((size, allowed, min(times)))
    table = pd.DataFrame(rows, columns=["group size", "allowed pairs", "fit seconds"])
    return {"title": "Interaction constraints: fit time against allowed pairs",
            "markdown": f"n={n}, d={d}, one thread.\n\n" + markdown_table(table),
            "tables": {"sparse_q_constraints": table}, "figures": []}


def path(*, output_dir, quick=False, repeats=None, datasets=None, device="auto", progress=print):
    """QuadraticLogisticRegressionCV's path on one training fold against one fit at its final C:
    after an untimed warm-up pair, medians of ``repeats`` (5) interleaved pairs and of their ratios."""
    import pandas as pd

    rows = []
    for n, d in ((500, 10), (2000, 20)) if quick else ((2000, 20), (5000, 30), (5000, 50)):
        X, y, _ = _planted(1, n, d, classification=True)
        Cs = np.logspace(-4, 4, 10)
        pairs = [_path_and_one_fit(X, y, Cs) for _ in range(1 + (repeats or 5))][1:]
        path_seconds, one, iterations = (np.median([p[k] for p in pairs]) for k in range(3))
        ratio = float(np.median([p[0] / p[1] for p in pairs]))
        progress(f"path n={n} d={d}: {path_seconds:.3f} s against {one:.3f} s")
        rows.append((n, d, path_seconds, one, ratio, int(iterations)))
    table = pd.DataFrame(rows, columns=["n", "d", "path seconds (10 Cs)", "one fit seconds",
                                        "ratio", "one fit iterations"])
    ratio = float(table["ratio"].max())
    return {"title": "QuadraticLogisticRegressionCV's path against one fit",
            "markdown": markdown_table(table) + f"\n\nMedians of {repeats or 5} interleaved "
            f"pairs after a warm-up pair. Largest ratio {ratio:.2f} (target <= "
            f"{PATH_RATIO}): {'met' if ratio <= PATH_RATIO else 'NOT met'}.",
            "tables": {"sparse_q_path": table}, "figures": []}


def _path_and_one_fit(X, y, Cs):
    """Seconds of the warm-started path over ``Cs`` and of one cold fit at ``Cs[-1]``, its iterations."""
    model = QuadraticLogisticRegression(quadratic_C=None, warm_start=True, n_threads=1)
    start = time.perf_counter()
    for _ in model._fit_path(X, y, None, Cs):
        pass
    path_seconds = time.perf_counter() - start
    start = time.perf_counter()
    single = QuadraticLogisticRegression(C=Cs[-1], quadratic_C=None, n_threads=1).fit(X, y)
    return path_seconds, time.perf_counter() - start, int(single.n_iter_[0])
