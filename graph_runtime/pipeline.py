"""The one graph-to-plan pipeline: `prepare(graph, feeds, fetches, targets, config) -> Plan`.

Every caller that runs a graph goes through `prepare`: `Session`
(session.py), traced functions (tracing/concrete.py), control-flow bodies run
by their kernels (control_flow/plans.py) and tape-recorded calls
(tracing/call_op.py).  A `Request` (graph, feeds, returns, targets) passes
through named stages, in order:

1. `prune`: checks that feeds, fetches and targets belong to the graph and
   names everything that must survive with its meaning (fed and fetched
   tensors, target ops: Grappler's "nodes to preserve").  The ops nothing
   needs are dropped by the optimizer's `pruning` pass and by the compiler's
   schedule, which walk back from exactly these.
2. `residuals`: control-flow ops whose saved values the plan reads (their
   gradients run in it, or the caller fetches them: `residual_specs`) are
   replaced by copies that save exactly those values (residuals.py); the
   user's graph is never changed.
3. `place`: assigns a device to every op (placement.py) when the config
   names a device set (`device_count`, filled in by `Session`): a copy of the
   graph whose ops carry full device names, or the graph itself when there
   is one device and no op asks for one.  Bodies and traced functions
   (`device_count=None`) are not placed on their own.  Every op still runs
   on the host thread until partitioning exists.
4. `optimize`: the pass pipeline (graph_runtime/passes) under
   `config.optimize` / `config.disabled_passes` / `config.enabled_passes`
   (default-off passes such as `debug_stripper`) / `config.pass_options`
   (per-pass options, e.g. `{"signed_zeros": False}`); `keep_effects` keeps writes
   nothing fetches (function-like graphs).  Bodies of If/Case/While ops are
   optimized inside it by the `bodies` pass, with the same disabled passes.
   The request's tensors and ops are looked up again by name in the result.
5. `partition`: when the placed ops are on several devices, one graph per
   device joined by `_Send`/`_Recv` pairs (partition.py), each built in the
   step's order (device_schedule.py: the configured schedule per device,
   ready work before a wait on a `_Recv`), which is its schedule; `compile` then
   compiles one plan per partition into a `MultiDevicePlan`
   (multi_device.py: partitions run concurrently through a rendezvous).
   A distributed session (`config.cluster`) stops here (`partition_request`):
   its partitions are shipped to their tasks, which compile them
   (`compile_partition`: only the `TASK_PASSES` run there, nothing runs
   twice; graph_runtime/distributed), in the order they arrive in.
6. `compile`: `compile_plan` (compiler.py): schedule, lower, generate code.
   The plan records the optimizer's report (`plan.optimization_report`).

`config` is a `SessionConfig` (None: the defaults).

Imports sibling modules and `graph_runtime.passes`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Optional

from .compiler import Plan, ReturnItem, compile_plan
from .cost_model import IN_PROCESS
from .operation import GraphTensor, Operation
from .multi_device import MultiDevicePlan
from .device_schedule import step_order
from .partition import split
from .placement import local_devices, place_graph, variable_device
from .passes import PassContext
from .passes import optimize as run_optimizer
from .residuals import with_residuals
from .run_config import SessionConfig

DEFAULT_CONFIG = SessionConfig()
# The passes a distributed session's task runs on its partition, and the driver does not: in-place writes
# (`memory`) are each task's own decision, since a GraphDef may not carry them (import_graph_def refuses
# InplaceElementwise).  Every other pass runs once, on the driver, before the graph is split.
TASK_PASSES = ("memory",)
NO_OPTIMIZE = SessionConfig(optimize=False)
STAGES = ("prune", "residuals", "place", "optimize", "partition", "compile")


@dataclass(frozen=True)
class Request:
    """What to compute: feeds (tensors), returns (`ReturnItem`s), targets (ops), all of `graph`."""

    graph: Any
    feeds: tuple
    returns: tuple
    targets: tuple
    preserve: tuple = ()          # names kept with their meaning (set by `prune`)
    report: Any = None            # the optimizer's report (set by `optimize`)
    parts: tuple = ()             # one `partition.Part` per device (set by `partition` on several devices)

    @property
    def fetches(self) -> list:
        return [r.tensor for r in self.returns if r.kind == "value"]


def prune(req: Request) -> Request:
    graph = req.graph
    for t in list(req.feeds) + req.fetches:
        if not isinstance(t, GraphTensor) or t._op._graph is not graph:
            raise ValueError(f"{t!r} is not a tensor of graph {graph!r}")
    for o in req.targets:
        if not isinstance(o, Operation) or o._graph is not graph:
            raise ValueError(f"{o!r} is not an operation of graph {graph!r}")
    names = [t.name for t in req.feeds] + [t.name for t in req.fetches] + [o.name for o in req.targets]
    return replace(req, preserve=tuple(names))


def residuals(req: Request, fetched_specs=None) -> Request:
    graph = with_residuals(req.graph, list(req.feeds), req.fetches, list(req.targets), fetched_specs,
                           PassContext(probe=True))
    return req if graph is req.graph else _in_graph(req, graph, req.report)


def place(req: Request, config: SessionConfig, measured=None, links=IN_PROCESS) -> Request:
    if config.device_count is None:
        return req       # a body or traced function: it runs where its op or caller runs
    roots = [t._op for t in req.fetches] + list(req.targets)
    graph, _ = place_graph(req.graph, config, req.feeds, roots, req.preserve, measured, links)
    return req if graph is req.graph else _in_graph(req, graph, req.report)


def _in_graph(req: Request, graph, report) -> Request:
    """`req` with its tensors and ops looked up by name in `graph` (a rewritten copy of `req.graph`)."""
    return Request(graph, tuple(graph.get_tensor_by_name(t.name) for t in req.feeds),
                   tuple(ReturnItem("value", tensor=graph.get_tensor_by_name(r.tensor.name))
                         if r.kind == "value" else r for r in req.returns),
                   tuple(graph.get_operation_by_name(o.name) for o in req.targets), req.preserve, report)


def optimize(req: Request, config: SessionConfig, keep_effects: bool) -> Request:
    if not config.optimize:
        return req
    graph, report = run_optimizer(req.graph, list(req.preserve), disabled=config.disabled_passes,
                                  keep_stateful=keep_effects, enabled=config.enabled_passes,
                                  options=config.pass_options)
    if graph is req.graph:
        return replace(req, report=report)
    return _in_graph(req, graph, report)


def partition(req: Request, config: SessionConfig, source=None, measured=None, links=IN_PROCESS) -> Request:
    fed = {id(t) for t in req.feeds}
    fetches = req.fetches
    index = {d.name: i for i, d in enumerate(local_devices(config))}

    def order(ops, devices):        # each partition is built in the step's order (device_schedule.py)
        return step_order(ops, devices, fed, fetches, config.schedule, measured,
                          lambda src, dst, nbytes: links.transfer_us(index.get(src, 0), index.get(dst, 0), nbytes))

    if config.cluster is not None:
        # a distributed session: every partition runs in its task's process and returns its own values;
        # variables live where placement puts them in the user's graph `source` (the same on every run)
        return replace(req, parts=tuple(split(
            req.graph, req.feeds, req.returns, req.targets, local_devices(config)[0].name,
            config.transfer_compression or "", gather=False,
            var_device=lambda var: variable_device(source, var, config), order=order)))
    if config.device_count is None or len(local_devices(config)) == 1:
        return req       # not placed, or one device: one partition
    default = local_devices(config)[0].name
    return replace(req, parts=tuple(split(req.graph, req.feeds, req.returns, req.targets, default,
                                          config.transfer_compression or "", order=order)))


def compile(req: Request, config: SessionConfig, container: str, check_feeds: bool):
    if req.parts:
        # each partition was built in the step's order (partition stage), which is its schedule: a
        # topological order of the whole step, so no partition waits for a value sent later (no deadlock)
        # the main partition returns a list; variables are read by the MultiDevicePlan once every partition
        # has finished (its barrier), so the reads see every write of the step
        part_config = replace(config, schedule="creation")
        plans = [compile_plan(p.graph, [t for _, t in p.feeds], [r.tensor for r in p.returns if r.kind == "value"],
                              list(p.targets), container="list",
                              returns=[ReturnItem("none") if r.kind == "var" else r for r in p.returns],
                              check_feeds=check_feeds, config=part_config)
                 for p in req.parts]
        plan = MultiDevicePlan(list(req.parts), plans, container)
    else:
        plan = compile_plan(req.graph, list(req.feeds), req.fetches, list(req.targets), container=container,
                            returns=list(req.returns), check_feeds=check_feeds, config=config)
        plan.partition_graphs = [req.graph]
    plan.optimization_report = req.report
    return plan


def partition_request(graph, feeds, returns, targets, config: SessionConfig, links=IN_PROCESS) -> Request:
    """The stages before `compile` for a distributed session (config.cluster set): the request with one
    `Part` per task device, each to be shipped to its task as a GraphDef (graph_runtime/distributed).
    `links`: the transfer times between the devices (cost_model.Links: the runtime's own)."""
    req = residuals(prune(Request(graph, tuple(feeds), tuple(returns), tuple(targets))))
    shipped = replace(config, disabled_passes=config.disabled_passes + TASK_PASSES)
    req = optimize(place(req, config, links=links), shipped, False)
    return partition(req, config, graph, links=links)


def compile_partition(graph, feeds, returns, targets, config: SessionConfig) -> Plan:
    """A partition that was placed, optimized and split elsewhere (on a distributed session's driver): only
    `prune`, the `TASK_PASSES` the config leaves on, and `compile` run here; every other pass ran on the
    whole graph before it was split."""
    req = prune(Request(graph, tuple(feeds), tuple(returns), tuple(targets)))
    passes = [p for p in TASK_PASSES if config.optimize and p not in config.disabled_passes]
    if passes:
        out, report = run_optimizer(req.graph, list(req.preserve), passes, keep_stateful=False,
                                    options=config.pass_options)
        req = replace(req, report=report) if out is req.graph else _in_graph(req, out, report)
    # the driver built the partition in the step's order (partition stage): that order is its schedule
    return compile(req, replace(config, schedule="creation"), "list", True)


def prepare(graph, feeds, fetches, targets=(), config: Optional[SessionConfig] = None, *, returns=None,
            container: str = "tuple", check_feeds: bool = True, keep_effects: bool = False,
            timings: Optional[dict] = None, measured=None, residual_specs=None) -> Plan:
    """Compile `graph` for (feeds, fetches, targets) through the stages (see the module docstring).

    `fetches`: graph tensors whose values are returned; `returns` (optional)
    overrides the result list with `ReturnItem`s (Session: op targets -> None,
    variables -> their value); `container` is "single", "list" or "tuple".
    `timings` (a dict, optional) receives the seconds of the "optimize" and
    "compile" stages (traced functions' phase times).  `measured` (op name -> microseconds, a Session's
    traced runs) refines the cost model of placement and of the device schedule.
    `residual_specs`: fetched variant tensor name -> the save spec the caller's
    reader of it needs (residuals.py; a body whose enclosing op saves a nested op's values, a
    tape-recorded call's forward).
    """
    config = DEFAULT_CONFIG if config is None else config
    items = tuple(returns) if returns is not None else tuple(ReturnItem("value", t) for t in fetches)
    req = prune(Request(graph, tuple(feeds), items, tuple(targets)))
    req = residuals(req, residual_specs)
    req = place(req, config, measured)
    t0 = time.perf_counter()
    req = optimize(req, config, keep_effects)
    t1 = time.perf_counter()
    req = partition(req, config, measured=measured)
    plan = compile(req, config, container, check_feeds)
    if timings is not None:
        timings["optimize"] = t1 - t0
        timings["compile"] = time.perf_counter() - t1
    return plan
