"""BatchNormalization and LayerNormalization, with Keras 3's defaults and arithmetic.

BatchNormalization: momentum 0.99, epsilon 1e-3; in training it normalizes with the batch mean
and the *biased* batch variance, and moves the moving statistics by (1 - momentum):
`moving = moving * momentum + batch * (1 - momentum)`; in inference it uses the moving ones.
LayerNormalization: epsilon 1e-3, statistics over `axis` (the last by default) per sample.
"""
from __future__ import annotations

from ...ops import array as _array
from ...ops import math as _m
from ...ops import reduction as _red
from .base import Layer


def _axes(axis, rank, layer):
    axes = [axis] if isinstance(axis, int) else list(axis)
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{layer}: axis {a} is out of range for inputs of rank {rank}")
        out.append(a % rank)
    return sorted(out)


def _param_shape(input_shape, axes, layer):
    shape = []
    for a in axes:
        if input_shape[a] is None:
            raise ValueError(f"{layer}: dimension {a} of the input must be known, got shape {input_shape}")
        shape.append(int(input_shape[a]))
    return tuple(shape)


def _broadcastable(t, axes, rank):
    """A parameter of shape [dims at `axes`] reshaped to broadcast against an input of `rank`."""
    if axes == [rank - 1]:
        return t
    shape = [1] * rank
    for i, a in enumerate(axes):
        shape[a] = t.shape.as_list()[i]
    return _array.reshape(t, shape)


def _normalize(x, mean, var, gamma, beta, epsilon):
    inv = _m.rsqrt(_m.add(var, epsilon))
    if gamma is not None:
        inv = _m.multiply(inv, gamma)
    y = _m.multiply(_m.subtract(x, mean), inv)
    return _m.add(y, beta) if beta is not None else y


class BatchNormalization(Layer):
    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 **kwargs):
        super().__init__(**kwargs)
        self.axis, self.momentum, self.epsilon = axis, float(momentum), float(epsilon)
        self.center, self.scale = center, scale
        self._inits = (gamma_initializer, beta_initializer, moving_mean_initializer, moving_variance_initializer)

    def build(self, input_shape):
        rank = len(input_shape)
        self._feature_axes = _axes(self.axis, rank, f"BatchNormalization {self.name!r}")
        shape = _param_shape(input_shape, self._feature_axes, f"BatchNormalization {self.name!r}")
        g, b, mm, mv = self._inits
        self.gamma = self.add_weight(shape, g, name="gamma") if self.scale else None
        self.beta = self.add_weight(shape, b, name="beta") if self.center else None
        self.moving_mean = self.add_weight(shape, mm, trainable=False, name="moving_mean")
        self.moving_variance = self.add_weight(shape, mv, trainable=False, name="moving_variance")

    def call(self, inputs, training=None):
        rank = inputs.shape.rank
        axes = self._feature_axes
        gamma = _broadcastable(self.gamma, axes, rank) if self.gamma is not None else None
        beta = _broadcastable(self.beta, axes, rank) if self.beta is not None else None
        if not training or not self.trainable:
            return _normalize(inputs, _broadcastable(self.moving_mean.value(), axes, rank),
                              _broadcastable(self.moving_variance.value(), axes, rank), gamma, beta, self.epsilon)
        reduce_axes = [a for a in range(rank) if a not in axes]
        mean = _red.reduce_mean(inputs, axis=reduce_axes, keepdims=True)
        var = _red.reduce_mean(_m.square(_m.subtract(inputs, mean)), axis=reduce_axes, keepdims=True)
        flat_shape = self.moving_mean.shape.as_list()
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, var)):
            batch = _array.reshape(batch, flat_shape)
            moving.assign(_m.add(_m.multiply(moving.value(), self.momentum),
                                 _m.multiply(batch, 1.0 - self.momentum)))
        return _normalize(inputs, mean, var, gamma, beta, self.epsilon)


class LayerNormalization(Layer):
    def __init__(self, axis=-1, epsilon=1e-3, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", **kwargs):
        super().__init__(**kwargs)
        self.axis, self.epsilon, self.center, self.scale = axis, float(epsilon), center, scale
        self._inits = (gamma_initializer, beta_initializer)

    def build(self, input_shape):
        self._norm_axes = _axes(self.axis, len(input_shape), f"LayerNormalization {self.name!r}")
        shape = _param_shape(input_shape, self._norm_axes, f"LayerNormalization {self.name!r}")
        self.gamma = self.add_weight(shape, self._inits[0], name="gamma") if self.scale else None
        self.beta = self.add_weight(shape, self._inits[1], name="beta") if self.center else None

    def call(self, inputs):
        rank = inputs.shape.rank
        axes = self._norm_axes
        mean = _red.reduce_mean(inputs, axis=axes, keepdims=True)
        var = _red.reduce_mean(_m.square(_m.subtract(inputs, mean)), axis=axes, keepdims=True)
        gamma = _broadcastable(self.gamma, axes, rank) if self.gamma is not None else None
        beta = _broadcastable(self.beta, axes, rank) if self.beta is not None else None
        return _normalize(inputs, mean, var, gamma, beta, self.epsilon)
