"""Which gradient tapes are recording on this thread, and the `record` hook.

Kept apart from `tape.py` so that `dispatch` (the hot path) can check
`active_tapes()` with one call and no import cycle.  A tape records an op when
one of its inputs is tracked by that tape (watched, or produced by a recorded
op); variable reads are recorded when the variable is watched (explicitly, or
implicitly for trainable variables with `watch_accessed_variables`).
"""
from __future__ import annotations

import threading


class _State(threading.local):
    def __init__(self):
        self.tapes = []


_state = _State()


def active_tapes():
    return _state.tapes


def push(tape):
    _state.tapes.append(tape)


def remove(tape):
    try:
        _state.tapes.remove(tape)
    except ValueError:
        pass


class TapeEntry:
    """One recorded op: the grad rule's view of it (`inputs outputs attrs get_attr`)."""

    __slots__ = ("opdef", "inputs", "outputs", "attrs")

    def __init__(self, opdef, inputs, outputs, attrs):
        self.opdef = opdef
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs

    @property
    def type(self):
        return self.opdef.name

    def get_attr(self, name):
        return self.attrs[name]


def record(opdef, inputs, attrs, result):
    outputs = result if isinstance(result, tuple) else (result,)
    for tape in _state.tapes:
        tape._maybe_record(opdef, inputs, attrs, outputs)
