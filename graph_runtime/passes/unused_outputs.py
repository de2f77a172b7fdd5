"""Unused outputs: an op that can compute fewer outputs computes only those something uses.

An op declares the ability with `OpDef.extra["drop_outputs"](op, used) ->
attrs | None`: given the set of output indices in use, the attrs of the same
op computing only (at least) those, or None when it cannot do better.  The op
keeps all its outputs (names and indices stay valid for the caller's fetches);
a dropped one holds no value.  Today `WhileGrad` declares it: a loop's
gradient computes the cotangent of every float capture, and the ones nobody
asked for (e.g. of the TensorArray a loop reads its inputs from, when only the
weights' gradients are fetched) cost a full-size buffer per iteration.

An output is in use when another op consumes it (data or control), or the
caller fetches or feeds it by name, or names the whole op.  The op is
rebuilt with the same name, inputs and control inputs.  Results never change:
the dropped outputs had no reader.

A gradient that computes less may read fewer of the values its forward op
saves (attr `saves`, graph_runtime/residuals.py, written before the
optimizer runs): the forward op is then rebuilt saving only what its readers
still request (`x[t]` in an RNN's loop saves its index and slice bounds for
the cotangent of `x` alone; without them the loop runs compiled,
control_flow/compiled_loop.py).

Imports sibling pass modules and `graph_runtime.save_specs`.
"""
from __future__ import annotations

from ..save_specs import consumers, requests_of, within
from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter


def _used(rw: Rewriter, op, ctx: PassContext) -> frozenset:
    uses = rw._src_uses
    if uses.get(id(op), 0):                     # a control dependency on the op: all of it runs
        return frozenset(range(len(op._outputs)))
    return frozenset(i for i, t in enumerate(op._outputs) if uses.get(id(t), 0) or ctx.output_needed(op, i))


def drop_unused_outputs(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        hook = op._opdef.extra.get("drop_outputs")
        if hook is None:
            rw.copy(op)
            continue
        used = _used(rw, op, ctx)
        attrs = hook(op, used) if len(used) < len(op._outputs) else None
        if attrs is None:
            rw.copy(op)
            continue
        new = rw.emit(op._opdef, rw.inputs(op), attrs, like=op, name=op._name, control_inputs=rw.controls(op))
        rw._origin[id(new)] = op
        for t, nt in zip(op._outputs, new._outputs):
            rw._t[id(t)] = nt
        rw._ctrl[id(op)] = (new,)
        rw._count("outputs_dropped")
    out = rw.finish()
    if out is not graph:
        out = _save_what_is_read(out, ctx, rw)
    return out, make_stats("unused_outputs", graph, out, rw)


def _save_what_is_read(graph, ctx: PassContext, counts: Rewriter):
    """`graph` with each forward op that saves values for its gradient (attr `saves`, graph_runtime/
    residuals.py) saving only what its readers request now: a gradient that computes fewer outputs may read
    fewer saved values (a loop's `x[t]` saves its index and slice bounds only for the cotangent of `x`).
    Never more than before, never nothing while someone reads them, and unchanged when the saved values are
    fetched by name (an enclosing op's gradient reads them)."""
    uses = consumers(graph)
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        saves = op._attrs.get("saves") if op._opdef.extra.get("saves") else None
        if saves and not ctx.output_needed(op, len(op._outputs) - 1):
            spec = requests_of(op._outputs[-1], uses)
            if spec and spec != saves and within(spec, saves):
                rw.copy(op, attrs=dict(op._attrs, saves=spec))
                counts._count("saves_dropped")
                continue
        rw.copy(op)
    return rw.finish()


UNUSED_OUTPUTS = register_pass(GraphPass("unused_outputs", drop_unused_outputs,
                                         "Ops that can compute fewer outputs (WhileGrad) compute only the used "
                                         "ones.", iterative=False))
