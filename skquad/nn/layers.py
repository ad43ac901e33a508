"""Quadratic layers as :class:`torch.nn.Module` subclasses.

* :class:`QuadraticLayer`: Noel et al.'s full quadratic neuron,
  ``z_k = b_k + W_k . a + a^T Q^(k) a`` with one symmetric ``Q^(k)`` per neuron.
* :class:`ReducedQuadraticLayer`: Noel et al.'s reduced-parameter neuron,
  ``z = (W a + b) * (U a + c)``, and with ``power_term=True`` Fan et al.'s neuron
  ``z = (W_r a + b_r) * (W_g a + b_g) + W_b (a * a) + c``.

Every layer separates its parameters into :meth:`linear_parameters` (those of the
conventional neuron it contains) and :meth:`quadratic_parameters` (everything
else), so that a training engine can give the quadratic ones their own learning
rate or decay (ReLinear, Fan et al.).  ``reset_parameters(relinear=True)`` starts
every neuron as a conventional one; :meth:`load_linear_from` copies a trained
:class:`torch.nn.Linear` in (weight transfer).  :meth:`state_to_numpy` and
:meth:`load_numpy_state` move the weights to and from plain numpy arrays, so an
estimator can pickle numpy weights and rebuild the module anywhere.

The layers never change global torch state (threads, default dtype, random
generator): random initialisation draws from the ``generator`` it is given.
"""

import functools
import math

import numpy as np
import torch
from torch import nn

from .backward import (
    PackedPairIndex,
    cached_bilinear_product,
    cached_quadratic_form,
    packed_quadratic_form,
)

__all__ = [
    "QuadraticLayer",
    "ReducedQuadraticLayer",
    "build_uninitialised",
    "layer_from_numpy_state",
    "layer_to_numpy_state",
    "new_layer",
]

_BACKWARDS = ("cached", "autograd")

# From this many inputs on, a packed layer's cached backward works on the
# triangle itself (half the multiplications); below it, the index bookkeeping
# costs more and the layer runs Algorithm 1 on the unpacked matrices.
PACKED_TRIANGLE_MIN_FEATURES = 96
_STORAGES = ("full", "packed")


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def _check_choice(value, name, choices):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}.")
    return value


def _uniform_(tensor, bound, generator):
    """Fill ``tensor`` with U(-bound, bound) drawn from ``generator``, on the generator's device and
    copied: the same seed gives the same weights on every device."""
    with torch.no_grad():
        if generator is None or generator.device == tensor.device:
            return tensor.uniform_(-bound, bound, generator=generator)
        values = torch.empty(tensor.shape, dtype=tensor.dtype, device=generator.device)
        values.uniform_(-bound, bound, generator=generator)
        return tensor.copy_(values)


def _init_like_linear_(weight, bias, generator):
    """torch.nn.Linear's default initialisation from a local generator: ``kaiming_uniform_(a=sqrt(5))``
    is U(-1/sqrt(fan_in), 1/sqrt(fan_in)), the bias's bound too."""
    bound = 1.0 / math.sqrt(weight.shape[1])
    _uniform_(weight, bound, generator)
    if bias is not None:
        _uniform_(bias, bound, generator)


def to_numpy(tensor):
    """A detached CPU numpy copy of ``tensor`` (safe to pickle anywhere)."""
    return tensor.detach().cpu().numpy().copy()


def _as_tensor_like(array, reference, name):
    array = np.asarray(array)
    if tuple(array.shape) != tuple(reference.shape):
        raise ValueError(
            f"{name} has shape {tuple(array.shape)}, expected {tuple(reference.shape)}."
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return torch.as_tensor(array, dtype=reference.dtype, device=reference.device)


class _QuadraticLayerBase(nn.Module):
    """Shared machinery: parameter groups, weight transfer, numpy state."""

    # Names of the parameters in each group, in a fixed order (subclasses).
    _linear_names = ()
    _quadratic_names = ()

    def __init__(self, in_features, out_features, backward):
        super().__init__()
        self.in_features = _check_positive_int(in_features, "in_features")
        self.out_features = _check_positive_int(out_features, "out_features")
        self.backward = _check_choice(backward, "backward", _BACKWARDS)

    def linear_parameters(self):
        """Parameters of the conventional neuron inside each quadratic one.

        Yields
        ------
        parameter : torch.nn.Parameter
        """
        return self._present_parameters(self._linear_names)

    def quadratic_parameters(self):
        """The remaining parameters: what makes the neurons quadratic.

        Yields
        ------
        parameter : torch.nn.Parameter
        """
        return self._present_parameters(self._quadratic_names)

    def _present_parameters(self, names):
        # Optional parameters (bias=False, no power term) are None.
        return (getattr(self, name) for name in names if getattr(self, name) is not None)

    def load_linear_from(self, linear, *, reset_quadratic=True):
        """Copy a (trained) :class:`torch.nn.Linear` into the linear part.

        Parameters
        ----------
        linear : torch.nn.Linear
            Must have ``in_features`` and ``out_features`` equal to this
            layer's, and a bias if and only if this layer has one.
        reset_quadratic : bool, default=True
            Also put the quadratic part at its ReLinear start, so that the
            layer computes exactly what ``linear`` computes (Fan et al.'s
            weight transfer).

        Returns
        -------
        self
        """
        if not isinstance(linear, nn.Linear):
            raise TypeError(
                f"load_linear_from expects a torch.nn.Linear, got {type(linear).__name__}."
            )
        if (linear.in_features, linear.out_features) != (
            self.in_features,
            self.out_features,
        ):
            raise ValueError(
                f"Cannot load a Linear({linear.in_features}, {linear.out_features}) "
                f"into a {type(self).__name__}({self.in_features}, "
                f"{self.out_features})."
            )
        if (linear.bias is None) != (self.bias is None):
            raise ValueError(
                "The Linear layer and this layer must both have a bias or both "
                f"have none (Linear bias: {linear.bias is not None}, "
                f"{type(self).__name__} bias: {self.bias is not None})."
            )
        with torch.no_grad():
            self.weight.copy_(linear.weight)
            if self.bias is not None:
                self.bias.copy_(linear.bias)
            if reset_quadratic:
                self._reset_quadratic(generator=None, relinear=True)
        return self

    def reset_parameters(self, generator=None, relinear=True):
        """Initialise all parameters.

        Parameters
        ----------
        generator : torch.Generator, default=None
            Local random generator (see :func:`skquad._foundation._torch_utils.make_generator`);
            None uses torch's global one, as torch.nn.Linear does.
        relinear : bool, default=True
            True: the ReLinear start of Fan et al., where the quadratic part is
            neutral and every neuron starts as a conventional one. False: a
            small random quadratic part as well.

        Returns
        -------
        self
        """
        _init_like_linear_(self.weight, self.bias, generator)
        self._reset_quadratic(generator=generator, relinear=relinear)
        return self

    # -------------------------------------------------------------- numpy state
    def _export_arrays(self):
        """Storage-independent numpy arrays, keyed by name (subclasses)."""
        raise NotImplementedError

    def _import_arrays(self, arrays):
        raise NotImplementedError

    def state_to_numpy(self):
        """The learned weights as a dict of numpy arrays (copies).

        The dict holds the layer's shape and options too, so
        :meth:`from_numpy_state` can rebuild it on any device.

        Returns
        -------
        state : dict
        """
        state = {"kind": type(self).__name__, "options": self._options()}
        state.update(self._export_arrays())
        return state

    def load_numpy_state(self, state):
        """Load weights exported by :meth:`state_to_numpy` (any storage/device).

        Parameters
        ----------
        state : dict

        Returns
        -------
        self
        """
        kind = state.get("kind", type(self).__name__)
        if kind != type(self).__name__:
            raise ValueError(
                f"The state was exported from a {kind}, not a {type(self).__name__}."
            )
        options = state.get("options", {})
        shape = (options.get("in_features"), options.get("out_features"))
        if None not in shape and shape != (self.in_features, self.out_features):
            raise ValueError(
                f"The state is for in_features={shape[0]}, out_features={shape[1]}; "
                f"this layer has in_features={self.in_features}, "
                f"out_features={self.out_features}."
            )
        with torch.no_grad():
            self._import_arrays(state)
        return self

    @classmethod
    def from_numpy_state(cls, state, *, device=None, dtype=None, **overrides):
        """Rebuild a layer from :meth:`state_to_numpy`'s dict.

        Parameters
        ----------
        state : dict
        device, dtype : optional
            Where and in which precision to build the layer.
        **overrides
            Options to change, e.g. ``backward="autograd"``.

        Returns
        -------
        layer
        """
        options = dict(state["options"])
        options.update(overrides)
        in_features = options.pop("in_features")
        out_features = options.pop("out_features")
        # Built without the constructor's draw from torch's global generator:
        # every value is overwritten by the state.
        layer = build_uninitialised(cls, in_features, out_features, device=device, dtype=dtype, **options)
        return layer.load_numpy_state(state)

    def _check_input(self, a):
        name = type(self).__name__
        if not isinstance(a, torch.Tensor):
            raise TypeError(f"{name} expects a torch.Tensor, got {type(a).__name__}.")
        if a.dim() != 2 or a.shape[1] != self.in_features:
            raise ValueError(
                f"{name} expects input of shape (batch, {self.in_features}), "
                f"got {tuple(a.shape)}."
            )
        weight = self.weight
        if a.dtype != weight.dtype or a.device != weight.device:
            raise ValueError(
                f"{name} has {weight.dtype} parameters on {weight.device} but the "
                f"input is {a.dtype} on {a.device}; convert one of them with "
                ".to(dtype=..., device=...)."
            )


class QuadraticLayer(_QuadraticLayerBase):
    r"""Full quadratic layer (Noel et al.): ``z_k = b_k + W_k . a + a^T Q^(k) a``.

    Parameters
    ----------
    in_features, out_features : int
    bias : bool, default=True
    backward : {"cached", "autograd"}, default="cached"
        "cached": Noel et al.'s Algorithm 1, an explicit backward pass that
        reuses products of the forward pass. Full storage:
        :class:`~skquad.nn.backward.CachedQuadraticForm` on ``Q = sym(P)``,
        caching ``V = [Q^(1) a, ..., Q^(K) a]``. Packed storage: the same on the
        unpacked matrices below 96 inputs, and from 96 inputs on
        :class:`~skquad.nn.backward.PackedQuadraticForm`, which works on the
        triangle itself (caches the pair products ``M(a)``, half the
        multiplications). "autograd": plain torch operations differentiated by
        autograd. The default is the faster one for the default packed storage,
        measured forward + backward with the input gradient
        (``python -m skquad.benchmarks --suite speed``), at every layer size.
        With full storage the gain is small for wide layers, and for small
        layers (under ~64 inputs, steps of a millisecond or less) autograd is
        faster: there its graph costs less than a python Function and the
        symmetrization of ``P``.
    quadratic_storage : {"full", "packed"}, default="packed"
        "packed": ``quadratic_weight`` holds the ``n_in (n_in + 1) / 2`` upper
        triangle entries of each symmetric ``Q^(k)`` (row by row, as
        :func:`torch.triu_indices`): half the parameters, so half the memory
        and optimizer work, and (from 96 inputs) half the multiplications.
        "full": ``quadratic_weight`` holds ``n_out`` full ``n_in x n_in``
        matrices ``P^(k)`` and the layer uses their symmetric part
        ``Q = (P + P^T) / 2`` (the quadratic form only ever sees that part;
        gradients are symmetric, so a symmetric ``P`` stays symmetric).
        Packed is the default by measurement (forward + backward with the
        cached backward, one thread): equal within noise up to 64 inputs,
        faster beyond, and an Adam step on the quadratic parameter costs half.
    device, dtype : optional
        Factory arguments, as in :class:`torch.nn.Linear`.

    Attributes
    ----------
    weight : torch.nn.Parameter of shape (out_features, in_features)
    bias : torch.nn.Parameter of shape (out_features,) or None
    quadratic_weight : torch.nn.Parameter
        Shape ``(out_features, in_features, in_features)`` (full) or
        ``(out_features, in_features * (in_features + 1) // 2)`` (packed).

    Examples
    --------
    >>> import torch
    >>> from skquad.nn import QuadraticLayer
    >>> layer = QuadraticLayer(3, 2).reset_parameters(torch.Generator().manual_seed(0))
    >>> layer(torch.ones(5, 3)).shape
    torch.Size([5, 2])
    """

    _linear_names = ("weight", "bias")
    _quadratic_names = ("quadratic_weight",)
    # The packed triangle is as fast for narrow layers, faster for wide ones, and
    # halves memory and optimizer work (the storage table of the layers' benchmark).
    default_storage = "packed"

    def __init__(
        self,
        in_features,
        out_features,
        *,
        bias=True,
        backward="cached",
        quadratic_storage=None,
        device=None,
        dtype=None,
    ):
        super().__init__(in_features, out_features, backward)
        factory = {"device": device, "dtype": dtype}
        if quadratic_storage is None:
            quadratic_storage = self.default_storage
        self.quadratic_storage = _check_choice(
            quadratic_storage, "quadratic_storage", _STORAGES
        )
        n_in, n_out = self.in_features, self.out_features
        self.weight = nn.Parameter(torch.empty(n_out, n_in, **factory))
        self.bias = nn.Parameter(torch.empty(n_out, **factory)) if bias else None
        if self.quadratic_storage == "full":
            shape = (n_out, n_in, n_in)
        else:
            shape = (n_out, n_in * (n_in + 1) // 2)
        self.quadratic_weight = nn.Parameter(torch.empty(shape, **factory))
        # Index tables of the packed triangle, built on first use and again when
        # the layer moves to another device (see _pair_index_on).
        self._pair_index = None
        self.reset_parameters()

    def _options(self):
        return {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "bias": self.bias is not None,
            "backward": self.backward,
            "quadratic_storage": self.quadratic_storage,
        }

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}, backward={self.backward!r}, "
            f"quadratic_storage={self.quadratic_storage!r}"
        )

    # ----------------------------------------------------------------- Q access
    def quadratic_matrices(self):
        """The symmetric matrices ``Q^(k)``, shape (out, in, in), differentiable."""
        if self.quadratic_storage == "full":
            parameter = self.quadratic_weight
            return 0.5 * (parameter + parameter.transpose(1, 2))
        return self._pair_index_on(self.quadratic_weight.device).unpack(
            self.quadratic_weight
        )

    def _pair_index_on(self, device):
        """The packed-triangle index tables on ``device`` (built once per move)."""
        if self._pair_index is None or self._pair_index.device != device:
            self._pair_index = PackedPairIndex(self.in_features, device)
        return self._pair_index

    def _reset_quadratic(self, generator, relinear):
        with torch.no_grad():
            if relinear:
                self.quadratic_weight.zero_()
                return
            # a^T Q a sums n_in^2 terms: a bound of 1/n_in keeps it on the scale
            # of the linear term for unit-scale inputs while staying "small".
            bound = 1.0 / self.in_features
            matrices = torch.empty(
                self.out_features,
                self.in_features,
                self.in_features,
                dtype=self.quadratic_weight.dtype,
                device=self.quadratic_weight.device,
            )
            _uniform_(matrices, bound, generator)
            matrices = 0.5 * (matrices + matrices.transpose(1, 2))
            self._set_matrices(matrices)

    def _set_matrices(self, matrices):
        if self.quadratic_storage == "full":
            self.quadratic_weight.copy_(matrices)
        else:
            index = self._pair_index_on(matrices.device)
            self.quadratic_weight.copy_(index.pack(matrices))

    # ------------------------------------------------------------------ forward
    def forward(self, a):
        """Compute ``z`` of shape (batch, out_features) from ``a`` (batch, in)."""
        self._check_input(a)
        if self.backward == "cached":
            if (
                self.quadratic_storage == "packed"
                and self.in_features >= PACKED_TRIANGLE_MIN_FEATURES
            ):
                return packed_quadratic_form(
                    a,
                    self.weight,
                    self.bias,
                    self.quadratic_weight,
                    self._pair_index_on(a.device),
                )
            return cached_quadratic_form(
                a, self.weight, self.bias, self.quadratic_matrices()
            )
        linear = nn.functional.linear(a, self.weight, self.bias)
        if self.quadratic_storage == "full":
            # a^T P a == a^T sym(P) a: autograd differentiates P directly.
            stacked = self.quadratic_weight.reshape(-1, self.in_features)
            v = torch.matmul(a, stacked.t()).reshape(
                a.shape[0], self.out_features, self.in_features
            )
            return linear + (v * a.unsqueeze(1)).sum(dim=2)
        # Packed: z = sum_{i<=j} c_ij q_ij a_i a_j with c = 1 on the diagonal,
        # 2 off it: a product of the pair features with the packed entries.
        index = self._pair_index_on(a.device)
        pairs = a.index_select(1, index.rows) * a.index_select(1, index.cols)
        multiplicity = torch.where(index.rows == index.cols, 1.0, 2.0).to(a.dtype)
        weights = self.quadratic_weight * multiplicity
        return linear + torch.matmul(pairs, weights.t())

    # ------------------------------------------------------------- numpy state
    def _export_arrays(self):
        arrays = {"weight": to_numpy(self.weight)}
        if self.bias is not None:
            arrays["bias"] = to_numpy(self.bias)
        arrays["quadratic"] = to_numpy(self.quadratic_matrices())
        return arrays

    def _import_arrays(self, arrays):
        self.weight.copy_(_as_tensor_like(arrays["weight"], self.weight, "weight"))
        if self.bias is not None:
            if "bias" not in arrays:
                raise ValueError("The state has no 'bias' but this layer has one.")
            self.bias.copy_(_as_tensor_like(arrays["bias"], self.bias, "bias"))
        reference = torch.empty(
            self.out_features, self.in_features, self.in_features,
            dtype=self.weight.dtype, device=self.weight.device,
        )
        matrices = _as_tensor_like(arrays["quadratic"], reference, "quadratic")
        self._set_matrices(0.5 * (matrices + matrices.transpose(1, 2)))


class ReducedQuadraticLayer(_QuadraticLayerBase):
    r"""Reduced-parameter quadratic layer (Noel et al.), optionally Fan et al.'s neuron.

    ``z = (W a + b) * (U a + c)``; with ``power_term=True``
    ``z = (W a + b) * (U a + c) + W_p (a * a) + c_p`` (Fan et al.'s
    ``(W_r a + b_r) * (W_g a + b_g) + W_b (a * a) + c``).

    Parameters
    ----------
    in_features, out_features : int
    power_term : bool, default=False
        Add Fan et al.'s power term ``W_p (a * a) + c_p``.
    backward : {"autograd", "cached"}, default="autograd"
        "cached": Noel et al.'s Algorithm 2
        (:class:`~skquad.nn.backward.CachedBilinearProduct`, power term
        fused), which keeps ``v1 = W a + b`` and ``v2 = U a + c``;
        "autograd": plain autograd. Both perform the same products (autograd
        keeps ``v1`` and ``v2`` as well), and measured forward + backward
        they differ by no more than the machine's noise. Autograd is the default
        because it is never clearly slower and is faster on small layers,
        where a python Function's overhead shows.
    device, dtype : optional

    Attributes
    ----------
    weight, bias : torch.nn.Parameter
        ``W`` (out, in) and ``b`` (out,): the linear factor (Fan et al.'s
        ``W_r``, ``b_r``).
    factor_weight, factor_bias : torch.nn.Parameter
        ``U`` and ``c`` (Fan et al.'s ``W_g``, ``b_g``): the second factor.
    power_weight, power_bias : torch.nn.Parameter or None
        ``W_p`` (out, in) and ``c_p`` (out,) (Fan et al.'s ``W_b``, ``c``),
        present with ``power_term=True``.

    Examples
    --------
    >>> import torch
    >>> from skquad.nn import ReducedQuadraticLayer
    >>> layer = ReducedQuadraticLayer(3, 2, power_term=True)
    >>> layer(torch.ones(5, 3)).shape
    torch.Size([5, 2])
    """

    _linear_names = ("weight", "bias")
    _quadratic_names = ("factor_weight", "factor_bias", "power_weight", "power_bias")

    def __init__(
        self,
        in_features,
        out_features,
        *,
        power_term=False,
        backward="autograd",
        device=None,
        dtype=None,
    ):
        super().__init__(in_features, out_features, backward)
        factory = {"device": device, "dtype": dtype}
        if not isinstance(power_term, (bool, np.bool_)):
            raise ValueError(f"power_term must be a bool, got {power_term!r}.")
        self.power_term = bool(power_term)
        n_in, n_out = self.in_features, self.out_features
        self.weight = nn.Parameter(torch.empty(n_out, n_in, **factory))
        self.bias = nn.Parameter(torch.empty(n_out, **factory))
        self.factor_weight = nn.Parameter(torch.empty(n_out, n_in, **factory))
        self.factor_bias = nn.Parameter(torch.empty(n_out, **factory))
        if self.power_term:
            self.power_weight = nn.Parameter(torch.empty(n_out, n_in, **factory))
            self.power_bias = nn.Parameter(torch.empty(n_out, **factory))
        else:
            self.register_parameter("power_weight", None)
            self.register_parameter("power_bias", None)
        self.reset_parameters()

    def _options(self):
        return {
            "in_features": self.in_features,
            "out_features": self.out_features,
            "power_term": self.power_term,
            "backward": self.backward,
        }

    def extra_repr(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"power_term={self.power_term}, backward={self.backward!r}"
        )

    def _reset_quadratic(self, generator, relinear):
        with torch.no_grad():
            if relinear:
                self.factor_weight.zero_()
                self.factor_bias.fill_(1.0)
                if self.power_term:
                    self.power_weight.zero_()
                    self.power_bias.zero_()
                return
            _init_like_linear_(self.factor_weight, self.factor_bias, generator)
            if self.power_term:
                # The power term sums n_in squares: 1/n_in keeps it small.
                _uniform_(self.power_weight, 1.0 / self.in_features, generator)
                self.power_bias.zero_()

    def forward(self, a):
        """Compute ``z`` of shape (batch, out_features) from ``a`` (batch, in)."""
        self._check_input(a)
        if self.backward == "cached":
            return cached_bilinear_product(
                a,
                self.weight,
                self.bias,
                self.factor_weight,
                self.factor_bias,
                self.power_weight,
                self.power_bias,
            )
        z = nn.functional.linear(a, self.weight, self.bias) * nn.functional.linear(
            a, self.factor_weight, self.factor_bias
        )
        if self.power_term:
            z = z + nn.functional.linear(a * a, self.power_weight, self.power_bias)
        return z

    def _array_names(self):
        names = ["weight", "bias", "factor_weight", "factor_bias"]
        if self.power_term:
            names += ["power_weight", "power_bias"]
        return names

    def _export_arrays(self):
        return {name: to_numpy(getattr(self, name)) for name in self._array_names()}

    def _import_arrays(self, arrays):
        for name in self._array_names():
            if name not in arrays:
                raise ValueError(f"The state has no {name!r} array.")
            parameter = getattr(self, name)
            parameter.copy_(_as_tensor_like(arrays[name], parameter, name))


@functools.cache
def _without_reset(cls):
    return type(cls.__name__, (cls,), {"reset_parameters": lambda self, *args, **kwargs: self})


def build_uninitialised(cls, *args, **kwargs):
    """``cls(*args, **kwargs)`` without the random initialisation its constructor runs.

    torch layers (``torch.nn.Linear`` and the layers here) initialise themselves
    in the constructor from torch's global generator. This builds the layer
    through a subclass whose ``reset_parameters`` does nothing, then gives it
    back its own class: the parameters are allocated but never drawn, and the
    caller fills them (from a local generator or a saved state).
    ``torch.nn.utils.skip_init`` does the same through the meta device, but its
    first call imports sympy (seconds).

    Returns
    -------
    layer : cls
    """
    layer = _without_reset(cls)(*args, **kwargs)
    layer.__class__ = cls
    return layer


# ---------------------------------------------------------------------------
# Every layer kind of a network (torch.nn.Linear included) by name, built and
# exported the same way.

_LAYER_CLASSES = {"Linear": nn.Linear, "QuadraticLayer": QuadraticLayer, "ReducedQuadraticLayer": ReducedQuadraticLayer}


def new_layer(kind, in_features, out_features, *, generator, relinear=True, device=None, dtype=None, **options):
    """A freshly initialised layer whose every random number comes from ``generator``.

    Unlike calling the constructor (which, like :class:`torch.nn.Linear`,
    draws from torch's global generator), nothing here touches global state.

    Parameters
    ----------
    kind : {"Linear", "QuadraticLayer", "ReducedQuadraticLayer"}
    in_features, out_features : int
    generator : torch.Generator
        Local generator (on the CPU, or on ``device``).
    relinear : bool, default=True
        Quadratic layers only: ReLinear's start (Fan et al.), see
        :meth:`QuadraticLayer.reset_parameters`.
    device, dtype : optional
    **options
        Constructor options of the layer (e.g. ``quadratic_storage="full"``).

    Returns
    -------
    layer : torch.nn.Module
    """
    cls = _LAYER_CLASSES[kind]
    layer = build_uninitialised(cls, in_features, out_features, device=device, dtype=dtype, **options)
    if cls is nn.Linear:
        # torch.nn.Linear's own rule, U(-1/sqrt(n_in), 1/sqrt(n_in)), weight then bias.
        _init_like_linear_(layer.weight, layer.bias, generator)
    else:
        layer.reset_parameters(generator=generator, relinear=relinear)
    return layer


def layer_to_numpy_state(layer):
    """:meth:`QuadraticLayer.state_to_numpy` for every layer kind, Linear included.

    Parameters
    ----------
    layer : torch.nn.Linear, QuadraticLayer or ReducedQuadraticLayer

    Returns
    -------
    state : dict
        ``{"kind", "options", "weight", "bias", ...}`` with numpy copies.
    """
    if isinstance(layer, nn.Linear):
        return {
            "kind": "Linear",
            "options": {"in_features": layer.in_features, "out_features": layer.out_features},
            "weight": to_numpy(layer.weight),
            "bias": to_numpy(layer.bias),
        }
    return layer.state_to_numpy()


def layer_from_numpy_state(state, *, device=None, dtype=None, **overrides):
    """Rebuild any layer from :func:`layer_to_numpy_state`'s dict (no random draws).

    Parameters
    ----------
    state : dict
    device, dtype : optional
    **overrides
        Options to change (quadratic layers only), e.g. ``backward="autograd"``.

    Returns
    -------
    layer : torch.nn.Module
    """
    kind = state.get("kind")
    if kind not in _LAYER_CLASSES:
        raise ValueError(f"Unknown layer kind {kind!r}; expected one of {sorted(_LAYER_CLASSES)}.")
    if kind != "Linear":
        return _LAYER_CLASSES[kind].from_numpy_state(state, device=device, dtype=dtype, **overrides)
    options = state["options"]
    layer = build_uninitialised(nn.Linear, options["in_features"], options["out_features"], device=device, dtype=dtype)
    with torch.no_grad():
        layer.weight.copy_(_as_tensor_like(state["weight"], layer.weight, "weight"))
        layer.bias.copy_(_as_tensor_like(state["bias"], layer.bias, "bias"))
    return layer
