"""The step deadline: when the running step must have finished, per thread (`RunOptions.timeout_in_ms`).

`Session.run(..., options=RunOptions(timeout_in_ms=t))` runs the step inside
`scope(time.monotonic() + t / 1000)`; a distributed task does so for every
step it runs (the step's deadline); the multi-device runner hands the
deadline to its device threads.  It is checked wherever a step can wait or
run without end:

- every `_Recv` wait (rendezvous.py; distributed/transport.py has its own
  per-step deadline);
- every While iteration (control_flow/loop_plan.py's generated loop reads
  `get()` once per loop run and compares the clock each iteration; the
  interpreting executor's loop does the same).

Past it they raise `DeadlineExceededError` naming the op.  A single kernel
is never interrupted: a step overruns by at most one kernel.  Time spent
compiling native kernels (numba, `eager.native.compile_seconds()`: a kernel
compiles once, on its first call, which may fall inside a step: a promoted
fused kernel's 8th call, 0.3-3 s) does not count: a check that finds the
deadline passed asks `overdue`, which moves the deadline on by the compile
time since the step began and raises only if it has still passed.

A step can also be stopped from another thread before its deadline: the
scope may carry a `StepAbort`, which whoever learns that the step cannot
succeed sets (a distributed task, when a peer failed or died or the session
closes: distributed/transport.py; the multi-device runner, when another
device's partition failed: rendezvous.py).  The places that check the
deadline check it too, so a loop that would run for seconds ends within an
iteration instead of holding the step's answer (and its task) until it
finishes.  A scope with an abort and no deadline gets an infinite one: the
checks then run where `get()` is not None.

Imports `eager.errors` and `eager.native` (its compile clock; numba is not imported for it).
"""
from __future__ import annotations

import contextlib
import math
import threading
import time
from typing import Callable, Optional, Tuple

from eager import native
from eager.errors import AbortedError, DeadlineExceededError

monotonic = time.monotonic


class StepAbort:
    """A step's stop signal: `set(why)` from any thread; loops poll `why` (None while the step may go on).
    `make_error(message, op_name)` builds the exception a stopped loop raises."""

    __slots__ = ("why", "_make_error")

    def __init__(self, make_error: Callable[[str, str], BaseException] = None):
        self.why: Optional[str] = None
        self._make_error = make_error or (lambda message, op_name: AbortedError(message, op_name=op_name))

    def set(self, why: str) -> None:
        if self.why is None:            # the first reason is the one reported
            self.why = why

    def error(self, what: str, op_name: str) -> BaseException:
        return self._make_error(f"{what}: the step was aborted: {self.why}", op_name)


class _Current(threading.local):
    at: Optional[float] = None          # time.monotonic() seconds; None: no deadline
    abort: Optional[StepAbort] = None
    compiled = 0.0                      # native.compile_seconds() when the step began


_current = _Current()


def get() -> Optional[float]:
    """The current thread's step deadline (time.monotonic() seconds), or None."""
    return _current.at


def abort_signal() -> Optional[StepAbort]:
    """The current thread's step abort signal, or None."""
    return _current.abort


def state() -> Tuple[Optional[float], Optional[StepAbort]]:
    """(deadline, abort signal) of this thread's step: what a thread working for the step must run under."""
    return _current.at, _current.abort


def swap(at: Optional[float], abort: Optional[StepAbort] = None) -> Tuple[Optional[float], Optional[StepAbort]]:
    """Make (`at`, `abort`) this thread's step state and return the previous one (for `swap(*previous)`):
    `scope` without a context manager's cost, for per-step hot paths."""
    cur = _current
    before = cur.at, cur.abort
    cur.at = math.inf if at is None and abort is not None else at
    cur.abort = abort
    if at is not None and before[0] is None:       # a step begins here (not a restore of an outer one)
        cur.compiled = native.compile_seconds()
    return before


@contextlib.contextmanager
def scope(at: Optional[float], abort: Optional[StepAbort] = None):
    """Run the block with step deadline `at` (None: none) and abort signal `abort` on this thread."""
    before = swap(at, abort)
    try:
        yield
    finally:
        swap(*before)


def expired(what: str, op_name: str) -> DeadlineExceededError:
    """The error for `what` (e.g. "While loop, iteration 12") past the step's deadline."""
    return DeadlineExceededError(f"{what}: the step's deadline passed (RunOptions.timeout_in_ms)",
                                 op_name=op_name)


def overdue(abort: Optional[StepAbort], what: str, op_name: str) -> float:
    """For a check that found the deadline passed or `abort` set: raise, unless the time spent compiling
    native kernels since the step began makes up the overrun; then return the deadline moved on by it."""
    if abort is not None and abort.why is not None:
        raise abort.error(what, op_name)
    at = _current.at + (native.compile_seconds() - _current.compiled)
    if monotonic() > at:
        raise expired(what, op_name)
    return at


def check(at: Optional[float], what: str, op_name: str, abort: Optional[StepAbort] = None) -> Optional[float]:
    """Raise if deadline `at` has passed (None: never; see `overdue`) or `abort` was set; returns the
    deadline to check next time."""
    if at is not None and (monotonic() > at or (abort is not None and abort.why is not None)):
        return overdue(abort, what, op_name)
    return at
