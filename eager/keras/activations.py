"""Activation functions (`eager.keras.activations`), by function or by Keras's string names."""
from __future__ import annotations

from ..ops import nn as _nn


def linear(x):
    return x


def relu(x):
    return _nn.relu(x)


def sigmoid(x):
    return _nn.sigmoid(x)


def tanh(x):
    return _nn.tanh(x)


def softmax(x, axis=-1):
    return _nn.softmax(x, axis=axis)


def log_softmax(x, axis=-1):
    return _nn.log_softmax(x, axis=axis)


def elu(x):
    return _nn.elu(x)


def softplus(x):
    return _nn.softplus(x)


def silu(x):
    return _nn.silu(x)


def relu6(x):
    return _nn.relu6(x)


def leaky_relu(x, negative_slope=0.2):
    return _nn.leaky_relu(x, alpha=negative_slope)


_BY_NAME = {"linear": linear, "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "softmax": softmax,
            "log_softmax": log_softmax, "elu": elu, "softplus": softplus, "silu": silu, "swish": silu,
            "relu6": relu6, "leaky_relu": leaky_relu}


def get(identifier):
    """`None` -> linear; a callable as is; a Keras name -> the function."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(f"unknown activation {identifier!r}; known names: {sorted(_BY_NAME)}")
