"""Per-kernel profile of the CNN `@function` step: wall and CPU time of each op, steady and after NumPy's step.

The step of cnn_workload.py is traced once; its compiled plan is then run through
`graph_runtime.executors.TracingExecutor` (the same schedule and kernels as the generated code, one op at a
time), on the wall clock and on the calling thread's CPU clock (`time.thread_time_ns`), in two settings:

- `steady`: right after another step (a training loop: the step's buffers are warm);
- `after numpy`: right after the hand-written NumPy step, as `bench_summary` measures every graphjit step
  (NumPy's ~100 MB of temporaries have gone through the caches and OpenBLAS's workers are spinning).

Each round runs the four (setting, clock) combinations in a rotated order and times the whole step too
(plain calls of the generated code, wall).  Printed: per op the median of the rounds, largest first, and the
sums.  A kernel that splits its work over the pool or OpenBLAS's threads shows its CPU time on the calling
thread only: run with `OPENBLAS_NUM_THREADS=1 GRAPHJIT_BLAS_SPLIT=0` for all the work on one thread (the
CPU column is then the work, whatever the load), or on the idle machine with the defaults for the wall
column the benchmark's ratio sees.

Run: `python -m benchmarks.cnn_kernels [--rounds N] [--min-us U]`.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import eager as ek
import graph_runtime as gr
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.harness import rounds_arg
from graph_runtime.executors import TracingExecutor
from tracing import function

SETTINGS = ("steady", "after numpy")
CLOCKS = {"wall": time.perf_counter_ns, "cpu": time.thread_time_ns}


def _label(stat) -> str:
    shapes = ", ".join("x".join(map(str, s)) for s in stat.output_shapes if s)
    return f"{stat.type} {stat.name} [{shapes}]"


def profile(rounds: int, batch: int = 64, hw: int = 28):
    """({(setting, clock): {op label: [us per round]}}, {setting: [step seconds]}, [NumPy step seconds])."""
    x, filters = cnn_data(batch=batch, hw=hw)
    np_filters = [f.copy() for f in filters]
    step = function(make_cnn_step(ek, [ek.Variable(f) for f in filters]))
    xt = ek.constant(x)
    for _ in range(5):
        step(xt)
        cnn_step_numpy(np_filters, x)
    plan = step.get_concrete_function(xt)._plan
    ops = {(s, c): {} for s in SETTINGS for c in CLOCKS}
    steps = {s: [] for s in SETTINGS}
    numpy_times = []
    combos = list(ops)
    for r in range(rounds):
        for setting, clock in combos[r % len(combos):] + combos[:r % len(combos)]:
            t0 = time.perf_counter()
            if setting == "steady":
                step(xt)
            else:
                cnn_step_numpy(np_filters, x)
                numpy_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            step(xt)                                    # the step itself, plain, in this setting
            steps[setting].append(time.perf_counter() - t0)
            md = gr.RunMetadata()
            TracingExecutor(md, CLOCKS[clock]).run(plan, [xt.numpy()])
            for stat in md.step_stats:
                ops[setting, clock].setdefault(_label(stat), []).append(stat.duration_us)
    return ops, steps, numpy_times


def report(ops, steps, numpy_times, min_us: float) -> str:
    cols = list(ops)
    med = {c: {k: statistics.median(v) for k, v in ops[c].items()} for c in cols}
    rounds = max(len(v) for v in ops[cols[0]].values())
    labels = sorted(med[cols[0]], key=lambda k: -max(med[c].get(k, 0.0) for c in cols))
    head = f"{'op':60s}" + "".join(f"{s[:6] + ' ' + c:>14s}" for s, c in cols)
    lines = [f"CNN @function step: steady {statistics.median(steps['steady']) * 1e3:.2f} ms, after NumPy "
             f"{statistics.median(steps['after numpy']) * 1e3:.2f} ms (wall, plain calls); NumPy step "
             f"{statistics.median(numpy_times) * 1e3:.2f} ms; per op: median us of {rounds} rounds", head]
    for k in labels:
        if max(med[c].get(k, 0.0) for c in cols) >= min_us:
            lines.append(f"{k[:60]:60s}" + "".join(f"{med[c].get(k, 0.0):14.0f}" for c in cols))
    lines.append(f"{'sum of all ops':60s}" + "".join(f"{sum(med[c].values()):14.0f}" for c in cols))
    return "\n".join(lines)


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cnn_kernels")
    ap.add_argument("--rounds", type=rounds_arg, default=21)
    ap.add_argument("--min-us", type=float, default=20.0, help="list ops taking at least this long somewhere")
    args = ap.parse_args(argv)
    print(report(*profile(args.rounds), args.min_us))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
