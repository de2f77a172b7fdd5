"""Seeded buffered shuffling, shared by eager iteration and the graph's permutation op.

`buffered_shuffle(items, buffer_size, rng)`: fill a buffer of `buffer_size`
elements, then repeatedly emit a uniformly chosen buffered element and put the
next input in its place; at the end drain the buffer in random order (the
`tf.data` algorithm: a buffer as large as the dataset gives a uniform
permutation, a buffer of 1 the input order).  The generator is NumPy's PCG64
seeded with `(seed, epoch)`, so a seeded dataset gives the same order in every
run, and pass k of a reshuffling dataset differs from pass k-1.

`shuffled_order(n, buffer_size, rng)` is the same algorithm over the indices
0..n-1, as an int64 array, computed by NumPy without a per-element Python loop
(`shuffle_order.py`; the orders are identical, tests check it against
`buffered_shuffle`).  Eager batches and shuffles of tensor slices use it, and `permutation(n, buffer_size, seed, epoch)`, the kernel of
the `DatasetShufflePermutation` op the graph lowering uses, so a staged loop
sees exactly the order eager iteration gives.
Imports `eager` modules and NumPy.
"""
from __future__ import annotations

import threading

import numpy as np

from ..dtypes import int64
from ..registry import Spec, op
from ..ops.random_core import derived_seed
from .shuffle_order import shuffled_order

_SEED_MAX = 2 ** 31 - 1


def resolve_seed(seed):
    """The shuffle's seed by TF's rules (`random_core.derived_seed`: with the global seed set, every
    unseeded shuffle gets its own reproducible seed); with no seed at all, a fresh random one."""
    derived = derived_seed(seed)
    if derived is not None:
        return derived
    return int(np.random.SeedSequence().generate_state(1)[0] & _SEED_MAX)


def rng(seed: int, epoch: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64([int(seed) & 0xFFFFFFFF, int(epoch) & 0xFFFFFFFF]))


def buffered_shuffle(items, buffer_size: int, gen: np.random.Generator):
    buf: list = []
    draws = _uniforms(gen)
    for x in items:
        buf.append(x)
        if len(buf) >= buffer_size:
            j = int(next(draws) * len(buf))
            out, buf[j] = buf[j], buf[-1]
            buf.pop()
            yield out
    while buf:
        j = int(next(draws) * len(buf))
        out, buf[j] = buf[j], buf[-1]
        buf.pop()
        yield out


_BLOCK = 1024


def _uniforms(gen: np.random.Generator):
    """Uniform [0, 1) draws, generated in blocks (one NumPy call per block, not per element)."""
    while True:
        yield from gen.random(_BLOCK).tolist()


_CHUNK = 64 * _BLOCK     # indices `as_ints` converts per NumPy call (bounds its Python lists)


def as_ints(order: np.ndarray):
    """The entries of an index array as Python ints (fast to index with), converted a chunk at a time."""
    for k in range(0, len(order), _CHUNK):
        yield from order[k:k + _CHUNK].tolist()


def permutation(n, buffer_size, seed, epoch):
    return shuffled_order(int(n), int(buffer_size), rng(int(seed), int(epoch)))


def _infer(specs, attrs):
    n = specs[0].value
    return [Spec((None if n is None else int(n),), int64)]


class SeedGenerator:
    """The epoch numbers a shuffle gives its iterators (see the module docstring).

    `pinned(key)` is the draw a `cache` above the shuffle replays: the first
    pass under the cache draws it, later passes (same key) reuse it."""

    def __init__(self, seed: int, reshuffle: bool, draws: int = 0):
        self.seed, self.reshuffle, self.draws = int(seed), bool(reshuffle), int(draws)
        self._pinned: dict = {}
        self._lock = threading.Lock()       # prefetch threads and the caller may open iterators at once

    def draw(self) -> int:
        with self._lock:
            return self._draw()

    def _draw(self) -> int:
        epoch = self.draws if self.reshuffle else 0
        self.draws += 1
        return epoch

    def pinned(self, key: int) -> int:
        with self._lock:
            if key not in self._pinned:
                self._pinned[key] = self._draw()
            return self._pinned[key]

    def reset(self) -> None:
        with self._lock:
            self.draws = 0
            self._pinned.clear()

    def to_config(self) -> dict:
        return {"seed": self.seed, "reshuffle": self.reshuffle, "draws": self.draws}

    @classmethod
    def from_config(cls, config: dict) -> "SeedGenerator":
        return cls(int(config["seed"]), bool(config["reshuffle"]), int(config["draws"]))

    def __repr__(self):
        return f"SeedGenerator(seed={self.seed}, reshuffle={self.reshuffle}, draws={self.draws})"


def _scalar_int64(specs, attrs):
    return [Spec((), int64)]


def _draw_kernel(generator):
    return np.array(generator.draw(), dtype=np.int64)


def _pinned_kernel(key, generator):
    return np.array(generator.pinned(int(key)), dtype=np.int64)


def _reset_kernel(generator):
    generator.reset()
    return np.array(0, dtype=np.int64)


DRAW = op("DatasetShuffleDraw", _draw_kernel, _scalar_int64, effect="write",
          doc="The epoch number of a new iterator over a shuffle dataset (attr generator: its SeedGenerator).")
PINNED_DRAW = op("DatasetShufflePinnedDraw", _pinned_kernel, _scalar_int64, effect="write",
                 doc="The epoch number a cache above a shuffle replays for pass `key` (drawn once per key).")
RESET = op("DatasetShuffleReset", _reset_kernel, _scalar_int64, effect="write",
           doc="Restart a shuffle's seed sequence: runs where a dataset is built inside a traced function.")

PERMUTATION = op("DatasetShufflePermutation", permutation, _infer, effect="none",
                 doc="The order in which a seeded buffered shuffle (eager.data) emits the indices 0..n-1 "
                     "(inputs n, buffer_size, seed, epoch: int64 scalars).")
