"""DType objects and the conversion rules between Python, NumPy and graphjit.

Rules (TensorFlow's): Python float -> float32, int -> int32, bool -> bool,
str/bytes -> string; NumPy arrays keep their dtype (float64 stays float64).
Strings are stored as NumPy object arrays of `bytes`.  Imports nothing from the
project but `errors`.
"""
from __future__ import annotations

import numpy as np


class DType:
    """A tensor element type (`float32`, `int32`, `string`, ...)."""

    __slots__ = ("name", "as_numpy_dtype", "_np", "_limits", "is_floating")

    def __init__(self, name: str, np_type):
        self.name = name
        self.as_numpy_dtype = np_type
        self._np = np.dtype(np_type)
        self._limits = None      # (min, max), computed once: converting a Python int checks its range
        self.is_floating: bool = self._np.kind == "f"     # a plain attribute: read by most op wrappers

    @property
    def is_integer(self) -> bool:
        return self._np.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self._np.kind == "b"

    @property
    def is_string(self) -> bool:
        return self.name == "string"

    @property
    def is_numeric(self) -> bool:
        return self._np.kind in "fiu"

    @property
    def min(self):
        limits = self._limits or self._min_max()
        if limits is False:
            raise TypeError(f"dtype {self.name} has no min")
        return limits[0]

    @property
    def max(self):
        limits = self._limits or self._min_max()
        if limits is False:
            raise TypeError(f"dtype {self.name} has no max")
        return limits[1]

    def _min_max(self):
        """(min, max), or False for a dtype without them (string, complex), computed once."""
        if self.is_floating:
            info = np.finfo(self._np)
            limits = (info.min, info.max)
        elif self.is_integer:
            info = np.iinfo(self._np)
            limits = (info.min, info.max)
        elif self.is_bool:
            limits = (False, True)
        else:
            limits = False
        self._limits = limits
        return limits

    @property
    def np_dtype(self) -> np.dtype:
        return self._np

    def __repr__(self) -> str:
        return f"graphjit.{self.name}"

    def __str__(self) -> str:
        return self.name

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool_ = DType("bool", np.bool_)
string = DType("string", np.object_)

ALL_DTYPES = (float16, float32, float64, int8, int16, int32, int64, uint8, bool_, string)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NP = {d._np: d for d in ALL_DTYPES}


def as_dtype(value) -> DType:
    """Return the DType for a DType, a name, a NumPy dtype/type or a Python type."""
    if isinstance(value, DType):
        return value
    if value is None:
        raise TypeError("a dtype is required here, got None")
    if isinstance(value, str):
        d = _BY_NAME.get(value)
        if d is None:
            raise TypeError(f"unknown dtype name {value!r}; expected one of {sorted(_BY_NAME)}")
        return d
    if value is float:
        return float32
    if value is int:
        return int32
    if value is bool:
        return bool_
    if value in (str, bytes):
        return string
    try:
        npd = np.dtype(value)
    except TypeError:
        raise TypeError(f"cannot interpret {value!r} as a dtype") from None
    d = _BY_NP.get(npd)
    if d is None:
        if npd.kind in "US":
            return string
        raise TypeError(f"unsupported NumPy dtype {npd}; graphjit supports {[x.name for x in ALL_DTYPES]}")
    return d


def dtype_of_array(array) -> DType:
    """The DType of a NumPy array or scalar (fast path: one dict lookup)."""
    d = _BY_NP.get(array.dtype)
    if d is None:
        return as_dtype(array.dtype)
    return d
