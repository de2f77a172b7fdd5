"""`ReluGradBiasGrad(dy, y) -> (g, db)`: a dense layer's relu gradient and its bias gradient in one op.

A `Dense` layer with relu, `h = relu(x @ w + b)`, has in its gradient
`g = ReluGrad(dy, h)` (`dy * (h > 0)`) and `db = SumToLike(g, b)` (g summed
over its rows).  The `relu_bias_grad` pass (passes/relu_bias_grad.py) makes
the pair this one op; its kernel gives the pair's bits:

- NumPy (always available, and the first `PROMOTE_AFTER` calls of each
  plan step): the two ops' own arithmetic, `np.multiply(dy, y > 0,
  dtype=dy.dtype)` then `np.add.reduce(g, 0, dtype)`;
- compiled (the `[native]` extra, numba, from a plan step's
  `PROMOTE_AFTER`-th call on, for float32/float64 C-contiguous operands of
  at least `NATIVE_MIN_ELEMENTS` elements): one pass over the rows, each
  element `dy * one` or `dy * zero` (the factors read from arrays, so the
  compiler cannot fold the product away, as NumPy's multiply by the bool
  cast does not either: a signalling NaN comes out quiet, a zero keeps dy's
  sign), and each row added into `db` in row order onto +0.0, which is
  what NumPy's reduction over the leading axis of a C-contiguous array of
  at least two columns does (a column of -0.0 sums to +0.0 in both; float
  adds are not reassociated: numba runs without fast-math; with one column
  NumPy sums pairwise, so that shape stays NumPy's).  Which NaN an add
  of two NaNs returns depends on the operand order of the machine
  instruction, which neither NumPy's loops (SIMD body against scalar tail)
  nor numba fix: when a column's sum comes out NaN, `db` is computed again
  by NumPy's reduction, so the bits are NumPy's there too.  The first compiled call is checked bit for bit
  against the NumPy result (NaN payloads included); on a difference the
  step keeps NumPy's kernel.  On the MLP's 64x256 layer: about 5 us against
  about 20 us for the two NumPy kernels.

Waiting `PROMOTE_AFTER` calls keeps numba's start-up (1-3 s, once per
process) out of tests and scripts that call a step a few times.

Imports numpy and `eager` (`native`, `registry`).
"""
from __future__ import annotations

import threading

import numpy as np

from eager import native
from eager.registry import Spec, op

PROMOTE_AFTER = 8
NATIVE_MIN_ELEMENTS = 4096
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def numpy_kernel(dy, y):
    """ReluGrad's and SumToLike's own arithmetic for a rank-2 `dy` and a bias of `dy.shape[1]`."""
    g = np.multiply(dy, y > 0, dtype=dy.dtype)
    return g, np.add.reduce(g, (0,), g.dtype)


def _fused_py(dy, y, g, db, zero, one):
    n, c = dy.shape
    z = zero[0]
    u = one[0]
    for j in range(c):
        db[j] = z
    for i in range(n):
        for j in range(c):
            v = dy[i, j] * (u if y[i, j] > z else z)
            g[i, j] = v
            db[j] = db[j] + v
    for j in range(c):
        if db[j] != db[j]:
            return True
    return False


_compiled: dict = {}
_lock = threading.Lock()


def _native_kernel():
    fn = _compiled.get("fused")
    if fn is None:
        with _lock:
            fn = _compiled.get("fused")
            if fn is None:
                fn = _compiled["fused"] = native.jit(_fused_py)
    return fn


_FACTORS = {dt: (np.zeros(1, dt), np.ones(1, dt)) for dt in _FLOATS}


def native_call(dy, y):
    """The compiled pass (callers check `_native_ok` first)."""
    g = np.empty(dy.shape, dy.dtype)
    db = np.empty(dy.shape[1], dy.dtype)
    zero, one = _FACTORS[dy.dtype]
    if _native_kernel()(dy, y, g, db, zero, one):      # a NaN sum: NumPy's NaN (module docstring)
        db = np.add.reduce(g, (0,), g.dtype)
    return g, db


def _native_ok(dy, y) -> bool:
    return (type(dy) is np.ndarray and type(y) is np.ndarray and dy.ndim == 2 and dy.shape == y.shape
            and dy.shape[1] > 1 and dy.size >= NATIVE_MIN_ELEMENTS and dy.dtype in _FLOATS and y.dtype == dy.dtype
            and dy.flags.c_contiguous and y.flags.c_contiguous)


def _same_bits(a, b) -> bool:
    a, b = (a if type(a) is tuple else (a,)), (b if type(b) is tuple else (b,))
    return all(x.dtype == w.dtype and x.shape == w.shape and
               np.array_equal(x.view(f"u{x.dtype.itemsize}"), w.view(f"u{w.dtype.itemsize}")) for x, w in zip(a, b))


def promoting(numpy_fn, native_fn, native_ok):
    """A plan step's kernel of two arrays: `numpy_fn` for its first `PROMOTE_AFTER` calls, then `native_fn`
    while `native_ok(x, y)` and native kernels are enabled, kept only if its first result has `numpy_fn`'s
    bits (module docstring)."""
    calls, decided = [0], [None]       # decided: None not yet, True checked equal, False refused

    def kernel(x, y):
        use = decided[0]
        if use:
            return native_fn(x, y) if native_ok(x, y) and native.enabled() else numpy_fn(x, y)
        if use is None:
            calls[0] += 1
            if calls[0] >= PROMOTE_AFTER and native_ok(x, y) and native.enabled() and native.available():
                want = numpy_fn(x, y)
                decided[0] = _same_bits(native_fn(x, y), want)
                return want
        return numpy_fn(x, y)
    return kernel


def promoting_kernel():
    """ReluGradBiasGrad's plan kernel (`promoting`)."""
    return promoting(numpy_kernel, native_call, _native_ok)


def _infer(specs, attrs):
    dy = specs[0]
    cols = dy.shape[-1] if dy.shape else None
    return [Spec(dy.shape, dy.dtype), Spec((cols,), dy.dtype)]


RELU_GRAD_BIAS_GRAD = op(
    "ReluGradBiasGrad", numpy_kernel, _infer, num_outputs=2,
    extra={"lower": lambda operation, ctx: promoting_kernel()},
    doc="(dy * (y > 0), its sum over axis 0) for a rank-2 dy: ReluGrad and the bias's SumToLike in one op "
        "(made by the relu_bias_grad pass).")
