"""Helpers for declaring ops: shape inference building blocks and call wrappers.

- `infer_*`: common inference rules (same shape, broadcast).
- `broadcast_shapes(a, b)`: static broadcasting with None dims.
- `call_unary / call_binary`: convert operands (Python scalars take the tensor's
  dtype), check dtypes agree (no silent promotion: `InvalidArgumentError`
  naming the op and both dtypes), and dispatch.
- `as_attr_tuple`: normalise shape/axis arguments given as lists or tensors.
- `sum_to_shape(g, shape)`: the NumPy reduction of a broadcast gradient (the
  `SumToLike` op and `sum_to_like` sit in `array.py`, next to BroadcastTo).
"""
from __future__ import annotations

import numpy as np

from .. import context as _context
from ..convert import convert_to_tensor, operand
from ..dispatch import execute
from ..dtypes import bool_
from ..errors import InvalidArgumentError
from ..shape import broadcast_shapes  # noqa: F401 - re-exported for the op modules
from ..registry import Spec, op
from ..shape import brief_repr
from ..tensor import Tensor

EMPTY = {}
_ctx_state = _context._state


# ---------------------------------------------------------------- inference
def infer_same(specs, attrs):
    """Output has the shape and dtype of the first input."""
    return [Spec(specs[0].shape, specs[0].dtype)]


FLOAT_NAMES = "float16, float32, float64"
NUMERIC_NAMES = "float16, float32, float64, int8, int16, int32, int64, uint8"
_NP_BOOL = np.dtype(bool)


def dtype_error(opname: str, dtype, allowed: str) -> InvalidArgumentError:
    """TF's refusal of an input dtype the op is not registered for (e.g. Tanh on int32, Square on bool)."""
    return InvalidArgumentError(f"{opname}: value for attr 'T' of {dtype.name} is not in the list of allowed "
                                f"values: {allowed}; cast the input with eager.cast", op_name=opname)


def infer_same_numeric(opname: str):
    """`infer_same` for an arithmetic op: bool inputs are refused (NumPy would compute in int8 or float16
    while the graph inferred bool)."""
    def infer(specs, attrs):
        if specs[0].dtype is bool_:
            raise dtype_error(opname, bool_, NUMERIC_NAMES)
        return [Spec(specs[0].shape, specs[0].dtype)]
    return infer


def infer_same_float(opname: str):
    """`infer_same` for an op defined on floating types only: any other input dtype is refused."""
    def infer(specs, attrs):
        if not specs[0].dtype.is_floating:
            raise dtype_error(opname, specs[0].dtype, FLOAT_NAMES)
        return [Spec(specs[0].shape, specs[0].dtype)]
    return infer


def _check_dtypes_match(specs, opname):
    if specs[0].dtype is not specs[1].dtype:
        raise InvalidArgumentError(f"{opname}: operands have different dtypes ({specs[0].dtype.name} and "
                                   f"{specs[1].dtype.name}); graphjit does not promote dtypes", op_name=opname)


def infer_broadcast(specs, attrs, opname="binary op"):
    """Arithmetic on two operands of one dtype (bool refused, as TF's arithmetic kernels do)."""
    _check_dtypes_match(specs, opname)
    if specs[0].dtype is bool_:
        raise dtype_error(opname, bool_, NUMERIC_NAMES)
    return [Spec(broadcast_shapes(specs[0].shape, specs[1].shape, opname), specs[0].dtype)]


def infer_broadcast_bool(specs, attrs, opname="comparison"):
    _check_dtypes_match(specs, opname)
    return [Spec(broadcast_shapes(specs[0].shape, specs[1].shape, opname), bool_)]


def make_infer_broadcast(opname):
    return lambda specs, attrs: infer_broadcast(specs, attrs, opname)


def normalize_axis(axis, rank, opname="op"):
    if rank is None:
        return axis
    if not -rank <= axis < max(rank, 1) and not (rank == 0 and axis in (0, -1)):
        raise InvalidArgumentError(f"{opname}: axis {axis} is out of range for a tensor of rank {rank}",
                                   op_name=opname)
    return axis % rank if rank else 0


# ---------------------------------------------------------------- wrappers
def call_unary(opdef, x, name=None, attrs=EMPTY):
    if not isinstance(x, Tensor):
        x = convert_to_tensor(x)
    v = x._value
    if v is not None and v.dtype.kind != "f":     # eagerly, the op's inference decides whether the dtype is
        opdef.infer([Spec(v.shape, x.dtype)], attrs)      # allowed (floats pass every unary op: skip it)
    return execute(opdef, (x,), attrs, name)


def check_same_dtype(opdef, x, y):
    if x.dtype is not y.dtype:
        raise InvalidArgumentError(
            f"{opdef.name}: cannot compute {opdef.name} of a {x.dtype.name} tensor and a {y.dtype.name} tensor "
            f"(shapes {x.shape} and {y.shape}); graphjit does not promote dtypes: cast one operand with "
            f"eager.cast", op_name=opdef.name)


def binary_operands(opdef, x, y):
    if type(x) is not Tensor or type(y) is not Tensor:
        if isinstance(x, Tensor) or hasattr(x, "_to_tensor"):
            x = operand(x, None) if not isinstance(x, Tensor) else x
            y = operand(y, x)
        elif isinstance(y, Tensor) or hasattr(y, "_to_tensor"):
            y = operand(y, None) if not isinstance(y, Tensor) else y
            x = operand(x, y)
        else:
            x = convert_to_tensor(x)
            y = operand(y, x)
    check_same_dtype(opdef, x, y)
    return x, y


def call_binary(opdef, x, y, name=None, attrs=EMPTY):
    """Convert operands and dispatch a binary op (fast path: eager tensor op eager tensor/scalar)."""
    if type(x) is Tensor and _ctx_state.stack[-1].is_eager:
        ty = type(y)
        if ty is Tensor:
            dt = x._value.dtype
            if dt == y._value.dtype and dt is not _NP_BOOL:       # bool: the slow path checks the op
                return execute(opdef, (x, y), attrs, name)
        elif (ty is float or ty is int) and x._value.dtype.kind == "f":
            return execute(opdef, (x, Tensor(x._value.dtype.type(y))), attrs, name)
        elif getattr(ty, "_is_variable", False):      # tensor op variable: read it (as `operand` does)
            y = y._to_tensor()
            dt = x._value.dtype
            if dt == y._value.dtype and dt is not _NP_BOOL:
                return execute(opdef, (x, y), attrs, name)
    x, y = binary_operands(opdef, x, y)
    if x.dtype is bool_ and not (x._is_symbolic or y._is_symbolic):   # eagerly, as a graph's inference would
        opdef.infer([Spec(np.shape(x._value), bool_), Spec(np.shape(y._value), bool_)], attrs)
    return execute(opdef, (x, y), attrs, name)


def as_attr_tuple(value, what="shape", opname=None):
    """A shape/axis argument as a tuple of Python ints (lists, tuples, concrete tensors).

    Only integers pass: `axis=1.5` or a dim of 2.5 is a TypeError (truncating would pick another axis
    silently), an integer beyond int64 a ValueError, both naming `opname` and `what`."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        static = getattr(value, "_static_value", None) if value._is_symbolic else None
        value = static if static is not None else value._python_value(what)   # a graph constant is known now
    if type(value) is int or isinstance(value, np.integer):
        ints = (int(value),)
    else:
        try:
            arr = np.asarray(value)
        except (TypeError, ValueError, OverflowError):
            arr = np.asarray(value, dtype=object)     # ragged
        kind = arr.dtype.kind
        if kind in "iu":
            ints = tuple(arr.reshape(-1).tolist())
        elif kind == "f" and arr.size == 0:           # np.asarray([]) is float64
            ints = ()
        elif kind == "O" and all(type(v) is int or isinstance(v, np.integer) for v in arr.reshape(-1)):
            ints = tuple(int(v) for v in arr.reshape(-1))            # ints too big for int64
        else:
            raise TypeError(f"{opname or 'op'}: {what} must be integers, got {brief_repr(value)}")
    for v in ints:
        if not -_INT64_LIMIT <= v < _INT64_LIMIT:
            raise ValueError(f"{opname or 'op'}: {what} must be int64 values, got an integer of "
                             f"{v.bit_length()} bits")
    return ints


_INT64_LIMIT = 2 ** 63


# ---------------------------------------------------------------- broadcasting gradient (kernel side)
def sum_to_shape(g, shape):
    """Sum array `g` over the axes along which an array of `shape` was broadcast."""
    gshape = g.shape if type(g) is np.ndarray else np.shape(g)
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    if lead == 1 and gshape[1:] == shape:          # a bias's gradient: the leading axis only
        if shape:           # the reduction's result has the shape already (keepdims changes no sum)
            return np.add.reduce(g, axis=0, dtype=g.dtype)
        axes = (0,)
    else:
        axes = tuple(range(lead)) + tuple(i + lead for i, d in enumerate(shape)
                                          if d == 1 and gshape[i + lead] != 1)
    r = np.add.reduce(g, axis=axes, keepdims=True, dtype=g.dtype) if axes else g
    return np.asarray(r).reshape(shape)


_any = np.logical_or.reduce        # np.any's own reduction, without its Python wrapper


def is_known_zero(t) -> bool:
    """True when `t` is certainly all zeros: an eager zero tensor, or a ZerosLike/zero Const graph node.

    Gradient rules of multi-output ops use it to skip terms for outputs that
    received no gradient (backprop fills those with zeros), like TensorFlow's
    `IsZero` in its gradient code.
    """
    if not t._is_symbolic:
        v = t._value
        return not (_any(v, None, bool) if type(v) is np.ndarray else np.any(v))
    op = t.op
    if op.type == "ZerosLike":
        return True
    if op.type in ("Const", "Fill", "BroadcastTo"):
        v = t._static_value if hasattr(t, "_static_value") else None
        return v is not None and not np.any(v)
    return False
