"""Which gradient tapes are recording on this thread, and the `record` hook.

Kept apart from `tape.py` so that `dispatch` (the hot path) can check
`active_tapes()` with one call and no import cycle.  A tape records an op when
one of its inputs is tracked by that tape (watched, or produced by a recorded
op); variable reads are recorded when the variable is watched (explicitly, or
implicitly for trainable variables with `watch_accessed_variables`).
"""
from __future__ import annotations

import collections
import contextlib
import threading


class _State(threading.local):
    def __init__(self):
        self.tapes = []


_state = _State()


def active_tapes():
    """The tapes recording on this thread (the list itself: do not mutate it, use `recording_with`)."""
    return _state.tapes


def any_recording() -> bool:
    """True when some tape records on this thread (the hot-path test of callers outside `eager`)."""
    return bool(_state.tapes)


@contextlib.contextmanager
def recording_with(tapes):
    """Make `tapes` (a list, e.g. `[]` to suspend every tape, or one `active_tapes()` returned earlier)
    the tapes recording on this thread for the block; the previous ones are restored afterwards.

    The public way for graph building to pause tapes while it traces a body (the op as a whole is
    recorded instead) and to record a hoisted read with the tapes of the enclosing scope."""
    saved = _state.tapes
    _state.tapes = tapes
    try:
        yield
    finally:
        _state.tapes = saved


def tracked(tensor) -> bool:
    """Whether a tape recording on this thread tracks `tensor` (watched, a watched variable's read, or an
    output of an op it recorded): an op reading it is recorded, and the tape may ask for its gradient."""
    key = id(tensor)
    for tape in _state.tapes:
        if key in tape._tracked:
            return True
    return False


def push(tape):
    _state.tapes.append(tape)


def remove(tape):
    try:
        _state.tapes.remove(tape)
    except ValueError:
        pass


class TapeEntry(collections.namedtuple("TapeEntryFields", ("opdef", "inputs", "outputs", "attrs"))):
    """One recorded op: the grad rule's view of it (`inputs outputs attrs get_attr`).

    A tuple, so that a tape makes one with `new_entry(opdef, inputs, outputs, attrs)` (no Python frame: a
    tape records every op a forward pass runs) and its fields are read by C descriptors."""

    __slots__ = ()

    @property
    def type(self):
        return self.opdef.name

    def get_attr(self, name):
        return self.attrs[name]


_tuple_new = tuple.__new__


def new_entry(opdef, inputs, outputs, attrs) -> TapeEntry:
    return _tuple_new(TapeEntry, (opdef, inputs, outputs, attrs))


def record(opdef, inputs, attrs, result):
    outputs = result if isinstance(result, tuple) else (result,)
    for tape in _state.tapes:
        tape._maybe_record(opdef, inputs, attrs, outputs)
