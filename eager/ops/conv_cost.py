"""The convolution cost model: which algorithm (`conv_algorithms`) each problem shape runs.

`choose(kind, ...)` estimates each algorithm's time from the shapes with a
few constants measured on the 2-core development machine
(single-threaded OpenBLAS, see benchmarks/bench_cnn.py; the GEMM constants
refitted in benchmarks/results/2026-11-27-cnn-taps-input.md: a GEMM's left
operand with long rows costs far more per element than one with short rows,
so a tall, narrow im2col GEMM is dearer than the old constants said; col2im's scatter-add at
NumPy's cost, which grows as the channel runs it adds get shorter: benchmarks/results/
2026-11-27-cnn-col2im-numpy-cost.md) and caches the pick per shape.  The pick depends on shapes only, never on timings taken at run
time, so a program gives the same bits on every run.  `forced(...)`
overrides the pick (tests, benchmarks).  `conv_algorithms` re-exports these
names.

Imports the standard library only.
"""
from __future__ import annotations

import contextlib
import functools

ALGORITHMS = {"forward": ("im2col", "taps"), "input": ("col2im", "taps", "transpose"), "filter": ("gemm", "taps")}

# cost constants, nanoseconds (fitted on the dev box; only their ratios matter)
_MAC = 0.027                   # one multiply-add inside a GEMM
_OUT = 0.26                    # per GEMM output element (K >= 2)
_OUT_K1 = 1.7                  # per output element when K == 1 (NumPy's outer-product matmul path)
_CALL = 150.0                  # per inner matmul call (NumPy loops stacked matmuls over the batch dims)
_READ = 0.086                  # per element of a GEMM's left operand (dominates matrix-vector-like shapes)
_READ_LONG = 0.88              # more per left-operand element, in proportion to its rows' length up to _LONG_ROW
_LONG_ROW = 144                # (long rows of a tall operand: fitted on M = 12544, K 9..576, N 8..144)
_ADD = 0.75                    # per element of a `+=` into a strided slab from a contiguous operand
_ADD_GATHER = 1.5              # the same from a strided operand (col2im's column slabs)
_ADD_GATHER_RUN = 8.0          # more per element, divided by C (C > 1): NumPy's strided add runs in C-long runs
_COPY_SLAB = 0.6               # per element copied slab by slab (C == 1)
_COPY_ROW = 0.3                # per element copied by the strided reshape, plus _COPY_RUN / C
_COPY_RUN = 2.0

_forced: dict = {}


@contextlib.contextmanager
def forced(**algorithms):
    """Within the block, use the named algorithm for each kind: `forced(forward="taps", input="col2im")`.

    For tests and benchmarks: the setting is process-wide (not per thread).
    """
    for kind, name in algorithms.items():
        if name not in ALGORITHMS.get(kind, ()):
            raise ValueError(f"unknown {kind} convolution algorithm {name!r}; expected one of "
                             f"{ALGORITHMS.get(kind, ())} (kinds: {sorted(ALGORITHMS)})")
    saved = dict(_forced)
    _forced.update(algorithms)
    try:
        yield
    finally:
        _forced.clear()
        _forced.update(saved)


def _gemm(m, k, n, calls=1):
    read = _READ + _READ_LONG * min(k, _LONG_ROW) / _LONG_ROW
    return calls * _CALL + m * n * (k * _MAC + (_OUT_K1 if k == 1 else _OUT)) + m * k * read


def _scatter(c):
    # col2im's adds at NumPy's cost even where numba's compiled scatter would run: the pick may not depend on
    # whether numba is installed (col2im and taps sum in other orders), and it must not make the NumPy-only
    # install slower; a channel run of C > 1 floats is one inner loop of NumPy's strided add (with C == 1 the
    # loop runs along the row instead)
    return _ADD_GATHER + (_ADD_GATHER_RUN / c if c > 1 else 0.0)


def _copy(elems, c):
    return elems * (_COPY_SLAB if c == 1 else _COPY_ROW + _COPY_RUN / c)


@functools.lru_cache(maxsize=4096)
def estimates(kind, n, c, o, kh, kw, oh, ow, h, w, strides):
    """Estimated nanoseconds per algorithm of `kind` for this problem (input [n, h, w, c], output [n, oh, ow, o])."""
    m, taps = n * oh * ow, kh * kw
    cols = m * taps * c
    if kind == "forward":
        return {"im2col": _copy(cols, c) + _gemm(m, taps * c, o),
                "taps": taps * (_gemm(m, c, o, calls=n * oh) + _ADD * m * o)}
    if kind == "input":
        est = {"col2im": _gemm(m, o, taps * c) + taps * _scatter(c) * m * c,
               "taps": taps * (_gemm(m, o, c) + _ADD * m * c)}
        if strides == (1, 1):
            est["transpose"] = _copy(n * h * w * taps * o, o) + _gemm(n * h * w, taps * o, c)
        return est
    return {"gemm": _copy(cols, c) + _gemm(taps * c, m, o),
            "taps": taps * (_copy(m * c, c) + _gemm(c, m, o))}


@functools.lru_cache(maxsize=4096)
def _cheapest(kind, *problem):
    est = estimates(kind, *problem)
    return min(est, key=est.get)


def choose(kind, n, c, o, kh, kw, oh, ow, h, w, strides):
    """The algorithm name for this problem: forced, else the cheapest estimate (cached per shape)."""
    name = _forced.get(kind)
    if name is not None and (name != "transpose" or strides == (1, 1)):
        return name
    return _cheapest(kind, n, c, o, kh, kw, oh, ow, h, w, strides)
