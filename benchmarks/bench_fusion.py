"""Elementwise fusion figures: fused vs unfused vs hand-written NumPy, and peak memory.

Workloads (ratios against hand-written NumPy measured in the same run):

- `chain50` (benchmarks/workloads.py) on 4x4 float32 under `@function`:
  unfused, fused (cost model: numexpr when installed), fused NumPy-only
  (straight-line `out=` kernel).  Target <= 0.5x.
- `(tanh(2x+1)(2x+1) - x)^2 + 3` on 2M float32 under `@function`: unfused,
  fused (chunked, threads autotuned), fused single-thread.  Target <= 0.6x.
- MLP 784-256-10 training step (benchmarks/bench_tracing.py) and a tanh RNN
  (shapes of benchmarks/bench_control_flow.py, 100 steps unrolled by a Python
  loop under `@function`, forward + tape gradients): fused vs unfused, both
  against NumPy (no slower with fusion).
- Peak memory, each in a fresh subprocess: a 20-op chain and the expression
  above on 8M float32 (32 MB per array).  Reported: tracemalloc peak during one
  call (NumPy reports its buffers to tracemalloc) and the growth of peak RSS,
  in MB and in units of one array.
- First call (trace + optimize + fuse + compile) of a residual chain
  `y = tanh(y) * 0.5 + y` (every value used twice) of 1,000 and 4,000 ops on
  4x4 float32, fused with the default options (numexpr when installed), each
  in a fresh subprocess: wall time and tracemalloc peak (peak RSS says
  nothing here: importing the library peaks higher), and the 4,000/1,000
  ratios (linear growth: ~4x; when each use was written out, the numexpr text doubled per step,
  40 steps took 325 MB and 50 raised MemoryError).

Timings are interleaved with the NumPy baseline (`bench_optimizer.paired`:
fastest of several alternating batches), so a busy machine skews both alike.

Run: `python -m benchmarks.bench_fusion` (add `--quick` for fewer repeats).
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import eager as ek

from benchmarks.harness import Row, paired, table
from benchmarks.workloads import BIG, chain50, chain50_numpy, expr, mlp_data, mlp_step_numpy, rnn_data, rnn_numpy_grad
from benchmarks.workloads import RNN_BATCH as BATCH, RNN_HIDDEN as HIDDEN, RNN_INPUTS as INPUTS, RNN_STEPS
from graph_runtime import fusion
from graph_runtime.fusion.kernel import PROMOTE_AFTER
from tracing import function

MEM_N = 8_000_000
MEM_CHAIN = 20


def chain_n(ops, x, n=MEM_CHAIN):
    y = x
    for i in range(n // 2):
        y = ops.sin(y) * 1.01 if i % 2 else ops.tanh(y) + 0.5
    return y


def _compiled(fn, args, **opts):
    f = function(fn)
    with fusion.options(**opts):
        f(*args)                   # trace + optimize + compile now, under these options
    return f


# ------------------------------------------------------------------ RNN (unrolled)


def rnn_step(xs, wx, wh, b):
    with ek.GradientTape() as tape:
        tape.watch([wx, wh, b])
        h = ek.zeros((BATCH, HIDDEN))
        for t in range(RNN_STEPS):
            h = ek.tanh(ek.matmul(xs[t], wx) + ek.matmul(h, wh) + b)
        loss = ek.reduce_sum(h)
    return tape.gradient(loss, [wx, wh, b])


# ------------------------------------------------------------------ peak memory (subprocess)
def _memory_child(mode: str, workload: str) -> dict:
    import resource
    import tracemalloc
    x_np = np.random.default_rng(0).standard_normal(MEM_N).astype(np.float32)
    fn = (lambda ops, x: chain_n(ops, x)) if workload == "chain" else expr
    if mode == "numpy":
        run = lambda: fn(np, x_np)  # noqa: E731
    else:
        x = ek.constant(x_np)
        small = ek.constant(x_np[:1024])
        opts = {"enabled": mode != "unfused", "threads": 1}
        f = function(lambda t: fn(ek, t))
        with fusion.options(**opts):
            f(small)                # warm up the library code paths on a small input (another trace)
        f2 = function(lambda t: fn(ek, t))
        with fusion.options(**opts):
            f2.get_concrete_function(x)
        run = lambda: f2(x)  # noqa: E731
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    res = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    del res
    return {"tracemalloc_mb": peak / 2**20, "rss_growth_mb": (rss1 - rss0) / 1024}


def memory_rows() -> list:
    rows = []
    array_mb = MEM_N * 4 / 2**20
    for workload, label in (("chain", f"{MEM_CHAIN}-op chain"), ("expr", "(tanh(2x+1)(2x+1)-x)^2+3")):
        for mode in ("numpy", "unfused", "fused"):
            out = subprocess.run([sys.executable, "-m", "benchmarks.bench_fusion", "--memory-child", mode, workload],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((label, mode, r["tracemalloc_mb"], r["tracemalloc_mb"] / array_mb, r["rss_growth_mb"]))
    return rows


def memory_table(rows) -> str:
    lines = [f"| workload (8M f32, {MEM_N * 4 / 2**20:.1f} MB/array) | variant | tracemalloc peak | arrays | "
             f"peak RSS growth |", "|---|---|---|---|---|"]
    for label, mode, mb, arrays, rss in rows:
        lines.append(f"| {label} | {mode} | {mb:7.1f} MB | {arrays:4.2f} | {rss:7.1f} MB |")
    return "\n".join(lines)


# ------------------------------------------------------------------ first call of a long residual chain
REUSE_SIZES = (1000, 4000)


def residual_chain(y, n_ops):
    for _ in range(n_ops // 3):
        y = ek.tanh(y) * 0.5 + y
    return y


def _first_call_child(n_ops: int) -> dict:
    import time
    import tracemalloc
    x = ek.constant(np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4))

    def small(t):
        return ek.tanh(t) * 0.5 + t

    def chain(t):
        return residual_chain(t, n_ops)
    function(small)(x)          # warm up the library code paths (imports, caches)
    f = function(chain)
    tracemalloc.start()
    t0 = time.perf_counter()
    f(x)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    kernels = [s.kernel for s in f.get_concrete_function(x)._plan.steps if s.op.type == "FusedElementwise"]
    return {"seconds": seconds, "tracemalloc_mb": peak / 2**20,
            "kernels": [f"{k.strategy}" + (f" ({k.stages} stages)" if hasattr(k, "stages") else "")
                        for k in kernels]}


def first_call_rows() -> list:
    rows = []
    for n in REUSE_SIZES:
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_fusion", "--first-call-child", str(n)],
                             capture_output=True, text=True, check=True)
        rows.append((n, json.loads(out.stdout.strip().splitlines()[-1])))
    return rows


def first_call_table(rows) -> str:
    lines = ["| residual chain `y = tanh(y)*0.5 + y`, 4x4 f32, fused | first call | per op | tracemalloc peak | "
             "kernel |", "|---|---|---|---|---|"]
    for n, r in rows:
        lines.append(f"| {n} ops | {r['seconds']:6.2f} s | {r['seconds'] / n * 1e3:5.2f} ms | "
                     f"{r['tracemalloc_mb']:6.1f} MB | {', '.join(r['kernels'])} |")
    (n0, a), (n1, b) = rows[0], rows[-1]
    lines.append(f"| ratio {n1}/{n0} ops ({n1 / n0:.0f}x) | {b['seconds'] / a['seconds']:.2f}x | | "
                 f"{b['tracemalloc_mb'] / a['tracemalloc_mb']:.2f}x | |")
    return "\n".join(lines)


# ------------------------------------------------------------------ timing rows
def _row(workload, variant, fn, baseline, rounds, note="") -> Row:
    t, b = paired(fn, baseline, rounds=rounds)
    return Row(workload, variant, t, b, note)


def rows(quick: bool = False) -> list:
    rounds = 5 if quick else 11
    out = []
    x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    x = ek.constant(x_np)
    for label, opts in (("@function, unfused", {"enabled": False}),
                        ("@function, fused", {}),
                        ("@function, fused numpy-only", {"numexpr": False})):
        f = _compiled(lambda t: chain50(ek, t), (x,), **opts)
        out.append(_row("50-op chain, 4x4 f32", label, lambda: f(x), lambda: chain50_numpy(x_np), rounds))

    xb_np = np.random.default_rng(0).standard_normal(BIG).astype(np.float32)
    xb = ek.constant(xb_np)
    for label, opts in (("@function, unfused", {"enabled": False}),
                        ("@function, fused", {}),
                        ("@function, fused 1 thread", {"threads": 1})):
        f = _compiled(lambda t: expr(ek, t), (xb,), **opts)
        for _ in range(PROMOTE_AFTER + 4):      # past the fused kernel's promotion to compiled loops
            f(xb)
        r = _row("(tanh(2x+1)(2x+1)-x)^2+3, 2M f32", label, lambda: f(xb), lambda: expr(np, xb_np), rounds)
        k = [s.kernel for s in f.get_concrete_function(xb)._plan.steps if s.op.type == "FusedElementwise"]
        if k and getattr(k[0], "chosen_label", None):
            r.note = f"autotuned: {k[0].chosen_label}"
        out.append(r)

    from benchmarks.bench_tracing import mlp_train_step
    xm, ym, params = mlp_data()
    np_params = [p.copy() for p in params]     # the baseline updates its arrays in place
    xt, yt = ek.constant(xm), ek.constant(ym)
    for label, opts in (("@function, unfused", {"enabled": False}), ("@function, fused", {})):
        variables = [ek.Variable(p) for p in params]
        step = mlp_train_step(variables, ek.optimizers.SGD(0.1))
        with fusion.options(**opts):
            step(xt, yt)
        out.append(_row("MLP 784-256-10 step, batch 64", label, lambda: step(xt, yt),
                        lambda: mlp_step_numpy(np_params, xm, ym), rounds))

    xs, wx, wh, b = rnn_data()
    args = [ek.constant(v) for v in (xs, wx, wh, b)]
    want = rnn_numpy_grad(xs, wx, wh, b)
    for label, opts in (("@function, unfused", {"enabled": False}), ("@function, fused", {})):
        f = _compiled(rnn_step, args, **opts)
        for got, w in zip(f(*args), want):
            assert np.allclose(got.numpy(), w, rtol=1e-3, atol=1e-3)
        out.append(_row(f"tanh RNN {RNN_STEPS} steps unrolled, fwd+grad", label, lambda: f(*args),
                        lambda: rnn_numpy_grad(xs, wx, wh, b), rounds))
    return out


def main(argv) -> None:
    if len(argv) >= 4 and argv[1] == "--memory-child":
        print(json.dumps(_memory_child(argv[2], argv[3])))
        return
    if len(argv) >= 3 and argv[1] == "--first-call-child":
        print(json.dumps(_first_call_child(int(argv[2]))))
        return
    quick = "--quick" in argv
    print(table(rows(quick)))
    print()
    print(memory_table(memory_rows()))
    print()
    print(first_call_table(first_call_rows()))


if __name__ == "__main__":
    main(sys.argv)
