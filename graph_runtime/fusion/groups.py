"""Finding the groups of elementwise ops to fuse.

An op is *fusible* when its OpDef is flagged `elementwise`, it is not stateful,
has one output, no control inputs and no subgraph attrs, all its inputs and its
output have a known rank and a numeric or bool dtype, and `recipes.check_op`
accepts it (its kernel gives the dtype the graph declares).

Groups grow greedily in creation (topological) order: each fusible op joins the
groups of its fusible producers (merging them when it joins several), or starts
a new group.  A candidate group must stay *convex*: no path may leave the
group and come back (otherwise the fused op would depend on its own output).
The check walks backwards from the producers outside the group that feed it,
only over ops created after the group's first member (nothing earlier can lie
on such a path), and fails if it reaches a member; control edges count as
paths.  Preserved ops (fed or fetched tensors, targets) may be members, but
only as sinks: no member may consume a preserved member's output inside the
group, because a fed value must reach every consumer.

A group's *outputs* are the members whose value is needed outside it: consumed
by a non-member (data or control edge), preserved, listed in the graph's
function outputs, or stored in a collection.  Multi-output groups are allowed.
Groups with fewer than `min_ops` compute ops (Identity does not count) are not
fused.

Imports `graph_runtime` core modules and sibling modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from ..operation import attr_subgraphs
from .recipes import ALIAS_OPS, check_op


@dataclass
class Group:
    members: list                   # Operations, in creation order
    inputs: list = field(default_factory=list)     # external input tensors, first-use order
    outputs: list = field(default_factory=list)    # member ops whose value leaves the group

    @property
    def compute_ops(self) -> int:
        return sum(1 for m in self.members if m._opdef.name not in ALIAS_OPS)


def fusible_reason(op) -> Optional[str]:
    """None when `op` may join a fused group, else why not."""
    od = op._opdef
    if not od.elementwise:
        return "not elementwise"
    if od.stateful:
        return "stateful"
    if len(op._outputs) != 1 or od.num_outputs != 1:
        return "not single-output"
    if op._control_inputs:
        return "has control inputs"
    if od.extra.get("lower") is not None or attr_subgraphs(op._attrs):
        return "has a body"
    out = op._outputs[0]
    tensors = list(op._inputs) + [out]
    if not op._inputs:
        return "no inputs"
    for t in tensors:
        if t._dtype.is_string or t._shape.dims is None:
            return "string dtype or unknown rank"
    return check_op(od, tuple(t._dtype.np_dtype for t in op._inputs), tuple(len(t._shape.dims) for t in op._inputs),
                    op._attrs, out._dtype.np_dtype)


class _Grouper:
    def __init__(self, graph, preserve: frozenset):
        self.graph = graph
        self.preserve = preserve
        self.group_of: dict = {}      # id(op) -> gid
        self.groups: dict = {}        # gid -> list of ops
        self.first: dict = {}         # gid -> smallest member _id
        self._next = 0

    def _reaches(self, starts: list, inside, lo: int) -> bool:
        """Does a backward walk from `starts` (ops outside) reach an op for which inside(op) is true?"""
        seen: set = set()
        stack = [p for p in starts if p._id >= lo]
        while stack:
            o = stack.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            if inside(o):
                return True
            for t in o._inputs:
                p = t._op
                if p._id >= lo and id(p) not in seen:
                    stack.append(p)
            for c in o._control_inputs:
                if c._id >= lo and id(c) not in seen:
                    stack.append(c)
        return False

    def _valid(self, gids: list, op) -> bool:
        gset = set(gids)
        in_group = lambda o: o is op or self.group_of.get(id(o)) in gset  # noqa: E731
        # a group that was valid before only gains the edges into `op`; a merge needs a full check
        members = [m for g in gids for m in self.groups[g]] + [op] if len(gids) > 1 else [op]
        outside: list = []
        for m in members:
            for t in m._inputs:
                p = t._op
                if in_group(p):
                    if p._name in self.preserve:
                        return False              # a preserved (maybe fed) value must not be used inside
                else:
                    outside.append(p)
        if not outside:
            return True
        lo = min(self.first[g] for g in gids)
        return not self._reaches(outside, lambda o: o is not op and self.group_of.get(id(o)) in gset, lo)

    def _new(self, op) -> None:
        g = self._next
        self._next += 1
        self.groups[g] = [op]
        self.first[g] = op._id
        self.group_of[id(op)] = g

    def _join(self, gids: list, op) -> None:
        g = gids[0]
        for other in gids[1:]:
            for m in self.groups.pop(other):
                self.group_of[id(m)] = g
                self.groups[g].append(m)
            self.first[g] = min(self.first[g], self.first.pop(other))
        self.groups[g].append(op)
        self.group_of[id(op)] = g

    def add(self, op) -> None:
        cands: list = []
        for t in op._inputs:
            g = self.group_of.get(id(t._op))
            if g is not None and g not in cands:
                cands.append(g)
        if len(cands) > 1 and self._valid(cands, op):
            self._join(cands, op)
            return
        for g in sorted(cands, key=lambda g: -len(self.groups[g])):
            if self._valid([g], op):
                self._join([g], op)
                return
        self._new(op)


def find_groups(graph, preserve: frozenset = frozenset(), min_ops: int = 2) -> list:
    """The groups to fuse in `graph` (each with inputs and outputs filled), in creation order."""
    gr = _Grouper(graph, preserve)
    for op in graph._ops:
        if fusible_reason(op) is None:
            gr.add(op)
    consumers: dict = {}
    ctrl_used: set = set()
    for op in graph._ops:
        for t in op._inputs:
            consumers.setdefault(id(t), []).append(op)
        for c in op._control_inputs:
            ctrl_used.add(id(c))
    exported = {id(t) for t in list(graph.inputs) + list(graph.outputs)}
    for items in graph._collections.values():
        exported.update(id(x) for x in items)
    out = []
    for gid, members in gr.groups.items():
        members.sort(key=lambda o: o._id)
        grp = Group(members)
        if grp.compute_ops < min_ops:
            continue
        mset = {id(m) for m in members}
        seen: set = set()
        for m in members:
            for t in m._inputs:
                if id(t._op) not in mset and id(t) not in seen:
                    seen.add(id(t))
                    grp.inputs.append(t)
            t = m._outputs[0]
            if (m._name in preserve or id(m) in ctrl_used or id(t) in exported or id(m) in exported
                    or any(id(c) not in mset for c in consumers.get(id(t), ()))):
                grp.outputs.append(m)
        if grp.outputs:
            out.append(grp)
    out.sort(key=lambda g: g.members[0]._id)
    return out
