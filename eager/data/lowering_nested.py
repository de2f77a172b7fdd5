"""Staged `flat_map` and `interleave` (see `lowering.py`): streams of the datasets a function builds.

The function returns a dataset per input element.  Staged, the stream keeps
the current input element in its state and builds the inner dataset's stream
from it where it is needed (calling the function on the graph's tensors while
the graph is built, as `Dataset.range(x)` or `from_tensor_slices(x)` accept);
the inner stream's state lives beside it.  The shapes of that state come from
the dataset the function built once on placeholders (`functions.dataset_probe`),
so the state keeps one layout whatever the element.  `interleave` keeps
`cycle_length` such slots and visits them in tf.data's order (the eager
`transforms.Interleave.iterate`): `block_length` elements from a slot, then
the next slot; an empty slot opens the next input element; an exhausted one
closes and the cycle moves on.  A function that needs concrete values (e.g.
`repeat(int(x))`) could not be traced on placeholders and is refused here.
"""
from __future__ import annotations

import eager as ek

from .. import nest
from ..dtypes import int64
from . import structure
from .lowering import SCALAR, Stream, flat, loop, relaxed, spec_shapes


def check_traceable(node, what):
    reason = getattr(node.probe, "untraceable", None)
    if reason is not None:
        raise NotImplementedError(
            f"a dataset using {what} cannot be iterated inside a graph (@function): its function could not be "
            f"called on symbolic elements ({reason}). Give the dataset methods tensors (e.g. take(x), not "
            f"take(int(x))) or iterate it eagerly")


class _Slot:
    """One (has an inner dataset, input element, inner stream state) group inside a flat state list."""

    def __init__(self, node, up_spec, inner_invariants, lower):
        self.node, self.up_spec, self.lower = node, up_spec, lower
        self.n_e = len(flat(up_spec))
        self.invariants = [SCALAR] + spec_shapes(up_spec) + list(inner_invariants)

    def __len__(self):
        return len(self.invariants)

    def inner(self, element):
        return self.lower(self.node.make(element))

    def closed(self):
        """A slot without an inner dataset (its state: an inner stream over a zeros element, never read)."""
        zeros = structure.zeros_for(self.up_spec)
        return [ek.constant(0, int64)] + flat(zeros) + list(self.inner(zeros).start())

    def open(self, element):
        return [ek.constant(1, int64)] + flat(element) + list(self.inner(element).start())

    def pull(self, values, out_spec):
        """(valid, element, slot values after it): the next element of the slot's inner stream; a slot
        whose inner stream ended is closed."""
        e = nest.pack_sequence_as(self.up_spec, list(values[1:1 + self.n_e]))
        v, out, s = self.inner(e).next(list(values[1 + self.n_e:]))
        return v, relaxed(out, out_spec), [ek.cast(v, int64)] + flat(e) + list(s)


def _until_element(stream, state, body):
    """(valid, element, state): one while loop over `(go, valid, element, *state)` running `body` until it
    clears `go` (an element was found, or the input ended)."""
    spec = stream.spec
    n_out = len(flat(spec))
    zeros = flat(structure.zeros_for(spec))
    result = loop(lambda go, *rest: go, body, [ek.constant(True), ek.constant(False)] + zeros + list(state),
                  [SCALAR, SCALAR] + spec_shapes(spec) + stream.invariants())
    return result[1], nest.pack_sequence_as(spec, list(result[2:2 + n_out])), result[2 + n_out:]


class _Nested(Stream):
    """A stream over an input whose elements each open an inner dataset (`slot` describes one).  `lower`
    (lowering_streams.lower, which imports this module) makes the inner datasets' streams."""

    what = ""

    def __init__(self, node, up, lower):
        check_traceable(node, self.what)
        super().__init__(node.spec)
        self.node, self.up = node, up
        self.k = len(up.invariants())
        self.slot = _Slot(node, node.inputs[0].spec, lower(node.probe).invariants(), lower)


class FlatMapStream(_Nested):
    """State: the input's state, then one slot."""

    what = "flat_map"

    def init(self, key):
        return list(self.up.init(key)) + self.slot.closed()

    def invariants(self):
        return list(self.up.invariants()) + self.slot.invariants

    def next(self, state):
        n_out, k = len(flat(self.spec)), self.k

        def body(go, valid, *rest):
            out, s_up, slot = rest[:n_out], list(rest[n_out:n_out + k]), list(rest[n_out + k:])

            def from_slot():
                v, e, new = self.slot.pull(slot, self.spec)
                return tuple([ek.logical_not(v), v] + flat(e) + s_up + new)

            def from_input():
                v, e, s = self.up.next(s_up)
                new = ek.cond(v, lambda: tuple(self.slot.open(e)), lambda: tuple(slot))
                return tuple([v, ek.constant(False)] + list(out) + list(s) + list(new))
            return tuple(ek.cond(slot[0] > 0, from_slot, from_input))
        return _until_element(self, state, body)


class InterleaveStream(_Nested):
    """State: the input's state, end of input, the cycle position, elements taken from the current slot,
    open slots, then `cycle_length` slots."""

    what = "interleave"

    def __init__(self, node, up, lower):
        super().__init__(node, up, lower)
        self.cycle = node.cycle

    def init(self, key):
        return list(self.up.init(key)) + [ek.constant(0, int64)] * 4 + \
            [x for _ in range(self.cycle) for x in self.slot.closed()]

    def invariants(self):
        return list(self.up.invariants()) + [SCALAR] * 4 + self.slot.invariants * self.cycle

    def next(self, state):
        n_out, k, width = len(flat(self.spec)), self.k, len(self.slot)

        def body(go, valid, *rest):
            out, s_up = list(rest[:n_out]), list(rest[n_out:n_out + k])
            end, cycle, block, open_ = rest[n_out + k:n_out + k + 4]
            slots = list(rest[n_out + k + 4:])
            for j in range(self.cycle):        # one cond per slot: only the slot at `cycle` does anything
                values = tuple([go, valid] + out + s_up + [end, cycle, block, open_] + slots)
                values = ek.cond(ek.logical_and(go, ek.equal(cycle, j)),
                                 lambda j=j, values=values: self._visit(j, values, width), lambda values=values: values)
                go, valid = values[0], values[1]
                out, s_up = list(values[2:2 + n_out]), list(values[2 + n_out:2 + n_out + k])
                end, cycle, block, open_ = values[2 + n_out + k:6 + n_out + k]
                slots = list(values[6 + n_out + k:])
            go = ek.logical_and(go, ek.logical_not(ek.logical_and(end > 0, ek.equal(open_, 0))))
            return tuple([go, valid] + out + s_up + [end, cycle, block, open_] + slots)
        return _until_element(self, state, body)

    def _visit(self, j, values, width):
        """Slot j's turn (eager `Interleave.iterate`): take an element, open the slot, or move on."""
        n_out, k = len(flat(self.spec)), self.k
        out, s_up = list(values[2:2 + n_out]), list(values[2 + n_out:2 + n_out + k])
        end, cycle, block, open_ = values[2 + n_out + k:6 + n_out + k]
        slots = list(values[6 + n_out + k:])
        mine = slots[j * width:(j + 1) * width]
        before, after = slots[:j * width], slots[(j + 1) * width:]
        nxt = (cycle + 1) % self.cycle
        zero = ek.constant(0, int64)

        def take():
            v, e, new = self.slot.pull(mine, self.spec)
            full = ek.equal(block + 1, self.node.block)
            moved = ek.logical_or(ek.logical_not(v), full)
            return tuple([ek.logical_not(v), v] + flat(e) + s_up +
                         [end, ek.where(moved, nxt, cycle), ek.where(moved, zero, block + 1),
                          open_ - ek.cast(ek.logical_not(v), int64)] + before + new + after)

        def fill():
            v, e, s = self.up.next(s_up)
            new = ek.cond(v, lambda: tuple(self.slot.open(e)), lambda: tuple(mine))
            return tuple([ek.constant(True), ek.constant(False)] + out + list(s) +
                         [ek.cast(ek.logical_not(v), int64), cycle, block, open_ + ek.cast(v, int64)] +
                         before + list(new) + after)

        def skip():
            return tuple([ek.constant(True), ek.constant(False)] + out + s_up + [end, nxt, zero, open_] + slots)
        return ek.cond(mine[0] > 0, take, lambda: ek.cond(end < 1, fill, skip))
