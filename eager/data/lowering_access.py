"""Random-access streams (see `lowering.py`): tensor slices, ranges, map/enumerate/zip over them, and the
shuffle, which reads its random-access input in the order of the `DatasetShufflePermutation` op.

A random-access stream has `count()` (an int64 scalar), `static_count()`
(an int when known while building) and `get(i)` (element i); its sequential
`next` comes from `lowering.Stream` (state: the position).
"""
from __future__ import annotations

import eager as ek

from .. import nest
from ..dispatch import execute
from ..dtypes import int64
from . import shuffling
from .lowering import SCALAR, Stream, relaxed, when


def _i64(x):
    return x if getattr(x, "dtype", None) is int64 else ek.cast(x, int64)


# -- random-access sources ------------------------------------------------------------
class Slices(Stream):
    random_access = pure_get = True

    def __init__(self, node):
        super().__init__(node.spec)
        self.node = node

    def static_count(self):
        return self.node.n

    def count(self):
        if self.node.n is not None:
            return ek.constant(self.node.n, int64)
        return _i64(ek.shape(self.node.components[0])[0])

    def get(self, i):
        return nest.pack_sequence_as(self.spec, [ek.gather(c, i) for c in self.node.components])


class Range(Stream):
    random_access = pure_get = True

    def __init__(self, node):
        super().__init__(node.spec)
        self.node = node

    def static_count(self):
        return None if self.node.symbolic else self.node.cardinality()

    def count(self):
        if not self.node.symbolic:
            return ek.constant(self.node.cardinality(), int64)
        start, stop, step = (_i64(ek.convert_to_tensor(v, dtype=int64) if not ek.is_tensor(v) else v)
                             for v in (self.node.start, self.node.stop, self.node.step))
        sign = ek.sign(step)
        return ek.maximum((stop - start + step - sign) // step, ek.constant(0, int64))

    def get(self, i):
        start, step = self.node.start, self.node.step
        start = start if ek.is_tensor(start) else ek.constant(start, int64)
        step = step if ek.is_tensor(step) else ek.constant(step, int64)
        return ek.cast(_i64(start) + i * _i64(step), self.node.dtype)


class _OverAccess(Stream):
    """A random-access stream over another one with the same elements count."""

    random_access = True

    def __init__(self, node, up):
        super().__init__(node.spec)
        self.node, self.up = node, up

    def static_count(self):
        return self.up.static_count()

    def count(self):
        return self.up.count()


class MapAccess(_OverAccess):
    """A map over a random-access stream: element i is fn(input element i)."""

    def get(self, i):
        return relaxed(self.node.fn.call_element(self.up.get(i)), self.spec)


class EnumerateAccess(_OverAccess):
    @property
    def pure_get(self):
        return self.up.pure_get

    def get(self, i):
        return (i + self.node.start, self.up.get(i))


class ZipAccess(Stream):
    random_access = True

    def __init__(self, node, ups):
        super().__init__(node.spec)
        self.node, self.ups = node, ups
        self.pure_get = all(u.pure_get for u in ups)

    def static_count(self):
        counts = [u.static_count() for u in self.ups]
        return None if None in counts else min(counts)

    def count(self):
        n = self.ups[0].count()
        for u in self.ups[1:]:
            n = ek.minimum(n, u.count())
        return n

    def get(self, i):
        return nest.pack_sequence_as(self.node.structure, [u.get(i) for u in self.ups])


# -- sequential streams --------------------------------------------------------------------
class ShuffleStream(Stream):
    """State: position and the epoch's permutation of the input's indices."""

    def __init__(self, node, up):
        super().__init__(node.spec)
        if not up.random_access:
            raise NotImplementedError(
                "shuffle inside a graph needs a random-access input of known length: put it right after "
                "from_tensor_slices/range (map, enumerate and zip over those are fine), before filter, batch "
                "or repeat")
        self.node, self.up = node, up

    def init(self, key):
        n = self.up.count()
        gen = {"generator": self.node.generator}
        epoch = ek.cond(key < 0, lambda: execute(shuffling.DRAW, (), gen, None),
                        lambda: execute(shuffling.PINNED_DRAW, (key,), gen, None))
        perm = _permutation(n, self.node.buffer_size, self.node.seed, epoch)
        return [ek.constant(0, int64), perm]

    def invariants(self):
        return [SCALAR, ek.TensorShape([None])]

    def next(self, state):
        i, perm = state
        n = self.up.count()
        valid = i < n
        (e,) = when(valid, lambda: (self.up.get(ek.gather(perm, i)),), self.spec)
        return valid, e, [i + 1, perm]


def _permutation(n, buffer_size, seed, epoch):
    args = (n, ek.constant(buffer_size, int64), ek.constant(seed, int64), _i64(epoch))
    return execute(shuffling.PERMUTATION, args, {}, None)
