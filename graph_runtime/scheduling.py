"""Op schedules: the order a plan runs its needed ops in (`SessionConfig.schedule`).

`order_ops(ops, fed, fetches, kind)` takes the pruned ops in creation order
(compiler.prune) and returns them in the order of one schedule:

- `"creation"`: creation order (a topological order, graph.py).
- `"alap"`: as late as possible, built backwards from the sinks (the
  fetched ops, targets and other ops nothing needed reads): an op is placed
  (in reverse) once every op that depends on it is placed, so it runs right
  before its consumers and a value is not kept alive from the start (the
  seeds' Recv rule).  When one placement readies several producers (the
  inputs of one op), the one whose subtree needs the most memory beyond its
  result runs first (Sethi-Ullman: estimated peak minus result bytes, from
  static sizes), so a large value read last (exp(x) created first, reduced
  by the final op) is computed last; ties go to input position.  Nothing
  depends on creation order except the order of reads and writes, so the
  same computation built in another order gets the same schedule (equal
  peaks).  Sorting by ALAP *level* (longest path to a fetch) instead was
  measured worse: once the optimizer turns a chain into a tree, every branch
  of one level runs together, and the peak on bench_session's graph rose
  from 16 to 24 MB.
- `"memory"`: the lowest-peak order among three candidates: a greedy list
  schedule by live bytes, "alap" and "creation".  Each candidate's peak is
  estimated by walking it with static sizes (outputs allocated while the
  inputs are alive, a value freed after its last reader in that order), so
  "memory" never peaks higher than the other two by that measure.  The
  greedy schedule: among the ready ops, the one whose run adds the fewest
  bytes (its outputs' static sizes minus the inputs it is the last consumer
  of) runs first; ties go to the higher ALAP level (the longer way to the
  end), then creation order.  It wins on most graphs but loses where it
  starts many branches because none frees anything yet (their shared big
  values pile up: "alap" finishes one branch first), or where it postpones
  the last reader of a big value.  Sizes come from static shapes (an unknown
  dimension counts as 1).  Exact greedy in O(E log V): an op's score only
  changes when one of its inputs is left with it as the only consumer, and
  then it is pushed again (stale heap entries are skipped).

Every schedule honours the same edges: data inputs (unless the tensor is
fed), control inputs, and program order among reads and writes
(`op_traits.is_ordered`: each read or write follows the previous one in
creation order), so results and side effects are those of creation order.

Imports `op_traits` and `run_config` only.
"""
from __future__ import annotations

import heapq

from .op_traits import is_ordered
from .run_config import SCHEDULES


def dependency_edges(ops, fed) -> tuple:
    """(predecessors, successors) per op index over data (unfed), control and effect-order edges.  An op's
    predecessors are listed in its inputs' order, then its control inputs', then the previous read or
    write: what the op is, not the order the graph was built in."""
    index = {id(op): i for i, op in enumerate(ops)}
    preds = []
    last_ordered = -1
    for i, op in enumerate(ops):
        p = {}
        for t in op._inputs:
            j = index.get(id(t._op))
            if j is not None and id(t) not in fed:
                p[j] = None
        for c in op._control_inputs:
            j = index.get(id(c))
            if j is not None:
                p[j] = None
        if is_ordered(op._opdef):
            if last_ordered >= 0:
                p[last_ordered] = None
            last_ordered = i
        preds.append(list(p))
    succs = [[] for _ in ops]
    for i, p in enumerate(preds):
        for j in p:
            succs[j].append(i)
    return preds, succs


def _levels(succs) -> list:
    """ALAP level per op: 0 for ops nothing (needed) depends on, else 1 + max over successors."""
    level = [0] * len(succs)
    for i in range(len(succs) - 1, -1, -1):      # creation order is topological: successors come later
        s = succs[i]
        if s:
            level[i] = 1 + max(level[j] for j in s)
    return level


def static_bytes(t) -> int:
    """Bytes of tensor `t` from its static shape (an unknown dimension counts as 1) and dtype."""
    dims = t.shape.dims
    n = 1
    if dims is not None:
        for d in dims:
            n *= 1 if d is None else int(d)
    try:
        size = t.dtype.np_dtype.itemsize
    except (AttributeError, TypeError):
        size = 8
    return n * max(int(size), 1)


def order_ops(ops: list, fed: set, fetches, kind: str = "creation") -> list:
    """`ops` (needed ops in creation order) in the order of schedule `kind` (see the module docstring)."""
    if kind == "creation" or len(ops) < 3:
        return ops
    if kind not in SCHEDULES:
        raise ValueError(f"unknown schedule {kind!r}: expected one of {SCHEDULES}")
    preds, succs = dependency_edges(ops, fed)
    if kind == "alap":
        return [ops[i] for i in _alap_order(ops, fed, fetches, preds, succs)]
    # the greedy order is best on most graphs but not all: each candidate's peak is estimated, the lowest wins
    keep = {id(t) for t in fetches}
    candidates = [_memory_order(ops, fed, keep, preds, succs, _levels(succs)),
                  _alap_order(ops, fed, fetches, preds, succs), list(range(len(ops)))]
    best = min(candidates, key=lambda order: _estimated_peak(order, ops, fed, keep))
    return [ops[i] for i in best]


def estimated_peak(ops: list, fed: set, fetches, kind: str) -> int:
    """The peak live bytes (static sizes) of running `ops` (needed ops in creation order, as for
    `order_ops`) in the order of schedule `kind`: the measure "memory" minimizes."""
    order = order_ops(ops, fed, fetches, kind)
    index = {id(op): i for i, op in enumerate(ops)}
    return _estimated_peak([index[id(op)] for op in order], ops, fed, {id(t) for t in fetches})


def _estimated_peak(order, ops, fed, keep) -> int:
    """Peak live bytes (static sizes) of running `ops` in `order` (indices): an op's outputs are allocated
    while its inputs are alive; a value dies after its last reader in the order, a fetched one lives on; fed
    values are there in every order and are not counted."""
    last = {}
    for k, i in enumerate(order):
        for t in ops[i]._inputs:
            last[id(t)] = k
    dying = [0] * len(order)
    live = peak = 0
    for k, i in enumerate(order):
        for t in ops[i]._outputs:
            if id(t) in fed:
                continue
            size = static_bytes(t)
            live += size
            if id(t) not in keep:
                dying[max(k, last.get(id(t), k))] += size
        peak = max(peak, live)
        live -= dying[k]
    return peak


def _alap_order(ops, fed, fetches, preds, succs) -> list:
    """The "alap" order (module docstring): a reverse depth-first walk from the sinks, each op placed once
    all its consumers are; of the producers one placement readies, the one with the largest subtree peak
    beyond its result runs first (its subtree is placed last, in reverse)."""
    excess = _subtree_excess(ops, fed, preds)
    sink_rank = {}
    for k, t in enumerate(fetches):
        sink_rank.setdefault(id(t._op), k)
    sinks = [i for i, s in enumerate(succs) if not s]
    # forward-run order of the sinks: heavier subtrees first, then fetch order (targets after)
    sinks.sort(key=lambda i: (-excess[i], sink_rank.get(id(ops[i]), len(sink_rank))))
    left = [len(s) for s in succs]
    stack = sinks                # pushed first = popped last = placed last in reverse = runs first
    rev = []
    while stack:
        i = stack.pop()
        rev.append(i)
        ready = []
        for pos, j in enumerate(preds[i]):
            left[j] -= 1
            if left[j] == 0:
                ready.append((-excess[j], pos, j))
        ready.sort()
        stack.extend(j for _, _, j in ready)
    return rev[::-1]


def _subtree_excess(ops, fed, preds) -> list:
    """Per op: the estimated peak bytes of computing it and what it needs, minus its result's bytes
    (Sethi-Ullman's need, on static sizes; a shared producer counts in each consumer's subtree)."""
    size = [sum(static_bytes(t) for t in op._outputs if id(t) not in fed) for op in ops]
    peak = [0] * len(ops)
    for i in range(len(ops)):                # creation order is topological
        kids = sorted(preds[i], key=lambda j: size[j] - peak[j])     # largest excess first
        held = best = 0
        for j in kids:
            best = max(best, held + peak[j])
            held += size[j]
        peak[i] = max(best, held + size[i])
    return [p - s for p, s in zip(peak, size)]


def _memory_order(ops, fed, keep, preds, succs, level) -> list:
    index = {id(op): i for i, op in enumerate(ops)}
    # remaining readers (op indices) of every produced tensor that is not fed and not fetched
    readers: dict = {}
    tensor_of: dict = {}
    for i, op in enumerate(ops):
        for t in op._inputs:
            if id(t) in fed or id(t) in keep or id(t._op) not in index:
                continue
            readers.setdefault(id(t), set()).add(i)
            tensor_of[id(t)] = t
    out_bytes = [sum(static_bytes(t) for t in op._outputs if id(t) not in fed) for op in ops]

    def score(i) -> int:
        freed = 0
        seen = set()
        for t in ops[i]._inputs:
            r = readers.get(id(t))
            if r is not None and id(t) not in seen and r == {i}:
                freed += static_bytes(t)
                seen.add(id(t))
        return out_bytes[i] - freed

    pending = [len(p) for p in preds]
    current = [None] * len(ops)          # the live score of each ready op (stale heap entries differ)
    heap: list = []

    def push(i):
        s = score(i)
        current[i] = s
        heapq.heappush(heap, (s, -level[i], i))

    for i, n in enumerate(pending):
        if n == 0:
            push(i)
    out = []
    while heap:
        s, _, i = heapq.heappop(heap)
        if current[i] != s:
            continue
        current[i] = None
        out.append(i)
        for t in ops[i]._inputs:
            r = readers.get(id(t))
            if r is None or i not in r:
                continue
            r.discard(i)
            if len(r) == 1:
                (j,) = r
                if current[j] is not None:       # ready: its score just dropped
                    push(j)
        for j in succs[i]:
            pending[j] -= 1
            if pending[j] == 0:
                push(j)
    if len(out) != len(ops):      # cannot happen for a graph in creation order; never guess
        raise RuntimeError(f"memory schedule placed {len(out)} of {len(ops)} ops (cycle in the needed ops?)")
    return out
