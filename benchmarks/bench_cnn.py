"""CNN figures: a small CNN training step, and per-layer convolution timings.

Run: `python -m benchmarks.bench_cnn [--quick]`.
- The step (benchmarks/cnn_workload.py): batch 64 of 28x28x1, conv 3x3x1x16
  SAME, relu, maxpool 2x2; conv 3x3x16x32 SAME, relu; mean of squares;
  GradientTape and SGD on both filters; eagerly and under `@function`, each
  interleaved with the hand-written NumPy im2col step.  Before timing, five
  steps of each are checked against NumPy for equal losses and filters.
- Per layer: Conv2D, its input gradient and its filter gradient for the
  shapes of examples/cnn_digits.py and of the step, plus a strided and a 1x1
  case; graphjit (the algorithm its cost model picks, and each other
  algorithm forced) against a hand-written im2col (`sliding_window_view`,
  one copy, one matmul; col2im scatter-add for the input gradient), in CPU
  time (`time.process_time`): single kernels are too short for wall time on
  a shared machine.
The BLAS thread count in use is printed: on a shared 2-core machine
`OPENBLAS_NUM_THREADS=1` gives steadier figures (both sides use the same BLAS).
The step rows also note the CPU-time ratio (`time.process_time`, interleaved
the same way): on a loaded machine wall time mostly measures waiting for a
core; with one BLAS thread CPU time is the work done.
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

import eager as ek
from benchmarks.cnn_workload import cnn_data, cnn_step_numpy, make_cnn_step
from benchmarks.harness import Row, paired, table
from eager.dispatch import execute
from eager.ops import conv_algorithms, nn_conv
from eager.ops.windows import geometry
from tracing import function

# (label, x shape NHWC, filter shape HWIO, stride, padding)
LAYERS = [
    ("digits conv1 8x8x1->8", (64, 8, 8, 1), (3, 3, 1, 8), 1, "SAME"),
    ("digits conv2 4x4x8->16", (64, 4, 4, 8), (3, 3, 8, 16), 1, "SAME"),
    ("step conv1 28x28x1->16", (64, 28, 28, 1), (3, 3, 1, 16), 1, "SAME"),
    ("step conv2 14x14x16->32", (64, 14, 14, 16), (3, 3, 16, 32), 1, "SAME"),
    ("strided 28x28x16->32 s2", (64, 28, 28, 16), (3, 3, 16, 32), 2, "SAME"),
    ("1x1 14x14x32->64", (64, 14, 14, 32), (1, 1, 32, 64), 1, "VALID"),
]


def blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
        return ", ".join(f"{i['internal_api']} {i['num_threads']} thread(s)" for i in threadpool_info()
                         if i.get("user_api") == "blas") or "unknown"
    except ImportError:
        return f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}"


# ------------------------------------------------------------------ hand-written im2col, any stride / padding
def _np_cols(x, kh, kw, stride, gh, gw):
    xp = np.pad(x, ((0, 0), (gh[1], gh[2]), (gw[1], gw[2]), (0, 0)))
    win = sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, ::stride, ::stride][:, :gh[0], :gw[0]]
    return np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, kh * kw * x.shape[3]), xp.shape


def np_conv(x, f, stride, gh, gw):
    cols, _ = _np_cols(x, f.shape[0], f.shape[1], stride, gh, gw)
    return (cols @ f.reshape(-1, f.shape[3])).reshape(x.shape[0], gh[0], gw[0], f.shape[3])


def np_conv_input(x_shape, f, dy, stride, gh, gw):
    kh, kw, c, o = f.shape
    d = (dy.reshape(-1, o) @ f.reshape(-1, o).T).reshape(dy.shape[:3] + (kh, kw, c))
    dxp = np.zeros((x_shape[0], x_shape[1] + gh[1] + gh[2], x_shape[2] + gw[1] + gw[2], c), dy.dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, i:i + stride * (gh[0] - 1) + 1:stride, j:j + stride * (gw[0] - 1) + 1:stride, :] += d[:, :, :, i, j]
    return dxp[:, gh[1]:gh[1] + x_shape[1], gw[1]:gw[1] + x_shape[2]]


def np_conv_filter(x, f_shape, dy, stride, gh, gw):
    cols, _ = _np_cols(x, f_shape[0], f_shape[1], stride, gh, gw)
    return (cols.T @ dy.reshape(-1, f_shape[3])).reshape(f_shape)


def layer_rows(rounds) -> list[Row]:
    rng = np.random.default_rng(0)
    out = []
    for label, xs, fs, stride, padding in LAYERS:
        x = rng.standard_normal(xs).astype(np.float32)
        f = rng.standard_normal(fs).astype(np.float32)
        gh, gw = geometry(xs[1:3], fs[:2], (stride, stride), (1, 1), padding, "bench")
        dy = rng.standard_normal((xs[0], gh[0], gw[0], fs[3])).astype(np.float32)
        attrs = {"strides": (stride, stride), "padding": padding, "dilations": (1, 1)}
        xt, ft, dyt = ek.constant(x), ek.constant(f), ek.constant(dy)
        xs_t, fs_t = ek.constant(np.array(xs, np.int32)), ek.constant(np.array(fs, np.int32))
        cases = {
            "forward": (lambda: execute(nn_conv.CONV2D, (xt, ft), attrs), lambda: np_conv(x, f, stride, gh, gw)),
            "input": (lambda: execute(nn_conv.CONV2D_INPUT, (xs_t, ft, dyt), attrs),
                      lambda: np_conv_input(xs, f, dy, stride, gh, gw)),
            "filter": (lambda: execute(nn_conv.CONV2D_FILTER, (xt, fs_t, dyt), attrs),
                       lambda: np_conv_filter(x, fs, dy, stride, gh, gw)),
        }
        for kind, (ours, base) in cases.items():
            picked = conv_algorithms.choose(kind, xs[0], fs[2], fs[3], fs[0], fs[1], gh[0], gw[0], xs[1], xs[2],
                                            (stride, stride))
            np.testing.assert_allclose(ours().numpy(), base(), rtol=2e-4, atol=2e-3)
            t, b = paired(ours, base, rounds=rounds, clock=time.process_time)
            others = []
            for name in conv_algorithms.ALGORITHMS[kind]:
                if name == picked or (name == "transpose" and stride != 1):
                    continue
                with conv_algorithms.forced(**{kind: name}):
                    other, b2 = paired(ours, base, rounds=max(3, rounds // 2), clock=time.process_time)
                others.append(f"{name} {other / b2:.2f}x")
            out.append(Row(label, f"{kind}: {picked}", t, b, "others: " + ", ".join(others)))
    return out


# ------------------------------------------------------------------ the training step
def check_step(steps=5, **data):
    """graphjit's losses and filters equal NumPy's, step for step, eagerly and under @function."""
    x, filters = cnn_data(**data)
    np_filters = [f.copy() for f in filters]
    ev, gv = [ek.Variable(f) for f in filters], [ek.Variable(f) for f in filters]
    eager_step, graph_step = make_cnn_step(ek, ev), function(make_cnn_step(ek, gv))
    xt = ek.constant(x)
    for i in range(steps):
        want = cnn_step_numpy(np_filters, x)
        for mode, step in (("eager", eager_step), ("@function", graph_step)):
            got = float(step(xt))
            if not np.isclose(got, want, rtol=1e-5):
                raise AssertionError(f"step {i}: {mode} loss {got} != NumPy loss {want}")
    for mode, vs in (("eager", ev), ("@function", gv)):
        for v, f in zip(vs, np_filters):
            np.testing.assert_allclose(v.numpy(), f, rtol=1e-4, atol=1e-6, err_msg=f"{mode} filters")


def step_rows(rounds) -> list[Row]:
    check_step()
    x, filters = cnn_data()
    np_filters = [f.copy() for f in filters]
    xt = ek.constant(x)
    out = []
    for variant, wrap in (("eager (tape + SGD)", lambda s: s), ("@function", function)):
        step = wrap(make_cnn_step(ek, [ek.Variable(f) for f in filters]))
        t, b = paired(lambda: step(xt), lambda: cnn_step_numpy(np_filters, x), rounds=rounds)
        ct, cb = paired(lambda: step(xt), lambda: cnn_step_numpy(np_filters, x), rounds=rounds,
                        clock=time.process_time)
        out.append(Row("CNN step, batch 64 of 28x28x1", variant, t, b,
                       f"CPU time {ct * 1e3:.2f} ms vs {cb * 1e3:.2f} ms: {ct / cb:.2f}x"))
    peers = {}
    try:
        import tensorflow as tf  # noqa: F401
        peers["tensorflow"] = tf
    except ImportError:
        pass
    if "tensorflow" in peers:
        out.extend(_tf_rows(peers["tensorflow"], x, filters, np_filters, rounds))
    return out


def _tf_rows(tf, x, filters, np_filters, rounds):
    out = []
    xt = tf.constant(x)
    for variant, wrap in (("TF eager", lambda s: s), ("TF tf.function", tf.function)):
        step = wrap(make_cnn_step(_TFOps(tf), [tf.Variable(f) for f in filters]))
        t, b = paired(lambda: step(xt), lambda: cnn_step_numpy(np_filters, x), rounds=rounds)
        out.append(Row("CNN step, batch 64 of 28x28x1", variant, t, b))
    return out


class _TFOps:
    """The few names `cnn_loss` / `make_cnn_step` use, mapped onto TensorFlow."""

    def __init__(self, tf):
        self.nn, self.square, self.reduce_mean = tf.nn, tf.square, tf.reduce_mean
        self.GradientTape, self.optimizers = tf.GradientTape, tf.keras.optimizers


def main(argv) -> int:
    rounds = 5 if "--quick" in argv else 15
    print(f"BLAS: {blas_threads()}")
    print(table(step_rows(rounds)))
    print()
    print("per layer, CPU time:")
    print(table(layer_rows(rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
