"""The headline rows' absolute times (CNN, MLP, RNN steps, the 2M-element and 50-op chains), each way in a Python process of its own, with glibc's default
allocator settings and with its trim and mmap thresholds raised.

Why: in `bench_summary` each ratio divides by a NumPy step in the same process, and that NumPy step allocates
large temporaries (im2col columns of up to 7 MB, masks, gradients) every call.  With glibc's default
settings, memory freed at the top of the heap above the trim threshold goes back to the kernel, and
allocations above the (dynamic) mmap threshold get fresh pages, so the step pays page faults on every
call: measured here, the NumPy CNN step took 34-38 ms a call with the defaults and 15.5-16 ms with
`MALLOC_TRIM_THRESHOLD_` and `MALLOC_MMAP_THRESHOLD_` raised to 256 MiB, the same code and bits.
graphjit reuses its buffers, so it gains much less.  A ratio to a baseline that spends half its time in
page faults says little about a peer that has its own allocator (TensorFlow does): this script times each
way alone, in absolute milliseconds, so the peers compare directly.

Ways: `numpy` (the hand-written steps every ratio divides by), `graphjit` (bench_summary's `@function` steps;
the RNN's is its Session over the While graph) and the peers with `--tf-python` / `--jax-python`: `tf`
(`tf.function`) and `jax` (`jax.jit`), written in benchmarks/peer_steps.py.  Each
runs in `--rounds` fresh processes per allocator setting, in turned order; each process warms up, then
times `--steps` steps and reports their median.  The table gives the median of those per-process medians.

Run: `python -m benchmarks.steps_alone [--rounds 5] [--steps 40] [--only cnn,mlp,rnn,chain2m,chain50] [--tf-python PATH]
[--jax-python PATH]` (a Python that can import tensorflow / jax, with NumPy; this repository goes on its
PYTHONPATH).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

RAISED = {"MALLOC_TRIM_THRESHOLD_": str(256 << 20), "MALLOC_MMAP_THRESHOLD_": str(256 << 20)}
CHILD = "--child"


def _numpy_step(workload):
    if workload in CHAINS:
        from benchmarks.peer_steps import chain_step
        return chain_step(workload, __import__("numpy"))
    if workload == "cnn":
        from benchmarks.cnn_workload import cnn_data, cnn_step_numpy
        x, filters = cnn_data()
        return lambda: cnn_step_numpy(filters, x)
    if workload == "mlp":
        from benchmarks.workloads import mlp_data, mlp_step_numpy
        x, y, params = mlp_data()
        return lambda: mlp_step_numpy(params, x, y)
    from benchmarks.workloads import rnn_data, rnn_numpy_grad
    xs, wx, wh, b = rnn_data()
    return lambda: rnn_numpy_grad(xs, wx, wh, b)


def _graphjit_step(workload):
    """The `@function` steps of bench_summary's rows (the RNN's row is a Session over the While graph)."""
    import eager as ek
    if workload in CHAINS:
        from benchmarks.peer_steps import chain_step
        from tracing import function
        return chain_step(workload, ek, function, ek.constant)
    if workload == "cnn":
        from benchmarks.cnn_workload import cnn_data, make_cnn_step
        from tracing import function
        x, filters = cnn_data()
        step, xt = function(make_cnn_step(ek, [ek.Variable(f) for f in filters])), ek.constant(x)
        return lambda: step(xt)
    if workload == "mlp":
        from benchmarks.bench_tracing import mlp_train_step
        from benchmarks.peer_steps import MLP_LR
        from benchmarks.workloads import mlp_data
        x, y, params = mlp_data()
        step = mlp_train_step([ek.Variable(p) for p in params], ek.optimizers.SGD(MLP_LR))
        xt, yt = ek.constant(x), ek.constant(y)
        return lambda: step(xt, yt)
    import graph_runtime as gr
    from benchmarks.bench_control_flow import rnn_graph
    from benchmarks.workloads import rnn_data
    xs, wx, wh, b = rnn_data()
    g, x, _, grads = rnn_graph(xs, wx, wh, b, with_grads=True)
    run = gr.Session(graph=g).make_callable(grads, feed_list=[x])
    return lambda: run(xs)


def _peer(name):
    def build(workload):
        from benchmarks import peer_steps
        return getattr(peer_steps, f"{name}_step")(workload)
    return build


WAYS = {"numpy": _numpy_step, "graphjit": _graphjit_step, "tf": _peer("tf"), "jax": _peer("jax")}
WORKLOADS = {"cnn": "CNN step b64 28x28", "mlp": "MLP 784-256-10 step b64", "rnn": "RNN 100 steps, fwd + grads",
             "chain2m": "(tanh(2x+1)(2x+1)-x)^2+3, 2M f32", "chain50": "50-op chain, 4x4 f32"}
CHAINS = ("chain2m", "chain50")
WARM_UP = 40        # past a fused kernel's promotion (8th call) and its variants' sampling, as bench_summary


def child(workload: str, way: str, steps: int) -> float:
    """Median seconds of one step of `way`, after warming up (tracing, compiling, autotuning)."""
    run = WAYS[way](workload)
    for _ in range(WARM_UP):
        run()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(workload: str, ways, rounds: int, steps: int, pythons: dict) -> dict:
    """{(way, setting): [per-process median seconds]} over `rounds` rounds in turned order."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cases = [(w, s) for w in ways for s in ("default", "raised")]
    found = {case: [] for case in cases}
    for r in range(rounds):
        for way, setting in cases[r % len(cases):] + cases[:r % len(cases)]:
            env = {k: v for k, v in os.environ.items() if k not in RAISED}
            env.update(RAISED if setting == "raised" else {})
            env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
            argv = [pythons.get(way, sys.executable), "-m", "benchmarks.steps_alone", CHILD, workload, way, str(steps)]
            proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"steps_alone: {workload} {way} ({setting}) failed:\n{proc.stderr.strip()[-2000:]}")
            found[(way, setting)].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return found


def table(rows: dict) -> str:
    """rows: {workload: measure(...)}; per way the median of the per-process medians and its ratio to NumPy's."""
    lines = ["| workload | way | default allocator | ratio to NumPy | thresholds raised | ratio to NumPy | processes |",
             "|---|---|---|---|---|---|---|"]
    for workload, found in rows.items():
        med = {case: statistics.median(v) for case, v in found.items()}
        base = {s: med[("numpy", s)] for s in ("default", "raised")}
        for way in dict.fromkeys(w for w, _ in found):
            d, r = med[(way, "default")], med[(way, "raised")]
            lines.append(f"| {WORKLOADS[workload]} | {way} | {d * 1e3:.3f} ms | {d / base['default']:.2f}x | "
                         f"{r * 1e3:.3f} ms | {r / base['raised']:.2f}x | {len(found[(way, 'default')])} |")
    return "\n".join(lines)


def main(argv) -> int:
    if CHILD in argv:
        i = argv.index(CHILD)
        print(json.dumps(child(argv[i + 1], argv[i + 2], int(argv[i + 3]))))
        return 0
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 5
    steps = int(argv[argv.index("--steps") + 1]) if "--steps" in argv else 40
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else list(WORKLOADS)
    ways, pythons = ["numpy", "graphjit"], {}
    for peer in ("tf", "jax"):
        if f"--{peer}-python" in argv:
            ways.append(peer)
            pythons[peer] = argv[argv.index(f"--{peer}-python") + 1]
    print(f"Each way alone in {rounds} fresh processes per setting, median of {steps} steps each; load average "
          f"{os.getloadavg()[0]:.2f}; raised: " + ", ".join(f"{k}={v}" for k, v in RAISED.items()) + "\n")
    print(table({w: measure(w, ways, rounds, steps, pythons) for w in only}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
