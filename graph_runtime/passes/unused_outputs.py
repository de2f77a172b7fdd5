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

Imports sibling pass modules.
"""
from __future__ import annotations

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
    return out, make_stats("unused_outputs", graph, out, rw)


UNUSED_OUTPUTS = register_pass(GraphPass("unused_outputs", drop_unused_outputs,
                                         "Ops that can compute fewer outputs (WhileGrad) compute only the used "
                                         "ones.", iterative=False))
