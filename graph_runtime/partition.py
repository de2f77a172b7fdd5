"""Partitioning: split a placed graph into one graph per device, joined by `_Send`/`_Recv` pairs.

`split(graph, feeds, returns, targets)` (the pipeline's `partition` stage,
after placement and the optimizer) takes the ops the run needs; when they
are on several devices it builds, for each device, a graph holding that
device's ops (names kept), in the original creation order:

- a data edge from device s to device d becomes `_Send(t)` on s and one
  `_Recv` on d per (tensor, destination device) (TF merges Recv nodes the
  same way); the key is `"tensor;src;dst"` (one rendezvous per step, so no
  step id);
- with `transfer_compression`, a float32 value crosses as float16 or as
  its high 16 bits (zero-padded back on arrival); other dtypes as they are
  (a traced run's `_Send` stats carry bytes sent and saved: `transfer_bytes`);
- a control edge across devices sends a dummy scalar, whose `_Recv` becomes
  the control input;
- a fed tensor is fed into every partition that uses it (a `Placeholder`
  standing for it where it is not produced);
- the first device's partition is the main one: the run's returns (fetched
  values, None for targets, variables read after the run) come from it, so
  fetched tensors of other devices are sent to it; a target runs in its own
  device's partition.  Nothing else crosses: the variables are read after
  the runner has joined every partition (multi_device.py), not by a "done"
  message.

If/While/Case ops are single ops: their bodies run whole on their device.
An op that overwrites an input's buffer (the memory pass's
`InplaceElementwise`, `OpDef.extra["writes_input"]`) becomes its
out-of-place op when that input comes from another device: the received
buffer is the sender's (or, between processes, a read-only deserialized one).
A `_Recv` no `_Send` of the step feeds (one imported from a GraphDef) is
refused before the step runs (InvalidArgumentError).
Each partition is built in one order of the whole step (the pipeline's
`order`: device_schedule.py; else creation order), a topological order of
the step, with each `_Send` right after the op making its value and each
`_Recv` right before its first reader: run sequentially per device in that
order (the partitions' plans use it as their schedule), a `_Recv` only waits
for a `_Send` earlier in it, so A->B->A chains do not deadlock.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eager import dtypes
from eager.errors import InvalidArgumentError
from eager.ops.constant import CONST
from eager.registry import Spec, op as register_op

from .compiler import prune
from .graph import Graph
from .graph_ops import PLACEHOLDER
from .plan import ReturnItem
from .rendezvous import current


def _send_kernel(x, key, compression=""):
    if compression == "float16":
        x = np.asarray(x, np.float32).astype(np.float16)
    elif compression == "truncate16":
        x = (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)   # the high 16 bits
    current().send(key, x)


def transfer_bytes(x, compression: str = "") -> tuple:
    """(bytes sent, bytes saved by `compression`) of one `_Send` of `x`: the step stats of a traced run
    (a compressed value is float32, sent as 2 bytes an element)."""
    a = np.asarray(x)
    sent = a.size * 2 if compression else a.nbytes
    return sent, a.nbytes - sent


def _recv_kernel(key, dtype, shape, compression=""):
    x = current().recv(key)
    if compression == "float16":
        return np.asarray(x).astype(np.float32)
    if compression == "truncate16":
        return (np.asarray(x).astype(np.uint32) << 16).view(np.float32)           # low 16 bits zero
    return x


SEND = register_op("_Send", _send_kernel, lambda specs, attrs: [], num_outputs=0, effect="write",
                   extra={"unordered": True},      # writes only its own key (op_traits.is_ordered)
                   doc="Send its input to another device's partition (partition.py).")
RECV = register_op("_Recv", _recv_kernel, lambda specs, attrs: [Spec(attrs["shape"], attrs["dtype"])],
                   effect="input", doc="Receive a value sent by another device's partition (partition.py).")


@dataclass
class Part:
    """One device's partition: its graph, feeds (index into the run's feeds, tensor), returns, targets."""

    device: str
    graph: Graph
    feeds: list = field(default_factory=list)
    returns: list = field(default_factory=list)
    targets: list = field(default_factory=list)
    return_index: list = field(default_factory=list)    # gather=False: the run's return index of each return


def _add(part: "Part", opdef, inputs, attrs: dict, name: str, controls=()):
    """A new op of `part`'s graph on `part`'s device (`controls`: its control inputs)."""
    g = part.graph
    with g.control_dependencies(list(controls)):
        op = g.add_node(opdef, tuple(inputs), attrs, name)      # (add_node makes the name unique)
    op._device = part.device
    return op


def _dummy(part: "Part", name: str, controls=()):
    """A scalar constant that runs after `controls`: what a control edge sends across devices."""
    return _add(part, CONST, (), {"value": np.zeros((), np.float32)}, name, controls)._outputs[0]


def split(graph, feeds, returns, targets, default_device: str, compression: str = "", gather: bool = True,
          var_device=None, order=None) -> list:
    """The partitions of a run (module docstring), or [] when its ops are on one device.

    An op without a device (made by an optimizer pass after placement) runs on `default_device`.
    `compression` ("float16", "truncate16" or ""): how float32 values cross devices (lossy; the
    config's `transfer_compression`, off by default).  `order(ops, devices)` (optional): the needed ops
    (creation order) and their devices -> the same ops in the order the step runs them
    (device_schedule.py); each partition is built in that order.

    `gather=False` (distributed sessions, where each partition runs in its own process): there is no main
    partition; each partition returns the fetched values it computes and the variables that live on its
    device (`var_device(var)` -> device), with `Part.return_index` giving each one's index in the run's
    returns; fetches of fed tensors and op targets (None) are left to the caller.  Partitions are made
    even when every op is on one device, and for a device that only holds a fetched variable.
    """
    fetches = [r.tensor for r in returns if r.kind == "value"]
    ops = prune(feeds, fetches, targets)
    where = {id(op): op._device or default_device for op in ops}
    devices = list(dict.fromkeys(where.values()))
    if not gather:
        devices += [var_device(r.var) for r in returns if r.kind == "var"]
        devices = list(dict.fromkeys(devices))
    elif len(devices) <= 1:
        return []
    devices.sort()
    if order is not None and (len(devices) > 1 or not gather):
        ops = order(ops, [where[id(op)] for op in ops])
    splitter = _Splitter(graph, devices, feeds, where, compression)
    fed = splitter.fed
    runs = [op for op in ops if not (op._outputs and all(id(o) in fed for o in op._outputs) and
                                     op._opdef.effect != "write")]      # an op whose outputs are all fed does not
    readers = _remote_readers(runs, where, fed, splitter.main.device if gather else None, fetches)
    for op in runs:
        splitter.copy_op(op, readers)
    if gather:
        splitter.return_from_main(returns)
    else:
        splitter.return_where_computed(returns, var_device)
    splitter.add_targets(targets)
    _check_senders(splitter.parts.values())
    return [splitter.parts[d] for d in devices]


class _Splitter:
    """The partitions being built: each op copied into its device's graph; a value or control edge that
    crosses devices becomes a `_Send` right after its producer and one `_Recv` (per tensor and
    destination) right before its first reader."""

    def __init__(self, graph, devices, feeds, where: dict, compression: str):
        self.parts = {d: Part(d, Graph(f"{graph.name}@{d}", resources=graph.resources)) for d in devices}
        self.main = self.parts[devices[0]]
        self.where = where                                      # id(src op) -> its device
        self.fed = {id(t): i for i, t in enumerate(feeds)}      # id(fed tensor) -> index in the run's feeds
        self.compression = compression
        self.local: dict = {}     # (id(src tensor or control op), device) -> its stand-in in that device's graph
        self.made: dict = {}      # id(src op) -> op in its partition

    def copy_op(self, op, readers: dict) -> None:
        """`op` in its device's partition (inputs received there when made elsewhere), then a `_Send` to each
        other device that reads one of its outputs or has it as a control input (`readers`)."""
        fed, where, made = self.fed, self.where, self.made
        d = where[id(op)]
        ins = tuple(self.value_in(t, d) for t in op._inputs)
        ctrl = tuple(self.control_in(c, d) for c in op._control_inputs if id(c) in made)   # else: fed, not run
        opdef, attrs = op._opdef, op._attrs
        writes = opdef.extra.get("writes_input")
        if writes is not None:
            t = op._inputs[attrs[writes[0]]]
            if id(t) in fed or where[id(t._op)] != d:     # never write into a buffer from another device
                opdef, attrs = writes[1](attrs)
        graph = self.parts[d].graph
        made[id(op)] = graph._create_op(opdef, ins, attrs, op._name,
                                        [Spec(o._shape._dims, o._dtype, o._static_value) for o in op._outputs],
                                        ctrl, d, op._frames)
        graph._name_counts.setdefault(op._name, 1)
        for t in op._outputs:
            for dst in readers.get(id(t), ()):
                self.send(t, d, dst)
        for dst in readers.get(id(op), ()):
            self.send_control(op, d, dst)

    def _how(self, t) -> dict:
        return {"compression": self.compression} if self.compression and t._dtype == dtypes.float32 else {}

    def send(self, t, src, d) -> None:
        """`_Send` of `t` from `src` to `d`, right after its producer: the receiver need not wait for more."""
        s = self.parts[src]
        s.targets.append(_add(s, SEND, (self.made[id(t._op)]._outputs[t._index],),
                              {"key": f"{t.name};{src};{d}", **self._how(t)}, f"{t._op._name}/_send_{t._index}"))

    def send_control(self, c, src, d) -> None:
        """A dummy scalar sent from `src` to `d` once `c` has run: a control edge across devices."""
        s = self.parts[src]
        dummy = _dummy(s, f"{c._name}/_ctrl", [self.made[id(c)]])
        s.targets.append(_add(s, SEND, (dummy,), {"key": f"^{c._name};{src};{d}"}, f"{c._name}/_send"))

    def feed_in(self, t, d):
        """Fed tensor `t` in device `d`'s graph: its producer there if copied, else a `Placeholder`."""
        part, key = self.parts[d], (id(t), d)
        if key not in self.local:
            if self.where.get(id(t._op)) == d and id(t._op) in self.made:
                self.local[key] = self.made[id(t._op)]._outputs[t._index]
            else:
                self.local[key] = _add(part, PLACEHOLDER, (), {"dtype": t._dtype, "shape": t._shape},
                                       f"{t._op._name}/_feed_{t._index}")._outputs[0]
            part.feeds.append((self.fed[id(t)], self.local[key]))
        return self.local[key]

    def value_in(self, t, d):
        """Tensor `t` as device `d`'s graph sees it: fed, made there, or a `_Recv` made right before its
        first reader."""
        if id(t) in self.fed:
            return self.feed_in(t, d)
        src = self.where[id(t._op)]
        if src == d:
            return self.made[id(t._op)]._outputs[t._index]
        key = (id(t), d)
        if key not in self.local:
            self.local[key] = _add(self.parts[d], RECV, (), {"key": f"{t.name};{src};{d}", "dtype": t._dtype,
                                                             "shape": t._shape._dims, **self._how(t)},
                                   f"{t._op._name}/_recv_{t._index}")._outputs[0]
        return self.local[key]

    def control_in(self, c, d):
        """Control input `c` as device `d`'s graph sees it: the op itself, or the `_Recv` of its dummy."""
        src = self.where[id(c)]
        if src == d:
            return self.made[id(c)]
        key = (id(c), d)
        if key not in self.local:
            self.local[key] = _add(self.parts[d], RECV, (), {"key": f"^{c._name};{src};{d}",
                                                             "dtype": dtypes.float32, "shape": ()},
                                   f"{c._name}/_recv")
        return self.local[key]

    def return_from_main(self, returns) -> None:
        """Every return comes from the main partition (fetched values of other devices are sent to it)."""
        main = self.main
        main.returns = [ReturnItem("value", tensor=self.value_in(r.tensor, main.device)) if r.kind == "value"
                        else r for r in returns]

    def return_where_computed(self, returns, var_device) -> None:
        """Each fetched value from the partition computing it, each variable from its device's partition."""
        for i, r in enumerate(returns):
            if r.kind == "value" and id(r.tensor) not in self.fed:
                owner = self.parts[self.where[id(r.tensor._op)]]
                owner.returns.append(ReturnItem("value", tensor=self.value_in(r.tensor, owner.device)))
            elif r.kind == "var":
                owner = self.parts[var_device(r.var)]
                owner.returns.append(r)
            else:
                continue
            owner.return_index.append(i)

    def add_targets(self, targets) -> None:
        for o in targets:
            if id(o) in self.made:
                self.parts[self.where[id(o)]].targets.append(self.made[id(o)])


def _remote_readers(runs, where, fed, main, fetches) -> dict:
    """id(tensor) -> the other devices that read it; id(op) -> the other devices with an op that has it as a
    control input; `main` (gathering partitions) reads every fetched value."""
    out: dict = {}
    running = {id(op) for op in runs}
    for op in runs:
        d = where[id(op)]
        for t in op._inputs:
            if id(t) not in fed and where[id(t._op)] != d:
                out.setdefault(id(t), {})[d] = None
        for c in op._control_inputs:
            if id(c) in running and where[id(c)] != d:
                out.setdefault(id(c), {})[d] = None
    if main is not None:
        for t in fetches:
            if id(t) not in fed and where[id(t._op)] != main:
                out.setdefault(id(t), {})[main] = None
    return out


def _check_senders(parts) -> None:
    """Every `_Recv` of the step has a `_Send` for its key (an imported `_Recv` may not: it would wait forever)."""
    ops = [o for p in parts for o in p.graph._ops]
    sent = {o._attrs["key"] for o in ops if o._opdef is SEND}
    for o in ops:
        if o._opdef is RECV and o._attrs["key"] not in sent:
            loc = o.location
            raise InvalidArgumentError(
                f"_Recv {o.name!r}{f' (created at {loc})' if loc is not None else ''} waits for key "
                f"{o._attrs['key']!r:.200}, which no _Send of this step sends: it would wait forever", op_name=o.name)


def partition_graph_defs(plan, default_device: str) -> list:
    """`RunMetadata.partition_graphs`: a GraphDef dict per graph the plan runs, every node with its full
    device (ops without one run on `default_device`)."""
    out = []
    for g in plan.partition_graphs:
        gd = g.as_graph_def()
        for node in gd["nodes"]:
            node["device"] = node.get("device") or default_device
        out.append(gd)
    return out
