"""Control-flow figures: a tanh RNN written with `while_loop`, run through a Session.

The RNN: 100 steps, hidden 64, batch 16, input 32;
`h = tanh(x[t] @ Wx + h @ Wh + b)`.  Baseline: the same loop in hand-written
NumPy.  Also reported: the forward plus `gradients` (the backward While over
the saved iterations) against a hand-written NumPy BPTT, and a 100,000-
iteration scalar counter loop (per-iteration overhead of the While kernel).

Run: `python -m benchmarks.bench_control_flow`.
"""
from __future__ import annotations

import numpy as np

import eager as ek
import graph_runtime as gr
from benchmarks.harness import Row, measure, table
from benchmarks.workloads import RNN_BATCH, RNN_HIDDEN, RNN_INPUTS, RNN_STEPS, rnn_data, rnn_numpy_grad

STEPS, HIDDEN, BATCH, INPUTS = RNN_STEPS, RNN_HIDDEN, RNN_BATCH, RNN_INPUTS


def rnn_numpy(xs, wx, wh, b):
    h = np.zeros((BATCH, HIDDEN), np.float32)
    for t in range(STEPS):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
    return h




def rnn_graph(xs, wx, wh, b, indexing="tensor_array", with_grads=False):
    """The RNN graph; the step input is `x_ta.read(t)` (TF2 idiom) or `x[t]` (indexing='getitem').

    With `with_grads`, also the gradients of sum(h) (a forward loop that has a gradient saves its
    per-iteration values, so forward-only figures use a graph without one).
    """
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder("float32", xs.shape, name="xs")
        Wx, Wh, B = ek.constant(wx), ek.constant(wh), ek.constant(b)
        x_ta = ek.TensorArray("float32", size=STEPS).unstack(x)

        def body(t, h):
            x_t = x_ta.read(t) if indexing == "tensor_array" else x[t]
            return t + 1, ek.tanh(ek.matmul(x_t, Wx) + ek.matmul(h, Wh) + B)

        _, h = ek.while_loop(lambda t, h: t < STEPS, body, [ek.constant(0), ek.zeros((BATCH, HIDDEN))])
        grads = gr.gradients(ek.reduce_sum(h), [Wx, Wh, B]) if with_grads else None
    return g, x, h, grads


def counter_graph(n):
    g = gr.Graph()
    with g.as_default():
        i = ek.while_loop(lambda i: i < n, lambda i: i + 1, [ek.constant(0)])[0]
    return g, i


def rows() -> list[Row]:
    xs, wx, wh, b = rnn_data()
    g, x, h, _ = rnn_graph(xs, wx, wh, b)
    sess = gr.Session(graph=g)
    got = sess.run(h, {x: xs})
    assert np.allclose(got, rnn_numpy(xs, wx, wh, b), atol=1e-5)
    base = measure(lambda: rnn_numpy(xs, wx, wh, b), repeat=9)
    out = [Row(f"tanh RNN {STEPS} steps h{HIDDEN} b{BATCH}", "while_loop, Session",
               measure(lambda: sess.run(h, {x: xs}), repeat=9), base, "step input: TensorArray.read(t)")]
    g2, x2, h2, _ = rnn_graph(xs, wx, wh, b, indexing="getitem")
    sess2 = gr.Session(graph=g2)
    assert np.allclose(sess2.run(h2, {x2: xs}), rnn_numpy(xs, wx, wh, b), atol=1e-5)
    out.append(Row(f"tanh RNN {STEPS} steps h{HIDDEN} b{BATCH}", "while_loop, Session",
                   measure(lambda: sess2.run(h2, {x2: xs}), repeat=9), base, "step input: x[t] (Pack+StridedSlice)"))
    gg, xg, _, grads = rnn_graph(xs, wx, wh, b, with_grads=True)
    sess = gr.Session(graph=gg)
    x = xg
    run_grads = sess.make_callable(grads, feed_list=[x]) if hasattr(sess, "make_callable") else None
    fn = (lambda: run_grads(xs)) if run_grads is not None else (lambda: sess.run(grads, {x: xs}))
    want = rnn_numpy_grad(xs, wx, wh, b)
    for a, e in zip(fn(), want):
        assert np.allclose(a, e, rtol=1e-3, atol=1e-3)
    out.append(Row(f"tanh RNN {STEPS} steps fwd + gradients", "While + WhileGrad, Session",
                   measure(fn, repeat=7), measure(lambda: rnn_numpy_grad(xs, wx, wh, b), repeat=7)))
    n = 100_000
    gc, i = counter_graph(n)
    sc = gr.Session(graph=gc)

    def py_loop():
        k = np.int32(0)
        one = np.int32(1)
        while k < n:
            k = k + one
        return k
    out.append(Row("counter loop, 100k iterations", "while_loop, Session", measure(lambda: sc.run(i), repeat=3),
                   measure(py_loop, repeat=3), "baseline: Python loop on NumPy scalars"))
    return out


if __name__ == "__main__":
    print(table(rows()))
