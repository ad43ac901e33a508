"""The trainer's parameters as one flat buffer, with per-group step scales and penalties.

All trainable parameters of a module become views into one flat tensor, and
their ``.grad`` views into one flat gradient tensor, so that an optimizer step,
a penalty and a snapshot are each a handful of fused tensor operations
whatever the number of layers, and nothing is allocated per step. Parameter
groups (:class:`~skquad._training.ParameterGroup`) keep their own step scale
and ``l1``/``l2`` penalties: a scalar where every group agrees (the common
case, the cheapest operations), else a per-element vector built once.
"""

import torch

from ._config import ParameterGroup

__all__ = ["FlatParameters"]


class FlatParameters:
    """Re-seat ``module``'s trainable parameters as views of one flat buffer.

    Parameters
    ----------
    module : torch.nn.Module
        Already on ``device`` and in ``dtype``; the values are kept.
    parameter_groups : list of ParameterGroup
        Parameters not named in a group form a default group ("other");
        ``requires_grad=False`` parameters are left alone.
    device : torch.device
    dtype : torch.dtype

    Attributes
    ----------
    values, gradient : torch.Tensor of shape (size,)
    slices : dict of str to slice
        Each group's range in the buffer.
    size : int
    """

    def __init__(self, module, parameter_groups, *, device, dtype):
        self.device, self.dtype = device, dtype
        trainable = [p for p in module.parameters() if p.requires_grad]
        seen = {}
        groups = []
        for group in parameter_groups:
            members = []
            for parameter in group.parameters:
                if not parameter.requires_grad:
                    continue
                if id(parameter) in seen:
                    raise ValueError(
                        f"A parameter appears in both groups {seen[id(parameter)]!r} "
                        f"and {group.name!r}."
                    )
                seen[id(parameter)] = group.name
                members.append(parameter)
            groups.append((group, members))
        missing = [p for p in trainable if id(p) not in seen]
        unknown = set(seen) - {id(p) for p in trainable}
        if unknown:
            raise ValueError(
                "parameter_groups name parameters that are not trainable parameters "
                "of the module (move the module to its device and dtype first)."
            )
        if missing:
            groups.append((ParameterGroup([], name="other"), missing))
        if not any(members for _, members in groups):
            raise ValueError("The module has no trainable parameters.")

        total = sum(p.numel() for _, members in groups for p in members)
        options = dict(device=device, dtype=dtype)
        self.values = torch.empty(total, **options)
        self.gradient = torch.zeros(total, **options)
        scales, l1s, l2s, sizes = [], [], [], []
        offset = 0
        self.slices = {}
        names = {id(p): name for name, p in module.named_parameters()}
        # (name, offset) of every parameter: how bind() re-seats a copy's module.
        self.layout = []
        for group, members in groups:
            start = offset
            for parameter in members:
                size = parameter.numel()
                view = self.values[offset : offset + size].view_as(parameter)
                view.copy_(parameter.detach())
                parameter.data = view
                parameter.grad = self.gradient[offset : offset + size].view_as(parameter)
                self.layout.append((names[id(parameter)], offset))
                offset += size
            self.slices[group.name] = slice(start, offset)
            scales.append(group.learning_rate_scale)
            l1s.append(group.l1)
            l2s.append(group.l2)
            sizes.append(offset - start)
        self.size = total
        self._learning_rate_scale = self._per_element(scales, sizes)
        self._l1 = self._per_element(l1s, sizes)
        self._l2 = self._per_element(l2s, sizes)
        self._learning_rate_cache = None

    def bind(self, module):
        """Re-seat ``module``'s parameters (same names and shapes) as views of these buffers.

        For a deep copy of a trainer: torch deep-copies each ``nn.Parameter``
        on its own, which cuts the copied module off the copied buffers.
        """
        parameters = dict(module.named_parameters())
        for name, offset in self.layout:
            parameter = parameters[name]
            size = parameter.numel()
            parameter.data = self.values[offset : offset + size].view_as(parameter)
            parameter.grad = self.gradient[offset : offset + size].view_as(parameter)

    def _per_element(self, values, sizes):
        if all(v == values[0] for v in values):
            return float(values[0])
        return torch.cat(
            [torch.full((n,), float(v), device=self.device, dtype=self.dtype) for v, n in zip(values, sizes)]
        )

    @staticmethod
    def _is_zero(value):
        return isinstance(value, float) and value == 0.0

    @property
    def has_penalty(self):
        return not (self._is_zero(self._l1) and self._is_zero(self._l2))

    def penalty_value(self):
        """``sum_groups 0.5 * l2 * ||theta||^2 + l1 * ||theta||_1`` (a float)."""
        theta = self.values
        value = 0.0
        if not self._is_zero(self._l2):
            value += float((0.5 * self._l2 * theta * theta).sum())
        if not self._is_zero(self._l1):
            value += float((self._l1 * theta.abs()).sum())
        return value

    def add_penalty_gradient(self, inverse_weight_sum):
        """Add the penalty's gradient, divided by the batch's total weight, to :attr:`gradient`."""
        theta, gradient = self.values, self.gradient
        if isinstance(self._l2, float):
            if self._l2 != 0.0:
                gradient.add_(theta, alpha=self._l2 * inverse_weight_sum)
        else:
            gradient.addcmul_(theta, self._l2, value=inverse_weight_sum)
        if isinstance(self._l1, float):
            if self._l1 != 0.0:
                gradient.add_(torch.sign(theta), alpha=self._l1 * inverse_weight_sum)
        else:
            gradient.addcmul_(torch.sign(theta), self._l1, value=inverse_weight_sum)

    def learning_rates(self, base):
        """``base * learning_rate_scale``: a float, or a vector built once per ``base``."""
        if isinstance(self._learning_rate_scale, float):
            return base * self._learning_rate_scale
        cached = self._learning_rate_cache
        if cached is None or cached[0] != base:
            cached = (base, base * self._learning_rate_scale)
            self._learning_rate_cache = cached
        return cached[1]
