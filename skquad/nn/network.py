"""Stacks of layers: the feed-forward networks of Noel et al. as torch modules.

A network is a :class:`torch.nn.Sequential` of layers (``torch.nn.Linear``,
:class:`~skquad.nn.QuadraticLayer`, :class:`~skquad.nn.ReducedQuadraticLayer`)
alternating with one activation module; the last layer gives the class scores.

* :func:`new_network` draws a fresh network from a local generator (never
  torch's global one), with ReLinear's start (Fan et al.) for the quadratic
  layers.
* :func:`network_to_states` / :func:`network_from_states` move the weights to
  and from plain numpy dicts (one per layer), so an estimator can store numpy
  arrays only and rebuild the module on any device, in any dtype, without a
  random draw.
* :func:`count_parameters` counts the trainable numbers of a network before it
  is built, so an estimator can refuse a network that does not fit in memory.
"""

import torch
from torch import nn

from .layers import layer_from_numpy_state, layer_to_numpy_state, new_layer

__all__ = [
    "ACTIVATIONS",
    "count_parameters",
    "network_from_states",
    "network_to_states",
    "new_network",
]

# "logistic" is MLPClassifier's name for the sigmoid.
ACTIVATIONS = {
    "identity": nn.Identity,
    "relu": nn.ReLU,
    "sigmoid": nn.Sigmoid,
    "logistic": nn.Sigmoid,
    "tanh": nn.Tanh,
}


def _with_activations(layers, activation):
    items = []
    for index, layer in enumerate(layers):
        items.append(layer)
        if index < len(layers) - 1:
            items.append(ACTIVATIONS[activation]())
    return nn.Sequential(*items)


def new_network(sizes, quadratic, activation, *, quadratic_kind, quadratic_options=None, generator, relinear=True):
    """A freshly initialised network, on the CPU in float64.

    The weights are drawn in float64 from ``generator`` so that a seed gives the
    same network (up to rounding) in either dtype and on any device: move it
    with ``.to(device=..., dtype=...)``.

    Parameters
    ----------
    sizes : list of int
        ``[n_features, *hidden_layer_sizes, n_scores]``.
    quadratic : list of bool
        One flag per layer (``len(sizes) - 1``): quadratic or ``torch.nn.Linear``.
    activation : {"identity", "relu", "sigmoid", "logistic", "tanh"}
        Between layers (none after the last).
    quadratic_kind : {"QuadraticLayer", "ReducedQuadraticLayer"}
    quadratic_options : dict, default=None
        Constructor options of the quadratic layers.
    generator : torch.Generator
    relinear : bool, default=True
        ReLinear's start: every quadratic neuron starts as a conventional one.

    Returns
    -------
    network : torch.nn.Sequential
    """
    layers = []
    for n_in, n_out, is_quadratic in zip(sizes[:-1], sizes[1:], quadratic):
        if is_quadratic:
            layer = new_layer(
                quadratic_kind, n_in, n_out, generator=generator, relinear=relinear,
                dtype=torch.float64, **(quadratic_options or {}),
            )
        else:
            layer = new_layer("Linear", n_in, n_out, generator=generator, dtype=torch.float64)
        layers.append(layer)
    return _with_activations(layers, activation)


def network_to_states(network):
    """One numpy dict per layer of ``network`` (see :func:`layer_to_numpy_state`).

    Parameters
    ----------
    network : torch.nn.Sequential

    Returns
    -------
    states : list of dict
    """
    return [layer_to_numpy_state(item) for item in network if not isinstance(item, tuple(ACTIVATIONS.values()))]


def network_from_states(states, activation, *, device=None, dtype=None, **overrides):
    """Rebuild a network from :func:`network_to_states` (no random draws).

    Parameters
    ----------
    states : list of dict
    activation : str
        The activation the network was trained with.
    device, dtype : optional
    **overrides
        Options of the quadratic layers to change, e.g. ``backward="autograd"``.

    Returns
    -------
    network : torch.nn.Sequential
    """
    layers = []
    for state in states:
        options = overrides if state["kind"] != "Linear" else {}
        layers.append(layer_from_numpy_state(state, device=device, dtype=dtype, **options))
    return _with_activations(layers, activation)


def count_parameters(sizes, quadratic, quadratic_kind, *, quadratic_storage="full", power_term=False):
    """Number of trainable numbers of the network :func:`new_network` would build.

    Parameters
    ----------
    sizes, quadratic, quadratic_kind
        As for :func:`new_network`.
    quadratic_storage : {"full", "packed"}, default="full"
        Storage of :class:`~skquad.nn.QuadraticLayer`.
    power_term : bool, default=False
        :class:`~skquad.nn.ReducedQuadraticLayer`'s power term.

    Returns
    -------
    n_parameters : int
    """
    total = 0
    for n_in, n_out, is_quadratic in zip(sizes[:-1], sizes[1:], quadratic):
        n_in, n_out = int(n_in), int(n_out)
        linear = n_out * n_in + n_out
        if not is_quadratic:
            total += linear
        elif quadratic_kind == "QuadraticLayer":
            pairs = n_in * n_in if quadratic_storage == "full" else n_in * (n_in + 1) // 2
            total += linear + n_out * pairs
        else:
            total += linear * (3 if power_term else 2)
    return total
