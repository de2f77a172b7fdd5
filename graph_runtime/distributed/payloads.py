"""What travels to the tasks: a run's partitions as plain data, and the session's variable names.

`build_task_plan(request, ...)` turns the pipeline's per-task partitions
(`pipeline.partition_request`: placed and optimized on the driver) into a
`TaskPlan`, the plan of a Ray runtime's `Executable`: for each task a `TaskPart`
with a registration id and its payload, a dict of plain data only, with one
entry per device of the task that the run uses (`SessionConfig.device_count`
devices per task):

    {"partitions": [{"graph_def": GraphDef dict, "feeds": [tensor names], "targets": [op names],
                     "returns": [("value", tensor name) | ("var", variable name)]}, ...],
     "config": {plain option values}}

plus where each task's feeds come from and where its returns go in the run's
result.  Variables are named once per session (`VariableRegistry`), so every
partition a task receives binds the same variable by the same name in the
task's resource table (worker.py); `VariableNames` is the GraphDef encoding
context that uses those names.

Imports `eager.errors` and `graph_runtime` modules.
"""
from __future__ import annotations

import threading

from eager import errors as _errors

from ..attr_codecs import EncodeContext
from ..graph_def import graph_to_graph_def


class VariableNames(EncodeContext):
    """An EncodeContext naming each variable once per session (the tasks' resource-table keys)."""

    def __init__(self, registry):
        super().__init__()
        self._registry = registry

    def variable_name(self, var) -> str:
        name = self._registry.name(var)
        self.variables[name] = var
        return name


class VariableRegistry:
    """id(Variable) -> session-wide unique name: one GraphDef naming context kept for the session's lifetime
    (it holds the variables, so ids stay unique)."""

    def __init__(self):
        self._ctx = EncodeContext()
        self._lock = threading.Lock()

    def name(self, var) -> str:
        with self._lock:
            return self._ctx.variable_name(var)


class TaskPart:
    __slots__ = ("task", "reg", "payload", "feed_index", "return_index")

    def __init__(self, task, reg, payload, feed_index, return_index):
        self.task, self.reg, self.payload = task, reg, payload
        self.feed_index, self.return_index = feed_index, return_index


class TaskPlan:
    """One (fetches, feeds) on the cluster: the partitions to register and run, and where results go."""

    __slots__ = ("parts", "n_returns", "fed_returns", "container", "graph_defs")
    fn = None      # no direct function: every run goes through the runtime (RayRuntime.executor)

    def __init__(self, parts, n_returns, fed_returns, container, graph_defs):
        self.parts, self.n_returns, self.fed_returns = parts, n_returns, fed_returns
        self.container, self.graph_defs = container, graph_defs


def build_task_plan(req, feeds, items, container, cluster, registry, reg_ids, config: dict) -> TaskPlan:
    """The TaskPlan of one (fetches, feeds) of a distributed session (module docstring)."""
    by_task: dict = {}
    defs = []
    for p in req.parts:
        task = cluster.task_of_device(p.device)
        if task is None:
            raise _errors.InvalidArgumentError(f"partition for device {p.device} belongs to no task of {cluster}")
        ctx = VariableNames(registry)
        returns = [("value", r.tensor.name) if r.kind == "value" else ("var", ctx.variable_name(r.var))
                   for r in p.returns]
        gd = graph_to_graph_def(p.graph, _ctx=ctx)
        by_task.setdefault(task.name, []).append((p, {"graph_def": gd, "feeds": [t.name for _, t in p.feeds],
                                                      "returns": returns, "targets": [o.name for o in p.targets]}))
        defs.append(gd)
    parts = []
    for task, mine in by_task.items():      # a task's device partitions travel and run together
        payload = {"partitions": [d for _, d in mine], "config": config}
        parts.append(TaskPart(task, next(reg_ids), payload, [i for p, _ in mine for i, _ in p.feeds],
                              [i for p, _ in mine for i in p.return_index]))
    fed_pos = {id(t): i for i, t in enumerate(feeds)}
    fed_returns = [(i, fed_pos[id(r.tensor)], r.tensor.dtype.np_dtype) for i, r in enumerate(items)
                   if r.kind == "value" and id(r.tensor) in fed_pos]
    return TaskPlan(parts, len(items), fed_returns, container, defs)
