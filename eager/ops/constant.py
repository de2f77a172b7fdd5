"""Identity and StopGradient (and Const, re-exported from `_const.py`): the ops every other module leans on."""
from __future__ import annotations

from ..registry import op
from ._const import CONST, stage_const  # noqa: F401 - declared below conversion, which stages it
from ._define import call_unary, infer_same

__all__ = ["identity", "stop_gradient"]

IDENTITY = op("Identity", lambda x: x, infer_same, lambda op, dy: [dy], elementwise=True, alias=True,
              rowwise_exact=True)
STOP_GRADIENT = op("StopGradient", lambda x: x, infer_same, differentiable=False, elementwise=True, alias=True)


def identity(input, name=None):
    """Return a tensor with the same value (a new graph node in graphs)."""
    return call_unary(IDENTITY, input, name)


def stop_gradient(input, name=None):
    """Identity whose gradient is None: the value is treated as a constant by tapes."""
    return call_unary(STOP_GRADIENT, input, name)
