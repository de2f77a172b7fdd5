"""Convolution and pooling layers (channels last, NHWC): Conv2D (kernel HWIO), MaxPooling2D,
AveragePooling2D, GlobalAveragePooling2D, GlobalMaxPooling2D."""
from __future__ import annotations

from ...ops import nn as _nn
from ...ops import reduction as _red
from .. import activations
from .base import Layer


def _pair(value, what, layer):
    if isinstance(value, int):
        return (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2:
        raise ValueError(f"{layer}: {what} must be an int or a pair of ints, got {value}")
    return value


def _padding(padding, layer):
    p = str(padding).lower()
    if p not in ("valid", "same"):
        raise ValueError(f"{layer}: padding must be 'valid' or 'same', got {padding!r}")
    return p


def _channels_last(data_format, layer):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format='channels_last' (NHWC) is supported, got {data_format!r}")


class Conv2D(Layer):
    """2-D convolution, NHWC input, kernel of shape (kh, kw, in_channels, filters)."""

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid", data_format=None,
                 dilation_rate=(1, 1), activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        _channels_last(data_format, "Conv2D")
        self.filters = int(filters)
        self.kernel_size = _pair(kernel_size, "kernel_size", "Conv2D")
        self.strides = _pair(strides, "strides", "Conv2D")
        self.dilation_rate = _pair(dilation_rate, "dilation_rate", "Conv2D")
        self.padding = _padding(padding, "Conv2D")
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer

    def build(self, input_shape):
        if len(input_shape) != 4 or input_shape[-1] is None:
            raise ValueError(f"Conv2D {self.name!r}: expects inputs (batch, height, width, channels) with known "
                             f"channels, got shape {input_shape}")
        self.kernel = self.add_weight(self.kernel_size + (input_shape[-1], self.filters), self.kernel_initializer,
                                      name="kernel", regularizer=self.kernel_regularizer)
        self.bias = self.add_weight((self.filters,), self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs):
        y = _nn.conv2d(inputs, self.kernel, list(self.strides), self.padding.upper(),
                       dilations=list(self.dilation_rate))
        if self.bias is not None:
            y = _nn.bias_add(y, self.bias)
        return self.activation(y)


class _Pooling2D(Layer):
    def __init__(self, pool_size=(2, 2), strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        name = type(self).__name__
        _channels_last(data_format, name)
        self.pool_size = _pair(pool_size, "pool_size", name)
        self.strides = _pair(strides, "strides", name) if strides is not None else self.pool_size
        self.padding = _padding(padding, name)

    def call(self, inputs):
        return self._pool(inputs, list(self.pool_size), list(self.strides), self.padding.upper())


class MaxPooling2D(_Pooling2D):
    _pool = staticmethod(_nn.max_pool2d)


class AveragePooling2D(_Pooling2D):
    _pool = staticmethod(_nn.avg_pool2d)


class _GlobalPooling2D(Layer):
    def __init__(self, data_format=None, keepdims=False, **kwargs):
        super().__init__(**kwargs)
        _channels_last(data_format, type(self).__name__)
        self.keepdims = keepdims

    def call(self, inputs):
        return self._reduce(inputs, axis=[1, 2], keepdims=self.keepdims)


class GlobalAveragePooling2D(_GlobalPooling2D):
    _reduce = staticmethod(_red.reduce_mean)


class GlobalMaxPooling2D(_GlobalPooling2D):
    _reduce = staticmethod(_red.reduce_max)
