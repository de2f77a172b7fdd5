"""The headline rows in one table: CNN, MLP and RNN steps, the 2M-element and the 50-op chain.

Each row times graphjit and its hand-written NumPy baseline in alternating
batches (`interleaved`): every round gives one ratio, the table shows the
median ratio and the spread of the rounds (min-max), so a noisy machine shows
as a wide spread instead of a wrong figure.  Baselines are the fastest plain
NumPy of each workload (benchmarks/workloads.py, cnn_workload.py).

- CNN step: batch 64 of 28x28x1, two 3x3 convolutions, max-pool, SGD
  (cnn_workload.py), eager and `@function`.
- MLP step: 784-256-10, batch 64, softmax cross-entropy, SGD, eager and
  `@function`.
- RNN: tanh RNN, 100 steps, hidden 64, batch 16 (bench_control_flow.py):
  forward, and forward + gradients (While + WhileGrad), in a Session.
- `(tanh(2x+1)(2x+1)-x)^2+3` on 2M float32 and the 50-op chain on 4x4,
  `@function`.

Each group of rows (cnn, mlp, rnn, chains) runs in a fresh Python process of its own: in one process, a
NumPy baseline's speed depended on what had run before it (the 2M chain's baseline took 11-16 ms a call in
some processes and 18-24 ms in others while graphjit's time stayed 3.8 ms; the CNN eager and RNN gradient
baselines moved too), so one group's figures depended on the groups before it.  `--same-process` runs them
all in this process as before (to reproduce older figures).

First printed: the BLAS thread count, whether big convolution GEMMs run in parts on the cores (threadpoolctl,
`GRAPHJIT_BLAS_SPLIT`) and the load average, which the ratios depend on.

Also printed: the `eager.parallel` threshold table (a memory-bound kernel, the
2x2 max-pool gradient, split over the cores against serial, by size).

Run: `python -m benchmarks.bench_summary [--quick] [--rounds N] [--cpu] [--only cnn,mlp,rnn,chains,threshold]
[--same-process]`.
`--cpu` times CPU time (`time.process_time`, all threads) instead of wall
time: on a machine other work keeps busy, wall time mostly measures waiting
for a core (use it with `OPENBLAS_NUM_THREADS=1`; it cannot show what a
second core gains).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import eager as ek
from eager import blas_threads as ek_blas
from eager import own_cores as ek_own_cores
from eager import parallel as ek_parallel
import graph_runtime as gr
from benchmarks.harness import calls_per_batch
from benchmarks.bench_cnn import blas_threads as blas_threads_now
from benchmarks.bench_control_flow import rnn_data, rnn_graph, rnn_numpy
from benchmarks.bench_eager import eager_mlp_step, mlp_model
from benchmarks.workloads import BIG, expr
from benchmarks.bench_tracing import mlp_train_step
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.workloads import chain50, chain50_numpy, mlp_data, mlp_step_numpy, rnn_numpy_grad
from tracing import function


CLOCK = [time.perf_counter]      # `--cpu`: time.process_time (CPU time of all threads: the work done)


def interleaved(candidate, baseline, rounds=15, min_time=0.02):
    """(median candidate s, median baseline s, median ratio, min ratio, max ratio, best ratio) over
    alternating batches; the best ratio is the fastest candidate batch over the fastest baseline batch.

    The order turns every round (baseline first, then candidate first): whichever batch runs right after
    the other's pays for it (OpenBLAS's worker still spinning after the other's GEMMs, caches full of the
    other's arrays), and a fixed order charged that to the candidate in every round."""
    clock = CLOCK[0]
    candidate(), baseline()
    number = calls_per_batch(baseline, min_time, clock)
    tc, tb, ratios = [], [], []
    for r in range(rounds):
        times = {}
        for fn in ((baseline, candidate) if r % 2 == 0 else (candidate, baseline)):
            t0 = clock()
            for _ in range(number):
                fn()
            times[fn] = (clock() - t0) / number
        tb.append(times[baseline])
        tc.append(times[candidate])
        ratios.append(times[candidate] / times[baseline])
    return (statistics.median(tc), statistics.median(tb), statistics.median(ratios), min(ratios), max(ratios),
            min(tc) / min(tb))


def _cnn():
    x, filters = cnn_data()
    xt = ek.constant(x)
    for variant, wrap in (("@function", function), ("eager", lambda s: s)):
        # Each row's baseline starts from the same filters as its graphjit model, so both train alike.
        np_filters = [f.copy() for f in filters]
        step = wrap(make_cnn_step(ek, [ek.Variable(f) for f in filters]))
        yield ("CNN step b64 28x28", variant, (lambda step=step: step(xt)),
               (lambda np_filters=np_filters: cnn_step_numpy(np_filters, x)))


def _mlp():
    xb, yb, params = mlp_data()
    xt, yt = ek.constant(xb), ek.constant(yb)
    # Each row's baseline starts from the same parameters as its graphjit model, so both train alike.
    np_fn = [p.copy() for p in params]
    step = mlp_train_step([ek.Variable(p) for p in params], ek.optimizers.SGD(0.1))
    yield "MLP 784-256-10 step b64", "@function", (lambda: step(xt, yt)), (lambda: mlp_step_numpy(np_fn, xb, yb))
    np_eager = [p.copy() for p in params]
    variables, loss_fn = mlp_model(params)
    opt = ek.optimizers.SGD(0.1)
    yield ("MLP 784-256-10 step b64", "eager", (lambda: eager_mlp_step(variables, loss_fn, opt, xt, yt)),
           (lambda: mlp_step_numpy(np_eager, xb, yb)))


def _rnn():
    xs, wx, wh, b = rnn_data()
    g, x, h, _ = rnn_graph(xs, wx, wh, b)
    sess = gr.Session(graph=g)
    run = sess.make_callable(h, feed_list=[x])
    assert np.allclose(run(xs), rnn_numpy(xs, wx, wh, b), atol=1e-5)
    yield "RNN 100 steps, forward", "While, Session", (lambda: run(xs)), (lambda: rnn_numpy(xs, wx, wh, b))
    gg, xg, _, grads = rnn_graph(xs, wx, wh, b, with_grads=True)
    sess2 = gr.Session(graph=gg)
    run2 = sess2.make_callable(grads, feed_list=[xg])
    for a, e in zip(run2(xs), rnn_numpy_grad(xs, wx, wh, b)):
        assert np.allclose(a, e, rtol=1e-3, atol=1e-3)
    yield ("RNN 100 steps, fwd + grads", "While+WhileGrad, Session", (lambda: run2(xs)),
           (lambda: rnn_numpy_grad(xs, wx, wh, b)))


def _chains():
    xb_np = np.random.default_rng(0).standard_normal(BIG).astype(np.float32)
    xb = ek.constant(xb_np)
    f = function(lambda t: expr(ek, t))
    for _ in range(40):        # past the fused kernel's promotion (8th call) and its variants' sampling
        f(xb)
    yield "(tanh(2x+1)(2x+1)-x)^2+3, 2M f32", "@function", (lambda: f(xb)), (lambda: expr(np, xb_np))
    tuned = [s.kernel for s in f.get_concrete_function(xb)._plan.steps if hasattr(s.kernel, "chooser")]
    if tuned:     # which variant ran decides this row: serial or split, NumPy or compiled arithmetic
        NOTES.append(f"2M chain kernel at the end: {tuned[0].chosen_label} ({tuned[0].chooser.switches} switches)")
    x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    x = ek.constant(x_np)
    c = function(lambda t: chain50(ek, t))
    yield "50-op chain, 4x4 f32", "@function", (lambda: c(x)), (lambda: chain50_numpy(x_np))


NOTES: list = []

GROUPS = {"cnn": _cnn, "mlp": _mlp, "rnn": _rnn, "chains": _chains}


def rows(rounds=15, only=None):
    out = []
    for name, make in GROUPS.items():
        if only and name not in only:
            continue
        for workload, variant, cand, base in make():
            out.append((workload, variant) + interleaved(cand, base, rounds))
    return out


ROWS_OF = "--rows-of"     # a child process's mode: the rows of one group, as one line of JSON


def rows_in_fresh_processes(rounds=15, only=None, cpu=False) -> list:
    """`rows(rounds, only)`, each group timed in a fresh Python process (module docstring); its notes are added
    to NOTES.  A group that fails raises RuntimeError with the child's error output."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = []
    for name in GROUPS:
        if only and name not in only:
            continue
        argv = [sys.executable, "-m", "benchmarks.bench_summary", ROWS_OF, name, "--rounds", str(rounds)]
        proc = subprocess.run(argv + (["--cpu"] if cpu else []), cwd=root, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"bench_summary: the {name} rows failed in their process (exit status "
                               f"{proc.returncode}):\n{proc.stderr.strip()[-3000:]}")
        found = json.loads(proc.stdout.strip().splitlines()[-1])      # numbers and labels only
        out.extend(tuple(row) for row in found["rows"])
        NOTES.extend(found["notes"])
    return out


def fmt(rows_) -> str:
    lines = ["| workload | variant | graphjit | NumPy | ratio (median) | rounds min-max | best/best |",
             "|---|---|---|---|---|---|---|"]
    for w, v, tc, tb, r, lo, hi, best in rows_:
        lines.append(f"| {w} | {v} | {tc * 1e3:.3f} ms | {tb * 1e3:.3f} ms | {r:.2f}x | {lo:.2f}-{hi:.2f} | "
                     f"{best:.2f}x |")
    return "\n".join(lines)


def threshold_rows(rounds=9):
    """A 2x2/2 max-pool gradient (memory-bound) serial vs split over the cores, by input size."""
    from eager import parallel
    from eager.dispatch import execute
    from eager.ops import nn_pool
    attrs = {"ksize": (2, 2), "strides": (2, 2), "padding": "VALID"}
    out = []
    for batch in (1, 2, 4, 8, 16, 64):
        x = np.random.default_rng(0).standard_normal((batch, 28, 28, 16)).astype(np.float32)
        y = execute(nn_pool.MAX_POOL, (ek.constant(x),), attrs).numpy()
        dy = np.ones_like(y)
        saved = parallel.MIN_BYTES

        def run():
            old = parallel.set_threads(parallel.cores())
            try:
                return nn_pool._max_pool_grad_kernel(x, y, dy, **attrs)
            finally:
                parallel.set_threads(old)

        def serial():
            old = parallel.set_threads(1)
            try:
                return run()
            finally:
                parallel.set_threads(old)
        parallel.MIN_BYTES = 0
        try:
            tc, tb, r, lo, hi, _ = interleaved(run, serial, rounds)
        finally:
            parallel.MIN_BYTES = saved
        out.append((x.nbytes, tc, tb, r, lo, hi))
    return out


def main(argv) -> int:
    rounds = 5 if "--quick" in argv else int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 15
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else None
    if "--cpu" in argv:
        CLOCK[0] = time.process_time
    if ROWS_OF in argv:
        found = rows(rounds, [argv[argv.index(ROWS_OF) + 1]])
        print(json.dumps({"rows": found, "notes": NOTES}))
        return 0
    owned = ek_own_cores.enabled() and ek_blas.known()
    print(f"BLAS: {blas_threads_now()}; big convolution GEMMs in parts on the cores: "
          f"{'on' if (ek_blas.count() == 1 or owned) and ek_parallel.cores() > 1 else 'off'} (only where BLAS runs "
          f"on one thread; GRAPHJIT_BLAS_SPLIT=0 turns it off); compiled steps with convolutions own the cores "
          f"(GRAPHJIT_OWN_CORES): {'on' if ek_own_cores.enabled() else 'off'}; "
          f"load average {os.getloadavg()[0]:.2f}\n")
    same = "--same-process" in argv
    print(f"Each group of rows in {'this process' if same else 'a fresh process of its own'}.\n")
    print(fmt(rows(rounds, only) if same else rows_in_fresh_processes(rounds, only, "--cpu" in argv)))
    for note in NOTES:
        print(note)
    if not only or "threshold" in only:
        print("\neager.parallel threshold: a 2x2 max-pool gradient split over the cores vs serial, by input size")
        print("| input bytes | split | serial | ratio | min-max |\n|---|---|---|---|---|")
        for nbytes, tc, tb, r, lo, hi in threshold_rows():
            print(f"| {nbytes} | {tc * 1e6:.1f} us | {tb * 1e6:.1f} us | {r:.2f}x | {lo:.2f}-{hi:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
