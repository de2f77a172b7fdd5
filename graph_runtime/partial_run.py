"""Partial runs: one plan for all declared feeds and fetches, executed a piece at a time.

`Session.partial_run_setup(fetches, feeds)` compiles ONE plan through the
pipeline (`pipeline.prepare`) for every declared feed and fetch and returns a
`PartialRunHandle`.  Each `Session.partial_run(handle, fetches, feed_dict)`
stores the new feeds, runs only the steps that the requested fetches need and
that have not run yet (the ancestors over `Step.deps`: data, control and the
order of reads and writes), through `Step.apply` like every interpreting
executor (executors.py), and returns the values as `Session.run` does.  Every
step runs at most once per handle, so a stateful op does too.

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

from eager import fp_semantics
from eager.errors import InvalidArgumentError

from .fetches import pack_result, resolve_feeds, resolve_fetches
from .pipeline import prepare

_SETUP_FIRST = "Must run 'setup' before performing partial runs!"
_ids = itertools.count()


def fetch_key(item, target) -> str:
    """The name a fetch is declared and asked by: tensor name, op name (target), variable name."""
    if item.kind == "value":
        return item.tensor.name
    if item.kind == "var":
        return item.var.name
    return target.name


class PartialRunHandle:
    """A partial run in progress (see the module docstring); `release()` frees it."""

    def __init__(self, session, plan, feed_names, fetch_index):
        self._id = next(_ids)
        self._session = weakref.ref(session)
        self._lock = threading.Lock()
        sched = plan.schedule
        self._plan = plan
        self._values = sched.initial_values(())
        self._feed_index = {n: i for i, n in enumerate(feed_names)}     # feed name -> value id
        self._fed: set = set()
        self._fetch_index = fetch_index          # fetch key -> index in plan.returns
        self._fetched: set = set()
        self._ran = [False] * len(sched.steps)
        self._remaining = dict(sched.refcount)   # value id -> step inputs still to read it
        producer = {}
        for i, s in enumerate(sched.steps):
            for v in s.outputs:
                if v >= 0:
                    producer[v] = i
            producer[("op", s.op.name)] = i
        self._producer = producer
        self._live = True

    @property
    def released(self) -> bool:
        return not self._live

    def release(self) -> None:
        """Free the values this partial run holds; further partial runs on it raise."""
        self._live = False
        self._values = None
        self._plan = None

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


def setup(session, fetches, feeds) -> PartialRunHandle:
    feed_tensors, items, targets, fetch_index = declare(session.graph, fetches, feeds)
    # placed (bad device requests raise as in run) but not split: one schedule, stepped through call by call
    plan = prepare(session.graph, feed_tensors, (), targets, session.config, returns=items, container="list",
                   split_devices=False)
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
    """Validate one request: -> (feed value ids, fetch keys, steps to run, container, packer)."""
    feed_ids, keys, container, packer = check_request(session.graph, handle._feed_index, handle._fed,
                                                      handle._fetch_index, handle._fetched, fetches, feed_dict)
    todo = _steps_to_run(handle, handle._plan.schedule, keys, handle._fed | set(feed_ids))
    return feed_ids, keys, todo, container, packer


def _execute(handle, feed_dict, feed_ids, keys, todo, container, packer):
    sched = handle._plan.schedule
    values = handle._values
    converted = [sched.converters[i](v) for i, v in zip(feed_ids, feed_dict.values())]
    for i, v in zip(feed_ids, converted):
        values[i] = v
    handle._fed.update(feed_ids)
    with fp_semantics.ignoring():
        for i in todo:
            s = sched.steps[i]
            s.apply(values)
            handle._ran[i] = True
            for v in s.inputs:
                handle._remaining[v] -= 1
    out = [sched.result(sched.returns[handle._fetch_index[key]], values) for key in keys]
    handle._fetched.update(keys)
    _drop_dead_values(handle, sched)
    return pack_result(out, container, packer)


def _steps_to_run(handle, sched, keys, fed_now) -> list:
    """The not-yet-run steps the fetches `keys` need, in schedule order; checks their feeds are fed."""
    n_feeds = len(sched.feeds)
    need: set = set()
    stack = []

    def want_value(vid, key):
        if vid < n_feeds:
            if vid not in fed_now:
                raise cannot_compute(sched.feeds[vid].name, key)
            return
        i = handle._producer.get(vid)
        if i is not None and not handle._ran[i] and i not in need:
            need.add(i)
            stack.append((i, key))

    for key in keys:
        r = sched.returns[handle._fetch_index[key]]
        if r.kind == "value":
            want_value(r.vid, key)
        elif r.kind == "none":
            i = handle._producer.get(("op", key))
            if i is not None and not handle._ran[i] and i not in need:
                need.add(i)
                stack.append((i, key))
    while stack:
        i, key = stack.pop()
        s = sched.steps[i]
        for v in s.inputs:
            want_value(v, key)
        for d in s.deps:
            if not handle._ran[d] and d not in need:
                need.add(d)
                stack.append((d, key))
    return sorted(need)


def _drop_dead_values(handle, sched) -> None:
    """Free values no pending step reads and no pending fetch returns."""
    pending = {sched.returns[i].vid for k, i in handle._fetch_index.items() if k not in handle._fetched}
    values = handle._values
    n_feeds = len(sched.feeds)
    for v, n in handle._remaining.items():
        if n == 0 and v not in pending and v not in sched.consts and values[v] is not None and v >= n_feeds:
            values[v] = None
