"""`Session`: run graph fetches with feeds through cached compiled plans.

`Session.run(fetches, feed_dict)` looks up a runner keyed by the identity of
the fetches (and their structure) and of the feed_dict keys, in order.  On a
miss it resolves names, asks `optimizer_hook.optimize_for_run` for the graph to
run, and compiles a `Plan` (compiler.py): prune, schedule, generated code.  On a
hit the cost beyond the kernels themselves is one key, one dict lookup, one
call: feed checks are inlined in the generated code and the plan returns the
requested container directly (nested dicts/namedtuples are rebuilt after).

Semantics: fetched values are NumPy arrays (NumPy scalars for rank 0), ops give
None, variables give their value after the run.  Only the ops the fetches need
run; stateful ops run when fetched, targeted, or a control input of something
that runs.  Variables live in the `Variable` objects, so state is shared with
eager code and other sessions.  `with Session() as sess:` makes it the default
session (for `Tensor.eval`/`Operation.run`) and closes it at the end; it does
not change the default graph.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from .compiler import ReturnItem, compile_plan
from .fetches import fetch_key, resolve_feeds, resolve_fetches
from .graph import Graph, get_default_graph
from .operation import GraphTensor, Operation
from .optimizer_hook import optimize_for_run
from .parallel import run_parallel

_MAX_CACHED_RUNNERS = 1024


@dataclass(frozen=True)
class SessionConfig:
    """Session options: graph optimization on/off, passes to skip, inter-op threads."""

    optimize: bool = True
    disabled_passes: tuple = ()
    inter_op_parallelism_threads: int = 1

    def __post_init__(self):
        object.__setattr__(self, "disabled_passes", tuple(self.disabled_passes))
        n = self.inter_op_parallelism_threads
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"SessionConfig: inter_op_parallelism_threads must be an int >= 1, got {n!r}")


class RunOptions:
    """Per-call options; `trace_level=RunOptions.FULL_TRACE` records per-op timings in RunMetadata."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3

    def __init__(self, trace_level: int = 0, timeout_in_ms: int = 0):
        self.trace_level = trace_level
        self.timeout_in_ms = timeout_in_ms


@dataclass
class OpStats:
    """Timing of one op in a traced run (microseconds from the start of the run)."""

    name: str
    type: str
    start_us: float
    duration_us: float
    output_shapes: tuple = ()


@dataclass
class RunMetadata:
    """Filled by a traced `Session.run`: `step_stats` (one `OpStats` per op run) and `total_us`."""

    step_stats: list = field(default_factory=list)
    total_us: float = 0.0

    def summary(self, top: int = 10) -> str:
        rows = sorted(self.step_stats, key=lambda s: -s.duration_us)[:top]
        lines = [f"{len(self.step_stats)} ops, {self.total_us:.1f} us total"]
        lines += [f"  {s.duration_us:10.1f} us  {s.type:<20} {s.name}" for s in rows]
        return "\n".join(lines)


class _Runner:
    __slots__ = ("plan", "fn", "packer")

    def __init__(self, plan, packer):
        self.plan = plan
        self.fn = plan.fn
        self.packer = packer


# ------------------------------------------------------------------ default session
class _SessionStack(threading.local):
    def __init__(self):
        self.stack: list = []


_sessions = _SessionStack()


def get_default_session() -> Optional["Session"]:
    st = _sessions.stack
    return st[-1] if st else None


class Session:
    """Runs a graph (see API.md and the module docstring)."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Optional[SessionConfig] = None):
        if target not in ("", None):
            raise ValueError(f"Session: only the local in-process target '' is supported, got {target!r}")
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"Session: graph must be a Graph, got {type(graph).__name__}")
        if config is not None and not isinstance(config, SessionConfig):
            raise TypeError(f"Session: config must be a SessionConfig, got {type(config).__name__}")
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config or SessionConfig()
        self._runners: dict = {}
        self._closed = False
        n = self._config.inter_op_parallelism_threads
        self._pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="graphjit-inter-op") if n > 1 else None
        self.last_optimization_report = None

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def config(self) -> SessionConfig:
        return self._config

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
        if options is not None and options.trace_level:
            out = runner.plan.run_traced(list(vals), run_metadata)
        elif self._pool is not None:
            out = run_parallel(runner.plan, list(vals), self._pool)
        else:
            try:
                out = runner.fn(*vals)
            except Exception as e:
                raise runner.plan.map_error(e) from None
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
            if options is not None and options.trace_level:
                out = plan.run_traced(list(feed_values), run_metadata)
            elif sess._pool is not None:
                out = run_parallel(plan, list(feed_values), sess._pool)
            else:
                try:
                    out = fn(*feed_values)
                except Exception as e:
                    raise plan.map_error(e) from None
            return out if packer is None else packer(out)

        return call

    def _make_runner(self, fetches, feed_keys, key) -> _Runner:
        graph = self._graph
        feeds = resolve_feeds(graph, feed_keys)
        items, targets, container, packer = resolve_fetches(graph, fetches)
        tensors = [it.tensor for it in items if it.kind == "value"]
        preserve = [t.name for t in feeds] + [t.name for t in tensors] + [o.name for o in targets]
        run_graph, report = optimize_for_run(graph, preserve, self._config)
        self.last_optimization_report = report
        if run_graph is not graph:
            feeds = [run_graph.get_tensor_by_name(t.name) for t in feeds]
            targets = [run_graph.get_operation_by_name(o.name) for o in targets]
            items = [ReturnItem("value", tensor=run_graph.get_tensor_by_name(it.tensor.name))
                     if it.kind == "value" else it for it in items]
            tensors = [it.tensor for it in items if it.kind == "value"]
        plan = compile_plan(run_graph, feeds, tensors, targets, container=container, returns=items,
                            config=self._config)
        runner = _Runner(plan, packer)
        if key is not None:
            if len(self._runners) >= _MAX_CACHED_RUNNERS:
                self._runners.clear()
            self._runners[key] = runner
        return runner

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Release the session's resources; further runs raise RuntimeError."""
        self._closed = True
        self._runners.clear()
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
        _sessions.stack.append(self)
        return self

    def __exit__(self, *exc):
        if self in _sessions.stack:
            _sessions.stack.remove(self)
        self.close()
        return False

    def __repr__(self):
        return f"<Session graph={self._graph!r}{' closed' if self._closed else ''}>"
