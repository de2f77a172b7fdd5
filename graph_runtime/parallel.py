"""Inter-op parallelism: run independent ready steps of a `Plan` on a thread pool.

Used by `Session` when `SessionConfig.inter_op_parallelism_threads > 1`.  Each
step waits for its `deps` (producers of its inputs, its control inputs, and the
previous stateful step: stateful ops keep their creation order, so assigns,
reads, random draws and prints happen in program order).  The calling thread
is the scheduler: it submits ready steps, collects completions from a queue,
releases each value after its last consumer, and re-raises the first failure
naming the op.  NumPy releases the GIL inside large kernels, so independent
big ops overlap; tiny graphs gain nothing (use the default, 1).

Imports sibling modules only.
"""
from __future__ import annotations

import queue

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
    """Execute `plan` with `pool` (a concurrent.futures executor); returns like `plan(*feed_values)`."""
    consumers, indegree, refcount, fetched = _consumers(plan)
    values = plan.initial_values(feed_values)
    steps = plan.steps
    pending = list(indegree)
    remaining_uses = dict(refcount)
    done: queue.SimpleQueue = queue.SimpleQueue()

    def work(i):
        s = steps[i]
        try:
            res = None if s.noop else s.fn(*[values[v] for v in s.inputs])
            done.put((i, res, None))
        except BaseException as e:  # noqa: BLE001 - handed to the scheduler thread
            done.put((i, None, e))

    in_flight = 0
    for i, p in enumerate(pending):
        if p == 0:
            pool.submit(work, i)
            in_flight += 1
    left = len(steps)
    error = None
    while left and in_flight:
        i, res, err = done.get()
        in_flight -= 1
        left -= 1
        if err is not None:
            error = error or op_error(steps[i].op, err)
            continue
        if error is not None:
            continue
        s = steps[i]
        outs = (res,) if len(s.outputs) == 1 else (tuple(res) if s.outputs else ())
        for vid, val in zip(s.outputs, outs):
            if vid >= 0:
                values[vid] = val
        for v in s.inputs:
            remaining_uses[v] -= 1
            if remaining_uses[v] == 0 and v not in fetched and v not in plan.consts:
                values[v] = None
        for j in consumers[i]:
            pending[j] -= 1
            if pending[j] == 0:
                pool.submit(work, j)
                in_flight += 1
    if error is not None:
        raise error
    return plan.finish(values)
