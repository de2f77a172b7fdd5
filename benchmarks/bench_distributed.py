"""Distributed sessions: per-step overhead over one process and over Ray itself, transfer
latency between tasks, data-parallel MLP throughput.

Run: `OPENBLAS_NUM_THREADS=1 python -m benchmarks.bench_distributed` (needs `pip install
'graphjit[distributed,examples]'`; prints a note and exits when Ray is missing).  Everything runs on this
machine's embedded Ray (`ray://local`): the tasks are actor processes on the same 2 cores as the driver,
so the figures are latencies of Ray's local transport, not of a network.
Rows (each measured in this run, interleaved with its baseline: benchmarks/harness.paired):
- step overhead: x -> sin -> cos on 4 floats, every op on one task, vs the same graph in an in-process
  Session; the note gives Ray's own actor round trip (a bare method call) measured in the same run;
- 2 tasks, one edge: sin on worker 0, cos on worker 1 vs the Ray-only equivalent written by hand (the
  driver calls two actors; one sends 4 floats to the other through an actor call; no graphjit);
- transfer: the same 2-task graph minus the 1-task graph, for a 4-float and a 4 MB float32 tensor;
- MLP: one data-parallel training step of examples/distributed_mlp.py (parameters on the ps, a batch of
  64 split over 2 workers) vs the same graph with every task on one worker, and vs a local Session; the
  note gives the step in Ray round trips (of this run: the target for ps + 2 workers is 3x or less);
- the MLP step's messages in plain Ray (the ps sends the parameters to each worker, each sends its
  gradients back, one-way actor calls; no graphjit) vs graphjit's step, and the same stages as a Ray
  Compiled Graph (shared-memory channels): what a step costs on this machine whoever sends the messages.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import threading
import time

import numpy as np

import eager as ek
import graph_runtime as gr

from benchmarks.bench_cnn import blas_threads
from benchmarks.harness import Row, paired, table

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def chain_graph(n: int, two_tasks: bool):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (n,), name="x")
        with gr.device("/job:worker/task:0"):
            a = ek.sin(x)
        with gr.device("/job:worker/task:1" if two_tasks else "/job:worker/task:0"):
            y = ek.reduce_sum(ek.cos(a))
    return g, x, y


class _Echo:
    """The Ray-only baseline: `run(step, send)` either sends 4 floats to the peer or waits for them."""

    def __init__(self):
        self.box, self.cond, self.peer = {}, threading.Condition(), None

    def set_peer(self, peer):
        self.peer = peer

    def ping(self):
        return 1

    def deliver(self, step, value):
        with self.cond:
            self.box[step] = value
            self.cond.notify_all()

    def run(self, step, value=None):
        if value is not None:
            self.peer.deliver.remote(step, np.sin(value))
            return None
        with self.cond:
            while step not in self.box:
                self.cond.wait()
            return float(np.cos(self.box.pop(step)).sum())


def ray_rows(ray) -> tuple:
    echo = ray.remote(_Echo).options(num_cpus=0, max_concurrency=8)
    a, b = echo.remote(), echo.remote()
    ray.get([a.set_peer.remote(b), b.set_peer.remote(a)])
    counter = iter(range(1 << 40))
    xv = np.ones(4, np.float32)

    def ray_step():
        s = next(counter)
        ray.get([a.run.remote(s, xv), b.run.remote(s)])

    def ping():
        ray.get(a.ping.remote())

    return ray_step, ping, (a, b)


def step_rows(ray) -> list:
    cluster = gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 2}))
    xv = np.ones(4, np.float32)
    g1, x1, y1 = chain_graph(4, False)
    g2, x2, y2 = chain_graph(4, True)
    local = gr.Session(graph=g1, config=gr.SessionConfig(allow_soft_placement=True)).make_callable(y1, [x1])
    s1 = gr.Session("ray://local", graph=g1, config=cluster)
    s2 = gr.Session("ray://local", graph=g2, config=cluster)
    one, two = s1.make_callable(y1, [x1]), s2.make_callable(y2, [x2])
    ray_step, ping, actors = ray_rows(ray)
    t_one, t_local = paired(lambda: one(xv), lambda: local(xv), rounds=9)
    t_ping, t_local2 = paired(ping, lambda: local(xv), rounds=9)
    t_two, t_ray = paired(lambda: two(xv), ray_step, rounds=9)
    rows = [Row("4 floats, sin -> cos, 1 task", "distributed vs in-process", t_one, t_local,
                note=f"Ray round trip {t_ping * 1e3:.2f} ms; overhead over it {(t_one - t_ping) * 1e3:.2f} ms"),
            Row("4 floats, sin | cos on 2 tasks", "graphjit vs Ray by hand", t_two, t_ray,
                note=f"over Ray's round trip: {(t_two - t_ping) * 1e3:.2f} ms")]
    for n, label in ((4, "4 floats"), (1 << 20, "4 MB")):
        ga, xa, ya = chain_graph(n, False)
        gb, xb, yb = chain_graph(n, True)
        sa = gr.Session("ray://local", graph=ga, config=cluster)
        sb = gr.Session("ray://local", graph=gb, config=cluster)
        fa, fb = sa.make_callable(ya, [xa]), sb.make_callable(yb, [xb])
        v = np.ones(n, np.float32)
        t_b, t_a = paired(lambda: fb(v), lambda: fa(v), rounds=7)
        rows.append(Row(f"one cross-task transfer, {label}", "2 tasks vs 1 task", t_b, t_a,
                        note=f"transfer latency ~ {(t_b - t_a) * 1e3:.2f} ms"))
        sa.close()
        sb.close()
    for s in (s1, s2):
        s.close()
    for actor in actors:
        ray.kill(actor)
    return rows, t_ping


class _StepTask:
    """The Ray-only baseline of a data-parallel step: the ps sends 4 parameters to each worker (one-way
    calls), each worker sends 4 gradients back, the ps applies them: the MLP step's messages, no graphjit.
    The last three methods are the same step as stages of a Ray Compiled Graph."""

    def __init__(self):
        self.box, self.cond, self.peers = {}, threading.Condition(), {}
        self.params = [np.ones((64, 64), np.float32), np.ones(64, np.float32), np.ones((64, 10), np.float32),
                       np.ones(10, np.float32)]

    def set_peers(self, peers):
        self.peers = peers

    def deliver(self, step, key, value):
        with self.cond:
            self.box[(step, key)] = value
            self.cond.notify_all()

    def _take(self, step, key):
        with self.cond:
            while (step, key) not in self.box:
                self.cond.wait()
            return self.box.pop((step, key))

    def ps_step(self, step):
        for w in ("w0", "w1"):
            self.peers[w].deliver.remote(step, "params", self.params)
        return self.apply(self._take(step, "w0"), self._take(step, "w1"))

    def worker_step(self, step, name, x):
        self.peers["ps"].deliver.remote(step, name, self.grads(self._take(step, "params"), x))
        return float(x.sum())

    def read(self, x):
        return self.params

    def grads(self, params, x):
        return [p * 0.5 for p in params]

    def apply(self, g0, g1):
        return float(sum((p - 0.1 * (a + b)).sum() for p, a, b in zip(self.params, g0, g1)))


def step_by_hand(ray) -> tuple:
    """(the step's messages as Ray actor calls, cleanup)."""
    task = ray.remote(_StepTask).options(num_cpus=0, max_concurrency=8)
    ps, w0, w1 = task.remote(), task.remote(), task.remote()
    ray.get([ps.set_peers.remote({"w0": w0, "w1": w1}), w0.set_peers.remote({"ps": ps}),
             w1.set_peers.remote({"ps": ps})])
    x = np.ones((32, 64), np.float32)
    counter = iter(range(1 << 40))

    def calls():
        s = next(counter)
        ray.get([ps.ps_step.remote(s), w0.worker_step.remote(s, "w0", x), w1.worker_step.remote(s, "w1", x)])

    def cleanup():
        for a in (ps, w0, w1):
            ray.kill(a)

    return calls, cleanup


def compiled_step(ray) -> tuple:
    """(the step's stages as a Ray Compiled Graph, cleanup), or (None, None) when this Ray has none.  Its
    actors poll their channels while the graph lives (a core each here), so it is built only for its own
    measurement and torn down right after."""
    try:        # a beta Ray feature: the row says so when it is missing
        from ray.dag import InputNode
        cps, c0, c1 = (ray.remote(_StepTask).options(num_cpus=0).remote() for _ in range(3))
        with InputNode() as inp:
            read = cps.read.bind(inp)
            dag = cps.apply.bind(c0.grads.bind(read, inp), c1.grads.bind(read, inp)).experimental_compile()
    except Exception as e:      # noqa: BLE001
        print(f"(no Ray Compiled Graph: {type(e).__name__}: {e})")
        return None, None
    x = np.ones((32, 64), np.float32)

    def cleanup():
        dag.teardown()
        for a in (cps, c0, c1):
            ray.kill(a)

    return (lambda: ray.get(dag.execute(x))), cleanup


def mlp_rows(ray, t_ping: float) -> list:
    sys.path.insert(0, EXAMPLES)
    import distributed_mlp as dm
    from mlp_digits import load_data
    (x_train, y_train), _ = load_data()
    graph, t = dm.build_graph()
    feeds = [v for xy in t["feeds"] for v in xy]
    shards = [x_train[:32], y_train[:32], x_train[32:64], y_train[32:64]]
    fetches = [t["train"]] + t["loss"]
    runs = {}
    sessions = []
    for name, target, config in (
            ("ps + 2 workers", "ray://local", gr.SessionConfig(cluster=dm.CLUSTER)),
            ("1 task", "ray://local", gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 1}),
                                                       allow_soft_placement=True)),
            ("in-process", "", gr.SessionConfig(allow_soft_placement=True))):
        sess = gr.Session(target, graph=graph, config=config)
        sess.run(t["init"])
        runs[name] = sess.make_callable(fetches, feeds)
        sessions.append(sess)
    rows = []
    for name in ("ps + 2 workers", "1 task"):
        t_d, t_l = paired(lambda: runs[name](*shards), lambda: runs["in-process"](*shards), rounds=7)
        rows.append(Row("MLP train step, batch 64", f"{name} vs in-process", t_d, t_l,
                        note=f"{1 / t_d:.0f} steps/s, {t_d / t_ping:.1f}x Ray's round trip"))
    calls, cleanup = step_by_hand(ray)
    t_d, t_r = paired(lambda: runs["ps + 2 workers"](*shards), calls, rounds=7)
    note = f"Ray by hand: {t_r / t_ping:.1f}x Ray's round trip"
    compiled, cleanup_compiled = compiled_step(ray)       # measured last: its actors poll while it lives
    if compiled is not None:
        t_c, _ = paired(compiled, calls, rounds=7)
        cleanup_compiled()
        note += f"; as a Ray Compiled Graph {t_c * 1e3:.2f} ms ({t_c / t_ping:.1f}x)"
    rows.append(Row("MLP step's messages, ps + 2 workers", "graphjit vs Ray actor calls by hand", t_d, t_r,
                    note=note))
    cleanup()
    for s in sessions:
        s.close()
    return rows


def driver_profile() -> str:
    """Where the driver's time goes in the 2-task step (cProfile, top entries by own time)."""
    import cProfile
    import pstats
    import io
    g, x, y = chain_graph(4, True)
    sess = gr.Session("ray://local", graph=g, config=gr.SessionConfig(cluster=gr.ClusterSpec({"worker": 2})))
    f = sess.make_callable(y, [x])
    xv = np.ones(4, np.float32)
    f(xv)
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    for _ in range(200):
        f(xv)
    prof.disable()
    wall = (time.perf_counter() - start) / 200
    sess.close()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(6)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip() and ("{" in ln or ".py" in ln)][:6]
    return f"driver profile of the 2-task step ({wall * 1e3:.2f} ms per step, profiled):\n" + "\n".join(lines)


def main() -> None:
    if importlib.util.find_spec("ray") is None:
        print("bench_distributed: Ray is not installed (pip install 'graphjit[distributed]'); nothing to measure")
        return
    from graph_runtime.distributed import ray_backend
    ray = ray_backend.connect("ray://local")
    print(f"BLAS: {blas_threads()}; Ray {ray.__version__}, local instance on {os.cpu_count()} cores")
    rows, t_ping = step_rows(ray)
    if importlib.util.find_spec("sklearn") is not None:
        rows += mlp_rows(ray, t_ping)
    print(table(rows))
    print("(the 'numpy' column is the baseline named in 'variant': in-process Session, Ray by hand, 1 task)")
    print(driver_profile())


if __name__ == "__main__":
    main()
