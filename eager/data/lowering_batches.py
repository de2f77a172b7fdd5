"""Batching streams (see `lowering.py`): batch (and rebatch, padded_batch with known shapes) and unbatch.

`BatchStream` pulls up to a batch of elements into TensorArrays in one
while loop and stacks them; `UnbatchStream` keeps the current batch in its
state and emits its rows one by one, pulling the next non-empty batch when
they run out.
"""
from __future__ import annotations

import eager as ek

from .. import nest
from ..dtypes import int64
from . import batching, structure
from .lowering import SCALAR, Wrapped, flat, loop, relaxed, spec_shapes, when


class BatchStream(Wrapped):
    """One while loop per batch: pull up to the batch size elements into TensorArrays, then stack.

    `rebatch` is this stream over an unbatch stream, with its list of sizes used round robin (the last
    state scalar counts the batches)."""

    extra = 1

    def __init__(self, node, up, sizes=None, row_spec=None, pad=None):
        super().__init__(node, up)
        self.sizes = [node.size] if sizes is None else list(sizes)
        self.row_spec = node.inputs[0].spec if row_spec is None else row_spec
        self.pad = pad or (lambda flat_row: flat_row)

    def next(self, state):
        k = self.k
        up_spec, n_batches = self.row_spec, state[-1]
        size = ek.constant(self.sizes[0], int64) if len(self.sizes) == 1 else \
            ek.gather(ek.constant(self.sizes, int64), n_batches % len(self.sizes))
        specs = flat(up_spec)
        arrays = [ek.TensorArray(s.dtype, size=0, dynamic_size=True, element_shape=s.shape) for s in specs]
        n_a = len(arrays)

        def cond(count, valid, *rest):
            return ek.logical_and(valid, count < size)

        def body(count, valid, *rest):
            arrs, s = list(rest[:n_a]), list(rest[n_a:])
            v, e, s = self.up.next(s)
            new = ek.cond(v, lambda: tuple(a.write(count, x) for a, x in zip(arrs, self.pad(flat(e)))),
                          lambda: tuple(arrs))
            new = list(new) if isinstance(new, (list, tuple)) else [new]
            return tuple([count + ek.cast(v, int64), v] + new + list(s))
        shapes = [SCALAR, SCALAR] + [(a.flow.shape,) for a in arrays] + self.up.invariants()
        out = ek.while_loop(cond, body, tuple([ek.constant(0, int64), ek.constant(True)] + arrays +
                                              list(state[:k])), shape_invariants=shapes)
        count, arrs, s = out[0], out[2:2 + n_a], list(out[2 + n_a:])

        def stacked():
            return (relaxed(nest.pack_sequence_as(up_spec, [a.stack() for a in arrs]), self.spec),)
        if self.node.drop:      # a short last batch is dropped: its static shape would not fit the spec
            valid = ek.equal(count, size)
            (batch,) = when(valid, stacked, self.spec)
        else:
            valid = count > 0
            (batch,) = stacked()
        return valid, batch, s + [n_batches + 1]


def padding(node):
    """padded_batch's element spec after padding, and the function padding one element's flat components."""
    specs = flat(node.inputs[0].spec)
    row_spec = nest.pack_sequence_as(node.inputs[0].spec, [
        ek.TensorSpec(shape, s.dtype) for shape, s in zip(node.shapes, specs)])

    def pad(row):
        out = []
        for x, shape, value in zip(row, node.shapes, node.pads):
            size = ek.cast(ek.shape(x), int64)
            ek.debugging.Assert(ek.reduce_all(size <= ek.constant(shape, int64)),
                                ["padded_batch: an element is larger than the padded shape", size])
            paddings = ek.stack([ek.zeros_like(size), ek.constant(shape, int64) - size], axis=1)
            out.append(ek.reshape(ek.pad(x, paddings, constant_values=ek.constant(value, x.dtype)), shape))
        return out
    return row_spec, pad


class UnbatchStream(Wrapped):
    """State: the input's state, the row to emit, the current batch's row count, and that batch."""

    def __init__(self, node, up):
        super().__init__(node, up)
        self.batch_spec = node.inputs[0].spec

    def init(self, key):
        return list(self.up.init(key)) + [ek.constant(0, int64), ek.constant(0, int64)] + \
            flat(structure.zeros_for(self.batch_spec))

    def invariants(self):
        return list(self.up.invariants()) + [SCALAR, SCALAR] + spec_shapes(self.batch_spec)

    def next(self, state):
        k, n_b = self.k, len(flat(self.batch_spec))
        up_state, row, rows, batch = state[:k], state[k], state[k + 1], state[k + 2:]

        def refill():
            # pull until a batch with rows, or the end of the input
            def cond(go, *rest):
                return go

            def body(go, valid, rows, *rest):
                v, e, s = self.up.next(list(rest[n_b:]))
                n = ek.cast(ek.shape(flat(e)[0])[0], int64)
                return tuple([ek.logical_and(v, ek.equal(n, 0)), v, ek.where(v, n, ek.zeros_like(n))] +
                             flat(e) + list(s))
            out = loop(cond, body, [ek.constant(True), ek.constant(False), ek.constant(0, int64)] + list(batch) +
                       list(up_state), [SCALAR, SCALAR, SCALAR] + spec_shapes(self.batch_spec) +
                       self.up.invariants())
            return tuple([ek.constant(0, int64), out[2]] + list(out[3:3 + n_b]) + list(out[3 + n_b:]))

        def keep():
            return tuple([row, rows] + list(batch) + list(up_state))
        out = list(ek.cond(row >= rows, refill, keep))
        row, rows, batch, up_state = out[0], out[1], out[2:2 + n_b], out[2 + n_b:]
        valid = row < rows
        packed = nest.pack_sequence_as(self.batch_spec, batch)
        (e,) = when(valid, lambda: (nest.map_structure(lambda t: ek.gather(t, row), packed),), self.spec)
        return valid, e, list(up_state) + [row + 1, rows] + list(batch)


class RowsOf:
    """The unbatch node a rebatch node implies (for its stream)."""

    def __init__(self, node):
        self.inputs = node.inputs
        self.spec = batching.unbatched_spec(node.inputs[0].spec, "rebatch")
