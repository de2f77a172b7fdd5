"""Native kernels (eager.native, the `[native]` extra) on and off, against NumPy in the same rounds.

Rows: the CNN step (`@function` and eager) and the three kernels native
code replaces (im2col of the step's second convolution, its col2im
scatter-add, the 2x2 max-pool gradient), each timed in rounds that alternate
NumPy baseline, graphjit with native kernels and graphjit without them; the
table gives the median over rounds of each ratio to the baseline of the same
round, and the rounds' min-max.  Kernel rows are against the NumPy path of
the same kernel (so their "off" column only shows the noise).

Run: `python -m benchmarks.bench_native [--rounds N] [--cpu]` (needs numba; `--cpu`: CPU time of all
threads, for a busy machine; use it with `OPENBLAS_NUM_THREADS=1`).
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import eager as ek
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.harness import calls_per_batch
from eager import native
from eager.dispatch import execute
from eager.ops import conv_algorithms, nn_pool
from tracing import function

CLOCK = [time.perf_counter]


def three_way(base, on, off, rounds):
    """(median on/base, min, max, median off/base, min, max, median base seconds) over alternating batches."""
    clock = CLOCK[0]
    base()
    with native.options(enabled=True):
        on()
    with native.options(enabled=False):
        off()
    number = calls_per_batch(base, 0.02, clock)
    r_on, r_off, tb = [], [], []
    for _ in range(rounds):
        t = {}
        for name, fn, flag in (("base", base, False), ("on", on, True), ("off", off, False)):
            with native.options(enabled=flag):
                t0 = clock()
                for _ in range(number):
                    fn()
                t[name] = (clock() - t0) / number
        tb.append(t["base"])
        r_on.append(t["on"] / t["base"])
        r_off.append(t["off"] / t["base"])
    return (statistics.median(r_on), min(r_on), max(r_on), statistics.median(r_off), min(r_off), max(r_off),
            statistics.median(tb))


def _cnn_rows():
    x, filters = cnn_data()
    np_filters = [f.copy() for f in filters]
    xt = ek.constant(x)
    for variant, wrap in (("@function", function), ("eager", lambda s: s)):
        step = wrap(make_cnn_step(ek, [ek.Variable(f) for f in filters]))
        yield f"CNN step, {variant}", (lambda: cnn_step_numpy(np_filters, x)), (lambda: step(xt)), (lambda: step(xt))


def _kernel_rows():
    rng = np.random.default_rng(0)
    p1 = rng.standard_normal((64, 16, 16, 16)).astype(np.float32)         # conv2's padded input
    view_args = (p1, 14, 14, 3, 3, (1, 1), (1, 1), 0, 64)
    yield "im2col 64x14x14x(3x3x16)", (lambda: conv_algorithms._cols(*view_args)), \
        (lambda: conv_algorithms._cols(*view_args)), (lambda: conv_algorithms._cols(*view_args))
    cols = rng.standard_normal((32, 14, 14, 3, 3, 16)).astype(np.float32)
    dxp = np.zeros((32, 16, 16, 16), np.float32)

    def scatter():
        dxp[...] = 0
        conv_algorithms._scatter_add(dxp, cols, (1, 1), (1, 1))
    yield "col2im 32x14x14x(3x3x16)", scatter, scatter, scatter
    h1 = np.maximum(rng.standard_normal((64, 28, 28, 16)).astype(np.float32), 0)
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    y = execute(nn_pool.MAX_POOL, (ek.constant(h1),), attrs).numpy()
    dy = rng.standard_normal(y.shape).astype(np.float32)

    def grad():
        return nn_pool._max_pool_grad_kernel(h1, y, dy, **attrs)
    yield "max-pool grad 64x28x28x16", grad, grad, grad


def main(argv) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 15
    if "--cpu" in argv:
        CLOCK[0] = time.process_time
    if not native.available():
        print("numba is not installed: nothing to compare (pip install -e '.[native]')")
        return 0
    print("| row | native on / NumPy (min-max) | native off / NumPy (min-max) | NumPy |\n|---|---|---|---|")
    for label, base, on, off in list(_cnn_rows()) + list(_kernel_rows()):
        m_on, lo_on, hi_on, m_off, lo_off, hi_off, tb = three_way(base, on, off, rounds)
        print(f"| {label} | {m_on:.2f}x ({lo_on:.2f}-{hi_on:.2f}) | {m_off:.2f}x ({lo_off:.2f}-{hi_off:.2f}) | "
              f"{tb * 1e3:.3f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
