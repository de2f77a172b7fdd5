"""`Tensor`: the user-visible value type, eager or symbolic.

An eager tensor wraps an immutable NumPy value (`_value`; never mutated after
creation, so reads share memory safely).  A symbolic tensor (subclass defined in
`graph_runtime`) sets `_value = None`, `_is_symbolic = True` and carries its
static shape, dtype and producing op.  Operators (`+`, `@`, `[]`, ...) are
installed by `tensor_operators`, which calls the public ops, so both kinds
dispatch through the same single entry point.  Imports dtypes/shape/errors.
"""
from __future__ import annotations

import numpy as np

from .dtypes import dtype_of_array, DType
from .errors import OperatorNotAllowedInGraphError
from .shape import TensorShape

# the host CPU, where every eager value lives (TensorFlow's full name of the local CPU device)
HOST_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


class Tensor:
    """A multi-dimensional array with a dtype and shape (see docs/api.md)."""

    __slots__ = ("_value", "__weakref__")
    _is_symbolic = False
    __array_priority__ = 100  # make ndarray + Tensor call Tensor.__radd__

    def __init__(self, value):
        self._value = value

    # --- description -------------------------------------------------------
    @property
    def dtype(self) -> DType:
        return dtype_of_array(self._value)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._value.shape)

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def name(self):
        raise AttributeError("Tensor.name is meaningless when executing eagerly")

    @property
    def device(self) -> str:
        """Where the value lives: an eager value is a NumPy array in host memory, i.e. on the host CPU."""
        return HOST_DEVICE

    def get_shape(self) -> TensorShape:
        return self.shape

    def numpy(self):
        """A copy of the value as a NumPy array, or a NumPy scalar for rank 0, as TensorFlow's
        `Tensor.numpy()`: writing into it never changes the tensor (which may hold a variable's own array,
        see `Variable.value()`), and a scalar is hashable (`counts[label.numpy()] += 1`)."""
        return own_copy(self._value)

    def __array__(self, dtype=None, copy=None):
        """`np.asarray(t)`: a read-only view of the value (no copy). TensorFlow's shares memory and is
        writeable, so a write there changes an immutable tensor; here the write raises instead.
        `np.array(t)` (copy=True) and a dtype change give a fresh, writeable array.
        `copy=False` follows NumPy 2's contract: the view, or ValueError where only a copy can give the array
        (another dtype; a rank-0 value held as a NumPy scalar, which has no array memory to share, as
        `np.asarray(np.float32(1), copy=False)` raises)."""
        v = self._value
        if copy or (dtype is not None and np.dtype(dtype) != v.dtype):
            if copy is False:
                raise ValueError(f"np.asarray(tensor, dtype={np.dtype(dtype)}, copy=False): the tensor's dtype "
                                 f"is {v.dtype}, so the conversion needs a copy")
            return np.array(v, dtype=dtype, copy=True)
        if type(v) is not np.ndarray:
            if copy is False:
                raise ValueError(f"np.asarray(tensor, copy=False): the tensor's rank-0 value is a NumPy scalar "
                                 f"({v.dtype}), which has no array memory to share, so the conversion needs a "
                                 f"copy; use np.asarray(tensor) or tensor.numpy()")
            return np.asarray(v)
        return read_only(v)

    def ref(self) -> "TensorRef":
        return TensorRef(self)

    # --- Python protocol ------------------------------------------------
    __hash__ = None  # tensors compare elementwise, so they cannot be hashed: use .ref()

    def _python_value(self, what: str):
        if self._is_symbolic:
            if what in ("bool", "int", "float", "complex", "index"):
                hint = ("Use eager.cond / eager.while_loop, or let autograph convert the Python control flow "
                        "(function(autograph=True)).")
            else:      # an op argument that must be known when the graph is built
                hint = f"Pass the {what} as a Python value or a constant, known when the graph is built."
            raise OperatorNotAllowedInGraphError(
                f"Using a symbolic Tensor as a Python {what} is not allowed: the value is only known "
                f"when the graph runs. {hint}")
        return self._value

    def __bool__(self):
        v = self._python_value("bool")
        if np.size(v) != 1:
            raise ValueError(
                f"The truth value of a tensor with {np.size(v)} elements (shape {tuple(np.shape(v))}) "
                f"is ambiguous. Use reduce_any or reduce_all.")
        return bool(np.reshape(v, ()))

    def __len__(self):
        if self._is_symbolic:
            d = self.shape[0] if self.shape.rank else None
            if d is None:
                raise TypeError(f"len() of a symbolic tensor with unknown first dimension (shape {self.shape}); "
                                f"use eager.shape(x)[0]")
            return d
        if self._value.ndim == 0:
            raise TypeError("len() of unsized object (a scalar tensor)")
        return len(self._value)

    def __iter__(self):
        if self._is_symbolic:
            raise OperatorNotAllowedInGraphError(
                "Iterating over a symbolic Tensor is not allowed: use eager.unstack for a known first "
                "dimension, or let autograph convert the for loop (function(autograph=True)).")
        if self._value.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (Tensor(np.asarray(row)) if isinstance(row, np.ndarray) else Tensor(row) for row in self._value)

    def __float__(self):
        return float(self._python_value("float"))

    def __int__(self):
        return int(self._python_value("int"))

    def __index__(self):
        v = self._python_value("index")
        if not dtype_of_array(np.asarray(v)).is_integer:
            raise TypeError(f"only integer tensors can be used as an index, got {self.dtype.name}")
        return int(v)

    def __complex__(self):
        return complex(self._python_value("complex"))

    def __format__(self, format_spec):
        """As NumPy formats the value (TF's EagerTensor does the same): f"{loss:.2f}" works on a scalar."""
        if self._is_symbolic:
            if not format_spec:
                return str(self)
            raise TypeError(
                f"cannot format a symbolic tensor with {format_spec!r}: its value is only known when the graph "
                f"runs. Inside a traced function use eager.print(...), which prints at every call, or return "
                f"the tensor and format its value outside the function.")
        a = np.asarray(self._value)
        if not format_spec:
            return str(a)
        return format(a[()] if a.ndim == 0 else a, format_spec)

    def __repr__(self):
        v = self._value
        shown = repr(np.asarray(v).item()) if np.ndim(v) == 0 else repr(np.asarray(v))
        return f"<Tensor: shape={tuple(np.shape(v))}, dtype={self.dtype.name}, numpy={shown}>"

    def __str__(self):
        return f"Tensor({np.asarray(self._value)}, shape={tuple(np.shape(self._value))}, dtype={self.dtype.name})"

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


class TensorRef:
    """Hashable reference to a tensor (identity semantics), from `Tensor.ref()`."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor):
        self._tensor = tensor

    def deref(self):
        return self._tensor

    def __hash__(self):
        return id(self._tensor)

    def __eq__(self, other):
        return isinstance(other, TensorRef) and other._tensor is self._tensor

    def __repr__(self):
        return f"<Reference wrapping {self._tensor!r}>"


def own_copy(value):
    """What `numpy()` returns for an eager value: a copy of an array, a NumPy scalar for rank 0."""
    if type(value) is not np.ndarray:
        return value
    return value.copy() if value.ndim else value[()]


def read_only(value):
    """`value` (an eager tensor's array) without a copy, as a read-only view; a NumPy scalar as itself.

    What TensorFlow hands out without copying (`np.asarray(t)`, `as_numpy_iterator`) shares the
    tensor's memory; the view makes a write raise instead of changing an immutable tensor (or the
    variable whose array a value tensor holds)."""
    if type(value) is not np.ndarray:
        return value
    view = value.view()
    view.flags.writeable = False
    return view


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def is_symbolic(x) -> bool:
    """True for a graph tensor whose value is only known when the graph runs."""
    return isinstance(x, Tensor) and x._is_symbolic
