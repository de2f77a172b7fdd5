"""Timing harness: median of repeats, ratios against NumPy in the same run.

`measure(fn, repeat, number)` returns the median seconds per call.  A
`Row(workload, variant, seconds, baseline_seconds)` prints as a ratio; `table`
formats rows.  `optional_peers()` reports which of TensorFlow/JAX can be
imported, so benchmark scripts can add those columns only when present.
No timing assertions live anywhere: figures are printed, not tested.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from typing import Callable


def measure(fn: Callable[[], object], repeat: int = 7, number: int | None = None,
            min_time: float = 0.05) -> float:
    """Median seconds per call of `fn` over `repeat` timed batches of `number` calls."""
    fn()  # warm up (tracing, plan compilation, caches)
    if number is None:
        number = 1
        while True:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - t0 >= min_time or number >= 1 << 20:
                break
            number *= 2
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


@dataclass
class Row:
    workload: str
    variant: str
    seconds: float
    baseline: float
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.seconds / self.baseline


def fmt_time(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:8.1f} us"
    if s < 1:
        return f"{s * 1e3:8.2f} ms"
    return f"{s:8.2f} s "


def table(rows: list[Row]) -> str:
    head = f"| {'workload':<34} | {'variant':<26} | {'time':>11} | {'numpy':>11} | {'ratio':>7} |"
    sep = "|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|"
    lines = [head, sep]
    for r in rows:
        lines.append(f"| {r.workload:<34} | {r.variant:<26} | {fmt_time(r.seconds):>11} | "
                     f"{fmt_time(r.baseline):>11} | {r.ratio:6.2f}x |" + (f" {r.note}" if r.note else ""))
    return "\n".join(lines)


def calls_per_batch(fn: Callable[[], object], min_time: float, clock=time.perf_counter) -> int:
    """The smallest power of two of calls of `fn` that takes at least `min_time` on `clock`."""
    number = 1
    while True:
        t0 = clock()
        for _ in range(number):
            fn()
        if clock() - t0 >= min_time:
            return number
        number *= 2


def paired(candidate: Callable[[], object], baseline: Callable[[], object], rounds: int = 15,
           min_time: float = 0.02, clock: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """(candidate seconds, baseline seconds) per call: fastest of `rounds` interleaved batches.

    Alternating the two in the same batches makes the ratio robust on a busy
    machine (both see the same load), which a median of separate runs is not.
    `clock=time.process_time` measures CPU time instead of wall time (time
    spent waiting for a core on a shared machine is then left out; with a
    multi-threaded BLAS it adds up every thread).
    """
    candidate(), baseline()
    number = calls_per_batch(baseline, min_time, clock)
    best_c = best_b = float("inf")
    for _ in range(rounds):
        for fn, is_base in ((baseline, True), (candidate, False)):
            t0 = clock()
            for _ in range(number):
                fn()
            dt = (clock() - t0) / number
            if is_base:
                best_b = min(best_b, dt)
            else:
                best_c = min(best_c, dt)
    return best_c, best_b


def rounds_arg(text: str) -> int:
    """argparse type of an A/B script's `--rounds`: the spread printed beside each median (quartiles,
    deciles) needs at least two rounds, so fewer is refused up front rather than failing after the run."""
    n = int(text)
    if n < 2:
        raise argparse.ArgumentTypeError(f"--rounds {n}: at least 2 (the spread of the per-round ratios needs two)")
    return n


def optional_peers() -> dict:
    """Which comparison frameworks are importable here (None when absent)."""
    peers = {}
    for name in ("tensorflow", "jax"):
        try:
            peers[name] = __import__(name)
        except Exception:
            peers[name] = None
    return peers
