"""Partial runs on a cluster: `partial_run_setup` / `partial_run` of a `ray://` session.

The rules are the local ones (graph_runtime/partial_run.py, TensorFlow's
PRunSetup/PRun): the same names are checked with the same messages, a fetch
that needs a declared feed not fed yet raises "can't be computed from the
feeds that have been fed so far", a value is fed when it arrives, every op
runs at most once per partial run (a stateful op too), a failed call ends the
partial run, and it ends by itself once every feed is fed and every fetch
fetched.

How it runs:

- setup partitions the run for every declared feed and fetch, registers
  the partitions with their tasks like any run (RayRuntime), and asks each
  task for the `layout` of its compiled plans: plain data naming each step,
  the steps it depends on (data, control, the order of reads and writes),
  the feeds it reads, and the rendezvous key of a `_Send`/`_Recv`;
- the master joins the layouts into one graph of steps over the cluster
  (a `_Recv` depends on the `_Send` of its key) and keeps which steps ran;
- each `partial_run` computes the steps the requested fetches need that
  have not run yet (checking their feeds are fed), and sends every task
  involved, in one call each, its newly fed values and the step indices of
  each of its plans to run now (`TaskServer.partial_run`).  A task keeps the
  values of its plans per partial run between calls, runs its plans' steps
  in schedule order, one thread per device, sends and receives through the
  rendezvous of the call (a fresh step id), and returns the requested
  values.  A `_Send` and the `_Recv` of its key always run in the same call.

Imports `eager`, sibling modules and `graph_runtime` modules.
"""
from __future__ import annotations

import itertools
import threading
import weakref

import numpy as np

from eager import fp_semantics
from eager.errors import InvalidArgumentError

from ..fetches import pack_result
from ..runtime import Request
from ..partial_run import cannot_compute, check_request, declare, partial_run_config

_SETUP_FIRST = "Must run 'setup' before performing partial runs!"
_ids = itertools.count(1)


# -- the task's side --------------------------------------------------------------------------------------
def layout(plan, n_feeds: int, targets: list) -> dict:
    """Plain data describing a compiled plan's steps for the master (module docstring)."""
    sched = plan.schedule
    steps = []
    for s in sched.steps:
        key = s.op._attrs.get("key") if s.op.type in ("_Send", "_Recv") else None
        steps.append((s.op.name, list(s.deps), sorted({v for v in s.inputs if v < n_feeds}),
                      s.op.type if key else None, key))
    producer = {v: i for i, s in enumerate(sched.steps) for v in s.outputs if v >= 0}
    returns = [("feed", r.vid) if r.kind == "value" and r.vid < n_feeds else
               ("step", producer.get(r.vid)) if r.kind == "value" else (r.kind, None) for r in sched.returns]
    by_name = {s.op.name: i for i, s in enumerate(sched.steps)}
    return {"steps": steps, "returns": returns, "n_feeds": n_feeds,
            "targets": {n: by_name[n] for n in targets if n in by_name}}


def run_steps(plan, values: list, feeds: dict, indices: list, wanted: list) -> list:
    """Feed `feeds` (value id -> value) into `values`, run the steps `indices` (schedule order) and return the
    plan's returns at positions `wanted`."""
    sched = plan.schedule
    for vid, v in feeds.items():
        values[vid] = sched.converters[vid](v)
    with fp_semantics.ignoring():
        for i in indices:
            sched.steps[i].apply(values)
    return [sched.result(sched.returns[p], values) for p in wanted]


# -- the master's side ------------------------------------------------------------------------------------
class RayPartialRunHandle:
    """A partial run in progress on a cluster; `release()` frees what the tasks hold for it."""

    def __init__(self, runtime, session, runner, feeds, items, fetch_index, layouts):
        self._id = next(_ids)
        self._runtime = runtime
        self._session = weakref.ref(session)
        self._runner = runner
        self._feeds = feeds                       # the declared feed tensors
        self._feed_index = {t.name: i for i, t in enumerate(feeds)}
        self._kinds = [item.kind for item in items]
        self._fetch_index = fetch_index           # fetch key -> index in the run's returns
        self._fed_returns = {i: j for i, j, _ in runner.fed_returns}     # return index -> feed id
        self._fed: set = set()
        self._fetched: set = set()
        self._values: dict = {}                   # feed id -> fed value (for fetches of fed tensors)
        self._ran: set = set()                    # (unit, step) that ran
        self._lock = threading.Lock()
        self._live = True
        self._join(layouts)
        # a handle dropped unreleased frees the tasks' values when the garbage collector takes it
        self._end = weakref.finalize(self, runtime.end_partial_run, self._id, runner)
        self._end.atexit = False              # at exit the actors end with Ray

    def _join(self, layouts) -> None:
        """One graph of steps over the cluster, a node being (unit, step index); a unit is one plan of one
        task (the k-th of the task's devices that the run uses)."""
        self._units = []            # (task part, plan index in the task, layout)
        self._feed_at: dict = {}    # feed id -> [(unit, value id)]
        self._unit_feed: list = []  # unit -> {value id: feed id}
        self._return_at: dict = {}  # return index -> (unit, return position)
        self._target_at: dict = {}  # target op name -> (unit, step)
        sends = {}
        for part, plans in zip(self._runner.parts, layouts):
            feeds, returns = iter(part.feed_index), iter(part.return_index)
            for k, lay in enumerate(plans):
                u = len(self._units)
                self._units.append((part, k, lay))
                self._unit_feed.append({vid: next(feeds) for vid in range(lay["n_feeds"])})
                for vid, f in self._unit_feed[u].items():
                    self._feed_at.setdefault(f, []).append((u, vid))
                for pos in range(len(lay["returns"])):
                    self._return_at[next(returns)] = (u, pos)
                self._target_at.update({n: (u, i) for n, i in lay["targets"].items()})
                sends.update({key: (u, i) for i, (_, _, _, kind, key) in enumerate(lay["steps"]) if kind == "_Send"})
        self._preds = {}
        for u, (_, _, lay) in enumerate(self._units):
            for i, (_, deps, _, kind, key) in enumerate(lay["steps"]):
                across = [sends[key]] if kind == "_Recv" and key in sends else []
                self._preds[(u, i)] = [(u, d) for d in deps] + across

    @property
    def released(self) -> bool:
        return not self._live

    def release(self) -> None:
        """Free the values the tasks hold for this partial run; further partial runs on it raise."""
        self._live = False
        self._end()

    def __repr__(self):
        return f"<RayPartialRunHandle {self._id}{'' if self._live else ' released'}>"

    # -- one call ---------------------------------------------------------------------------------------
    def check(self, fetches, feed_dict) -> tuple:
        """Validate a call (a rejected one leaves the partial run as it was): -> (feed ids, keys, steps to
        run, container, packer)."""
        feed_ids, keys, container, packer = check_request(
            self._runtime.graph, self._feed_index, self._fed, self._fetch_index, self._fetched, fetches, feed_dict)
        return feed_ids, keys, self._needed(keys, self._fed | set(feed_ids)), container, packer

    def _needed(self, keys, fed_now) -> list:
        """The steps the fetches `keys` need that have not run yet (each needs its feeds fed)."""
        need: set = set()
        stack = []

        def want(node, key):
            if node not in self._ran and node not in need:
                need.add(node)
                stack.append((node, key))

        for key in keys:
            i = self._fetch_index[key]
            if i in self._fed_returns and self._fed_returns[i] not in fed_now:
                raise cannot_compute(self._feeds[self._fed_returns[i]].name, key)
            if key in self._target_at and self._kinds[i] == "none":
                want(self._target_at[key], key)
            elif i in self._return_at:
                u, pos = self._return_at[i]
                kind, at = self._units[u][2]["returns"][pos]
                if kind == "step" and at is not None:
                    want((u, at), key)
        while stack:
            (u, i), key = stack.pop()
            for vid in self._units[u][2]["steps"][i][2]:
                if self._unit_feed[u][vid] not in fed_now:
                    raise cannot_compute(self._feeds[self._unit_feed[u][vid]].name, key)
            for p in self._preds[(u, i)]:
                want(p, key)
        return sorted(need)

    def execute(self, feed_ids, keys, need, container, packer, feed_values):
        """Send the new feeds and the steps to run to the tasks involved; -> the fetched values."""
        fed = dict(zip(feed_ids, feed_values))
        work: dict = {}               # unit -> ({value id: value}, [step], [return position])

        def of(u):
            return work.setdefault(u, ({}, [], []))

        for f, v in fed.items():
            for u, vid in self._feed_at.get(f, ()):
                of(u)[0][vid] = v
        for u, i in need:
            of(u)[1].append(i)
        slots = []
        for key in keys:
            i = self._fetch_index[key]
            if i in self._return_at:
                u, pos = self._return_at[i]
                of(u)[2].append(pos)
                slots.append((u, len(work[u][2]) - 1))
            else:
                slots.append((None, i))
        got = self._runtime.run_partial(self._id, self._runner, self._units, work)
        self._fed.update(feed_ids)
        self._values.update(fed)
        self._ran.update(need)
        self._fetched.update(keys)
        out = []
        for u, j in slots:
            if u is not None:
                out.append(got[u][j])
            elif j in self._fed_returns:
                f = self._fed_returns[j]
                out.append(np.asarray(self._values[f], self._feeds[f].dtype.np_dtype))
            else:
                out.append(None)          # a target: it ran, or had nothing to run
        return pack_result(out, container, packer)

    @property
    def done(self) -> bool:
        return len(self._fed) == len(self._feed_index) and len(self._fetched) == len(self._fetch_index)


def setup(runtime, session, fetches, feeds) -> RayPartialRunHandle:
    feed_tensors, items, targets, fetch_index = declare(session.graph, fetches, feeds)
    runner, layouts = runtime.start_partial_run(feed_tensors, items, targets)
    return RayPartialRunHandle(runtime, session, runner, feed_tensors, items, fetch_index, layouts)


def run(session, handle, fetches, feed_dict):
    if not isinstance(handle, RayPartialRunHandle) or handle._session() is not session:
        raise InvalidArgumentError(_SETUP_FIRST)
    with handle._lock:
        if not handle._live:
            raise InvalidArgumentError(_SETUP_FIRST)
        feed_dict = feed_dict or {}
        request = handle.check(fetches, feed_dict)
        try:
            out = handle.execute(*request, list(feed_dict.values()))
        except BaseException:
            handle.release()          # a failed run ends the partial run (TensorFlow deletes its state)
            raise
        if handle.done:
            handle.release()
        return out


class RayPartialRuns:
    """RayRuntime's partial runs (a base class of RayRuntime: master.py): setup, calls, release."""

    def partial_run_setup(self, session, fetches, feeds):
        handle = setup(self, session, fetches, feeds)
        self._partial_runs.add(handle)
        return handle

    def partial_run(self, session, handle, fetches, feed_dict):
        return run(session, handle, fetches, feed_dict)

    def start_partial_run(self, feeds, items, targets) -> tuple:
        """Partition and register a partial run's graph: -> (its TaskPlan, each task's plan layouts)."""
        request = Request(self.graph, tuple(feeds), tuple(items), tuple(targets), "list", None)
        runner = self.prepare(request, partial_run_config(self.config)).plan      # without fusion, as locally
        self._recover()
        self._register(runner)
        refs = [self._actors[p.task].partial_layout.remote(p.reg) for p in runner.parts]
        layouts = []
        for p, ref in zip(runner.parts, refs):
            try:
                layouts.append(self._ray.get(ref, timeout=self.config.operation_timeout_in_ms / 1000))
            except Exception as e:      # noqa: BLE001
                raise self._failure(p.task, e) from None
        return runner, layouts

    def run_partial(self, handle: int, runner, units: list, work: dict) -> dict:
        """One call of a partial run: each task with work gets it in one call (partial_runs.py); -> unit ->
        the values of its requested returns."""
        by_task: dict = {}
        for u, (feeds, steps, wanted) in sorted(work.items()):
            part, k, _ = units[u]
            by_task.setdefault(part.task, (part, []))[1].append((u, (k, feeds, steps, wanted)))
        self._recover()
        timeout_s = self.config.operation_timeout_in_ms / 1000.0
        step = self.next_step()
        involved = _Involved([part for part, _ in by_task.values()])
        refs = [self._actors[part.task].partial_run.remote(part.reg, handle, step, [w for _, w in mine], timeout_s)
                for part, mine in by_task.values()]
        results = self._gather(involved, step, refs, timeout_s)
        out = {}
        for (_, mine), res in zip(by_task.values(), results):
            values = iter(res[1])
            for u, (_, _, _, wanted) in mine:
                out[u] = [next(values) for _ in wanted]
        return out

    def end_partial_run(self, handle: int, runner) -> None:
        """Free what the tasks hold for a finished or released partial run."""
        for p in runner.parts:
            if p.task not in self._dead and p.task in self._actors:
                self._actors[p.task].end_partial_run.remote(handle)
                self._actors[p.task].forget.remote([p.reg])
            self._registered.get(p.task, set()).discard(p.reg)


class _Involved:
    """The tasks of one partial-run call, as `_gather` and `_abort` see a run's parts."""

    def __init__(self, parts):
        self.parts = parts
