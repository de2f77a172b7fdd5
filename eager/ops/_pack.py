"""The Pack and Unpack primitives (`stack` / `unstack` in `array.py`).

Declared below conversion: `convert_to_tensor` packs a list holding tensors
with Pack (TensorFlow's implicit pack), and the integer-argument helpers stack
mixed ints and scalar tensors with it.  Their gradients are each other, built
with `execute` directly.  Imports the eager core and `_fold` only.
"""
from __future__ import annotations

import numpy as np

from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ._fold import fold


def infer_pack(specs, attrs):
    """Pack's inference: one dtype and one shape for all inputs (small constant stacks keep their value)."""
    axis = attrs["axis"]
    shape = specs[0].shape
    for s in specs[1:]:
        if s.dtype is not specs[0].dtype:
            raise InvalidArgumentError(f"Pack: all inputs must have the same dtype, got {specs[0].dtype.name} and "
                                       f"{s.dtype.name}", op_name="Pack")
        if shape is not None and s.shape is not None:
            if len(shape) != len(s.shape) or any(a is not None and b is not None and a != b
                                                 for a, b in zip(shape, s.shape)):
                raise InvalidArgumentError(f"Pack: all inputs must have the same shape, got {list(shape)} and "
                                           f"{list(s.shape)}", op_name="Pack")
    if shape is None:
        return [Spec(None, specs[0].dtype)]
    r = len(shape) + 1
    a = axis % r
    out = tuple(shape[:a]) + (len(specs),) + tuple(shape[a:])
    return [Spec(out, specs[0].dtype, fold(PACK.kernel, specs, attrs, limit=64, shape=out))]


def _g_pack(op, dy):
    axis, rank = op.get_attr("axis"), dy.shape.rank
    return list(execute(UNPACK, (dy,), {"axis": axis if rank is None else axis % rank, "num": len(op.inputs)}))


def _pack0(*xs):
    """Pack along axis 0; 0-d numeric inputs (index vectors, shapes) take one `np.array` call, not `np.stack`."""
    for x in xs:
        if getattr(x, "ndim", 1):
            return np.stack(xs, axis=0)
    if xs and xs[0].dtype.kind in "biuf":
        return np.array(xs)          # inputs share one dtype (inference checks it): the result has it too
    return np.stack(xs, axis=0)


PACK = op("Pack", lambda *xs, axis: _pack0(*xs) if axis == 0 else np.stack(xs, axis=axis), infer_pack, _g_pack,
          extra={"specialize": lambda attrs: _pack0 if attrs["axis"] == 0 else None})


def _infer_unpack(specs, attrs):
    s = specs[0].shape
    axis, num = attrs["axis"], attrs["num"]
    if s is None:
        return [Spec(None, specs[0].dtype) for _ in range(num)]
    a = axis % len(s)
    return [Spec(tuple(s[:a]) + tuple(s[a + 1:]), specs[0].dtype) for _ in range(num)]


def _unpack_kernel(x, axis, num):
    if x.shape[axis] != num:
        raise InvalidArgumentError(f"Unpack: dimension {axis} has size {x.shape[axis]}, expected {num}",
                                   op_name="Unpack")
    return tuple(np.array(p) for p in np.moveaxis(x, axis, 0))


UNPACK = op("Unpack", _unpack_kernel, _infer_unpack,
            lambda op, *dys: [execute(PACK, tuple(dys), {"axis": op.get_attr("axis")})], num_outputs=-1)
