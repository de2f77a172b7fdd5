"""The RNN's forward + gradients in its three ways of reading the step input, against the NumPy BPTT.

Session graphs reading `x[t]` and `TensorArray.read(t)` (benchmarks/bench_control_flow.py) and an
`@function` training step looping `for t in ek.range(STEPS)` over `x[t]`, each against the hand-written NumPy
BPTT in the same process; the order turns every round; median CPU-time and wall-time ratios.  Run:
`python -m benchmarks.rnn_read_forms [rounds]`.  Results: benchmarks/results/2026-11-27-tidy-rnn-x-t.md.
"""
import sys
import time

import numpy as np

import eager as ek
import graph_runtime as gr
from benchmarks.bench_control_flow import BATCH, HIDDEN, STEPS, rnn_data, rnn_graph
from benchmarks.workloads import rnn_numpy_grad
from tracing import function


def _steps():
    """{name: fn(xs) -> gradients of sum(h) as arrays} for the three forms and the NumPy BPTT."""
    xs, wx, wh, b = rnn_data()
    fns = {}
    for indexing in ("getitem", "tensor_array"):
        g, x, h, grads = rnn_graph(xs, wx, wh, b, indexing=indexing, with_grads=True)
        fns[indexing] = gr.Session(graph=g).make_callable(grads, feed_list=[x])
    Wx, Wh, B = ek.Variable(wx), ek.Variable(wh), ek.Variable(b)

    @function
    def step(x):
        with ek.GradientTape() as tape:
            h = ek.zeros((BATCH, HIDDEN))
            for t in ek.range(STEPS):
                h = ek.tanh(ek.matmul(x[t], Wx) + ek.matmul(h, Wh) + B)
            loss = ek.reduce_sum(h)
        return tape.gradient(loss, [Wx, Wh, B])
    fns["function_range"] = lambda xs: [t.numpy() for t in step(xs)]
    fns["numpy"] = lambda xs: rnn_numpy_grad(xs, wx, wh, b)
    want = rnn_numpy_grad(xs, wx, wh, b)
    for name, fn in fns.items():
        for got, expected in zip(fn(xs), want):
            assert np.allclose(got, expected, rtol=1e-3, atol=1e-3), name
    return fns, xs


def main(rounds: int = 60):
    fns, xs = _steps()
    wall, cpu = {k: [] for k in fns}, {k: [] for k in fns}
    order = list(fns)
    for _ in range(rounds):
        order = order[1:] + order[:1]
        for k in order:
            c0, t0 = time.process_time(), time.perf_counter()
            fns[k](xs)
            wall[k].append(time.perf_counter() - t0)
            cpu[k].append(time.process_time() - c0)
    for what, times in (("cpu", cpu), ("wall", wall)):
        med = {k: np.median(v) for k, v in times.items()}
        print(f"{what:<5}" + "  ".join(f"{k} {1e3 * med[k]:.2f} ms ({med[k] / med['numpy']:.3f}x)" for k in med))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
