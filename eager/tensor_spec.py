"""`TensorSpec`: the static description of a tensor (shape, dtype, name).

Used as cache-key entries and in `input_signature` by `tracing`, as the
`element_spec` of `eager.data` datasets, and by
`get_concrete_function(TensorSpec(...))`.  Hashable, with `is_compatible_with`
(does a value or more specific spec fit?) and `most_specific_common_supertype`
(for `reduce_retracing`).  `short_type` is the compact `f32[?,3]` form used in
listings and logs.  Pure data over `dtypes` and `shape`.
"""
from __future__ import annotations

from .dtypes import as_dtype, float32
from .shape import TensorShape, as_shape

_DTYPE_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16",
                "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "bool", "string": "str"}


def short_type(dtype, shape: TensorShape) -> str:
    """`f32[2,?]` style description of a dtype and a static shape."""
    d = _DTYPE_SHORT.get(dtype.name, dtype.name)
    if shape.dims is None:
        return f"{d}[*]"
    return d + "[" + ",".join("?" if x is None else str(x) for x in shape.dims) + "]"


class TensorSpec:
    """Describes a tensor: `TensorSpec([None, 3], float32, name='x')`."""

    __slots__ = ("_shape", "_dtype", "_name", "_hash")

    def __init__(self, shape, dtype=float32, name=None):
        self._shape = as_shape(shape)
        self._dtype = as_dtype(dtype)
        self._name = name
        self._hash = hash((self._shape.dims, self._dtype.name))

    @classmethod
    def from_tensor(cls, tensor, name=None):
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def shape(self) -> TensorShape:
        return self._shape

    @property
    def dtype(self):
        return self._dtype

    @property
    def name(self):
        return self._name

    def is_compatible_with(self, other) -> bool:
        """True if `other` (a spec or tensor) has this dtype and a shape that fits this one."""
        return other.dtype is self._dtype and self._shape.is_compatible_with(other.shape)

    def is_subtype_of(self, other: "TensorSpec") -> bool:
        """True if every value fitting `self` also fits `other` (other is at least as general)."""
        if self._dtype is not other._dtype:
            return False
        od, sd = other._shape.dims, self._shape.dims
        if od is None:
            return True
        if sd is None or len(sd) != len(od):
            return False
        return all(o is None or o == s for s, o in zip(sd, od))

    def most_specific_common_supertype(self, other: "TensorSpec"):
        if self._dtype is not other._dtype:
            return None
        return TensorSpec(self._shape.most_specific_compatible_shape(other._shape), self._dtype, self._name)

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and self._dtype is other._dtype
                and self._shape.dims == other._shape.dims)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        name = f", name={self._name!r}" if self._name else ""
        dims = "None" if self._shape.dims is None else list(self._shape.dims)
        return f"TensorSpec(shape={dims}, dtype={self._dtype.name}{name})"

    def short(self) -> str:
        """Compact form for tables and logs: `f32[?,3]`."""
        return short_type(self._dtype, self._shape)
