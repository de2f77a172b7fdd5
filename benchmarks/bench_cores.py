"""The CNN step on one core and on two: convolution GEMMs in batch parts, memory-bound kernels split.

Each row times, in rounds that alternate, the hand-written NumPy step and
graphjit's step under several settings, and gives per setting the median
over rounds of its ratio to the NumPy step of the same round (min-max of the
rounds in brackets):

- `whole`: convolution GEMMs whole on the calling thread (OpenBLAS's own
  threads), memory-bound convolution and pooling kernels serial: the
  default before batch parts existed;
- `parts`: convolution GEMMs in batch parts on the kernel pool, BLAS on one
  thread per part (`conv_algorithms.split_gemms`, needs threadpoolctl);
- `parts+pool`: also im2col/col2im copies and pooling split over the cores
  (`eager.parallel.set_threads(cores())`);
- `owned`: `GRAPHJIT_OWN_CORES=1` (`eager.own_cores`): a compiled step with
  convolutions runs with BLAS on one thread and the pool claimed, whatever
  `OPENBLAS_NUM_THREADS` says (eagerly: each convolution's GEMM parts on one
  BLAS thread, the pool not claimed).

`parts` and `parts+pool` split GEMMs only where BLAS runs on one thread
(`OPENBLAS_NUM_THREADS=1`); `owned` also where it runs on several.  After
the NumPy step's GEMMs, OpenBLAS's worker spins for about 0.1 s on the core
the pool's worker wants (benchmarks/results/2026-11-27-cnn-cores-switch.md).

Run: `python -m benchmarks.bench_cores [--rounds N] [--cpu]`; say what
`OPENBLAS_NUM_THREADS` was (the NumPy step's GEMMs use that many threads).
`--cpu` times CPU time of all threads (the work done, not what a second
core saves).
"""
from __future__ import annotations

import contextlib
import statistics
import sys
import time

import eager as ek
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.harness import calls_per_batch
from eager import blas_threads, own_cores, parallel
from eager.ops import conv_algorithms
from tracing import function

CLOCK = [time.perf_counter]


@contextlib.contextmanager
def setting(name):
    old = parallel.set_threads(parallel.cores() if name == "parts+pool" else 1)
    owned = own_cores.set_enabled(name == "owned")
    try:
        with conv_algorithms.split_gemms(enabled=name != "whole"):
            yield
    finally:
        parallel.set_threads(old)
        own_cores.set_enabled(owned)


SETTINGS = ("whole", "parts", "parts+pool", "owned")


def rounds_of(base, step, rounds):
    """{setting: [ratio per round]} and the NumPy step's median seconds."""
    clock = CLOCK[0]
    for name in SETTINGS:
        with setting(name):
            step()
    base()
    number = calls_per_batch(base, 0.02, clock)
    ratios, tb = {name: [] for name in SETTINGS}, []
    for r in range(rounds):
        t0 = clock()
        for _ in range(number):
            base()
        b = (clock() - t0) / number
        tb.append(b)
        for name in SETTINGS[r % len(SETTINGS):] + SETTINGS[:r % len(SETTINGS)]:   # each setting in turn first
            with setting(name):
                t0 = clock()
                for _ in range(number):
                    step()
                ratios[name].append((clock() - t0) / number / b)
    return ratios, statistics.median(tb)


def main(argv) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 15
    if "--cpu" in argv:
        CLOCK[0] = time.process_time
    if not blas_threads.known():
        print("threadpoolctl is not installed: GEMMs cannot be split (pip install -e '.[native]')")
        return 0
    x, filters = cnn_data()
    np_filters = [f.copy() for f in filters]
    xt = ek.constant(x)
    print(f"BLAS threads: {blas_threads.count()}, cores: {parallel.cores()}")
    print("| row | " + " | ".join(SETTINGS) + " | NumPy |\n|---|" + "---|" * (len(SETTINGS) + 1))
    for variant, wrap in (("@function", function), ("eager", lambda s: s)):
        step = wrap(make_cnn_step(ek, [ek.Variable(f) for f in filters]))
        ratios, tb = rounds_of(lambda: cnn_step_numpy(np_filters, x), lambda: step(xt), rounds)
        cells = [f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f})" for r in ratios.values()]
        print(f"| CNN step {variant} | " + " | ".join(cells) + f" | {tb * 1e3:.2f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
