"""The Cast primitive and `cast`: below the other op modules, which convert dtypes with it.

Floats to ints truncate toward zero (TensorFlow's rule); strings never cast.
The gradient flows between floating types only.  `math.py` re-exports `cast`
(`eager.cast`).  Imports the eager core and conversion only.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype
from ..errors import InvalidArgumentError
from ..registry import Spec, op

__all__ = ["cast"]


def _cast_kernel(x, dtype):
    return np.asarray(x).astype(dtype.as_numpy_dtype)


def _g_cast(op, dy):
    src = op.inputs[0].dtype
    if src.is_floating and dy.dtype.is_floating:
        return [cast(dy, src)]
    return [None]


CAST = op("Cast", _cast_kernel, lambda s, a: [Spec(s[0].shape, a["dtype"])], _g_cast, elementwise=True,
          rowwise_exact=True)


def cast(x, dtype, name=None):
    """Convert `x` to `dtype` (floats to ints truncate toward zero, like TensorFlow)."""
    dt = as_dtype(dtype)
    x = convert_to_tensor(x)
    if x.dtype is dt:
        return x
    if dt.is_string or x.dtype.is_string:
        raise InvalidArgumentError(f"Cast: cannot cast {x.dtype.name} to {dt.name}", op_name="Cast")
    return execute(CAST, (x,), {"dtype": dt}, name)
