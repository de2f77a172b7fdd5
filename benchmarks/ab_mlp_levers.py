"""A/B of the MLP `@function` step's kernel levers, in one process: each lever off (A) against on (B).

A lever is a change to the kernels a plan is compiled with (`LEVERS`: name -> a context manager that turns it
off while a step is traced and compiled).  The script traces the `bench_summary` MLP step (784-256-10, batch
64, SGD) twice, with the lever off and on, each on its own variables from the same start, and times both and
the hand-written NumPy step (`workloads.mlp_step_numpy`) in rounds, the order shuffled every round (the way
right after the NumPy step reads slower).  Fused kernels are shared between plans by signature
(fusion/kernel.py), so the share is emptied before each trace.  Printed: median times per step, the median
of the per-round ratios B/A with its 25th-75th percentiles, and both ways' median ratio to NumPy.

Run: `python -m benchmarks.ab_mlp_levers [--lever NAME] [--rounds N] [--cpu]`.  `--cpu` times the main
thread's CPU time (with `OPENBLAS_NUM_THREADS=1` on a loaded machine); the default is wall time.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import time
from unittest import mock

import numpy as np

import eager as ek
from benchmarks.bench_tracing import mlp_train_step
from benchmarks.mlp_function_parts import measure
from benchmarks.workloads import mlp_data, mlp_step_numpy
from graph_runtime.fusion import kernel as fusion_kernel, numpy_backend
from graph_runtime.passes import bias_relu, relu_bias_grad


@contextlib.contextmanager
def _no_full_constants():
    # straight-line fused kernels call maximum against the rank-0 zero again (invariant_rows.py)
    with mock.patch.object(numpy_backend, "full_constants", lambda *a, **k: {}):
        yield


def _pass_off(module):
    """A lever: the pass `module` (relu_bias_grad, bias_relu) switched off."""
    @contextlib.contextmanager
    def off():
        old = module.set_enabled(False)
        try:
            yield
        finally:
            module.set_enabled(old)
    return off


# relu_bias_grad: ReluGrad and the bias's SumToLike stay two ops; bias_relu: the bias add and relu stay a fused
# elementwise kernel
LEVERS = {"full_constants": _no_full_constants, "relu_bias_grad": _pass_off(relu_bias_grad),
          "bias_relu": _pass_off(bias_relu)}


def traced(params, x, y, off=None):
    """The @function step on fresh variables, traced and compiled by one call (with lever `off` turned off)."""
    fusion_kernel._SHARED.clear()
    with off() if off else contextlib.nullcontext():
        step = mlp_train_step([ek.Variable(p.copy()) for p in params], ek.optimizers.SGD(0.1))
        xt, yt = ek.constant(x), ek.constant(y)
        step(xt, yt)
    fusion_kernel._SHARED.clear()
    return lambda: step(xt, yt)


def _quartiles(ratios) -> str:
    q1, q3 = np.percentile(ratios, [25, 75])
    return f"{statistics.median(ratios):.3f} ({q1:.3f}-{q3:.3f})"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lever", default="all", help=f"one of {sorted(LEVERS)} or 'all' (all off against all on)")
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--cpu", action="store_true", help="the main thread's CPU time instead of wall time")
    args = ap.parse_args(argv)
    x, y, params = mlp_data()
    if args.lever == "all":
        def off():
            stack = contextlib.ExitStack()
            for lever in LEVERS.values():
                stack.enter_context(lever())
            return stack
    else:
        off = LEVERS[args.lever]
    numpy_params = [p.copy() for p in params]
    fns = {"numpy": lambda: mlp_step_numpy(numpy_params, x, y), "A": traced(params, x, y, off),
           "B": traced(params, x, y)}
    clock = time.thread_time if args.cpu else time.perf_counter
    times = measure(fns, args.rounds, clock, 20)
    print(f"MLP 784-256-10 b64 @function, lever {args.lever}: A off, B on; {args.rounds} rounds, "
          f"{'thread CPU' if args.cpu else 'wall'} time, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| way | median per step | per-round ratio to numpy, median (25th-75th) |")
    print("|---|---|---|")
    for k, ts in times.items():
        print(f"| {k} | {statistics.median(ts) * 1e6:.1f} us | {_quartiles([a / b for a, b in zip(ts, times['numpy'])])} |")
    print(f"B / A per round: {_quartiles([b / a for a, b in zip(times['A'], times['B'])])}")


if __name__ == "__main__":
    main()
