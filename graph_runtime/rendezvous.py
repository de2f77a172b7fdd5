"""The rendezvous: a keyed mailbox through which the partitions of one step exchange values.

`_Send` puts a value under a key (tensor, source device, destination device);
`_Recv` blocks until the value under its key arrives, the step is aborted or
the step's deadline passes (deadline.py: `DeadlineExceededError`).
One `Rendezvous` per step (so keys need no step id); the multi-device runner
(multi_device.py) makes it the current one of each partition's thread.
`abort(error)` wakes every waiting `_Recv`, which raises `StepAborted`, and
sets the step's abort `signal` (deadline.StepAbort), which the partitions'
While loops check each iteration: an error in one partition ends the step
on every device, nothing waits or loops on for an answer nobody will take.

Imports `eager.errors` and `deadline`.
"""
from __future__ import annotations

import math
import threading
from typing import Any, Optional

from eager.errors import FailedPreconditionError

from . import deadline


class StepAborted(RuntimeError):
    """Raised by a `_Recv` of a step that another partition's error aborted."""


def _step_aborted(message: str, op_name: str) -> StepAborted:
    return StepAborted(message)


class Rendezvous:
    def __init__(self):
        self._values: dict = {}
        self.signal = deadline.StepAbort(_step_aborted)
        self._cond = threading.Condition()
        self._error: Optional[BaseException] = None

    def send(self, key: str, value: Any) -> None:
        with self._cond:
            if key in self._values:
                raise RuntimeError(f"rendezvous: key {key!r} was sent twice in one step")
            self._values[key] = value
            self._cond.notify_all()

    def recv(self, key: str) -> Any:
        at = deadline.get()
        with self._cond:
            while key not in self._values:
                if self._error is not None:
                    raise StepAborted(f"step aborted while waiting for {key!r}: {self._error}")
                left = None if at is None or at == math.inf else at - deadline.monotonic()
                if left is not None and left <= 0:      # raises, unless a native compile excuses the time
                    at = deadline.overdue(None, f"waiting for {key!r} from another device", "_Recv")
                    continue
                self._cond.wait(left)
            return self._values.pop(key)

    def abort(self, error: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = error
                self.signal.set(f"{type(error).__name__}: {error}")
            self._cond.notify_all()


class _Current(threading.local):
    def __init__(self):
        self.rendezvous: Optional[Rendezvous] = None


_current = _Current()


def current() -> Rendezvous:
    r = _current.rendezvous
    if r is None:
        raise FailedPreconditionError("_Send/_Recv ran outside a multi-device step: no other device sends to "
                                      "or receives from this one")
    return r


def current_or_none() -> Optional[Rendezvous]:
    return _current.rendezvous


def set_current(r: Optional[Rendezvous]) -> None:
    _current.rendezvous = r
