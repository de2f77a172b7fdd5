"""Dependency optimizer: remove redundant `Identity` nodes and redundant control edges.

- `Identity(x)` (not preserved) is bypassed: consumers read `x` directly and
  inherit the Identity's control inputs (so ordering is kept).  `StopGradient`
  is left alone (it means something to gradient builders that may read the
  optimized graph).
- A control edge `a -> b` is dropped when `b` already depends on `a` through
  another input (data or control), when `a` is a plain `Const` or `NoOp`
  without control inputs of its own (nothing to wait for, nothing that can
  fail), or when it is a duplicate.  Edges that order side effects are kept
  unless implied by another path.

Imports sibling pass modules.
"""
from __future__ import annotations

from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter, has_side_effects

_IDENTITIES = frozenset({"Identity"})
_NOTHING_TO_WAIT_FOR = frozenset({"Const", "NoOp"})


def optimize_dependencies(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    anc: dict = {}       # id(dst op) -> bitset of its strict ancestors that may be control sources
    bit: dict = {}       # id(dst op) -> its bit (only ops that may be the source of a control edge)
    # Only a control edge's source is ever looked up in an ancestor set, so only those ops get a bit:
    # one bit per op made the sets (and each op's cost) grow with the graph, quadratic in time and
    # memory on long functions.  The sources are known up front (`_control_sources`); an
    # op that gets no bit is never found implied, so its edge is kept (never dropped by mistake).
    sources = _control_sources(graph, rw)
    for op in graph._ops:
        if (op._opdef.name in _IDENTITIES and not rw.preserved(op) and op._inputs and not has_side_effects(op)):
            rw.replace(op, [rw.t(op._inputs[0])], note="identity")
            continue
        ins = rw.inputs(op)
        if not sources:
            rw.copy(op, inputs=ins)         # no control edge anywhere: nothing to drop, none appears
            continue
        ctrl = list(rw.controls(op))
        kept = _needed_controls(ins, ctrl, anc, bit)
        dropped = len(ctrl) - len(kept)
        if dropped:
            rw.notes["control_edge"] = rw.notes.get("control_edge", 0) + dropped
            rw.changes += dropped
        new = rw.copy(op, inputs=ins, control_inputs=kept)
        if id(op) in sources:
            bit[id(new)] = 1 << len(bit)
        _record(new, anc, bit)
    out = rw.finish()
    return out, make_stats("dependency", graph, out, rw)


def _control_sources(graph, rw) -> set:
    """Ids of the src ops whose copies may appear in a control input list of the output: the ops that
    are control inputs, and for a bypassed Identity among them, what stands for it (the producer of
    its input, through chains of Identities; its own control inputs are control inputs already)."""
    out: set = set()
    stack = [c for op in graph._ops for c in op._control_inputs]
    while stack:
        c = stack.pop()
        if id(c) in out:
            continue
        out.add(id(c))
        if c._opdef.name in _IDENTITIES and c._inputs:
            stack.append(c._inputs[0]._op)
    return out


def _ancestors_of(op, anc, bit) -> int:
    a = anc.get(id(op))
    if a is None:           # created by the rewriter without going through copy (e.g. a stand-in)
        a = _record(op, anc, bit)
    return a


def _record(op, anc, bit) -> int:
    a = 0
    for t in op._inputs:
        a |= _ancestors_of(t._op, anc, bit) | bit.get(id(t._op), 0)
    for c in op._control_inputs:
        a |= _ancestors_of(c, anc, bit) | bit.get(id(c), 0)
    anc[id(op)] = a
    return a


def _needed_controls(ins, ctrl, anc, bit) -> list:
    ctrl = list(dict.fromkeys(ctrl))
    ctrl = [c for c in ctrl if not (c._opdef.name in _NOTHING_TO_WAIT_FOR and not c._control_inputs)]
    if not ctrl:
        return ctrl
    data = 0
    for t in ins:
        data |= _ancestors_of(t._op, anc, bit) | bit.get(id(t._op), 0)
    kept = []
    for c in ctrl:
        b = bit.get(id(c), 0)
        if data & b:
            continue
        if b and any(o is not c and (_ancestors_of(o, anc, bit) & b) for o in ctrl):
            continue
        kept.append(c)
    return kept


DEPENDENCY = register_pass(GraphPass("dependency", optimize_dependencies,
                                     "Bypass Identity ops; drop control edges implied by other paths."))
