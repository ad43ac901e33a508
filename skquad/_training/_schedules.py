"""Learning-rate schedules with :class:`~sklearn.neural_network.MLPClassifier`'s meaning.

``learning_rate`` in MLPClassifier (``sklearn/neural_network/_stochastic_optimizers.py``):

* ``"constant"``: the rate stays ``learning_rate_init``.
* ``"invscaling"``: after every epoch the rate becomes
  ``learning_rate_init / (t + 1) ** power_t`` where ``t`` is the number of
  training samples seen so far (MLP's ``t_``).
* ``"adaptive"``: the rate stays ``learning_rate_init`` while the stopping
  criterion keeps improving; when it would stop training (no improvement for
  more than ``n_iter_no_change`` epochs) the rate is divided by 5 instead and
  the count starts again, until the rate is at most 1e-6.

Schedules apply to plain SGD only, as in MLPClassifier; Adam always starts
each step from ``learning_rate_init`` (its own bias correction aside).
"""

SCHEDULES = ("constant", "invscaling", "adaptive")

__all__ = ["SCHEDULES", "LearningRateSchedule"]

# MLPClassifier's floor of the adaptive schedule and its divisor.
_ADAPTIVE_FLOOR = 1e-6
_ADAPTIVE_DIVISOR = 5.0


class LearningRateSchedule:
    """The current learning rate of a stochastic solver.

    Parameters
    ----------
    learning_rate_init : float
    schedule : {"constant", "invscaling", "adaptive"}, default="constant"
    power_t : float, default=0.5
    solver : {"sgd", "adam"}, default="sgd"
        Only "sgd" follows the schedule (MLPClassifier's rule).

    Attributes
    ----------
    learning_rate : float
        The rate of the next step.
    """

    def __init__(self, learning_rate_init, schedule="constant", power_t=0.5, solver="sgd"):
        if schedule not in SCHEDULES:
            raise ValueError(
                f"learning_rate must be one of {SCHEDULES}, got {schedule!r}."
            )
        self.learning_rate_init = float(learning_rate_init)
        self.schedule = schedule if solver == "sgd" else "constant"
        self.power_t = float(power_t)
        self.learning_rate = self.learning_rate_init

    def epoch_ends(self, samples_seen):
        """Update after an epoch; ``samples_seen`` counts every epoch's samples."""
        if self.schedule == "invscaling":
            self.learning_rate = self.learning_rate_init / (samples_seen + 1) ** self.power_t

    def should_stop(self):
        """Called when the stopping rule fires; False means "go on, rate lowered".

        Returns
        -------
        stop : bool
        reason : str
            What happened, for the verbose output (MLPClassifier's words).
        """
        if self.schedule != "adaptive":
            return True, "Stopping."
        if self.learning_rate <= _ADAPTIVE_FLOOR:
            return True, "Learning rate too small. Stopping."
        self.learning_rate /= _ADAPTIVE_DIVISOR
        return False, f"Setting learning rate to {self.learning_rate:f}"
