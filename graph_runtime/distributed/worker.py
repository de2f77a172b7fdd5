"""`TaskServer`: one task of a distributed session (run as a Ray actor by master.py).

A task holds:

- its resource table `variables`: variable name (the session's name for it,
  master.py) -> the `Variable` that lives here, kept across runs;
- its registered runs: registration id -> one compiled plan per device of
  the task that the run uses (`SessionConfig(device_count={"CPU": n})`
  gives every task n devices).  `register` receives the partitions as
  plain data (a GraphDef dict and the names of its feeds, returns and
  targets for each, never a pickled graph or code), imports each into a
  fresh graph binding variables by name through the resource table (new
  ones are created: uninitialized, or with the value the GraphDef carries
  for an eager variable), and compiles it
  (`pipeline.compile_partition`: the master placed, optimized and
  partitioned the whole graph; only the passes named in
  `pipeline.TASK_PASSES`, the in-place rewrite `memory`, run here);
- a `Mailbox` for the `_Recv`s of its partitions (transport.py); peers'
  `_Send`s call `deliver`.

`run(reg, step, feeds, timeout_s, trace)` runs a registration's partitions
for step `step`, device 0's on the calling thread and the others' on the
task's device threads (values between devices of the task go through its
own mailbox), and returns plain data: `("ok", values, stats)` or
`("error", class name, message, op name)` (the master rebuilds the
exception from a fixed table of classes; no exception object with graph
references travels).

A failed step is not rolled back (as in TensorFlow): the variable writes its
ops made before the failure stay.  Undoing them would be wrong while other
steps run concurrently: a value remembered at step start would erase the
acknowledged writes those steps made in between.

Imports `eager` and `graph_runtime` modules; never imports `ray` at module
level (the master wraps this class with `ray.remote`).
"""
from __future__ import annotations

import functools
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from eager import errors as _errors, fp_semantics

from .. import deadline
from ..graph import Graph
from ..graph_import import import_graph_def, variable_from_record
from ..pipeline import compile_partition
from ..plan import ReturnItem
from ..rendezvous import set_current
from ..run_config import RunMetadata, SessionConfig
from ..executors import TracingExecutor
from . import partial_runs
from .transport import Mailbox, StepRendezvous

# what a partition's config may carry (plain values only): how to compile it and whether to run the
# task's own passes (pipeline.TASK_PASSES; it arrives otherwise optimized)
CONFIG_FIELDS = ("optimize", "disabled_passes", "pass_options", "schedule")
_DEVICE_THREADS = 64         # device threads of a task: enough for every concurrent step's other devices


def _not_registered(task: str, reg: int) -> tuple:
    return ("error", "FailedPreconditionError", f"{task}: partition {reg} is not registered here (the task "
            f"restarted?)", None)


def _run_plan(plan, feeds: list, trace: bool, task: str) -> tuple:
    """(values, stats) of one run of `plan` (stats: None, or the traced ops on the task's wall clock)."""
    if not trace:
        try:
            return plan.fn(*feeds), None
        except Exception as e:
            raise plan.map_error(e) from None
    md = RunMetadata()
    began = time.time()             # wall clock: the master aligns every task on its step start
    values = TracingExecutor(md).run(plan, list(feeds))
    return values, (began, [(s.name, s.type, s.start_us, s.duration_us, s.device or task, s.bytes_sent,
                             s.bytes_saved, s.transfer_key) for s in md.step_stats])


def _run_steps(plan, values: list, feeds: dict, indices: list, wanted: list) -> tuple:
    return partial_runs.run_steps(plan, values, feeds, indices, wanted), None


def _merged_stats(parts: list) -> tuple:
    """The step stats of a task's device partitions on one clock: the earliest start's."""
    began = min(b for b, _ in parts)
    return (began, [(n, ty, s + (b - began) * 1e6, *rest) for b, stats in parts for n, ty, s, *rest in stats])


def error_record(e: BaseException) -> tuple:
    """An exception as plain data: ("error", class name, message, op name)."""
    return ("error", type(e).__name__, getattr(e, "message", None) or str(e), getattr(e, "op_name", None))


class TaskServer:
    """A task's state and entry points (module docstring)."""

    def __init__(self, task_name: str):
        self.task = task_name
        self.variables: dict = {}
        self._plans: dict = {}
        self._mailbox = Mailbox()
        self._peers: dict = {}
        self._lock = threading.Lock()    # registration and the resource table
        self._pool = None
        self._partial_values: dict = {}  # partial run id -> plan index -> its values so far
        self._active: dict = {}          # step id -> its calls running here (retire waits for them)
        self._active_cond = threading.Condition()

    # -- setup ---------------------------------------------------------------------------
    def ping(self) -> str:
        return self.task

    def adopt(self, task_name: str) -> str:
        """Serve as task `task_name` (a new actor, or an idle one of a closed session: ray_backend.py)."""
        self.task = task_name
        return task_name

    def retire(self, wait_s: float) -> bool:
        """Forget the session this task served (variables, partitions, peers, partial runs) so that another
        session can use it; steps still running are aborted first.  False: one did not end within `wait_s`
        (a long kernel), and the actor must not be reused."""
        with self._active_cond:
            for step in self._active:
                self._mailbox.abort(step, "the session closed")
            if not self._active_cond.wait_for(lambda: not self._active, timeout=wait_s):
                return False
        with self._lock:
            self.variables, self._plans, self._partial_values = {}, {}, {}
            self._peers = {}
        return True

    def probe(self, peer: str, n: int) -> float:
        """The median of `n` round trips (seconds) of a call from this task to task `peer` and back."""
        import ray      # this runs in a Ray actor; the module itself does not need Ray (the optional extra)
        times = []
        for _ in range(n):
            began = time.perf_counter()
            ray.get(self._peers[peer].ping.remote())
            times.append(time.perf_counter() - began)
        return sorted(times)[len(times) // 2]

    def set_peers(self, peers: dict) -> None:
        """Task name -> actor handle of every other task (for `_Send`s to them)."""
        self._peers = dict(peers)

    def register(self, reg: int, payload: dict) -> None:
        """Import and compile one run's partitions (one per device of this task) under id `reg` (module
        docstring)."""
        with self._lock:
            if reg in self._plans:
                return
            config = SessionConfig(**{k: v for k, v in payload.get("config", {}).items() if k in CONFIG_FIELDS})
            made: dict = {}
            plans = [(self._compile(part, made, config), len(part["feeds"]), part["targets"])
                     for part in payload["partitions"]]
            self.variables.update(made)          # only once every partition imported
            self._plans[reg] = plans

    def _compile(self, part: dict, made: dict, config):
        """One device's partition imported into a fresh graph (variables bound by name through the resource
        table; new ones go into `made`) and compiled."""
        gd = part["graph_def"]
        graph = Graph(f"partition@{self.task}")
        for rec in gd.get("variables", ()):
            name = rec.get("name") if isinstance(rec, dict) else None
            if name not in self.variables and name not in made:
                made[name] = variable_from_record(rec)       # validates the record
        import_graph_def(gd, input_map={**self.variables, **made}, name="", graph=graph)
        feeds = [graph.get_tensor_by_name(n) for n in part["feeds"]]
        variables = {**self.variables, **made}
        returns = [ReturnItem("value", tensor=graph.get_tensor_by_name(name)) if kind == "value" else
                   ReturnItem("var", var=variables[name]) for kind, name in part["returns"]]
        targets = [graph.get_operation_by_name(n) for n in part["targets"]]
        return compile_partition(graph, feeds, returns, targets, config)

    def forget(self, regs) -> None:
        with self._lock:
            for r in regs:
                self._plans.pop(r, None)

    # -- steps ---------------------------------------------------------------------------
    def deliver(self, step: int, items) -> None:
        """Values a peer sent for `step`: [(rendezvous key, value), ...]."""
        self._mailbox.put_many(step, items)

    def abort(self, step: int, why: str) -> None:
        self._mailbox.abort(step, why)

    def _send(self, task: str, step: int, items) -> None:
        peer = self._peers.get(task)
        if peer is None:
            raise _errors.UnavailableError(f"{self.task}: no task {task} in this cluster to send "
                                           f"{[k for k, _ in items]} to", op_name="_Send")
        peer.deliver.remote(step, items)               # one way: the receiver's mailbox

    def run(self, reg: int, step: int, feeds: list, timeout_s: float, trace: bool = False):
        """Run registration `reg`'s partitions for `step`, one thread per device (module docstring)."""
        plans = self._plans.get(reg)
        if plans is None:
            return _not_registered(self.task, reg)
        jobs, start = [], 0
        for plan, n, _ in plans:
            jobs.append(functools.partial(_run_plan, plan, feeds[start:start + n], trace, self.task))
            start += n
        return self._run_jobs(step, deadline.monotonic() + timeout_s, jobs, trace)

    def _run_jobs(self, step: int, at: float, jobs: list, trace: bool = False):
        """Run `jobs` (one per device: each returns (values, stats)) for `step`, the first on this thread, the
        others on the device threads; -> ("ok", values, stats) or the error record to report."""
        with self._active_cond:
            self._active[step] = self._active.get(step, 0) + 1
        try:
            futures = [self._device_threads().submit(self._run_partition, job, step, at) for job in jobs[1:]]
            outcomes = [self._run_partition(jobs[0], step, at)] + [f.result() for f in futures]
            self._mailbox.finish(step)
        finally:
            with self._active_cond:
                self._active[step] -= 1
                if not self._active[step]:
                    del self._active[step]
                self._active_cond.notify_all()
        failed = [o for o in outcomes if o[0] == "error"]
        if failed:
            return next((o for o in failed if o[1] != "AbortedError"), failed[0])
        values = [v for o in outcomes for v in o[1]]
        return ("ok", values, _merged_stats([o[2] for o in outcomes]) if trace else None)

    def _device_threads(self) -> ThreadPoolExecutor:
        """The threads that run a step's partitions of this task's other devices (made on first use; as
        many as the concurrent steps need: a partition must never queue behind another step's)."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=_DEVICE_THREADS, thread_name_prefix="graphjit-task",
                                                initializer=fp_semantics.quiet_thread)
            return self._pool

    def _run_partition(self, job, step: int, at: float):
        """One device's share of `step` (`job()` -> (values, stats)): ("ok", values, stats) or an error record;
        a failure aborts the step on this task's other devices and on the peers, so nobody waits for what it
        will not send."""
        rendezvous = StepRendezvous(step, self.task, self._mailbox, self._send, at)
        set_current(rendezvous)
        try:
            # loops check both: a busy task answers on time, and stops when a peer's failure aborts the step
            with deadline.scope(at, self._mailbox.signal(step)):
                values, stats = job()
            rendezvous.flush()               # what the partition sent since its last wait
        except Exception as e:            # noqa: BLE001 - reported to the master as data
            if not isinstance(e, _errors.AbortedError):
                why = f"{self.task} failed: {type(e).__name__}: {e}"
                self._mailbox.abort(step, why)
                for peer in self._peers.values():
                    peer.abort.remote(step, why)
            return error_record(e)
        finally:
            set_current(None)
        return ("ok", values, stats)

    # -- partial runs (partial_runs.py) ------------------------------------------------------------
    def partial_layout(self, reg: int) -> list:
        """Each plan of registration `reg` as plain data for the master's partial runs."""
        return [partial_runs.layout(plan, n, targets) for plan, n, targets in self._plans[reg]]

    def partial_run(self, reg: int, handle: int, step: int, work: list, timeout_s: float):
        """One call of partial run `handle`: `work` holds (plan index, {value id: fed value}, step indices,
        return positions) per plan; the plans' values persist between calls."""
        plans = self._plans.get(reg)
        if plans is None:
            return _not_registered(self.task, reg)
        with self._lock:
            state = self._partial_values.setdefault(handle, {})
        jobs = []
        for k, feeds, indices, wanted in work:
            plan = plans[k][0]
            values = state.setdefault(k, plan.schedule.initial_values(()))
            jobs.append(functools.partial(_run_steps, plan, values, feeds, indices, wanted))
        return self._run_jobs(step, deadline.monotonic() + timeout_s, jobs)

    def end_partial_run(self, handle: int) -> None:
        with self._lock:
            self._partial_values.pop(handle, None)

    # -- variables (Saver, recovery) ------------------------------------------------------------
    def read_variables(self, names: list) -> list:
        out = []
        for n in names:
            var = self.variables.get(n)
            out.append(None if var is None else var.stored_array())
        return out

    def assign_variables(self, values: dict, records=()) -> None:
        """Set variables of the table (all checked first: nothing changes unless every one fits); `records`
        (GraphDef variable records) describe variables to make first if no partition made them yet."""
        with self._lock:
            for rec in records:
                if isinstance(rec, dict) and rec.get("name") not in self.variables:
                    self.variables[rec["name"]] = variable_from_record(rec)
        for n, v in values.items():
            var = self.variables.get(n)
            if var is None:
                raise _errors.NotFoundError(f"{self.task}: no variable {n!r} lives on this task")
            if v.dtype != var.dtype.np_dtype or not var.shape.is_compatible_with(v.shape):
                raise _errors.InvalidArgumentError(
                    f"{self.task}: cannot restore variable {n!r} ({var.dtype.name} {var.shape}) from a value "
                    f"of dtype {v.dtype} and shape {list(v.shape)}")
        for n, v in values.items():
            self.variables[n].replace_stored_array(v, check=False)      # checked above, all first

