"""Python/NumPy values -> Tensors, with TensorFlow's dtype rules.

`to_array(value, dtype)` is the one place where literals get their dtype:
Python float -> float32, int -> int32 (int64 if it does not fit), bool -> bool,
str/bytes -> string (object array of bytes); NumPy arrays keep their dtype
unless `dtype` is given.  Converting a value to a dtype it does not fit (2.5 to
int32) raises TypeError naming both.  `constant` stages a `Const` op when a
graph is being built.  `convert_to_tensor` and `operand` (what op wrappers
use) also pack lists and tuples holding tensors, as TensorFlow does.

Nested lists follow TensorFlow's rules (`py_seq_tensor.cc`): they must be
rectangular, else ValueError "Can't convert non-rectangular Python sequence";
their leaves must be all strings, all bools or all numbers (ints, floats and
complex mix freely), else ValueError "Can't convert Python sequence with mixed
types" (`[1, 'a']`).  TensorFlow also rejects `[True, 1]` but, by accident of
its converter, accepts `[1, True]` as int32; we reject bools mixed with
numbers in either order.

`convert_to_dtype(value, dtype, what)` is the one rule for values bound to a
declared dtype (`Session.run` feeds, `input_signature` arguments): Python
values and NumPy arrays are converted when no value changes (float64 ->
float32 and int -> float are allowed, 2.5 -> int32 is not); a Tensor or
Variable of another dtype is never converted.

Conversion sits below the op wrappers: it uses only the Const and Pack
primitives (`ops/_const.py`, `ops/_pack.py`), never a wrapper module.
"""
from __future__ import annotations

import itertools
import numbers

import numpy as np

from . import context as _context
from .dispatch import execute
from .dtypes import as_dtype, dtype_of_array, string
from .errors import InvalidArgumentError
from .ops._const import stage_const
from .ops._pack import PACK, infer_pack
from .registry import Spec
from .tensor import Tensor

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


def _to_bytes_array(value):
    arr = np.asarray(value, dtype=object)
    flat = arr.reshape(-1)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            flat[i] = v.encode("utf-8")
        elif not isinstance(v, bytes):
            raise TypeError(f"cannot convert {v!r} (a {type(v).__name__}) to a string tensor element")
    return flat.reshape(arr.shape)


def _contains_strings(value) -> bool:
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (str, bytes))


_STRING_TYPES = (str, bytes, np.str_, np.bytes_)
_SEQUENCES = (list, tuple)


def _leaf_kind(t):
    if issubclass(t, _STRING_TYPES):
        return "string"
    if issubclass(t, (bool, np.bool_)):
        return "bool"
    if issubclass(t, numbers.Number):
        return "number"
    return None


def _check_sequence(value) -> None:
    """Raise ValueError (as TensorFlow does) for a ragged nested list or one mixing strings, bools and numbers.

    Level by level over the nested lists/tuples; a level holding array-likes
    (ndarrays, tensors) is left to NumPy, which checks their shapes.
    """
    level, depth = [value], 0
    while True:
        types = set(map(type, level))
        if not any(issubclass(t, _SEQUENCES) for t in types):
            break
        if not all(issubclass(t, _SEQUENCES) for t in types):
            if any(_leaf_kind(t) is None and not issubclass(t, _SEQUENCES) for t in types):
                return                       # array-likes inside the list: NumPy decides
            raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: {_short(value)} mixes "
                             f"lists and scalars at depth {depth}")
        if len(set(map(len, level))) > 1:
            raise ValueError(f"Can't convert non-rectangular Python sequence to Tensor: {_short(value)} has "
                             f"lists of lengths {sorted(set(map(len, level)))} at depth {depth}")
        level = list(itertools.chain.from_iterable(level))
        depth += 1
    kinds: dict = {}
    for t in types:
        k = _leaf_kind(t)
        if k is not None:
            kinds.setdefault(k, t.__name__)
    if len(kinds) > 1:
        mix = " and ".join(f"{k}s ({name})" for k, name in sorted(kinds.items()))
        raise ValueError(f"Can't convert Python sequence with mixed types to Tensor: {_short(value)} mixes {mix}; "
                         f"a tensor's elements must be all strings, all bools, or all numbers")


def _short(value) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def to_array(value, dtype=None):
    """Convert a Python or NumPy value to a NumPy array (or scalar) of the right dtype."""
    dt = None if dtype is None else as_dtype(dtype)
    if dt is not None and type(value) in (int, float) and (dt.is_floating or (type(value) is int and dt.is_integer
                                                                              and dt.min <= value <= dt.max)):
        return np.array(value, dtype=dt.as_numpy_dtype)   # fast path: a Python number that fits
    if isinstance(value, Tensor):
        value = value._python_value("constant")
    if isinstance(value, (np.ndarray, np.generic)):
        arr = value
        if arr.dtype.kind in "US":
            arr = _to_bytes_array(arr.tolist() if arr.ndim else arr.item())
        if dt is not None and dtype_of_array(arr) is not dt:
            arr = _cast_checked(arr, dt, value)
        return np.array(arr)  # a private copy: tensors are immutable
    if isinstance(value, _SEQUENCES):
        _check_sequence(value)
    if isinstance(value, (str, bytes)) or _contains_strings(value):
        if dt is not None and dt is not string:
            raise TypeError(f"cannot convert string value {value!r} to dtype {dt.name}")
        return _to_bytes_array(value)
    try:
        arr = np.asarray(value)
    except ValueError as e:
        raise TypeError(f"cannot convert {value!r} to a tensor: {e}") from None
    kind = arr.dtype.kind
    if kind == "O":
        raise TypeError(f"cannot convert {value!r} (a {type(value).__name__}) to a tensor; "
                        f"expected a number, bool, string, nested list of them, or a NumPy array")
    if dt is not None:
        return _cast_checked(arr, dt, value)
    if kind == "f":
        return arr.astype(np.float32)
    if kind in "iu":
        if arr.size and (arr.min() < _INT32_MIN or arr.max() > _INT32_MAX):
            return arr.astype(np.int64)
        return arr.astype(np.int32)
    return arr


def convert_to_dtype(value, dtype, what: str):
    """`value` as a NumPy array of `dtype`, for a slot that declares its dtype (a feed, an input_signature entry).

    The one conversion rule shared by `Session.run` feeds and `input_signature`:
    Python values and NumPy arrays are converted to `dtype` when no value
    changes (see `to_array`); an eager Tensor or a Variable must already have
    `dtype` (it is never converted implicitly).  Raises TypeError naming
    `what`, the expected and the actual dtype.
    """
    dt = as_dtype(dtype)
    if isinstance(value, Tensor) or getattr(value, "_is_variable", False):
        if value.dtype is not dt:
            kind = "tensor" if isinstance(value, Tensor) else "variable"
            raise TypeError(f"{what}: expected dtype {dt.name}, got a {kind} of dtype {value.dtype.name}; "
                            f"a tensor is never converted implicitly (cast it first: cast(t, {dt.name}))")
        return value._value if isinstance(value, Tensor) else value.numpy()     # a variable's is a copy
    try:
        return to_array(value, dt)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: {e}") from None


def _cast_checked(arr, dt, original):
    if dt is string:
        if arr.dtype.kind != "O":
            raise TypeError(f"cannot convert {original!r} to dtype string")
        return arr
    if arr.dtype.kind == "O":
        raise TypeError(f"cannot convert string value {original!r} to dtype {dt.name}")
    if arr.dtype.kind == "c" and np.any(np.imag(arr) != 0):     # no complex dtypes: only real values fit
        raise TypeError(f"cannot convert complex value {original!r} to dtype {dt.name} without losing its "
                        f"imaginary part")
    if (dt.is_integer or dt.is_bool) and arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(np.equal(np.mod(arr, 1), 0)):
            raise TypeError(f"cannot convert {original!r} to dtype {dt.name} without losing its value")
    if dt.is_integer and arr.size and arr.dtype.kind in "iuf":
        info = np.iinfo(dt.np_dtype)
        if arr.min() < info.min or arr.max() > info.max:
            raise TypeError(f"value {original!r} is out of range for dtype {dt.name}")
    return arr.astype(dt.np_dtype)


def constant(value, dtype=None, shape=None, name=None) -> Tensor:
    """A tensor holding `value` (optionally cast to `dtype` and broadcast/reshaped to `shape`)."""
    arr = to_array(value, dtype)
    if shape is not None:
        shape = tuple(int(d) for d in shape)
        if arr.size == 1 and int(np.prod(shape)) != 1:
            arr = np.broadcast_to(arr.reshape(()), shape).copy()
        elif arr.size == int(np.prod(shape)):
            arr = arr.reshape(shape)
        else:
            raise TypeError(f"constant: cannot make a tensor of shape {list(shape)} from {arr.size} elements "
                            f"(expected 1 element or exactly {int(np.prod(shape))})")
    ctx = _context._state.stack[-1]
    if ctx.is_eager:
        return Tensor(arr)
    return stage_const(arr, name)


def _is_tensor_like(v) -> bool:
    return isinstance(v, Tensor) or (hasattr(v, "_to_tensor") and not isinstance(v, type))


def holds_tensor(seq) -> bool:
    """True when the list/tuple `seq` holds a tensor or variable at any depth."""
    for v in seq:
        if _is_tensor_like(v) or (isinstance(v, (list, tuple)) and holds_tensor(v)):
            return True
    return False


def _first_tensor_dtype(seq):
    for v in seq:
        if _is_tensor_like(v):
            return convert_to_tensor(v).dtype
        if isinstance(v, (list, tuple)):
            dt = _first_tensor_dtype(v)
            if dt is not None:
                return dt
    return None


def _autopack(seq, dtype):
    """A (nested) list/tuple holding tensors -> one tensor, as TensorFlow's
    implicit pack: elements are converted (Python numbers to the tensors'
    dtype) and stacked along a new first axis, eagerly and in graphs alike,
    so gradients flow to the tensors.  Tensors of another dtype raise."""
    dt = as_dtype(dtype) if dtype is not None else _first_tensor_dtype(seq)
    parts = []
    for v in seq:
        if isinstance(v, (list, tuple)) and holds_tensor(v):
            t = _autopack(v, dt)
        elif _is_tensor_like(v):
            t = convert_to_tensor(v)
            if t.dtype is not dt:
                raise TypeError(f"Cannot convert a list containing a tensor of dtype {t.dtype.name} to "
                                f"{dt.name} (Tensor is: {t!r})")
        else:
            t = constant(v, dt)
        parts.append(t)
    infer_pack([Spec(t.shape.dims, t.dtype) for t in parts], {"axis": 0})    # a clear error for ragged parts
    return execute(PACK, tuple(parts), {"axis": 0})


def convert_to_tensor(value, dtype=None, name=None, dtype_hint=None) -> Tensor:
    """Return `value` as a Tensor; tensors pass through (their dtype must match `dtype`).

    A list or tuple holding tensors (at any depth) is packed (`_autopack`).
    """
    if isinstance(value, Tensor):
        if dtype is not None and value.dtype is not as_dtype(dtype):
            raise InvalidArgumentError(
                f"expected a tensor of dtype {as_dtype(dtype).name}, got {value.dtype.name}")
        return value
    to_tensor = getattr(value, "_to_tensor", None)
    if to_tensor is not None:
        t = to_tensor()
        if dtype is not None and t.dtype is not as_dtype(dtype):
            raise InvalidArgumentError(
                f"expected a tensor of dtype {as_dtype(dtype).name}, got {t.dtype.name}")
        return t
    if isinstance(value, (list, tuple)) and holds_tensor(value):
        return _autopack(value, dtype)
    if dtype is None and dtype_hint is not None and isinstance(value, numbers.Number):
        try:
            return constant(value, dtype_hint, name=name)
        except TypeError:
            pass
    return constant(value, dtype, name=name)


def operand(x, like: Tensor) -> Tensor:
    """Convert `x` for a binary op whose other operand is `like`: scalars take its dtype."""
    if isinstance(x, Tensor):
        return x
    to_tensor = getattr(x, "_to_tensor", None)
    if to_tensor is not None:
        return to_tensor()
    if isinstance(x, np.ndarray):
        return constant(x)
    if isinstance(x, (list, tuple)) and holds_tensor(x):
        return _autopack(x, None)
    try:
        return constant(x, like.dtype)
    except TypeError as e:
        raise TypeError(f"{e} (the other operand has dtype {like.dtype.name})") from None
