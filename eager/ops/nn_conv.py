"""2-D convolution and pooling (NHWC), with their backprop primitives.

Kernels never loop over pixels, only over the kh * kw window offsets: for
offset (i, j), `_slab` is the strided slice [N, out_h, out_w, C] of the padded
input that meets filter tap (i, j), so Conv2D is a sum of kh * kw batched
matmuls (measured faster than one im2col `tensordot`, much faster for 1x1 and
strided convolutions), the input backprop is strided `+=` of whole slabs,
and the filter backprop is one im2col matmul over a read-only strided view.  The pools likewise combine the kh * kw slabs (max, sum, first-argmax).  Geometry follows TensorFlow: 'VALID' gives ceil((in - eff_k + 1) /
stride) outputs, 'SAME' gives ceil(in / stride) with the extra padding at the
end; explicit padding `[[0, 0], [top, bottom], [left, right], [0, 0]]` is
accepted by conv2d.  AvgPool divides by the number of non-padding elements.

Gradient primitives close under differentiation, as in TensorFlow:
Conv2DBackpropInput/Conv2DBackpropFilter are linear in their tensor inputs,
MaxPoolGrad <-> MaxPoolGradGrad and AvgPoolGrad <-> AvgPool are adjoint pairs.
Size inputs (`input_sizes`, `filter_sizes`, `orig_input_shape`) are int32
tensors so shapes may be dynamic in graphs.

Imports: numpy and the eager core (`array.shape` for the size inputs).
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import int32
from ..errors import InvalidArgumentError, UnimplementedError
from ..registry import Spec, op
from .array import shape as _shape

__all__ = ["conv2d", "conv2d_transpose", "max_pool2d", "avg_pool2d"]


# ------------------------------------------------------------------ geometry
def _dim_geometry(size, k, stride, dilation, padding, opname):
    """(out, pad_before, pad_after) along one spatial dimension; padding is 'SAME', 'VALID' or a pair."""
    eff = (k - 1) * dilation + 1
    if isinstance(padding, tuple):
        before, after = padding
        out = (size + before + after - eff) // stride + 1
    elif padding == "VALID":
        before = after = 0
        out = (size - eff + stride) // stride
    else:
        out = (size + stride - 1) // stride
        total = max((out - 1) * stride + eff - size, 0)
        before, after = total // 2, total - total // 2
    if out < 0:
        raise InvalidArgumentError(f"{opname}: computed output size would be negative: input dimension {size}, "
                                   f"window {k} (dilation {dilation}), stride {stride}, padding {padding!r}",
                                   op_name=opname)
    return out, before, after


def _geometry(hw, kernel_hw, strides, dilations, padding, opname):
    ph, pw = padding if isinstance(padding, tuple) else (padding, padding)
    return (_dim_geometry(hw[0], kernel_hw[0], strides[0], dilations[0], ph, opname),
            _dim_geometry(hw[1], kernel_hw[1], strides[1], dilations[1], pw, opname))


def _pad(x, gh, gw, value=0):
    if gh[1] == gh[2] == gw[1] == gw[2] == 0:
        return x
    return np.pad(x, ((0, 0), (gh[1], gh[2]), (gw[1], gw[2]), (0, 0)), constant_values=value)


def _slab(i, j, strides, dilations, oh, ow):
    """Index of the [N, oh, ow, C] slice of the padded input that meets window offset (i, j)."""
    hi, wj = i * dilations[0], j * dilations[1]
    return (slice(None), slice(hi, hi + strides[0] * (oh - 1) + 1, strides[0]),
            slice(wj, wj + strides[1] * (ow - 1) + 1, strides[1]), slice(None))


def _crop(xp, gh, gw):
    return xp[:, gh[1]:xp.shape[1] - gh[2], gw[1]:xp.shape[2] - gw[2], :]


def _padded_shape(shape, gh, gw):
    return (shape[0], shape[1] + gh[1] + gh[2], shape[2] + gw[1] + gw[2], shape[3])


# ------------------------------------------------------------------ Conv2D
def _conv_geometry(x_shape, f_shape, attrs, opname):
    return _geometry(x_shape[1:3], f_shape[:2], attrs["strides"], attrs["dilations"], attrs["padding"], opname)


def _conv2d_kernel(x, f, strides, padding, dilations):
    attrs = {"strides": strides, "padding": padding, "dilations": dilations}
    gh, gw = _conv_geometry(x.shape, f.shape, attrs, "Conv2D")
    if x.shape[3] != f.shape[2]:
        raise InvalidArgumentError(f"Conv2D: input depth {x.shape[3]} does not match filter in_channels "
                                   f"{f.shape[2]} (input {list(x.shape)}, filter {list(f.shape)})", op_name="Conv2D")
    xp = _pad(x, gh, gw)
    out = np.zeros((x.shape[0], gh[0], gw[0], f.shape[3]), dtype=x.dtype)
    if out.size and x.shape[3]:
        for i in range(f.shape[0]):
            for j in range(f.shape[1]):
                out += xp[_slab(i, j, strides, dilations, gh[0], gw[0])] @ f[i, j]
    return out


def _conv2d_input_kernel(input_sizes, f, dy, strides, padding, dilations):
    x_shape = tuple(int(d) for d in input_sizes)
    gh, gw = _conv_geometry(x_shape, f.shape, {"strides": strides, "padding": padding, "dilations": dilations},
                            "Conv2DBackpropInput")
    dxp = np.zeros(_padded_shape(x_shape, gh, gw), dtype=dy.dtype)
    if dy.size and f.size:
        for i in range(f.shape[0]):
            for j in range(f.shape[1]):
                dxp[_slab(i, j, strides, dilations, gh[0], gw[0])] += dy @ f[i, j].T
    return _crop(dxp, gh, gw)


def _conv2d_filter_kernel(x, filter_sizes, dy, strides, padding, dilations):
    f_shape = tuple(int(d) for d in filter_sizes)
    gh, gw = _conv_geometry(x.shape, f_shape, {"strides": strides, "padding": padding, "dilations": dilations},
                            "Conv2DBackpropFilter")
    kh, kw, c, o = f_shape
    if not dy.size or not x.size:
        return np.zeros(f_shape, dtype=x.dtype)
    # one big matmul over im2col columns (measured 3x faster here than one matmul per offset)
    xp = _pad(x, gh, gw)
    sn, sh, sw, sc = xp.strides
    windows = as_strided(xp, (xp.shape[0], gh[0], gw[0], kh, kw, c),
                         (sn, sh * strides[0], sw * strides[1], sh * dilations[0], sw * dilations[1], sc),
                         writeable=False)
    return (windows.reshape(-1, kh * kw * c).T @ dy.reshape(-1, o)).reshape(f_shape)


def _static_out_hw(x_shape, f_hw, attrs, opname):
    out = []
    for k in range(2):
        size = x_shape[1 + k]
        if size is None or f_hw[k] is None:
            out.append(None)
            continue
        pad = attrs["padding"][k] if isinstance(attrs["padding"], tuple) else attrs["padding"]
        out.append(_dim_geometry(size, f_hw[k], attrs["strides"][k], attrs["dilations"][k], pad, opname)[0])
    return out


def _check_rank4(opname, what, shape):
    if shape is not None and len(shape) != 4:
        raise InvalidArgumentError(f"{opname}: {what} must be 4-D, got shape {list(shape)}", op_name=opname)


def _infer_conv2d(specs, attrs):
    x, f = specs
    _check_rank4("Conv2D", "input (NHWC)", x.shape)
    _check_rank4("Conv2D", "filters (HWIO)", f.shape)
    if x.dtype is not f.dtype:
        raise InvalidArgumentError(f"Conv2D: input ({x.dtype.name}) and filters ({f.dtype.name}) must have the "
                                   f"same dtype", op_name="Conv2D")
    if x.shape is None or f.shape is None:
        return [Spec(None, x.dtype)]
    if None not in (x.shape[3], f.shape[2]) and x.shape[3] != f.shape[2]:
        raise InvalidArgumentError(f"Conv2D: input depth {x.shape[3]} does not match filter in_channels "
                                   f"{f.shape[2]} (input {list(x.shape)}, filter {list(f.shape)})", op_name="Conv2D")
    oh, ow = _static_out_hw(x.shape, f.shape[:2], attrs, "Conv2D")
    return [Spec((x.shape[0], oh, ow, f.shape[3]), x.dtype)]


def _sizes(spec, rank=4):
    return tuple(int(d) for d in spec.value) if spec.value is not None else (None,) * rank


def _infer_conv_input(specs, attrs):
    return [Spec(_sizes(specs[0]), specs[1].dtype)]


def _infer_conv_filter(specs, attrs):
    return [Spec(_sizes(specs[1]), specs[0].dtype)]


def _g_conv2d(op, dy):
    x, f = op.inputs
    return [execute(CONV2D_INPUT, (_shape(x), f, dy), op.attrs),
            execute(CONV2D_FILTER, (x, _shape(f), dy), op.attrs)]


def _g_conv2d_input(op, g):
    _, f, dy = op.inputs
    return [None, execute(CONV2D_FILTER, (g, _shape(f), dy), op.attrs), execute(CONV2D, (g, f), op.attrs)]


def _g_conv2d_filter(op, g):
    x, _, dy = op.inputs
    return [execute(CONV2D_INPUT, (_shape(x), g, dy), op.attrs), None, execute(CONV2D, (x, g), op.attrs)]


CONV2D = op("Conv2D", _conv2d_kernel, _infer_conv2d, _g_conv2d)
CONV2D_INPUT = op("Conv2DBackpropInput", _conv2d_input_kernel, _infer_conv_input, _g_conv2d_input,
                  doc="Gradient of Conv2D wrt its input (= transposed convolution); inputs (input_sizes, filter, dy).")
CONV2D_FILTER = op("Conv2DBackpropFilter", _conv2d_filter_kernel, _infer_conv_filter, _g_conv2d_filter,
                   doc="Gradient of Conv2D wrt its filter; inputs (input, filter_sizes, dy).")


# ------------------------------------------------------------------ argument normalisation
def _hw_arg(value, what, opname, default=None):
    """An int, [h, w] or [1, h, w, 1] argument as (h, w)."""
    if value is None:
        if default is None:
            raise InvalidArgumentError(f"{opname}: {what} must be given", op_name=opname)
        return default
    v = [int(value)] if np.ndim(value) == 0 else [int(d) for d in np.asarray(value).reshape(-1)]
    if len(v) == 1:
        v = v * 2
    elif len(v) == 4:
        if v[0] != 1 or v[3] != 1:
            raise UnimplementedError(f"{opname}: {what} along the batch and channel dimensions must be 1, got {v}",
                                     op_name=opname)
        v = v[1:3]
    elif len(v) != 2:
        raise InvalidArgumentError(f"{opname}: {what} must have 1, 2 or 4 entries, got {v}", op_name=opname)
    if min(v) < 1:
        raise InvalidArgumentError(f"{opname}: {what} must be >= 1, got {v}", op_name=opname)
    return tuple(v)


def _padding_arg(padding, opname, allow_explicit=True):
    if isinstance(padding, str):
        p = padding.upper()
        if p not in ("SAME", "VALID"):
            raise InvalidArgumentError(f"{opname}: padding must be 'SAME' or 'VALID', got {padding!r}", op_name=opname)
        return p
    if allow_explicit:
        pads = np.asarray(padding, dtype=np.int64) if padding is not None else None
        if pads is not None and pads.shape == (4, 2) and not pads[0].any() and not pads[3].any() and pads.min() >= 0:
            return ((int(pads[1, 0]), int(pads[1, 1])), (int(pads[2, 0]), int(pads[2, 1])))
    raise InvalidArgumentError(f"{opname}: padding must be 'SAME', 'VALID'"
                               f"{' or [[0, 0], [top, bottom], [left, right], [0, 0]]' if allow_explicit else ''}, "
                               f"got {padding!r}", op_name=opname)


def _check_format(data_format, opname):
    if data_format not in (None, "NHWC"):
        raise UnimplementedError(f"{opname}: only data_format='NHWC' is supported, got {data_format!r}",
                                 op_name=opname)


def _float4d(opname, what, x):
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"{opname}: {what} must be a floating-point tensor, got {t.dtype.name}",
                                   op_name=opname)
    _check_rank4(opname, what, t.shape.dims)
    return t


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):
    """2-D convolution of NHWC `input` with HWIO `filters`."""
    _check_format(data_format, "Conv2D")
    x = _float4d("Conv2D", "input (NHWC)", input)
    f = _float4d("Conv2D", "filters (HWIO)", filters)
    attrs = {"strides": _hw_arg(strides, "strides", "Conv2D"), "padding": _padding_arg(padding, "Conv2D"),
             "dilations": _hw_arg(dilations, "dilations", "Conv2D", default=(1, 1))}
    _infer_conv2d([Spec(x.shape.dims, x.dtype), Spec(f.shape.dims, f.dtype)], attrs)
    return execute(CONV2D, (x, f), attrs, name)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC", dilations=None,
                     name=None):
    """Transposed convolution: the gradient of `conv2d` wrt its input (filters HW, out_channels, in_channels)."""
    _check_format(data_format, "Conv2DBackpropInput")
    dy = _float4d("Conv2DBackpropInput", "input", input)
    f = _float4d("Conv2DBackpropInput", "filters", filters)
    sizes = output_shape if hasattr(output_shape, "_is_symbolic") else \
        convert_to_tensor(np.asarray(output_shape, dtype=np.int32).reshape(-1), dtype=int32)
    attrs = {"strides": _hw_arg(strides, "strides", "Conv2DBackpropInput"),
             "padding": _padding_arg(padding, "Conv2DBackpropInput"),
             "dilations": _hw_arg(dilations, "dilations", "Conv2DBackpropInput", default=(1, 1))}
    return execute(CONV2D_INPUT, (sizes, f, dy), attrs, name)


# ------------------------------------------------------------------ pooling
def _pool_geometry(x_shape, attrs, opname):
    return _geometry(x_shape[1:3], attrs["ksize"], attrs["strides"], (1, 1), attrs["padding"], opname)


def _offsets(ksize):
    return [(i, j) for i in range(ksize[0]) for j in range(ksize[1])]


def _pool_slabs(x, attrs, opname, pad_value):
    """(padded input, [(offset k, slab index)], gh, gw) for a pooling op."""
    gh, gw = _pool_geometry(x.shape, attrs, opname)
    xp = _pad(x, gh, gw, pad_value)
    return xp, [_slab(i, j, attrs["strides"], (1, 1), gh[0], gw[0]) for i, j in _offsets(attrs["ksize"])], gh, gw


def _lowest(dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _max_pool_kernel(x, ksize, strides, padding):
    xp, slabs, gh, gw = _pool_slabs(x, {"ksize": ksize, "strides": strides, "padding": padding}, "MaxPool",
                                    _lowest(x.dtype))
    out = np.array(xp[slabs[0]])
    for sl in slabs[1:]:
        np.maximum(out, xp[sl], out=out)
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


def _max_pool_grad_kernel(x, y, dy, ksize, strides, padding):
    arg, slabs, gh, gw = _argmax_in_window(x, {"ksize": ksize, "strides": strides, "padding": padding})
    dxp = np.zeros(_padded_shape(x.shape, gh, gw), dtype=dy.dtype)
    for k, sl in enumerate(slabs):
        dxp[sl] += np.where(arg == k, dy, 0)
    return _crop(dxp, gh, gw)


def _max_pool_grad_grad_kernel(x, y, g, ksize, strides, padding):
    arg, slabs, gh, gw = _argmax_in_window(x, {"ksize": ksize, "strides": strides, "padding": padding})
    gp = _pad(g, gh, gw)
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
    dxp = np.zeros(_padded_shape(x_shape, gh, gw), dtype=dy.dtype)
    for i, j in _offsets(ksize):
        dxp[_slab(i, j, strides, (1, 1), gh[0], gw[0])] += share
    return _crop(dxp, gh, gw)


def _infer_pool(specs, attrs):
    x = specs[0]
    _check_rank4("pool", "input (NHWC)", x.shape)
    if x.shape is None:
        return [Spec(None, x.dtype)]
    attrs2 = {"strides": attrs["strides"], "padding": attrs["padding"], "dilations": (1, 1)}
    oh, ow = _static_out_hw(x.shape, attrs["ksize"], attrs2, "pool")
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
AVG_POOL_GRAD = op("AvgPoolGrad", _avg_pool_grad_kernel, lambda s, a: [Spec(_sizes(s[0]), s[1].dtype)],
                   lambda op, g: [None, execute(AVG_POOL, (g,), op.attrs)],
                   doc="Spread dy evenly over each window; inputs (orig_input_shape, dy).")


def _pool(opdef, input, ksize, strides, padding, data_format, name):
    _check_format(data_format, opdef.name)
    x = convert_to_tensor(input)
    _check_rank4(opdef.name, "input (NHWC)", x.shape.dims)
    if not x.dtype.is_numeric or (opdef is AVG_POOL and not x.dtype.is_floating):
        raise InvalidArgumentError(f"{opdef.name}: unsupported input dtype {x.dtype.name}", op_name=opdef.name)
    attrs = {"ksize": _hw_arg(ksize, "ksize", opdef.name), "strides": _hw_arg(strides, "strides", opdef.name),
             "padding": _padding_arg(padding, opdef.name, allow_explicit=False)}
    _infer_pool([Spec(x.shape.dims, x.dtype)], attrs)
    return execute(opdef, (x,), attrs, name)


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Max over ksize windows of NHWC `input` (padding elements never win)."""
    return _pool(MAX_POOL, input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):
    """Mean over ksize windows of NHWC `input` (padding elements are not counted)."""
    return _pool(AVG_POOL, input, ksize, strides, padding, data_format, name)
