"""What a :class:`~skquad._training.Trainer` is told and what it reports."""

import math
from dataclasses import dataclass, field

from ._schedules import SCHEDULES

__all__ = ["SOLVERS", "ParameterGroup", "TrainingConfig", "TrainingResult"]

SOLVERS = ("sgd", "adam", "lbfgs")


@dataclass
class ParameterGroup:
    """Parameters that share a learning-rate scale and penalties.

    Parameters
    ----------
    parameters : iterable of torch.nn.Parameter
    name : str, default="parameters"
        Used in error messages.
    learning_rate_scale : float, default=1.0
        Multiplies the configured learning rate for this group (sgd and adam;
        L-BFGS has no learning rate and ignores it).
    l1, l2 : float, default=0.0
        Penalty coefficients (see the package docstring for the scaling).
    """

    parameters: list
    name: str = "parameters"
    learning_rate_scale: float = 1.0
    l1: float = 0.0
    l2: float = 0.0

    def __post_init__(self):
        self.parameters = list(self.parameters)
        for attribute in ("learning_rate_scale", "l1", "l2"):
            value = getattr(self, attribute)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(
                    f"Parameter group {self.name!r}: {attribute} must be a finite "
                    f"non-negative number, got {value!r}."
                )


@dataclass
class TrainingConfig:
    """Optimizer and stopping settings (names and meaning follow MLPClassifier).

    ``learning_rate`` is the (initial) step size, MLPClassifier's
    ``learning_rate_init``; ``learning_rate_schedule`` is MLPClassifier's
    ``learning_rate`` ("constant", "invscaling", "adaptive", for sgd only) with
    ``power_t``. ``batch_size=None`` means ``min(200, n_samples)``
    (MLPClassifier's "auto"). ``n_threads="auto"`` chooses a CPU thread count
    from the work per step (:func:`~skquad._foundation._threads.choose_thread_count`); an
    int fixes it. ``stratify`` makes the early-stopping validation split
    stratified on ``y``; ``validation_required=False`` trains on every row, as
    without early stopping, where no validation split can be scored (a class
    of one sample, a split of zero weight) instead of refusing the data, for
    an estimator whose early stopping the user did not ask for by name;
    ``clip_validation_inputs`` clips its inputs to the
    range of the training part's rows of positive weight, as the estimator's
    ``clip_inputs`` clips at predict time. ``warn_on_max_iter`` emits MLPClassifier's
    ConvergenceWarning when ``max_iter`` runs out before the stopping rule
    fires. ``loss_growth_limit``: an epoch whose loss exceeds this many times
    ``max(best loss, loss at the start, 1)`` counts as divergence.
    ``lbfgs_ftol``, ``lbfgs_maxls`` and ``lbfgs_maxcor`` are passed to scipy when set;
    ``lbfgs_engine`` is the L-BFGS driver's ``engine`` ("scipy" or "compact").
    ``divergence_advice`` and ``convergence_advice`` are estimator-specific
    remedies appended to the warnings, naming the estimator's own parameters
    (the engine itself only suggests a smaller step for sgd and adam; input
    scaling is the estimator's to mention, since some standardize internally).
    ``learning_rate_name`` is the estimator's name of the step size, used in
    the divergence message.
    """

    solver: str = "adam"
    learning_rate: float = 1e-3
    learning_rate_schedule: str = "constant"
    power_t: float = 0.5
    batch_size: int | None = None
    tol: float = 1e-4
    n_iter_no_change: int = 10
    early_stopping: bool = False
    validation_required: bool = True
    validation_fraction: float = 0.1
    clip_validation_inputs: bool = False
    shuffle: bool = True
    momentum: float = 0.9
    nesterov: bool = True
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-8
    max_fun: int = 15000
    verbose: bool = False
    n_threads: int | str = "auto"
    stratify: bool = True
    warn_on_max_iter: bool = True
    loss_growth_limit: float = 1e4
    lbfgs_ftol: float | None = None
    lbfgs_maxls: int | None = None
    lbfgs_maxcor: int | None = None
    # The numpy engine: L-BFGS-B's iterates (Moré and Thuente's search, the same pairs) at
    # a fraction of setulb's bookkeeping, which is most of an iteration on small data.
    lbfgs_engine: str = "compact"
    learning_rate_name: str = "learning_rate_init"
    divergence_advice: str = ""
    convergence_advice: str = ""

    def __post_init__(self):
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}.")
        if self.learning_rate_schedule not in SCHEDULES:
            raise ValueError(
                f"learning_rate must be one of {SCHEDULES}, got "
                f"{self.learning_rate_schedule!r}."
            )
        if not self.loss_growth_limit > 1:
            raise ValueError(
                f"loss_growth_limit must be > 1, got {self.loss_growth_limit!r}."
            )


@dataclass
class TrainingResult:
    """What the ``fit``/``partial_fit`` calls of a :class:`Trainer` produced.

    The lists and counters cover every call of the trainer so far; ``loss``
    is the last epoch's (L-BFGS: the final) objective, MLPClassifier's
    ``loss_``; ``diverged``, ``converged`` and ``stopped_by_callback`` describe
    the last call; ``learning_rate`` is the schedule's current rate and
    ``n_samples_seen`` MLPClassifier's ``t_``.
    """

    loss_curve: list = field(default_factory=list)
    validation_scores: list = field(default_factory=list)
    best_loss: float = math.inf
    best_validation_score: float | None = None
    loss: float | None = None
    n_iter: int = 0
    n_steps: int = 0
    n_samples_seen: int = 0
    learning_rate: float | None = None
    converged: bool = False
    diverged: bool = False
    stopped_by_callback: bool = False
