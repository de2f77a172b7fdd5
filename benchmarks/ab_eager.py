"""A/B of this tree's `eager` against another revision's, in one process: eager training steps.

Python-level changes to the eager path move the step by a few percent, less than the spread between two
processes on a shared machine; only a paired comparison in one process shows them.  This script copies the
`eager` package of `--rev` (a git revision of this repository) into a temporary directory as `eager_old`,
builds the same step on both packages, and times the two steps and the hand-written NumPy step in rounds,
the order rotated every round (whichever step runs right after another pays for its cache footprint).
Printed per workload: median times, the median of the per-round ratios new/old with its 10th-90th
percentiles, and both steps' median ratio to NumPy.  Run it against the same revision as this tree first
(an A/A run): its new/old is the bias of the method.

Workloads: `toy` (the MLP step at 2-4-4-3, batch 4: nothing but overhead), `mlp` (784-256-10, batch 64, as
`bench_summary`'s eager row), `cnn` (the CNN step of cnn_workload.py).

Run: `python -m benchmarks.ab_eager --rev main [--only toy,mlp,cnn] [--rounds N] [--cpu] [--phases]`.  `--cpu`
times CPU time (use it with `OPENBLAS_NUM_THREADS=1` on a loaded machine); the default is wall time.
`--phases` then times the MLP steps again split into the forward pass (through the loss), the gradients and
the updates, NumPy's step at the same points: where the eager step's extra time is.
"""
from __future__ import annotations

import argparse
import importlib
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

import eager
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.harness import rounds_arg
from benchmarks.workloads import mlp_data, mlp_step_numpy


def import_old(rev: str, where: str):
    """The `eager` package of git revision `rev`, imported as `eager_old` from a copy under `where`."""
    tar = subprocess.run(["git", "archive", rev, "eager"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(where, filter="data")
    os.rename(os.path.join(where, "eager"), os.path.join(where, "eager_old"))
    sys.path.insert(0, where)
    return importlib.import_module("eager_old")


def toy_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((4, 2)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 4)]
    params = [rng.standard_normal((2, 4)).astype(np.float32), np.zeros(4, np.float32),
              rng.standard_normal((4, 3)).astype(np.float32), np.zeros(3, np.float32)]
    return x, y, params


def mlp_step(ek, params, xb, yb):
    """`bench_eager.eager_mlp_step` on package `ek`: tape, gradients, SGD."""
    w1, b1, w2, b2 = vs = [ek.Variable(p.copy()) for p in params]
    opt = ek.optimizers.SGD(0.1)
    x, y = ek.constant(xb), ek.constant(yb)

    def step(marks=None):
        """`marks` (a `Marks`): the clock's reading after the forward pass and after the gradients."""
        with ek.GradientTape() as tape:
            h = ek.nn.relu(ek.matmul(x, w1) + b1)
            logits = ek.matmul(h, w2) + b2
            loss = ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        if marks is not None:
            marks.append(marks.clock())
        grads = tape.gradient(loss, vs)
        if marks is not None:
            marks.append(marks.clock())
        opt.apply_gradients(zip(grads, vs))
        return loss
    return step


class Marks(list):
    """Clock readings a step appends at its phase boundaries (`mlp_step`, `workloads.mlp_step_numpy`)."""

    def __init__(self, clock):
        super().__init__()
        self.clock = clock


def workload(name, old):
    """{"numpy": fn, "old": fn, "new": fn} for one workload."""
    if name == "cnn":
        x, filters = cnn_data()
        npf = [f.copy() for f in filters]
        fns = {"numpy": lambda: cnn_step_numpy(npf, x)}
        for key, ek in (("old", old), ("new", eager)):
            step, xt = make_cnn_step(ek, [ek.Variable(f.copy()) for f in filters]), ek.constant(x)
            fns[key] = (lambda step=step, xt=xt: step(xt))
        return fns
    xb, yb, params = toy_data() if name == "toy" else mlp_data()
    npp = [p.copy() for p in params]
    return {"numpy": lambda marks=None: mlp_step_numpy(npp, xb, yb, marks=marks),
            "old": mlp_step(old, params, xb, yb), "new": mlp_step(eager, params, xb, yb)}


def run(fns, rounds, clock, min_time=0.02):
    names = list(fns)
    for fn in fns.values():
        fn(), fn()
    t0 = clock()
    fns["new"]()
    number = max(1, int(min_time / max(clock() - t0, 1e-6)))
    times = {n: [] for n in names}
    for r in range(rounds):
        for n in names[r % 3:] + names[:r % 3]:
            fn = fns[n]
            t0 = clock()
            for _ in range(number):
                fn()
            times[n].append((clock() - t0) / number)
    return times, number


PHASES = ("forward", "gradient", "update")


def run_phases(fns, rounds, clock, number):
    """{step: {phase: [seconds per round]}}: each round times `number` steps of each, the order rotated, every
    step split at its phase boundaries (the forward pass through the loss, the gradients, the updates)."""
    names = list(fns)
    for fn in fns.values():
        fn(), fn()
    times = {n: {p: [] for p in PHASES} for n in names}
    for r in range(rounds):
        for n in names[r % 3:] + names[:r % 3]:
            fn, sums = fns[n], [0.0, 0.0, 0.0]
            for _ in range(number):
                marks = Marks(clock)
                marks.append(clock())
                fn(marks)
                marks.append(clock())
                for i in range(3):
                    sums[i] += marks[i + 1] - marks[i]
            for p, s in zip(PHASES, sums):
                times[n][p].append(s / number)
    return times


def report_phases(name, times, rounds, number):
    med = statistics.median
    print(f"{name}: per phase, us (median of {rounds} rounds x {number}); new/old: median of per-round ratios")
    for p in PHASES:
        m = {k: med(times[k][p]) * 1e6 for k in times}
        pair = med([a / b for a, b in zip(times["new"][p], times["old"][p])])
        print(f"  {p:8s} numpy {m['numpy']:8.1f}  old {m['old']:8.1f}  new {m['new']:8.1f}  new/old {pair:.3f}  "
              f"new - numpy {m['new'] - m['numpy']:7.1f}")


def report(name, times, rounds, number):
    med = statistics.median
    pair = [a / b for a, b in zip(times["new"], times["old"])]
    dec = statistics.quantiles(pair, n=10)
    to_np = {k: med([a / b for a, b in zip(times[k], times["numpy"])]) for k in ("old", "new")}
    print(f"{name:4s} old {med(times['old']) * 1e6:9.1f} us  new {med(times['new']) * 1e6:9.1f} us  "
          f"numpy {med(times['numpy']) * 1e6:9.1f} us | new/old {med(pair):.3f} (p10 {dec[0]:.3f}, "
          f"p90 {dec[-1]:.3f}) | to NumPy: old {to_np['old']:.2f}x, new {to_np['new']:.2f}x "
          f"({rounds} rounds x {number})")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rev", required=True, help="git revision whose eager package is 'old'")
    p.add_argument("--only", default="toy,mlp,cnn")
    p.add_argument("--rounds", type=rounds_arg, default=60)
    p.add_argument("--cpu", action="store_true", help="CPU time (time.process_time) instead of wall time")
    p.add_argument("--phases", action="store_true",
                   help="MLP workloads: time the forward pass, the gradients and the updates apart (NumPy's too)")
    args = p.parse_args(argv)
    clock = time.process_time if args.cpu else time.perf_counter
    with tempfile.TemporaryDirectory() as where:
        old = import_old(args.rev, where)
        print(f"new: this tree's eager; old: {args.rev}'s.  clock: {'CPU' if args.cpu else 'wall'}; "
              f"load average {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
        for name in args.only.split(","):
            rounds = args.rounds if name != "cnn" else max(10, args.rounds // 4)
            times, number = run(workload(name, old), rounds, clock)
            report(name, times, rounds, number)
            if args.phases and name != "cnn":
                report_phases(name, run_phases(workload(name, old), rounds, clock, number), rounds, number)


if __name__ == "__main__":
    main()
