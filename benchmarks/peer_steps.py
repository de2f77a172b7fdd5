"""The headline training steps written for the peers, TensorFlow (`tf.function`) and JAX (`jax.jit`), for
`benchmarks/steps_alone.py`: the same models, data and learning rates as the NumPy and graphjit steps
(benchmarks/cnn_workload.py, workloads.py, bench_control_flow.py).  Each builder returns a function of no
arguments that runs one step and waits for its result (`.numpy()`, `block_until_ready`).

Imports: the peer's library inside each builder, so this module imports in a process without either.
"""
from __future__ import annotations

import numpy as np

from benchmarks.cnn_workload import LR, cnn_data
from benchmarks.workloads import RNN_BATCH, RNN_HIDDEN, RNN_STEPS, mlp_data, rnn_data

MLP_LR = 0.1


def chain_step(workload, ops, compile_=None, convert=None):
    """The 2M-element expression or the 50-op chain of bench_summary over `ops` (numpy, eager, tf.math,
    jax.numpy), compiled by `compile_` (`tracing.function`, `tf.function`, `jax.jit`) when given, on the
    input made once by `convert` (`ek.constant`, `tf.constant`, `jnp.asarray`)."""
    from benchmarks.workloads import BIG, chain50, expr
    if workload == "chain2m":
        x, fn = np.random.default_rng(0).standard_normal(BIG).astype(np.float32), expr
    else:
        x, fn = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32), chain50
    if compile_ is None:
        return lambda: fn(ops, x)
    compiled, xt = compile_(lambda t: fn(ops, t)), convert(x)
    return lambda: compiled(xt)


def tf_step(workload):
    import tensorflow as tf
    if workload in ("chain2m", "chain50"):
        run = chain_step(workload, tf.math, tf.function, tf.constant)
        return lambda: run().numpy()
    if workload == "cnn":
        x, filters = cnn_data()
        xt, params = tf.constant(x), [tf.Variable(f) for f in filters]

        def loss_of(v1, v2):
            h1 = tf.nn.relu(tf.nn.conv2d(xt, v1, 1, "SAME"))
            h2 = tf.nn.relu(tf.nn.conv2d(tf.nn.max_pool2d(h1, 2, 2, "VALID"), v2, 1, "SAME"))
            return tf.reduce_mean(tf.square(h2))
        lr = float(LR)
    elif workload == "mlp":
        x, y, arrays = mlp_data()
        xt, yt, params = tf.constant(x), tf.constant(y), [tf.Variable(a) for a in arrays]

        def loss_of(w1, b1, w2, b2):
            logits = tf.nn.relu(xt @ w1 + b1) @ w2 + b2
            return tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=yt, logits=logits))
        lr = MLP_LR
    else:
        return _tf_rnn(tf)
    opt = tf.keras.optimizers.SGD(lr)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_of(*params)
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss
    return lambda: step().numpy()


def _tf_rnn(tf):
    xs, wx, wh, b = (tf.constant(a) for a in rnn_data())

    @tf.function
    def grads():
        with tf.GradientTape() as tape:
            tape.watch([wx, wh, b])
            h = tf.zeros((RNN_BATCH, RNN_HIDDEN))
            for t in tf.range(RNN_STEPS):
                h = tf.tanh(xs[t] @ wx + h @ wh + b)
            total = tf.reduce_sum(h)
        return tape.gradient(total, [wx, wh, b])
    return lambda: [g.numpy() for g in grads()]


def jax_step(workload):
    import jax
    import jax.numpy as jnp
    if workload in ("chain2m", "chain50"):
        run = chain_step(workload, jnp, jax.jit, jnp.asarray)
        return lambda: jax.block_until_ready(run())
    if workload == "cnn":
        x, params = cnn_data()

        def loss_of(params, x):
            dims = ("NHWC", "HWIO", "NHWC")
            h1 = jax.nn.relu(jax.lax.conv_general_dilated(x, params[0], (1, 1), "SAME", dimension_numbers=dims))
            p1 = jax.lax.reduce_window(h1, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            h2 = jax.nn.relu(jax.lax.conv_general_dilated(p1, params[1], (1, 1), "SAME", dimension_numbers=dims))
            return jnp.mean(h2 * h2)
        lr, args = float(LR), (x,)
    elif workload == "mlp":
        x, y, params = mlp_data()

        def loss_of(params, x, y):
            w1, b1, w2, b2 = params
            logits = jax.nn.relu(x @ w1 + b1) @ w2 + b2
            return jnp.mean(-jnp.sum(y * jax.nn.log_softmax(logits), axis=1))
        lr, args = MLP_LR, (x, y)
    else:
        xs, wx, wh, b = rnn_data()

        def total(ws, xs):
            def cell(h, x_t):
                h = jnp.tanh(x_t @ ws[0] + h @ ws[1] + ws[2])
                return h, None
            h, _ = jax.lax.scan(cell, jnp.zeros((RNN_BATCH, RNN_HIDDEN), jnp.float32), xs)
            return jnp.sum(h)
        grads = jax.jit(jax.grad(total))
        ws = [jnp.asarray(a) for a in (wx, wh, b)]
        xs = jnp.asarray(xs)
        return lambda: jax.block_until_ready(grads(ws, xs))

    @jax.jit
    def update(params, *args):
        loss, g = jax.value_and_grad(loss_of)(params, *args)
        return [p - lr * d for p, d in zip(params, g)], loss
    state = [[jnp.asarray(p) for p in params]]
    args = tuple(jnp.asarray(a) for a in args)

    def step():
        state[0], loss = update(state[0], *args)
        return jax.block_until_ready(loss)
    return step
