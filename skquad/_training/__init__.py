"""The one training package of every torch-trained skquad model.

The estimators (:class:`~skquad.QuadraticLogisticRegression`,
:class:`~skquad.QNNClassifier`, :class:`~skquad.RPQNNClassifier`,
:class:`~skquad.BackpropQuantizedClassifier`) describe *what* to train; this
package does the training, with one contract for all of them: batches drawn
with a local generator, the optimizers (MLPClassifier's SGD and Adam, scipy's
L-BFGS-B), learning-rate schedules, penalties, the stopping rule, the
divergence guard, ConvergenceWarnings, progress lines, scikit-learn callbacks,
device and thread handling (decided by the foundation's runtime policy,
:mod:`skquad._foundation._runtime`).

API
---
``ParameterGroup``
    A set of parameters sharing optimizer settings. ReLinear (Fan et al.)
    puts the quadratic parameters of a network in their own group with a
    smaller ``learning_rate_scale`` (ReLinear-sg) or a larger ``l1``/``l2``
    (ReLinear-sw).

``Trainer(module, loss_function, parameter_groups=None, config=None, ...)``
    ``module(X_batch) -> outputs`` is any :class:`torch.nn.Module`;
    ``loss_function(outputs, y_batch) -> per-sample losses`` (shape ``(n,)``,
    no reduction). Every trainable parameter of the module takes part; the ones
    not named in ``parameter_groups`` form a default group. Parameters with
    ``requires_grad=False`` (e.g. a fixed second layer) are left alone.
    A non-finite model output counts as divergence even where the loss
    stays finite.

    ``X`` may be a scipy sparse matrix: it becomes :class:`SparseRows`, which
    the module (and ``loss_and_gradient``) must accept.

    ``fit`` (until a stopping rule, a callback or ``max_iter``), ``partial_fit``
    (one epoch) and ``restart`` (a path's fits share one trainer) return or reset
    ``history``, a :class:`TrainingResult` accumulated over the calls.

The objective of one batch is, as in scikit-learn's MLP::

    sum_i w_i loss_i / sum_i w_i  +  (0.5 * l2 * ||theta||^2 + l1 * ||theta||_1) / sum_i w_i

with the penalties taken per parameter group. Dividing the penalty by the
batch's total sample weight makes ``sample_weight=k`` equivalent to repeating a
sample ``k`` times when batches cover the whole data set.

Stopping and warnings (MLPClassifier's rules and words)
--------------------------------------------------------
Stochastic solvers stop when the training loss (with ``early_stopping``, the
validation score) has not improved by ``tol`` for *more than*
``n_iter_no_change`` epochs; ``learning_rate_schedule="adaptive"`` divides the
rate by 5 instead, until it is at most 1e-6. Running out of ``max_iter``
warns "Stochastic Optimizer: Maximum iterations (N) reached and the
optimization hasn't converged yet."; L-BFGS warns with scikit-learn's
"lbfgs failed to converge" text, naming ``max_iter`` or ``max_fun``, whichever
stopped it. Every warning goes through :func:`skquad._foundation._reporting.warn_user`
(it points at the user's line) and every verbose line through
:func:`skquad._foundation._reporting.progress_line` (``elapsed`` counts from the start of
the ``fit`` call).

Callbacks
---------
Inside :func:`reporting_epochs` every epoch (L-BFGS: iteration) is a
``sklearn.callback`` subtask (:mod:`._callbacks`); a hook returning True stops
training after it, without a ConvergenceWarning (``TrainingResult.stopped_by_callback``).

Fast path
---------
The parameters live in one flat buffer (:mod:`._parameters`). A model that
knows its own backward pass (Noel et al.'s Algorithms 1 and 2 written out, or
quadratic logistic regression's ``X^T diag(r) X`` gradient) can skip autograd
entirely by passing
``loss_and_gradient(X_batch, y_batch, w_batch) -> loss``: it must return the
0-d tensor ``sum_i w_batch_i * loss_i`` (``w_batch`` is already normalised to
sum to one; a model may add its own penalty) and write the gradient of that
loss into the parameters' ``.grad`` tensors (zeroed by the engine before each
call; writing with ``out=`` is fine). It is only called for training steps;
``module`` still serves validation and the divergence recovery. The returned
loss must be NaN or infinite when any model output is (the divergence guard
relies on it).

Full-batch L-BFGS can go one step further. A ``loss_and_gradient`` with an
attribute ``flat_objective(X, y, w) -> objective or None`` offers the whole
objective (its penalty included) on the flat parameter vector:
``objective(theta) -> (loss, gradient)`` in numpy, float64 in and out, in the
flat buffer's layout. ``X`` is the rows' tensor, or rows gathered by chunks
(``skquad._foundation._rows.OrderedRows``) as the fit was given them, where
they are on the CPU in the trainer's dtype: their tensor is gathered only if
the objective declines them (None) or the divergence recovery reads them.
The L-BFGS fit then calls it instead of writing each point into the module
(the module gets the best point at the end, and each point a callback
reads); quadratic logistic regression's packed CPU objective
(``skquad.nn.quadratic_form.packed_logistic_objective``) is one. A module
that holds a parameter in rescaled coordinates (the packed symmetric ``Q``)
names the scales with ``lbfgs_gradient_scales() -> {name: tensor}``: the
gradient test divides by them, so that ``tol`` reads the unscaled gradient.

Divergence (:mod:`._divergence`) stops training, puts back the better of the best and the
starting parameters and sets ``TrainingResult.diverged``: the module never holds NaN or
blown-up weights after training.
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
