"""Where the MLP `@function` step's time goes beyond NumPy's: the same step with graphjit's layers taken off.

Four ways to run one SGD step of the 784-256-10 MLP (batch 64, as `bench_summary`'s `@function` row), timed
in one process in rounds, the order shuffled every round, each way on its own parameters (every way takes the
same number of steps from the same start: the step's speed depends on how far training has gone):

- `numpy`: the hand-written step (`workloads.mlp_step_numpy`), the baseline;
- `function`: the `@function` step called with tensors, as the benchmark calls it;
- `plan`: that trace's generated plan called on the arrays (no `Function.__call__`, no tensors);
- `kernels`: the plan's own kernels in the plan's order on plain arrays: no variables (reads, locks, in-place
  checks), no NumPy error state, the SGD update through `eager.native.sgd_update` directly;
- `gemms`: the step's five matrix products alone (`x @ w1`, `h @ w2`, `e @ w2.T`, `h.T @ e`, `x.T @ dh`, the
  plan's operand orientations), nothing else: the floor of any step that keeps NumPy's BLAS calls, and so
  their bits.

`function` - `plan` is the call path; `plan` - `kernels` is what variables and the plan's wrapping cost;
`kernels` against `numpy` compares the work itself; `gemms` against `numpy` is the lowest ratio a bitwise step
can reach on one core (with OpenBLAS's threads, the products' share of the step's wall time).  `kernels` follows the plan's steps by position and
stops with a message if the plan's ops are not the ones it expects (update it after a change to the plan).

Run: `python -m benchmarks.mlp_function_parts [--rounds N] [--cpu] [--toy]`.  `--cpu` times the main
thread's CPU time (with `OPENBLAS_NUM_THREADS=1` on a loaded machine); `--toy` runs the 2-4-4-3 MLP
(batch 2: nothing but overhead; `kernels` and `gemms` are left out there, the small plan has other steps).
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import eager as ek
from eager import native
from benchmarks.bench_tracing import mlp_train_step
from benchmarks.workloads import mlp_data, mlp_step_numpy

# the op types the `kernels` replica expects at each step of the full-size plan
PLAN_OPS = ("ReadVariableOp", "MatMul", "ReadVariableOp", "BiasRelu", "ReadVariableOp", "MatMul", "ReadVariableOp",
            "AddV2", "SoftmaxCrossEntropyWithLogits", "Mul", "SumToLike", "MatMul", "ReluGradBiasGrad", "MatMul",
            "ReadVariableOp", "FusedElementwise", "MatMul", "InplaceApplyGradientDescent", "AssignSubVariableOp",
            "AssignSubVariableOp", "AssignSubVariableOp", "AssignAddVariableOp", "Mean")


def toy_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1]]
    params = [rng.standard_normal((4, 4)).astype(np.float32), np.zeros(4, np.float32),
              rng.standard_normal((4, 3)).astype(np.float32), np.zeros(3, np.float32)]
    return x, y, params


def traced_step(params, x, y):
    """(the @function step on fresh variables, its plan), traced by one call."""
    step = mlp_train_step([ek.Variable(p) for p in params], ek.optimizers.SGD(0.1))
    xt, yt = ek.constant(x), ek.constant(y)
    step(xt, yt)
    return step, step.get_concrete_function(xt, yt)._plan


def kernels_step(params, x, y):
    """The plan's kernels in its order on plain arrays (see the module docstring)."""
    _, plan = traced_step(params, x, y)
    ops = tuple(s.op.type for s in plan.steps)
    if ops != PLAN_OPS:
        raise SystemExit(f"mlp_function_parts: the plan's steps changed, update `kernels_step`:\n{ops}")
    k = [s.fn for s in plan.steps]
    scale = plan.consts[plan.steps[9].inputs[1]]          # 1/batch, folded by the arithmetic rules
    w1, b1, w2, b2 = [p.copy() for p in params]
    lr, iteration = np.array(0.1, np.float32), np.zeros((), np.int64)
    native.available()

    def step():
        h = k[3](x @ w1, b1)                              # bias + relu (BiasRelu)
        loss, dlogits = k[8](y, k[7](h @ w2, b2))
        dlogits = k[9](dlogits, scale)
        db2 = k[10](dlogits, b2)
        dh, db1 = k[12](dlogits @ w2.T, h)                # ReluGradBiasGrad
        dw2 = h.T @ dlogits
        alpha, *products = k[15](lr, db1, dw2, db2)       # lr and lr * (db1, dw2, db2)
        dw1 = x.T @ dh
        native.sgd_update(w1, dw1, alpha) if native.use(3 * dw1.nbytes) else np.subtract(w1, dw1 * alpha, out=w1)
        for p in products:
            target = next(t for t in (b1, w2, b2) if t.shape == p.shape)
            np.subtract(target, p, out=target)
        np.add(iteration, 1, out=iteration)
        return k[22](loss)
    return step


def gemms_step(params, x, y):
    """The step's five products on arrays of the step's values (one forward and backward by hand), nothing else."""
    w1, b1, w2, b2 = params
    h = np.maximum(x @ w1 + b1, 0)
    logits = h @ w2 + b2
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    e = (e / e.sum(axis=1, keepdims=True) - y) / np.float32(x.shape[0])
    dh = (e @ w2.T) * (h > 0)

    def step():
        x @ w1
        h @ w2
        e @ w2.T
        h.T @ e
        return x.T @ dh
    return step


def variants(toy: bool) -> dict:
    x, y, params = toy_data() if toy else mlp_data()
    xt, yt = ek.constant(x), ek.constant(y)
    numpy_params = [p.copy() for p in params]
    function_step, _ = traced_step(params, x, y)
    _, plan = traced_step(params, x, y)
    out = {"numpy": lambda: mlp_step_numpy(numpy_params, x, y), "function": lambda: function_step(xt, yt),
           "plan": lambda: plan.fn(x, y)}
    if not toy:
        out["kernels"] = kernels_step(params, x, y)
        out["gemms"] = gemms_step(params, x, y)
    return out


def measure(fns: dict, rounds: int, clock, calls: int) -> dict:
    """Per way: the batch times (s per call), in rounds of `calls` calls each, the order shuffled every round
    (a rotation keeps each way behind the same neighbour, and the way right after `numpy` reads slower)."""
    names = list(fns)
    for f in fns.values():
        for _ in range(30):
            f()
    times: dict = {k: [] for k in names}
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for k in rng.permutation(names):
            f = fns[k]
            t0 = clock()
            for _ in range(calls):
                f()
            times[k].append((clock() - t0) / calls)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--cpu", action="store_true", help="the main thread's CPU time instead of wall time")
    ap.add_argument("--toy", action="store_true", help="the 2-4-4-3 MLP: overhead only")
    args = ap.parse_args(argv)
    clock = time.thread_time if args.cpu else time.perf_counter
    fns = variants(args.toy)
    times = measure(fns, args.rounds, clock, 200 if args.toy else 20)
    print(f"MLP {'2-4-4-3 b2' if args.toy else '784-256-10 b64'}, {args.rounds} rounds, "
          f"{'thread CPU' if args.cpu else 'wall'} time, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '-')}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| way | median per step | per-round ratio to numpy, median (25th-75th) |")
    print("|---|---|---|")
    for k, ts in times.items():
        ratios = [a / b for a, b in zip(ts, times["numpy"])]
        q1, q3 = np.percentile(ratios, [25, 75])
        print(f"| {k} | {statistics.median(ts) * 1e6:.1f} us | {statistics.median(ratios):.3f} ({q1:.3f}-{q3:.3f}) |")
    for a, b in (("function", "plan"), ("plan", "kernels")):
        if b in times:      # the layers' own cost, paired per round
            ratios = [p / q for p, q in zip(times[a], times[b])]
            q1, q3 = np.percentile(ratios, [25, 75])
            print(f"{a} / {b} per round: {statistics.median(ratios):.3f} ({q1:.3f}-{q3:.3f})")


if __name__ == "__main__":
    main()
