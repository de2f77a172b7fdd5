"""`BiasRelu(a, b) = relu(a + b)` for a rank-2 `a` and a bias `b` of its columns: a dense layer's forward tail.

The `bias_relu` pass (passes/bias_relu.py) makes `Relu(AddV2(a, b))` this op
when nothing else reads the sum.  Its kernel gives the pair's bits:

- NumPy: `np.add(a, b)`, then relu's `maximum` into the sum's buffer (as
  the fused elementwise kernel it replaces: against an array of zeros,
  NumPy's SIMD loop, fusion/invariant_rows.py);
- compiled (numba, through relu_bias_grad.promoting: from a plan step's 8th
  call, float32/float64 C-contiguous operands of at least 4,096 elements,
  checked bit for bit on its first call): one pass, each element `a + b`
  rounded once as NumPy's add, then kept if above zero, else +0.0 (NumPy's
  `maximum(v, 0)` gives +0.0 for -0.0, and keeps a NaN).  Which NaN an add
  of two NaNs returns is not fixed by the compiled code, so when any result
  is NaN the NumPy kernel computes it again: NumPy's bits there too.

On the MLP's 64x256 layer: one pass instead of NumPy's two (an allocation
and an add, a maximum).  Imports numpy, `eager`, `relu_bias_grad` and `fusion.invariant_rows`.
"""
from __future__ import annotations

import threading

import numpy as np

from eager import native
from eager.registry import Spec, get, op

from . import relu_bias_grad
from .fusion.invariant_rows import FULL_MAX_ELEMENTS, FULL_MIN_ELEMENTS

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_ZERO = {dt: np.zeros(1, dt) for dt in _FLOATS}


_ZEROS: dict = {}           # (shape, dtype) -> read-only zeros: maximum's SIMD loop (fusion/invariant_rows.py)
MAX_ZERO_ARRAYS = 64


def _zeros(shape, dtype):
    z = _ZEROS.get((shape, dtype))
    if z is None:
        if len(_ZEROS) >= MAX_ZERO_ARRAYS:
            _ZEROS.clear()
        z = np.zeros(shape, dtype)
        z.flags.writeable = False
        _ZEROS[(shape, dtype)] = z
    return z


def numpy_kernel(a, b):
    """`np.add(a, b)`, then relu's `maximum(s, 0)` into the sum's own buffer, against an array of zeros where
    NumPy would otherwise run its scalar loop (the same element pairs: the same bits)."""
    s = np.add(a, b)
    if type(s) is np.ndarray and FULL_MIN_ELEMENTS <= s.size <= FULL_MAX_ELEMENTS and s.flags.c_contiguous:
        return np.maximum(s, _zeros(s.shape, s.dtype), out=s)
    return get("Relu").extra["inplace"](s, s)


def _fused_py(a, b, h, zero):
    n, c = a.shape
    z = zero[0]
    nan = False
    for i in range(n):
        for j in range(c):
            v = a[i, j] + b[j]
            h[i, j] = v if v > z else z
            nan |= v != v
    return nan


_compiled: dict = {}
_lock = threading.Lock()


def native_call(a, b):
    """The compiled pass (callers check `native_ok` first); NumPy's kernel when a result is NaN."""
    fn = _compiled.get("fused")
    if fn is None:
        with _lock:
            fn = _compiled.setdefault("fused", native.jit(_fused_py))
    h = np.empty(a.shape, a.dtype)
    if fn(a, b, h, _ZERO[a.dtype]):
        return numpy_kernel(a, b)
    return h


def native_ok(a, b) -> bool:
    return (type(a) is np.ndarray and type(b) is np.ndarray and a.ndim == 2 and b.shape == a.shape[1:]
            and a.size >= relu_bias_grad.NATIVE_MIN_ELEMENTS and a.dtype in _FLOATS and b.dtype == a.dtype
            and a.flags.c_contiguous and b.flags.c_contiguous)


def plan_kernel():
    """BiasRelu's plan kernel (relu_bias_grad.promoting)."""
    return relu_bias_grad.promoting(numpy_kernel, native_call, native_ok)


def _infer(specs, attrs):
    return [Spec(specs[0].shape, specs[0].dtype)]


BIAS_RELU = op("BiasRelu", numpy_kernel, _infer, extra={"lower": lambda operation, ctx: plan_kernel()},
               doc="relu(a + b) for a rank-2 a and a bias b of its columns (made by the bias_relu pass).")
