"""`RayRuntime`: the runtime of a Session whose graph runs on the tasks of a cluster (Ray actors).

`Session(target="ray://local", config=SessionConfig(cluster=ClusterSpec({"ps": 1, "worker": 2})))`
runs on one (TF's master, on the driver; runtime.py has the interface):

- `prepare` runs the pipeline's stages up to partitioning
  (`pipeline.partition_request`: prune, place across the cluster's task
  devices, optimize, one partition per task) and builds a `TaskPlan`
  (payloads.py); its first run registers each partition with its task as
  plain data: a GraphDef, feed/return/target names and plain config values
  (`worker.TaskServer.register`, which only compiles: the partition was
  optimized here);
- a step (`executor`: every run, traced or not) sends each task its feeds
  (`run`, all tasks at once), tasks exchange tensors directly
  (transport.py) and each returns the fetched values it owns; the master
  collects them (`fetches.pack_result`; the executable rebuilds nested
  structures);
- variables are named once per session (payloads.VariableRegistry: the same
  name in every partition, so a task's resource table binds them across runs);
- placement's transfer costs are this cluster's: when the session starts
  it times a round trip between two tasks (`links`; devices of one task
  share a process: cost_model.Links);
- with `device_count={"CPU": n}` every task has n devices, and a task's
  partitions of a run travel and run together (worker.py);
- partial runs: partial_runs.py (`RayPartialRuns`, a base of this class).

Faults.  A step that fails on a task makes that task abort the step on its
peers; the master waits for every task and raises the task's error
(its class, message and op name; `UnavailableError` naming the task when the
actor died; `DeadlineExceededError` past the step's deadline,
`RunOptions.timeout_in_ms` or `SessionConfig.operation_timeout_in_ms`: the
tasks check it at every `_Recv` wait and loop iteration, so they answer on
time; the master waits a second more, then aborts the step, and only a
task that then fails to answer a ping is dead).  The failing op's own
error wins over the aborts it caused on its peers, whatever order the
answers arrive in.
The variable writes the failed step made stay (no rollback, as in
TensorFlow: worker.py says why).
After a task died, the next `run` follows `SessionConfig.task_recovery`:
"raise" (UnavailableError naming the task), "reinitialize" (a new actor;
the variables living on it run their initializers again; an eager
variable's value comes back with its partition) or "restore" (a new actor,
then every variable is restored from the last checkpoint a `Saver` wrote
with this session).

Lifecycle: `close()` stops the session's actors (or keeps them idle, reset,
for a later session: ray_backend.keep_idle_actors); so does the garbage
collector for a session dropped unclosed (a finalizer: the actors hold
handles to each other, so Ray alone would keep them alive).

Imports sibling modules and `graph_runtime` modules; `ray` only through
ray_backend.py.
"""
from __future__ import annotations

import itertools
import time
import weakref
from dataclasses import replace

import numpy as np

from eager import errors as _errors

from ..cost_model import Links
from ..fetches import pack_result
from ..graph import Graph, GraphKeys
from ..graph_def import graph_to_graph_def
from ..pipeline import partition_request
from ..placement import local_devices, variable_device
from ..run_config import OpStats, SessionConfig
from ..runtime import Executable, Request, Runtime, make_request, register_runtime
from . import ray_backend
from .partial_runs import RayPartialRuns
from .payloads import VariableNames, VariableRegistry, build_task_plan
from .worker import CONFIG_FIELDS

_FAST_WAIT_S = 0.25          # how long a step's results are awaited in one call before watching each task
_GRACE_S = 1.0               # the master waits this much longer than the tasks' own deadline (they check it)
_HEALTH_S = 5.0              # a task that does not answer a ping within this is dead
# step ids are unique in this process, not only in a session: a task reused by a later session (ray_backend's
# idle actors) must never take a late value of an earlier session's step for one of its own
_STEPS = itertools.count(1)
_PROBES = 5                  # round trips timed between two tasks when a session starts (placement's costs)
_ERRORS = {c.__name__: c for c in (
    _errors.InvalidArgumentError, _errors.NotFoundError, _errors.FailedPreconditionError,
    _errors.OutOfRangeError, _errors.UnimplementedError, _errors.UnavailableError,
    _errors.DeadlineExceededError, _errors.AbortedError)}


class RayRuntime(RayPartialRuns, Runtime):
    """A Session's runtime on a cluster of Ray actors (module docstring)."""

    targets = "'ray://local', 'ray://auto', 'ray://HOST:PORT' (a cluster of Ray actors)"
    max_cached = 256              # distinct (fetches, feeds) kept registered on the tasks

    def __init__(self, target: str, graph, config: SessionConfig):
        ray_backend.check_target(target)
        if config.cluster is None:
            config = replace(config, cluster={"worker": 1})
        if config.inter_op_parallelism_threads != 1:
            raise _errors.UnimplementedError("a distributed session runs each task's partition in order on that "
                                             "task; inter_op_parallelism_threads must be 1")
        super().__init__(target, graph, replace(config, device_count=config.device_count or {"CPU": 1}))
        self.devices = local_devices(self.config)
        self._cluster = self.config.cluster
        self._tasks = {t.name: t for t in self._cluster.tasks()}
        self._ray = ray_backend.connect(target)
        self._actors: dict = {}
        # the actors hold each other (peers), so nothing ends them when an unclosed session is collected:
        # this finalizer does (it holds the dict, which recovery updates in place, never the session)
        self._stop_actors = weakref.finalize(self, ray_backend.stop_all, self._ray, self._actors)
        self._stop_actors.atexit = False            # Ray's own shutdown ends them at exit
        self._registered: dict = {name: set() for name in self._tasks}
        self._dead: dict = {}                       # task name -> why
        self._names = VariableRegistry()
        self._regs = itertools.count(1)
        self._partial_runs = weakref.WeakSet()     # partial runs alive (a dropped handle: the gc frees it)
        try:
            self._actors.update(zip(self._tasks, ray_backend.start_tasks(self._ray, list(self._tasks.values()))))
            self._link()
            self.links = self._measure_links()
        except BaseException:
            self.close()
            raise

    def _link(self) -> None:
        self._ray.get([a.set_peers.remote({n: b for n, b in self._actors.items() if n != name})
                       for name, a in self._actors.items()])

    def _measure_links(self) -> Links:
        """Placement's transfer costs on this cluster: devices of one task share a process; between tasks, one
        actor-to-actor round trip, measured now (the median of a few; cost_model.py)."""
        names = list(self._tasks)
        process = [names.index(self._cluster.task_of_device(d.name).name) for d in self.devices]
        if len(names) < 2:
            return Links(process)
        first, second = names[0], names[1]
        rtt_s = self._ray.get(self._actors[first].probe.remote(second, _PROBES),
                              timeout=self.config.operation_timeout_in_ms / 1000)
        return Links(process, remote_us=rtt_s * 1e6)

    # -- executables -----------------------------------------------------------------------
    def prepare(self, request: Request, config=None) -> Executable:
        """`request` partitioned over the tasks (with `config`, by default the session's) and registered."""
        config = config or self.config
        req = partition_request(request.graph, request.feeds, request.returns, request.targets, config,
                                self.links)
        plan = build_task_plan(req, request.feeds, request.returns, request.container, self._cluster, self._names,
                               self._regs, {k: getattr(self.config, k) for k in CONFIG_FIELDS})
        return Executable(self, request, plan, direct=False, report=req.report)

    def forget(self, executables: list) -> None:
        """Forget the dropped executables' partitions here and on the tasks."""
        old = [p for e in executables for p in e.plan.parts]
        for task in self._registered:
            regs = [p.reg for p in old if p.task == task]
            self._registered[task].difference_update(regs)
            if task not in self._dead:
                self._actors[task].forget.remote(regs)

    def executor(self, executable, options, run_metadata):
        plan = executable.plan
        return lambda values: self._step(plan, list(values), options, run_metadata)

    def partition_graph_defs(self, executable) -> list:
        return list(executable.plan.graph_defs)

    def _register(self, runner) -> None:
        missing = [p for p in runner.parts if p.reg not in self._registered[p.task]]
        if not missing:
            return
        refs = [self._actors[p.task].register.remote(p.reg, p.payload) for p in missing]
        for p, ref in zip(missing, refs):
            status = self._wait_one(p.task, ref, None)
            if status is not None:
                raise status
            self._registered[p.task].add(p.reg)

    def _wait_one(self, task, ref, timeout):
        """None, or the exception to raise for `ref` (a call to `task`)."""
        try:
            self._ray.get(ref, timeout=timeout)
            return None
        except Exception as e:      # noqa: BLE001
            return self._failure(task, e)

    def _failure(self, task, e) -> BaseException:
        if ray_backend.is_actor_death(self._ray, e):
            self._dead[task] = str(e).splitlines()[0] if str(e) else type(e).__name__
            return _errors.UnavailableError(f"task {task} is unavailable: its actor died ({self._dead[task]})")
        cause = getattr(e, "cause", None)
        if isinstance(cause, _errors.OpError):
            return cause
        return _errors.UnavailableError(f"task {task} failed: {type(e).__name__}: {e}")

    # -- running -------------------------------------------------------------------------
    @staticmethod
    def next_step() -> int:
        return next(_STEPS)          # (one C call: atomic under the GIL)

    def _step(self, runner, vals, options, run_metadata):
        self._recover()
        self._register(runner)
        ms = (options.timeout_in_ms if options is not None and options.timeout_in_ms else
              self.config.operation_timeout_in_ms)
        timeout_s = ms / 1000.0
        trace = bool(options is not None and options.trace_level)
        began = time.time()
        step = self.next_step()
        refs = [self._actors[p.task].run.remote(p.reg, step, [vals[i] for i in p.feed_index], timeout_s, trace)
                for p in runner.parts]
        results = self._gather(runner, step, refs, timeout_s)
        out = [None] * runner.n_returns
        for p, res in zip(runner.parts, results):
            for i, v in zip(p.return_index, res[1]):
                out[i] = v
            if trace and run_metadata is not None and res[2]:
                shift = (res[2][0] - began) * 1e6      # the task's start on the step's clock (wall clocks)
                run_metadata.step_stats.extend(OpStats(n, ty, s + shift, d, (), dev, b, sv, k)
                                               for n, ty, s, d, dev, b, sv, k in res[2][1])
        for i, j, dtype in runner.fed_returns:
            out[i] = np.asarray(vals[j], dtype=dtype)
        return pack_result(out, runner.container)

    def _gather(self, runner, step, refs, timeout_s):
        """Every task's result of `step`; on a failure: abort the step everywhere and raise (module docstring)."""
        ray = self._ray
        try:        # the common case: every task answers soon (a failing task aborts its peers itself)
            results = ray.get(refs, timeout=_FAST_WAIT_S)
            if all(r[0] == "ok" for r in results):
                return results
        except Exception:       # noqa: BLE001 - slow step, dead actor or Ray error: the careful path below
            pass
        tasks = {r: p.task for r, p in zip(refs, runner.parts)}
        results: dict = {}
        errors: list = []
        pending = list(refs)
        end = time.monotonic() + timeout_s + _GRACE_S
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, end - time.monotonic()))
            if not ready:
                errors.append(_errors.DeadlineExceededError(
                    f"step {step} did not finish within {timeout_s:.3g} s on tasks "
                    f"{sorted(tasks[r] for r in pending)}"))
                self._abort(step, runner, str(errors[-1]))
                self._check_health([tasks[r] for r in pending])     # busy is not dead
                pending = []
            for r in ready:
                try:
                    res = ray.get(r)
                except Exception as e:      # noqa: BLE001 - the actor died or Ray failed
                    res = None
                    exc = self._failure(tasks[r], e)
                else:
                    exc = None if res[0] == "ok" else self._rebuild(tasks[r], res)
                results[r] = res
                if exc is not None:
                    errors.append(exc)
                    if len(errors) == 1:
                        self._abort(step, runner, f"{tasks[r]} failed: {exc}")
        if not errors:
            return [results[r] for r in refs]
        # every task answered: the failure's own error wins over the aborts it caused on its peers, whatever
        # order the answers came in
        raise next((e for e in errors if not isinstance(e, _errors.AbortedError)), errors[0])

    def _check_health(self, names) -> None:
        """Mark dead the tasks among `names` that do not answer a ping within _HEALTH_S (a task still busy
        with a step answers: its actor serves calls on other threads)."""
        pings = {self._actors[t].ping.remote(): t for t in names if t not in self._dead}
        if not pings:
            return
        answered, silent = self._ray.wait(list(pings), num_returns=len(pings), timeout=_HEALTH_S)
        for r in silent:
            self._dead[pings[r]] = f"did not answer a health check within {_HEALTH_S:.3g} s"
        for r in answered:
            status = self._wait_one(pings[r], r, 0)      # an actor that died answers with its death
            if status is not None and pings[r] not in self._dead:
                self._dead[pings[r]] = str(status)

    def _abort(self, step, runner, why) -> None:
        for p in runner.parts:
            if p.task not in self._dead:
                self._actors[p.task].abort.remote(step, why)

    @staticmethod
    def _rebuild(task, record) -> BaseException:
        _, cls_name, message, op_name = record
        cls = _ERRORS.get(cls_name)
        if cls is None:
            return _errors.InvalidArgumentError(f"on task {task}: {cls_name}: {message}", op_name=op_name)
        return cls(f"{message} (on task {task})", op_name=op_name)

    # -- recovery ------------------------------------------------------------------------
    def _recover(self) -> None:
        if not self._dead:
            return
        dead = dict(self._dead)
        policy = self.config.task_recovery
        if policy == "raise":
            raise _errors.UnavailableError(
                f"task(s) {sorted(dead)} of this session died ({'; '.join(dead.values())}); with "
                f"SessionConfig(task_recovery='raise') the session cannot run again: make a new Session, or "
                f"choose task_recovery='reinitialize' or 'restore'")
        if policy == "restore" and self._restore_last_checkpoint is None:
            raise _errors.FailedPreconditionError(
                f"task(s) {sorted(dead)} died and task_recovery='restore', but no checkpoint was saved with this "
                f"session yet (Saver.save(sess, path)); nothing to restore from")
        ray_backend.stop_tasks(self._ray, [self._actors[name] for name in dead])
        self._actors.update(zip(dead, ray_backend.start_tasks(self._ray, [self._tasks[name] for name in dead])))
        for name in dead:
            self._registered[name] = set()
        self._link()
        self._dead.clear()
        if policy == "restore":
            self._restore_last_checkpoint()
        else:
            inits = [v.initializer for v in self._graph_variables()
                     if getattr(v, "initializer", None) is not None and self.variable_task(v) in dead]
            if inits:
                self.prepare(make_request(self.graph, inits, []))(())

    def _graph_variables(self) -> list:
        return list(self.graph.get_collection(GraphKeys.GLOBAL_VARIABLES))

    # -- variables (Saver) -------------------------------------------------------------------
    def variable_task(self, var) -> str:
        """The task `var` lives on."""
        return self._cluster.task_of_device(variable_device(self.graph, var, self.config)).name

    def read_variables(self, variables) -> list:
        """Current values of `variables` (None where a variable holds no value yet), from their tasks."""
        self._recover()
        by_task: dict = {}
        for i, v in enumerate(variables):
            by_task.setdefault(self.variable_task(v), []).append(i)
        out = [None] * len(variables)
        for task, idx in by_task.items():
            ref = self._actors[task].read_variables.remote([self._names.name(variables[i]) for i in idx])
            try:
                vals = self._ray.get(ref, timeout=self.config.operation_timeout_in_ms / 1000)
            except Exception as e:      # noqa: BLE001
                raise self._failure(task, e) from None
            for i, val in zip(idx, vals):
                out[i] = val
        return out

    def assign_variables(self, pairs) -> None:
        """Set variables ((Variable, array) pairs) on their tasks (made there first if no run used them yet);
        each task checks all its values before it changes any."""
        self._recover()
        by_task: dict = {}
        for v, val in pairs:
            ctx = by_task.setdefault(self.variable_task(v), (VariableNames(self._names), {}))
            ctx[1][ctx[0].variable_name(v)] = val
        refs = {}
        for task, (ctx, vals) in by_task.items():
            records = graph_to_graph_def(Graph(), _ctx=ctx)["variables"]
            refs[task] = self._actors[task].assign_variables.remote(vals, records)
        for task, ref in refs.items():
            try:
                self._ray.get(ref, timeout=self.config.operation_timeout_in_ms / 1000)
            except Exception as e:      # noqa: BLE001
                raise self._failure(task, e) from None

    # -- lifecycle -----------------------------------------------------------------------
    def close(self) -> None:
        for handle in list(getattr(self, "_partial_runs", ())):
            handle.release()
        if getattr(self, "_stop_actors", None) is not None:
            self._stop_actors()


register_runtime(ray_backend.TARGET_PREFIX, RayRuntime)
