"""Staged form of a dataset inside a graph: a stream of graph ops, never unrolled.

While a graph is being built (`@function`), a dataset is *lowered*: each node
becomes a `Stream` with

    init(key)     -> state        a flat list of tensors (iterator state)
    invariants()  -> shapes       the static shape each state tensor keeps
    next(state)   -> (valid, element, state)

all made of ordinary graph ops (`while_loop`, `cond`, `gather`,
`TensorArray`), so a function holding a dataset loop runs without calling
Python per element and can be saved by `tracing.save`.  `valid` is a bool
scalar; when it is False the element is zeros of the element spec (it is never
used).  Random-access streams (`count()`, `get(i)`: tensor slices, ranges,
and map/enumerate/zip over them) give the shuffle its permutation.  Element
order and values are those of eager iteration: map and filter apply the
dataset's own traced functions (inlined), and a shuffle uses the
`DatasetShufflePermutation` op (the eager algorithm, seeded by
`(seed, epoch)`).  The epoch comes from the shuffle's `SeedGenerator`
(`shuffling.py`), drawn by an op when the stream is (re)started, so staged
loops and eager passes follow tf.data's rule for iterators.  `init(key)`
says which iterator is being made: `FRESH` (-1, `Stream.start()`), a new
one, whose shuffles draw the next epoch; a key >= 0, a pass that a `cache`
replays, whose shuffles take the epoch pinned to that key (drawn once), so
every pass under a cache gives the same elements.  `repeat` restarts its
input with the next key (`pass_key`).

The node -> stream table is in `lowering_streams.py` (random-access streams
in `lowering_access.py`, batching in `lowering_batches.py`); sources whose
elements only Python can make (`from_generator`) are refused there with the
reason.  The entry points (`stream_of`, `GraphIterator`: `iter(ds)` inside a graph,
`staged_reduce`: `Dataset.reduce` there) are in `staged.py`, above the table.
"""
from __future__ import annotations

import eager as ek

from .. import nest
from ..dispatch import execute
from ..dtypes import int64
from ..errors import OutOfRangeError
from ..registry import Spec, op
from . import functions, structure

SCALAR = ek.TensorShape([])
FRESH = -1               # init key of a new iterator (see the module docstring)
UNROLL_LIMIT = 1000      # staged next() calls on one graph iterator before we call it a runaway Python loop


def flat(x) -> list:
    return nest.flatten(x)


def spec_shapes(spec) -> list:
    return [s.shape for s in flat(spec)]


def when(pred, fn, spec, *fallback):
    """`fn()` (a tuple `(element, *rest)`) if `pred`, else (zeros of `spec`, *fallback): one cond op."""
    n_elem = len(flat(spec))

    def yes():
        out = fn()
        return tuple(flat(out[0])) + tuple(out[1:])

    def no():
        return tuple(flat(structure.zeros_for(spec))) + tuple(fallback)
    result = ek.cond(pred, yes, no)
    result = list(result) if isinstance(result, (list, tuple)) else [result]
    return (nest.pack_sequence_as(spec, result[:n_elem]),) + tuple(result[n_elem:])


def loop(cond_fn, body_fn, values: list, shapes: list) -> list:
    """`while_loop` over a flat list of tensors with the given shape invariants."""
    out = ek.while_loop(cond_fn, body_fn, tuple(values), shape_invariants=list(shapes))
    return list(out) if isinstance(out, (list, tuple)) else [out]


def relaxed(element, spec):
    """`element` with the static shapes of `spec` where they are known (after a stack or a cond)."""
    def fix(t, s):
        dims = s.shape.dims
        if dims is None or t.shape.dims == tuple(dims) or None not in dims and t.shape.is_fully_defined():
            return t
        if sum(d is None for d in dims) <= 1:
            return ek.reshape(t, [-1 if d is None else d for d in dims])
        return t
    return nest.pack_sequence_as(spec, [fix(t, s) for t, s in zip(flat(element), flat(spec))])


class Stream:
    """A lowered node (see module doc).  Random-access streams also define `count()` and `get(i)`."""

    random_access = False
    pure_get = False      # get(i) only reads tensors (no map function), so a clamped extra read is harmless

    def __init__(self, spec):
        self.spec = spec

    def static_count(self):
        """The element count if known when the graph is built (random-access streams), else None."""
        return None

    def start(self):
        """The state of a new iterator."""
        return self.init(ek.constant(FRESH, int64))

    def init(self, key):
        return [ek.constant(0, int64)]

    def invariants(self):
        return [SCALAR]

    def next(self, state):
        i = state[0]
        n = self.count()
        valid = i < n
        static = self.static_count()
        if self.pure_get and static is not None and static > 0:     # clamped read: no cond needed
            element = self.get(ek.minimum(i, n - 1))
        else:
            (element,) = when(valid, lambda: (self.get(i),), self.spec)
        return valid, element, [i + 1]


class Wrapped(Stream):
    """A stream over one input whose state is the input's state followed by `extra` scalars."""

    extra = 0

    def __init__(self, node, up):
        super().__init__(node.spec)
        self.node, self.up = node, up
        self.k = len(up.invariants())

    def init(self, key):
        return list(self.up.init(key)) + [ek.constant(0, int64)] * self.extra

    def invariants(self):
        return list(self.up.invariants()) + [SCALAR] * self.extra


def pass_key(key, epoch):
    """The init key of pass `epoch` of a repeat started with `key`: FRESH stays FRESH (new iterators
    draw), a pinned key gets a distinct pinned key per pass."""
    return ek.where(key < 0, key, key * 65536 + epoch)


def _check_end(valid):
    if not bool(valid):
        raise OutOfRangeError("End of sequence")
    return valid


def _infer_check_end(specs, attrs):
    return [Spec((), ek.bool)]


CHECK_END = op("IteratorCheckNotEnd", _check_end, _infer_check_end, effect="write",
               doc="Raises OutOfRangeError('End of sequence') when its input is False (next() on an "
                   "exhausted dataset iterator inside a graph).")
