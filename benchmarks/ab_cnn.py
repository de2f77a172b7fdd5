"""A/B of CNN step settings in one process: the conv input-gradient pick and `GRAPHJIT_OWN_CORES`.

Settings, each a context around the same traced (or eager) step of cnn_workload.py:

- `taps`: the defaults (the cost model picks `taps` for conv2's input gradient);
- `transpose`: the conv2 input gradient as the transposed convolution (the pick before session 12),
  `conv_algorithms.forced(input="transpose")`;
- `owned`: the defaults with `eager.own_cores.set_enabled(True)` (what `GRAPHJIT_OWN_CORES=1` does).

Each round times a batch of steps of every setting and of the hand-written NumPy step, the order rotated
every round (whichever runs right after the NumPy step meets OpenBLAS's spinning worker and pays for the
cache footprint).  `--settle S` sleeps S seconds before each batch, so that no batch starts with a spinning
worker left by the one before (OpenBLAS's spins for about 0.1 s): with it the figures say what a training
loop of one kind of step sees.  Printed: median times, the median of the per-round ratios to the first
setting with its quartiles, and the median ratio to NumPy.

Run: `python -m benchmarks.ab_cnn [--mode function|eager] [--rounds N] [--steps K] [--settle S] [--cpu]
[--only taps,transpose,owned]`.  `--cpu` times CPU time (all threads).
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time

import eager as ek
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.harness import rounds_arg
from eager import own_cores
from eager.ops import conv_algorithms
from tracing import function


@contextlib.contextmanager
def _owned():
    old = own_cores.set_enabled(True)
    try:
        yield
    finally:
        own_cores.set_enabled(old)


SETTINGS = {"taps": contextlib.nullcontext, "transpose": lambda: conv_algorithms.forced(input="transpose"),
            "owned": _owned, "numpy": contextlib.nullcontext}


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.ab_cnn")
    ap.add_argument("--mode", choices=("function", "eager"), default="function")
    ap.add_argument("--rounds", type=rounds_arg, default=21)
    ap.add_argument("--steps", type=int, default=3, help="steps per batch")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds of sleep before each batch")
    ap.add_argument("--cpu", action="store_true")
    ap.add_argument("--only", default="taps,transpose,owned")
    args = ap.parse_args(argv)
    names = args.only.split(",") + ["numpy"]
    clock = time.process_time if args.cpu else time.perf_counter
    x, filters = cnn_data()
    np_filters = [f.copy() for f in filters]
    step = make_cnn_step(ek, [ek.Variable(f) for f in filters])
    step = function(step) if args.mode == "function" else step
    xt = ek.constant(x)

    def batch(name):
        if name == "numpy":
            for _ in range(args.steps):
                cnn_step_numpy(np_filters, x)
        else:
            for _ in range(args.steps):
                step(xt)

    times = {n: [] for n in names}
    for r in range(args.rounds + 1):          # round 0 warms every setting up and is not counted
        for name in names[r % len(names):] + names[:r % len(names)]:
            with SETTINGS[name]():
                time.sleep(args.settle)
                t0 = clock()
                batch(name)
                if r:
                    times[name].append((clock() - t0) / args.steps)
    first = names[0]
    print(f"CNN step ({args.mode}), {args.rounds} rounds of {args.steps} steps, "
          f"{'CPU' if args.cpu else 'wall'} time, settle {args.settle} s")
    for name in names:
        ratios = [a / b for a, b in zip(times[name], times[first])]
        q = statistics.quantiles(ratios, n=4)
        to_numpy = statistics.median(a / b for a, b in zip(times[name], times["numpy"]))
        print(f"{name:10s} {statistics.median(times[name]) * 1e3:8.2f} ms   /{first} {statistics.median(ratios):.3f} "
              f"({q[0]:.3f}-{q[2]:.3f})   /numpy {to_numpy:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
