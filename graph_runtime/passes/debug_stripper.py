"""Debug stripper (off by default): remove `Assert`, `PrintV2` and `CheckNumerics`-style ops.

This pass is *about* stateful ops, so it is the one allowed to remove them, and
it does change behaviour on purpose (checks no longer raise, prints no longer
print): enable it explicitly, e.g. `optimize(..., passes=[..., "debug_stripper"])`.
- ops without outputs (`Assert`, `PrintV2`) disappear; control edges on them
  are dropped (a preserved/target one becomes a `NoOp` of the same name);
- pass-through checks (`CheckNumerics`, `EnsureShape`, TF1 `Print`) are
  replaced by their first input.
The data that only fed a removed op becomes dead and is dropped with it.

Imports sibling pass modules.
"""
from __future__ import annotations

from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter

NO_OUTPUT_DEBUG_OPS = frozenset({"Assert", "PrintV2"})
PASS_THROUGH_DEBUG_OPS = frozenset({"CheckNumerics", "CheckNumericsV2", "Print", "EnsureShape"})


def strip_debug_ops(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        t = op._opdef.name
        if t in NO_OUTPUT_DEBUG_OPS and not op._outputs:
            rw.replace(op, [], note=t)     # control edges on it move to its own control inputs
        elif t in PASS_THROUGH_DEBUG_OPS and op._inputs and len(op._outputs) == 1 and \
                op._inputs[0]._dtype is op._outputs[0]._dtype:
            rw.replace(op, [rw.t(op._inputs[0])], note=t)
        else:
            rw.copy(op)
    out = rw.finish()
    return out, make_stats("debug_stripper", graph, out, rw)


DEBUG_STRIPPER = register_pass(GraphPass("debug_stripper", strip_debug_ops,
                                         "Remove Assert/PrintV2/CheckNumerics (changes behaviour: off by default).",
                                         default_enabled=False))
