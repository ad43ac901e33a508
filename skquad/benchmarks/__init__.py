"""Benchmarks: skquad's estimators beside scikit-learn's on your data or the UCI datasets.

From Python, :func:`run_benchmark` runs the protocol (repeated stratified
splits, one preprocessing pipeline, accuracy, fit time and parameter count per
fit) on your own ``(X, y)``, on scikit-learn's bundled datasets or on the UCI
datasets, with your estimators beside the defaults, and returns a
:class:`BenchmarkResult` (DataFrames, a Markdown report, plots).

From the shell, ``python -m skquad.benchmarks`` runs one of eight suites and
writes ``report.md``, CSV tables and PNG plots to ``--output``:

uci (default)
    Every skquad estimator and the baselines a user would otherwise pick
    (LogisticRegression, PolynomialFeatures(2) + LogisticRegression,
    MLPClassifier, SVC with RBF and degree-2 polynomial kernels,
    HistGradientBoostingClassifier) on the 13 UCI datasets; ``--quick`` runs it
    on scikit-learn's bundled datasets.
regression
    skquad's regressors against Ridge, PolynomialFeatures(2) + Ridge,
    MLPRegressor, SVR, KernelRidge(kernel="poly", degree=2) and
    HistGradientBoostingRegressor on the seven regression sets of
    :func:`skquad.datasets.load_regression` (3 x 5-fold cross-validation, R²,
    RMSE, fit time, parameters); ``--quick`` runs it on scikit-learn's diabetes.
paper001
    The experiments of Noel et al. (QNN/RPQNN): XOR, six clusters, the
    Table 4/5 analogues, and the ReLinear divergence study of Fan et al.
paper002
    The experiments of Bartan & Pilanci (SDP): planted network, UCI, vehicle.
speed
    The speed targets of the estimators, measured side by side.
speed-networks
    The networks' epoch time against MLPClassifier and MLPRegressor, in
    float64 and float32.
sdp-targets
    The SDP solver's time, certified gap and peak memory per case
    (``--datasets`` picks the cases).
dask-scaling
    QuadraticLogisticRegression on Dask arrays of a local cluster: memory,
    agreement with the in-memory fit, 1 against 2 workers, dask-ml.
dask-models
    The SDP estimators and QNN's L-BFGS on Dask arrays: client memory,
    agreement with the in-memory fit, 1 against 2 workers.

The paper reproductions and the speed runs are in
``skquad.benchmarks.research``, on skquad's public API.

All need the ``bench`` extra (pandas and matplotlib): ``pip install 'skquad[bench]'``;
without it they say so instead of failing on a missing import.
"""

from ._api import BenchmarkResult, run_benchmark

__all__ = ["BenchmarkResult", "run_benchmark"]
