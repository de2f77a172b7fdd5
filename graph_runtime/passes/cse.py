"""Common subexpression elimination: ops computing the same thing are merged into the first one.

Two ops are the same when they have the same type, the same (already merged)
inputs, equal attrs (`freeze_attr`: arrays by dtype, shape and bytes; floats by
their bits, so 0.0 and -0.0 differ; other objects by identity), the same set
of control inputs and the same device.  `Const` ops dedup by value and dtype
this way.  Inputs of an op flagged `commutative` in its OpDef are put in a
canonical order when the op has exactly two inputs and swapping them is
bitwise exact: `AddN` with 3+ inputs is not reordered (float addition is not
associative), nor are float `Maximum`/`Minimum` (they may pick either zero of
`max(-0.0, 0.0)`).

A run that only merged `Const` ops says so (`PassStats.keeps_fixed_points`):
the other passes see the same values afterwards, so the pass manager does not
run them again for it (an unrolled function's repeated literals no longer cost
a second optimizer round).  Constant folding sees the same constant inputs;
scale folding and the other value-based rewrites see the same values; a
pattern needing one tensor twice (`x * x`) over two merged constants is
constant-folded already, unless they exceed the folding size limit (then
that rewrite, a `Square`, waits: never a wrong result).

One run reaches CSE's fixed point (`GraphPass.idempotent`): ops are visited
in topological order with their inputs already merged, so two ops left with
the same key were kept apart for a reason a second run sees again (one is
preserved, stateful or holds a body).

Never merged: stateful ops (random draws, reads, assigns, prints), ops with
bodies (If/While), and anything into a preserved op (a fed tensor's consumers
must keep reading the fed value).  A preserved duplicate keeps its name as an
Identity of the first op.

Imports sibling pass modules.
"""
from __future__ import annotations

from .core import GraphPass, PassContext, make_stats, register_pass
from .op_keys import freeze_attrs, has_subgraphs
from .rewriter import Rewriter, is_stateful

_ORDER_SENSITIVE_FLOAT = frozenset({"Maximum", "Minimum"})


def merge_key(op, ins, ctrl):
    """What makes `op` equal to another op given its (already merged) inputs `ins` and control inputs
    `ctrl` (module docstring); placement uses it too, to put ops this pass will merge on one device."""
    ids = [id(t) for t in ins]
    od = op._opdef
    if od.commutative and len(ids) == 2 and not (od.name in _ORDER_SENSITIVE_FLOAT and ins[0]._dtype.is_floating):
        ids.sort()
    return (od.name, tuple(ids), freeze_attrs(op._attrs), frozenset(id(c) for c in ctrl), op._device)


def eliminate_common_subexpressions(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    seen: dict = {}
    for op in graph._ops:
        if is_stateful(op) or has_subgraphs(op) or not op._outputs:
            rw.copy(op)
            continue
        ins = rw.inputs(op)
        ctrl = rw.controls(op)
        key = merge_key(op, ins, ctrl)
        first = seen.get(key)
        if first is not None:
            rw.replace(op, list(first._outputs), note=op._opdef.name)
            continue
        new = rw.copy(op, inputs=ins)
        if not rw.preserved(op):
            seen[key] = new
    out = rw.finish()
    stats = make_stats("common_subexpression", graph, out, rw)
    stats.keeps_fixed_points = set(rw.notes) == {"Const"}
    return out, stats


CSE = register_pass(GraphPass("common_subexpression", eliminate_common_subexpressions,
                              "Merge ops with the same type, inputs and attrs (never stateful ones).",
                              idempotent=True))
