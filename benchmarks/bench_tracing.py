"""@function figures: call overhead, MLP step, 50-op chain, first-call latency; first-call
scaling with function size and an autograph-heavy function (benchmarks/compile_scaling.py).

Run: `python -m benchmarks.bench_tracing`.  Ratios are against hand-written
NumPy measured in the same run (median of repeats).
"""
from __future__ import annotations

import time

import numpy as np

import eager as ek
from benchmarks.harness import Row, measure, table
from benchmarks.workloads import chain50, chain50_numpy, mlp_data, mlp_step_numpy
from tracing import function


def mlp_train_step(variables, opt):
    @function
    def step(x, y):
        w1, b1, w2, b2 = variables
        with ek.GradientTape() as tape:
            h = ek.nn.relu(ek.matmul(x, w1) + b1)
            logits = ek.matmul(h, w2) + b2
            loss = ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss
    return step


def control_flow_fn(x, n):
    """A 20-line function with an `if` and a `while` (first-call latency workload)."""
    total = ek.zeros_like(x)
    i = ek.constant(0)
    if ek.reduce_sum(x) > 0:
        scale = x * 2.0
    else:
        scale = -x
    while i < n:
        total = total + ek.tanh(scale) * 0.5
        scale = scale * 0.9
        i = i + 1
    mean = ek.reduce_mean(total)
    centered = total - mean
    spread = ek.reduce_max(ek.abs(centered))
    if spread > 1.0:
        centered = centered / spread
    out = centered + mean
    out = ek.nn.relu(out) - 0.1 * ek.nn.relu(-out)
    return out


def rows() -> list[Row]:
    out = []
    x_np = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    x = ek.constant(x_np)

    one_op = function(lambda t: ek.tanh(t))
    base = measure(lambda: np.tanh(x_np))
    out.append(Row("1-op call, 4x4 f32", "@function", measure(lambda: one_op(x)), base,
                   "overhead = time - numpy"))

    chain = function(lambda t: chain50(ek, t))
    out.append(Row("50-op chain, 4x4 f32", "@function", measure(lambda: chain(x)),
                   measure(lambda: chain50_numpy(x_np))))

    xb, yb, params = mlp_data()
    np_params = [p.copy() for p in params]     # the baseline updates its arrays in place
    base = measure(lambda: mlp_step_numpy(np_params, xb, yb))
    variables = [ek.Variable(p) for p in params]
    step = mlp_train_step(variables, ek.optimizers.SGD(0.1))
    xt, yt = ek.constant(xb), ek.constant(yb)
    out.append(Row("MLP 784-256-10 step, batch 64", "@function", measure(lambda: step(xt, yt)), base))

    firsts = []
    for _ in range(5):
        f = function(control_flow_fn)
        t0 = time.perf_counter()
        f(x, ek.constant(3))
        firsts.append(time.perf_counter() - t0)
    first = sorted(firsts)[len(firsts) // 2]
    out.append(Row("first call: 20 lines, if + while", "trace+optimize+compile", first,
                   measure(lambda: control_flow_fn(x, ek.constant(3))), "numpy column = one eager run"))
    return out


if __name__ == "__main__":
    print(table(rows()))
    from benchmarks.compile_scaling import control_flow_table, scaling_table
    print("\nFirst call (trace + optimize + compile) of an unrolled function of N lines "
          "(`y = tanh(y)*0.5 + y` / `y = y*1.0001 - 0.1`, 4x4 f32), median of 3 (4,000: one run):\n")
    print(scaling_table())
    print("\nAutograph-heavy first call:\n")
    print(control_flow_table())
