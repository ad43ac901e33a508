"""Export fitted skquad estimators to torch and ONNX.

to_torch
    A :class:`torch.nn.Module` whose output equals ``decision_function``.
register_onnx_converters
    Register skl2onnx converters and shape calculators for the skquad
    classifiers and regressors (imports onnx and skl2onnx; importing skquad
    never does).
"""

from ._torch import (
    BilinearNetworkScores,
    ClipInputs,
    DecisionFunctionModule,
    QuadraticFormScores,
    Standardize,
    to_torch,
)

__all__ = [
    "BilinearNetworkScores",
    "ClipInputs",
    "DecisionFunctionModule",
    "QuadraticFormScores",
    "Standardize",
    "register_onnx_converters",
    "to_torch",
]


def register_onnx_converters():
    """Register skl2onnx converters for the skquad classifiers and regressors.

    After this call, :func:`skl2onnx.to_onnx` converts fitted skquad
    estimators, alone or inside a Pipeline (e.g. after a ``StandardScaler``,
    or a ``ColumnTransformer`` that one-hot encodes string columns). A
    regressor's ONNX output is ``predict`` as an ``[N, n_outputs_]`` tensor
    (``[N, 1]`` for a 1-D ``y``). The option ``contributions`` (off by default;
    ``options={"contributions": True}`` or per model) adds one more output: each
    sample's main effects and pairs, as
    :func:`skquad.inspection.local_contributions` gives them, for the models
    whose score is a quadratic form of the input (a network with hidden layers
    refuses it).
    Needs the ``export`` extra (onnx, onnxruntime, skl2onnx). Calling it again
    is harmless.

    Examples
    --------
    >>> from skquad.export import register_onnx_converters
    >>> register_onnx_converters()  # doctest: +SKIP
    """
    from ._onnx import register

    register()
