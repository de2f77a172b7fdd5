"""Finding the groups of elementwise ops to fuse.

An op is *fusible* when its OpDef is flagged `elementwise`, it is not stateful,
has one output, no control inputs and no subgraph attrs, all its inputs and its
output have a known rank and a numeric or bool dtype, and `recipes.check_op`
accepts it (its kernel gives the dtype the graph declares).  Rank-0 arithmetic
and comparisons that the executor emits as Python operators on NumPy scalars
(`codegen.operator_symbol`: loop counters, conditions) are not fused: 25 ns
per op beats any fused kernel call.

Groups grow greedily in creation (topological) order: each fusible op joins the
groups of its fusible producers (merging them when it joins several), or starts
a new group.  A candidate group must stay *convex*: no path may leave the
group and come back (otherwise the fused op would depend on its own output),
and the graph with every group contracted to one node must stay acyclic (two
groups must not feed each other).  The check walks backwards from the
producers outside the group that feed it, treating other groups as single
nodes (reaching a member continues from all its members), only over ops
created after the group's first member (nothing earlier can lie on such a
path), and fails if it reaches a member; control edges count as paths.
Contracting several groups at once can still close a cycle through ops the
walk does not look behind; `dissolve_cycles` checks the final contracted
graph exactly (Kahn's algorithm) and un-fuses a group on any cycle (rare).  Preserved ops (fed or fetched tensors, targets) may be members, but
only as sinks: no member may consume a preserved member's output inside the
group, because a fed value must reach every consumer.

A group's *outputs* are the members whose value is needed outside it: consumed
by a non-member (data or control edge), preserved, listed in the graph's
function outputs, or stored in a collection.  Multi-output groups are allowed.
Groups with fewer than `min_ops` compute ops (Identity does not count) are not
fused.

Devices: an op joins only groups of its own device (`op.device`), so a fused
op never spans two devices.  Nor does an op join a group whose members wait for
other cross-device transfers than it does: `_Grouper.remote(op)` is the set of
tensors from another device (each a `_Recv` once partitioned) that the op
transitively waits for on its own device, and only ops with equal sets are
grouped.  A fused op starts when all its inputs have arrived, so fusing the
final `a + b` of a branch computed here with a value `b` received from another
device would hold back this device's whole chain until `b` arrives, and the
two devices would run one after the other (bench_devices' two branches).
Fed placeholders are fed on every device and ops without a device are not
counted as remote; with no device placement every set is empty.

Locality: an op joins a group only if it was created at most `max_distance`
ops after the group's newest member.  The fused op runs where its group
starts, so a far-away member (typically a backward op such as the `1 - tanh^2`
of a tanh gradient, which only reads forward values) would be computed early
and its result kept alive across everything in between: more live memory and
slower, not faster (measured on the unrolled RNN benchmark: +6% time).

Imports `graph_runtime` core modules and sibling modules.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Optional

from ..codegen import operator_symbol
from ..op_traits import is_ordered
from ..operation import attr_subgraphs
from ..graph_ops import PLACEHOLDER
from .recipes import check_op


@dataclass
class Group:
    members: list                   # Operations, in creation order
    inputs: list = field(default_factory=list)     # external input tensors, first-use order
    outputs: list = field(default_factory=list)    # member ops whose value leaves the group

    @property
    def compute_ops(self) -> int:
        return sum(1 for m in self.members if not m._opdef.alias)


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
    ins = op._inputs
    if not ins:
        return "no inputs"
    if operator_symbol(op, od.kernel, op._attrs) is not None:
        return "scalar arithmetic (the executor emits a Python operator: cheaper than any fused kernel)"
    if out._dtype.is_string or out._shape.dims is None:
        return "string dtype or unknown rank"
    dtypes, ranks = [], []
    for t in ins:
        dims = t._shape.dims
        if t._dtype.is_string or dims is None:
            return "string dtype or unknown rank"
        dtypes.append(t._dtype._np)
        ranks.append(len(dims))
    return check_op(od, tuple(dtypes), tuple(ranks), op._attrs, out._dtype._np)


class _Grouper:
    def __init__(self, graph, preserve: frozenset, max_distance: int):
        self.graph = graph
        self.preserve = preserve
        self.max_distance = max_distance
        self.last: dict = {}          # gid -> largest member _id
        self.group_of: dict = {}      # id(op) -> gid
        self.groups: dict = {}        # gid -> list of ops
        self.first: dict = {}         # gid -> smallest member _id
        self._next = 0
        self._remote: dict = {}       # id(op) -> frozenset of ids of cross-device tensors it waits for

    def remote(self, op) -> frozenset:
        """Ids of the tensors produced on another device that `op` waits for (see the module docstring)."""
        if not self._remote:
            self._remote[None] = frozenset()
            placed = any(o._device for o in self.graph._ops)
            for o in self.graph._ops:            # creation order is topological: producers come first
                acc: set = set()
                if placed:
                    for t, p in _edges(o):
                        if _same_device(p, o):
                            acc |= self._remote.get(id(p), frozenset())
                        elif p._opdef is not PLACEHOLDER:
                            acc.add(id(t) if t is not None else id(p))
                self._remote[id(o)] = frozenset(acc)
        return self._remote.get(id(op), frozenset())

    def _reaches(self, starts: list, inside, lo: int) -> bool:
        """Does a backward walk from `starts` (ops outside) reach an op for which inside(op) is true?

        Ops created before `lo` (the first member) cannot lie on a path out of the group and back.
        Other groups count as single nodes (they will be contracted): reaching a member continues
        from all of its members, so two groups do not end up feeding each other.  That part is a
        heuristic (it does not look behind ops created before `lo`); `dissolve_cycles` is the
        complete check, done once on the final groups.
        """
        seen: set = set()
        expanded: set = set()
        group_of, groups = self.group_of, self.groups
        stack = list(starts)
        while stack:
            o = stack.pop()
            if id(o) in seen:
                continue
            seen.add(id(o))
            if inside(o):
                return True
            g = group_of.get(id(o))
            if g is not None and g not in expanded:
                expanded.add(g)
                stack.extend(m for m in groups[g] if m._id >= lo and id(m) not in seen)
            if o._id < lo:
                continue
            for t in o._inputs:
                p = t._op
                if (p._id >= lo or id(p) in group_of) and id(p) not in seen:
                    stack.append(p)
            for c in o._control_inputs:
                if (c._id >= lo or id(c) in group_of) and id(c) not in seen:
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
        self.last[g] = op._id
        self.group_of[id(op)] = g

    def _join(self, gids: list, op) -> None:
        g = gids[0]
        for other in gids[1:]:
            for m in self.groups.pop(other):
                self.group_of[id(m)] = g
                self.groups[g].append(m)
            self.first[g] = min(self.first[g], self.first.pop(other))
            self.last.pop(other)
        self.last[g] = op._id
        self.groups[g].append(op)
        self.group_of[id(op)] = g

    def add(self, op) -> None:
        cands: list = []
        for t in op._inputs:
            g = self.group_of.get(id(t._op))
            if g is not None and g not in cands and op._id - self.last[g] <= self.max_distance and \
                    self.groups[g][0]._device == op._device and \
                    self.remote(self.groups[g][0]) == self.remote(op):   # same device, same transfers awaited
                cands.append(g)
        if len(cands) > 1 and self._valid(cands, op):
            self._join(cands, op)
            return
        for g in sorted(cands, key=lambda g: -len(self.groups[g])):
            if self._valid([g], op):
                self._join([g], op)
                return
        self._new(op)


def _edges(op):
    """(tensor, producer) for each data input, (None, op) for each control input."""
    return [(t, t._op) for t in op._inputs] + [(None, c) for c in op._control_inputs]


def _same_device(p, op) -> bool:
    """Same device, or either has none (it runs on the default device: not counted as a transfer)."""
    return not p._device or not op._device or p._device == op._device


UPDATE_DELTA_BYTES = 128 * 1024     # the memory pass's default `memory_min_bytes`


def _update_delta(op, consumers) -> bool:
    """Is `op` a big elementwise product feeding only a variable update (plain SGD's `g * lr`)?

    Left out of groups: the memory pass then computes it into its dead input's buffer and stores the
    update into that same buffer (`var - g * lr` with no new array), which a fused kernel's fresh
    output would prevent.
    """
    out = op._outputs[0]
    n = out._shape.num_elements()
    users = consumers.get(id(out), ())
    return (n is not None and n * out._dtype.np_dtype.itemsize >= UPDATE_DELTA_BYTES and len(users) == 1
            and "update_ufunc" in users[0]._opdef.extra and any(t._shape == out._shape for t in op._inputs))


def find_groups(graph, preserve: frozenset = frozenset(), min_ops: int = 2, max_distance: int = 64) -> list:
    """The groups to fuse in `graph` (each with inputs and outputs filled), in creation order."""
    consumers: dict = {}
    ctrl_used: set = set()
    for op in graph._ops:
        for t in op._inputs:
            consumers.setdefault(id(t), []).append(op)
        for c in op._control_inputs:
            ctrl_used.add(id(c))
    gr = _Grouper(graph, preserve, max_distance)
    for op in graph._ops:
        if fusible_reason(op) is None and not _update_delta(op, consumers):
            gr.add(op)
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


def contracted_order(graph, groups: list):
    """Topological order of the graph with each group contracted: a list of ("op", op) / ("group", k)
    preferring creation order, or `(None, stuck group indices)` if the contracted graph has a cycle.
    Edges: data, control, and program order among reads and writes (`op_traits.is_ordered`)."""
    gid = {id(m): k for k, g in enumerate(groups) for m in g.members}
    node_of = lambda o: ("group", gid[id(o)]) if id(o) in gid else ("op", o._id)  # noqa: E731
    preds: dict = {}
    keys: dict = {}
    payload: dict = {}
    last_effect = None
    for op in graph._ops:
        n = node_of(op)
        keys[n] = min(keys.get(n, op._id), op._id)
        payload[n] = op if n[0] == "op" else n[1]
        ps = preds.setdefault(n, set())
        for p in [t._op for t in op._inputs] + list(op._control_inputs):
            pn = node_of(p)
            if pn != n:
                ps.add(pn)
        if is_ordered(op._opdef):
            # reads and writes keep program order (the executor chains them in the order emitted here): a
            # group fed by a later effect that feeds an earlier one would reorder them, so it is a cycle
            if last_effect is not None and last_effect != n:
                ps.add(last_effect)
            last_effect = n
    succ: dict = {n: [] for n in preds}
    indeg = {n: len(ps) for n, ps in preds.items()}
    for n, ps in preds.items():
        for p in ps:
            succ[p].append(n)
    ready = [(keys[n], n) for n, d in indeg.items() if d == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, n = heapq.heappop(ready)
        order.append((n[0], payload[n]))
        for s in succ[n]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, (keys[s], s))
    if len(order) != len(preds):
        return None, sorted(n[1] for n, d in indeg.items() if d > 0 and n[0] == "group")
    return order, []


def dissolve_cycles(graph, groups: list) -> tuple:
    """`(groups, order)`: drop groups (largest index first) until the contracted graph is acyclic."""
    groups = list(groups)
    while True:
        order, stuck = contracted_order(graph, groups)
        if order is not None:
            return groups, order
        del groups[stuck[-1]]
