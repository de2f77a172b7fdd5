"""`TensorArray`: a functional list of same-shaped tensors, usable as a loop variable.

Representation.  A TensorArray is a value whose whole state is ONE dense
tensor, `flow`, of shape `[size] + element_shape` and the element dtype (the
"buffer"; `stack()` is the buffer itself).  Every update is functional:
`write(i, v)` dispatches `TensorListSetItem(flow, i, v)` and returns a NEW
TensorArray (TF2 style: `ta = ta.write(i, v)`).  Because the state is a plain
float/int tensor, gradients flow through the buffer like through any tensor and
accumulate with `add`.

Carrying it through `nest`/`while_loop`/tracing without special support: the
class is a one-field namedtuple (`flow`), so `nest.flatten` yields the flow
tensor and `nest.pack_sequence_as` rebuilds it with `type(ta)(flow)`.  The
constructor therefore also accepts a single non-dtype leaf (a rebuild).  What
the flow cannot carry lives in the type: `dynamic_size=True` arrays are
instances of the subclass `_DynamicTensorArray` (same structure only with the
same kind); dtype and element shape are read from the flow.

Unknown element shapes.  Without `element_shape`, the initial buffer holds
zero elements (`[size, 0]`) and its static shape is unknown.  Rule: a buffer
with zero elements takes the element shape of the first value written into it
(it holds no data, so nothing is lost); otherwise a value of another shape is
an `InvalidArgumentError`.  Static shapes stay unknown (or `[None] + ...` for
dynamic arrays) so the flow's shape never changes across loop iterations.

Limits (documented, TF differences): every element must have the same shape
(`concat` requires rank >= 1 elements); `clear_after_read` is accepted and
ignored (reads are functional); reading an unwritten index returns zeros.

Primitives: TensorListReserve, TensorListSetItem, TensorListGetItem,
TensorListResizeLike (crop/pad a buffer gradient to the buffer's size),
TensorListConcat, TensorListLength.  Imports the eager core and its ops.
"""
from __future__ import annotations

import collections

import numpy as np

from .convert import convert_to_tensor
from .dispatch import execute
from .dtypes import DType, as_dtype, int32
from .errors import InvalidArgumentError
from .registry import Spec, op
from .shape import TensorShape
from .ops.array import reshape, shape, unstack, zeros_like
from .ops.constant import identity
from .ops.gather import gather
from .tensor import Tensor

__all__ = ["TensorArray"]


# ------------------------------------------------------------------ shape rules
def _zero_size(shape) -> bool:
    return shape is not None and None not in shape and 0 in shape


def _merge_element(buffer_shape, item_shape, opname="TensorListSetItem"):
    """The buffer's element shape after writing an item (None entries: unknown)."""
    if buffer_shape is None:
        return item_shape
    elem = tuple(buffer_shape[1:])
    if item_shape is None:
        return elem
    if _zero_size(buffer_shape):
        return tuple(item_shape)     # a buffer without data adopts the first written shape
    if len(elem) != len(item_shape) or any(a is not None and b is not None and a != b
                                           for a, b in zip(elem, item_shape)):
        raise InvalidArgumentError(f"{opname}: cannot write a value of shape {list(item_shape)} into a TensorArray "
                                   f"whose elements have shape {list(elem)}", op_name=opname)
    return tuple(b if a is None else a for a, b in zip(elem, item_shape))


def _index(i, n, opname, what="read"):
    i = int(i)
    if i < 0 or (n is not None and i >= n):
        raise InvalidArgumentError(f"{opname}: cannot {what} index {i} of a TensorArray of size {n}"
                                   + ("" if i < 0 or what == "read" else
                                      "; use dynamic_size=True to let the array grow"), op_name=opname)
    return i


# ------------------------------------------------------------------ primitives
def _reserve_kernel(num_elements, element_dtype, element_shape, dynamic):
    n = int(num_elements)
    if n < 0:
        raise InvalidArgumentError(f"TensorArray: size must be >= 0, got {n}", op_name="TensorListReserve")
    elem = (0,) if element_shape is None else tuple(0 if d is None else d for d in element_shape)
    return np.zeros((n,) + elem, dtype=element_dtype.as_numpy_dtype)


def _infer_reserve(specs, attrs):
    n = None if attrs["dynamic"] or specs[0].value is None else int(specs[0].value)
    es = attrs["element_shape"]
    return [Spec(None if es is None else (n,) + tuple(es), attrs["element_dtype"])]


def _set_item_kernel(buffer, index, item, dynamic):
    elem = _merge_element(buffer.shape, item.shape)
    n = buffer.shape[0]
    i = _index(index, None if dynamic else n, "TensorListSetItem", "write")
    base = buffer if tuple(buffer.shape[1:]) == tuple(elem) else np.zeros((n,) + tuple(elem), buffer.dtype)
    out = np.zeros((i + 1,) + tuple(elem), buffer.dtype) if i >= n else np.empty_like(base)
    out[:n] = base
    out[i] = item
    return out


def _infer_set_item(specs, attrs):
    b, _, v = specs
    if b.dtype is not v.dtype:
        raise InvalidArgumentError(f"TensorListSetItem: cannot write a {v.dtype.name} value into a TensorArray of "
                                   f"{b.dtype.name}", op_name="TensorListSetItem")
    elem = _merge_element(b.shape, v.shape)
    lead = None if attrs["dynamic"] or b.shape is None else b.shape[0]
    return [Spec(None if elem is None else (lead,) + tuple(elem), b.dtype)]


def _g_set_item(op, dy):
    buffer, index, item = op.inputs
    cleared = execute(SET_ITEM, (dy, index, zeros_like(item)), {"dynamic": False})
    return [execute(RESIZE_LIKE, (cleared, buffer), {}), None, execute(GET_ITEM, (dy, index), {})]


def _get_item_kernel(buffer, index):
    return buffer[_index(index, buffer.shape[0], "TensorListGetItem")]


def _g_get_item(op, dy):
    buffer, index = op.inputs
    return [execute(SET_ITEM, (zeros_like(buffer), index, dy), {"dynamic": False}), None]


def _resize_like_kernel(x, like):
    if x.shape == like.shape:
        return x
    if x.size == 0 or like.size == 0 or x.shape[1:] != like.shape[1:]:
        return np.zeros(like.shape, x.dtype)
    m = like.shape[0]
    if x.shape[0] >= m:
        return x[:m]
    out = np.zeros(like.shape, x.dtype)
    out[:x.shape[0]] = x
    return out


def _concat_kernel(buffer):
    if buffer.ndim < 2:
        raise InvalidArgumentError(f"TensorListConcat: elements must have rank >= 1 to be concatenated, got a "
                                   f"buffer of shape {list(buffer.shape)}", op_name="TensorListConcat")
    return buffer.reshape((-1,) + buffer.shape[2:])


def _infer_concat(specs, attrs):
    s = specs[0].shape
    if s is None:
        return [Spec(None, specs[0].dtype)]
    if len(s) < 2:
        raise InvalidArgumentError(f"TensorListConcat: elements must have rank >= 1, got buffer shape {list(s)}",
                                   op_name="TensorListConcat")
    lead = None if None in s[:2] else s[0] * s[1]
    return [Spec((lead,) + tuple(s[2:]), specs[0].dtype)]


def _g_concat(op, dy):
    return [reshape(dy, shape(op.inputs[0]))]


def _infer_length(specs, attrs):
    s = specs[0].shape
    n = None if s is None or s[0] is None else np.array(s[0], np.int32)
    return [Spec((), int32, n)]


RESERVE = op("TensorListReserve", _reserve_kernel, _infer_reserve,
             doc="A zero buffer [num_elements] + element_shape ([n, 0] when the element shape is unknown).")
SET_ITEM = op("TensorListSetItem", _set_item_kernel, _infer_set_item, _g_set_item,
              doc="A copy of the buffer with row `index` set to `item` (grows if attr dynamic).")
GET_ITEM = op("TensorListGetItem", _get_item_kernel,
              lambda s, a: [Spec(None if s[0].shape is None else tuple(s[0].shape[1:]), s[0].dtype)], _g_get_item,
              doc="Row `index` of the buffer.")
RESIZE_LIKE = op("TensorListResizeLike", _resize_like_kernel, lambda s, a: [Spec(s[1].shape, s[0].dtype)],
                 lambda op, g: [execute(RESIZE_LIKE, (g, op.inputs[0]), {}), None],
                 doc="Crop or zero-pad input 0 along axis 0 to the shape of input 1 (buffer gradients).")
CONCAT = op("TensorListConcat", _concat_kernel, _infer_concat, _g_concat,
            doc="The elements joined along their first axis.")
LENGTH = op("TensorListLength", lambda b: np.array(b.shape[0], np.int32), _infer_length,
            doc="Number of elements of the buffer (int32 scalar).")


# ------------------------------------------------------------------ the value class
def _is_dtype_like(x) -> bool:
    return isinstance(x, (DType, str, type, np.dtype))


def _index_tensor(index):
    t = convert_to_tensor(index, dtype_hint=int32) if not isinstance(index, Tensor) else index
    if not t.dtype.is_integer or t.shape.rank not in (0, None):
        raise InvalidArgumentError(f"TensorArray: index must be an integer scalar, got {t.dtype.name} of shape "
                                   f"{t.shape}")
    return t


_Fields = collections.namedtuple("TensorArray", ["flow"])


class TensorArray(_Fields):
    """A list of tensors of one dtype and shape; `write` returns a new TensorArray (see module doc)."""

    __slots__ = ()
    _dynamic = False

    def __new__(cls, dtype=None, size=None, dynamic_size=None, clear_after_read=None, tensor_array_name=None,
                handle=None, flow=None, infer_shape=True, element_shape=None, colocate_with_first_write_call=True,
                name=None):
        if flow is not None or not _is_dtype_like(dtype):
            return tuple.__new__(cls, (dtype if flow is None else flow,))   # rebuilt from its flow (nest)
        dt = as_dtype(dtype)
        if cls is TensorArray and dynamic_size:
            cls = _DynamicTensorArray
        es = None if element_shape is None else TensorShape(element_shape).dims
        n = convert_to_tensor(0 if size is None else size, dtype=int32) if not isinstance(size, Tensor) else size
        buf = execute(RESERVE, (n,), {"element_dtype": dt, "element_shape": es, "dynamic": cls._dynamic}, name)
        return tuple.__new__(cls, (buf,))

    # -- description --------------------------------------------------------
    @property
    def dtype(self):
        return self.flow.dtype

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic

    @property
    def element_shape(self) -> TensorShape:
        s = self.flow.shape.dims
        if s is None or _zero_size(s[1:]):
            return TensorShape(None)
        return TensorShape(s[1:])

    def size(self, name=None) -> Tensor:
        """The number of elements (int32 scalar)."""
        return execute(LENGTH, (self.flow,), {}, name)

    def __repr__(self):
        s = self.flow.shape.dims if isinstance(self.flow, Tensor) else None
        size = "?" if s is None or s[0] is None else s[0]
        return (f"<TensorArray dtype={getattr(self.flow, 'dtype', '?')} size={size} "
                f"element_shape={self.element_shape if isinstance(self.flow, Tensor) else '?'}"
                f"{' dynamic' if self._dynamic else ''}>")

    # -- functional updates -------------------------------------------------
    def _value(self, value, what):
        if isinstance(value, Tensor) or hasattr(value, "_to_tensor"):
            t = convert_to_tensor(value)
            if t.dtype is not self.dtype:
                raise InvalidArgumentError(f"TensorArray.{what}: the array holds {self.dtype.name}, got a "
                                           f"{t.dtype.name} value of shape {t.shape}")
            return t
        try:
            return convert_to_tensor(value, dtype=self.dtype)
        except TypeError as e:
            raise InvalidArgumentError(f"TensorArray.{what}: {e}") from None

    def write(self, index, value, name=None) -> "TensorArray":
        """A new TensorArray with element `index` set to `value`."""
        flow = execute(SET_ITEM, (self.flow, _index_tensor(index), self._value(value, "write")),
                       {"dynamic": self._dynamic}, name)
        return type(self)(flow=flow)

    def unstack(self, value, name=None) -> "TensorArray":
        """A new TensorArray whose elements are the rows of `value`."""
        t = self._value(value, "unstack")
        if t.shape.rank == 0:
            raise InvalidArgumentError(f"TensorArray.unstack: value must have rank >= 1, got shape {t.shape}")
        n_old = self.flow.shape.dims[0] if self.flow.shape.rank else None
        n_new = t.shape.dims[0] if t.shape.rank else None
        if not self._dynamic and None not in (n_old, n_new) and n_old != n_new:
            raise InvalidArgumentError(f"TensorArray.unstack: cannot unstack {n_new} elements into a TensorArray "
                                       f"of size {n_old}; use dynamic_size=True")
        return type(self)(flow=identity(t, name=name))

    def scatter(self, indices, value, name=None) -> "TensorArray":
        """Write the rows of `value` at `indices` (a list of Python ints)."""
        ta = self
        rows = value if isinstance(value, (list, tuple)) else None
        if rows is None:
            rows = unstack(self._value(value, "scatter"), num=len(indices))
        for i, row in zip(indices, rows):
            ta = ta.write(int(i), row)
        return ta

    # -- reads ------------------------------------------------------------------
    def read(self, index, name=None) -> Tensor:
        """Element `index` (zeros if it was never written)."""
        return execute(GET_ITEM, (self.flow, _index_tensor(index)), {}, name)

    def stack(self, name=None) -> Tensor:
        """All elements stacked: shape [size] + element_shape."""
        return self.flow

    def gather(self, indices, name=None) -> Tensor:
        """The elements at `indices`, stacked."""
        return gather(self.flow, indices, name=name)

    def concat(self, name=None) -> Tensor:
        """The elements joined along their first axis."""
        return execute(CONCAT, (self.flow,), {}, name)

    def identity(self) -> "TensorArray":
        return self

    def close(self, name=None) -> None:
        return None


class _DynamicTensorArray(TensorArray):
    """A TensorArray created with dynamic_size=True: writes past the end grow it."""

    __slots__ = ()
    _dynamic = True
