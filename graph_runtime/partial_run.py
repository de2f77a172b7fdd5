"""Partial runs: one plan for all declared feeds and fetches, executed a piece at a time.

`Session.partial_run_setup(fetches, feeds)` compiles ONE plan through the
pipeline (`pipeline.prepare`) for every declared feed and fetch and returns a
`PartialRunHandle`.  Each `Session.partial_run(handle, fetches, feed_dict)`
stores the new feeds, runs only the steps that the requested fetches need and
that have not run yet (the ancestors over `Step.deps`: data, control and the
order of reads and writes), through `Step.apply` like every interpreting
executor (executors.py), and returns the values as `Session.run` does.  Every
step runs at most once per handle, so a stateful op does too.

On several devices the plan is split per device as for `Session.run` (a
`MultiDevicePlan`) and each partition's schedule is stepped through the same
way: a call works out, per partition, the steps its fetches need (a needed
`_Recv` needs the `_Send` of its key, in another partition, so a value's
transfer happens in one call), and runs each partition's share on that
partition's device thread, the main one on the caller's, through one
rendezvous per call (`MultiDevicePlan.each`: an error aborts the call with
the op's error, like a step).  So the partitions run on their devices and
the rules above, and the results, are those of one device.  (TensorFlow's
PRunSetup starts its executors once and they block on feeds; here a
partition's executor is started by each call for the work that call needs,
which gives the same values and runs nothing a fetch does not need.)

TensorFlow's rules and messages (direct_session.cc, `PRun`), all
`InvalidArgumentError`:
- a handle that is unknown, finished (every feed fed and every fetch
  fetched), released, or whose run failed: "Must run 'setup' before
  performing partial runs!";
- "The feed X was not specified in partial_run_setup." / "The feed X has
  already been fed.";
- "The fetch X was not specified in partial_run_setup." / "The fetch X has
  already been fetched.";
- a fetch that needs a declared feed not fed yet: "Fetch F can't be computed
  from the feeds that have been fed so far." (F names the missing feed, as
  TensorFlow's CheckFetch does; we add which fetch needed it).

The state (values computed so far) lives on the handle: handles are
independent, a handle nobody references is freed by the garbage collector
(the session keeps only weak references), `handle.release()` frees it at
once, and `Session.close()` releases every handle.  One lock per handle makes
concurrent calls on the same handle run one after the other.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

import itertools
import threading
import weakref
from dataclasses import replace

from eager import fp_semantics
from eager.errors import InvalidArgumentError

from .fetches import pack_result, resolve_feeds, resolve_fetches
from .multi_device import MultiDevicePlan
from .partition import RECV, SEND
from .pipeline import prepare
from .plan import Schedule

_SETUP_FIRST = "Must run 'setup' before performing partial runs!"
_ids = itertools.count()


def fetch_key(item, target) -> str:
    """The name a fetch is declared and asked by: tensor name, op name (target), variable name."""
    if item.kind == "value":
        return item.tensor.name
    if item.kind == "var":
        return item.var.name
    return target.name


class _Progress:
    """One plan's state in a partial run (the whole run on one device, or one device's partition): the
    values computed so far, which steps ran, how many step inputs still read each value."""

    def __init__(self, plan, feed_of_slot):
        sched = plan.schedule
        self.sched = sched
        self.values = sched.initial_values(())
        self.feed_of_slot = feed_of_slot        # the plan's feed slot -> the run's feed index
        self.ran = [False] * len(sched.steps)
        self.remaining = dict(sched.refcount)   # value id -> step inputs still to read it
        producer = {}
        for i, s in enumerate(sched.steps):
            for v in s.outputs:
                if v >= 0:
                    producer[v] = i
            producer[("op", s.op.name)] = i
        self.producer = producer

    def run(self, todo) -> None:
        with fp_semantics.ignoring():
            for i in todo:
                s = self.sched.steps[i]
                s.apply(self.values)
                self.ran[i] = True
                for v in s.inputs:
                    self.remaining[v] -= 1

    def drop_dead_values(self, pending) -> None:
        """Free values no pending step reads and no pending fetch (value ids `pending`) returns."""
        values, sched = self.values, self.sched
        n_feeds = len(sched.feeds)
        for v, n in self.remaining.items():
            if n == 0 and v not in pending and v not in sched.consts and values[v] is not None and v >= n_feeds:
                values[v] = None


class PartialRunHandle:
    """A partial run in progress (see the module docstring); `release()` frees it."""

    def __init__(self, session, plan, feed_names, fetch_index):
        self._id = next(_ids)
        self._session = weakref.ref(session)
        self._lock = threading.Lock()
        self._plan = plan
        if isinstance(plan, MultiDevicePlan):
            self._parts = [_Progress(p, [i for i, _ in part.feeds]) for p, part in zip(plan.plans, plan.parts)]
            main = plan.parts[0].returns       # the run's returns (a variable is read after the partitions)
            self._returns = [r if r.kind == "var" else self._parts[0].sched.returns[i] for i, r in enumerate(main)]
            self._senders = {s.op.get_attr("key"): (k, i) for k, part in enumerate(self._parts)
                             for i, s in enumerate(part.sched.steps) if s.op._opdef is SEND}
        else:
            self._parts = [_Progress(plan, list(range(len(feed_names))))]
            self._returns = list(plan.schedule.returns)
            self._senders = {}
        self._feed_names = list(feed_names)
        self._feed_index = {n: i for i, n in enumerate(feed_names)}     # feed name -> the run's feed index
        self._fed: set = set()
        self._fetch_index = fetch_index          # fetch key -> index in the run's returns
        self._fetched: set = set()
        self._live = True

    @property
    def released(self) -> bool:
        return not self._live

    def release(self) -> None:
        """Free the values this partial run holds; further partial runs on it raise."""
        self._live = False
        plan, self._plan, self._parts = self._plan, None, None
        if isinstance(plan, MultiDevicePlan):
            plan.close()

    def __repr__(self):
        return f"<PartialRunHandle {self._id}{'' if self._live else ' released'}>"


def declare(graph, fetches, feeds) -> tuple:
    """A partial run's setup names: -> (feed tensors, fetch ReturnItems, target ops, fetch key -> index)."""
    if fetches is None:
        raise TypeError("partial_run_setup: fetches must be a tensor, op, name, or a list of them (got None)")
    feed_tensors = resolve_feeds(graph, list(feeds or []))
    items, targets, _, _ = resolve_fetches(graph, fetches if isinstance(fetches, (list, tuple)) else [fetches])
    target_iter = iter(targets)
    fetch_index: dict = {}
    for i, item in enumerate(items):
        target = next(target_iter) if item.kind == "none" else None
        key = fetch_key(item, target)
        if key in fetch_index:
            raise InvalidArgumentError(f"partial_run_setup: the fetch {key} is listed more than once")
        fetch_index[key] = i
    return feed_tensors, items, targets, fetch_index


def partial_run_config(config):
    """The session config a partial run's graph is prepared with, on any runtime: without fusion.  A fused
    group computes all its outputs at once, so a fetch that needs only the feeds given so far would wait
    for a feed another output of its group reads (the feed-when-ready rule)."""
    return replace(config, disabled_passes=tuple(config.disabled_passes) + ("fusion",))


def setup(session, fetches, feeds) -> PartialRunHandle:
    feed_tensors, items, targets, fetch_index = declare(session.graph, fetches, feeds)
    # placed (bad device requests raise as in run) and, on several devices, split: each partition's
    # schedule is stepped through call by call, on its device
    plan = prepare(session.graph, feed_tensors, (), targets, partial_run_config(session.config), returns=items,
                   container="list")
    # target ops keep their names through the optimizer (the pipeline preserves them); a target with no
    # step (a constant, an op whose outputs are all fed) has nothing to run
    return PartialRunHandle(session, plan, [t.name for t in feed_tensors], fetch_index)


def run(session, handle, fetches, feed_dict):
    if not isinstance(handle, PartialRunHandle) or handle._session() is not session:
        raise InvalidArgumentError(_SETUP_FIRST)
    with handle._lock:
        if not handle._live:
            raise InvalidArgumentError(_SETUP_FIRST)
        feed_dict = feed_dict or {}
        request = _check(session, handle, fetches, feed_dict)   # a rejected request leaves the run as it was
        try:
            out = _execute(handle, feed_dict, *request)
        except BaseException:
            handle.release()          # a failed run ends the partial run (TensorFlow deletes its state)
            raise
        if len(handle._fed) == len(handle._feed_index) and len(handle._fetched) == len(handle._fetch_index):
            handle.release()          # everything fed and fetched: done
        return out


def check_request(graph, feed_index: dict, fed: set, fetch_index: dict, fetched: set, fetches, feed_dict) -> tuple:
    """Validate one partial run's names against its setup (module docstring): -> (feed ids, fetch keys,
    container, packer).  `feed_index`: feed name -> id; `fetch_index`: the declared fetch keys."""
    feed_tensors = resolve_feeds(graph, list(feed_dict))
    feed_ids = []
    for t in feed_tensors:
        i = feed_index.get(t.name)
        if i is None:
            raise InvalidArgumentError(f"The feed {t.name} was not specified in partial_run_setup.")
        if i in fed:
            raise InvalidArgumentError(f"The feed {t.name} has already been fed.")
        feed_ids.append(i)
    items, targets, container, packer = resolve_fetches(graph, fetches)
    target_iter = iter(targets)
    keys = []
    for item in items:
        key = fetch_key(item, next(target_iter) if item.kind == "none" else None)
        if key not in fetch_index:
            raise InvalidArgumentError(f"The fetch {key} was not specified in partial_run_setup.")
        if key in fetched:
            raise InvalidArgumentError(f"The fetch {key} has already been fetched.")
        keys.append(key)
    return feed_ids, keys, container, packer


def cannot_compute(feed_name: str, key: str) -> InvalidArgumentError:
    """TensorFlow's error for a fetch that needs a declared feed not fed yet."""
    return InvalidArgumentError(f"Fetch {feed_name} can't be computed from the feeds that have been fed so far. "
                                f"(needed by the fetch {key})")


def _check(session, handle, fetches, feed_dict) -> tuple:
    """Validate one request: -> (the run's feed indices, fetch keys, steps to run per plan, container, packer)."""
    feed_ids, keys, container, packer = check_request(session.graph, handle._feed_index, handle._fed,
                                                      handle._fetch_index, handle._fetched, fetches, feed_dict)
    todo = _steps_to_run(handle, keys, handle._fed | set(feed_ids))
    return feed_ids, keys, todo, container, packer


def _execute(handle, feed_dict, feed_ids, keys, todo, container, packer):
    parts = handle._parts
    for i, v in zip(feed_ids, feed_dict.values()):
        slots = [(part, j) for part in parts for j, f in enumerate(part.feed_of_slot) if f == i]
        converted = slots[0][0].sched.converters[slots[0][1]](v) if slots else None
        for part, j in slots:
            part.values[j] = converted
    handle._fed.update(feed_ids)
    if isinstance(handle._plan, MultiDevicePlan):
        handle._plan.each(lambda k: parts[k].run(todo[k]))   # each partition on its device, one rendezvous
    else:
        parts[0].run(todo[0])
    out = [Schedule.result(handle._returns[handle._fetch_index[key]], parts[0].values) for key in keys]
    handle._fetched.update(keys)
    pending = {handle._returns[i].vid for k, i in handle._fetch_index.items() if k not in handle._fetched}
    for k, part in enumerate(parts):
        part.drop_dead_values(pending if k == 0 else ())
    return pack_result(out, container, packer)


def _steps_to_run(handle, keys, fed_now) -> list:
    """Per plan, the not-yet-run steps the fetches `keys` need, in schedule order (a `_Recv` needs its
    `_Send`, in another partition); checks that their feeds are fed.  The error names the first fetch, in
    request order, that needs a feed not fed yet, and the first such feed in declaration order: the same
    on one device as on several, whatever order the partitions are walked in."""
    parts = handle._parts
    need = [set() for _ in parts]
    stack = []
    unfed = set()

    def want_step(k, i, key):
        if not parts[k].ran[i] and i not in need[k]:
            need[k].add(i)
            stack.append((k, i, key))

    def want_value(k, vid, key):
        part = parts[k]
        if vid < len(part.sched.feeds):
            if part.feed_of_slot[vid] not in fed_now:
                unfed.add(part.feed_of_slot[vid])
            return
        i = part.producer.get(vid)
        if i is not None:
            want_step(k, i, key)

    for key in keys:
        r = handle._returns[handle._fetch_index[key]]
        if r.kind == "value":
            want_value(0, r.vid, key)
        elif r.kind == "none":
            for k, part in enumerate(parts):       # a target runs in its own device's partition
                i = part.producer.get(("op", key))
                if i is not None:
                    want_step(k, i, key)
        while stack:
            k, i, _ = stack.pop()
            s = parts[k].sched.steps[i]
            for v in s.inputs:
                want_value(k, v, key)
            for d in s.deps:
                want_step(k, d, key)
            if s.op._opdef is RECV:
                want_step(*handle._senders[s.op.get_attr("key")], key)
        if unfed:
            raise cannot_compute(handle._feed_names[min(unfed)], key)
    return [sorted(n) for n in need]
