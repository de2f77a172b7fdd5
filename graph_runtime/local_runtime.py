"""`LocalRuntime`: a Session's graph run in this process (the empty target).

`prepare` runs the whole graph-to-plan pipeline (`pipeline.prepare`: prune,
place on the session's devices, optimize, partition per device, compile);
the executable's direct function is the generated plan, which checks the
feeds and returns the requested container itself.  Runs with a trace level
go through the tracing interpreter (`executors.TracingExecutor`, per-op
stats in `RunMetadata`; on several devices those times refine later
placements: `measured`), `RunOptions(timeout_in_ms=t)` runs under a
deadline (deadline.py), and a session with
`inter_op_parallelism_threads > 1` runs every step on its thread pool.
Partial runs: partial_run.py.  Variables live in the `Variable` objects, so
state is shared with eager code and other sessions.

Imports sibling modules and `eager` (the assign kernel, for Saver restores).
"""
from __future__ import annotations

import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from eager import fp_semantics
from eager.registry import device_type
from eager.variables import assign_kernel

from . import deadline, partial_run as _partial
from .executors import select
from .multi_device import MultiDevicePlan
from .partition import partition_graph_defs
from .pipeline import prepare
from .placement import local_devices
from .run_config import SessionConfig
from .runtime import Executable, Request, Runtime, register_runtime


class LocalRuntime(Runtime):
    """Runs a session's plans in this process, one thread per device (module docstring)."""

    targets = "'' (this process)"

    def __init__(self, target: str, graph, config: SessionConfig):
        if config.cluster is not None:
            raise ValueError("Session: SessionConfig(cluster=...) needs a distributed target such as "
                             "Session(target='ray://local', config=...)")
        # a Session always places its graphs: no device_count means one CPU (placement.py)
        config = config if config.device_count is not None else replace(config, device_count={"CPU": 1})
        super().__init__(target, graph, config)
        self.devices = local_devices(config)
        n = config.inter_op_parallelism_threads
        self._pool = (ThreadPoolExecutor(max_workers=n, thread_name_prefix="graphjit-inter-op",
                                         initializer=fp_semantics.quiet_thread) if n > 1 else None)
        self._partial_runs = weakref.WeakSet()     # handles alive (a dropped handle is freed by the gc)
        self._device_plans = weakref.WeakSet()     # multi-device plans alive: close() stops their threads
        self._measured: dict = {}     # op name -> microseconds, from traced runs (placement's cost model)

    def prepare(self, request: Request) -> Executable:
        plan = prepare(request.graph, request.feeds, (), request.targets, self.config, returns=request.returns,
                       container=request.container, measured=self._measured)
        if isinstance(plan, MultiDevicePlan):
            self._device_plans.add(plan)
        return Executable(self, request, plan, direct=self._pool is None, report=plan.optimization_report)

    def executor(self, executable, options, run_metadata):
        chosen = select(options, run_metadata, self._pool)
        ms = options.timeout_in_ms if options is not None else 0
        if chosen is None and not (ms and ms > 0):
            return None
        plan = executable.plan

        def run(values):
            with deadline.scope(deadline.monotonic() + ms / 1000 if ms and ms > 0 else None):
                if chosen is not None:
                    return chosen.run(plan, list(values))
                try:
                    return plan.fn(*values)
                except Exception as e:
                    raise plan.map_error(e) from None

        return run

    def after_run(self, executable, options, run_metadata) -> None:
        super().after_run(executable, options, run_metadata)
        if options.trace_level and len(self.devices) > 1:
            for s in run_metadata.step_stats:
                if device_type(s.device or self.devices[0].name) == "CPU":   # cost_model: CPU times
                    self._measured[s.name] = s.duration_us

    def partition_graph_defs(self, executable) -> list:
        return partition_graph_defs(executable.plan, self.devices[0].name)

    # -- partial runs -------------------------------------------------------------------
    def partial_run_setup(self, session, fetches, feeds):
        handle = _partial.setup(session, fetches, feeds)
        self._partial_runs.add(handle)
        return handle

    def partial_run(self, session, handle, fetches, feed_dict):
        return _partial.run(session, handle, fetches, feed_dict)

    # -- variables, for Saver --------------------------------------------------------------
    def read_variables(self, variables) -> list:
        """The current values of `variables` (None where one holds no value)."""
        return [v.stored_array() for v in variables]

    def assign_variables(self, pairs) -> None:
        """Set variables ((Variable, array) pairs; checked by the caller)."""
        for var, value in pairs:
            assign_kernel(value, var)     # the AssignVariableOp kernel: checked, under the variable's lock

    def close(self) -> None:
        for plan in list(self._device_plans):   # before the executables go: dropping a plan's last reference
            plan.close()                         # would leave its threads exiting in the background
        for h in list(self._partial_runs):
            h.release()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


register_runtime("", LocalRuntime)
