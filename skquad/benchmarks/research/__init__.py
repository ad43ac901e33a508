"""The paper reproductions and speed runs of ``python -m skquad.benchmarks``.

Suites of the benchmark command, not a library: each module follows the suite
contract of :mod:`skquad.benchmarks.__main__` (``run`` and/or ``speed``
returning a report section) and is run through the command
(``--suite paper001``, ``paper002``, ``speed``, ``speed-networks``,
``sdp-targets``, ``dask-scaling``, ``dask-models``, ``shap-speed``, ``sparse-q``).

``_paper001``
    Noel et al. (QNN/RPQNN): XOR, six clusters, the Table 4/5 analogues, the
    ReLinear divergence study of Fan et al., and the training-speed targets.
``_paper002``
    Bartan & Pilanci (SDP): planted network, UCI, vehicle, and the SDP solver
    speed targets.
``_qlr``
    QuadraticLogisticRegression's speed and memory targets.
``_layers``
    The quadratic layers' forward/backward speed and the storage table.
``_network_speed``
    The networks against scikit-learn's MLPs, float64 and float32.
``_sdp_targets``
    The SDP solver's targets: time, certified gap, peak memory.
``_dask_scaling``
    QuadraticLogisticRegression on Dask arrays of a local cluster.
``_dask_models``
    The SDP estimators and the networks' L-BFGS on Dask arrays of a local cluster.
``_shap_speed``
    The closed-form SHAP values of :mod:`skquad.inspection` against ``shap``.

They are written on skquad's public API only (the estimators, ``skquad.nn``,
``skquad.convex``, ``skquad.datasets``) plus the command's report helpers
(Markdown tables, matplotlib on the Agg backend), so that they keep working
when the internals change; ``tests/test_architecture.py`` checks it.
"""

__all__ = []
