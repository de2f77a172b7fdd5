"""A float32 tanh that compiled loops vectorize: the fused kernels' `tanh` when numba runs their arithmetic.

NumPy's float32 tanh costs about 3.7 ns an element on the development machine
(AVX2) and is most of a big fused kernel's time; numba's libm call is no
faster and stops LLVM from vectorizing the loop around it.  `tanh32_core`
is branch-free arithmetic, so inside a compiled loop (native_backend.py) it
vectorizes with the instructions around it and the value never leaves the
registers.

Algorithm (float64 inside, one rounding to float32 at the end):
    a = min(|x|, 9.5)                 beyond 9.01 tanh rounds to 1.0f; a NaN stays NaN
    v = -2a / 64,  w = expm1(v)       v (1 + v g(v)), g of degree 4 (|v| <= 0.297), Estrin's scheme
    w = w (w + 2), six times          expm1(2v) = expm1(v) (expm1(v) + 2): now w = expm1(-2a)
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

Other compiled kernels call it too: `native_backend.tanh32_compiled()` is
the numba-compiled function (LLVM inlines and vectorizes it in their loops).

The same function runs on NumPy arrays (`tanh32_numpy`, ufunc-like, with
`out=`): the same IEEE float64 operations in the same order (numba compiles
without fast-math: no reassociation, no fused multiply-add), so a fused
kernel's NumPy variants and its compiled variants give equal bits and the
run-time choice among them (autotune.py) never changes a result (tests
compare the two forms bit for bit).  The NumPy form is slow (about 30
passes, about 15 times `np.tanh`'s time); kernel.py uses it only in kernels
that will run compiled after a few calls.

Imports `numpy` only.
"""
from __future__ import annotations

import numpy as np

CLAMP = 9.5       # tanh(9.5) = 1 - 1.1e-8 rounds to 1.0f, as does every larger input


# expm1(v) = v (1 + v g(v)) on [-0.297, 0]: g of degree 4, a least-squares fit at 2000 Chebyshev nodes
# (relative error of expm1 below 3e-10)
G0, G1, G2, G3, G4 = (0.4999999991869884, 0.166666529853708, 0.04166296085431708, 0.008298036393236178,
                      0.001250230932908948)


def tanh32_core(x):
    """tanh of a float32 scalar (numba) or array (NumPy), as float32 (module docstring)."""
    d = np.float64(x)
    a = np.minimum(abs(d), CLAMP)
    v = a * -0.03125
    v2 = v * v
    g = (G0 + G1 * v) + v2 * ((G2 + G3 * v) + v2 * G4)
    w = v * (1.0 + v * g)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    w = w * (w + 2.0)
    return np.float32(np.copysign(-w / (w + 2.0), d))


def tanh32_numpy(x, out=None):
    """`tanh32_core` on a float32 array, called like a ufunc (`out` positional or keyword).

    The same operations on the same values as `tanh32_core` (IEEE addition and multiplication are
    commutative, so `p += c` is `c + p`), written into four scratch arrays: a fresh array per operation
    costs NumPy a page-faulting allocation each (about 90 ns an element in all, against 40 here)."""
    x = np.asarray(x)
    if x.ndim == 0:                 # NumPy returns scalars from 0-d operations: work on one element
        r = tanh32_numpy(x.reshape(1))[0]
        if out is None:
            return r
        out[...] = r
        return out
    v = x.astype(np.float64)
    np.abs(v, out=v)
    np.minimum(v, CLAMP, out=v)
    v *= -0.03125
    v2 = v * v
    q = v2 * G4
    p = np.multiply(v, G3)
    p += G2
    q += p
    q *= v2                         # v2 * ((G2 + G3 v) + v2 G4)
    np.multiply(v, G1, out=p)
    p += G0
    q += p                          # g
    q *= v
    q += 1.0
    q *= v                          # w = v (1 + v g) = expm1(v)
    for _ in range(6):
        np.add(q, 2.0, out=p)
        q *= p                      # w (w + 2)
    np.add(q, 2.0, out=p)
    np.negative(q, out=q)
    q /= p
    np.copysign(q, x, out=q)        # x's sign is d's
    if out is None:
        return q.astype(np.float32)
    out[...] = q
    return out
