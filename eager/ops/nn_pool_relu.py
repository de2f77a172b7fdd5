"""`ReluMaxPoolGrad`: the gradient of max-pool(relu(z)) with respect to z, in one kernel, from z itself.

A network's `max_pool(relu(z))` differentiates into `ReluGrad(MaxPoolGrad(h, y, dy), h)` with
`h = relu(z)`: the pool gradient writes an input-sized array, and the relu gradient reads it and h
again and writes another.  The `pool_activation` graph pass (graph_runtime/passes/pool_activation.py)
pools z first (relu commutes with a max: `relu(max_pool(z))` has the same bits) and replaces that pair
by this op, so h is never made and the relu gradient is applied to the pooled gradient, four times
smaller for 2x2 windows.

`ReluMaxPoolGrad(z, y, dy)` is *defined* as `ReluGrad(MaxPoolGrad(relu(z), y, dy), relu(z))`, and its
kernel gives exactly those bits, NaN and signed zeros included (tests/eager/test_pool_relu.py):

- non-overlapping windows (ksize == strides, no padding), where MaxPoolGrad would route through
  masks: the window maxima of relu(z) are relu of z's window maxima; each window's gradient is
  multiplied by `(maximum > 0)` once (the relu gradient at the one position that receives it: every
  other position receives +0, which the relu gradient keeps +0) and routed to the first offset where
  z equals that maximum, or to the first offset when the maximum is 0 (then all of relu(z) ties at
  0).  A window holding a NaN matches nothing: then the whole kernel runs the composition itself;
- the same windows where MaxPoolGrad would run natively (`eager.native`): one compiled pass with the
  native kernel's scan on relu's values;
- anything else (overlapping or padded windows, other dtypes): the composition, computed as written.

Gradient: linear in dy, like MaxPoolGrad (`MaxPoolGradGrad` of the relu gradient); none for z and y.

Imports: numpy, the eager core, `eager.buffers`, `eager.native`, `eager.parallel`, `nn_pool`, `relu_kernels`.
"""
from __future__ import annotations

import numpy as np

from .. import buffers, native, parallel
from ..dispatch import execute
from ..registry import get, op
from .relu_kernels import relu
from .nn_pool import (MAX_POOL_GRAD, MAX_POOL_GRAD_GRAD, _bits, _block_maxima, _blocks, _max_pool_grad_kernel,
                      _non_overlapping, _offsets, _route_natively)

__all__: list = []


def _relu(a):
    return relu(a) if type(a) is np.ndarray else np.maximum(a, np.zeros((), a.dtype))   # Relu's arithmetic


def _composition(z, y, dy, ksize, strides, padding):
    h = _relu(z)
    dh = _max_pool_grad_kernel(h, y, dy, ksize, strides, padding)
    return np.multiply(dh, h > 0, dtype=dh.dtype)       # ReluGrad's kernel


def _route(z, dy, geom):
    """The mask path for non-overlapping windows (see the module docstring), or None when a window holds NaN."""
    oh, ow, kh, kw = geom
    offsets = _offsets((kh, kw))
    covered = z.shape[1] == oh * kh and z.shape[2] == ow * kw
    dx = buffers.empty(z.shape, dy.dtype) if covered else buffers.zeros(z.shape, dy.dtype)
    zb, blocks = _blocks(z, oh, ow, kh, kw), _bits(_blocks(dx, oh, ow, kh, kw))
    failed = []

    def route(lo, hi):
        part = zb[lo:hi]
        top = _relu(_block_maxima(part, offsets))       # = the window maxima of relu(z), bit for bit
        grad = _bits(np.multiply(dy[lo:hi], top > 0, dtype=dy.dtype))
        masks, seen = [], None
        for i, j in offsets:
            m = part[:, :, i, :, j, :] == top
            if seen is None:
                np.logical_or(m, top == 0, out=m)        # relu(z) is all zeros there: its first offset wins
                seen = m.copy()
            else:
                np.greater(m, seen, out=m)              # equal to the maximum and no earlier offset was
                np.logical_or(seen, m, out=seen)
            masks.append(((i, j), m))
        if not seen.all():
            failed.append(True)
            return
        for (i, j), m in masks:
            np.multiply(m, grad, out=blocks[lo:hi, :, i, :, j, :])
    parallel.for_range(route, z.shape[0], 2 * (z.nbytes + dy.nbytes))
    return None if failed else dx


def _relu_max_pool_grad_kernel(z, y, dy, ksize, strides, padding):
    # the same choice of path as MaxPoolGrad on relu(z) (same shapes and dtypes), so the same bits
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    geom = _non_overlapping(z, attrs) if _bits(dy) is not None and z.dtype == dy.dtype else None
    if geom is not None and native.use(z.nbytes + dy.nbytes, z.dtype):
        return _route_natively(z, dy, geom, relu=True)
    if geom is not None:
        dx = _route(z, dy, geom)
        if dx is not None:
            return dx
    return _composition(z, y, dy, ksize, strides, padding)


def _g_relu_max_pool_grad(op, g):
    # linear in dy, like MaxPoolGrad: MaxPoolGradGrad of relu's gradient (Relu and ReluGrad by name: they
    # are declared in nn.py, above this module)
    z, y, _ = op.inputs
    h = execute(get("Relu"), (z,), {})
    return [None, None, execute(MAX_POOL_GRAD_GRAD, (h, y, execute(get("ReluGrad"), (g, h), {})), op.attrs)]


RELU_MAX_POOL_GRAD = op("ReluMaxPoolGrad", _relu_max_pool_grad_kernel, MAX_POOL_GRAD.infer, _g_relu_max_pool_grad,
                        doc="ReluGrad(MaxPoolGrad(relu(z), y, dy), relu(z)), from z; inputs (z, y, dy).")
