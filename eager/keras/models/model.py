"""`Model`: a Layer that trains (trainer.py), summarizes itself and saves its weights.

Subclass it and define `call` (its sub-layers are tracked as attributes are assigned; their
weight paths start with the model's name, `m/dense/kernel`), or build one from the functional
API: `Model(inputs, outputs)` returns a `Functional` model (functional.py), as Keras's does.
"""
from __future__ import annotations

import os

import numpy as np

from ... import nest
from ...compiler_hook import function_compiler
from ...tensor_spec import TensorSpec
from .. import saving
from ..layers.base import Layer
from .trainer import Trainer


class Model(Trainer, Layer):
    _functional_class = None    # what Model(inputs, outputs) makes: the subclass declared `functional=True`

    def __init_subclass__(cls, functional: bool = False, **kwargs):
        """`class Functional(Model, functional=True)` (functional.py, which imports this module) makes that
        class the one `Model(inputs, outputs)` returns, as Keras's Model does."""
        super().__init_subclass__(**kwargs)
        if functional:
            Model._functional_class = cls

    def __new__(cls, *args, **kwargs):
        if cls is Model and (len(args) >= 2 or ("inputs" in kwargs and "outputs" in kwargs)):
            return object.__new__(Model._functional_class)
        return object.__new__(cls)

    def __init__(self, *args, name=None, trainable=True, dtype=None, **kwargs):
        if args or kwargs:
            raise TypeError(f"Model(): unexpected arguments {args or ''} {sorted(kwargs) or ''}: a subclassed Model "
                            f"takes name=, trainable=, dtype=; the functional API takes Model(inputs, outputs)")
        Layer.__init__(self, trainable=trainable, name=name, dtype=dtype)
        self._init_trainer()

    def call(self, inputs, training=None):
        raise NotImplementedError(f"{type(self).__name__}: a subclassed Model must define call(inputs, training=None)")

    @property
    def layers(self) -> list:
        return list(self._layers)

    def get_layer(self, name=None, index=None):
        layers = self.layers
        if index is not None:
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"model {self.name!r} has no layer named {name!r}; layers: {[l.name for l in layers]}")

    def input_specs(self):
        return None

    # ------------------------------------------------------------------ saving
    def save_weights(self, filepath, overwrite=True):
        """Write every weight to `filepath` in graphjit's weights format (saving.py)."""
        if not overwrite and os.path.exists(filepath):
            raise FileExistsError(f"save_weights: {filepath} exists and overwrite=False")
        saving.save_weights(self, filepath)

    def load_weights(self, filepath):
        saving.load_weights(self, filepath)

    def serving_function(self, input_signature=None):
        """`self(x, training=False)` compiled with an input_signature (the model's inputs with the
        batch dimension unknown, or the one given): what `tracing.save({"serve": ...}, path)` exports."""
        if input_signature is None:
            specs = self.input_specs()
            if specs is None:
                raise ValueError(f"model {self.name!r} does not know its input shape: pass "
                                 f"input_signature=[TensorSpec(...)]")
            input_signature = [TensorSpec([None] + list(shape[1:]), dtype) for shape, dtype in specs]

        def serve(*inputs):
            return self(inputs[0] if len(inputs) == 1 else list(inputs), training=False)
        return function_compiler()(serve, input_signature=list(input_signature))

    # ------------------------------------------------------------------ summary
    def summary(self, line_length=None, print_fn=None):
        """Print each layer's name, type, output shape and parameter count, then the totals."""
        rows = [("Layer (type)", "Output Shape", "Param #")]
        for layer in self.layers:
            shape = layer._output_shape if layer._output_shape is not None else "?"
            params = layer.count_params() if layer.built else 0
            rows.append((f"{layer.name} ({type(layer).__name__})", str(shape), f"{params:,}"))
        widths = [max(len(r[i]) for r in rows) + 2 for i in range(3)]
        if line_length:
            widths[0] = max(widths[0], line_length - widths[1] - widths[2])
        rule = "-" * sum(widths)
        lines = [f'Model: "{self.name}"', rule]
        for i, (a, b, c) in enumerate(rows):
            lines.append(a.ljust(widths[0]) + b.ljust(widths[1]) + c.rjust(widths[2]))
            if i == 0:
                lines.append("=" * sum(widths))
        trainable = sum(int(np.prod(w.shape.as_list())) for w in self.trainable_weights)
        total = sum(int(np.prod(w.shape.as_list())) for w in self.weights)
        lines += [rule, f" Total params: {total:,}", f" Trainable params: {trainable:,}",
                  f" Non-trainable params: {total - trainable:,}", rule]
        (print_fn or print)("\n".join(lines))

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"
