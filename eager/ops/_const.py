"""The Const primitive: declared below conversion, which stages it for graph constants.

`convert.constant` calls `stage_const` when a graph is being built; the public
`identity` and `stop_gradient` live in `constant.py`.  Imports the eager core
(`dispatch`, `dtypes`, `registry`) only.
"""
from __future__ import annotations

from ..dispatch import execute
from ..dtypes import dtype_of_array
from ..registry import Spec, op


def _infer_const(specs, attrs):
    v = attrs["value"]
    return [Spec(tuple(v.shape), dtype_of_array(v), v)]


CONST = op("Const", lambda value: value, _infer_const, doc="A constant value (attr `value`).")


def stage_const(array, name=None):
    """Add a Const op to the graph being built (called by `constant` in graph mode)."""
    return execute(CONST, (), {"value": array}, name)
