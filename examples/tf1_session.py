"""A TensorFlow-1-style program: build a graph, then run it in a Session.

Linear regression on synthetic data (y = 3*x0 - 2*x1 + 0.5 + noise), written the
way TF1 code was: placeholders for the data, variables for the parameters,
`graph_runtime.gradients` for the symbolic gradient, assign ops grouped into a
training op, an initializer, and a training loop of `Session.run` calls with a
feed_dict.  The Session compiles the pruned graph once per (feeds, fetches)
signature and replays it.

Run:  python examples/tf1_session.py [--steps 300] [--quick]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import eager as ek  # noqa: E402
import graph_runtime as gr  # noqa: E402


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 2)).astype(np.float32)
    y = (x @ np.array([[3.0], [-2.0]], np.float32) + 0.5 + 0.05 * rng.normal(size=(n, 1))).astype(np.float32)
    return x, y


def build_graph(learning_rate=0.1):
    """The model as a static graph: returns the graph and the handles the training loop needs."""
    graph = gr.Graph()
    with graph.as_default():
        x = gr.placeholder(ek.float32, (None, 2), name="x")
        y = gr.placeholder(ek.float32, (None, 1), name="y")
        with gr.name_scope("linear"):
            w = ek.Variable(ek.random.normal((2, 1), stddev=0.1, seed=1), name="w")
            b = ek.Variable(ek.zeros((1,)), name="b")
            pred = ek.matmul(x, w) + b
        loss = ek.reduce_mean(ek.square(pred - y), name="loss")
        grad_w, grad_b = gr.gradients(loss, [w, b])
        train_op = gr.group(w.assign_sub(learning_rate * grad_w), b.assign_sub(learning_rate * grad_b),
                            name="train")
        init = gr.global_variables_initializer()
    return graph, dict(x=x, y=y, w=w, b=b, pred=pred, loss=loss, train=train_op, init=init)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="a short run (used by the tests)")
    args = ap.parse_args(argv)
    steps = 40 if args.quick else args.steps
    x_data, y_data = make_data()
    graph, t = build_graph()
    print(f"graph: {len(graph.get_operations())} ops, e.g.\n" +
          "\n".join("  " + line for line in str(graph).splitlines()[:6]) + "\n  ...")
    with gr.Session(graph=graph) as sess:
        sess.run(t["init"])
        start = time.perf_counter()
        for step in range(1, steps + 1):
            _, loss = sess.run([t["train"], t["loss"]], feed_dict={t["x"]: x_data, t["y"]: y_data})
            if step == 1 or step % max(1, steps // 5) == 0:
                print(f"step {step:4d}  loss {loss:.5f}")
        elapsed = time.perf_counter() - start
        w, b = sess.run([t["w"], t["b"]])
        test_x = np.array([[1.0, 1.0]], np.float32)
        pred = sess.run(t["pred"], feed_dict={t["x"]: test_x})
    print(f"learned w = [{w[0, 0]:.3f}, {w[1, 0]:.3f}], b = {b[0]:.3f} (true: [3.0, -2.0], 0.5)")
    print(f"prediction at (1, 1): {float(pred[0, 0]):.3f} (true 1.5)")
    print(f"{steps} Session.run steps in {elapsed:.3f} s ({steps / elapsed:.0f} steps/s)")
    return 0 if loss < (0.05 if args.quick else 0.01) else 1


if __name__ == "__main__":
    sys.exit(main())
