"""The order a multi-device step runs in: each device runs its ops in the configured schedule's order,
except that it runs work that is ready before it would wait for a value from another device.

`step_order(ops, devices, fed, fetches, kind, measured)` takes a step's needed
ops (creation order) and the device of each, and returns them in one order
for the whole step; `partition.split` builds every device's partition in it
(a `_Send` right after the op making the value, a `_Recv` right before its
first reader), and each partition's plan runs its ops in that order.

How: a list schedule simulated with placement's cost model (cost_model.py:
`compute_us` per op on its device's type, the runtime's transfer time per
value crossing devices: `cost_model.Links`).  Each device, when free, takes among its ops whose inputs have
arrived the one the configured schedule ("creation", "alap" or "memory",
scheduling.py) runs first; when none has arrived it waits for the earliest
and then chooses again.  So a device whose next op in schedule order waits
for a `_Recv` runs its independent work first (the seeds' "receives late"),
and with nothing to wait for each device keeps exactly its share of the
configured order (what that schedule chose for memory).

No deadlock: the result is a topological order of the whole step (an op is
taken only after every op it depends on), every partition runs a
subsequence of it, and each `_Recv` follows its `_Send` in it; so the first
op of that order not yet run can always run.  The simulated times only pick
among valid orders: a wrong estimate costs time, never correctness.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

import heapq

from eager.registry import device_type

from .cost_model import compute_us, transfer_us
from .scheduling import dependency_edges, order_ops, static_bytes

_CONTROL_BYTES = 4        # what a control edge sends across devices (a dummy scalar)


def step_order(ops: list, devices: list, fed: set, fetches, kind: str, measured=None, transfer=None) -> list:
    """`ops` (creation order) in the order the step runs them (module docstring); `devices[i]` is the device
    of `ops[i]`, `fed` the ids of fed tensors, `measured` op name -> microseconds (cost_model.py),
    `transfer(src device, dst device, bytes)` -> microseconds (default: between threads of this process)."""
    transfer = transfer or (lambda src, dst, nbytes: transfer_us(nbytes))
    n = len(ops)
    rank = {id(op): k for k, op in enumerate(order_ops(ops, fed, fetches, kind))}
    preds, succs = dependency_edges(ops, fed)
    names = sorted(set(devices))
    dev = [names.index(d) for d in devices]
    types = [device_type(d) for d in names]
    cost = [compute_us(op, measured, types[dev[i]]) for i, op in enumerate(ops)]
    index = {id(op): i for i, op in enumerate(ops)}
    finish = [0.0] * n
    free = [0.0] * len(names)
    waiting = [[] for _ in names]         # per device: (arrival of the inputs, rank, op index)
    ready = [[] for _ in names]           # per device: (rank, op index) of ops whose inputs are there

    def release(i):
        crossing: dict = {}
        for t in ops[i]._inputs:
            j = index.get(id(t._op))
            if j is not None and id(t) not in fed and dev[j] != dev[i]:
                crossing[j] = crossing.get(j, 0) + static_bytes(t)
        at = 0.0
        for j in preds[i]:
            if dev[j] != dev[i]:
                at = max(at, finish[j] + transfer(names[dev[j]], names[dev[i]], crossing.get(j, _CONTROL_BYTES)))
            else:
                at = max(at, finish[j])
        heapq.heappush(waiting[dev[i]], (at, rank[id(ops[i])], i))

    def arrive(d, until):
        w = waiting[d]
        while w and w[0][0] <= until:
            _, r, i = heapq.heappop(w)
            heapq.heappush(ready[d], (r, i))

    pending = [len(p) for p in preds]
    for i in range(n):
        if not pending[i]:
            release(i)
    out = []
    while len(out) < n:
        best = None
        for d in range(len(names)):
            arrive(d, free[d])
            start = free[d] if ready[d] else (waiting[d][0][0] if waiting[d] else None)
            if start is not None and (best is None or start < best[0]):
                best = (start, d)
        if best is None:      # cannot happen for a graph in creation order; never guess
            raise RuntimeError(f"device schedule placed {len(out)} of {n} ops (cycle in the needed ops?)")
        start, d = best
        if not ready[d]:      # idle until the next value arrives; whatever has arrived by then competes
            free[d] = start
            arrive(d, start)
        _, i = heapq.heappop(ready[d])
        out.append(i)
        finish[i] = free[d] = start + cost[i]
        for j in succs[i]:
            pending[j] -= 1
            if not pending[j]:
                release(j)
    return [ops[i] for i in out]
