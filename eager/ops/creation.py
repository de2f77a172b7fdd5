"""Creation ops: range, linspace, one_hot (TensorFlow op types `Range LinSpace
OneHot`; `eye`, a composite over `range`, is in `linalg.py`, as TensorFlow's is).

`range` infers its dtype like TensorFlow: the widest of its arguments in the
order int32 < int64 < float32 < float64 (Python ints are int32, floats
float32).  With only Python numbers it builds a constant directly (what
constant folding would produce anyway).  `LinSpace` is differentiable in
`start` and `stop` (TensorFlow 2's `linspace` is too).  This module defines the
public `range`, so it never uses the builtin.
"""
from __future__ import annotations

import builtins
import numbers

import numpy as np

from ..convert import constant, convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype, float32, float64, int32, int64
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import EMPTY, fold, int_input, norm_axis, static_int, value_ints
from ._define import broadcast_shapes
from .array import reshape, sum_to_like
from .math import cast, divide, maximum, multiply, subtract
from .reduction import reduce_sum

__all__ = ["range", "linspace", "one_hot"]

_brange = builtins.range
_RANGE_ORDER = (int32, int64, float32, float64)


# ------------------------------------------------------------------ range
def _range_check(start, limit, delta):
    if delta == 0:
        raise InvalidArgumentError("Range: requires delta != 0", op_name="Range")
    if delta > 0 and start > limit:
        raise InvalidArgumentError(f"Range: requires start <= limit when delta > 0: {start}/{limit}",
                                   op_name="Range")
    if delta < 0 and start < limit:
        raise InvalidArgumentError(f"Range: requires start >= limit when delta < 0: {start}/{limit}",
                                   op_name="Range")


def _range_kernel(start, limit, delta):
    _range_check(start, limit, delta)
    return np.arange(start, limit, delta, dtype=np.result_type(start)).astype(np.result_type(start), copy=False)


def _infer_range(specs, attrs):
    dt = specs[0].dtype
    vals = [s.value for s in specs]
    if any(v is None for v in vals):
        return [Spec((None,), dt)]
    _range_check(*vals)
    n = max(int(np.ceil((float(vals[1]) - float(vals[0])) / float(vals[2]))), 0)
    return [Spec((n,), dt, fold(_range_kernel, specs, shape=(n,)))]


RANGE = op("Range", _range_kernel, _infer_range)


def _arg_dtype(a):
    if isinstance(a, Tensor) or hasattr(a, "_to_tensor"):
        return convert_to_tensor(a).dtype
    if isinstance(a, (np.ndarray, np.generic)):
        return as_dtype(a.dtype)
    if isinstance(a, bool) or not isinstance(a, numbers.Real):
        raise TypeError(f"range: start, limit and delta must be numbers or scalar tensors, got {a!r}")
    if isinstance(a, numbers.Integral):
        return int32 if -2 ** 31 <= a < 2 ** 31 else int64
    return float32


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TensorFlow's name
    """[start, start + delta, ...) up to `limit` (exclusive); `range(n)` counts 0..n-1."""
    if limit is None:
        start, limit = 0, start
    args = (start, limit, delta)
    if dtype is not None:
        dt = as_dtype(dtype)
    else:
        dts = [_arg_dtype(a) for a in args]
        for d in dts:
            if d not in _RANGE_ORDER:
                raise InvalidArgumentError(f"Range: arguments must be int32, int64, float32 or float64, got "
                                           f"{d.name}", op_name="Range")
        dt = max(dts, key=_RANGE_ORDER.index)
    if not any(isinstance(a, Tensor) or hasattr(a, "_to_tensor") for a in args):
        vals = [np.asarray(a).astype(dt.as_numpy_dtype) for a in args]
        _range_check(*vals)
        return constant(np.arange(*vals, dtype=dt.as_numpy_dtype), name=None if name == "range" else name)
    ts = [cast(convert_to_tensor(a), dt) if isinstance(a, Tensor) or hasattr(a, "_to_tensor")
          else constant(a, dt) for a in args]
    return execute(RANGE, tuple(ts), EMPTY, None if name == "range" else name)


# ------------------------------------------------------------------ linspace
def _linspace_kernel(start, stop, num, axis=0):
    n = int(num)
    if n < 0:
        raise InvalidArgumentError(f"LinSpace: num must be non-negative, got {n}", op_name="LinSpace")
    return np.linspace(start, stop, n, axis=axis, dtype=np.result_type(start, stop))


def _infer_linspace(specs, attrs):
    a, b, n = specs
    shape = broadcast_shapes(a.shape, b.shape, "LinSpace")
    nv = value_ints(n)
    if shape is None:
        return [Spec(None, a.dtype)]
    ax = norm_axis(attrs["axis"], len(shape) + 1, "LinSpace")
    out = shape[:ax] + (None if nv is None else nv[0],) + shape[ax:]
    return [Spec(out, a.dtype, fold(_linspace_kernel, specs, attrs, shape=out))]


def _g_linspace(op, dy):
    start, stop, num = op.inputs
    ax = op.get_attr("axis")
    r = dy.shape.rank
    ax = ax % r if r else 0
    steps = cast(maximum(subtract(num, 1), 1), dy.dtype)
    t = divide(cast(range(num), dy.dtype), steps)
    if r is not None and r > 1:
        t = reshape(t, [1] * ax + [-1] + [1] * (r - ax - 1))
    d_stop = reduce_sum(multiply(dy, t), axis=ax)
    d_start = subtract(reduce_sum(dy, axis=ax), d_stop)
    return [sum_to_like(d_start, start), sum_to_like(d_stop, stop), None]


LINSPACE = op("LinSpace", _linspace_kernel, _infer_linspace, _g_linspace)


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop` inclusive (N-D start/stop broadcast; new dim at axis)."""
    a = start if isinstance(start, Tensor) else convert_to_tensor(start, dtype_hint=float32)
    b = stop if isinstance(stop, Tensor) else convert_to_tensor(stop, dtype=a.dtype if a.dtype.is_floating
                                                                 else None, dtype_hint=float32)
    for t in (a, b):
        if not t.dtype.is_floating:
            raise InvalidArgumentError(f"LinSpace: start and stop must be floating point, got {t.dtype.name}",
                                       op_name="LinSpace")
    if a.dtype is not b.dtype:
        raise InvalidArgumentError(f"LinSpace: start and stop must have the same dtype, got {a.dtype.name} and "
                                   f"{b.dtype.name}", op_name="LinSpace")
    n = int_input(num, "num", "LinSpace")
    shape = broadcast_shapes(a.shape.dims, b.shape.dims, "LinSpace")
    ax = static_int(axis, "axis", "LinSpace")
    if shape is not None:
        ax = norm_axis(ax, len(shape) + 1, "LinSpace")
    return execute(LINSPACE, (a, b, n), {"axis": ax}, name)


# ------------------------------------------------------------------ one_hot
def _one_hot_kernel(indices, depth, on_value, off_value, axis=-1):
    d = int(depth)
    if d < 0:
        raise InvalidArgumentError(f"OneHot: depth must be non-negative, got {d}", op_name="OneHot")
    hot = np.expand_dims(indices, -1) == np.arange(d)
    out = np.where(hot, on_value, off_value).astype(np.result_type(on_value), copy=False)
    if axis != -1 and axis != indices.ndim:
        out = np.moveaxis(out, -1, axis)
    return out


def _infer_one_hot(specs, attrs):
    i, d, on, off = specs
    if on.dtype is not off.dtype:
        raise InvalidArgumentError(f"OneHot: on_value and off_value must have the same dtype, got "
                                   f"{on.dtype.name} and {off.dtype.name}", op_name="OneHot")
    dv = value_ints(d)
    if i.shape is None:
        return [Spec(None, on.dtype)]
    ax = attrs["axis"]
    ax = len(i.shape) if ax == -1 else ax
    return [Spec(i.shape[:ax] + (None if dv is None else dv[0],) + i.shape[ax:], on.dtype)]


ONE_HOT = op("OneHot", _one_hot_kernel, _infer_one_hot)


def one_hot(indices, depth, on_value=None, off_value=None, axis=None, dtype=None, name=None):
    """A one-hot tensor: `on_value` where the new `axis` equals the index, else `off_value` (out of range: all off)."""
    i = indices if isinstance(indices, Tensor) else int_input(indices, "indices", "OneHot")
    if not (i.dtype.is_integer):
        raise InvalidArgumentError(f"OneHot: indices must be integers, got {i.dtype.name}", op_name="OneHot")
    given = [v for v in (on_value, off_value) if isinstance(v, Tensor) or hasattr(v, "_to_tensor")]
    if dtype is not None:
        dt = as_dtype(dtype)
    elif given:
        dt = convert_to_tensor(given[0]).dtype
    elif on_value is not None or off_value is not None:
        dt = convert_to_tensor(on_value if on_value is not None else off_value).dtype
    else:
        dt = float32
    on = convert_to_tensor(1 if on_value is None else on_value, dtype=dt) if not isinstance(on_value, Tensor) \
        else on_value
    off = convert_to_tensor(0 if off_value is None else off_value, dtype=dt) if not isinstance(off_value, Tensor) \
        else off_value
    if on.dtype is not dt or off.dtype is not dt:
        raise InvalidArgumentError(f"OneHot: on_value ({on.dtype.name}) and off_value ({off.dtype.name}) must "
                                   f"match dtype {dt.name}", op_name="OneHot")
    r = i.shape.rank
    ax = -1 if axis is None else static_int(axis, "axis", "OneHot")
    if r is not None and not -1 <= ax <= r:
        raise InvalidArgumentError(f"OneHot: axis {ax} must be in [-1, {r}] for indices of rank {r}",
                                   op_name="OneHot")
    return execute(ONE_HOT, (i, int_input(depth, "depth", "OneHot"), on, off), {"axis": ax}, name)
