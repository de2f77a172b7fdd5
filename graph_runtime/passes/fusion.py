"""Elementwise fusion: each maximal group of elementwise ops becomes one `FusedElementwise` op.

Groups come from `graph_runtime.fusion.groups.find_groups` (unary and binary
ops with broadcasting, comparisons, select, casts, activations; never
reductions, stateful ops or ops with control inputs; convex; preserved ops
only as group sinks).  Each group becomes one op whose attr `program` is the
group's expression program, and whose kernel is generated once when the plan
is compiled (graph_runtime/fusion/kernel.py); its outputs stand for the
members whose values are needed outside the group (a preserved member keeps
its name through an Identity, via `Rewriter.replace`).

Because a group's ops are contracted into one node, the output graph's
creation order is a new topological order of the contracted graph
(`groups.contracted_order`: a Kahn walk preferring creation order; a group is
ready once every producer feeding any of its members has been emitted).

The pass runs last in the pipeline (after arithmetic simplification and CSE,
which see the individual ops), and, like every pass, on the graph a plan is
compiled from: gradients are always built on the unfused graph, and the fused
op needs no gradient.  It is not iterative.

Options (`optimize(..., options={"fusion": {...}})`): the fields of
`graph_runtime.fusion.FusionOptions` (e.g. `{"enabled": False}`,
`{"min_ops": 3}`); defaults are the process-wide `fusion.get_options()`.
`SessionConfig(disabled_passes=("fusion",))` turns it off for a Session.

Stats: `changes` = ops fused; `details` = {"groups": n, "fused": [one
`FusedGroupInfo` per group: fused op name, members, outputs, shape, planned
strategy, computed when the report is printed]}, so the optimizer report lists the
fused groups.

Imports `graph_runtime.fusion` and sibling pass modules.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from typing import Callable

from ..fusion.groups import dissolve_cycles, find_groups
from ..fusion.kernel import FUSED_ELEMENTWISE, plan_strategy
from ..fusion.options import merged
from ..fusion.program import ProgramBuilder
from .core import GraphPass, PassContext, PassStats, register_pass
from .rewriter import Rewriter


@dataclass(frozen=True)
class FusedGroupInfo:
    """One fused group, as listed in the optimizer report."""

    name: str              # the FusedElementwise op
    members: tuple         # names of the fused ops, in order
    op_types: tuple
    outputs: tuple         # members whose values leave the group
    shape: str             # static shape of the largest value
    plan: Callable = field(repr=False, compare=False)   # () -> `strategy`

    @functools.cached_property
    def strategy(self) -> str:
        """The strategy planned from static shapes ("dynamic": decided per run-time shape).  Computed when
        first read (a report that is never printed does not pay for the cost model's planning)."""
        return self.plan()

    def __str__(self):
        counts: dict = {}
        for t in self.op_types:
            counts[t] = counts.get(t, 0) + 1
        ops = ", ".join(f"{t}x{n}" if n > 1 else t for t, n in counts.items())
        return (f"{self.name}: {len(self.members)} ops [{ops}] {self.shape} -> {len(self.outputs)} output(s), "
                f"{self.strategy}")


class FusedGroups(list):
    """A list of `FusedGroupInfo` that prints one group per line (for `OptimizationReport`)."""

    def __str__(self):
        return "".join(f"\n      {g}" for g in self)


def _build_program(group):
    b = ProgramBuilder()
    slot_of: dict = {}
    for t in group.inputs:
        slot_of[id(t)] = b.input(t._dtype.np_dtype, t._shape.dims)
    for m in group.members:
        out = m._outputs[0]
        slot_of[id(out)] = b.add_op(m._opdef, m._attrs, [slot_of[id(t)] for t in m._inputs], out._dtype.np_dtype,
                                    m._name)
    outputs = [slot_of[id(m._outputs[0])] for m in group.outputs]
    return b.finish(outputs, [m._outputs[0]._dtype for m in group.outputs],
                    [(m._name, m._opdef.name) for m in group.members])


def _largest_shape(group) -> str:
    best, best_n = None, -1
    for m in group.members:
        dims = m._outputs[0]._shape.dims
        n = 1
        for d in dims:
            n *= 1 if d is None else d
        if n > best_n:
            best, best_n = dims, n
    return "[" + ",".join("?" if d is None else str(d) for d in best) + "]"


def fuse_elementwise(graph, ctx: PassContext):
    opts = merged(ctx.option("fusion"))
    n = len(graph._ops)
    if not opts.enabled:
        return graph, PassStats("fusion", n, n, 0, details={"disabled": 1})
    groups = find_groups(graph, ctx.preserve, opts.min_ops, opts.max_distance)
    if not groups:
        return graph, PassStats("fusion", n, n, 0)
    groups, order = dissolve_cycles(graph, groups)
    rw = Rewriter(graph, replace(ctx, probe=False))     # groups to fuse: the graph changes, no need to probe
    infos = FusedGroups()
    fused_ops = 0
    for kind, item in order:
        if kind == "op":
            rw.copy(item)
            continue
        group = groups[item]
        program = _build_program(group)
        name = rw.dst.unique_name(group.outputs[-1]._name + "/fused")
        fused = rw.emit(FUSED_ELEMENTWISE, [rw.t(t) for t in group.inputs], {"program": program},
                        like=group.members[-1], name=name)
        for k, m in enumerate(group.outputs):
            rw.replace(m, [fused._outputs[k]])
        fused_ops += len(group.members)
        infos.append(FusedGroupInfo(name, tuple(m._name for m in group.members),
                                    tuple(m._opdef.name for m in group.members),
                                    tuple(m._name for m in group.outputs), _largest_shape(group),
                                    functools.partial(plan_strategy, program, opts)))
    out = rw.finish()
    return out, PassStats("fusion", n, len(out._ops), fused_ops,
                          details={"groups": len(infos), "fused": infos})


FUSION = register_pass(GraphPass("fusion", fuse_elementwise,
                                 "Fuse groups of elementwise ops into one generated kernel each.",
                                 iterative=False))
