"""The stochastic update rules of the training engine, on one flat parameter buffer.

scikit-learn's MLPClassifier keeps its rules in ``_stochastic_optimizers.py``;
these are the same rules (SGD with momentum or Nesterov's momentum, Adam with
the bias correction folded into the step), written as in-place operations on
the :class:`~skquad._training.Trainer`'s flat buffers so that a step costs a
handful of fused tensor operations and allocates nothing.

``learning_rate`` is a float, or a per-element tensor where parameter groups
scale their step differently (ReLinear's quadratic groups).

``state()`` / ``load_state()`` move a rule's running state (momentum buffers,
Adam's moments and step count) to and from plain numpy, so that a saved model
continues training exactly as the live one would: no torch object
enters a pickle.
"""

import functools
import math

import numpy as np
import torch

__all__ = ["AdamOptimizer", "SGDOptimizer", "make_optimizer"]


class SGDOptimizer:
    """MLPClassifier's SGD: ``v <- momentum v - lr g``; ``theta += v`` (Nesterov: ``momentum v - lr g``).

    Parameters
    ----------
    parameters : torch.Tensor
        The flat parameter buffer, updated in place.
    momentum : float
    nesterov : bool
    """

    def __init__(self, parameters, momentum=0.9, nesterov=True):
        self.parameters = parameters
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self.velocity = torch.zeros_like(parameters)

    def step(self, gradient, learning_rate):
        """One update with ``gradient`` (same shape as the parameters)."""
        theta, velocity = self.parameters, self.velocity
        vector_rate = isinstance(learning_rate, torch.Tensor)
        velocity.mul_(self.momentum)
        if vector_rate:
            velocity.addcmul_(gradient, learning_rate, value=-1.0)
        else:
            velocity.add_(gradient, alpha=-learning_rate)
        if self.nesterov:
            theta.add_(velocity, alpha=self.momentum)
            if vector_rate:
                theta.addcmul_(gradient, learning_rate, value=-1.0)
            else:
                theta.add_(gradient, alpha=-learning_rate)
        else:
            theta.add_(velocity)

    def state(self):
        """The momentum buffer as a numpy array (a copy, on the CPU)."""
        return {"velocity": _to_numpy(self.velocity)}

    def load_state(self, state):
        """Continue from :meth:`state` (the buffer keeps its device and dtype)."""
        _load_into(self.velocity, state["velocity"], "velocity")


class AdamOptimizer:
    """MLPClassifier's Adam (Kingma & Ba): bias-corrected step ``lr_t m / (sqrt(v) + eps)``.

    Parameters
    ----------
    parameters : torch.Tensor
        The flat parameter buffer, updated in place.
    beta_1, beta_2, epsilon : float
    """

    def __init__(self, parameters, beta_1=0.9, beta_2=0.999, epsilon=1e-8):
        self.parameters = parameters
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.m = torch.zeros_like(parameters)
        self.v = torch.zeros_like(parameters)
        self._denominator = None  # the unfused step's workspace, made on first use
        self.t = 0
        # torch's fused Adam kernel: one pass over the buffers per step where
        # the loop below makes seven (the step is a sizeable share of a small
        # network's training step, mostly memory traffic).
        self._fused = _has_fused_adam(parameters.device.type, parameters.dtype)
        self._step_count = torch.zeros((), dtype=torch.float32, device=parameters.device)
        self._runs = None

    def __getstate__(self):
        # The cached runs are views: a copy makes its own from its own buffers.
        return {**self.__dict__, "_runs": None}

    def _constant_rate_runs(self, gradient, learning_rate):
        """``(rate, [parameters], [gradient], [m], [v])`` per run of elements that share a rate
        (each parameter group's slice of the flat buffer), found once per rate vector."""
        cached = self._runs
        if cached is not None and cached[0] is gradient and (
            cached[1] is learning_rate
            or (not isinstance(learning_rate, torch.Tensor) and cached[1] == learning_rate)
        ):
            return cached[2]
        if isinstance(learning_rate, torch.Tensor):
            rates = learning_rate.detach().cpu().numpy()
            edges = [0, *(np.flatnonzero(np.diff(rates)) + 1).tolist(), rates.size]
            bounds = [(a, b, float(rates[a])) for a, b in zip(edges[:-1], edges[1:])]
        else:
            bounds = [(0, self.parameters.numel(), float(learning_rate))]
        runs = [
            (rate, [self.parameters[a:b]], [gradient[a:b]], [self.m[a:b]], [self.v[a:b]])
            for a, b, rate in bounds
        ]
        self._runs = (gradient, learning_rate, runs)
        return runs

    def step(self, gradient, learning_rate):
        """One update with ``gradient`` (same shape as the parameters)."""
        self.t += 1
        if self._fused:
            # The kernel's step is theta -= lr / (1 - beta_1^t) m / (sqrt(v) / sqrt(1 - beta_2^t) + eps');
            # with eps' = eps / sqrt(1 - beta_2^t) that is scikit-learn's
            # lr sqrt(1 - beta_2^t) / (1 - beta_1^t) m / (sqrt(v) + eps).
            root_correction = math.sqrt(1.0 - self.beta_2**self.t)
            self._step_count.fill_(self.t)
            for rate, parameters, gradients, m, v in self._constant_rate_runs(gradient, learning_rate):
                torch._fused_adam_(
                    parameters, gradients, m, v, [], [self._step_count], lr=rate, beta1=self.beta_1,
                    beta2=self.beta_2, weight_decay=0.0, eps=self.epsilon / root_correction, amsgrad=False,
                    maximize=False,
                )
            return
        if self._denominator is None:
            self._denominator = torch.zeros_like(self.parameters)
        m, v, denominator = self.m, self.v, self._denominator
        m.mul_(self.beta_1).add_(gradient, alpha=1.0 - self.beta_1)
        v.mul_(self.beta_2).addcmul_(gradient, gradient, value=1.0 - self.beta_2)
        # scikit-learn's learning_rate_t = lr sqrt(1 - beta_2^t) / (1 - beta_1^t)
        correction = math.sqrt(1.0 - self.beta_2**self.t) / (1.0 - self.beta_1**self.t)
        torch.sqrt(v, out=denominator).add_(self.epsilon)
        if isinstance(learning_rate, torch.Tensor):
            denominator.div_(learning_rate)
            self.parameters.addcdiv_(m, denominator, value=-correction)
        else:
            self.parameters.addcdiv_(m, denominator, value=-learning_rate * correction)

    def state(self):
        """The moments (numpy copies, on the CPU) and the step count of the bias correction."""
        return {"m": _to_numpy(self.m), "v": _to_numpy(self.v), "t": self.t}

    def load_state(self, state):
        """Continue from :meth:`state` (the buffers keep their device and dtype)."""
        _load_into(self.m, state["m"], "m")
        _load_into(self.v, state["v"], "v")
        self.t = int(state["t"])


@functools.cache
def _has_fused_adam(device_type, dtype):
    """Whether this torch has the fused Adam kernel for the device (CPU: torch >= 2.4)."""
    if not hasattr(torch, "_fused_adam_"):
        return False
    try:
        tensors = [[torch.zeros(2, dtype=dtype, device=device_type)] for _ in range(4)]
        step = [torch.ones((), dtype=torch.float32, device=device_type)]
        torch._fused_adam_(
            *tensors, [], step, lr=1e-3, beta1=0.9, beta2=0.999, weight_decay=0.0, eps=1e-8,
            amsgrad=False, maximize=False,
        )
    except (NotImplementedError, RuntimeError):
        return False
    return True


def _to_numpy(buffer):
    return buffer.detach().cpu().numpy().copy()


def _load_into(buffer, values, name):
    values = np.require(values, requirements=["C", "W"])  # torch cannot wrap read-only arrays
    if values.shape != tuple(buffer.shape):
        raise ValueError(
            f"The saved optimizer state {name!r} has shape {values.shape}, but the network has "
            f"{tuple(buffer.shape)} parameters."
        )
    buffer.copy_(torch.from_numpy(values))


def make_optimizer(config, parameters):
    """The update rule ``config.solver`` names, on the flat buffer ``parameters``.

    Parameters
    ----------
    config : TrainingConfig
        ``solver`` ("sgd" or "adam") and its settings.
    parameters : torch.Tensor

    Returns
    -------
    optimizer : SGDOptimizer or AdamOptimizer
    """
    if config.solver == "sgd":
        return SGDOptimizer(parameters, config.momentum, config.nesterov)
    if config.solver == "adam":
        return AdamOptimizer(parameters, config.beta_1, config.beta_2, config.epsilon)
    raise ValueError(f"No stochastic update rule for solver={config.solver!r}.")
