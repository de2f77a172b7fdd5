"""The placer's cost model: estimated compute time per op, transfer time per edge, device clocks.

Placement (placement.py) walks colocation groups in creation order.  For a
group with several candidate devices it first takes the *default*: the
candidate receiving the most input bytes from already placed ops (fewest
bytes cross devices), device 0 on a tie.  `DeviceClocks.choose` then moves
the group elsewhere only when that finishes it at least `MIGRATION_US` plus
one transfer back earlier, by a list schedule of the ops placed so far:

- a device is busy until the estimated finish of the ops placed on it;
- a group is ready when its inputs are: their producers' finish times, plus
  the transfer time for an input produced on another device (a control
  input crosses as an empty message: the link's overhead);
- its compute time is the sum of its members' `compute_us`.

Transfer time depends on the link (`Links`): between devices of one
process (device threads of a local Session, or the devices of one task)
`TRANSFER_OVERHEAD_US` + bytes at `BYTES_PER_US`; between processes (the
tasks of a distributed session) the runtime's own cost, which a Ray runtime
measures when the session starts (one actor-to-actor round trip,
distributed/master.py) at `REMOTE_BYTES_PER_US`.  With a remote overhead of
a millisecond or two, a small graph nobody placed stays on one task: moving
an op to another task never finishes it earlier.

`compute_us(op, measured, device_type)` is the op's time on a device of
`device_type`: an estimate from static shapes with that type's cost table
(device_types.py; the CPU's: `2*m*n*k` flops for MatMul,
`2*outputs*kh*kw*in_channels` for Conv2D, at `flops_per_us`; `element_us`
per output element otherwise; plus `op_overhead_us`), or the op's measured
duration (microseconds, from a traced run's `RunMetadata.step_stats`, which
a Session collects: so the placement of later runs uses what was measured),
scaled by the ratio of the type's estimate to the CPU's (measurements come
from CPU devices).  Unknown dimensions count as 1.  Cheap ops therefore stay
where their inputs are, independent heavy branches spread over devices, and
a slower device type gets only what finishes earlier there anyway.

Imports `device_types` only.
"""
from __future__ import annotations

from .device_types import DeviceCosts, costs_of

TRANSFER_OVERHEAD_US = 30.0   # one Send/Recv pair between device threads (bench_devices)
BYTES_PER_US = 10_000.0       # copy bandwidth, 10 GB/s
REMOTE_BYTES_PER_US = 200.0   # between Ray actors on one machine, through the object store (bench_distributed:
                              # a 4 MB transfer costs about 20 ms)
MIGRATION_US = 100.0          # leave the default device only to finish this much earlier


def _elements(shape) -> int:
    n = 1
    for d in (shape._dims or ()):
        n *= d if isinstance(d, int) and d > 0 else 1
    return n


def _dims(shape) -> list:
    return [d if isinstance(d, int) and d > 0 else 1 for d in (shape._dims or ())]


def compute_us(op, measured=None, device_type: str = "CPU") -> float:
    """Estimated (or measured) run time of `op` on a device of `device_type`, in microseconds (module
    docstring)."""
    costs = costs_of(device_type)
    hit = measured.get(op._name) if measured else None
    if hit is not None:
        cpu = costs_of("CPU")
        return float(hit) if costs is cpu else float(hit) * _estimate(op, costs) / _estimate(op, cpu)
    return _estimate(op, costs)


def _estimate(op, costs: DeviceCosts) -> float:
    out = sum(_elements(t._shape) for t in op._outputs)
    kind = op._opdef.name
    if kind in ("MatMul", "BatchMatMulV2") and op._inputs:
        a = _dims(op._inputs[0]._shape)
        k = (a[-2] if op._attrs.get("transpose_a") or op._attrs.get("adj_x") else a[-1]) if len(a) >= 2 else 1
        return costs.op_overhead_us + 2.0 * out * k / costs.flops_per_us
    if kind == "Conv2D" and len(op._inputs) > 1:
        w = _dims(op._inputs[1]._shape)
        if len(w) == 4:
            return costs.op_overhead_us + 2.0 * out * w[0] * w[1] * w[2] / costs.flops_per_us
    return costs.op_overhead_us + costs.element_us * out


def transfer_us(nbytes: int) -> float:
    """A transfer between two devices of one process."""
    return TRANSFER_OVERHEAD_US + nbytes / BYTES_PER_US


class Links:
    """Transfer times between a session's devices (module docstring).

    `process[i]`: which process device i lives in (None: all in this one);
    `remote_us`: the overhead of one transfer between processes.
    """

    def __init__(self, process=None, remote_us: float = TRANSFER_OVERHEAD_US,
                 remote_bytes_per_us: float = REMOTE_BYTES_PER_US):
        self.process = process
        self.remote_us = remote_us
        self.remote_bytes_per_us = remote_bytes_per_us

    def transfer_us(self, src: int, dst: int, nbytes: int) -> float:
        if self.process is None or self.process[src] == self.process[dst]:
            return transfer_us(nbytes)
        return self.remote_us + nbytes / self.remote_bytes_per_us


IN_PROCESS = Links()


class DeviceClocks:
    """The list schedule placement keeps while it places groups (module docstring)."""

    def __init__(self, device_types: list, measured=None, links: Links = IN_PROCESS):
        self.types = list(device_types)        # per device index (device_types.py: each its cost table)
        self.free = [0.0] * len(self.types)
        self.finish: dict = {}             # op name -> estimated finish time
        self.measured = measured
        self.links = links

    def _ready(self, group, device: int, placed: dict, nbytes) -> float:
        ready = self.free[device]
        names = {m._name for m in group}
        for m in group:
            edges = [(t._op._name, t) for t in m._inputs] + [(c._name, None) for c in m._control_inputs]
            for src, t in edges:
                if src in names or src not in self.finish:
                    continue
                at = self.finish[src]
                if placed.get(src) != device:
                    at += self.links.transfer_us(placed[src], device, 0 if t is None else nbytes(t))
                ready = max(ready, at)
        return ready

    def choose(self, group, cands, default: int, placed: dict, nbytes, in_run) -> int:
        """`default`, or a candidate finishing `group` at least MIGRATION_US earlier, plus one transfer back
        to the default device (what the group's users there will wait for; placing one group at a time, the
        join of two branches is not seen when the first branch moves)."""
        end = {d: self._ready(group, d, placed, nbytes) + self._cost(group, d, in_run) for d in cands}
        best = min(cands, key=lambda d: (end[d], d != default, d))
        back = self.links.transfer_us(best, default, 0) if best != default else 0.0
        return best if end[best] + MIGRATION_US + back < end[default] else default

    def alias(self, op, twin) -> None:
        """`op` is computed by `twin` (placement's equal ops): it finishes with it and occupies nothing."""
        if twin._name in self.finish:
            self.finish[op._name] = self.finish[twin._name]

    def _cost(self, group, device: int, in_run) -> float:
        return sum(compute_us(m, self.measured, self.types[device]) for m in group if m._name in in_run)

    def commit(self, group, device: int, placed: dict, nbytes, in_run) -> None:
        t = self._ready(group, device, placed, nbytes)
        for m in group:
            if m._name in in_run:
                t += compute_us(m, self.measured, self.types[device])
                self.finish[m._name] = t
        self.free[device] = t
