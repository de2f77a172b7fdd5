"""`Session`: run graph fetches with feeds through cached compiled plans.

`Session.run(fetches, feed_dict)` looks up a runner keyed by the identity of
the fetches (and their structure) and of the feed_dict keys, in order.  On a
miss it resolves names and hands them to the graph-to-plan pipeline
(`pipeline.prepare`: prune, place, optimize, partition, compile).  On a
hit the cost beyond the kernels themselves is one key, one dict lookup, one
call: feed checks are inlined in the generated code and the plan returns the
requested container directly (nested dicts/namedtuples are rebuilt after).

Semantics: fetched values are NumPy arrays (NumPy scalars for rank 0), ops give
None, variables give their value after the run.  Only the ops the fetches need
run; stateful ops run when fetched, targeted, or a control input of something
that runs.  `RunOptions(timeout_in_ms=t)` gives the run a deadline
(deadline.py: checked at every `_Recv` wait and While iteration, raising
`DeadlineExceededError`); `SessionConfig.operation_timeout_in_ms` is for
distributed sessions only.  Variables live in the `Variable` objects, so state is shared with
eager code and other sessions.  `with Session() as sess:` makes it the default
session (for `Tensor.eval`/`Operation.run`) and its graph the default graph
(as in TensorFlow), and closes it at the end; `as_default()` only makes it the
default session.

Partial runs (`partial_run_setup` / `partial_run`): partial_run.py.
`Session(target="ray://...")` makes the subclass registered for that target
prefix in `TARGET_SESSIONS` (graph_runtime/distributed: a cluster of Ray actors).

Imports sibling modules and `eager.variables` (the assign kernel, for Saver restores).
"""
from __future__ import annotations

import contextlib
import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Optional

from eager.variables import _assign_kernel

from . import deadline
from .fetches import fetch_key, resolve_feeds, resolve_fetches
from .graph import Graph, get_default_graph
from .operation import GraphTensor, Operation
from .executors import select
from .multi_device import MultiDevicePlan
from . import partial_run as _partial
from .pipeline import prepare
from .partition import partition_graph_defs
from .placement import local_devices
from .run_config import OpStats, RunMetadata, RunOptions, SessionConfig, _sessions, get_default_session

__all__ = ["Session", "SessionConfig", "RunOptions", "RunMetadata", "OpStats", "get_default_session"]

_MAX_CACHED_RUNNERS = 1024

# target prefix -> the Session subclass serving it (registered by graph_runtime.distributed: "ray://")
TARGET_SESSIONS: dict = {}


class _Runner:
    __slots__ = ("plan", "fn", "packer")

    def __init__(self, plan, packer):
        self.plan = plan
        self.fn = plan.fn
        self.packer = packer


# ------------------------------------------------------------------ default session
class Session:
    """Runs a graph (see docs/api.md and the module docstring)."""

    def __new__(cls, target: str = "", graph: Optional[Graph] = None, config: Optional[SessionConfig] = None):
        if cls is Session and isinstance(target, str):
            for prefix, session_class in TARGET_SESSIONS.items():
                if target.startswith(prefix):       # e.g. "ray://": distributed/master.py
                    return super().__new__(session_class)
        return super().__new__(cls)

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Optional[SessionConfig] = None):
        if target not in ("", None):
            raise ValueError(f"Session: the target is '' (this process) or 'ray://local', 'ray://auto', "
                             f"'ray://HOST:PORT' (a cluster of Ray actors), got {target!r}")
        if config is not None and isinstance(config, SessionConfig) and config.cluster is not None \
                and type(self) is Session:
            raise ValueError("Session: SessionConfig(cluster=...) needs a distributed target such as "
                             "Session(target='ray://local', config=...)")
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"Session: graph must be a Graph, got {type(graph).__name__}")
        if config is not None and not isinstance(config, SessionConfig):
            raise TypeError(f"Session: config must be a SessionConfig, got {type(config).__name__}")
        self._graph = graph if graph is not None else get_default_graph()
        config = config or SessionConfig()
        # a Session always places its graphs: no device_count means one CPU (placement.py)
        self._config = config if config.device_count is not None else replace(config, device_count={"CPU": 1})
        self._devices = local_devices(self._config)
        self._runners: dict = {}
        self._closed = False
        n = self._config.inter_op_parallelism_threads
        self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="graphjit-inter-op") if n > 1 else None
        self.last_optimization_report = None
        self._partial_runs = weakref.WeakSet()     # handles alive (a dropped handle is freed by the gc)
        self._device_plans = weakref.WeakSet()     # multi-device plans alive: close() stops their threads
        self._graph_contexts: list = []
        self._restore_last_checkpoint = None
        self._measured: dict = {}     # op name -> microseconds, from traced runs (placement's cost model)

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def config(self) -> SessionConfig:
        return self._config

    def list_devices(self) -> list:
        """The session's devices (`Device`: `.name`, the full device string, and `.device_type`)."""
        return list(self._devices)

    # -- running ---------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Compute `fetches` (tensor, op, name, variable, or nested structure) given `feed_dict`."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        t = type(fetches)
        fkey = fetches if t is GraphTensor or t is Operation else fetch_key(fetches)
        if feed_dict:
            key = (fkey, *feed_dict)
            vals = feed_dict.values()
        else:
            key = (fkey,)
            vals = ()
        runner = self._runners.get(key)
        if runner is None:
            runner = self._make_runner(fetches, list(feed_dict) if feed_dict else [], key)
        if options is None and self._pool is None:
            try:
                out = runner.fn(*vals)
            except Exception as e:
                raise runner.plan.map_error(e) from None
        else:
            out = self._execute(runner.plan, list(vals), options, run_metadata)
        return out if runner.packer is None else runner.packer(out)

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """A function `f(*feed_values)` equivalent to `run(fetches, dict(zip(feed_list, feed_values)))`."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        feed_list = list(feed_list or [])
        runner = self._make_runner(fetches, feed_list, None)
        plan, fn, packer, n = runner.plan, runner.fn, runner.packer, len(feed_list)
        sess = self

        def call(*feed_values, options=None, run_metadata=None):
            if len(feed_values) != n:
                raise TypeError(f"this callable takes {n} feed values ({[str(f) for f in feed_list]}), got "
                                f"{len(feed_values)}")
            if sess._closed:
                raise RuntimeError("Attempted to use a closed Session.")
            if options is None and sess._pool is None:
                try:
                    out = fn(*feed_values)
                except Exception as e:
                    raise plan.map_error(e) from None
            else:
                out = sess._execute(plan, list(feed_values), options, run_metadata)
            return out if packer is None else packer(out)

        return call

    def _execute(self, plan, vals: list, options, run_metadata):
        """One run of `plan` with `options`: its executor, its deadline (`timeout_in_ms`), its metadata."""
        ex = select(options, run_metadata, self._pool)
        ms = options.timeout_in_ms if options is not None else 0
        with deadline.scope(deadline.monotonic() + ms / 1000 if ms and ms > 0 else None):
            if ex is not None:
                out = ex.run(plan, vals)
            else:
                try:
                    out = plan.fn(*vals)
                except Exception as e:
                    raise plan.map_error(e) from None
        if options is not None and run_metadata is not None:
            self._after_run(plan, options, run_metadata)
        return out

    def _after_run(self, plan, options, run_metadata) -> None:
        """Partition graphs for `run_metadata`; a traced run's op times refine later placements."""
        if options.output_partition_graphs:
            run_metadata.partition_graphs = partition_graph_defs(plan, self._devices[0].name)
        if options.trace_level and len(self._devices) > 1:
            for s in run_metadata.step_stats:
                self._measured[s.name] = s.duration_us

    # -- partial runs -------------------------------------------------------------------
    def partial_run_setup(self, fetches, feeds=None):
        """A handle for running `fetches` piece by piece as `feeds` arrive (partial_run.py)."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        handle = _partial.setup(self, fetches, feeds)
        self._partial_runs.add(handle)
        return handle

    def partial_run(self, handle, fetches, feed_dict=None):
        """Feed `feed_dict` and compute `fetches` (declared at setup) in the partial run `handle`."""
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        return _partial.run(self, handle, fetches, feed_dict)

    def _make_runner(self, fetches, feed_keys, key) -> _Runner:
        graph = self._graph
        feeds = resolve_feeds(graph, feed_keys)
        items, targets, container, packer = resolve_fetches(graph, fetches)
        plan = prepare(graph, feeds, (), targets, self._config, returns=items, container=container,
                       measured=self._measured)
        self.last_optimization_report = plan.optimization_report
        if isinstance(plan, MultiDevicePlan):
            self._device_plans.add(plan)
        runner = _Runner(plan, packer)
        if key is not None:
            if len(self._runners) >= _MAX_CACHED_RUNNERS:
                self._runners.clear()
            self._runners[key] = runner
        return runner

    # -- variables, for Saver (tracing/save/saver.py) ----------------------------------------
    def _read_variables(self, variables) -> list:
        """The current values of `variables` (None where one holds no value)."""
        return [v._value for v in variables]

    def _assign_variables(self, pairs) -> None:
        """Set variables ((Variable, array) pairs; checked by the caller)."""
        for var, value in pairs:
            _assign_kernel(value, var)     # the AssignVariableOp kernel: checked, under the variable's lock

    def _remember_checkpoint(self, restore) -> None:
        """A Saver saved a checkpoint with this session; `restore()` would restore it."""
        self._restore_last_checkpoint = restore

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Release the session's resources; further runs raise RuntimeError."""
        self._closed = True
        for plan in list(self._device_plans):   # before the runners go: dropping a plan's last reference
            plan.close()                         # would leave its threads exiting in the background
        self._runners.clear()
        for h in list(self._partial_runs):
            h.release()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    @property
    def closed(self) -> bool:
        return self._closed

    @contextlib.contextmanager
    def as_default(self):
        """Make this the default session (for `Tensor.eval`) without closing it afterwards."""
        _sessions.stack.append(self)
        try:
            yield self
        finally:
            _sessions.stack.remove(self)

    def __enter__(self):
        ctx = self._graph.as_default()
        ctx.__enter__()
        self._graph_contexts.append(ctx)
        _sessions.stack.append(self)
        return self

    def __exit__(self, *exc):
        if self in _sessions.stack:
            _sessions.stack.remove(self)
        try:
            if self._graph_contexts:
                self._graph_contexts.pop().__exit__(None, None, None)
        finally:
            self.close()
        return False

    def __repr__(self):
        return f"<Session graph={self._graph!r}{' closed' if self._closed else ''}>"
