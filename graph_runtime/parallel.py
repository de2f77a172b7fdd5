"""Inter-op parallelism: run independent ready steps of a `Plan` on a thread pool.

Used by `Session` when `SessionConfig.inter_op_parallelism_threads > 1`.  Each
step waits for its `deps` (producers of its inputs, its control inputs, and the
previous stateful step: stateful ops keep their creation order, so assigns,
reads, random draws and prints happen in program order).  The calling thread
is the scheduler: it runs one ready step itself, submits the other ready
steps, collects completions from a queue,
releases each value after its last consumer, and re-raises the first failure
naming the op.  NumPy releases the GIL inside large kernels, so independent
big ops overlap; tiny graphs gain nothing (use the default, 1).

Imports sibling modules only.
"""
from __future__ import annotations

import queue
from collections import deque

from .runtime_errors import op_error


def _consumers(plan):
    cached = getattr(plan, "_par_info", None)
    if cached is not None:
        return cached
    n = len(plan.steps)
    consumers = [[] for _ in range(n)]
    indegree = [0] * n
    for i, s in enumerate(plan.steps):
        indegree[i] = len(s.deps)
        for d in s.deps:
            consumers[d].append(i)
    refcount: dict = {}
    for s in plan.steps:
        for v in s.inputs:
            refcount[v] = refcount.get(v, 0) + 1
    fetched = {r.vid for r in plan.returns if r.kind == "value"}
    plan._par_info = (consumers, indegree, refcount, fetched)
    return plan._par_info


def run_parallel(plan, feed_values, pool):
    """Execute `plan` with `pool` (a concurrent.futures executor); returns like `plan(*feed_values)`.

    The calling thread runs one ready step itself and hands the other ready
    steps to the pool, so a serial stretch of the graph costs no thread hops.
    """
    consumers, indegree, refcount, fetched = _consumers(plan)
    values = plan.initial_values(feed_values)
    steps = plan.steps
    pending = list(indegree)
    remaining_uses = dict(refcount)
    done: queue.SimpleQueue = queue.SimpleQueue()
    consts = plan.consts

    def execute(i):
        s = steps[i]
        try:
            return i, (None if s.noop else s.fn(*[values[v] for v in s.inputs])), None
        except BaseException as e:  # noqa: BLE001 - handed to the scheduler
            return i, None, e

    def work(i):
        done.put(execute(i))

    ready = deque(i for i, p in enumerate(pending) if p == 0)
    in_flight = 0
    left = len(steps)
    error = None

    def complete(item):
        nonlocal error, left
        i, res, err = item
        left -= 1
        if err is not None:
            error = error or op_error(steps[i].op, err)
            return
        if error is not None:
            return
        s = steps[i]
        outs = (res,) if len(s.outputs) == 1 else (tuple(res) if s.outputs else ())
        for vid, val in zip(s.outputs, outs):
            if vid >= 0:
                values[vid] = val
        for v in s.inputs:
            remaining_uses[v] -= 1
            if remaining_uses[v] == 0 and v not in fetched and v not in consts:
                values[v] = None
        for j in consumers[i]:
            pending[j] -= 1
            if pending[j] == 0:
                ready.append(j)

    while left and (ready or in_flight):
        if error is not None:
            ready.clear()
        while len(ready) > 1:
            pool.submit(work, ready.popleft())
            in_flight += 1
        if ready:
            complete(execute(ready.popleft()))
            while in_flight:
                try:
                    item = done.get_nowait()
                except queue.Empty:
                    break
                in_flight -= 1
                complete(item)
        elif in_flight:
            item = done.get()
            in_flight -= 1
            complete(item)
    if error is not None:
        raise error
    return plan.finish(values)
