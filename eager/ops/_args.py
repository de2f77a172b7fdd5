"""Argument helpers for the shape/indexing ops: integer inputs, static axes, folding.

- `int_input(value, what, opname)`: a shape/axis/index argument as an integer
  *tensor input* (Python ints and lists become int32 constants, int64 when they
  do not fit; tensors pass through after a dtype check; a list mixing ints and
  scalar tensors is stacked).  Used for every argument that TensorFlow accepts
  as a tensor, so the same call builds a graph node when staging.
- `static_int(value, what, opname)`: a Python int for arguments TensorFlow also
  requires to be static (attrs such as `batch_dims`).
- `norm_axis(axis, rank, opname)`: range-check and normalize a static axis.
- `fold(kernel, specs, attrs, shape=out_shape)`: constant-fold a small op during
  inference so shape arithmetic stays static in graphs (returns None when not
  possible, or when the inputs or the output would exceed `FOLD_LIMIT`
  elements: checked on the output's static shape before computing).
- `check_same_dtypes(opname, arrays)`: kernel-side dtype agreement check.
- `float_tensor(opname, x, arg)` / `numeric_tensor(...)`: an op's input converted,
  with its dtype kind checked (the `nn` ops).

Never reads the value of a symbolic tensor.  Imports the eager core, conversion and the
primitives it stacks with (`_pack`, `cast`).
"""
from __future__ import annotations

import operator

import numpy as np

from .. import context as _context
from ..convert import constant, convert_to_tensor, holds_tensor
from ..dispatch import execute
from ..dtypes import as_dtype, int32, int64
from ..errors import InvalidArgumentError
from ..shape import brief_repr
from ..tensor import Tensor
from ._fold import FOLD_LIMIT, fold  # noqa: F401 - re-exported: the shape ops import them with their other helpers
from ._pack import PACK
from .casting import cast

EMPTY: dict = {}
_ctx_state = _context._state
_I32_MIN, _I32_MAX = -(2 ** 31), 2 ** 31 - 1


def int_const(arr: np.ndarray) -> Tensor:
    """Wrap a NumPy array (usually integer) as a constant (a Const node when building a graph)."""
    if _ctx_state.stack[-1].is_eager:
        return Tensor(arr)
    return constant(arr)


def _is_tensorish(v) -> bool:
    return isinstance(v, Tensor) or hasattr(v, "_to_tensor")


def int_input(value, what: str = "axis", opname: str = "op") -> Tensor:
    """`value` (int, list of ints, int tensor, or list mixing ints and scalar tensors) as an int tensor."""
    if isinstance(value, Tensor) or hasattr(value, "_to_tensor"):
        t = convert_to_tensor(value)
        if not t.dtype.is_integer:
            raise InvalidArgumentError(f"{opname}: {what} must be an int32 or int64 tensor, got {t.dtype.name}",
                                       op_name=opname)
        return t
    if isinstance(value, (list, tuple)) and any(_is_tensorish(v) for v in value):
        return pack_ints(value, what, opname)
    if isinstance(value, (list, tuple)) and holds_tensor(value):   # nested, e.g. paddings [[n, 0]]
        return int_input(convert_to_tensor(value), what, opname)
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        arr = np.asarray(value, dtype=object)
    if arr.dtype.kind not in "iu":
        if arr.size == 0 and arr.dtype.kind == "f":
            arr = arr.astype(np.int32)
        else:
            raise TypeError(f"{opname}: {what} must be integers, got {brief_repr(value)}")
    if arr.dtype != np.int32:
        if arr.size and (arr.min() < _I32_MIN or arr.max() > _I32_MAX):
            arr = arr.astype(np.int64)
        else:
            arr = arr.astype(np.int32)
    return int_const(arr)


def pack_ints(values, what: str = "indices", opname: str = "op") -> Tensor:
    """Stack a list of Python ints and scalar int tensors into a 1-D int tensor (int64 if any is)."""
    ts = [convert_to_tensor(v) if _is_tensorish(v) else None for v in values]
    wide = any(t is not None and t.dtype is int64 for t in ts)
    dt = int64 if wide else int32
    parts = []
    for v, t in zip(values, ts):
        if t is None:
            parts.append(int_const(np.array(operator.index(v), dtype=dt.as_numpy_dtype)))
        else:
            if not t.dtype.is_integer or (t.shape.rank not in (None, 0)):
                raise TypeError(f"{opname}: {what} entries must be ints or scalar integer tensors, got "
                                f"{t.dtype.name} tensor of shape {t.shape}")
            parts.append(cast(t, dt))
    return execute(PACK, tuple(parts), {"axis": 0})


def static_int(value, what: str = "axis", opname: str = "op") -> int:
    """A Python int for an argument that must be known when the op is built."""
    if isinstance(value, Tensor):
        value = value._python_value(what)  # raises a clear error for symbolic tensors
    try:
        return operator.index(value if not isinstance(value, np.ndarray) else value.item())
    except TypeError:
        raise TypeError(f"{opname}: {what} must be a Python int, got {value!r}") from None


def norm_axis(axis: int, rank, opname: str = "op", what: str = "axis") -> int:
    """Check -rank <= axis < rank and return the non-negative axis (unchanged when rank is unknown)."""
    if rank is None:
        return axis
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"{opname}: {what} {axis} is out of range for a tensor of rank {rank} "
                                   f"(expected [{-rank}, {rank}))", op_name=opname)
    return axis % rank



def value_ints(spec):
    """The known value of an integer spec as a list of Python ints, or None."""
    if spec.value is None:
        return None
    return [int(v) for v in np.asarray(spec.value).reshape(-1)]


def vector_len(spec):
    """Static length of a 1-D spec (None if unknown)."""
    if spec.shape is None or len(spec.shape) != 1:
        return None
    return spec.shape[0]


def check_same_dtypes(opname: str, arrays, what: str = "inputs") -> None:
    """Kernel-side check (eager and graph execution): all arrays share one dtype."""
    d0 = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype != d0:
            raise InvalidArgumentError(
                f"{opname}: all {what} must have the same dtype, got {_dt(d0)} and {_dt(a.dtype)} "
                f"(shapes {[list(np.shape(x)) for x in arrays]})", op_name=opname)


def _dt(npdtype) -> str:
    try:
        return as_dtype(npdtype).name
    except TypeError:
        return str(npdtype)


def merge_dim(a, b, opname: str, detail: str):
    """Two static dims that must agree (None = unknown)."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    raise InvalidArgumentError(f"{opname}: {detail}", op_name=opname)


def float_tensor(opname, x, arg="features"):
    """`x` as a tensor, which must be floating-point (InvalidArgumentError naming `opname` and `arg`)."""
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"{opname}: {arg} must be a floating-point tensor, got {t.dtype.name} "
                                   f"(shape {t.shape})", op_name=opname)
    return t


def numeric_tensor(opname, x, arg="features"):
    """`x` as a tensor, which must be numeric (InvalidArgumentError naming `opname` and `arg`)."""
    t = convert_to_tensor(x)
    if not t.dtype.is_numeric:
        raise InvalidArgumentError(f"{opname}: {arg} must be a numeric tensor, got {t.dtype.name}",
                                   op_name=opname)
    return t
