"""Executors: the ways to run a `Plan`'s schedule, and the one place that chooses among them.

- generated code (the default): `plan.fn`, the function codegen.py wrote for
  the schedule; `select(options, run_metadata, pool)` returns None for it, so
  callers keep their zero-overhead fast path.
- `TracingExecutor(run_metadata)` (`RunOptions(trace_level=FULL_TRACE)`):
  interprets the steps one by one with `Step.apply`, recording an `OpStats`
  per op (times from `clock`, nanoseconds: wall time by default;
  `time.thread_time_ns` gives the calling thread's CPU time per op, which a
  profile on a busy machine needs).  Ops holding bodies (`Step.interpret`) run their bodies through this
  same executor (`run_body`), so the ops inside a While body appear once per
  iteration, named `<outer op>/<body op>`.  A `_Send`'s stats carry the
  bytes it sent and those transfer compression saved.
- `ParallelExecutor(pool)` (`inter_op_parallelism_threads > 1`): runs
  independent ready steps on a thread pool.  Each step waits for its `deps`
  (producers of its inputs, its control inputs, and the previous read or
  write: effects keep their creation order).  The calling thread is the
  scheduler: it runs one ready step itself, submits the other ready steps,
  collects completions from a queue, releases each value after its last
  consumer, and re-raises the first failure naming the op.  NumPy releases
  the GIL inside large kernels, so independent big ops overlap; tiny graphs
  gain nothing.  Bodies run as generated code (`run_body` calls `plan.fn`).

Both interpreting executors run steps with NumPy's floating-point warnings off
(TensorFlow semantics, eager/fp_semantics.py: the tracing executor for the
whole run, the parallel one per step, since a thread does not inherit it);
the parallel one hands the step's deadline (deadline.py) to its threads too.

Both interpreting executors start from `Schedule.initial_values` and end with
`Schedule.finish`, and run a step with `Step.call`/`Step.store`.

Imports `eager.fp_semantics`, `eager.tensor.HOST_DEVICE` and sibling modules.
"""
from __future__ import annotations

import queue
import time
import threading
from collections import deque

from eager import fp_semantics
from eager.tensor import HOST_DEVICE

from . import deadline
from .multi_device import MultiDevicePlan
from .partition import transfer_bytes
from .run_config import OpStats
from .runtime_errors import op_error


_TRANSFERS = ("_Send", "_Recv")


def select(options, run_metadata, pool):
    """The executor for one run (None: the plan's generated code), shared by Session.run and make_callable."""
    if options is not None and options.trace_level:
        return TracingExecutor(run_metadata)
    if pool is not None:
        return ParallelExecutor(pool)
    return None


class TracingExecutor:
    """Interpret the steps one by one, recording per-op timings in `run_metadata.step_stats`."""

    def __init__(self, run_metadata=None, clock=time.perf_counter_ns):
        self.run_metadata = run_metadata
        self.clock = clock
        self.stats: list = []
        self._prefix = ""
        self._t_start = 0
        self._lock = threading.Lock()

    def run(self, plan, feed_values):
        self._t_start = self.clock()
        with fp_semantics.ignoring():
            if isinstance(plan, MultiDevicePlan):
                result = plan.run_with(self._run_partition, feed_values)
            else:
                result = self._interpret(plan.schedule, feed_values)
        md = self.run_metadata
        if md is not None:
            md.step_stats.extend(self.stats)
            md.total_us = (self.clock() - self._t_start) / 1e3
        return result

    def _run_partition(self, plan, args):
        """One device's partition of a multi-device step, on its thread: own stats, the step's clock."""
        part = TracingExecutor(self.run_metadata, self.clock)
        part._t_start = self._t_start
        with fp_semantics.ignoring():
            try:
                return part._interpret(plan.schedule, args)
            finally:
                with self._lock:
                    self.stats.extend(part.stats)

    def run_body(self, plan, args) -> tuple:
        """Run a body plan (its schedule returns a tuple) through this executor."""
        return self._interpret(plan.schedule, args)

    def _interpret(self, sched, feed_values):
        values = sched.initial_values(feed_values)
        clock = self.clock
        record = self.run_metadata is not None
        last_use = sched.last_use
        for i, s in enumerate(sched.steps):
            if s.noop:
                continue
            prefix = self._prefix
            if s.interpret is not None:
                self._prefix = prefix + s.op.name + "/"
            t0 = clock()
            try:
                res = s.call(values, self)
            except Exception as e:
                raise op_error(s.op, e) from None
            finally:
                self._prefix = prefix
            t1 = clock()
            sent = (0, 0)
            if record and s.op.type == "_Send":
                sent = transfer_bytes(values[s.inputs[0]], s.op._attrs.get("compression", ""))
            outs = s.store(values, res)
            for v in s.inputs:
                if last_use.get(v) == i:
                    values[v] = None
            if record:
                self.stats.append(OpStats(prefix + s.op.name, s.op.type, (t0 - self._t_start) / 1e3, (t1 - t0) / 1e3,
                                          tuple(getattr(o, "shape", ()) for o in outs), s.op.device or HOST_DEVICE,
                                          *sent, s.op._attrs.get("key", "") if s.op.type in _TRANSFERS else ""))
        return sched.finish(values)


class ParallelExecutor:
    """Run independent ready steps on `pool` (a concurrent.futures executor); see the module docstring."""

    def __init__(self, pool):
        self.pool = pool

    def run_body(self, plan, args) -> tuple:
        try:
            return plan.fn(*args)
        except Exception as e:
            raise plan.map_error(e) from None

    def run(self, plan, feed_values):
        if isinstance(plan, MultiDevicePlan):
            # several devices: the inter-op threads are the device threads (one per partition, each running
            # its partition in creation order, which cannot deadlock on a `_Recv`)
            try:
                return plan.fn(*feed_values)
            except Exception as e:
                raise plan.map_error(e) from None
        sched = plan.schedule
        values = sched.initial_values(feed_values)
        steps, consumers, fetched, consts = sched.steps, sched.consumers, sched.fetched, sched.consts
        pending = list(sched.indegree)
        remaining_uses = dict(sched.refcount)
        done: queue.SimpleQueue = queue.SimpleQueue()
        pool = self.pool
        step_state = deadline.state()   # the step's deadline and abort signal hold on the pool threads too

        def execute(i):
            try:
                with fp_semantics.ignoring(), deadline.scope(*step_state):   # per thread: threads don't inherit it
                    return i, steps[i].call(values), None
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
            s.store(values, res)
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
        return sched.finish(values)
