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
is never interrupted: a step overruns by at most one kernel.

Imports `eager.errors` only.
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Optional

from eager.errors import DeadlineExceededError

monotonic = time.monotonic


class _Current(threading.local):
    at: Optional[float] = None          # time.monotonic() seconds; None: no deadline


_current = _Current()


def get() -> Optional[float]:
    """The current thread's step deadline (time.monotonic() seconds), or None."""
    return _current.at


@contextlib.contextmanager
def scope(at: Optional[float]):
    """Run the block with step deadline `at` (None: none) on this thread."""
    before, _current.at = _current.at, at
    try:
        yield
    finally:
        _current.at = before


def expired(what: str, op_name: str) -> DeadlineExceededError:
    """The error for `what` (e.g. "While loop, iteration 12") past the step's deadline."""
    return DeadlineExceededError(f"{what}: the step's deadline passed (RunOptions.timeout_in_ms)",
                                 op_name=op_name)


def check(at: Optional[float], what: str, op_name: str) -> None:
    """Raise `expired(...)` if deadline `at` has passed (None: never)."""
    if at is not None and monotonic() > at:
        raise expired(what, op_name)
