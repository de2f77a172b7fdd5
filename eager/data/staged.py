"""A dataset inside a graph: its stream (`stream_of`), `iter(ds)` (`GraphIterator`), `Dataset.reduce`.

What `lowering.py` describes, used from outside: `Dataset.__iter__` and
`Dataset.reduce` while a graph is being built, and AutoGraph's dataset `for`
loop (`stream_of`).  Sits above the stream table (`lowering_streams.py`),
which builds on `lowering.py`.  Imports `eager` and sibling modules.
"""
from __future__ import annotations

import eager as ek

from .. import nest
from ..dispatch import execute
from ..dtypes import int64
from . import functions, structure
from .lowering import CHECK_END, SCALAR, UNROLL_LIMIT, Stream, flat, loop, spec_shapes
from .lowering_streams import lower


def stream_of(dataset) -> Stream:
    """The stream of `dataset` (the table in `lowering_streams.py`)."""
    return lower(dataset._node)


class GraphIterator:
    """`iter(ds)` inside a graph: `next(it)` adds the ops for one element (OutOfRangeError at the end)."""

    def __init__(self, dataset):
        self.element_spec = dataset.element_spec
        self._stream = stream_of(dataset)
        self._state = self._stream.start()
        self._staged = 0

    def __iter__(self):
        return self

    def get_next(self):
        self._staged += 1
        if self._staged > UNROLL_LIMIT:
            raise RuntimeError(
                f"next() was staged {UNROLL_LIMIT} times on one dataset iterator while building a graph: this "
                f"looks like a Python `for` loop over a dataset, which would be unrolled without end. Let "
                f"AutoGraph convert the loop (function(autograph=True)) so it becomes one while_loop")
        valid, element, self._state = self._stream.next(self._state)
        execute(CHECK_END, (valid,), {}, None)     # stateful: runs in program order, before later effects
        return element

    __next__ = get_next


def staged_reduce(dataset, initial_state, reduce_func):
    """`Dataset.reduce` inside a graph: one while loop over the stream."""
    stream = stream_of(dataset)
    state = structure.normalize(initial_state, "reduce initial_state")
    state_spec = structure.spec_of(state)
    fn = functions.StructuredFunction(reduce_func, (state_spec, dataset.element_spec), "reduce")
    out_spec = fn.output_spec
    relaxed_spec = structure.relax(state_spec, out_spec)
    if relaxed_spec is None:
        raise TypeError(f"reduce: the new state {structure.describe(out_spec)} does not match the initial "
                        f"state {structure.describe(state_spec)}")
    if relaxed_spec != state_spec:
        fn = functions.StructuredFunction(reduce_func, (relaxed_spec, dataset.element_spec), "reduce")
    s0 = stream.start()
    v0, e0, s0 = stream.next(s0)
    n_e, n_s, n_r = len(flat(e0)), len(s0), len(flat(state))

    def split(vals):
        e = nest.pack_sequence_as(dataset.element_spec, list(vals[1:1 + n_e]))
        s = list(vals[1 + n_e:1 + n_e + n_s])
        r = nest.pack_sequence_as(state_spec, list(vals[1 + n_e + n_s:]))
        return vals[0], e, s, r

    def body(*vals):
        _, e, s, r = split(vals)
        r = fn(r, e)
        v, e, s = stream.next(s)
        return tuple([v] + flat(e) + list(s) + flat(r))

    shapes = [SCALAR] + spec_shapes(dataset.element_spec) + stream.invariants() + spec_shapes(relaxed_spec)
    out = loop(lambda *vals: vals[0], body, [v0] + flat(e0) + list(s0) + flat(state), shapes)
    return split(out)[3]
