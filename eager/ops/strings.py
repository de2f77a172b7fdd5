"""String ops, exported as the namespace `eager.strings` (`ek.strings.join`).

TensorFlow op type `StringJoin`: elementwise join of string tensors with a
separator; inputs broadcast (scalars against tensors, as in TensorFlow).
String tensors hold NumPy object arrays of `bytes`; `separator` is a `str`
attr (UTF-8 encoded when joining).  String `+` is `eager.add`, not here.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import string
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._define import broadcast_shapes

__all__ = ["join"]


def _join_kernel(*xs, separator=""):
    sep = separator.encode("utf-8")
    arrays = np.broadcast_arrays(*[np.asarray(x, dtype=object) for x in xs])
    out = np.empty(arrays[0].shape, dtype=object)
    flat = out.reshape(-1)
    for i, parts in enumerate(zip(*[a.reshape(-1) for a in arrays])):
        flat[i] = sep.join(parts)
    return out


def _infer_join(specs, attrs):
    shape = ()
    for s in specs:
        if s.dtype is not string:
            raise InvalidArgumentError(f"StringJoin: all inputs must be strings, got {s.dtype.name}",
                                       op_name="StringJoin")
        shape = broadcast_shapes(shape, s.shape, "StringJoin")
    return [Spec(shape, string)]


STRING_JOIN = op("StringJoin", _join_kernel, _infer_join)


def join(inputs, separator="", name=None):
    """Elementwise concatenation of the string tensors in `inputs`, separated by `separator`."""
    if isinstance(inputs, (Tensor, str, bytes)):
        inputs = [inputs]
    ts = tuple(t if isinstance(t, Tensor) else convert_to_tensor(t) for t in inputs)
    if not ts:
        raise InvalidArgumentError("StringJoin: needs at least one input", op_name="StringJoin")
    shape = ()
    for t in ts:
        if t.dtype is not string:
            raise InvalidArgumentError(f"StringJoin: all inputs must be strings, got {t.dtype.name} "
                                       f"(shape {t.shape})", op_name="StringJoin")
        shape = broadcast_shapes(shape, t.shape.dims, "StringJoin")
    sep = separator.decode("utf-8") if isinstance(separator, bytes) else str(separator)
    return execute(STRING_JOIN, ts, {"separator": sep}, name)


from ..namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
