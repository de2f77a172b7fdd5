"""The multi-device runner: one compiled plan per device partition, run concurrently through a rendezvous.

`MultiDevicePlan(parts, plans)` is what `pipeline.prepare` returns when a
run's ops are on several devices (partition.py).  Calling `fn(*feeds)` makes
one `Rendezvous` for the step, runs every non-main partition on its own
thread (one executor thread per device) and the main one on the caller's
thread, each with its share of the feeds.  Joining every device thread is
the step's barrier: only then are the variables the run returns read (their
value after the run, with every partition's writes), so no partition sends
the main one a "done" value.  The first partition to fail
aborts the step: the other partitions' `_Recv`s raise `StepAborted`, every
thread is joined, and the original op's error is raised (not an abort).
The main partition's result is the run's result.

A small step runs without the device threads (`inline_order`): when the
other devices' share of the step is estimated (cost_model.py) under
`INLINE_US`, about what the two thread hand-overs of a step cost, no op of it
writes state or calls back into Python, and the partitions can run one after
another (each receives only what an earlier one sent), the caller's thread
runs them in that order.  Results are the same (the order is a topological
order of the step); only the thread hops go.  Its rendezvous never blocks: a
receive that finds nothing is an internal error, raised at once.

A traced run (`RunOptions(trace_level=FULL_TRACE)`) interprets every
partition through `run_with` (executors.TracingExecutor), so step_stats hold
the ops of every device, each with its device.  With an inter-op thread pool
(`inter_op_parallelism_threads > 1`) the device threads are the inter-op
threads (executors.ParallelExecutor).  Partial runs (partial_run.py) step
each partition's schedule themselves and run each call's share of every
partition on its device thread through `each(work)`, the same runner; no
one asks a multi-device plan for a single `schedule` (it raises).

`close()` shuts the device threads down (the Session closes every plan it
made, `Session.close`); a closed plan's run raises RuntimeError.

Imports `eager.registry` and sibling modules.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from eager import fp_semantics
from eager.registry import device_type

from . import deadline
from .cost_model import TRANSFER_OVERHEAD_US, compute_us
from .op_traits import has_side_effects
from .plan import Schedule
from .rendezvous import Rendezvous, StepAborted, current_or_none, set_current

INLINE_US = 2 * TRANSFER_OVERHEAD_US    # a step whose other devices' work is estimated under this runs inline
_TRANSFER_OPS = ("_Send", "_Recv")


class MultiDevicePlan:
    def __init__(self, parts: list, plans: list, container: str = "list"):
        self.parts = parts
        self.plans = plans          # the main partition's plan returns a list, None where a variable's value goes
        self.container = container
        self._var_returns = [(i, r) for i, r in enumerate(parts[0].returns) if r.kind == "var"]
        self.devices = [p.device for p in parts]
        self.optimization_report = None
        self._feed_index = [[i for i, _ in p.feeds] for p in parts]
        self._closed = False
        self._inline = inline_order(parts)
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(parts) - 1), thread_name_prefix="graphjit-device",
                                        initializer=fp_semantics.quiet_thread)

    @property
    def partition_graphs(self) -> list:
        return [p.graph for p in self.parts]

    def __call__(self, *vals):
        return self.fn(*vals)

    @property
    def schedule(self):
        raise NotImplementedError(
            f"this run is split across devices {self.devices}: it has one schedule per partition, none for the "
            f"whole step (run it with `fn`, or through an executor that knows MultiDevicePlan)")

    def map_error(self, e):
        return e

    def close(self) -> None:
        """Shut down the plan's device threads (waits for a running step); later runs raise RuntimeError."""
        self._closed = True
        self._pool.shutdown(wait=True)

    def fn(self, *vals):
        return self.run_with(None, vals)

    def run_with(self, runner, vals):
        """One step; `runner(plan, args)` runs one partition's plan (None: its generated code; the tracing
        executor passes its interpreter, which names the failing op itself)."""
        args = [[vals[i] for i in idx] for idx in self._feed_index]
        if runner is None and self._inline is not None:
            result = self._run_inline(args)
        elif runner is None:
            result = self.each(lambda k: self.plans[k].fn(*args[k]), map_errors=True)[0]
        else:
            result = self.each(lambda k: runner(self.plans[k], args[k]))[0]
        for i, r in self._var_returns:         # every partition has finished: the values after the step
            result[i] = Schedule.result(r, None)
        if self.container == "single":
            return result[0]
        return result if self.container == "list" else tuple(result)

    def _run_inline(self, args: list) -> list:
        """One step with every partition on the caller's thread, in `self._inline`'s order."""
        if self._closed:
            raise RuntimeError(f"this multi-device plan (devices {self.devices}) was closed with its Session")
        outer = current_or_none()
        set_current(_InlineRendezvous())
        try:
            for k in self._inline:
                try:
                    out = self.plans[k].fn(*args[k])
                except Exception as e:
                    raise self.plans[k].map_error(e) from None
                if k == 0:
                    result = out
            return result
        finally:
            set_current(outer)

    def each(self, work, map_errors: bool = False) -> list:
        """Run `work(k)` for every partition k under one rendezvous, partition k > 0 on its device thread and
        the main one on the caller's thread; join them all (the barrier) and return their results, or raise
        the first real error (the others' aborts are not).  `map_errors`: errors of generated code are
        mapped to their op (plan.map_error); interpreters name the op themselves."""
        if self._closed:
            raise RuntimeError(f"this multi-device plan (devices {self.devices}) was closed with its Session")
        rdv = Rendezvous()
        at = deadline.get()             # the step's deadline holds on every device thread, with the step's
        # abort signal: a device's failure stops the others' loops too, not only their _Recv waits
        futures = [self._pool.submit(_run, rdv, self.plans[k], work, k, at, map_errors)
                   for k in range(1, len(self.plans))]
        outcomes = []
        try:
            results = [_run(rdv, self.plans[0], work, 0, at, map_errors)]
        except BaseException as e:          # noqa: B902 - joined below, re-raised
            results, outcomes = [None], [e]
        for f in futures:
            try:
                results.append(f.result())
            except BaseException as e:       # noqa: B902
                outcomes.append(e)
        if outcomes:
            real = [e for e in outcomes if not isinstance(e, StepAborted)]
            raise (real or outcomes)[0]
        return results


def _run(rdv: Rendezvous, plan, work, k: int, at, map_errors: bool):
    set_current(rdv)
    before = deadline.swap(at, rdv.signal)
    try:
        return work(k)
    except StepAborted:
        raise
    except Exception as e:
        cause = e
        while cause is not None and not isinstance(cause, StepAborted):
            cause = cause.__cause__ or cause.__context__
        if isinstance(cause, StepAborted):
            rdv.abort(cause)
            raise cause from None
        err = plan.map_error(e) if map_errors else e
        rdv.abort(err)
        raise err from None
    finally:
        deadline.swap(*before)
        set_current(None)


class _InlineRendezvous(Rendezvous):
    """The rendezvous of an inline step: every value is sent before it is received, so nothing waits."""

    def recv(self, key: str):
        try:
            return self._values.pop(key)
        except KeyError:
            raise RuntimeError(f"internal error: an inline multi-device step received {key!r} before any "
                               f"partition sent it (inline_order is wrong)") from None


def inline_order(parts: list) -> Optional[list]:
    """The partition indices in an order in which the caller's thread can run them one after another, or
    None when the step should use the device threads (module docstring): the other devices' ops are
    estimated at `INLINE_US` or more, an op writes state or runs Python (its thread, or that it runs
    concurrently with the others, may be observed), or two partitions receive from each other."""
    sends, recvs, other_us = [], [], 0.0
    for k, part in enumerate(parts):
        sent, received = set(), set()
        for op in part.graph._ops:
            kind = op._opdef.name
            if kind == "_Send":
                sent.add(op._attrs["key"])
            elif kind == "_Recv":
                received.add(op._attrs["key"])
            elif has_side_effects(op):          # py_function is a write too
                return None
            elif k > 0:
                other_us += compute_us(op, None, device_type(part.device))
        sends.append(sent)
        recvs.append(received)
    if other_us >= INLINE_US:
        return None
    order, available = [], set()
    while len(order) < len(parts):      # lowest index first among the partitions whose receives were sent
        k = next((k for k in range(len(parts)) if k not in order and recvs[k] <= available), None)
        if k is None:
            return None
        order.append(k)
        available |= sends[k]
    return order
