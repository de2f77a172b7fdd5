"""The CNN training-step workload, by hand in NumPy and in graphjit.

The model: batch 64 of 28x28x1 images; conv 3x3x1x16 SAME, relu, maxpool
2x2/2; conv 3x3x16x32 SAME, relu; loss = mean(h2 ** 2); SGD on both filters.
`cnn_step_numpy` is the hand-written baseline every CNN figure is divided by:
the textbook im2col forward (`sliding_window_view`, one copy, one matmul),
backward by one GEMM per filter gradient and a col2im scatter-add of the
nine tap slabs for the input gradient, and a 2x2 max-pool as the maximum of
the four strided views of a reshape, whose gradient goes through an equality
mask (the fastest plain NumPy we found; see benchmarks/RESULTS.md for the
argmax + take_along_axis + one-hot routing it replaced).  It updates the filters in place and returns the loss, so
graphjit's losses can be checked against it step for step.

Imports: numpy, and eager / tracing for the graphjit versions.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

LR = np.float32(0.05)


def cnn_data(seed=0, batch=64, hw=28):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, hw, hw, 1)).astype(np.float32)
    f1 = (rng.standard_normal((3, 3, 1, 16)) * 0.3).astype(np.float32)
    f2 = (rng.standard_normal((3, 3, 16, 32)) * 0.1).astype(np.float32)
    return x, [f1, f2]


# ------------------------------------------------------------------ NumPy by hand
def _cols(x):
    """im2col of a 3x3 SAME convolution: [N*H*W, 9*C] (one copy)."""
    n, h, w, c = x.shape
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    win = sliding_window_view(xp, (3, 3), axis=(1, 2))          # [N, H, W, C, 3, 3]
    return np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(n * h * w, 9 * c)


def _conv(x, f):
    n, h, w, _ = x.shape
    cols = _cols(x)
    return (cols @ f.reshape(-1, f.shape[3])).reshape(n, h, w, f.shape[3]), cols


def _col2im(dcols, shape):
    """Adjoint of `_cols`: scatter-add each tap's slab into the padded input gradient."""
    n, h, w, c = shape
    d = dcols.reshape(n, h, w, 3, 3, c)
    dxp = np.zeros((n, h + 2, w + 2, c), dcols.dtype)
    for i in range(3):
        for j in range(3):
            dxp[:, i:i + h, j:j + w, :] += d[:, :, :, i, j, :]
    return dxp[:, 1:-1, 1:-1, :]


def cnn_step_numpy(filters, x, lr=LR):
    """One SGD step of the CNN by hand; updates `filters` in place and returns the loss."""
    f1, f2 = filters
    n, h, w, _ = x.shape
    c1, c2 = f1.shape[3], f2.shape[3]
    z1, cols1 = _conv(x, f1)
    h1 = np.maximum(z1, 0)
    blocks = h1.reshape(n, h // 2, 2, w // 2, 2, c1)                # 2x2/2 max-pool over a reshaped view
    p1 = np.maximum(np.maximum(blocks[:, :, 0, :, 0], blocks[:, :, 0, :, 1]),
                    np.maximum(blocks[:, :, 1, :, 0], blocks[:, :, 1, :, 1]))
    z2, cols2 = _conv(p1, f2)
    h2 = np.maximum(z2, 0)
    loss = np.mean(h2 * h2)
    dz2 = (np.float32(2.0 / h2.size) * h2) * (z2 > 0)
    dz2m = dz2.reshape(-1, c2)
    df2 = (cols2.T @ dz2m).reshape(f2.shape)
    dp1 = _col2im(dz2m @ f2.reshape(-1, c2).T, p1.shape)
    # the pool gradient goes to every element equal to its window's maximum: ties happen only between
    # relu's zeros, whose gradient the (z1 > 0) factor clears, so this is TF's first-maximum routing here
    dh1 = ((blocks == p1[:, :, None, :, None, :]) * dp1[:, :, None, :, None, :]).reshape(n, h, w, c1)
    dz1 = dh1 * (z1 > 0)
    df1 = (cols1.T @ dz1.reshape(-1, c1)).reshape(f1.shape)
    filters[0] = f1 - lr * df1
    filters[1] = f2 - lr * df2
    return loss


# ------------------------------------------------------------------ graphjit
def cnn_loss(ek, x, f1, f2):
    h1 = ek.nn.relu(ek.nn.conv2d(x, f1, 1, "SAME"))
    p1 = ek.nn.max_pool2d(h1, 2, 2, "VALID")
    h2 = ek.nn.relu(ek.nn.conv2d(p1, f2, 1, "SAME"))
    return ek.reduce_mean(ek.square(h2))


def make_cnn_step(ek, variables, lr=float(LR)):
    """The graphjit step: GradientTape, then SGD on both filters; returns the loss."""
    opt = ek.optimizers.SGD(lr)

    def step(x):
        with ek.GradientTape() as tape:
            loss = cnn_loss(ek, x, *variables)
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss
    return step
