"""A minimal graph-building context for eager tests (the real one lives in graph_runtime).

`SymbolicGraph` implements `add_op` by running each op's `infer` (so static
shapes, dtypes and constant values are checked) and records the op; `run`
evaluates requested tensors with the same kernels.  Tests use it to check that
op wrappers and gradient rules never read the value of a symbolic tensor and
that inference agrees with what the kernels produce.
"""
from __future__ import annotations

import numpy as np

from eager import context
from eager.registry import Spec
from eager.shape import TensorShape
from eager.tensor import Tensor


class Node:
    def __init__(self, opdef, inputs, attrs):
        self.opdef, self.inputs, self.attrs = opdef, inputs, attrs


class Sym(Tensor):
    __slots__ = ("_spec", "_node", "_index")
    _is_symbolic = True

    def __init__(self, spec, node, index):
        self._value = None
        self._spec, self._node, self._index = spec, node, index

    @property
    def dtype(self):
        return self._spec.dtype

    @property
    def shape(self):
        return TensorShape(self._spec.shape)

    @property
    def ndim(self):
        return None if self._spec.shape is None else len(self._spec.shape)

    def __repr__(self):
        return f"<Sym {self._node.opdef.name if self._node else 'placeholder'} {self._spec}>"


class SymbolicGraph(context.Context):
    """Implements the declared context protocol: ops are inferred and recorded; variables and control
    flow are not supported here (graph_runtime's contexts support them)."""

    def __init__(self):
        self.ops = []

    def __enter__(self):
        context.push(self)
        return self

    def __exit__(self, *exc):
        context.pop(self)

    @staticmethod
    def spec_of(t):
        if isinstance(t, Sym):
            return t._spec
        return Spec(tuple(t._value.shape), t.dtype, t._value)

    def add_op(self, opdef, inputs, attrs, name=None):
        specs = [self.spec_of(t) for t in inputs]
        out_specs = opdef.infer(specs, attrs)
        node = Node(opdef, tuple(inputs), dict(attrs))
        self.ops.append(node)
        outs = [Sym(s, node, i) for i, s in enumerate(out_specs)]
        return outs[0] if opdef.num_outputs == 1 else tuple(outs)

    def add_node(self, opdef, inputs, attrs, name=None):
        self.add_op(opdef, inputs, attrs, name)
        return self.ops[-1]

    def create_variable(self, var, init_tensor):
        raise NotImplementedError("SymbolicGraph: no variables")

    def trace_body(self, *args, **kwargs):
        raise NotImplementedError("SymbolicGraph: no control flow")

    trace_bodies = device = trace_body

    def placeholder(self, shape, dtype):
        from eager.dtypes import as_dtype
        return Sym(Spec(None if shape is None else tuple(shape), as_dtype(dtype)), None, 0)

    def run(self, fetches, feed):
        cache = {}

        def ev(t):
            if not isinstance(t, Sym):
                return t._value
            key = (id(t._node), t._index) if t._node is not None else id(t)
            if key not in cache:
                if t._node is None:
                    cache[key] = np.asarray(feed[id(t)])
                else:
                    n = t._node
                    out = n.opdef.kernel(*[ev(i) for i in n.inputs], **n.attrs)
                    if n.opdef.num_outputs == 1:
                        cache[key] = out
                    else:
                        for i, o in enumerate(out):
                            cache[(id(n), i)] = o
            return cache[key]
        return [ev(t) for t in fetches]


def check_static(spec_shape, actual_shape):
    """Inferred shape (with None dims / None rank) is compatible with the actual one."""
    if spec_shape is None:
        return
    assert len(spec_shape) == len(actual_shape), (spec_shape, actual_shape)
    for s, a in zip(spec_shape, actual_shape):
        assert s is None or s == a, (spec_shape, actual_shape)
