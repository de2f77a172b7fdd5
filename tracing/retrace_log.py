"""Trace records and the retrace policy (budgets, warnings, `no_retrace`).

`TraceRecord` is one entry of `Function.trace_log`: signature, reason, call
site, trace time, node counts before/after optimization, and where that time
went (`PhaseTimes`: autograph conversion, running the Python function, each
optimizer pass, plan compilation).  `RetraceError` (a
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


def _ms(s: float) -> str:
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms"


@dataclass
class PhaseTimes:
    """Seconds per phase of one trace, in order (`phases`), and per optimizer pass (`passes`, summed over
    the fixed-point iterations; their total is the `optimize` phase).

    Phases: `autograph` (converting the Python function; the first trace only, it is cached), `trace`
    (running the Python function to build the graph), `optimize`, `compile` (plan and kernel
    generation); a loaded saved function has `import` instead of the first two."""

    phases: dict = field(default_factory=dict)
    passes: dict = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.phases[name] = self.phases.get(name, 0.0) + seconds

    def add_report(self, report, seconds: float) -> None:
        """Record the `optimize` phase from an `OptimizationReport` (None: optimization was off)."""
        self.add("optimize", seconds)
        for p in (report.passes if report is not None else ()):
            self.passes[p.name] = self.passes.get(p.name, 0.0) + p.seconds

    def merge(self, other: "PhaseTimes") -> None:
        for k, v in other.phases.items():
            self.add(k, v)
        for k, v in other.passes.items():
            self.passes[k] = self.passes.get(k, 0.0) + v

    @property
    def total(self) -> float:
        return sum(self.phases.values())

    def as_dict(self) -> dict:
        """`{"autograph": s, "trace": s, "optimize": s, "optimize/<pass>": s, ..., "compile": s}`."""
        out = {}
        for k, v in self.phases.items():
            out[k] = v
            if k == "optimize":
                out.update((f"optimize/{p}", t) for p, t in self.passes.items())
        return out

    def _top_passes(self, n: int) -> list:
        return sorted(self.passes.items(), key=lambda kv: -kv[1])[:n]

    def __str__(self):
        parts = []
        for k, v in self.phases.items():
            text = f"{k} {_ms(v)}"
            if k == "optimize" and self.passes:
                text += " (" + ", ".join(f"{p} {_ms(t)}" for p, t in self._top_passes(3)) + ", ...)"
            parts.append(text)
        return ", ".join(parts) if parts else "no phase timings"

    def table(self, indent: str = "") -> str:
        """One line per phase (and per optimizer pass, slowest first): milliseconds and share of the total."""
        total = self.total or 1.0
        rows = []
        for k, v in self.phases.items():
            rows.append((k, v))
            if k == "optimize":
                rows += [("  " + p, t) for p, t in self._top_passes(len(self.passes))]
        width = max((len(k) for k, _ in rows), default=5)
        return "\n".join(f"{indent}{k:<{width}} {v * 1e3:9.1f} ms {100 * v / total:5.1f}%" for k, v in rows)


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
    phases: PhaseTimes = field(default_factory=PhaseTimes)

    def __str__(self):
        return (f"trace #{self.index} {self.signature} at {self.call_site}: {self.reason} "
                f"({self.trace_seconds * 1e3:.1f} ms, {self.nodes_before} -> {self.nodes_after} nodes; "
                f"{self.phases})")


def user_call_site() -> str:
    """file:line of the innermost stack frame outside graphjit's own packages."""
    frames = capture_user_frames(2)
    if not frames:
        return "<unknown>"
    return f"{frames[0].filename}:{frames[0].lineno}"


class RecentCalls:
    """Which of the last `window` calls traced, for the frequent-retrace warning.

    A cache hit only counts (`calls += 1`, inline in the call path); a trace also records its call's
    number.  "`threshold` of the last `window` calls traced" holds at a trace exactly when the
    `threshold`-th latest trace (this one included) is among the last `window` calls."""

    def __init__(self, window: int = 10, threshold: int = 5):
        self.window = window
        self.threshold = threshold
        self.calls = 0
        self._traces = collections.deque(maxlen=threshold)
        self.warned = False

    def add(self, traced: bool) -> bool:
        """Record a call; True when the warning should fire now."""
        self.calls += 1
        if not traced:
            return False
        self._traces.append(self.calls)
        if (not self.warned and len(self._traces) == self.threshold
                and self.calls - self._traces[0] < self.window):
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
