"""Relu's arithmetic, `maximum(x, 0)`, fast on big arrays: shared by Relu (nn.py) and ReluMaxPoolGrad.

NumPy's maximum runs its SIMD loop only when both operands step through
memory: against a rank-0 zero (stride 0) it takes a scalar loop, 3x slower
on the CNN's activations.  So a big contiguous x is viewed as rows of
`ZERO_ROW` elements and compared with a row of zeros: the same ufunc on the
same element pairs, so the same bits (NaN payloads and signed zeros
included; tests/eager/test_relu_kernel.py).

Imports numpy only.
"""
from __future__ import annotations

import numpy as np

ZERO_ROW = 16384                # elements; smaller arrays take the plain call
_ZERO_ROWS: dict = {}


def _zero_row(dtype):
    row = _ZERO_ROWS.get(dtype)
    if row is None:
        row = np.zeros(ZERO_ROW, dtype)
        row.flags.writeable = False
        _ZERO_ROWS[dtype] = row
    return row


def relu_into(x, out):
    """`np.maximum(x, 0, out=out)` (x may be out)."""
    n = x.size
    if n < ZERO_ROW or not (x.flags.c_contiguous and out.flags.c_contiguous) or x.dtype != out.dtype:
        return np.maximum(x, np.zeros((), x.dtype), out=out)
    row, whole = _zero_row(x.dtype), n - n % ZERO_ROW
    xf, of = x.reshape(-1), out.reshape(-1)
    np.maximum(xf[:whole].reshape(-1, ZERO_ROW), row, out=of[:whole].reshape(-1, ZERO_ROW))
    if whole < n:
        np.maximum(xf[whole:], row[:n - whole], out=of[whole:])
    return out


def relu(x):
    """`np.maximum(x, 0)` into a new array."""
    if type(x) is not np.ndarray or x.size < ZERO_ROW:
        return np.maximum(x, np.zeros((), x.dtype))
    return relu_into(x, np.empty(x.shape, x.dtype))
