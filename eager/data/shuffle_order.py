"""The order of a seeded buffered shuffle of the indices 0..n-1, computed by NumPy.

`shuffled_order(n, size, gen)` gives exactly `buffered_shuffle(range(n),
size, gen)` (`shuffling.py`; tests compare the two) without a Python step per
element.  Emit k takes the k-th uniform draw scaled by the buffer's length at
that emit, min(size, n - k), truncated as `int()` does, so the slot every
emit chooses is known before any emit runs.  What a slot holds at an emit
then follows from the earlier emits that chose it:

* before the last input arrives (the first n - size emits), emit k appends
  input size-1+k as the last slot, takes slot j, and (j not last) puts the new
  input in j: it takes the input of the latest earlier emit that chose j, or
  j's first index (`_filling`);
* then the buffer (with the last input) drains: emit t takes slot j and moves
  the index in the last slot into j.  The index moved by an emit is what the last slot held, so it
  was moved there by the latest earlier emit that chose that slot, which
  itself moved an index moved by an earlier emit, ...: chains, followed for
  all emits at once by pointer jumping (`_draining`).

The grouping of emits by slot is one `np.sort` of (slot, emit) int64 keys
(several times faster than a stable `argsort` here).  About forty NumPy calls
in all, so short orders (under `VECTORIZED_FROM`) take the loop, faster there.
Imports NumPy only.
"""
from __future__ import annotations

import numpy as np


VECTORIZED_FROM = 512      # shorter orders are computed by the Python loop: there NumPy's per-call costs dominate


def shuffled_order(n: int, size: int, gen: np.random.Generator, vectorized: bool | None = None) -> np.ndarray:
    """`buffered_shuffle(range(n), size, gen)` as an int64 array: by NumPy (the module docstring says how),
    or for orders shorter than `VECTORIZED_FROM` by the loop; `vectorized` forces one or the other."""
    n, size = int(n), int(size)
    if n <= 0:
        return np.zeros(0, np.int64)
    steps = np.arange(n, dtype=np.int64)
    lengths = n - steps                         # the buffer's length at each emit
    if size < n:
        np.minimum(lengths, size, out=lengths)
    slots = (gen.random(n) * lengths).astype(np.int64)
    if not (n >= VECTORIZED_FROM if vectorized is None else vectorized):
        return _looped(slots, size)
    # the emits before the last input arrives; the one it arrives at (as the last slot of a full buffer,
    # before the emit takes a slot) is a draining emit: takes a slot, moves the last slot's index into it
    filling = max(0, n - size)
    if not filling:
        return _draining(slots, None, steps)
    out = np.empty(n, np.int64)
    kept = _filling(slots[:filling], size, out[:filling], steps[:filling])
    out[filling:] = _draining(slots[filling:], np.append(kept, n - 1), steps[:n - filling])
    return out


def _looped(slots, size):
    """The buffered shuffle's steps one by one, on the chosen slots."""
    n = len(slots)
    buf = list(range(min(size - 1, n)))
    nxt, out = len(buf), []
    emit = out.append
    for j in slots.tolist():
        if nxt < n:             # the next input enters at the end, then one buffered index leaves
            buf.append(nxt)
            nxt += 1
        emit(buf[j])
        buf[j] = buf[-1]
        buf.pop()
    return np.array(out, dtype=np.int64)


def _filling(slots, size, out, steps):
    """Emit k appends input size-1+k as slot size-1 and takes slot slots[k]; a slot j < size-1 holds the input
    of the latest earlier emit that chose it, or j.  Fills `out`; returns the buffer left (size - 1 slots)."""
    newest = steps + (size - 1)
    previous = _previous_choosers(slots, steps)
    out[:] = np.where(slots == size - 1, newest, np.where(previous >= 0, newest[previous], slots))
    last = _last_choosers(slots, steps, size)[:size - 1]
    return np.where(last >= 0, newest[last], np.arange(size - 1, dtype=np.int64))


def _draining(slots, buffer, steps):
    """The emits with no input left, from `buffer` (None: the identity); `steps` is arange(len(slots))."""
    count = len(slots)
    tails = (count - 1) - steps                 # emit t's last slot, never chosen after emit t
    previous = _previous_choosers(slots, steps)
    # the latest emit before t that chose t's last slot: that slot's last chooser, or the chooser before it
    # when emit t chose its own last slot (slot count-1-t is tails[t]: reversing puts it at t)
    chooser = _last_choosers(slots, steps, count)[::-1]
    source = np.where(chooser == steps, previous, chooser)
    origin = _chain_ends(source, steps)         # where no emit moved an index into a tail slot: its own index
    moved = tails[origin] if buffer is None else buffer[tails[origin]]
    taken = slots if buffer is None else buffer[slots]
    return np.where(previous >= 0, moved[previous], taken)


def _chain_ends(source, steps):
    """For each t, the end of the chain t -> source[t] -> ... (source[t] < t; -1 ends a chain): pointer
    jumping, each pass doubling the jump, so about log2(the longest chain) passes."""
    end = np.where(source >= 0, source, steps)
    while True:
        further = end[end]
        if (further == end).all():
            return end
        end = further


def _previous_choosers(slots, steps):
    """Per emit, the latest earlier emit that chose the same slot (-1: none)."""
    count = len(slots)
    keys = np.sort(slots * count + steps)       # (slot, emit), ascending
    chosen = keys // count
    emits = keys - chosen * count
    previous = np.empty(count, np.int64)
    previous[emits[0]] = -1
    previous[emits[1:]] = np.where(chosen[1:] == chosen[:-1], emits[:-1], -1)
    return previous


def _last_choosers(slots, steps, slot_count):
    """Per slot, the last emit that chose it (-1: none)."""
    last = np.full(slot_count, -1, np.int64)
    np.maximum.at(last, slots, steps)           # max is order-free: well defined with repeated slots
    return last
