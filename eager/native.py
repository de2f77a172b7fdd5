"""Optional compiled kernels (numba, the `[native]` extra) for memory-bound parts of convolutions and pooling.

NumPy does two kernels in many passes over memory: col2im adds each of the
kh * kw tap slabs into the whole input gradient in turn, and the max-pool
gradient builds the window maxima, one mask per window offset, then
multiplies.  The functions here do each in one pass, image by image (an
image's slabs stay in cache), with exactly the same arithmetic:

- `col2im(cols, dxp, ...)`: the same additions as NumPy's `dxp[slab] += cols[tap]`
  loop, in the same order for every element (tap by tap, starting from the
  zeros of `dxp`), no reassociation, no fused multiply-add;
- `max_pool_grad(x, dy, dx, kh, kw)`: non-overlapping windows; each window's
  dy goes to its first maximum in row-major order found with the same `>`
  scan as NumPy's argmax path (a NaN never wins), every other element gets
  zero; with `relu=True` the same scan runs on relu(x) and is followed by
  relu's gradient (`eager/ops/nn_pool_relu.py`).  2x2 windows (every CNN's
  pooling) take a kernel without branches on the data: the scan's tests
  become integer masks and the gradient is stored through its bits, the
  same values (a data-dependent branch mispredicts about every other window:
  0.6x of the general kernel's time on the CNN's 64x28x28x16);
- `max_pool_2x2(x, out)`: the 2x2/2 max-pool forward in one pass (NumPy makes
  three `np.maximum` passes over strided views), with NumPy's maximum rule
  (`a if a > b or a is NaN else b`) in the same order;
- `sgd_update(w, g, lr)`: plain SGD's `w -= g * lr` in one pass over memory
  instead of NumPy's two (the product into a temporary, then the
  difference), each element's product rounded to the dtype before the
  subtraction, as NumPy's two ufuncs round (eager/variables.py calls it for
  an update that writes into the variable's array).

So the results are the NumPy kernels' bits (tests check it; the one
difference: where some window holds a NaN, the NumPy max-pool gradient
turns a -0.0 gradient into +0.0, the native one keeps -0.0).  An im2col copy
was tried too and dropped: NumPy's strided copy was as fast or faster
(benchmarks/RESULTS.md).

When: `use(nbytes)` is true when numba can be imported, native kernels are
enabled (`GRAPHJIT_NATIVE=0` or `set_enabled(False)` turns them off; they
are on by default when numba is installed) and the kernel moves at least
`MIN_BYTES`.  The kernels beat NumPy at every size measured (64 KB to 7 MB,
benchmarks/bench_native.py), but the first use in a process costs numba's
start-up (import and LLVM set-up, 1-3 s on the development machine), which
a process working on small tensors (most tests, the digits examples) never
wins back: the threshold keeps it out of them.  Nothing is compiled at
import: numba is imported and each kernel compiled (`cache=True`: into
numba's cache next to this file, once per machine) on first use.  Compiled
kernels release the GIL (`nogil=True`), so callers split them over batch
parts on `eager.parallel`'s pool like the NumPy bodies they replace; numba's
own threading (`parallel=True`) is not used, so there is no second pool to
oversubscribe the cores.

`jit(fn)` compiles a function the same way (no disk cache) for
`graph_runtime.fusion.native_backend`, which generates the arithmetic loops
of big fused kernels.

Imports numpy, `eager.switches` and the standard library (numba lazily, when a kernel is first needed).
"""
from __future__ import annotations

import contextlib
import importlib.util
import threading
import time

import numpy as np

from .switches import Switch

MIN_BYTES = 1 << 20            # a kernel moving less than this runs the NumPy path (see above)

_lock = threading.Lock()
_state = {"numba": None}       # numba: the module once imported, False when missing
_switch = Switch("GRAPHJIT_NATIVE", "set_enabled")
_kernels: dict = {}


def installed() -> bool:
    """Whether numba is installed, without importing it (a kernel that will compile later is chosen early)."""
    nb = _state["numba"]
    return nb is not False if nb is not None else importlib.util.find_spec("numba") is not None


def available() -> bool:
    """Whether numba can be imported (imports it on the first call)."""
    nb = _state["numba"]
    if nb is None:
        with _lock:
            if _state["numba"] is None:
                began = time.perf_counter()
                try:
                    import numba        # optional extra ([native]), imported on first need: never at import
                except ImportError:
                    numba = False
                if numba is not False:
                    numba.typeof(np.empty(1, np.float32))     # its first use imports more (40 ms): start-up too
                    _load_extensions()
                    _compiled[0] += time.perf_counter() - began      # numba's import (0.5-1 s) is start-up too
                    _start_compile_clock(numba)          # from here on: what began counts up to here once
                _state["numba"] = numba
            nb = _state["numba"]
    return nb is not False


_compiled = [0.0]          # seconds during which some thread was compiling (or loading a cached kernel)
_clock = {"depth": 0, "since": 0.0}      # open compile-machinery events, all threads; when the first opened
_clock_lock = threading.Lock()


def compile_seconds() -> float:
    """Seconds this process has spent importing numba and in numba's compile machinery so far (0.0 before
    any): a step deadline does not count them (graph_runtime/deadline.py), since they happen once, on a
    kernel's first call.  Counted: numba's import and start-up (`available()`, including the scan of the
    installed packages' numba extensions that numba makes before its first compile), and the wall time during
    which any thread holds or waits for numba's compiler lock (a compile, a `cache=True` kernel's load from or
    save to numba's disk cache), making each kernel's dispatcher (`jit`, the `cache=True` kernels) and what callers
    count with `compile_clock()` (the compiled loops' search for NumPy's BLAS).  Not
    counted: typing a first call's arguments before the lock, about 0.3 ms a kernel (benchmarks/results/2026-11-27-tidy-numba-first-call.md)."""
    return _compiled[0]


def _load_extensions() -> None:
    """numba's extension scan (every installed package's entry points, 5-20 ms) now, as start-up: numba runs it
    at the first compile, before any of its compile events."""
    from numba.core import entrypoints     # numba is optional: imported only once `available()` found it
    entrypoints.init_all()


def _start_compile_clock(numba) -> None:
    """Add to `compile_seconds()` the wall time during which some thread is in numba's compile machinery: its
    compiler lock (held to compile, and to load or save a cached kernel; a thread waiting for it waits for a
    compile) and its compile events.  Intervals of several threads are counted once (their union): events
    nest and overlap, so the clock runs while any is open."""
    from numba.core import event       # numba is optional: imported only once `available()` found it

    class Clock(event.Listener):
        def on_start(self, ev):
            _clock_start()

        def on_end(self, ev):
            _clock_stop()
    for kind in ("numba:compiler_lock", "numba:compile"):
        event.register(kind, Clock())


def _clock_start() -> None:
    with _clock_lock:
        if _clock["depth"] == 0:
            _clock["since"] = time.perf_counter()
        _clock["depth"] += 1


def _clock_stop() -> None:
    with _clock_lock:
        _clock["depth"] -= 1
        if _clock["depth"] == 0:
            _compiled[0] += time.perf_counter() - _clock["since"]


@contextlib.contextmanager
def compile_clock():
    """Count the block in `compile_seconds()`: one-time set-up of compiled code (making a kernel's dispatcher,
    1-7 ms with a disk cache; graph_runtime's search for NumPy's BLAS with its bit check, 4 ms)."""
    _clock_start()
    try:
        yield
    finally:
        _clock_stop()


def enabled() -> bool:
    """Whether native kernels may run (they still need numba: `available()`)."""
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Turn native kernels on or off process-wide (None: the default); returns the previous setting."""
    return _switch.set(flag)


@contextlib.contextmanager
def options(enabled: bool | None = None, min_bytes: int | None = None):
    """Within the block, native kernels on or off and their size threshold (tests, benchmarks; process-wide)."""
    global MIN_BYTES
    saved = (_switch.value, MIN_BYTES)
    if enabled is not None:
        set_enabled(enabled)
    if min_bytes is not None:
        MIN_BYTES = min_bytes
    try:
        yield
    finally:
        _switch.value, MIN_BYTES = saved


_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))      # what the kernels are compiled for
_INT_OF = {np.dtype(np.float32): np.int32, np.dtype(np.float64): np.int64}   # a float's bits


def use(nbytes: int, dtype=np.float32) -> bool:
    """Whether a kernel moving `nbytes` of `dtype` should run natively (float32 and float64 only)."""
    return nbytes >= MIN_BYTES and dtype in _DTYPES and enabled() and available()


def _kernel(name: str):
    fn = _kernels.get(name)
    if fn is None:
        with _lock:
            fn = _kernels.get(name)
            if fn is None:
                with compile_clock():
                    _define_float_bits()
                    fn = _kernels[name] = _state["numba"].njit(cache=True, nogil=True)(_SOURCES[name])
    return fn


def _define_float_bits() -> None:
    """Define `_float_bits(v)` for the kernels: a float's bits as the signed integer of its width (a bitcast,
    no arithmetic), so a kernel can route a value with integer masks, which compile to no branch."""
    if "_float_bits" in globals():
        return
    from llvmlite import ir                          # numba's own dependency: present whenever numba is
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def _float_bits(typingctx, v):
        width = v.bitwidth

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(width))
        return getattr(types, f"int{width}")(v), codegen
    globals()["_float_bits"] = _float_bits


def jit(fn):
    """`fn` compiled by numba when first called (callers check `available()` first): nopython, releasing the
    GIL, NumPy's error model for floats (x / 0 is inf or nan, never an exception), no fast-math (no reassociation,
    no fused multiply-add: each operation rounds as NumPy's does), not cached on disk (`fn` may be generated)."""
    with compile_clock():
        return _state["numba"].njit(nogil=True, error_model="numpy")(fn)


# ------------------------------------------------------------------ the kernels (numba compiles these)
def _col2im_py(cols, dxp, sh, sw, dh, dw):
    n, oh, ow, kh, kw, c = cols.shape
    for b in range(n):
        for a in range(kh):
            for e in range(kw):
                for i in range(oh):
                    r = i * sh + a * dh
                    for j in range(ow):
                        q = j * sw + e * dw
                        for ch in range(c):
                            dxp[b, r, q, ch] += cols[b, i, j, a, e, ch]


def _max_pool_grad_py(x, dy, dx, kh, kw, best, arg, zero, one, relu):
    # with `relu`: the same scan on h = relu(x) = maximum(x, 0) (x if x > 0 or x is NaN, else +0), and each
    # routed value times (h > 0) as ReluGrad multiplies (max_pool_relu_grad)
    n, oh, ow, c = dy.shape
    z = zero[0]                                 # of dx's dtype: no conversion touches dy's bits
    z1 = one[0]
    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                r0 = i * kh
                q0 = j * kw
                for ch in range(c):
                    v = x[b, r0, q0, ch]
                    best[ch] = v if (not relu or v > z or v != v) else z
                    arg[ch] = 0
                for k in range(1, kh * kw):
                    r = r0 + k // kw
                    q = q0 + k % kw
                    for ch in range(c):
                        v = x[b, r, q, ch]
                        if not (not relu or v > z or v != v):
                            v = z
                        if v > best[ch]:
                            best[ch] = v
                            arg[ch] = k
                for k in range(kh * kw):
                    r = r0 + k // kw
                    q = q0 + k % kw
                    for ch in range(c):
                        if arg[ch] != k:
                            dx[b, r, q, ch] = z
                        elif relu:
                            dx[b, r, q, ch] = dy[b, i, j, ch] * (z1 if best[ch] > z else z)
                        else:
                            dx[b, r, q, ch] = dy[b, i, j, ch]


def _max_pool_grad_2x2_py(x, dy, dxi, relu):
    # _max_pool_grad_py's scan and routing for 2x2 windows, with no branch on the data (a data-dependent
    # branch mispredicts about every other window: 2.6 ms against 1.0 ms on the CNN's 64x28x28x16): the
    # scan's `>` tests become masks, the window's gradient is written through its bits (dxi: dx viewed as
    # integers of its width), each element its gradient's bits or 0 (+0.0), as the general kernel stores
    n, oh, ow, c = dy.shape
    z = x.dtype.type(0)
    one = x.dtype.type(1)
    for b in range(n):
        for i in range(oh):
            r = 2 * i
            for j in range(ow):
                q = 2 * j
                for ch in range(c):
                    v0 = x[b, r, q, ch]
                    v1 = x[b, r, q + 1, ch]
                    v2 = x[b, r + 1, q, ch]
                    v3 = x[b, r + 1, q + 1, ch]
                    if relu:                            # relu(v): v if v > 0 or v is NaN, else +0
                        v0 = z if v0 <= z else v0
                        v1 = z if v1 <= z else v1
                        v2 = z if v2 <= z else v2
                        v3 = z if v3 <= z else v3
                    m1 = v1 > v0                        # the first-maximum scan: a later tap wins only if greater
                    b1 = v1 if m1 else v0
                    m2 = v2 > b1
                    b2 = v2 if m2 else b1
                    m3 = v3 > b2
                    g = dy[b, i, j, ch]
                    if relu:
                        g = g * (one if (v3 if m3 else b2) > z else z)
                    gi = _float_bits(g)
                    k1, k2, k3 = -np.int64(m1), -np.int64(m2), -np.int64(m3)   # all ones where the test held
                    dxi[b, r, q, ch] = gi & ~(k1 | k2 | k3)
                    dxi[b, r, q + 1, ch] = gi & k1 & ~(k2 | k3)
                    dxi[b, r + 1, q, ch] = gi & k2 & ~k3
                    dxi[b, r + 1, q + 1, ch] = gi & k3


def _max_pool_2x2_py(x, out):
    # NumPy's maximum (a if a > b or a is NaN, else b: the first NaN wins, +0 and -0 tie to b), tap by tap in
    # row-major order as the NumPy kernel's three calls; the `|` (not `or`) keeps the data out of branches
    n, oh, ow, c = out.shape
    for b in range(n):
        for i in range(oh):
            r = 2 * i
            for j in range(ow):
                q = 2 * j
                for ch in range(c):
                    t = x[b, r, q, ch]
                    v = x[b, r, q + 1, ch]
                    t = t if (t > v) | (t != t) else v
                    v = x[b, r + 1, q, ch]
                    t = t if (t > v) | (t != t) else v
                    v = x[b, r + 1, q + 1, ch]
                    out[b, i, j, ch] = t if (t > v) | (t != t) else v


def _sgd_py(w, g, lr):
    r = lr[0]                                   # of w's dtype: the product rounds as np.multiply's does
    for i in range(w.size):
        w[i] = w[i] - g[i] * r


_SOURCES = {"col2im": _col2im_py, "max_pool_grad": _max_pool_grad_py, "max_pool_grad_2x2": _max_pool_grad_2x2_py,
            "max_pool_2x2": _max_pool_2x2_py, "sgd": _sgd_py}


# ------------------------------------------------------------------ entry points (callers check `use` first)
def col2im(cols, dxp, strides, dilations) -> None:
    """dxp[b, i*sh + a*dh, j*sw + e*dw, :] += cols[b, i, j, a, e, :], tap (a, e) by tap in row-major order."""
    _kernel("col2im")(cols, dxp, strides[0], strides[1], dilations[0], dilations[1])


def max_pool_grad(x, dy, dx, kh, kw, relu=False) -> None:
    """Fill the windows of dx [n, oh*kh.., ow*kw.., C]: dy at each window's first maximum of x, zero elsewhere.

    `relu`: of relu(x) instead, times relu's gradient (`eager/ops/nn_pool_relu.py`); x, dy, dx of one dtype."""
    if kh == kw == 2:
        _kernel("max_pool_grad_2x2")(x, dy, dx.view(_INT_OF[dx.dtype]), relu)
        return
    c = dy.shape[3]
    _kernel("max_pool_grad")(x, dy, dx, kh, kw, np.empty(c, x.dtype), np.empty(c, np.int64), np.zeros(1, dx.dtype),
                             np.ones(1, dx.dtype), relu)


def max_pool_2x2(x, out) -> None:
    """out [n, oh, ow, C] = the maxima of x's 2x2 windows (stride 2, no padding; rows and columns past the last
    window ignored), NumPy's `np.maximum` tap by tap in row-major order: the NumPy kernel's bits."""
    _kernel("max_pool_2x2")(x, out)


def sgd_update(w, g, lr) -> None:
    """w -= g * lr in one pass: w and g C-contiguous arrays of one shape and dtype, lr a scalar of that dtype
    (not overlapping w)."""
    _kernel("sgd")(w.reshape(-1), g.reshape(-1), np.full(1, lr, w.dtype))
