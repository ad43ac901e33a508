"""scikit-learn's callback API (``sklearn.callback``) inside the training loop.

The estimator owns the root context (``self._callback_fit_ctx``, created during
fit); the :class:`~skquad._training.Trainer` makes one subtask per epoch
(stochastic solvers) or per iteration (L-BFGS, as scikit-learn's
``LogisticRegression`` does), calls ``on_fit_task_begin``/``on_fit_task_end``
on it and stops training when a callback asks to.
"""

from contextlib import contextmanager

__all__ = ["SubtaskReporter", "callback_data", "reporting_epochs"]


def callback_data(X, y, sample_weight=None):
    """The ``X``, ``y`` and ``metadata`` every hook receives (one rule for every estimator).

    ``y`` is as the user gave it (labels, not class indices), so that a
    ``ScoringMonitor`` scores the fitted estimator on it; the sample weights
    travel as metadata, as scikit-learn's ``LogisticRegression`` passes them.
    """
    metadata = None if sample_weight is None else {"sample_weight": sample_weight}
    return dict(X=X, y=y, metadata=metadata)


@contextmanager
def reporting_epochs(trainer, estimator, X, y, sample_weight=None, *, fitted_attributes=None):
    """Report ``trainer``'s epochs (L-BFGS iterations) in the block to ``estimator``'s fit.

    The one way a torch-trained estimator attaches scikit-learn's callbacks:
    the estimator's root context (``_callback_fit_ctx``, None when no
    callback is set) for the duration of one ``fit``/``partial_fit`` call;
    the trainer is detached on leaving, so that a trainer kept between
    ``partial_fit`` calls holds no reference to the estimator, the callbacks
    or the data.

    Parameters
    ----------
    trainer : Trainer
    estimator : estimator
    X, y, sample_weight : the call's data (see :func:`callback_data`)
    fitted_attributes : callable, default=None
        ``fitted_attributes() -> dict``: what a copy of the estimator needs to
        predict with the trainer's current parameters.
    """
    trainer.attach_callbacks(
        getattr(estimator, "_callback_fit_ctx", None),
        estimator=estimator,
        fitted_attributes=fitted_attributes,
        callback_data=callback_data(X, y, sample_weight),
    )
    try:
        yield trainer
    finally:
        trainer.detach_callbacks()


class SubtaskReporter:
    """Opens and closes the per-epoch (per-iteration) subtasks of one fit.

    Parameters
    ----------
    context : sklearn.callback CallbackContext or None
        The fit's root context; None, or a context without callbacks, turns
        every method into a no-op.
    estimator : estimator
        Passed to the hooks.
    task_name : str
        "epoch" or "lbfgs-iter".
    X, y, metadata : optional
        The training data as the user gave it (after validation), passed to
        the hooks (``ScoringMonitor`` scores the fitted estimator on them).
    fitted_attributes : callable, optional
        ``fitted_attributes() -> dict`` of fitted attributes that make a copy
        of the estimator predict with the current parameters (scikit-learn's
        ``reconstruction_attributes``).
    """

    def __init__(self, context, estimator=None, task_name="epoch", *, X=None, y=None,
                 metadata=None, fitted_attributes=None):
        if context is not None and not getattr(context, "_callbacks", True):
            # No callback on the estimator, none propagated to it: no hook
            # reads this fit's subtasks, so none is made (each copies the parameters).
            context = None
        self.context = context
        self.estimator = estimator
        self.task_name = task_name
        self._hook_data = dict(X=X, y=y, metadata=metadata)
        self._fitted_attributes = fitted_attributes
        self._current = None

    @property
    def active(self):
        return self.context is not None

    def begin(self):
        """Start the next subtask."""
        if self.context is None:
            return
        self._current = self.context.subcontext(task_name=self.task_name)
        # The model as the subtask starts (LogisticRegression passes it too).
        self._current.call_on_fit_task_begin(
            estimator=self.estimator,
            reconstruction_attributes=self._fitted_attributes,
            **self._hook_data,
        )

    def end(self):
        """End the current subtask; True when a callback asks to stop."""
        if self._current is None:
            return False
        current, self._current = self._current, None
        return bool(
            current.call_on_fit_task_end(
                estimator=self.estimator,
                reconstruction_attributes=self._fitted_attributes,
                **self._hook_data,
            )
        )

    def close(self):
        """End a subtask that was begun but never ran (scipy's last iteration)."""
        if self._current is not None:
            current, self._current = self._current, None
            current.call_on_fit_task_end(estimator=self.estimator)
