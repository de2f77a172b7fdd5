"""Element-wise and ordering transformations: map, filter, take, skip, repeat, enumerate,
shuffle, cache, prefetch, shard, scan, flat_map, interleave.

Nodes as described in `sources.py`.  Cardinalities follow `tf.data`
(`Filter`, `FlatMap`, `Interleave` are UNKNOWN; `Repeat` of a non-empty
dataset without a count is INFINITE).  Map/filter/scan functions are
`functions.StructuredFunction`s, traced once when the dataset is built.
"""
from __future__ import annotations

import numpy as np

from .. import context as _context
from ..dispatch import execute
from ..dtypes import int64
from ..tensor import Tensor
from ..tensor_spec import TensorSpec
from . import functions, shuffling, structure, threads, vectorize
from .sources import INFINITE, UNKNOWN, slice_rows


class Map:
    def __init__(self, node, fn, num_parallel_calls=None):
        self.inputs = (node,)
        self.fn = functions.element_function(fn, node.spec, "map")
        self.spec = self.fn.output_spec
        self.parallel = None if num_parallel_calls is None else threads.autotuned(num_parallel_calls)
        self._batched = None

    def batched_function(self):
        """The function traced on batches when `batch` may run it once per batch (`vectorize.py`), or None;
        worked out once, eagerly (a `batch` built inside a traced function is lowered with the graph)."""
        if not _context.executing_eagerly():
            return None
        if self._batched is None:
            self._batched = (vectorize.vectorized_map(self.fn, self.inputs[0].spec),)
        return self._batched[0]

    def iterate(self):
        source = self.inputs[0].iterate()
        if self.parallel is not None and self.parallel > 1:
            return threads.ParallelMapIterator(source, self.fn.call_element, self.parallel)
        return map(self.fn.call_element, source)

    def flat_rows(self):
        """Per element, the function's flat output arrays (no tensors made), or None: for `batch` to stack,
        when the input is tensor slices (or their shuffle) and the function runs serially as one graph."""
        up = getattr(self.inputs[0], "index_source", None)
        if up is None or self.fn.flat_arrays is None or (self.parallel is not None and self.parallel > 1) \
                or not _context.executing_eagerly():
            return None
        source = up()
        if source is None:
            return None
        arrays, _, order = source
        call = self.fn.flat_arrays
        # each row copied out, as the element a map is given (functions.call_element gets the same arrays)
        return (call([np.array(a[i]) for a in arrays]) for i in shuffling.as_ints(order))

    def cardinality(self):
        return self.inputs[0].cardinality()


def check_predicate_spec(spec, what="filter"):
    if not isinstance(spec, TensorSpec) or spec.dtype.name != "bool" or spec.shape.dims not in ((), None):
        raise TypeError(f"Invalid `predicate`. `predicate` must return a `bool` scalar tensor, but its return "
                        f"type is {structure.describe(spec)} ({what})")


class Filter:
    def __init__(self, node, predicate):
        self.inputs = (node,)
        self.fn = functions.element_function(predicate, node.spec, "filter")
        check_predicate_spec(self.fn.output_spec)
        self.spec = node.spec

    def iterate(self):
        call = self.fn.call_element
        return (x for x in self.inputs[0].iterate() if bool(call(x)))

    def cardinality(self):
        return UNKNOWN if self.inputs[0].cardinality() != INFINITE else INFINITE


class TakeWhile:
    def __init__(self, node, predicate):
        self.inputs = (node,)
        self.fn = functions.element_function(predicate, node.spec, "take_while")
        check_predicate_spec(self.fn.output_spec, "take_while")
        self.spec = node.spec

    def iterate(self):
        for x in self.inputs[0].iterate():
            if not bool(self.fn.call_element(x)):
                return
            yield x

    def cardinality(self):
        return UNKNOWN


class Take:
    def __init__(self, node, count: int):
        self.inputs, self.count, self.spec = (node,), int(count), node.spec

    def iterate(self):
        if self.count < 0:
            yield from self.inputs[0].iterate()
            return
        if self.count == 0:
            return
        for i, x in enumerate(self.inputs[0].iterate()):
            yield x
            if i + 1 >= self.count:
                return

    def cardinality(self):
        n = self.inputs[0].cardinality()
        if self.count < 0:
            return n
        if n == UNKNOWN:
            return UNKNOWN
        return self.count if n == INFINITE else min(n, self.count)


class Skip:
    def __init__(self, node, count: int):
        self.inputs, self.count, self.spec = (node,), int(count), node.spec

    def iterate(self):
        it = self.inputs[0].iterate()
        if self.count < 0:
            for _ in it:
                pass
            return
        for i, x in enumerate(it):
            if i >= self.count:
                yield x

    def cardinality(self):
        n = self.inputs[0].cardinality()
        if n < 0:
            return n
        return 0 if self.count < 0 else max(0, n - self.count)


class Repeat:
    def __init__(self, node, count=None):
        self.inputs, self.spec = (node,), node.spec
        self.count = -1 if count is None else int(count)

    def iterate(self):
        done = 0
        while self.count < 0 or done < self.count:
            empty = True
            for x in self.inputs[0].iterate():
                empty = False
                yield x
            done += 1
            if empty:      # repeating an empty dataset forever yields nothing, as in tf.data
                return

    def cardinality(self):
        n = self.inputs[0].cardinality()
        if n == 0 or self.count == 0:
            return 0
        if self.count < 0:
            return INFINITE if n != UNKNOWN else UNKNOWN
        return n * self.count if n >= 0 else n


class Enumerate:
    def __init__(self, node, start=0):
        self.inputs, self.start = (node,), int(start)
        self.spec = (TensorSpec([], int64), node.spec)

    def iterate(self):
        for i, x in enumerate(self.inputs[0].iterate(), self.start):
            yield Tensor(np.array(i, dtype=np.int64)), x

    def cardinality(self):
        return self.inputs[0].cardinality()


class Shuffle:
    """Buffered shuffle (see `shuffling.py`); each new iterator takes the next epoch of `generator`."""

    def __init__(self, node, buffer_size, seed=None, reshuffle_each_iteration=True):
        self.inputs, self.spec = (node,), node.spec
        self.buffer_size = int(buffer_size)
        if self.buffer_size == threads.AUTOTUNE:
            self.buffer_size = 1024
        if self.buffer_size < 1:
            raise ValueError(f"shuffle: buffer_size must be positive, got {buffer_size}")
        self.seed = shuffling.resolve_seed(seed)
        self.reshuffle = bool(reshuffle_each_iteration)
        self.generator = shuffling.SeedGenerator(self.seed, self.reshuffle)
        if not _context.executing_eagerly():
            # built while a function is traced: TF builds it anew on every call, with a new seed sequence
            execute(shuffling.RESET, (), {"generator": self.generator}, None)

    def iterate(self):
        rows = self.index_source()
        if rows is not None:        # tensor slices: the rows in the shuffled order, no buffer of elements
            arrays, struct, order = rows
            return slice_rows(arrays, struct, shuffling.as_ints(order))
        return shuffling.buffered_shuffle(self.inputs[0].iterate(), self.buffer_size,
                                          shuffling.rng(self.seed, self.generator.draw()))

    def index_source(self):
        """Shuffled row indices of tensor slices (the same order `iterate` gives), or None."""
        up = getattr(self.inputs[0], "index_source", None)
        source = up() if up is not None else None
        if source is None:
            return None
        arrays, struct, order = source
        gen = shuffling.rng(self.seed, self.generator.draw())
        return arrays, struct, order[shuffling.shuffled_order(len(order), self.buffer_size, gen)]

    def cardinality(self):
        return self.inputs[0].cardinality()


class Cache:
    """In memory: the first complete pass is recorded and later passes replay it (freezing a shuffle above)."""

    def __init__(self, node, filename=""):
        if filename:
            raise NotImplementedError("cache(filename): only the in-memory cache (filename='') is implemented")
        self.inputs, self.spec = (node,), node.spec
        self.stored = None

    def iterate(self):
        if self.stored is not None:
            yield from self.stored
            return
        recorded = []
        for x in self.inputs[0].iterate():
            recorded.append(x)
            yield x
        self.stored = recorded     # only a complete pass is kept, as in tf.data

    def cardinality(self):
        return self.inputs[0].cardinality()


class Prefetch:
    def __init__(self, node, buffer_size):
        self.inputs, self.spec = (node,), node.spec
        n = int(buffer_size)
        self.buffer_size = 2 if n == threads.AUTOTUNE else n
        if self.buffer_size < 0:
            raise ValueError(f"prefetch: buffer_size must be >= 0 or AUTOTUNE, got {buffer_size}")
        # whether a producer thread pays, measured by the first iterator and kept for the later ones
        self.tuning = threads.PrefetchTuning()

    def iterate(self):
        source = self.inputs[0].iterate()
        return threads.PrefetchIterator(source, self.buffer_size, self.tuning) if self.buffer_size else source

    def cardinality(self):
        return self.inputs[0].cardinality()


class Shard:
    def __init__(self, node, num_shards, index):
        num_shards, index = int(num_shards), int(index)
        if num_shards < 1 or not 0 <= index < num_shards:
            raise ValueError(f"shard: need num_shards >= 1 and 0 <= index < num_shards, got {num_shards}, {index}")
        self.inputs, self.spec, self.num, self.index = (node,), node.spec, num_shards, index

    def iterate(self):
        for i, x in enumerate(self.inputs[0].iterate()):
            if i % self.num == self.index:
                yield x

    def cardinality(self):
        n = self.inputs[0].cardinality()
        return n if n < 0 else n // self.num + (1 if n % self.num > self.index else 0)


class Scan:
    """`scan(initial_state, fn)`: `fn(state, element) -> (new_state, output)`; the outputs are the elements."""

    def __init__(self, node, initial_state, fn):
        self.inputs = (node,)
        self.initial = structure.normalize(initial_state, "scan initial_state")
        state_spec = structure.spec_of(self.initial)
        self.fn = functions.StructuredFunction(fn, (state_spec, node.spec), "scan")
        out = self.fn.output_spec
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"scan: the function must return a pair (new_state, output_element), got "
                            f"{structure.describe(out)}")
        if structure.relax(out[0], state_spec) is None:
            raise TypeError(f"scan: the new state {structure.describe(out[0])} does not match the initial state "
                            f"{structure.describe(state_spec)}")
        self.spec = out[1]

    def iterate(self):
        state = self.initial
        for x in self.inputs[0].iterate():
            state, out = self.fn(state, x)
            yield out

    def cardinality(self):
        return self.inputs[0].cardinality()


class FlatMap:
    """`flat_map(fn)`: `fn(element)` returns a dataset (it runs in Python: it builds datasets)."""

    def __init__(self, node, fn, node_of, sample_of):
        self.inputs, self.node_of = (node,), node_of
        self.fn = fn = functions.dataset_function(fn, "flat_map")
        self.probe = functions.dataset_probe(fn, node.spec, node_of, sample_of, "flat_map")
        self.spec = self.probe.spec

    def make(self, element):
        """The node of the dataset `fn` builds for `element` (eagerly, or while a graph is staged)."""
        result = self.fn(*element) if functions.unpack(element) else self.fn(element)
        return self.node_of(result, "flat_map")

    def iterate(self):
        for x in self.inputs[0].iterate():
            yield from self.make(x).iterate()

    def cardinality(self):
        return UNKNOWN


class Interleave:
    """`interleave(fn, cycle_length, block_length)` in tf.data's order (see `iterate`)."""

    def __init__(self, node, fn, cycle_length, block_length, node_of, sample_of):
        self.inputs, self.node_of = (node,), node_of
        self.fn = fn = functions.dataset_function(fn, "interleave")
        self.cycle = threads.autotuned(cycle_length if cycle_length is not None else threads.AUTOTUNE)
        self.block = int(block_length)
        if self.block < 1:
            raise ValueError(f"interleave: block_length must be positive, got {block_length}")
        self.probe = functions.dataset_probe(fn, node.spec, node_of, sample_of, "interleave")
        self.spec = self.probe.spec

    def make(self, element):
        result = self.fn(*element) if functions.unpack(element) else self.fn(element)
        return self.node_of(result, "interleave")

    def iterate(self):
        source = self.inputs[0].iterate()
        slots = [None] * self.cycle
        end_of_input, cycle, block, open_ = False, 0, 0, 0
        while not end_of_input or open_ > 0:
            if slots[cycle] is not None:
                try:
                    x = next(slots[cycle])
                except StopIteration:
                    slots[cycle], open_ = None, open_ - 1
                    cycle, block = (cycle + 1) % self.cycle, 0
                    continue
                block += 1
                if block == self.block:
                    cycle, block = (cycle + 1) % self.cycle, 0
                yield x
            elif not end_of_input:
                try:
                    element = next(source)
                except StopIteration:
                    end_of_input = True
                    continue
                slots[cycle], open_ = iter(self.make(element).iterate()), open_ + 1
            else:
                cycle, block = (cycle + 1) % self.cycle, 0

    def cardinality(self):
        return UNKNOWN
