"""`TaskServer`: one task of a distributed session (run as a Ray actor by master.py).

A task holds:

- its resource table `variables`: variable name (the session's name for it,
  master.py) -> the `Variable` that lives here, kept across runs;
- its registered partitions: registration id -> compiled plan.  `register`
  receives a partition as plain data (a GraphDef dict and the names of its
  feeds, returns and targets, never a pickled graph or code), imports it
  into a fresh graph binding variables by name through the resource table
  (new ones are created: uninitialized, or with the value the GraphDef
  carries for an eager variable), and compiles it
  (`pipeline.compile_partition`: the master placed, optimized and
  partitioned the whole graph; only the passes named in
  `pipeline.TASK_PASSES`, the in-place rewrite `memory`, run here);
- a `Mailbox` for the `_Recv`s of its partitions (transport.py); peers'
  `_Send`s call `deliver`.

`run(reg, step, feeds, timeout_s, trace)` runs one partition
for step `step` and returns plain data: `("ok", values, stats)` or
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

import threading
import time

from eager import errors as _errors

from .. import deadline
from ..graph import Graph
from ..graph_import import import_graph_def, variable_from_record
from ..pipeline import compile_partition
from ..plan import ReturnItem
from ..rendezvous import set_current
from ..run_config import RunMetadata, SessionConfig
from ..executors import TracingExecutor
from .transport import Mailbox, StepRendezvous

# what a partition's config may carry (plain values only): how to compile it and whether to run the
# task's own passes (pipeline.TASK_PASSES; it arrives otherwise optimized)
CONFIG_FIELDS = ("optimize", "disabled_passes", "pass_options", "schedule")


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

    # -- setup ---------------------------------------------------------------------------
    def ping(self) -> str:
        return self.task

    def set_peers(self, peers: dict) -> None:
        """Task name -> actor handle of every other task (for `_Send`s to them)."""
        self._peers = dict(peers)

    def register(self, reg: int, payload: dict) -> None:
        """Import and compile one partition under id `reg` (module docstring)."""
        with self._lock:
            if reg in self._plans:
                return
            gd = payload["graph_def"]
            graph = Graph(f"partition@{self.task}")
            made = {}
            for rec in gd.get("variables", ()):
                name = rec.get("name") if isinstance(rec, dict) else None
                if name not in self.variables and name not in made:
                    made[name] = variable_from_record(rec)       # validates the record
            import_graph_def(gd, input_map={**self.variables, **made}, name="", graph=graph)
            self.variables.update(made)          # only once the whole partition imported
            feeds = [graph.get_tensor_by_name(n) for n in payload["feeds"]]
            returns = []
            for kind, name in payload["returns"]:
                if kind == "value":
                    returns.append(ReturnItem("value", tensor=graph.get_tensor_by_name(name)))
                else:
                    returns.append(ReturnItem("var", var=self.variables[name]))
            targets = [graph.get_operation_by_name(n) for n in payload["targets"]]
            config = SessionConfig(**{k: v for k, v in payload.get("config", {}).items() if k in CONFIG_FIELDS})
            self._plans[reg] = compile_partition(graph, feeds, returns, targets, config)

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
        plan = self._plans.get(reg)
        if plan is None:
            return ("error", "FailedPreconditionError", f"{self.task}: partition {reg} is not registered here "
                    f"(the task restarted?)", None)
        at = deadline.monotonic() + timeout_s
        rendezvous = StepRendezvous(step, self.task, self._mailbox, self._send, at)
        set_current(rendezvous)
        try:
            with deadline.scope(at):            # loops check it too: a busy task answers on time
                if trace:
                    md = RunMetadata()
                    began = time.time()             # wall clock: the master aligns every task on its step start
                    values = TracingExecutor(md).run(plan, list(feeds))
                    stats = (began, [(s.name, s.type, s.start_us, s.duration_us, s.device or self.task,
                                      s.bytes_sent, s.bytes_saved, s.transfer_key) for s in md.step_stats])
                else:
                    try:
                        values = plan.fn(*feeds)
                    except Exception as e:
                        raise plan.map_error(e) from None
                    stats = None
            rendezvous.flush()               # what the partition sent since its last wait
        except Exception as e:            # noqa: BLE001 - reported to the master as data
            self._mailbox.finish(step)
            if not isinstance(e, _errors.AbortedError):
                why = f"{self.task} failed: {type(e).__name__}: {e}"
                for peer in self._peers.values():       # nobody waits for what this task will not send
                    peer.abort.remote(step, why)
            return error_record(e)
        finally:
            set_current(None)
        self._mailbox.finish(step)
        return ("ok", values, stats)

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

