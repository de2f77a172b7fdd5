"""2-D max and average pooling (NHWC) with their gradient primitives.

Kernels never loop over pixels, only over the kh * kw window offsets (the
strided slabs of `windows.py`); padding elements never win a max and are not
counted by an average.  The max-pool gradient routes each window's gradient
to its first maximum in row-major window order, as TensorFlow's CPU kernel
does.  For non-overlapping windows (ksize == strides, no padding: the common
2x2/2 case) MaxPoolGrad and MaxPoolGradGrad need no argmax: the input is
viewed as [N, oh, kh, ow, kw, C] blocks, compared once against the window
maxima, ties are cut to the first maximum with one boolean op per offset, and
values are selected through an integer view (an exact `where`: no 0 * inf).
Windows holding NaN take the general argmax path, so both paths agree.  With
numba installed, a big MaxPoolGrad over such windows is one compiled pass
(`eager.native`: the same routing, the same bits).  Big tensors run in batch
chunks on both cores (`eager.parallel`), forward and gradient.

Gradient primitives close under differentiation, as in TensorFlow:
MaxPoolGrad <-> MaxPoolGradGrad and AvgPoolGrad <-> AvgPool are adjoint
pairs.  `orig_input_shape` is an int32 tensor so shapes may be dynamic.

Imports: numpy, the eager core, `eager.parallel`, `eager.native`, `array.shape`, `windows`.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from .. import buffers, native, parallel
from ..registry import Spec, op
from .array import shape as _shape
from .windows import (check_format, check_rank4, crop, geometry, hw_arg, pad, padded_shape, padding_arg, sizes, slab,
                      static_out_hw)

__all__ = ["max_pool2d", "avg_pool2d"]



def _pool_geometry(x_shape, attrs, opname):
    return geometry(x_shape[1:3], attrs["ksize"], attrs["strides"], (1, 1), attrs["padding"], opname)


def _offsets(ksize):
    return [(i, j) for i in range(ksize[0]) for j in range(ksize[1])]


def _pool_slabs(x, attrs, opname, pad_value):
    """(padded input, [(offset k, slab index)], gh, gw) for a pooling op."""
    gh, gw = _pool_geometry(x.shape, attrs, opname)
    xp = pad(x, gh, gw, pad_value)
    return xp, [slab(i, j, attrs["strides"], (1, 1), gh[0], gw[0]) for i, j in _offsets(attrs["ksize"])], gh, gw


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool_kernel(x, ksize, strides, padding):
    if tuple(ksize) == tuple(strides) == (2, 2) and native.use(x.nbytes, x.dtype):
        geom = _non_overlapping(x, {"ksize": ksize, "strides": strides, "padding": padding})
        if geom is not None:
            return _max_pool_natively(x, geom)
    xp, slabs, gh, gw = _pool_slabs(x, {"ksize": ksize, "strides": strides, "padding": padding}, "MaxPool",
                                    _lowest(x.dtype))
    out = buffers.empty((x.shape[0], gh[0], gw[0], x.shape[3]), x.dtype)

    def window_max(lo, hi):
        part, src = out[lo:hi], xp[lo:hi]
        if len(slabs) == 1:
            np.copyto(part, src[slabs[0]])
            return
        np.maximum(src[slabs[0]], src[slabs[1]], out=part)     # the same maxima in the same order, no copy first
        for sl in slabs[2:]:
            np.maximum(part, src[sl], out=part)
    parallel.for_range(window_max, x.shape[0], x.nbytes + out.nbytes)
    return out


def _max_pool_natively(x, geom):
    """2x2/2 windows without padding in one compiled pass (eager.native: NumPy's maximum, the same bits)."""
    out = buffers.empty((x.shape[0], geom[0], geom[1], x.shape[3]), x.dtype)

    def window_max(lo, hi):
        native.max_pool_2x2(x[lo:hi], out[lo:hi])
    parallel.for_range(window_max, x.shape[0], x.nbytes + out.nbytes)
    return out


def _argmax_in_window(x, attrs):
    """For each output position, the flat window offset (row-major) of the first maximum."""
    xp, slabs, gh, gw = _pool_slabs(x, attrs, "MaxPoolGrad", _lowest(x.dtype))
    best = np.array(xp[slabs[0]])
    arg = np.zeros(best.shape, dtype=np.int32)
    for k, sl in enumerate(slabs[1:], 1):
        v = xp[sl]
        better = v > best
        np.copyto(best, v, where=better)
        np.copyto(arg, k, where=better)
    return arg, slabs, gh, gw


def _blocks(a, oh, ow, kh, kw):
    """[N, oh, kh, ow, kw, C] view of the top-left oh*kh x ow*kw corner of `a` (writeable if `a` is)."""
    sn, sh, sw, sc = a.strides
    return as_strided(a, (a.shape[0], oh, kh, ow, kw, a.shape[3]), (sn, sh * kh, sh, sw * kw, sw, sc))


def _non_overlapping(x, attrs):
    """(oh, ow, kh, kw) when the windows neither overlap nor are padded (ksize == strides), else None."""
    kh, kw = attrs["ksize"]
    if (kh, kw) != tuple(attrs["strides"]) or not x.size:
        return None
    gh, gw = _pool_geometry(x.shape, attrs, "MaxPoolGrad")
    if gh[1] or gh[2] or gw[1] or gw[2]:
        return None
    return gh[0], gw[0], kh, kw


def _block_maxima(xb, offsets):
    """[n, oh, ow, C] maxima of the [n, oh, kh, ow, kw, C] blocks `xb`, offset by offset in row-major order
    (`np.maximum`'s NaN and tie rules applied in that order, as MaxPool does)."""
    (i0, j0), rest = offsets[0], offsets[1:]
    if not rest:
        return np.array(xb[:, :, i0, :, j0, :])
    (i1, j1) = rest[0]
    top = np.maximum(xb[:, :, i0, :, j0, :], xb[:, :, i1, :, j1, :])
    for i, j in rest[1:]:
        np.maximum(top, xb[:, :, i, :, j, :], out=top)
    return top


def _first_max_masks(xb, offsets):
    """[((i, j), mask)] for the [n, oh, kh, ow, kw, C] blocks `xb`: `mask` [n, oh, ow, C] marks the windows
    whose first maximum sits at offset (i, j); None when some window has no maximum (it holds NaN)."""
    top = _block_maxima(xb, offsets)
    masks, seen = [], None
    for i, j in offsets:
        m = xb[:, :, i, :, j, :] == top
        if seen is None:
            seen = m.copy()
        else:
            np.greater(m, seen, out=m)              # equal to the max and no earlier offset was
            np.logical_or(seen, m, out=seen)
        masks.append(((i, j), m))
    return masks if seen.all() else None


def _bits(a):
    """`a` viewed as unsigned integers of its itemsize (multiplying by a 0/1 mask is then an exact `where`)."""
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.itemsize in (1, 2, 4, 8) else None


def _route_to_first_max(x, dy, geom):
    """MaxPoolGrad for non-overlapping windows: dy routed to each window's first maximum, or None (NaN)."""
    oh, ow, kh, kw = geom
    offsets = _offsets((kh, kw))
    dx = buffers.zeros(x.shape, dy.dtype) if x.shape[1] != oh * kh or x.shape[2] != ow * kw else \
        buffers.empty(x.shape, dy.dtype)
    xb, blocks, dy_bits = _blocks(x, oh, ow, kh, kw), _bits(_blocks(dx, oh, ow, kh, kw)), _bits(dy)
    ok = []

    def route(lo, hi):
        masks = _first_max_masks(xb[lo:hi], offsets)
        if masks is None:
            ok.append(False)
            return
        for (i, j), m in masks:
            np.multiply(m, dy_bits[lo:hi], out=blocks[lo:hi, :, i, :, j, :])
    parallel.for_range(route, x.shape[0], 2 * (x.nbytes + dy.nbytes))
    return None if ok else dx


def _route_natively(x, dy, geom, relu=False):
    """MaxPoolGrad for non-overlapping windows in one compiled pass (eager.native: the same bits, NaN too);
    `relu`: of relu(x), times relu's gradient (ReluMaxPoolGrad)."""
    oh, ow, kh, kw = geom
    covered = x.shape[1] == oh * kh and x.shape[2] == ow * kw
    dx = buffers.empty(x.shape, dy.dtype) if covered else buffers.zeros(x.shape, dy.dtype)

    def route(lo, hi):
        native.max_pool_grad(x[lo:hi], dy[lo:hi], dx[lo:hi], kh, kw, relu)
    parallel.for_range(route, x.shape[0], 2 * (x.nbytes + dy.nbytes))
    return dx


def _max_pool_grad_kernel(x, y, dy, ksize, strides, padding):
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    geom = _non_overlapping(x, attrs) if _bits(dy) is not None else None
    if geom is not None and x.dtype == dy.dtype and native.use(x.nbytes + dy.nbytes, x.dtype):
        return _route_natively(x, dy, geom)
    if geom is not None:
        dx = _route_to_first_max(x, dy, geom)
        if dx is not None:
            return dx
    arg, slabs, gh, gw = _argmax_in_window(x, attrs)
    dxp = np.zeros(padded_shape(x.shape, gh, gw), dtype=dy.dtype)
    for k, sl in enumerate(slabs):
        dxp[sl] += np.where(arg == k, dy, 0)
    return crop(dxp, gh, gw)


def _max_pool_grad_grad_kernel(x, y, g, ksize, strides, padding):
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    geom = _non_overlapping(x, attrs) if _bits(g) is not None else None
    masks = _first_max_masks(_blocks(x, *geom), _offsets(geom[2:])) if geom is not None else None
    if masks is not None:
        oh, ow, kh, kw = geom
        blocks = _bits(_blocks(g, oh, ow, kh, kw))
        out = np.zeros((g.shape[0], oh, ow, g.shape[3]), blocks.dtype)
        for (i, j), m in masks:             # exactly one mask holds each window: OR-ing picks its value
            np.bitwise_or(out, np.multiply(m, blocks[:, :, i, :, j, :], dtype=out.dtype), out=out)
        return out.view(g.dtype)
    arg, slabs, gh, gw = _argmax_in_window(x, attrs)
    gp = pad(g, gh, gw)
    out = np.zeros(arg.shape, dtype=g.dtype)
    for k, sl in enumerate(slabs):
        out += np.where(arg == k, gp[sl], 0)
    return out


def _avg_counts(h, w, attrs):
    """Non-padding elements per window, [1, oh, ow, 1]."""
    ones, slabs, _, _ = _pool_slabs(np.ones((1, h, w, 1)), attrs, "AvgPool", 0.0)
    return sum(ones[sl] for sl in slabs)


def _avg_pool_kernel(x, ksize, strides, padding):
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    xp, slabs, _, _ = _pool_slabs(x, attrs, "AvgPool", 0)
    total = np.array(xp[slabs[0]])
    for sl in slabs[1:]:
        total += xp[sl]
    return (total / _avg_counts(x.shape[1], x.shape[2], attrs)).astype(x.dtype, copy=False)


def _avg_pool_grad_kernel(orig_shape, dy, ksize, strides, padding):
    attrs = {"ksize": ksize, "strides": strides, "padding": padding}
    x_shape = tuple(int(d) for d in orig_shape)
    gh, gw = _pool_geometry(x_shape, attrs, "AvgPoolGrad")
    share = (dy / _avg_counts(x_shape[1], x_shape[2], attrs)).astype(dy.dtype, copy=False)
    dxp = np.zeros(padded_shape(x_shape, gh, gw), dtype=dy.dtype)
    for i, j in _offsets(ksize):
        dxp[slab(i, j, strides, (1, 1), gh[0], gw[0])] += share
    return crop(dxp, gh, gw)


def _infer_pool(specs, attrs):
    x = specs[0]
    check_rank4("pool", "input (NHWC)", x.shape)
    if x.shape is None:
        return [Spec(None, x.dtype)]
    attrs2 = {"strides": attrs["strides"], "padding": attrs["padding"], "dilations": (1, 1)}
    oh, ow = static_out_hw(x.shape, attrs["ksize"], attrs2, "pool")
    return [Spec((x.shape[0], oh, ow, x.shape[3]), x.dtype)]


def _g_max_pool(op, dy):
    return [execute(MAX_POOL_GRAD, (op.inputs[0], op.outputs[0], dy), op.attrs)]


MAX_POOL = op("MaxPool", _max_pool_kernel, _infer_pool, _g_max_pool)
MAX_POOL_GRAD = op("MaxPoolGrad", _max_pool_grad_kernel, lambda s, a: [Spec(s[0].shape, s[2].dtype)],
                   lambda op, g: [None, None, execute(MAX_POOL_GRAD_GRAD, (op.inputs[0], op.inputs[1], g),
                                                      op.attrs)],
                   doc="Route dy (pool-shaped) to the first max of each window; inputs (x, y, dy).")
MAX_POOL_GRAD_GRAD = op("MaxPoolGradGrad", _max_pool_grad_grad_kernel, lambda s, a: [Spec(s[1].shape, s[2].dtype)],
                        lambda op, g: [None, None, execute(MAX_POOL_GRAD, (op.inputs[0], op.inputs[1], g),
                                                           op.attrs)],
                        doc="Pick g (input-shaped) at the first max of each window; inputs (x, y, g).")
AVG_POOL = op("AvgPool", _avg_pool_kernel, _infer_pool,
              lambda op, dy: [execute(AVG_POOL_GRAD, (_shape(op.inputs[0]), dy), op.attrs)])
AVG_POOL_GRAD = op("AvgPoolGrad", _avg_pool_grad_kernel, lambda s, a: [Spec(sizes(s[0]), s[1].dtype)],
                   lambda op, g: [None, execute(AVG_POOL, (g,), op.attrs)],
                   doc="Spread dy evenly over each window; inputs (orig_input_shape, dy).")


def _pool(opdef, input, ksize, strides, padding, data_format, name):
    check_format(data_format, opdef.name)
    x = convert_to_tensor(input)
    check_rank4(opdef.name, "input (NHWC)", x.shape.dims)
    if not x.dtype.is_numeric or (opdef is AVG_POOL and not x.dtype.is_floating):
        raise InvalidArgumentError(f"{opdef.name}: unsupported input dtype {x.dtype.name}", op_name=opdef.name)
    attrs = {"ksize": hw_arg(ksize, "ksize", opdef.name), "strides": hw_arg(strides, "strides", opdef.name),
             "padding": padding_arg(padding, opdef.name, allow_explicit=False)}
    _infer_pool([Spec(x.shape.dims, x.dtype)], attrs)
    return execute(opdef, (x,), attrs, name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Max over ksize windows of NHWC `input` (padding elements never win)."""
    return _pool(MAX_POOL, input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Mean over ksize windows of NHWC `input` (padding elements are not counted)."""
    return _pool(AVG_POOL, input, ksize, strides, padding, data_format, name)
