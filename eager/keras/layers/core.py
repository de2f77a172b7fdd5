"""Core layers: Dense, Flatten, Reshape, Activation, Dropout, InputLayer, and the merging layers
(Concatenate, Add, Subtract, Multiply, Average, Maximum, Minimum).

Each computes what Keras 3 computes from the same weights (tests compare with NumPy).
"""
from __future__ import annotations

import numpy as np

from ...ops import array as _array
from ...ops import contraction as _contraction
from ...ops import linalg as _linalg
from ...ops import manipulation as _manip
from ...ops import math as _m
from ...ops import nn as _nn
from .. import activations
from .base import Layer


class InputLayer(Layer):
    """The layer behind `Input`: no weights, passes its input through."""

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None):
        super().__init__(name=name, dtype=dtype)
        self.batch_shape = (batch_size,) + tuple(shape or ())
        self._output_shape = self.batch_shape
        self.built = True

    def call(self, inputs):
        return inputs


class Dense(Layer):
    """`activation(inputs @ kernel + bias)` over the last axis; kernel (in, units)."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        if int(units) <= 0:
            raise ValueError(f"Dense: units must be a positive integer, got {units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer

    def build(self, input_shape):
        last = input_shape[-1]
        if last is None:
            raise ValueError(f"Dense {self.name!r}: the last dimension of the input must be known, got "
                             f"shape {input_shape}")
        self.kernel = self.add_weight((last, self.units), self.kernel_initializer, name="kernel",
                                      regularizer=self.kernel_regularizer)
        self.bias = self.add_weight((self.units,), self.bias_initializer, name="bias",
                                    regularizer=self.bias_regularizer) if self.use_bias else None

    def call(self, inputs):
        if inputs.shape.rank == 2:
            y = _linalg.matmul(inputs, self.kernel)
        else:
            y = _contraction.tensordot(inputs, self.kernel, [[inputs.shape.rank - 1], [0]])
        if self.bias is not None:
            y = _nn.bias_add(y, self.bias)
        return self.activation(y)


class Activation(Layer):
    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs):
        return self.activation(inputs)


def _known_tail(layer, shape):
    tail = shape[1:]
    if any(d is None for d in tail):
        raise ValueError(f"{type(layer).__name__} {layer.name!r}: needs the non-batch dimensions of its input, "
                         f"got shape {tuple(shape)}")
    return [int(d) for d in tail]


class Flatten(Layer):
    """(batch, d1, d2, ...) -> (batch, d1*d2*...)."""

    def call(self, inputs):
        tail = _known_tail(self, inputs.shape.as_list())
        return _array.reshape(inputs, [-1, int(np.prod(tail))])


class Reshape(Layer):
    """Reshape the non-batch dimensions to `target_shape` (one entry may be -1)."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError(f"Reshape: at most one -1 in target_shape, got {self.target_shape}")

    def call(self, inputs):
        n = int(np.prod(_known_tail(self, inputs.shape.as_list())))
        target = list(self.target_shape)
        if -1 in target:
            known = int(np.prod([d for d in target if d != -1]))
            if known == 0 or n % known:
                raise ValueError(f"Reshape {self.name!r}: cannot reshape {n} values per sample to {self.target_shape}")
            target[target.index(-1)] = n // known
        if int(np.prod(target)) != n:
            raise ValueError(f"Reshape {self.name!r}: cannot reshape input of shape {inputs.shape} "
                             f"({n} values per sample) to {self.target_shape}")
        return _array.reshape(inputs, [-1] + target)


class Dropout(Layer):
    """Zero each unit with probability `rate` and scale the rest by 1/(1-rate), only when training."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate < 1:
            raise ValueError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs, training=None):
        if not training or self.rate == 0:
            return inputs
        return _nn.dropout(inputs, self.rate, noise_shape=self.noise_shape, seed=self.seed)


class _Merge(Layer):
    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"{type(self).__name__} {self.name!r} needs a list of at least 2 inputs, got "
                             f"{type(inputs).__name__}")
        out = inputs[0]
        for x in inputs[1:]:
            out = self._merge(out, x)
        return self._finish(out, len(inputs))

    def _finish(self, out, n):
        return out


class Add(_Merge):
    _merge = staticmethod(_m.add)


class Subtract(_Merge):
    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"Subtract {self.name!r} needs a list of exactly 2 inputs")
        return _m.subtract(inputs[0], inputs[1])


class Multiply(_Merge):
    _merge = staticmethod(_m.multiply)


class Maximum(_Merge):
    _merge = staticmethod(_m.maximum)


class Minimum(_Merge):
    _merge = staticmethod(_m.minimum)


class Average(_Merge):
    _merge = staticmethod(_m.add)

    def _finish(self, out, n):
        return _m.divide(out, float(n))


class Concatenate(Layer):
    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"Concatenate {self.name!r} needs a list of at least 2 inputs")
        return _manip.concat(list(inputs), axis=self.axis)
