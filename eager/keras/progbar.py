"""The progress bar of `fit(verbose=1)`, `evaluate` and `predict`, drawn like Keras 3's.

On a terminal the line is redrawn in place (at most every 50 ms, and at the end):

     7/23 ━━━━━━╸━━━━━━━━━━━━━ 1s 61ms/step - accuracy: 0.5413 - loss: 1.4432

with the ETA while running and the total time at the end.  When the output is not a terminal
(piped, a file, a CI log) nothing is drawn while the epoch runs and one line is written when it
ends, so a log gets one line per epoch.  `verbose=2` writes that one line on terminals too.
"""
from __future__ import annotations

import sys
import time

WIDTH = 20


def _fmt_time(seconds: float) -> str:
    if seconds >= 3600:
        return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"
    if seconds >= 60:
        return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
    return f"{int(round(seconds))}s"


def _fmt_per_step(seconds: float, unit: str) -> str:
    if seconds >= 1:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


def _fmt_value(v) -> str:
    v = float(v)
    return f"{v:.4f}" if abs(v) >= 1e-3 or v == 0 else f"{v:.4e}"


class Progbar:
    """`update(current, values)` while running, `update(current, values, finalize=True)` at the end."""

    def __init__(self, target=None, verbose=1, stream=None, interval=0.05, unit_name="step", prefix=""):
        self.target, self.verbose, self.interval, self.unit = target, verbose, interval, unit_name
        self.stream = stream if stream is not None else sys.stdout
        isatty = getattr(self.stream, "isatty", None)
        self.dynamic = bool(isatty and isatty()) and verbose == 1
        encoding = (getattr(self.stream, "encoding", None) or "ascii").lower()
        self.glyphs = ("━", "╸", "─") if "utf" in encoding else ("=", ">", ".")
        self.prefix = prefix
        self.start = time.perf_counter()
        self._last_draw = 0.0
        self._width = 0

    def _bar(self, current) -> str:
        if not self.target:
            return ""
        done_glyph, head, todo_glyph = self.glyphs
        done = int(min(1.0, current / self.target) * WIDTH)
        if done >= WIDTH:
            return done_glyph * WIDTH + " "
        return done_glyph * done + head + todo_glyph * (WIDTH - done - 1) + " "

    def _line(self, current, values, finalize) -> str:
        elapsed = time.perf_counter() - self.start
        per_step = elapsed / current if current else 0.0
        width = len(str(self.target)) if self.target else 0
        count = f"{current:>{width}}/{self.target}" if self.target else f"{current}"
        if finalize:
            timing = f"{_fmt_time(elapsed)} {_fmt_per_step(per_step, self.unit)}"
        else:
            eta = per_step * (self.target - current) if self.target else 0.0
            timing = f"{_fmt_time(eta)} {_fmt_per_step(per_step, self.unit)}"
        parts = [f"{self.prefix}{count} {self._bar(current) if self.dynamic else '- '}{timing}"]
        parts += [f"{name}: {_fmt_value(v)}" for name, v in values]
        return " - ".join(parts)

    def update(self, current, values=(), finalize=False) -> None:
        if self.verbose == 0:
            return
        now = time.perf_counter()
        if not finalize and (not self.dynamic or now - self._last_draw < self.interval):
            return
        self._last_draw = now
        line = self._line(current, list(values), finalize)
        if self.dynamic:
            pad = " " * max(0, self._width - len(line))
            self._width = len(line)
            self.stream.write("\r" + line + pad + ("\n" if finalize else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
