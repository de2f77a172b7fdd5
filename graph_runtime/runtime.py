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

An `Executable` is the one type for a prepared run, whatever the runtime,
and also outside Sessions (a traced function's plan, a tape-recorded call's
forward and gradients: `request_for` makes their requests): call it with the
feed values (in the request's feed order); the direct function's errors are
mapped to the failing op and the user's line (`plan.map_error`), and the
result has the structure the user fetched.

Imports `eager.errors` and sibling modules (`fetches`, `plan`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from eager.errors import UnimplementedError

from .fetches import resolve_feeds, resolve_fetches
from .plan import ReturnItem


@dataclass(frozen=True)
class Request:
    """What a Session asks its runtime to prepare: one (fetches, feeds) of its graph."""

    graph: Any
    feeds: tuple                  # graph tensors, in the order a run's feed values come
    returns: tuple                # `ReturnItem`s, the fetches flattened (tf.nest order)
    targets: tuple                # ops run for their effects
    container: str                # the form of the flat result: "single", "list" or "tuple"
    packer: Optional[Callable]    # rebuilds a nested fetch structure from the "tuple" (None: none to rebuild)

    @property
    def fetches(self) -> list:
        """The fetched graph tensors, in result order."""
        return [r.tensor for r in self.returns if r.kind == "value"]


def make_request(graph, fetches, feed_keys) -> Request:
    """Resolve `fetches` (any nesting of tensors, ops, names, variables) and feed keys of `graph`."""
    feeds = resolve_feeds(graph, feed_keys)
    returns, targets, container, packer = resolve_fetches(graph, fetches)
    return Request(graph, tuple(feeds), tuple(returns), tuple(targets), container, packer)


class Executable:
    """A prepared run of a graph: prepare once, call, errors mapped to the op that failed and its line.

    The one type for it, whatever asks: a Session (its runtime's `prepare`), a traced function
    (tracing/concrete.py) or a tape-recorded call and its gradients (tracing/call_op.py).

    - `executable(values, options=None, run_metadata=None)`: one run on the feed values (in the
      request's feed order); options and run metadata go through `runtime` (a Session's);
    - `executable.call(*values)`: the direct path, what hot callers use (no options);
    - `map_error(exc)`: `exc`, raised by the generated code, re-raised naming the op and where the
      user created it (`plan.map_error`).

    `plan` is what runs (a compiled `Plan` or `MultiDevicePlan` in this process, a `TaskPlan` on a Ray
    cluster); `fn` its direct function (None when every run goes through `runtime.executor`).  With
    `make` instead of a plan, the plan is made by `make()` on first use (under a lock: once), so an
    executable that is only derived from (a gradient's forward) never compiles.  `derived` holds what
    callers build from it once, by key (a traced call's gradient executable).
    """

    __slots__ = ("runtime", "request", "fn", "packer", "report", "derived", "_plan", "_make")

    def __init__(self, runtime, request: Request, plan=None, direct: bool = True, report=None, make=None):
        self.runtime = runtime        # None: a run without a Session (no options, no run metadata)
        self.request = request
        self.packer = request.packer
        self.report = report          # the optimizer's report (Session.last_optimization_report)
        self.derived: dict = {}
        self._make = make
        self._plan = plan
        if plan is not None:
            self.fn = plan.fn if direct else None
        else:
            self.fn = self._first_call

    @property
    def plan(self):
        plan = self._plan
        if plan is None:
            with _prepare_lock:
                if self._plan is None:
                    plan = self._make()
                    self.report = plan.optimization_report
                    self._plan, self._make = plan, None
                    self.fn = plan.fn
            plan = self._plan
        return plan

    def _first_call(self, *values):
        return self.plan.fn(*values)

    def map_error(self, exc: BaseException) -> BaseException:
        plan = self._plan
        return exc if plan is None else plan.map_error(exc)

    def call(self, *values):
        """One run on the feed values, the direct way (a traced function's call, a gradient's kernel)."""
        try:
            return self.fn(*values)
        except Exception as e:
            raise self.map_error(e) from None

    def __call__(self, values, options=None, run_metadata=None):
        fn = self.fn
        run = None
        if fn is None or options is not None:
            if self.runtime is None:
                raise ValueError("RunOptions and RunMetadata need a Session: this run is not a Session's")
            run = self.runtime.executor(self, options, run_metadata)
        if run is None:
            try:
                out = fn(*values)
            except Exception as e:
                raise self.map_error(e) from None
        else:
            out = run(values)
        if options is not None and run_metadata is not None:
            self.runtime.after_run(self, options, run_metadata)
        return out if self.packer is None else self.packer(out)


_prepare_lock = threading.RLock()     # plans made on first use are made once (a nested one may be made inside)


def request_for(graph, feeds, fetches, targets=()) -> Request:
    """The request for graph tensors `fetches` from graph tensors `feeds` and ops `targets` of `graph`,
    as the library asks it (no names, no nesting: the result is a tuple of the fetches' values)."""
    return Request(graph, tuple(feeds), tuple(ReturnItem("value", t) for t in fetches), tuple(targets), "tuple",
                   None)


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
