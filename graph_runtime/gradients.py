"""Symbolic `gradients(ys, xs, grad_ys, stop_gradients)`: backward ops from the registry rules.

Reuses `eager.backprop.backprop`, the reverse-mode walk the eager tape uses,
over the graph's operations (which offer `opdef inputs outputs attrs
get_attr`).  The gradient rules call public ops; running them inside
`graph.as_default()` under a fresh `gradients` name scope makes them build
graph nodes.  A Variable in `xs` stands for every `ReadVariableOp` of it in the
graph (their gradients are summed).  Like TensorFlow: unconnected sources get
None, `grad_ys` defaults to ones, integer tensors get None, and
`stop_gradients` tensors are treated as constants.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

from eager import context as _context
from eager.backprop import backprop
from eager.convert import convert_to_tensor
from eager.ops.array import ones_like

from .op_traits import var_of
from .operation import GraphTensor


def _as_list(x):
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]


def gradients(ys, xs, grad_ys=None, stop_gradients=None, name="gradients"):
    """d(sum of ys)/d(x) for each x in xs, as graph tensors (None where unconnected)."""
    ys_l, xs_l = _as_list(ys), _as_list(xs)
    if not ys_l:
        raise ValueError("gradients: ys is empty")
    graph = None
    for y in ys_l:
        if not isinstance(y, GraphTensor):
            raise TypeError(f"gradients: ys must be graph tensors, got {type(y).__name__}: {y!r} (for eager "
                            f"tensors use GradientTape)")
        if graph is None:
            graph = y.graph
        elif y.graph is not graph:
            raise ValueError("gradients: all ys must belong to the same graph")
    gys = _as_list(grad_ys)
    if grad_ys is not None and len(gys) != len(ys_l):
        raise ValueError(f"gradients: grad_ys has {len(gys)} entries for {len(ys_l)} ys")
    entries = list(graph._ops)
    groups = []
    for x in xs_l:
        if getattr(x, "_is_variable", False):
            reads = [op._outputs[0] for op in entries if op._opdef.name == "ReadVariableOp" and var_of(op) is x]
            groups.append([id(t) for t in reads])
        elif isinstance(x, GraphTensor):
            if x.graph is not graph:
                raise ValueError(f"gradients: x {x.name!r} belongs to a different graph than ys")
            groups.append([id(x)] if x.dtype.is_floating else [])
        else:
            raise TypeError(f"gradients: xs must be graph tensors or Variables, got {type(x).__name__}: {x!r}")
    stops = set()
    for s in _as_list(stop_gradients):
        if not isinstance(s, GraphTensor):
            raise TypeError(f"gradients: stop_gradients must be graph tensors, got {type(s).__name__}")
        stops.add(id(s))
    scope = graph.unique_name(name)
    with graph.as_default(), _context.name_scope(scope):
        if grad_ys is None:
            tgrads = [ones_like(y) for y in ys_l]
        else:
            tgrads = [ones_like(y) if g is None else convert_to_tensor(g, dtype=y.dtype)
                      for g, y in zip(gys, ys_l)]
        targets = [y for y in ys_l if y.dtype.is_floating]
        tgrads = [g for g, y in zip(tgrads, ys_l) if y.dtype.is_floating]
        result = backprop(entries, targets, tgrads, groups, stop_keys=frozenset(stops))
    return result
