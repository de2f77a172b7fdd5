"""Small timing and table helpers for the CLI (`graphjit demo`, `graphjit bench`) and the examples.

The repository's `benchmarks/` package holds the benchmark suite but is not
installed with graphjit, so the installed CLI cannot import it; these are the
same ideas (median of repeats after a warm-up, ratios against NumPy in the
same run) sized for a tour: a time budget per measurement instead of a fixed
repeat count.  `Progress` is the text progress bar long CLI work shows on
stderr.  Imports only the standard library.
"""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional


def measure(fn: Callable[[], object], budget: float = 0.2, repeat: int = 5, warmup: int = 1) -> float:
    """Median seconds per call of `fn`: `warmup` calls, then `repeat` batches sized to fill `budget`."""
    for _ in range(warmup):
        fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        dt = time.perf_counter() - t0
        if dt * repeat >= budget or number >= 1 << 16:
            break
        number *= 2
    samples = [dt / number]
    for _ in range(repeat - 1):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


def fmt_time(s: Optional[float]) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


@dataclass
class SpeedRow:
    """One workload timed several ways; `times` maps a column name to seconds per call (None: n/a)."""

    workload: str
    times: dict = field(default_factory=dict)


def speed_table(rows: list, baseline: str = "NumPy", compare: tuple = ("eager", "@function")) -> str:
    """A Markdown-style table: each column's time, ratios to `baseline`, and @function's speedup over eager."""
    cols = list(dict.fromkeys(c for r in rows for c in r.times))
    head = ["workload"] + cols + [f"{c} / {baseline}" for c in cols if c != baseline]
    if len(compare) == 2 and all(c in cols for c in compare):
        head.append(f"{compare[1]} speedup")
    body = []
    for r in rows:
        base = r.times.get(baseline)
        cells = [r.workload] + [fmt_time(r.times.get(c)) for c in cols]
        for c in cols:
            if c != baseline:
                t = r.times.get(c)
                cells.append("-" if t is None or not base else f"{t / base:.2f}x")
        if len(head) > len(cells):
            a, b = r.times.get(compare[0]), r.times.get(compare[1])
            cells.append("-" if not a or not b else f"{a / b:.1f}x")
        body.append(cells)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                                           for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(head), sep] + [line(c) for c in body])


class Progress:
    """`with Progress(total, "timing") as p: ... p.step("label")` draws `[#####-----] 3/6 label` on stderr.

    On a terminal the bar redraws in place; otherwise one line per step (logs stay readable).
    """

    def __init__(self, total: int, title: str = "", stream=None, width: int = 24):
        self.total = max(1, total)
        self.title = title
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._t0 = time.perf_counter()

    def _draw(self, label: str) -> None:
        filled = int(self.width * self.done / self.total)
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"{self.title + ' ' if self.title else ''}[{bar}] {self.done}/{self.total} {label}"
        if self._tty:
            self.stream.write("\r" + text[:120].ljust(100))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def start(self, label: str = "") -> None:
        """Show what is about to run (before the slow part)."""
        self._draw(f"{label}...")

    def step(self, label: str = "") -> None:
        self.done = min(self.total, self.done + 1)
        self._draw(label)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._tty:
            self.stream.write(f"\r{' ' * 100}\r")
        self.stream.write(f"{self.title or 'done'}: {self.done}/{self.total} in "
                          f"{time.perf_counter() - self._t0:.1f} s\n")
        self.stream.flush()
        return False
