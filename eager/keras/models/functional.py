"""The functional API: `Input(shape)` and `Model(inputs, outputs)` (the `Functional` model).

`Input` makes a `KerasTensor` (keras_tensor.py) owned by an `InputLayer`; calling layers on
KerasTensors records nodes.  `Model(inputs, outputs)` walks back from the outputs to the
inputs (every path must end at one of them: otherwise the graph is disconnected, an error
naming the tensor) and keeps the nodes in an order where each comes after its inputs; calling
the model replays those layer calls on real tensors.  Its weights get paths without the model's
name (`dense/kernel`), as in Keras.
"""
from __future__ import annotations

from ... import nest
from ..keras_tensor import KerasTensor
from ..layers.core import InputLayer
from .model import Model


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None):  # noqa: N802 - Keras's name
    """A symbolic model input of per-sample `shape` (a tuple; None for unknown dimensions)."""
    if batch_shape is not None:
        batch_size, shape = batch_shape[0], tuple(batch_shape[1:])
    if shape is None:
        raise ValueError("Input: give shape= (the per-sample shape, without the batch dimension)")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name)
    tensor = KerasTensor((batch_size,) + shape, dtype or "float32", name=layer.name)
    tensor.input_layer = layer
    return tensor


class Functional(Model, functional=True):
    _pushes_path = False

    def __init__(self, inputs, outputs, name=None, trainable=True):
        super().__init__(name=name, trainable=trainable)
        flat_in, flat_out = nest.flatten(inputs), nest.flatten(outputs)
        for t in flat_in + flat_out:
            if not isinstance(t, KerasTensor):
                raise TypeError(f"Model(inputs, outputs): expected KerasTensors (from Input and layer calls), got "
                                f"{type(t).__name__}")
        for t in flat_in:
            if t.node is not None:
                raise ValueError(f"Model(inputs, outputs): input {t.name!r} is not an Input() tensor")
        self._inputs, self._outputs = inputs, outputs
        self._flat_inputs = flat_in
        input_ids = {id(t) for t in flat_in}
        nodes, seen = [], set()

        def visit(t, path):
            if t.node is None:
                if id(t) not in input_ids:
                    raise ValueError(f"Model(inputs, outputs): the graph is disconnected: {t.name!r} (reached from "
                                     f"{path}) is an Input that is not among the model's inputs")
                return
            if id(t.node) in seen:
                return
            for parent in t.node.input_tensors:
                visit(parent, t.name)
            seen.add(id(t.node))
            nodes.append(t.node)
        for t in flat_out:
            visit(t, "the outputs")
        self._nodes = nodes
        for t in flat_in:
            self._layers.append(t.input_layer)
        for node in nodes:
            if all(node.layer is not l for l in self._layers):
                self._layers.append(node.layer)
        self.built = True
        self._output_shape = nest.map_structure(lambda t: t.shape, outputs)

    @property
    def layers(self) -> list:
        return list(self._layers)

    @property
    def inputs(self):
        return self._flat_inputs

    @property
    def outputs(self):
        return nest.flatten(self._outputs)

    def input_specs(self):
        return [(t.shape, t.dtype) for t in self._flat_inputs]

    def call(self, inputs, training=None):
        if isinstance(inputs, dict):               # by input name, as Keras matches a dict
            missing = [t.name for t in self._flat_inputs if t.name not in inputs]
            if missing:
                raise ValueError(f"model {self.name!r}: the input dict has no entry for input(s) {missing} "
                                 f"(got keys {sorted(inputs)})")
            given = [inputs[t.name] for t in self._flat_inputs]
        else:
            given = nest.flatten(inputs)
        if len(given) != len(self._flat_inputs):
            raise ValueError(f"model {self.name!r} has {len(self._flat_inputs)} input(s), got {len(given)}")
        values = {id(kt): v for kt, v in zip(self._flat_inputs, given)}

        def value(a):
            return values[id(a)] if isinstance(a, KerasTensor) else a
        for node in self._nodes:
            args = nest.map_structure(value, node.args)
            kwargs = nest.map_structure(value, node.kwargs)
            kwargs.setdefault("training", training)
            out = node.layer(*args, **kwargs)
            for kt, v in zip(nest.flatten(node.outputs), nest.flatten(out)):
                values[id(kt)] = v
        return nest.map_structure(value, self._outputs)
