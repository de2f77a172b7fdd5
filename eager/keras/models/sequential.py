"""`Sequential`: a stack of layers, each called on the previous one's output.

`.layers` excludes the input (an `Input(...)` given first, or a first layer's `input_shape=`),
as in Keras 3.  With an input shape known (or after `build(input_shape)`) the layers are built at
once; otherwise at the first call.  Weight paths do not include the model's name
(`dense/kernel`).
"""
from __future__ import annotations

from ..keras_tensor import KerasTensor
from ..layers.base import Layer
from .model import Model


class Sequential(Model):
    _pushes_path = False

    def __init__(self, layers=None, name=None, trainable=True):
        super().__init__(name=name, trainable=trainable)
        self._input = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        if isinstance(layer, KerasTensor):
            if self._layers or self._input is not None:
                raise ValueError("Sequential: an Input can only come first")
            self._input = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: expected a Layer, got {type(layer).__name__}")
        self._layers.append(layer)
        if self._input is None and len(self._layers) == 1 and layer._input_shape_arg is not None:
            self._input = KerasTensor((None,) + layer._input_shape_arg, layer.dtype)
        if self._input is not None:
            self._build_from_input()

    def pop(self):
        if not self._layers:
            raise TypeError("Sequential.pop: there are no layers")
        return self._layers.pop()

    @property
    def layers(self) -> list:
        return list(self._layers)

    def input_specs(self):
        return [(self._input.shape, self._input.dtype)] if self._input is not None else None

    def _build_from_input(self):
        x = self._input
        for layer in self._layers:
            x = layer(x)
        self._output_shape = x.shape
        self.built = True

    def _maybe_build(self, shapes):
        """At the first call without a known input: the layers build as they are called."""
        if not self.built:
            self._build_input_shape = shapes
            self.built = True

    def build(self, input_shape=None, dtype="float32"):
        """Build every layer for inputs of `input_shape` (the batch dimension first, e.g. (None, 64))."""
        if input_shape is not None and self._input is None:
            self._input = KerasTensor((None,) + tuple(input_shape)[1:], dtype)
        if self._input is not None:
            self._build_from_input()

    def call(self, inputs, training=None):
        if not self._layers:
            raise ValueError(f"Sequential {self.name!r} has no layers")
        x = inputs
        for layer in self._layers:
            x = layer(x, training=training)
        return x
