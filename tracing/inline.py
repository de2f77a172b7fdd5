"""Inlining a traced function into the graph being built, without running its Python again.

`inline(concrete, args, kwargs)` copies the ops of `concrete.graph` (the
graph traced once, before optimization) into the graph on top of eager's
context stack, with the call's tensors in place of the function's
placeholders, and returns the copied outputs packed like the function's
structured outputs.  The copy goes through the GraphDef round trip
(`graph_to_graph_def`, then `import_graph_def` with an `input_map`): bodies of
control flow become fresh copies, the function's own variables are mapped to
the same Variable objects, and the import validates everything first.  The
exported GraphDef is cached per concrete function.

`eager.data` uses it (through `ConcreteFunction.inline`) so that a staged
dataset loop runs the dataset's own traced map/filter functions: traced once,
when the dataset was built.  A trace made while this graph was being built may
have captured its tensors (`FuncGraph.captures`): they are mapped back.
Imports `eager` and `graph_runtime`.
"""
from __future__ import annotations

import re

import eager as ek
from eager import context as _context
from graph_runtime.attr_codecs import EncodeContext
from graph_runtime.graph_def import graph_to_graph_def
from graph_runtime.graph_import import import_graph_def


def _scope_name(name: str) -> str:
    """The function's name as an op-name scope (`<lambda>` -> `lambda`)."""
    return re.sub(r"[^A-Za-z0-9_.\-]", "", name) or "inlined"


def _exported(concrete):
    cached = getattr(concrete, "_inline_export", None)
    if cached is None:
        ctx = EncodeContext()
        gd = graph_to_graph_def(concrete.graph, _ctx=ctx)
        inputs = {t.op.name for t in concrete.inputs} | {ph.op.name for _, ph in concrete.graph.captures}
        gd = dict(gd, nodes=[n for n in gd["nodes"] if n["name"] not in inputs])   # fed by the input_map
        cached = concrete._inline_export = (gd, dict(ctx.variables))
    return cached


def inline(concrete, tensors: list):
    """The outputs of `concrete` on `tensors` (its flat tensor arguments), as ops of the current graph."""
    graph = _context.current()
    if graph.is_eager:
        raise RuntimeError("inline: no graph is being built (call the concrete function instead)")
    gd, variables = _exported(concrete)
    if len(tensors) != len(concrete.inputs):
        raise TypeError(f"{concrete._name}: expected {len(concrete.inputs)} tensor arguments, got {len(tensors)}")
    input_map = dict(variables)
    for ph, t in zip(concrete.inputs, tensors):
        t = ek.convert_to_tensor(t)
        if not (t._is_symbolic and t.graph is graph):
            t = graph.capture(t)
        if t.dtype is not ph.dtype or not ph.shape.is_compatible_with(t.shape):
            raise TypeError(f"{concrete._name}: argument {t.dtype.name}{t.shape} is not compatible with "
                            f"{ph.dtype.name}{ph.shape}")
        input_map[ph.name] = t
    for outer, ph in getattr(concrete.graph, "captures", ()):
        input_map[ph.name] = graph.capture(outer)       # a tensor of the graph the trace was made in
    # an output that is an argument (`lambda a, b: (a * 2, b)`) is the call's tensor: the GraphDef has no node
    # for a placeholder the input_map replaces
    arguments = {ph.name for ph in concrete.inputs}
    wanted = [t.name for t in concrete.outputs if t.name not in arguments]
    outs = iter(import_graph_def(gd, input_map=input_map, return_elements=wanted,
                                 name=_scope_name(concrete._name), graph=graph) if wanted else ())
    return [input_map[t.name] if t.name in arguments else next(outs) for t in concrete.outputs]
