"""Runtimes: what runs a Session's graph, chosen by the session's target.

`Session` (session.py) is a front end.  For each new (fetches, feeds) it
resolves them into a `Request` and hands it to its runtime's `prepare`, which
does everything that is done once (the graph-to-plan pipeline, shipping
partitions to tasks...) and returns an `Executable`; every `run` with those
fetches and feeds calls that executable.  A runtime (a `Runtime` subclass):

- `prepare(request) -> Executable`;
- `executor(executable, options, run_metadata)`: how one run that the
  executable's direct function cannot serve goes (RunOptions with a trace
  level, a thread pool, or every run when the runtime has no direct
  function), or None for the direct function;
- `after_run(...)`: what a run with `RunOptions`/`RunMetadata` reports
  (partition graphs for `output_partition_graphs`, per-op stats of a
  FULL_TRACE run, which `executor` recorded);
- `partial_run_setup`/`partial_run`, `read_variables`/`assign_variables`
  (Saver), `remember_checkpoint`, `devices`, `close()`.
  What a runtime cannot do raises `UnimplementedError` saying why (the base
  class's methods).

Runtimes register by target scheme: `register_runtime("", LocalRuntime)`
(this process: local_runtime.py), `register_runtime("ray://", RayRuntime)`
(graph_runtime/distributed).  Another cluster engine is one module that
subclasses `Runtime` and registers its scheme.

An `Executable` is the one type for a prepared run, whatever the runtime:
call it with the feed values (in the request's feed order); the direct
function's errors are mapped to the failing op and the user's line
(`plan.map_error`), and the result has the structure the user fetched.

Imports `eager.errors` and sibling modules.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

from eager.errors import UnimplementedError

from .fetches import resolve_feeds, resolve_fetches


@dataclass(frozen=True)
class Request:
    """What a Session asks its runtime to prepare: one (fetches, feeds) of its graph."""

    graph: Any
    feeds: tuple                  # graph tensors, in the order a run's feed values come
    returns: tuple                # `ReturnItem`s, the fetches flattened (tf.nest order)
    targets: tuple                # ops run for their effects
    container: str                # the form of the flat result: "single", "list" or "tuple"
    packer: Optional[Callable]    # rebuilds a nested fetch structure from the "tuple" (None: none to rebuild)


def make_request(graph, fetches, feed_keys) -> Request:
    """Resolve `fetches` (any nesting of tensors, ops, names, variables) and feed keys of `graph`."""
    feeds = resolve_feeds(graph, feed_keys)
    returns, targets, container, packer = resolve_fetches(graph, fetches)
    return Request(graph, tuple(feeds), tuple(returns), tuple(targets), container, packer)


class Executable:
    """A prepared (fetches, feeds): `executable(values, options=None, run_metadata=None)` runs it once.

    `plan` is what the runtime runs (a compiled `Plan` or `MultiDevicePlan`
    in this process, a `TaskPlan` on a Ray cluster); `fn` its direct
    function (None when every run goes through `runtime.executor`).
    """

    __slots__ = ("runtime", "request", "plan", "fn", "packer", "report")

    def __init__(self, runtime, request: Request, plan, direct: bool, report=None):
        self.runtime = runtime
        self.request = request
        self.plan = plan
        self.fn = plan.fn if direct else None
        self.packer = request.packer
        self.report = report          # the optimizer's report (Session.last_optimization_report)

    def __call__(self, values, options=None, run_metadata=None):
        fn = self.fn
        run = None if fn is not None and options is None else self.runtime.executor(self, options, run_metadata)
        if run is None:
            try:
                out = fn(*values)
            except Exception as e:
                raise self.plan.map_error(e) from None
        else:
            out = run(values)
        if options is not None and run_metadata is not None:
            self.runtime.after_run(self, options, run_metadata)
        return out if self.packer is None else self.packer(out)


class Runtime:
    """The base of every runtime (module docstring).  `targets` describes the targets it serves, for errors."""

    targets = ""
    max_cached = 1024             # executables a session keeps (all are dropped, and `forget`, past that)

    def __init__(self, target: str, graph, config):
        self.target = target
        self.graph = graph
        self.config = config
        self.devices: list = []
        self._restore_last_checkpoint = None

    def prepare(self, request: Request) -> Executable:
        raise NotImplementedError(f"{type(self).__name__} must implement prepare")

    def forget(self, executables: list) -> None:
        """The session dropped `executables` from its cache: release what they hold outside this process."""

    def executor(self, executable: Executable, options, run_metadata):
        """A function running `executable` once on its feed values under `options`, or None: its direct
        function does."""
        return None

    def after_run(self, executable: Executable, options, run_metadata) -> None:
        if options.output_partition_graphs:
            run_metadata.partition_graphs = self.partition_graph_defs(executable)

    def partition_graph_defs(self, executable: Executable) -> list:
        raise UnimplementedError(f"{self._name()} cannot report partition graphs")

    # -- partial runs ------------------------------------------------------------------
    def partial_run_setup(self, session, fetches, feeds):
        raise UnimplementedError(f"partial runs are not supported by {self._name()} yet; use run()")

    def partial_run(self, session, handle, fetches, feed_dict):
        raise UnimplementedError(f"partial runs are not supported by {self._name()} yet; use run()")

    # -- variables, for Saver (tracing/save/saver.py) ------------------------------------
    def read_variables(self, variables) -> list:
        raise UnimplementedError(f"{self._name()} cannot read variables")

    def assign_variables(self, pairs) -> None:
        raise UnimplementedError(f"{self._name()} cannot assign variables")

    def remember_checkpoint(self, restore) -> None:
        """A Saver saved a checkpoint with this session; `restore()` would restore it."""
        self._restore_last_checkpoint = restore

    def close(self) -> None:
        """Release what the runtime holds (threads, actors); the session refuses runs afterwards."""

    def _name(self) -> str:
        return f"{type(self).__name__} (target {self.target!r})" if self.target else type(self).__name__


_RUNTIMES: dict = {}       # target scheme -> Runtime subclass; "" is this process


def register_runtime(scheme: str, runtime_class) -> None:
    """Serve the targets starting with `scheme` ("" : the empty target) with `runtime_class`."""
    _RUNTIMES[scheme] = runtime_class


def runtime_for(target):
    """The runtime class serving `target` (ValueError naming the known targets otherwise)."""
    if target in ("", None):
        return _RUNTIMES[""]
    if isinstance(target, str):
        for scheme, runtime_class in _RUNTIMES.items():
            if scheme and target.startswith(scheme):
                return runtime_class
    known = " or ".join(c.targets for c in _RUNTIMES.values())
    raise ValueError(f"Session: the target is {known}, got {target!r}")
