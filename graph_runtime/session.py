"""`Session`: the front end that runs graph fetches with feeds on a runtime.

`Session.run(fetches, feed_dict)` looks up an `Executable` keyed by the
identity of the fetches (and their structure) and of the feed_dict keys, in
order.  On a miss it resolves them into a `Request` (runtime.py) and asks its
runtime to `prepare` it: `LocalRuntime` (local_runtime.py, the empty target:
the graph-to-plan pipeline in this process) or the runtime registered for the
target's scheme (`"ray://..."`: graph_runtime/distributed, a cluster of Ray
actors).  On a hit the cost beyond the kernels themselves is one key, one
dict lookup, one call: feed checks are inlined in the generated code and the
plan returns the requested container directly (nested dicts/namedtuples are
rebuilt after).  `make_callable`, `RunOptions`/`RunMetadata` (FULL_TRACE,
partition graphs) and partial runs go through the same runtime interface;
a runtime without one of them raises `UnimplementedError` saying why.

Semantics: fetched values are NumPy arrays (NumPy scalars for rank 0), ops give
None, variables give their value after the run.  Only the ops the fetches need
run; stateful ops run when fetched, targeted, or a control input of something
that runs.  `RunOptions(timeout_in_ms=t)` gives the run a deadline
(deadline.py: checked at every `_Recv` wait and While iteration, raising
`DeadlineExceededError`); `SessionConfig.operation_timeout_in_ms` is for
distributed sessions only.  `with Session() as sess:` makes it the default
session (for `Tensor.eval`/`Operation.run`) and its graph the default graph
(as in TensorFlow), and closes it at the end; `as_default()` only makes it
the default session.  Attributes a runtime adds (a Ray runtime's
`variable_task`) are reachable on the session.

Imports sibling modules.
"""
from __future__ import annotations

import contextlib
from typing import Optional

from . import local_runtime  # noqa: F401 - registers the runtime of the empty target
from .fetches import fetch_key
from .graph import Graph, get_default_graph
from .operation import GraphTensor, Operation
from .run_config import OpStats, RunMetadata, RunOptions, SessionConfig, _sessions, get_default_session
from .runtime import make_request, runtime_for

__all__ = ["Session", "SessionConfig", "RunOptions", "RunMetadata", "OpStats", "get_default_session"]

_CLOSED = "Attempted to use a closed Session."


class Session:
    """Runs a graph on a runtime (see docs/api.md and the module docstring)."""

    def __init__(self, target: str = "", graph: Optional[Graph] = None, config: Optional[SessionConfig] = None):
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"Session: graph must be a Graph, got {type(graph).__name__}")
        if config is not None and not isinstance(config, SessionConfig):
            raise TypeError(f"Session: config must be a SessionConfig, got {type(config).__name__}")
        self._closed = True           # until the runtime exists (close() then has nothing to release)
        self._graph = graph if graph is not None else get_default_graph()
        self._executables: dict = {}
        self._graph_contexts: list = []
        self.last_optimization_report = None
        self._runtime = runtime_for(target)(target, self._graph, config or SessionConfig())
        self._closed = False

    def __getattr__(self, name):
        # only for names the Session itself lacks: what a runtime adds (a Ray runtime's variable_task)
        runtime = self.__dict__.get("_runtime")
        if runtime is None or name.startswith("__"):
            raise AttributeError(f"'Session' object has no attribute {name!r}")
        try:
            return getattr(runtime, name)
        except AttributeError:
            raise AttributeError(f"'Session' object has no attribute {name!r}") from None

    @property
    def graph(self) -> Graph:
        return self._graph

    @property
    def config(self) -> SessionConfig:
        return self._runtime.config

    @property
    def target(self) -> str:
        return self._runtime.target

    def list_devices(self) -> list:
        """The session's devices (`Device`: `.name`, the full device string, and `.device_type`)."""
        return list(self._runtime.devices)

    # -- running ---------------------------------------------------------------------
    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Compute `fetches` (tensor, op, name, variable, or nested structure) given `feed_dict`."""
        if self._closed:          # `_check_open`, inlined on the hot path
            raise RuntimeError(_CLOSED)
        t = type(fetches)
        fkey = fetches if t is GraphTensor or t is Operation else fetch_key(fetches)
        if feed_dict:
            key = (fkey, *feed_dict)
            vals = feed_dict.values()
        else:
            key = (fkey,)
            vals = ()
        executable = self._executables.get(key)
        if executable is None:
            executable = self._prepare(fetches, list(feed_dict) if feed_dict else [], key)
        fn = executable.fn
        if fn is None or options is not None:
            return executable(vals, options, run_metadata)
        try:      # `Executable.__call__`'s direct path, inlined: the run costs one Python call less
            out = fn(*vals)
        except Exception as e:
            raise executable.map_error(e) from None
        return out if executable.packer is None else executable.packer(out)

    def make_callable(self, fetches, feed_list=None, accept_options: bool = False):
        """A function `f(*feed_values)` equivalent to `run(fetches, dict(zip(feed_list, feed_values)))`."""
        self._check_open()
        feed_list = list(feed_list or [])
        executable = self._prepare(fetches, feed_list, None)
        fn, packer, n = executable.fn, executable.packer, len(feed_list)
        sess = self

        def call(*feed_values, options=None, run_metadata=None):
            if len(feed_values) != n:
                raise TypeError(f"this callable takes {n} feed values ({[str(f) for f in feed_list]}), got "
                                f"{len(feed_values)}")
            if sess._closed:
                raise RuntimeError(_CLOSED)
            if fn is None or options is not None:
                return executable(feed_values, options, run_metadata)
            try:      # as in `run`: the direct path inlined
                out = fn(*feed_values)
            except Exception as e:
                raise executable.map_error(e) from None
            return out if packer is None else packer(out)

        return call

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(_CLOSED)

    def _prepare(self, fetches, feed_keys, key):
        executable = self._runtime.prepare(make_request(self._graph, fetches, feed_keys))
        self.last_optimization_report = executable.report
        if key is not None:
            if len(self._executables) >= self._runtime.max_cached:
                self._runtime.forget(list(self._executables.values()))
                self._executables.clear()
            self._executables[key] = executable
        return executable

    # -- partial runs -------------------------------------------------------------------
    def partial_run_setup(self, fetches, feeds=None):
        """A handle for running `fetches` piece by piece as `feeds` arrive (partial_run.py)."""
        self._check_open()
        return self._runtime.partial_run_setup(self, fetches, feeds)

    def partial_run(self, handle, fetches, feed_dict=None):
        """Feed `feed_dict` and compute `fetches` (declared at setup) in the partial run `handle`."""
        self._check_open()
        return self._runtime.partial_run(self, handle, fetches, feed_dict)

    # -- variables, for Saver (tracing/save/saver.py) ----------------------------------------
    def _read_variables(self, variables) -> list:
        """The current values of `variables` (None where one holds no value)."""
        return self._runtime.read_variables(variables)

    def _assign_variables(self, pairs) -> None:
        """Set variables ((Variable, array) pairs; checked by the caller)."""
        self._runtime.assign_variables(pairs)

    def _remember_checkpoint(self, restore) -> None:
        """A Saver saved a checkpoint with this session; `restore()` would restore it."""
        self._runtime.remember_checkpoint(restore)

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Release the session's resources (the runtime's threads or actors); further runs raise RuntimeError."""
        if self._closed:
            return
        self._closed = True
        self._runtime.close()
        self._executables.clear()

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
        where = f" target={self.target!r}" if self.target else ""
        return f"<Session{where} graph={self._graph!r}{' closed' if self._closed else ''}>"
