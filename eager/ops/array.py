"""Shape and creation ops: shape/size/rank, reshape, broadcast_to, zeros/ones...

`sum_to_like(g, x)` (the `SumToLike` op) reduces a broadcast gradient back to
`x`'s shape; it lives here because it and BroadcastTo are each other's gradient.

Shape arguments given as Python lists become `int32` constant inputs (as in
TensorFlow), so reshape checks its element count at run time, always: no
optimizer may drop it (TensorFlow's reshape bug).
"""
from __future__ import annotations

import numpy as np

from ..convert import constant, convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype, float32, int32
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import int_input, static_int
from ._define import EMPTY, as_attr_tuple, call_unary, infer_same, sum_to_shape
from ._pack import PACK, UNPACK, infer_pack
from .casting import cast

__all__ = ["shape", "size", "rank", "reshape", "broadcast_to", "zeros", "ones", "zeros_like", "ones_like",
           "fill", "stack", "unstack", "squeeze", "expand_dims"]


# ------------------------------------------------------------------ shape, size, rank
def _infer_shape_op(specs, attrs):
    s = specs[0].shape
    dt = attrs["out_type"]
    value = np.array(s, dtype=dt.as_numpy_dtype) if s is not None and None not in s else None
    return [Spec((None if s is None else len(s),), dt, value)]


SHAPE = op("Shape", lambda x, out_type: np.array(np.shape(x), dtype=out_type.as_numpy_dtype),
           _infer_shape_op)


def _infer_size(specs, attrs):
    s = specs[0].shape
    dt = attrs["out_type"]
    value = np.array(int(np.prod(s)), dtype=dt.as_numpy_dtype) if s is not None and None not in s else None
    return [Spec((), dt, value)]


SIZE = op("Size", lambda x, out_type: np.array(np.size(x), dtype=out_type.as_numpy_dtype), _infer_size)
RANK = op("Rank", lambda x: np.array(np.ndim(x), dtype=np.int32),
          lambda specs, attrs: [Spec((), int32, None if specs[0].shape is None else
                                     np.array(len(specs[0].shape), np.int32))])


def shape(input, out_type=int32, name=None):
    """The dynamic shape of `input` as a 1-D integer tensor."""
    return call_unary(SHAPE, input, name, {"out_type": as_dtype(out_type)})


def size(input, out_type=int32, name=None):
    return call_unary(SIZE, input, name, {"out_type": as_dtype(out_type)})


def rank(input, name=None):
    return call_unary(RANK, input, name)


# ------------------------------------------------------------------ reshape
def _reshape_kernel(x, shape):
    shape = tuple(int(d) for d in shape)
    try:
        return np.reshape(x, shape)
    except ValueError:
        raise InvalidArgumentError(
            f"Reshape: cannot reshape a tensor with {np.size(x)} elements (shape {list(np.shape(x))}) to "
            f"shape {list(shape)}", op_name="Reshape") from None


def _infer_reshape(specs, attrs):
    x, s = specs
    if s.value is None:
        n = s.shape[0] if s.shape else None
        return [Spec(None if n is None else (None,) * n, x.dtype)]
    target = [int(d) for d in np.asarray(s.value).reshape(-1)]
    if target.count(-1) > 1:
        raise InvalidArgumentError(f"Reshape: at most one dimension may be -1, got {target}", op_name="Reshape")
    known = x.shape is not None and None not in x.shape
    if known:
        n = int(np.prod(x.shape))
        rest = int(np.prod([d for d in target if d != -1]))
        if -1 in target:
            if rest == 0 or n % rest:
                raise InvalidArgumentError(f"Reshape: cannot reshape {list(x.shape)} ({n} elements) to {target}",
                                           op_name="Reshape")
            target = [n // rest if d == -1 else d for d in target]
        elif rest != n:
            raise InvalidArgumentError(f"Reshape: cannot reshape a tensor with {n} elements (shape "
                                       f"{list(x.shape)}) to shape {target}", op_name="Reshape")
    return [Spec(tuple(None if d == -1 else d for d in target), x.dtype)]


RESHAPE = op("Reshape", _reshape_kernel, _infer_reshape,
             lambda op, dy: [reshape(dy, shape(op.inputs[0])), None])


def _shape_input(value):
    if isinstance(value, (list, tuple)) and any(hasattr(v, "dtype") and hasattr(v, "_is_symbolic") for v in value):
        return stack([convert_to_tensor(v, int32) if not hasattr(v, "_is_symbolic") else v for v in value])
    if hasattr(value, "_is_symbolic"):
        return value
    dims = as_attr_tuple(value if value is not None else [], "shape", "Reshape")
    return int_input(list(dims), "shape", "Reshape")       # int32, or int64 when a dim needs it


def reshape(tensor, shape, name=None):
    """Reshape to `shape` (list or 1-D int tensor; one entry may be -1)."""
    t = convert_to_tensor(tensor)
    return execute(RESHAPE, (t, _shape_input(shape)), EMPTY, name)


# ------------------------------------------------------------------ broadcast_to
def _infer_broadcast_to(specs, attrs):
    x, s = specs
    if s.value is None:
        return [Spec(None if s.shape is None or s.shape[0] is None else (None,) * s.shape[0], x.dtype)]
    return [Spec(tuple(int(d) for d in s.value), x.dtype)]


def _g_broadcast_to(op, dy):
    return [sum_to_like(dy, op.inputs[0]), None]


BROADCAST_TO = op("BroadcastTo", lambda x, s: np.array(np.broadcast_to(x, tuple(int(d) for d in s))),
                  _infer_broadcast_to, _g_broadcast_to)


def broadcast_to(input, shape, name=None):
    return execute(BROADCAST_TO, (convert_to_tensor(input), _shape_input(shape)), EMPTY, name)


def _sum_to_like_kernel(g, x):
    return sum_to_shape(g, np.shape(x))


def _grad_sum_to_like(op, dy):
    return [broadcast_to(dy, shape(op.inputs[0])), None]


def _sum_to_like_for_shapes(attrs, in_dims, out_dims):
    """The kernel for known static shapes (a plan's `specialize_shapes`): the axes computed once; the
    same `np.add.reduce` over them (without keepdims when only leading axes go, which leaves the shape
    `x` has), so the same bits.  Other run-time shapes take the general kernel."""
    gs, xs = in_dims
    if gs is None or xs is None or None in gs or None in xs:
        return None
    gs, xs = tuple(gs), tuple(xs)
    lead = len(gs) - len(xs)
    axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(xs) if d == 1 and gs[i + lead] != 1)
    if lead < 0 or not axes:
        return None
    reduce_, general = np.add.reduce, _sum_to_like_kernel
    if axes == tuple(range(lead)) and xs:    # leading axes only: the reduced shape is `x`'s (an array)

        def leading(g, x):
            if g.shape != gs or x.shape != xs:
                return general(g, x)
            return reduce_(g, axes, g.dtype)
        return leading

    def kept(g, x):
        if g.shape != gs or x.shape != xs:
            return general(g, x)
        return reduce_(g, axes, g.dtype, None, True).reshape(xs)
    return kept


SUM_TO_LIKE = op("SumToLike", _sum_to_like_kernel,
                 lambda specs, attrs: [Spec(specs[1].shape, specs[0].dtype)],
                 _grad_sum_to_like,
                 doc="Reduce a broadcast gradient (input 0) to the shape of input 1.",
                 extra={"specialize_shapes": _sum_to_like_for_shapes})


def sum_to_like(g, x):
    """`g` summed back to the shape of `x` (identity when the static shapes already agree)."""
    if not (g._is_symbolic or x._is_symbolic):
        if g._value.shape == x._value.shape:      # eager fast path: no TensorShape objects
            return g
        return execute(SUM_TO_LIKE, (g, x), EMPTY)
    gs, xs = g.shape, x.shape
    if gs.is_fully_defined() and gs == xs:
        return g
    return execute(SUM_TO_LIKE, (g, x), EMPTY)


# ------------------------------------------------------------------ creation
def _infer_fill(specs, attrs):
    dims, value = specs
    if dims.value is None:
        return [Spec(None if dims.shape is None or dims.shape[0] is None else (None,) * dims.shape[0],
                     value.dtype)]
    return [Spec(tuple(int(d) for d in dims.value), value.dtype)]


FILL = op("Fill", lambda dims, value: np.full(tuple(int(d) for d in dims), value), _infer_fill)


def fill(dims, value, name=None):
    return execute(FILL, (_shape_input(dims), convert_to_tensor(value)), EMPTY, name)


def _is_dynamic_shape(shape) -> bool:
    """A shape given as a tensor, or as a list holding tensors (e.g. [shape(x)[0], 3])."""
    if isinstance(shape, Tensor):
        return True
    return isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape)


def _static_dims(shape, opname):
    dims = as_attr_tuple(shape, "shape", opname) or ()
    if any(d < 0 for d in dims):
        raise InvalidArgumentError(f"{opname}: shape must not have negative dimensions, got {list(dims)}",
                                   op_name=opname)
    return dims


def zeros(shape, dtype=float32, name=None):
    dt = as_dtype(dtype)
    if not _is_dynamic_shape(shape):
        return constant(np.zeros(_static_dims(shape, "zeros"), dtype=dt.as_numpy_dtype), name=name)
    return fill(shape, constant(0, dt), name)


def ones(shape, dtype=float32, name=None):
    dt = as_dtype(dtype)
    if not _is_dynamic_shape(shape):
        return constant(np.ones(_static_dims(shape, "ones"), dtype=dt.as_numpy_dtype), name=name)
    return fill(shape, constant(1, dt), name)


ZEROS_LIKE = op("ZerosLike", np.zeros_like, infer_same, elementwise=True)
ONES_LIKE = op("OnesLike", np.ones_like, infer_same, elementwise=True)


def zeros_like(input, dtype=None, name=None):
    t = convert_to_tensor(input)
    out = call_unary(ZEROS_LIKE, t, name)
    if dtype is not None:
        out = cast(out, dtype)
    return out


def ones_like(input, dtype=None, name=None):
    t = convert_to_tensor(input)
    out = call_unary(ONES_LIKE, t, name)
    if dtype is not None:
        out = cast(out, dtype)
    return out


# ------------------------------------------------------------------ stack / squeeze / expand_dims
def stack(values, axis=0, name=None):
    axis = static_int(axis, "axis", "Pack")
    if axis == 0 and isinstance(values, Tensor):
        # As in TensorFlow: a tensor is already its rows stacked (this is what
        # a list appended to in a staged loop becomes after the loop).
        return values
    ts = [convert_to_tensor(v) for v in values]
    if not ts:
        raise InvalidArgumentError("stack: needs at least one tensor", op_name="Pack")
    infer_pack([Spec(t.shape.dims, t.dtype) for t in ts], {"axis": axis})
    return execute(PACK, tuple(ts), {"axis": int(axis)}, name)


def unstack(value, num=None, axis=0, name=None):
    t = convert_to_tensor(value)
    axis = static_int(axis, "axis", "Unpack")
    if num is None:
        if t.shape.rank is None or t.shape[axis] is None:
            raise ValueError(f"unstack: cannot infer num from shape {t.shape}; pass num")
        num = t.shape[axis]
    if t.shape.rank is not None:
        axis = axis % t.shape.rank
    out = execute(UNPACK, (t,), {"axis": int(axis), "num": int(num)}, name)
    return list(out)


def _squeeze_kernel(x, axis):
    return np.squeeze(x, axis=axis)


def _infer_squeeze(specs, attrs):
    s = specs[0].shape
    axis = attrs["axis"]
    if s is None:
        return [Spec(None, specs[0].dtype)]
    if axis is None:
        if None in s:
            return [Spec(None, specs[0].dtype)]
        return [Spec(tuple(d for d in s if d != 1), specs[0].dtype)]
    axes = {a % len(s) for a in axis}
    for a in axes:
        if s[a] is not None and s[a] != 1:
            raise InvalidArgumentError(f"Squeeze: cannot squeeze dimension {a} of size {s[a]} (shape {list(s)})",
                                       op_name="Squeeze")
    return [Spec(tuple(d for i, d in enumerate(s) if i not in axes), specs[0].dtype)]


SQUEEZE = op("Squeeze", _squeeze_kernel, _infer_squeeze,
             lambda op, dy: [reshape(dy, shape(op.inputs[0]))])


def squeeze(input, axis=None, name=None):
    t = convert_to_tensor(input)
    axis_t = as_attr_tuple(axis, "axis", "Squeeze")
    _infer_squeeze([Spec(t.shape.dims, t.dtype)], {"axis": axis_t})
    return execute(SQUEEZE, (t,), {"axis": axis_t}, name)


def _infer_expand(specs, attrs):
    s = specs[0].shape
    if s is None:
        return [Spec(None, specs[0].dtype)]
    a = attrs["axis"] % (len(s) + 1)
    return [Spec(tuple(s[:a]) + (1,) + tuple(s[a:]), specs[0].dtype)]


EXPAND_DIMS = op("ExpandDims", lambda x, axis: np.expand_dims(x, axis), _infer_expand,
                 lambda op, dy: [reshape(dy, shape(op.inputs[0]))])


def expand_dims(input, axis, name=None):
    t = convert_to_tensor(input)
    r = t.shape.rank
    axis = static_int(axis, "axis", "ExpandDims")
    if r is not None and not -(r + 1) <= axis <= r:
        raise InvalidArgumentError(f"ExpandDims: axis {axis} out of range for rank {r}", op_name="ExpandDims")
    return execute(EXPAND_DIMS, (t,), {"axis": axis}, name)
