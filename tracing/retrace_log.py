"""Trace records and the retrace policy (budgets, warnings, `no_retrace`).

`TraceRecord` is one entry of `Function.trace_log`: signature, reason, call
site, trace time, node counts before/after optimization.  `RetraceError` (a
RuntimeError) carries the explanation.  The frequent-retrace warning fires when
5 of the last 10 calls traced (TensorFlow's threshold) and, unlike TensorFlow's,
says which arguments changed.
"""
from __future__ import annotations

import collections
import contextlib
import threading
from dataclasses import dataclass, field

from graph_runtime.operation import capture_user_frames


class RetraceError(RuntimeError):
    """A retrace happened where the user forbade it (`no_retrace()` or `max_traces`)."""

    def __init__(self, message: str, explanation: str = ""):
        super().__init__(message + ("\n" + explanation if explanation else ""))
        self.explanation = explanation


@dataclass
class TraceRecord:
    index: int
    signature: str                 # readable signature, e.g. "(x: f32[2], n: Python int 3)"
    reason: str                    # "first call" or the list of changes
    call_site: str                 # user's file:line of the call that traced
    trace_seconds: float
    nodes_before: int
    nodes_after: int
    changes: list = field(default_factory=list)
    suggestions: list = field(default_factory=list)

    def __str__(self):
        return (f"trace #{self.index} {self.signature} at {self.call_site}: {self.reason} "
                f"({self.trace_seconds * 1e3:.1f} ms, {self.nodes_before} -> {self.nodes_after} nodes)")


def user_call_site() -> str:
    """file:line of the innermost stack frame outside graphjit's own packages."""
    frames = capture_user_frames(2)
    if not frames:
        return "<unknown>"
    return f"{frames[0].filename}:{frames[0].lineno}"


class RecentCalls:
    """Sliding window of 'did this call trace?' used for the frequent-retrace warning."""

    def __init__(self, window: int = 10, threshold: int = 5):
        self._calls = collections.deque(maxlen=window)
        self.threshold = threshold
        self.warned = False

    def add(self, traced: bool) -> bool:
        """Record a call; True when the warning should fire now."""
        self._calls.append(traced)
        if traced and not self.warned and sum(self._calls) >= self.threshold:
            self.warned = True
            return True
        return False


class _NoRetraceState(threading.local):
    def __init__(self):
        self.depth = 0


_no_retrace = _NoRetraceState()


@contextlib.contextmanager
def no_retrace():
    """Inside this block, a call that would retrace (trace a function that already has a trace) raises RetraceError."""
    _no_retrace.depth += 1
    try:
        yield
    finally:
        _no_retrace.depth -= 1


def retrace_forbidden() -> bool:
    return _no_retrace.depth > 0
