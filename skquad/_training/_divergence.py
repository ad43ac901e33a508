"""The divergence guard of the training engine.

When an epoch's loss or the parameters stop being finite, or the loss grows
more than ``loss_growth_limit`` times above the larger of its best value, the
loss at the start and 1, training stops, the better (on the training data) of
the best parameters seen so far and the starting ones is put back, and a
:class:`~sklearn.exceptions.ConvergenceWarning` says what to try, in the
estimator's own parameter names (``TrainingConfig.divergence_advice``).
"""

import math

from sklearn.exceptions import ConvergenceWarning

from .._foundation._reporting import warn_user
from .._foundation._torch_utils import all_finite

__all__ = ["DivergenceGuard", "NonFiniteObjective", "divergence_message"]


class NonFiniteObjective(Exception):
    """Raised inside the L-BFGS objective at a point where the loss overflows."""


def divergence_message(config):
    """The ConvergenceWarning text for a diverged fit under ``config``."""
    remedies = []
    if config.solver != "lbfgs":
        remedies.append(f"a smaller {config.learning_rate_name} (now {config.learning_rate:g})")
    if config.divergence_advice:
        remedies.append(config.divergence_advice)
    listed = remedies[0] if len(remedies) == 1 else ", ".join(remedies[:-1]) + " or " + remedies[-1]
    return (
        "Training diverged: the loss or the parameters became NaN or infinite, or "
        f"the loss grew more than {config.loss_growth_limit:g} times above its best "
        "value. The better of the best parameters seen and the starting ones was "
        f"restored. Try {listed}."
    )


class DivergenceGuard:
    """Snapshots (best, start), the growth test and the recovery of one trainer.

    Parameters
    ----------
    config : TrainingConfig
        ``loss_growth_limit`` and the warning's remedies.
    parameters : torch.Tensor
        The trainer's flat parameter buffer (read and restored in place).
    """

    def __init__(self, config, parameters):
        self.config = config
        self.parameters = parameters
        self.best = parameters.detach().clone()
        self.start = self.best.clone()
        self.reference_loss = None

    def mark_start(self):
        """The current parameters are the start of this call (a candidate on recovery)."""
        self.start = self.parameters.detach().clone()

    def remember_best(self):
        self.best.copy_(self.parameters)

    def restore_best(self):
        self.parameters.copy_(self.best)

    def observe_first_loss(self, loss):
        """Record the first batch's loss: the scale against which growth is measured."""
        if self.reference_loss is None:
            self.reference_loss = float(loss)

    def diverged(self, loss, best_loss):
        """Non-finite loss or parameters, or a loss orders of magnitude too large.

        The growth is measured against the larger of ``best_loss``, the loss
        at the start (the first batch) and 1: a loss that has grown
        ``loss_growth_limit`` times above all of them is a blow-up on its way
        to overflow, never a plateau.
        """
        if not (math.isfinite(loss) and all_finite(self.parameters)):
            return True
        scale = max([1.0, *(v for v in (best_loss, self.reference_loss) if v is not None and math.isfinite(v))])
        return loss > self.config.loss_growth_limit * scale

    def recover(self, full_loss):
        """Put back the better of the best and the starting parameters; returns its loss.

        An epoch can end with a finite but enormous loss just before the
        overflow, so the "best" snapshot alone may be a blown-up network: both
        candidates are scored by ``full_loss()`` (the weighted training loss
        of the current parameters, inf for non-finite outputs) and the lower
        one wins.
        """
        best_value, chosen = math.inf, self.start
        for candidate in (self.best, self.start):
            self.parameters.copy_(candidate)
            value = full_loss()
            if value < best_value:
                best_value, chosen = value, candidate
        self.parameters.copy_(chosen)
        return best_value

    def warn(self):
        warn_user(divergence_message(self.config), ConvergenceWarning)
