"""2-D convolution (NHWC input, HWIO filters) and its backprop primitives.

The kernels compute the geometry (`windows.py`: TensorFlow's 'SAME'/'VALID'
rules, or explicit padding `[[0, 0], [top, bottom], [left, right], [0, 0]]`)
and hand the arithmetic to `conv_algorithms.py`, whose cost model picks an
algorithm per shape (im2col GEMM, per-tap matmuls, col2im, transposed
convolution); every algorithm computes the same sums.

Gradient primitives close under differentiation, as in TensorFlow:
Conv2DBackpropInput/Conv2DBackpropFilter are linear in their tensor inputs.
Size inputs (`input_sizes`, `filter_sizes`) are int32 tensors so shapes may
be dynamic in graphs.  Gradient rules skip inputs nobody needs
(`skip_input_indices`): a first layer's input gradient is never computed.
Pooling lives in `nn_pool.py`.

Imports: numpy, the eager core, `array.shape` (size inputs), `windows`,
`conv_algorithms`.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import int32
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from . import conv_algorithms as algos
from .array import shape as _shape
from .windows import check_format, check_rank4, geometry, hw_arg, padding_arg, sizes, static_out_hw

__all__ = ["conv2d", "conv2d_transpose"]


# ------------------------------------------------------------------ Conv2D
def _conv_geometry(x_shape, f_shape, attrs, opname):
    return geometry(x_shape[1:3], f_shape[:2], attrs["strides"], attrs["dilations"], attrs["padding"], opname)


def _choose(kind, x_shape, f_shape, gh, gw, strides):
    return algos.choose(kind, x_shape[0], f_shape[2], f_shape[3], f_shape[0], f_shape[1], gh[0], gw[0],
                        x_shape[1], x_shape[2], tuple(strides))


def _conv2d_kernel(x, f, strides, padding, dilations):
    attrs = {"strides": strides, "padding": padding, "dilations": dilations}
    gh, gw = _conv_geometry(x.shape, f.shape, attrs, "Conv2D")
    if x.shape[3] != f.shape[2]:
        raise InvalidArgumentError(f"Conv2D: input depth {x.shape[3]} does not match filter in_channels "
                                   f"{f.shape[2]} (input {list(x.shape)}, filter {list(f.shape)})", op_name="Conv2D")
    if not x.size or not f.size or not gh[0] or not gw[0]:
        return np.zeros((x.shape[0], gh[0], gw[0], f.shape[3]), dtype=x.dtype)
    name = _choose("forward", x.shape, f.shape, gh, gw, strides)
    return algos.forward(name, x, f, gh[0], gw[0], strides, dilations, pad=((gh[1], gw[1]), (gh[2], gw[2])),
                         keep=True)


def _conv2d_input_kernel(input_sizes, f, dy, strides, padding, dilations):
    x_shape = tuple(int(d) for d in input_sizes)
    gh, gw = _conv_geometry(x_shape, f.shape, {"strides": strides, "padding": padding, "dilations": dilations},
                            "Conv2DBackpropInput")
    if not dy.size or not f.size:
        return np.zeros(x_shape, dtype=dy.dtype)
    name = _choose("input", x_shape, f.shape, gh, gw, strides)
    return algos.backprop_input(name, x_shape, gh, gw, f, dy, strides, dilations)


def _conv2d_filter_kernel(x, filter_sizes, dy, strides, padding, dilations):
    f_shape = tuple(int(d) for d in filter_sizes)
    gh, gw = _conv_geometry(x.shape, f_shape, {"strides": strides, "padding": padding, "dilations": dilations},
                            "Conv2DBackpropFilter")
    if not dy.size or not x.size:
        return np.zeros(f_shape, dtype=x.dtype)
    name = _choose("filter", x.shape, f_shape, gh, gw, strides)
    return algos.backprop_filter(name, x, f_shape, dy, strides, dilations, pad=((gh[1], gw[1]), (gh[2], gw[2])))


def _infer_conv2d(specs, attrs):
    x, f = specs
    check_rank4("Conv2D", "input (NHWC)", x.shape)
    check_rank4("Conv2D", "filters (HWIO)", f.shape)
    if x.dtype is not f.dtype:
        raise InvalidArgumentError(f"Conv2D: input ({x.dtype.name}) and filters ({f.dtype.name}) must have the "
                                   f"same dtype", op_name="Conv2D")
    if x.shape is None or f.shape is None:
        return [Spec(None, x.dtype)]
    if None not in (x.shape[3], f.shape[2]) and x.shape[3] != f.shape[2]:
        raise InvalidArgumentError(f"Conv2D: input depth {x.shape[3]} does not match filter in_channels "
                                   f"{f.shape[2]} (input {list(x.shape)}, filter {list(f.shape)})", op_name="Conv2D")
    oh, ow = static_out_hw(x.shape, f.shape[:2], attrs, "Conv2D")
    return [Spec((x.shape[0], oh, ow, f.shape[3]), x.dtype)]


def _infer_conv_input(specs, attrs):
    return [Spec(sizes(specs[0]), specs[1].dtype)]


def _infer_conv_filter(specs, attrs):
    return [Spec(sizes(specs[1]), specs[0].dtype)]


def _g_conv2d(op, dy):
    x, f = op.inputs
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else execute(CONV2D_INPUT, (_shape(x), f, dy), op.attrs),
            None if 1 in skip else execute(CONV2D_FILTER, (x, _shape(f), dy), op.attrs)]


def _g_conv2d_input(op, g):
    _, f, dy = op.inputs
    skip = getattr(op, "skip_input_indices", ())
    return [None, None if 1 in skip else execute(CONV2D_FILTER, (g, _shape(f), dy), op.attrs),
            None if 2 in skip else execute(CONV2D, (g, f), op.attrs)]


def _g_conv2d_filter(op, g):
    x, _, dy = op.inputs
    skip = getattr(op, "skip_input_indices", ())
    return [None if 0 in skip else execute(CONV2D_INPUT, (_shape(x), g, dy), op.attrs), None,
            None if 2 in skip else execute(CONV2D, (x, g), op.attrs)]


CONV2D = op("Conv2D", _conv2d_kernel, _infer_conv2d, _g_conv2d)
CONV2D_INPUT = op("Conv2DBackpropInput", _conv2d_input_kernel, _infer_conv_input, _g_conv2d_input,
                  doc="Gradient of Conv2D wrt its input (= transposed convolution); inputs (input_sizes, filter, dy).")
CONV2D_FILTER = op("Conv2DBackpropFilter", _conv2d_filter_kernel, _infer_conv_filter, _g_conv2d_filter,
                   doc="Gradient of Conv2D wrt its filter; inputs (input, filter_sizes, dy).")


def _float4d(opname, what, x):
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"{opname}: {what} must be a floating-point tensor, got {t.dtype.name}",
                                   op_name=opname)
    check_rank4(opname, what, t.shape.dims)
    return t


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):
    """2-D convolution of NHWC `input` with HWIO `filters`."""
    check_format(data_format, "Conv2D")
    x = _float4d("Conv2D", "input (NHWC)", input)
    f = _float4d("Conv2D", "filters (HWIO)", filters)
    attrs = {"strides": hw_arg(strides, "strides", "Conv2D"), "padding": padding_arg(padding, "Conv2D"),
             "dilations": hw_arg(dilations, "dilations", "Conv2D", default=(1, 1))}
    _infer_conv2d([Spec(x.shape.dims, x.dtype), Spec(f.shape.dims, f.dtype)], attrs)
    return execute(CONV2D, (x, f), attrs, name)


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC", dilations=None,
                     name=None):
    """Transposed convolution: the gradient of `conv2d` wrt its input (filters HW, out_channels, in_channels)."""
    check_format(data_format, "Conv2DBackpropInput")
    dy = _float4d("Conv2DBackpropInput", "input", input)
    f = _float4d("Conv2DBackpropInput", "filters", filters)
    sizes = output_shape if hasattr(output_shape, "_is_symbolic") else \
        convert_to_tensor(np.asarray(output_shape, dtype=np.int32).reshape(-1), dtype=int32)
    attrs = {"strides": hw_arg(strides, "strides", "Conv2DBackpropInput"),
             "padding": padding_arg(padding, "Conv2DBackpropInput"),
             "dilations": hw_arg(dilations, "dilations", "Conv2DBackpropInput", default=(1, 1))}
    return execute(CONV2D_INPUT, (sizes, f, dy), attrs, name)
