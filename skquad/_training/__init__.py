"""The one training package of every torch-trained skquad model.

The estimators describe *what* to train; this package trains, with one contract
for all: batches from a local generator, the optimizers (MLPClassifier's SGD and
Adam, full-batch L-BFGS), schedules, penalties, stopping, the divergence guard,
warnings, progress lines, callbacks, devices and threads (decided by
:mod:`skquad._foundation._runtime`).

``Trainer(module, loss_function, parameter_groups=None, config=None, ...)``
trains every trainable parameter of ``module`` (those not in a
:class:`ParameterGroup`, e.g. ReLinear's quadratic parameters, form a default
group) on ``loss_function(outputs, y_batch) -> per-sample losses``. ``X`` may be
scipy sparse (:class:`SparseRows`). ``fit``, ``partial_fit`` (one epoch) and
``restart`` accumulate ``history``, a :class:`TrainingResult`. A batch's
objective is, as in scikit-learn's MLP::

    sum_i w_i loss_i / sum_i w_i  +  (0.5 * l2 * ||theta||^2 + l1 * ||theta||_1) / sum_i w_i

so ``sample_weight=k`` repeats a sample ``k`` times when batches cover the data.
Stopping, warnings and their words are MLPClassifier's (``tol`` for more than
``n_iter_no_change`` epochs; ``"adaptive"`` divides the rate by 5 down to 1e-6);
warnings go through :func:`skquad._foundation._reporting.warn_user`, verbose lines
through :func:`skquad._foundation._reporting.progress_line`. Every epoch (L-BFGS:
iteration) is a ``sklearn.callback`` subtask (:mod:`._callbacks`); a hook
returning True stops training without a ConvergenceWarning.

Fast path: a model that knows its backward pass passes
``loss_and_gradient(X_batch, y_batch, w_batch) -> loss``, the 0-d tensor
``sum_i w_batch_i * loss_i`` (``w_batch`` sums to one), writing the gradient into
the parameters' ``.grad`` (zeroed before each call); it must return NaN or inf
when any output is. An attribute ``flat_objective(X, y, w) -> objective or None``
offers full-batch L-BFGS the whole penalised objective on the flat parameter
buffer (:mod:`._parameters`) in float64 numpy, ``objective(theta) -> (loss,
gradient)``; ``X`` may be :class:`skquad._foundation._rows.OrderedRows`. A module
holding a parameter rescaled names the scales with ``lbfgs_gradient_scales()``,
so that ``tol`` reads the unscaled gradient.

Divergence (:mod:`._divergence`) stops training and puts back the better of the best
and the starting parameters (``TrainingResult.diverged``).
"""

from ._callbacks import SubtaskReporter, callback_data, reporting_epochs
from ._config import SOLVERS, ParameterGroup, TrainingConfig, TrainingResult
from ._divergence import DivergenceGuard
from ._lbfgs import lbfgs_convergence_message, minimize_lbfgs
from ._optimizers import AdamOptimizer, SGDOptimizer, make_optimizer
from ._schedules import SCHEDULES, LearningRateSchedule
from ._sparse import SparseRows, is_sparse_rows
from ._trainer import Trainer

__all__ = [
    "AdamOptimizer",
    "DivergenceGuard",
    "SGDOptimizer",
    "callback_data",
    "make_optimizer",
    "reporting_epochs",
    "SCHEDULES",
    "SOLVERS",
    "LearningRateSchedule",
    "ParameterGroup",
    "SparseRows",
    "SubtaskReporter",
    "Trainer",
    "TrainingConfig",
    "TrainingResult",
    "is_sparse_rows",
    "lbfgs_convergence_message",
    "minimize_lbfgs",
]
