"""Does OpenBLAS's idle worker slow the memory-bound kernels that follow a multi-threaded GEMM?

After a GEMM that used its threads, each OpenBLAS worker keeps polling for work (`sched_yield` in a loop) for
`OPENBLAS_THREAD_TIMEOUT` (default 2^28 cycles, about 0.1 s) before it sleeps: through every MLP step, since a
step takes under a millisecond.  This script times the MLP step's biggest memory-bound kernel, plain SGD's update
of w1 (784x256 float32, `eager.native.sgd_update` with numba, else NumPy's two passes), in blocks of calls:

- `1-thread GEMM, workers asleep`: each update follows `x.T @ dh` on one BLAS thread; the block starts after a
  0.3 s pause, so the worker is asleep (its first calls, cold after the pause, are not counted);
- `2-thread GEMM, worker polling`: each update follows the same GEMM on OpenBLAS's threads (the MLP step's case);
- `1-thread GEMM, worker polling`: a 2-thread GEMM of other arrays, then the 1-thread GEMM, then the update:
  the worker polls, the update's operand was written by the main thread alone.

Block order turns every round; printed: median (25th-75th percentile) per way, and the load.  Run:
`python -m benchmarks.blas_idle_workers [--rounds N]`, and the same with `OPENBLAS_THREAD_TIMEOUT=4` (workers
sleep at once) to compare.  Needs threadpoolctl (the `[native]` extra).  Loaded-machine figures say nothing:
the polling worker then competes with other processes for both cores.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from eager import blas_threads, native


def _update(w, g, lr):
    if native.use(3 * g.nbytes, g.dtype):
        native.sgd_update(w, g, lr)
    else:
        g *= lr
        np.subtract(w, g, out=w)


def ways(x, dh, x2, dh2, w, lr):
    def timed(g):
        t0 = time.perf_counter()
        _update(w, g, lr)
        return time.perf_counter() - t0

    def one_thread(a, b):
        with blas_threads.single():
            return a.T @ b

    return {"1-thread GEMM, workers asleep": lambda: timed(one_thread(x, dh)),
            "2-thread GEMM, worker polling": lambda: timed(x.T @ dh),
            "1-thread GEMM, worker polling": lambda: (x2.T @ dh2, timed(one_thread(x, dh)))[1]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--calls", type=int, default=200, help="timed calls per block")
    args = ap.parse_args(argv)
    if not blas_threads.known():
        raise SystemExit("blas_idle_workers: needs threadpoolctl and a BLAS library it can set")
    rng = np.random.default_rng(0)
    x, x2 = (rng.standard_normal((64, 784)).astype(np.float32) for _ in range(2))
    dh, dh2 = ((rng.standard_normal((64, 256)) * 1e-3).astype(np.float32) for _ in range(2))
    w = (rng.standard_normal((784, 256)) * 0.05).astype(np.float32)
    fns = ways(x, dh, x2, dh2, w, np.float32(1e-6))
    names = list(fns)
    times: dict = {k: [] for k in names}
    for r in range(args.rounds):
        for k in names[r % len(names):] + names[:r % len(names)]:
            if k.endswith("asleep"):
                time.sleep(0.3)            # past the workers' polling timeout
            got = [fns[k]() for _ in range(args.calls + 10)]
            times[k] += got[10:]
    print(f"w1 update (784x256 float32, {'numba' if native.use(1 << 30) else 'NumPy'}) after x.T @ dh, "
          f"{args.rounds} rounds of {args.calls} calls, OPENBLAS_THREAD_TIMEOUT="
          f"{os.environ.get('OPENBLAS_THREAD_TIMEOUT', '-')}, load {os.getloadavg()[0]:.1f}")
    print("| way | update, median (25th-75th) |")
    print("|---|---|")
    for k, ts in times.items():
        q1, q2, q3 = np.percentile(ts, [25, 50, 75]) * 1e6
        print(f"| {k} | {q2:.1f} us ({q1:.1f}-{q3:.1f}) |")


if __name__ == "__main__":
    main()
