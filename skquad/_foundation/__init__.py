"""The foundation: what every room of skquad may use, and which uses no other room.

Runtime policy (``_runtime``: dtype, device, generators, threads, memory of one
fit), threads and denormals (``_threads``), memory (``_memory``), warnings and
progress lines (``_reporting``), GIL-free BLAS calls (``_blas``), canonical
training rows (``_rows``), atomic fits (``_atomic``), torch helpers
(``_torch_utils``), input ranges (``_input_range``), target scaling
(``_target_scaling``), the numpy L-BFGS engine (``_lbfgs_compact``), the
estimator at the end of a pipeline (``_pipeline``), the CV splitters'
metadata routing (``_cv_routing``) and the estimators' shared docstring entries
(``_docstrings``). Import from the modules; this package
re-exports nothing, so importing one module does not import torch.
"""
