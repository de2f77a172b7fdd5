"""TensorShape: a possibly partially known shape (`None` for unknown dims).

`TensorShape(None)` has unknown rank.  Shapes compare equal to tuples and lists
of the same dims.  `broadcast_shapes`: static broadcasting of such shapes.  Pure data; imports only
`errors`.
"""
from __future__ import annotations

import operator
import reprlib
from typing import Iterable, Optional

from .errors import InvalidArgumentError

MAX_DIM = 2 ** 63 - 1        # dims are int64, as in TensorFlow's TensorShapeProto


def brief_repr(value, limit: int = 60) -> str:
    """repr(value) cut to `limit` characters, for error messages about bad input (a 5,000-digit int or a
    huge list must not fill the message; repr of such an int even raises)."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<an int of {value.bit_length()} bits>"
    try:
        r = reprlib.repr(value)
    except Exception:  # noqa: BLE001 - any repr failure: name the type only
        r = f"<a {type(value).__name__}>"
    return r if len(r) <= limit else r[:limit - 3] + "..."


class TensorShape:
    """Static shape of a tensor; dims are ints or None."""

    __slots__ = ("_dims",)

    def __init__(self, dims: Optional[Iterable] = None):
        if dims is None:
            self._dims = None
        elif isinstance(dims, TensorShape):
            self._dims = dims._dims
        else:
            out = []
            for d in dims:
                if d is None:
                    out.append(None)
                else:
                    try:
                        di = operator.index(d)       # 2.5 is not a dimension (int() would make it 2)
                    except TypeError:
                        raise TypeError(f"shape dimension must be an int or None, got {brief_repr(d)} of type "
                                        f"{type(d).__name__}") from None
                    if di < 0:
                        if di == -1:
                            out.append(None)
                            continue
                        raise ValueError(f"shape dimension must be >= 0 (or -1 for unknown), got {di}")
                    if di > MAX_DIM:
                        raise ValueError(f"shape dimension must be at most 2**63 - 1 (an int64), got "
                                         f"{brief_repr(di)}")
                    out.append(di)
            self._dims = tuple(out)

    @property
    def rank(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    @property
    def dims(self):
        return self._dims

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape")
        return list(self._dims)

    def as_tuple(self):
        return self._dims

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:
            n *= d
        return n

    def is_compatible_with(self, other) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def most_specific_compatible_shape(self, other) -> "TensorShape":
        """The most specific shape compatible with both (dims that differ -> None)."""
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape([a if a == b else None for a, b in zip(self._dims, other._dims)])

    def merge_with(self, other) -> "TensorShape":
        other = as_shape(other)
        if not self.is_compatible_with(other):
            raise ValueError(f"shapes {self} and {other} are not compatible")
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def __len__(self):
        if self._dims is None:
            raise ValueError("cannot take the length of a shape with unknown rank")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("cannot iterate over a shape with unknown rank")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other):
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other):
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self):
        return hash(self._dims)

    def __repr__(self):
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self):
        if self._dims is None:
            return "<unknown>"
        if len(self._dims) == 1:
            return f"({self._dims[0]},)"
        return "(" + ", ".join(str(d) for d in self._dims) + ")"


def as_shape(value) -> TensorShape:
    if isinstance(value, TensorShape):
        return value
    return TensorShape(value)


_SHARED: dict = {}          # dims tuple -> TensorShape (immutable, so one object serves every tensor)
_MAX_SHARED = 4096
_UNKNOWN_RANK = TensorShape(None)


def shared_shape(dims) -> "TensorShape":
    """`TensorShape(dims)`, shared among equal shapes (graphs create one per tensor; most are equal: an
    unrolled function's thousands of [4,4] tensors get one, fewer objects to build and to collect)."""
    if dims is None:
        return _UNKNOWN_RANK
    try:
        hit = _SHARED.get(dims)
    except TypeError:                       # a list: not a key
        return TensorShape(dims)
    if hit is None:
        hit = TensorShape(dims)
        if hit._dims == dims and len(_SHARED) < _MAX_SHARED:    # (-1 dims are stored as None: not this key)
            _SHARED[hit._dims] = hit
    return hit


def broadcast_shapes(a, b, opname="op"):
    """Static NumPy broadcasting over shapes that may contain None (or be None)."""
    if a is None or b is None:
        return None
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y) if (x is None) != (y is None) else out.append(None)
        elif x == y:
            out.append(x)
        else:
            raise InvalidArgumentError(
                f"{opname}: incompatible shapes for broadcasting: {list(a)} and {list(b)}", op_name=opname)
    return tuple(out)
