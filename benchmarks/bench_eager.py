"""Eager-mode figures: dispatch overhead and an eager MLP training step.

Run: `python -m benchmarks.bench_eager`.  Prints ratios against hand-written
NumPy measured in the same run (median of repeats).
"""
from __future__ import annotations

import numpy as np

import eager as ek
from benchmarks.harness import Row, measure, table
from benchmarks.workloads import chain50, chain50_numpy, mlp_data, mlp_step_numpy


def mlp_model(params):
    w1, b1, w2, b2 = [ek.Variable(p) for p in params]

    def loss_fn(x, y):
        h = ek.nn.relu(ek.matmul(x, w1) + b1)
        logits = ek.matmul(h, w2) + b2
        return ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))

    return [w1, b1, w2, b2], loss_fn


def eager_mlp_step(variables, loss_fn, opt, x, y):
    with ek.GradientTape() as tape:
        loss = loss_fn(x, y)
    grads = tape.gradient(loss, variables)
    opt.apply_gradients(zip(grads, variables))
    return loss


def rows() -> list[Row]:
    out = []
    x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    x = ek.constant(x_np)
    base = measure(lambda: chain50_numpy(x_np))
    out.append(Row("50-op chain, 4x4 f32", "eager", measure(lambda: chain50(ek, x)), base))

    xb, yb, params = mlp_data()
    np_params = [p.copy() for p in params]     # the baseline updates its arrays in place
    base = measure(lambda: mlp_step_numpy(np_params, xb, yb), repeat=7)
    variables, loss_fn = mlp_model(params)
    opt = ek.optimizers.SGD(0.1)
    xt, yt = ek.constant(xb), ek.constant(yb)
    out.append(Row("MLP 784-256-10 step, batch 64", "eager (tape + SGD)",
                   measure(lambda: eager_mlp_step(variables, loss_fn, opt, xt, yt), repeat=7), base))
    return out


if __name__ == "__main__":
    print(table(rows()))
