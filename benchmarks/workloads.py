"""The benchmark workloads, each written once against a generic `ops` namespace.

`chain50(ops, x)`: 50 small elementwise ops; `expr(ops, x)`: the 2M-element expression.  `mlp_params` / `mlp_step_numpy`:
the 784-256-10 MLP training step (batch 64, softmax cross-entropy, SGD) in
hand-written NumPy, the baseline every MLP figure is divided by.
"""
from __future__ import annotations

import numpy as np

CHAIN_LEN = 50
BIG = 2_000_000           # elements of the 2M-element expression `expr`


def chain50(ops, x):
    """50 elementwise ops; `ops` is numpy or eager (same names: tanh, sin, multiply...)."""
    y = x
    for i in range(CHAIN_LEN // 5):
        y = ops.tanh(y)
        y = ops.multiply(y, 1.01)
        y = ops.add(y, 0.5)
        y = ops.sin(y)
        y = ops.subtract(y, 0.25)
    return y


def expr(ops, x):
    """`(tanh(2x+1)(2x+1)-x)^2+3`, the 2M-element fusion workload."""
    a = 2 * x + 1
    return (ops.tanh(a) * a - x) ** 2 + 3


def chain50_numpy(x):
    return chain50(np, x)


def mlp_data(seed=0, batch=64):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, 784)).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    y = np.eye(10, dtype=np.float32)[labels]
    w1 = (rng.standard_normal((784, 256)) * 0.05).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    w2 = (rng.standard_normal((256, 10)) * 0.05).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    return x, y, [w1, b1, w2, b2]


def mlp_step_numpy(params, x, y, lr=np.float32(0.1), marks=None):
    """One SGD step of a ReLU MLP with softmax cross-entropy, by hand; updates the arrays in `params` in place.

    Written in place where NumPy allows (`+=`, `out=`): the same operations in the same order as the
    allocating version it replaced (equal bits), 10% less CPU time (benchmarks/RESULTS.md).  `marks`, a list
    with a `clock` attribute: the step appends `marks.clock()` after the loss and after the gradients (phase
    timings, ab_eager.py's `--phases`).
    """
    w1, b1, w2, b2 = params
    h = x @ w1
    h += b1
    active = h > 0
    np.maximum(h, 0, out=h)
    logits = h @ w2
    logits += b2
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = np.mean(-np.sum(y * (z - np.log(s)), axis=1))
    if marks is not None:
        marks.append(marks.clock())
    e /= s                      # softmax
    e -= y
    e /= np.float32(x.shape[0])  # d loss / d logits
    dw2 = h.T @ e
    db2 = e.sum(axis=0)
    dh = e @ w2.T
    dh *= active
    dw1 = x.T @ dh
    db1 = dh.sum(axis=0)
    if marks is not None:
        marks.append(marks.clock())
    dw1 *= lr
    w1 -= dw1
    b1 -= lr * db1
    dw2 *= lr
    w2 -= dw2
    b2 -= lr * db2
    return loss


RNN_STEPS, RNN_HIDDEN, RNN_BATCH, RNN_INPUTS = 100, 64, 16, 32


def rnn_data(seed=0):
    """The tanh RNN's inputs (RNN_STEPS x RNN_BATCH x RNN_INPUTS) and weights, the same draws everywhere."""
    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((RNN_STEPS, RNN_BATCH, RNN_INPUTS)).astype(np.float32)
    wx = (rng.standard_normal((RNN_INPUTS, RNN_HIDDEN)) * 0.1).astype(np.float32)
    wh = (rng.standard_normal((RNN_HIDDEN, RNN_HIDDEN)) * 0.1).astype(np.float32)
    return xs, wx, wh, np.zeros(RNN_HIDDEN, np.float32)


def rnn_numpy_grad(xs, wx, wh, b):
    """Hand-written tanh RNN forward, then BPTT of sum(h_T) with respect to wx, wh, b."""
    steps, batch, hidden = xs.shape[0], xs.shape[1], wx.shape[1]
    h = np.zeros((batch, hidden), np.float32)
    hs = [h]
    for t in range(steps):
        h = np.tanh(xs[t] @ wx + h @ wh + b)
        hs.append(h)
    dh = np.ones_like(h)
    dwx, dwh, db = np.zeros_like(wx), np.zeros_like(wh), np.zeros_like(b)
    for t in range(steps - 1, -1, -1):
        dz = dh * (1 - hs[t + 1] ** 2)
        dwx += xs[t].T @ dz
        dwh += hs[t].T @ dz
        db += dz.sum(0)
        dh = dz @ wh.T
    return dwx, dwh, db
