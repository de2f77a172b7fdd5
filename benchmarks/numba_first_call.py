"""A numba kernel's first call: its wall time against what `eager.native.compile_seconds()` counted.

A step deadline does not count that clock (graph_runtime/deadline.py), so what a first call spends outside
it counts against the step.  Run it in a fresh process (numba's start-up happens once per process):
`python -m benchmarks.numba_first_call`; needs numba (the [native] extra).  The third row is a `cache=True`
kernel, loaded from numba's disk cache when an earlier process compiled it.
Results: benchmarks/results/2026-11-27-tidy-numba-first-call.md.
"""
import time

import numpy as np

from eager import native


def _fresh_kernel(k):
    """A function numba has not seen (a new closure each call): its first call compiles."""
    def kern(a):
        out = np.empty_like(a)
        for i in range(a.size):
            v = a[i] * k + 1.0
            out[i] = v * v - a[i] if v > 0 else -v
        return out
    return kern


def _timed(call):
    """(wall ms, counted ms) of `call()`."""
    t0, c0 = time.perf_counter(), native.compile_seconds()
    call()
    return 1e3 * (time.perf_counter() - t0), 1e3 * (native.compile_seconds() - c0)


def _row(what, wall, counted):
    print(f"{what:<36} wall {wall:8.1f} ms   counted {counted:8.1f} ms   outside {wall - counted:6.1f} ms")


def main():
    _row("available() (import, start-up)", *_timed(native.available))
    a = np.ones(64, np.float32)
    for k in range(3):
        kern = native.jit(_fresh_kernel(k + 0.5))
        _row(f"fresh jit kernel #{k}, first call", *_timed(lambda: kern(a)))
    w, g = np.ones(1 << 20, np.float32), np.ones(1 << 20, np.float32)
    _row("sgd_update (cache=True), first call", *_timed(lambda: native.sgd_update(w, g, np.float32(0.1))))
    _row("sgd_update, second call", *_timed(lambda: native.sgd_update(w, g, np.float32(0.1))))


if __name__ == "__main__":
    main()
