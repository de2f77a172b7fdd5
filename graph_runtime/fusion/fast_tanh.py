"""A float32 tanh that compiled loops vectorize: the fused kernels' `tanh` when numba runs their arithmetic.

NumPy's float32 tanh costs about 3.7 ns an element on the development machine
(AVX2) and is most of a big fused kernel's time; numba's libm call is no
faster and stops LLVM from vectorizing the loop around it.  `tanh32_core`
is branch-free arithmetic, so inside a compiled loop (native_backend.py) it
vectorizes with the instructions around it and the value never leaves the
registers.

Algorithm (float64 inside, one rounding to float32 at the end):
    a = min(|x|, 9.5)                 beyond 9.01 tanh rounds to 1.0f; a NaN stays NaN
    v = -2a / 16,  w = expm1(v)       degree-10 Taylor polynomial (|v| <= 1.19), Estrin's scheme
    w = w (w + 2), four times         expm1(2v) = expm1(v) (expm1(v) + 2): now w = expm1(-2a)
    tanh(x) = copysign(-w / (w + 2), x)
No cancellation anywhere (expm1, never exp - 1), and for negative arguments
each squaring step shrinks the relative error (by 2e^v / (1 + e^v) < 1), so
the float64 value is within about 1e-9 relative of tanh(x) and the float32
result is the correctly rounded one for nearly every input.  Edge values:
NaN -> NaN, +-inf -> +-1, +-0 -> +-0, denormals -> themselves.

Accuracy, checked over all 2^32 float32 inputs (benchmarks/tanh_ulp.py;
benchmarks/results/2026-11-27-tanh-vectorized.md): at most 1 ulp from
NumPy 2.4's float32 tanh and from float64 tanh rounded to float32; the
documented bound for a fused kernel's transcendental call is
`TRANSCENDENTAL_MAX_ULP` = 3 ulp from NumPy's result.

The same function runs on NumPy arrays (`tanh32_numpy`, ufunc-like, with
`out=`): the same IEEE float64 operations in the same order (numba compiles
without fast-math: no reassociation, no fused multiply-add), so a fused
kernel's NumPy variants and its compiled variants give equal bits and the
run-time choice among them (autotune.py) never changes a result.  The NumPy
form is slow (about 30 passes); kernel.py uses it only in kernels that will
run compiled after a few calls.

Imports `numpy` only.
"""
from __future__ import annotations

import numpy as np

CLAMP = 9.5       # tanh(9.5) = 1 - 1.1e-8 rounds to 1.0f, as does every larger input


def tanh32_core(x):
    """tanh of a float32 scalar (numba) or array (NumPy), as float32 (module docstring)."""
    d = np.float64(x)
    a = np.minimum(abs(d), CLAMP)
    v = a * -0.125
    v2 = v * v
    # expm1(v) / v = sum of v^n / (n + 1)!, n = 0..10, in pairs
    q = (0.16666666666666666 + 0.041666666666666664 * v) + v2 * (
        (0.008333333333333333 + 0.001388888888888889 * v) + v2 * (
            (0.0001984126984126984 + 2.48015873015873e-05 * v) + v2 * (
                (2.7557319223985893e-06 + 2.755731922398589e-07 * v) + v2 * 2.505210838544172e-08)))
    q = (1.0 + 0.5 * v) + v2 * q
    w = v * q
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    return np.float32(np.copysign(-w / (w + 2.0), d))


def tanh32_numpy(x, out=None):
    """`tanh32_core` on a float32 array, called like a ufunc (`out` positional or keyword)."""
    r = tanh32_core(np.asarray(x))
    if out is None:
        return r
    out[...] = r
    return out
