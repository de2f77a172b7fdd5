"""Session figures: replay overhead of the compiled executor vs hand-written NumPy.

Run: `python -m benchmarks.bench_session`.  Workloads (benchmarks/workloads.py):
- the 50-op 4x4 float32 elementwise chain through `Session.run` (x fed), and
  through a `make_callable`;
- one MLP 784-256-10 training step (batch 64, softmax cross-entropy, symbolic
  `gradients`, SGD via `assign_sub`) through `Session.run` with x, y fed;
- the same MLP step with `inter_op_parallelism_threads=2` (this step is mostly
  a serial chain and BLAS already uses every core, so expect no gain here; on
  independent large kernels with single-threaded BLAS, 2 threads measured 1.26x
  faster on the 2-core dev box).
- op schedules (`SessionConfig(schedule=...)`): a graph where a large early
  value (exp(x), 500x500 float64) is read only by the last ops, after a chain
  of large temporaries: run time and peak traced memory (tracemalloc, which
  sees NumPy's allocations) of each schedule, against hand-written NumPy
  written in the same order as the graph (the early value kept alive).
Ratios are against hand-written NumPy measured in the same run.  The machine
this runs on is often shared, so each figure is measured interleaved with its
NumPy baseline (batches alternate) and the fastest batch of each is kept: a
burst of load elsewhere then hits both sides instead of skewing the ratio.
"""
from __future__ import annotations

import tracemalloc

import numpy as np

import eager as ek
import graph_runtime as gr

from benchmarks.harness import Row, paired, table
from benchmarks.workloads import chain50, chain50_numpy, mlp_data, mlp_step_numpy




def chain_rows() -> list[Row]:
    x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [4, 4], name="x")
        y = chain50(ek, x)
    out = []
    feed = {x: x_np}
    for label, config in (("Session.run, passes on", gr.SessionConfig()),
                          ("Session.run, optimize=False", gr.SessionConfig(optimize=False))):
        sess = gr.Session(graph=g, config=config)
        np.testing.assert_allclose(sess.run(y, feed), chain50_numpy(x_np), rtol=1e-5)
        run, base = paired(lambda: sess.run(y, feed), lambda: chain50_numpy(x_np))
        out.append(Row("50-op chain 4x4 f32", label, run, base))
    f = sess.make_callable(y, [x])
    call, base = paired(lambda: f(x_np), lambda: chain50_numpy(x_np))
    out.append(Row("50-op chain 4x4 f32", "make_callable, optimize=False", call, base))
    return out


def build_mlp(params):
    w1v, b1v, w2v, b2v = params
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [None, 784], name="x")
        y = gr.placeholder(ek.float32, [None, 10], name="y")
        w1, b1 = ek.Variable(w1v, name="w1"), ek.Variable(b1v, name="b1")
        w2, b2 = ek.Variable(w2v, name="w2"), ek.Variable(b2v, name="b2")
        variables = [w1, b1, w2, b2]
        h = ek.nn.relu(ek.matmul(x, w1) + b1)
        logits = ek.matmul(h, w2) + b2
        loss = ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = gr.gradients(loss, variables)
        train = gr.group([v.assign_sub(0.1 * gv) for v, gv in zip(variables, grads)])
        init = gr.global_variables_initializer()
    return g, x, y, loss, train, init, variables


def mlp_rows() -> list[Row]:
    xv, yv, params = mlp_data()
    ref = [p.copy() for p in params]
    g, x, y, loss, train, init, variables = build_mlp(params)
    out = []
    for threads, optimize in ((1, True), (1, False), (2, True)):
        sess = gr.Session(graph=g, config=gr.SessionConfig(optimize=optimize,
                                                           inter_op_parallelism_threads=threads))
        sess.run(init)
        # same numbers as the hand-written step
        check = [p.copy() for p in ref]
        want = mlp_step_numpy(check, xv, yv)
        got = sess.run([loss, train], {x: xv, y: yv})[0]
        np.testing.assert_allclose(got, want, rtol=1e-4)
        for v, p in zip(variables, check):
            np.testing.assert_allclose(v.numpy(), p, rtol=1e-4, atol=1e-6)
        feed = {x: xv, y: yv}
        work = [p.copy() for p in ref]
        fetches = [loss, train]
        t, base = paired(lambda: sess.run(fetches, feed), lambda: mlp_step_numpy(work, xv, yv))
        label = f"Session.run, {threads} thread{'s' * (threads > 1)}" + ("" if optimize else ", optimize=False")
        out.append(Row("MLP 784-256-10 step, batch 64", label, t, base))
        sess.close()
    return out


def late_value_graph(n=500, k=4):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float64, [n, n], name="x")
        big = ek.exp(x)
        s = ek.reduce_sum(x)
        for i in range(k):
            s = s + ek.reduce_sum(ek.sin(x * float(i + 2)))
        out = ek.reduce_sum(big) * s
    return g, x, out


def late_value_numpy(x, k=4):
    big = np.exp(x)
    s = x.sum()
    for i in range(k):
        s = s + np.sin(x * float(i + 2)).sum()
    return big.sum() * s


def traced_peak(fn) -> int:
    fn()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def schedule_rows() -> tuple[list[Row], list[tuple]]:
    """(timing rows, (schedule, peak bytes, NumPy peak bytes) per schedule)."""
    g, x, out = late_value_graph()
    xv = np.random.default_rng(0).standard_normal((500, 500))
    want = late_value_numpy(xv)
    rows_, peaks = [], []
    np_peak = traced_peak(lambda: late_value_numpy(xv))
    for kind in ("creation", "alap", "memory"):
        sess = gr.Session(graph=g, config=gr.SessionConfig(schedule=kind))
        np.testing.assert_allclose(sess.run(out, {x: xv}), want, rtol=1e-9)
        t, base = paired(lambda: sess.run(out, {x: xv}), lambda: late_value_numpy(xv), rounds=7)
        rows_.append(Row("late large value 500x500 f64", f"schedule={kind}", t, base))
        peaks.append((kind, traced_peak(lambda: sess.run(out, {x: xv})), np_peak))
        sess.close()
    return rows_, peaks


def peak_table(peaks) -> str:
    lines = ["| schedule | peak traced memory | numpy peak | ratio |", "|---|---|---|---|"]
    for kind, p, base in peaks:
        lines.append(f"| {kind} | {p / 1e6:.2f} MB | {base / 1e6:.2f} MB | {p / base:.2f}x |")
    return "\n".join(lines)


def rows() -> list[Row]:
    return chain_rows() + mlp_rows()


def main() -> None:
    sched, peaks = schedule_rows()
    print(table(rows() + sched))
    print()
    print(peak_table(peaks))


if __name__ == "__main__":
    main()
