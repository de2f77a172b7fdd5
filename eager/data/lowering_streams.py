"""The stream (staged form, see `lowering.py`) of each kind of dataset node; sequential streams.

`lower(node)` looks the node's class up in `_STREAMS`.  A node without a
staged form raises NotImplementedError naming the transformation and saying
why; `from_generator` is refused because its elements come from running
Python code, which a graph cannot do per element (and a saved function could
not carry).
"""
from __future__ import annotations

import eager as ek

from .. import nest
from ..dtypes import int64
from . import arguments, batching, sources, structure, transforms
from .lowering import SCALAR, Stream, Wrapped, flat, loop, pass_key, relaxed, spec_shapes, when
from .lowering_batches import BatchStream, RowsOf, UnbatchStream, padding
from .lowering_nested import FlatMapStream, InterleaveStream
from .lowering_access import EnumerateAccess, MapAccess, Range, ShuffleStream, Slices, ZipAccess


def lower(node) -> Stream:
    make = _STREAMS.get(type(node))
    if make is None:
        reason = _REFUSED.get(type(node), "it has no staged form yet")
        raise NotImplementedError(f"a dataset using {type(node).__name__} cannot be iterated inside a graph "
                                  f"(@function): {reason}. Iterate it eagerly (outside the function) and pass "
                                  f"the elements, or build the pipeline from tensors with the transformations "
                                  f"that can be staged (see docs/api.md, Datasets)")
    return make(node)


_REFUSED = {
    sources.FromGenerator: "its elements are made by running the Python generator, and a graph runs "
                           "without calling Python per element (a saved function could not carry the generator)",
    batching.Window: "its elements are datasets",
}


class FromTensors(Stream):
    def __init__(self, node):
        super().__init__(node.spec)
        self.node = node

    def next(self, state):
        return state[0] < 1, self.node.structure, [state[0] + 1]


class MapStream(Wrapped):
    def next(self, state):
        valid, e, s = self.up.next(state)
        (out,) = when(valid, lambda: (self.node.fn.call_element(e),), self.spec)
        return valid, relaxed(out, self.spec), s


class Identity(Wrapped):
    """prefetch: the staged loop is already one graph; nothing to overlap."""

    def next(self, state):
        return self.up.next(state)


class CacheStream(Identity):
    """cache: every pass replays the same pass of the input (its shuffles' draws pinned, see `lowering.py`)."""

    def init(self, key):
        return self.up.init(ek.where(key < 0, ek.zeros_like(key), key))


def _pull_until(up, spec, state, accept):
    """Pull from `up` until `accept(element)` holds or `up` ends: one while loop (filter, skip)."""
    n_e = len(flat(spec))

    def cond(go, *rest):
        return go

    def body(go, valid, *rest):
        v, e, s = up.next(list(rest[n_e:]))
        keep = ek.cond(v, lambda: accept(e), lambda: ek.constant(False))
        return tuple([ek.logical_and(v, ek.logical_not(keep)), v] + flat(e) + list(s))
    zeros = flat(structure.zeros_for(spec))
    out = loop(cond, body, [ek.constant(True), ek.constant(False)] + zeros + list(state),
               [SCALAR, SCALAR] + spec_shapes(spec) + up.invariants())
    return out[1], nest.pack_sequence_as(spec, out[2:2 + n_e]), out[2 + n_e:]


class FilterStream(Wrapped):
    def next(self, state):
        return _pull_until(self.up, self.spec, state, self.node.fn.call_element)


class TakeStream(Wrapped):
    extra = 1

    def next(self, state):
        if self.node.count < 0:
            v, e, s = self.up.next(state[:self.k])
            return v, e, list(s) + [state[-1]]
        taken = state[-1]

        def pull():
            v, e, s = self.up.next(state[:self.k])
            return (e, v) + tuple(s)
        e, v, *s = when(taken < self.node.count, pull, self.spec, ek.constant(False), *state[:self.k])
        return v, e, list(s) + [taken + 1]


class SkipStream(Wrapped):
    extra = 1

    def next(self, state):
        count = self.node.count

        s = ek.cond(state[-1] < 1, lambda: tuple(_skip_n(self.up, state[:self.k], count)),
                    lambda: tuple(state[:self.k]))
        s = list(s) if isinstance(s, (list, tuple)) else [s]
        v, e, s = self.up.next(s)
        return v, e, list(s) + [ek.constant(1, int64)]


def _skip_n(up, state, count):
    """The state after pulling `count` elements (a tensor, or an int: all of them when negative)."""
    every = isinstance(count, int) and count < 0

    def cond(i, valid, *s):
        return valid if every else ek.logical_and(valid, i < count)

    def body(i, valid, *s):
        v, _, s = up.next(list(s))
        return tuple([i + 1, v] + list(s))
    out = loop(cond, body, [ek.constant(0, int64), ek.constant(True)] + list(state),
               [SCALAR, SCALAR] + up.invariants())
    return out[2:]


class RepeatStream(Wrapped):
    """State: the input's state, the pass number and the key it was started with; an exhausted pass
    restarts the input once (a new iterator: its shuffles draw a new epoch, or the next pinned key)."""

    extra = 2

    def init(self, key):
        return list(self.up.init(key)) + [ek.constant(0, int64), key]

    def next(self, state):
        v, e, s = self.up.next(state[:self.k])
        epoch, key = state[-2], state[-1]
        count = self.node.count
        more = ek.logical_not(v) if count < 0 else ek.logical_and(ek.logical_not(v), epoch + 1 < count)

        def restart():
            v2, e2, s2 = self.up.next(self.up.init(pass_key(key, epoch + 1)))
            return (e2, v2) + tuple(s2) + (epoch + 1, key)
        e, v, *s = _choose(more, restart, lambda: (e, v) + tuple(s) + (epoch, key), self.spec)
        return v, e, list(s)


def _choose(pred, yes, no, spec):
    """`yes()` if pred else `no()`, each `(element, *tensors)`: one cond op."""
    n_e = len(flat(spec))

    def run(fn):
        out = fn()
        return tuple(flat(relaxed(out[0], spec))) + tuple(out[1:])
    out = list(ek.cond(pred, lambda: run(yes), lambda: run(no)))
    return [nest.pack_sequence_as(spec, out[:n_e])] + out[n_e:]


class EnumerateStream(Wrapped):
    extra = 1

    def next(self, state):
        v, e, s = self.up.next(state[:self.k])
        i = state[-1]
        return v, (i + self.node.start, e), list(s) + [i + ek.cast(v, int64)]


class ShardStream(Wrapped):
    extra = 1

    def next(self, state):
        i = state[-1]
        num, index = self.node.num, self.node.index
        # skip to the next position p >= i with p % num == index, then take it
        gap = (index - i % num + num) % num
        s = _skip_n(self.up, state[:self.k], gap)
        v, e, s = self.up.next(s)
        return v, e, list(s) + [i + gap + 1]


class ScanStream(Wrapped):
    def __init__(self, node, up):
        super().__init__(node, up)
        self.state_spec = structure.spec_of(node.initial)
        self.n_r = len(flat(self.state_spec))

    def init(self, key):
        return list(self.up.init(key)) + flat(self.node.initial)

    def invariants(self):
        return list(self.up.invariants()) + spec_shapes(self.state_spec)

    def next(self, state):
        v, e, s = self.up.next(state[:self.k])
        r = nest.pack_sequence_as(self.state_spec, state[self.k:])

        def step():
            new_r, out = self.node.fn(r, e)
            return (out,) + tuple(flat(new_r))
        out, *new_r = when(v, step, self.spec, *flat(r))
        return v, out, list(s) + list(new_r)


class TakeWhileStream(Wrapped):
    extra = 1      # 1 once the predicate failed

    def next(self, state):
        stopped = state[-1]

        def pull():
            v, e, s = self.up.next(state[:self.k])
            ok = ek.logical_and(v, ek.cond(v, lambda: self.node.fn.call_element(e), lambda: ek.constant(False)))
            return (e, ok) + tuple(s)
        e, ok, *s = when(stopped < 1, pull, self.spec, ek.constant(False), *state[:self.k])
        return ok, e, list(s) + [ek.cast(ek.logical_not(ok), int64)]


class ZipStream(Stream):
    def __init__(self, node, ups):
        super().__init__(node.spec)
        self.node, self.ups = node, ups
        self.sizes = [len(u.invariants()) for u in ups]

    def init(self, key):
        return [x for u in self.ups for x in u.init(key)]

    def invariants(self):
        return [x for u in self.ups for x in u.invariants()]

    def next(self, state):
        valid, parts, new, pos = None, [], [], 0
        for u, k in zip(self.ups, self.sizes):
            v, e, s = u.next(state[pos:pos + k])
            pos += k
            valid = v if valid is None else ek.logical_and(valid, v)
            parts.append(e)
            new += list(s)
        return valid, nest.pack_sequence_as(self.node.structure, parts), new


class ConcatenateStream(Stream):
    def __init__(self, node, a, b):
        super().__init__(node.spec)
        self.a, self.b = a, b
        self.ka = len(a.invariants())

    def init(self, key):
        return list(self.a.init(key)) + list(self.b.init(key)) + [ek.constant(0, int64)]

    def invariants(self):
        return list(self.a.invariants()) + list(self.b.invariants()) + [SCALAR]

    def next(self, state):
        sa, sb, phase = state[:self.ka], state[self.ka:-1], state[-1]
        n_e = len(flat(self.spec))

        def from_a():
            v, e, s = self.a.next(sa)
            return ek.cond(v, lambda: tuple(flat(relaxed(e, self.spec))) + (v,) + tuple(s) + tuple(sb) +
                           (ek.constant(0, int64),), lambda: from_b(s))

        def from_b(new_sa):
            v, e, s = self.b.next(sb)
            return tuple(flat(relaxed(e, self.spec))) + (v,) + tuple(new_sa) + tuple(s) + (ek.constant(1, int64),)
        out = list(ek.cond(phase < 1, from_a, lambda: from_b(sa)))
        return out[n_e], nest.pack_sequence_as(self.spec, out[:n_e]), out[n_e + 1:]


def _padded_batch(node):
    """padded_batch with fully known padded shapes: each element padded, then batched as by `batch`."""
    if any(shape is None or None in shape for shape in node.shapes):
        raise NotImplementedError(
            "padded_batch inside a graph needs fully known padded_shapes (e.g. padded_shapes=[10]): padding to "
            "the longest element of each batch is only done eagerly")
    row_spec, pad = padding(node)
    return BatchStream(node, lower(node.inputs[0]), row_spec=row_spec, pad=pad)


def _rebatch(node):
    rows = UnbatchStream(RowsOf(node), lower(node.inputs[0]))
    return BatchStream(node, rows, node.sizes, rows.spec)


def _map(node):
    up = lower(node.inputs[0])
    return MapAccess(node, up) if up.random_access else MapStream(node, up)


def _enumerate(node):
    up = lower(node.inputs[0])
    return EnumerateAccess(node, up) if up.random_access else EnumerateStream(node, up)


def _zip(node):
    ups = [lower(n) for n in node.inputs]
    return ZipAccess(node, ups) if all(u.random_access for u in ups) else ZipStream(node, ups)


def _one(cls):
    return lambda node: cls(node, lower(node.inputs[0]))


_STREAMS = {
    arguments.Fed: arguments.FedStream,
    sources.TensorSlices: Slices,
    sources.Range: Range,
    sources.FromTensors: FromTensors,
    sources.Zip: _zip,
    sources.Concatenate: lambda node: ConcatenateStream(node, lower(node.inputs[0]), lower(node.inputs[1])),
    transforms.Map: _map,
    transforms.Enumerate: _enumerate,
    transforms.Filter: _one(FilterStream),
    transforms.Take: _one(TakeStream),
    transforms.Skip: _one(SkipStream),
    transforms.Repeat: _one(RepeatStream),
    transforms.Shuffle: _one(ShuffleStream),
    transforms.Cache: _one(CacheStream),
    transforms.Prefetch: _one(Identity),
    transforms.Shard: _one(ShardStream),
    transforms.Scan: _one(ScanStream),
    transforms.TakeWhile: _one(TakeWhileStream),
    transforms.FlatMap: lambda node: FlatMapStream(node, lower(node.inputs[0]), lower),
    transforms.Interleave: lambda node: InterleaveStream(node, lower(node.inputs[0]), lower),
    batching.Batch: _one(BatchStream),
    batching.Unbatch: _one(UnbatchStream),
    batching.Rebatch: _rebatch,
    batching.PaddedBatch: _padded_batch,
}
