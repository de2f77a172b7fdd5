"""Placement: assign every op of a graph to one of the session's devices (the pipeline's `place` stage).

Devices: `SessionConfig(device_count={"CPU": n})` gives n virtual CPUs,
`/job:localhost/replica:0/task:0/device:CPU:i` (`local_devices`); a
distributed session's `SessionConfig(cluster=...)` gives that many CPUs (one
by default) on every task, `/job:worker/replica:0/task:1/device:CPU:0`.

`place_graph(graph, config, feeds, roots, preserve)` places the ops that the
roots (fetched tensors' ops, targets) need, as TensorFlow places the graph
pruned to the fetches, following TensorFlow's placer:

1. Colocation groups: every op that reads or writes a variable (its `var`
   attr: graphjit's reference edge) goes with the variable, i.e. all ops of
   one variable form one group; ops made under `colocate_with(t)` join t's
   group (`op._colocate`); groups that share an op merge.  An
   If/While/Case op is one op: its bodies run whole where it is placed.
2. A group's request merges its members' requests (`op.device`); two
   members asking for different values of one field is a colocation
   conflict: InvalidArgumentError naming both ops and requests (with
   `allow_soft_placement` the first member's request wins).  A group with
   graph variables takes only their initializers' requests: the variable's
   readers and writers follow it (TF places a resource's users with it).
3. Candidates: the devices matching the request whose type has a kernel for
   every member (`OpDef.kernels`).  None: with `allow_soft_placement` the
   request is dropped (any device with the kernels); otherwise
   InvalidArgumentError naming the op, the request and the available devices.
4. Cost model, for a group with several candidates (e.g. no request):
   the default is the candidate receiving the most input bytes from already
   placed ops (static shape x itemsize; an unknown dimension counts as 1),
   so that the fewest bytes cross devices; ties go to the lowest device
   index (device 0 by default).  The group moves to another candidate only
   when a list schedule of estimated compute and transfer times says it
   finishes clearly earlier there (cost_model.py: heavy independent branches
   spread over devices; measured times from a Session's traced runs replace
   the estimates; each device type has its own cost table, device_types.py).
   Groups are placed in creation (topological) order.
5. Equal ops: an op the `common_subexpression` pass will merge into an
   earlier one (same type, attrs, request and inputs, nothing stateful) goes
   where that one went and costs nothing more, so a branch built twice is
   placed on one device and computed once.

The result is a copy of the graph (the user's ops are not touched) whose ops
carry their full device name.  With one device and no op asking for a device
the graph is returned unchanged (every op is on the only device; nothing to
rewrite).  `log_device_placement=True` prints one line per op,
`name: (Type): device`, as TensorFlow does.

Bodies of control-flow ops and traced functions are not placed on their own
(`device_count=None` in their config): they run where their op runs.

Imports `eager` and sibling modules, and `graph_runtime.passes` (its
`Rewriter` makes the copy).
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np

from eager.errors import InvalidArgumentError

from .compiler import prune
from .cost_model import IN_PROCESS, DeviceClocks
from .op_traits import variables_of
from .device_spec import DeviceSpec
from .device_types import device_types
from .passes.core import PassContext
from .passes.cse import merge_key
from .passes.op_keys import has_subgraphs
from .passes.rewriter import Rewriter, is_stateful

_FIELDS = ("job", "replica", "task", "device_type", "device_index")


@dataclass(frozen=True)
class Device:
    """One device of a session: `name` (full device string) and `device_type`."""

    name: str
    device_type: str
    memory_limit_bytes: int = 0


def local_devices(config) -> list:
    """The devices `config.device_count` creates (one CPU when it is None; the CPUs first, then the other
    registered device types in registration order, device_types.py), or, for a distributed session
    (`config.cluster`), that many CPUs on every task of the cluster, task by task (cluster_spec.py)."""
    counts = {"CPU": 1, **(config.device_count or {})}
    if config.cluster is not None:
        return [Device(f"{t.name}/device:CPU:{i}", "CPU") for t in config.cluster.tasks()
                for i in range(counts["CPU"])]
    return [Device(f"/job:localhost/replica:0/task:0/device:{kind}:{i}", kind)
            for kind in device_types() if kind in counts for i in range(counts[kind])]


def _matches(spec: DeviceSpec, device: DeviceSpec) -> bool:
    return all(getattr(spec, f) is None or getattr(spec, f) == getattr(device, f) for f in _FIELDS)


def _tensor_bytes(t) -> int:
    dims = t._shape._dims
    n = 1
    for d in (dims or ()):
        n *= d if isinstance(d, int) and d >= 0 else 1
    try:
        item = np.dtype(t._dtype.as_numpy_dtype).itemsize
    except (AttributeError, TypeError):
        item = 8
    return n * item


def _groups(ops) -> dict:
    """op name -> group key; ops of one variable, and ops joined by `colocate_with`, share a key."""
    parent: dict = {}

    def find(k):
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(a, b):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[rb] = ra

    for op in ops:
        for var in variables_of(op):        # every variable it touches: an optimizer's slots too
            union(("var", id(var)), op._name)
        for name in op._colocate:
            union(name, op._name)
    return {op._name: find(op._name) for op in ops}


def _merged_request(members) -> tuple:
    """(merged DeviceSpec, first member, conflict or None) of a colocation group.

    A group holding variables made in the graph takes its request from their initializers (where the
    variables were created): the other ops that read or write them follow the variables, whatever their
    own device scope asked (as TensorFlow places the users of a resource with the resource; a read made
    under `device("/job:worker")` of a variable on `/job:ps` runs on the ps)."""
    inits = [op for op in members if any(getattr(v, "initializer", None) is op for v in variables_of(op))]
    merged, first = DeviceSpec(), None
    for op in (inits or members):
        if not op._device:
            continue
        spec = DeviceSpec.from_string(op._device)
        for f in _FIELDS:
            a, b = getattr(merged, f), getattr(spec, f)
            if a is not None and b is not None and a != b:
                return merged, first, op
        merged = merged.merge(spec)
        first = first or op
    return merged, first, None


def assign(ops, config, graph_ops=None, measured=None, links=IN_PROCESS) -> dict:
    """op name -> full device name for every op of `ops` (creation order; see the module docstring).

    `graph_ops` (default `ops`): all ops of the graph; a variable's requests come from all its ops, also
    those this run does not need (the initializer made under the variable's device scope).  `measured`:
    op name -> measured microseconds (cost_model.py), from a Session's traced runs.  `links`: transfer
    times between the devices (cost_model.Links; a distributed runtime's tasks are separate processes).
    """
    devices = local_devices(config)
    specs = [DeviceSpec.from_string(d.name) for d in devices]
    names = [d.name for d in devices]
    soft = config.allow_soft_placement
    group_of = _groups(graph_ops if graph_ops is not None else ops)
    members: dict = {}
    for op in (graph_ops if graph_ops is not None else ops):
        members.setdefault(group_of[op._name], []).append(op)
    placed: dict = {}
    in_run = {op._name for op in ops}
    clocks = DeviceClocks([d.device_type for d in devices], measured, links)
    twin_of = _twins(ops, group_of) if len(devices) > 1 else {}
    order, follows = _generators_last(ops, members, group_of)
    for op in order:
        if op._name in placed:
            continue
        twin = twin_of.get(op._name)
        if twin is not None:            # computed once: common_subexpression merges it into its twin
            placed[op._name] = placed[twin._name]
            clocks.alias(op, twin)
            continue
        group = members[group_of[op._name]]
        request, first, conflict = _merged_request(group)
        if conflict is not None:
            if not soft:
                raise InvalidArgumentError(
                    f"Cannot colocate nodes {first._name!r} (requests {first._device!r}) and {conflict._name!r} "
                    f"(requests {conflict._device!r}): they share a variable or a colocate_with group, so they must "
                    f"be on one device. "
                    f"Available devices: {names}", op_name=conflict._name)
            request = DeviceSpec.from_string(first._device)
        kernels_ok = [i for i, s in enumerate(specs) if all(s.device_type in m._opdef.kernels for m in group)]
        cands = [i for i in kernels_ok if _matches(request, specs[i])]
        if not cands:
            if not soft or not kernels_ok:
                asker = first or op
                why = ("no kernel for it on these devices" if not kernels_ok else
                       "no device matching that specification exists")
                raise InvalidArgumentError(
                    f"Cannot assign a device for operation {asker._name!r} ({asker.type}): it requests "
                    f"{asker._device!r} ({why}). Available devices: {names}. Set "
                    f"SessionConfig(allow_soft_placement=True) to place it on an available device instead.",
                    op_name=asker._name)
            cands = kernels_ok
        best = cands[0]
        if placed.get(follows.get(op._name)) in cands:
            best = placed[follows[op._name]]
        elif len(cands) > 1 and not (config.cluster is not None and any(variables_of(m) for m in group)):
            # (a distributed session keeps each variable on one task for its lifetime: a variable's group
            # with no request goes to the first candidate, whatever the run, not where its inputs are)
            incoming = dict.fromkeys(cands, 0)
            for m in group:
                sources = [(t._op._name, _tensor_bytes(t)) for t in m._inputs]
                for src, nbytes in sources + [(c._name, 0) for c in m._control_inputs]:
                    src = placed.get(src)
                    if src in incoming:
                        incoming[src] += nbytes + 1         # an edge carrying no bytes still ties it there
            best = max(cands, key=lambda i: (incoming[i], -i))
            best = clocks.choose(group, cands, best, placed, _tensor_bytes, in_run)
        clocks.commit(group, best, placed, _tensor_bytes, in_run)
        for m in group:
            placed[m._name] = best
    return {name: names[i] for name, i in placed.items()}


def _generators_last(ops, members: dict, group_of: dict) -> tuple:
    """(the ops in placing order, generator name -> its first consumer's name).

    A generator (an op with no inputs and no control inputs, alone in its group, asking for no device: a
    constant) is placed after the others, on its first consumer's device, as TensorFlow's placer
    colocates generators with their consumer: placed first, it would go to device 0 and cost its consumer
    a transfer every step (between tasks, a millisecond for a scalar)."""
    consumer: dict = {}
    for op in ops:
        for t in op._inputs:
            consumer.setdefault(t._op._name, op._name)
    follows = {op._name: consumer[op._name] for op in ops
               if op._name in consumer and not op._inputs and not op._control_inputs and not op._device
               and len(members[group_of[op._name]]) == 1}
    order = [op for op in ops if op._name not in follows] + [op for op in ops if op._name in follows]
    return order, follows


def _twins(ops, group_of) -> dict:
    """op name -> an earlier op the `common_subexpression` pass will merge it into once both are on one
    device (same type, attrs, request and merged inputs), for ops with no colocation group of their own:
    placing the two apart would compute the value twice."""
    first: dict = {}
    rep: dict = {}              # id(op) -> its representative op
    twins: dict = {}
    for op in ops:
        if is_stateful(op) or has_subgraphs(op) or not op._inputs or not op._outputs or \
                group_of[op._name] != op._name:        # (a constant goes with its own first user instead)
            continue
        ins = [rep.get(id(t._op), t._op)._outputs[t._index] for t in op._inputs]
        ctrl = [rep.get(id(c), c) for c in op._control_inputs]
        key = merge_key(op, ins, ctrl)
        other = first.setdefault(key, op)
        if other is not op:
            rep[id(op)] = other
            twins[op._name] = other
    return twins


def variable_device(graph, var, config) -> str:
    """The device `var` lives on in a session with `config`: where `assign` puts its colocation group
    (with no other op of the run: the group's requests and kernels decide, so every run agrees)."""
    ops = [op for op in graph._ops if any(v is var for v in variables_of(op))]
    if not ops:
        return local_devices(config)[0].name
    return assign(ops[:1], config, graph._ops)[ops[0]._name]


def place_graph(graph, config, feeds=(), roots=None, preserve=(), measured=None, links=IN_PROCESS) -> tuple:
    """(placed graph, op name -> device) for the ops `roots` need (module docstring).

    The placed graph is a copy whose needed ops carry their full device name (the others keep their
    request: nothing runs them), or `graph` itself when there is one device and no needed op asks for one.
    """
    ops = list(graph._ops) if roots is None else prune(feeds, (), roots)
    every = assign(ops, config, graph._ops, measured, links)
    assignment = {op._name: every[op._name] for op in ops}
    if config.log_device_placement:
        for op in ops:
            print(f"{op._name}: ({op.type}): {assignment[op._name]}")
    if len(local_devices(config)) == 1 and not any(op._device for op in ops):
        return graph, assignment
    rw = Rewriter(graph, PassContext(preserve=frozenset(preserve), keep_stateful=True))
    for op in graph._ops:
        new = rw.copy(op)
        new._device = assignment.get(op._name, op._device)
    return rw.finish(keep_stateful=True), assignment
