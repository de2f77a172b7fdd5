"""`KerasTensor`: a symbolic placeholder of the functional API (`Input`, then layer calls on it).

A KerasTensor has a shape (a tuple, `None` for unknown dimensions, the batch first) and a
dtype, and remembers the layer call that produced it (`Node`).  Calling a layer on
KerasTensors records a node instead of computing: the layer is built from the symbolic shapes,
then run once on small probe tensors (zeros, every unknown dimension 2, then 3) to learn the
output shapes and dtypes; a dimension that differs between the two probes is unknown.
`Model(inputs, outputs)` replays the recorded nodes on real tensors (models/functional.py).

Imports numpy and the eager core.
"""
from __future__ import annotations

import numpy as np

from .. import nest
from ..convert import constant
from ..dtypes import as_dtype

_PROBES = (2, 3)


class Node:
    """One recorded layer call: the layer, its arguments (with KerasTensors in them), its outputs."""

    def __init__(self, layer, args, kwargs, outputs):
        self.layer, self.args, self.kwargs, self.outputs = layer, args, kwargs, outputs

    @property
    def input_tensors(self) -> list:
        return [t for t in nest.flatten([list(self.args), self.kwargs]) if isinstance(t, KerasTensor)]


class KerasTensor:
    """A symbolic input or intermediate value of a functional model."""

    def __init__(self, shape, dtype="float32", name=None, node=None):
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = as_dtype(dtype)
        self.name = name
        self.node = node               # None for a model input

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self):
        return f"<KerasTensor shape={self.shape}, dtype={self.dtype.name}, name={self.name}>"

    def _refuse(self, *_):
        raise TypeError("a KerasTensor (a symbolic input of the functional API) cannot be used in an eager op: "
                        "wrap the computation in a layer (Add, Concatenate, Activation, ... or your own Layer "
                        "subclass) and call that layer on it")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __matmul__ = _refuse
    __array__ = __getitem__ = __bool__ = __neg__ = _refuse


def contains_keras_tensor(args, kwargs) -> bool:
    return any(isinstance(t, KerasTensor) for t in nest.flatten([list(args), kwargs]))


def _probe(structure, size):
    def make(t):
        if not isinstance(t, KerasTensor):
            return t
        shape = [size if d is None else d for d in t.shape]
        return constant(np.zeros(shape, t.dtype.as_numpy_dtype))
    return nest.map_structure(make, structure)


def symbolic_call(layer, args, kwargs):
    """Record `layer(*args, **kwargs)` on KerasTensors; returns the KerasTensor outputs."""
    results = []
    for size in _PROBES:
        out = layer(*_probe(list(args), size), **_probe(kwargs, size))
        results.append(out)
    first, second = results
    nest.assert_same_structure(first, second, f"the outputs of layer {layer.name!r} on two probe batches")

    def to_symbolic(a, b):
        a_shape, b_shape = a.shape.as_list(), b.shape.as_list()
        shape = [da if da == db else None for da, db in zip(a_shape, b_shape)]
        return KerasTensor(shape, a.dtype)
    outputs = nest.map_structure(to_symbolic, first, second)
    layer._output_shape = nest.map_structure(lambda t: t.shape, outputs)     # unknown dims stay None
    node = Node(layer, list(args), dict(kwargs), outputs)
    for i, t in enumerate(nest.flatten(outputs)):
        t.node = node
        t.name = f"{layer.name}/output_{i}" if len(nest.flatten(outputs)) > 1 else layer.name
    return outputs
