"""Choosing at run time among kernel variants that compute the same bits: time them, run the fastest.

A big chunked fused kernel (numpy_backend.build_chunked) can run its chunk loop
on the calling thread or split over the kernel pool (`eager.parallel`), and,
once it is called often, with its arithmetic as NumPy ufuncs or as compiled
loops (native_backend.py, numba, the `[native]` extra).  Every variant gives
the same bits, so only time decides, and on a shared machine time is noisy: a
call that waited for a core, or for numba's compiler, says nothing about the
kernel.  So the choice (`Chooser`) is made from many timings and revisited:

- **Sampling.** The candidates run in turn until each has `SAMPLES` timings;
  the lowest median wins (one outlier in five changes no median).
- **Rechecks.** From then on the chosen candidate (the incumbent) runs, timed,
  and every so many calls a challenger runs instead (the others in turn).  Its
  time is compared with the median of the incumbent's last `SAMPLES` timings,
  measured just before it, so a slow drift of the load affects both sides.
- **Hysteresis.** A challenger replaces the incumbent only when the median of
  its last `WINDOW` ratios shows it at least `MARGIN` faster: one lucky call
  never flips the choice, and two variants within noise of each other do not
  alternate.
- **Back-off, per challenger.**  Each challenger has its own interval
  between rechecks (from `RECHECK` calls up to `MAX_RECHECK`): it doubles
  only after a recheck that shows that challenger more than `MARGIN` slower
  (that time and the median of its window),
  so variants far behind cost one slow call in `MAX_RECHECK` (each is
  rechecked once in `MAX_RECHECK` times the number of challengers), while a close
  one keeps being rechecked every `RECHECK` calls (a single shared interval,
  doubled by every slow challenger in turn, left a variant 10% faster than
  the incumbent unchecked for hundreds of calls: a wrong first choice, made
  from a few noisy samples, then held for a whole benchmark).  A challenger
  whose ratios look faster (its last one, or the median of its window) runs
  again `CONFIRM` calls later, until its window is full and decides; two
  rechecks are never closer than `CONFIRM` calls.

The clock is `CLOCK[0]` (`time.perf_counter`), read when a `Chooser` is made:
tests inject a fake one and drive the logic deterministically.

`TunedKernel` is the chunked kernel with its variants: the NumPy kernel with
each runner (serial, split), and from its `promote_after`-th call, if the
compiled variant gives the NumPy kernel's bits on that call, the compiled
kernel with each runner too; the choice starts again over all of them (that
call, which compiles, is not timed).

Imports the standard library and `numpy`.
"""
from __future__ import annotations

import collections
import statistics
import threading
import time
from typing import Callable, Optional

import numpy as np

CLOCK = [time.perf_counter]


class Chooser:
    """Which of `n` equivalent candidates runs next (`next()`), fed with its timing (`record(k, seconds)`)."""

    SAMPLES = 5           # timings per candidate before the first choice; the incumbent's recent window
    WINDOW = 3            # recheck ratios per challenger whose median decides a switch
    MARGIN = 0.05         # a challenger must be this much faster (median ratio < 1 - MARGIN) to replace
    RECHECK = 16          # calls between rechecks at first, after a switch, or after a challenger looked faster
    MAX_RECHECK = 128     # ... and at most (times the number of challengers), for challengers far behind
    CONFIRM = 4           # calls before a challenger that looked faster runs again

    def __init__(self, n: int, labels: Optional[list] = None):
        self.n = n
        self.labels = list(labels) if labels is not None else [str(i) for i in range(n)]
        self.times = [collections.deque(maxlen=self.SAMPLES) for _ in range(n)]
        self.ratios = [collections.deque(maxlen=self.WINDOW) for _ in range(n)]
        self.chosen: Optional[int] = None if n > 1 else 0
        self.interval = [self.RECHECK] * n    # each challenger's calls between rechecks
        self.last = [0] * n                   # the call each challenger last ran at (or the choice was made)
        self.last_recheck = 0                 # the call the last recheck ran at
        self.suspect: Optional[int] = None    # a challenger whose ratios look faster: it runs next
        self.calls = 0
        self.switches = 0
        self.counts = [0] * n         # calls each candidate ran (reports and tests)

    @property
    def chosen_label(self) -> Optional[str]:
        return None if self.chosen is None else self.labels[self.chosen]

    def next(self) -> int:
        """The candidate this call runs: one still being sampled, the incumbent, or a challenger due."""
        self.calls += 1
        k = self._pick()
        self.counts[k] += 1
        return k

    def _pick(self) -> int:
        if self.chosen is None:
            return min(range(self.n), key=lambda i: len(self.times[i]))      # in turns, the fewest first
        if self.n == 1 or self.calls - self.last_recheck < self.CONFIRM:
            return self.chosen
        if self.suspect is not None:
            due = [self.suspect] if self.calls - self.last[self.suspect] >= self.CONFIRM else []
        else:
            due = [i for i in range(self.n) if i != self.chosen and self.calls - self.last[i] >= self.interval[i]]
        if not due:
            return self.chosen
        k = max(due, key=lambda i: (self.calls - self.last[i] - self.interval[i], -i))     # the most overdue
        self.last[k] = self.last_recheck = self.calls
        return k

    def record(self, k: int, seconds: float) -> None:
        if self.chosen is None:
            self.times[k].append(seconds)
            if all(len(t) == self.SAMPLES for t in self.times):
                self._choose(min(range(self.n), key=lambda i: statistics.median(self.times[i])))
            return
        if k == self.chosen:
            self.times[k].append(seconds)
            return
        self.times[k].append(seconds)
        base = statistics.median(self.times[self.chosen])
        self._rate(k, seconds / base if base > 0 else 1.0)

    def _rate(self, k: int, ratio: float) -> None:
        """Challenger `k` took `ratio` times the incumbent's time: switch, confirm soon, or back off."""
        self.ratios[k].append(ratio)
        median = statistics.median(self.ratios[k])
        faster = median < 1.0 - self.MARGIN
        if faster and len(self.ratios[k]) == self.WINDOW:
            self.switches += 1
            self._choose(k)
            return
        looks_faster = faster or ratio < 1.0 - self.MARGIN
        self.suspect = k if looks_faster else (None if self.suspect == k else self.suspect)
        slower = ratio > 1.0 + self.MARGIN and median > 1.0 + self.MARGIN
        # far behind: back off, up to one recheck of any of them in MAX_RECHECK calls on average
        longest = self.MAX_RECHECK * (self.n - 1)
        self.interval[k] = min(2 * self.interval[k], longest) if slower else self.RECHECK

    def _choose(self, k: int) -> None:
        """Make `k` the incumbent; every other candidate is rechecked from `RECHECK` calls on."""
        self.chosen = k
        self.suspect = None
        self.interval = [self.RECHECK] * self.n
        self.last = [self.calls] * self.n
        self.last_recheck = self.calls
        for r in self.ratios:
            r.clear()


class TunedKernel:
    """`kernel(*arrays)`: a chunked kernel `chunked(run, *arrays)` run with the runner and (after promotion)
    the kernel variant its `Chooser` picks (module docstring).

    `runners`: [(label, run)]; `make_native()`: the compiled variant (or None), asked for at the
    `promote_after`-th call; None: no promotion.  `keep_numpy=False`: once promoted, only the compiled
    variant runs (a NumPy form much slower than it: fast_tanh.py's, about 30 passes).  A process that never calls a kernel that often never
    imports numba."""

    def __init__(self, chunked: Callable, runners: list, make_native: Optional[Callable] = None,
                 promote_after: int = 8, keep_numpy: bool = True):
        self.source = chunked.source
        self.kernels = [("numpy", chunked)]
        self.runners = list(runners)
        self.make_native = make_native
        self.promote_after = promote_after
        self.keep_numpy = keep_numpy
        self.native = None
        self.state = "numpy" if make_native is not None else "settled"     # "numpy" -> "settled"
        self.calls = 0
        self._lock = threading.Lock()
        self._choose_again()

    def _choose_again(self) -> None:
        variants = [(kernel, run) for _, kernel in self.kernels for _, run in self.runners]
        labels = [f"{kl}, {rl}" for kl, _ in self.kernels for rl, _ in self.runners]
        self.clock = CLOCK[0]
        self._free = self._active = (variants, Chooser(len(variants), labels))   # one attribute: read at once

    @property
    def chooser(self) -> Chooser:
        return self._active[1]

    @property
    def chosen_label(self) -> Optional[str]:
        return self.chooser.chosen_label

    def pin(self, label: Optional[str]) -> None:
        """Run only the variant called `label` (e.g. "numpy, serial": A/B benchmarks in one process);
        None: back to the chooser, as it was."""
        variants, chooser = self._free
        if label is None:
            self._active = self._free
            return
        if label not in chooser.labels:
            raise ValueError(f"pin: this kernel has no variant {label!r}; it has {chooser.labels}")
        self._active = ([variants[chooser.labels.index(label)]], Chooser(1, [label]))

    @property
    def labels(self) -> list:
        return list(self._free[1].labels)

    def __call__(self, *arrays):
        if self.state == "numpy":
            self.calls += 1
            if self.calls >= self.promote_after:
                return self._promote(arrays)
        variants, chooser = self._active
        if chooser.n == 1:
            kernel, run = variants[0]
            return kernel(run, *arrays)
        k = chooser.next()
        kernel, run = variants[k]
        clock = self.clock
        t0 = clock()
        res = kernel(run, *arrays)
        chooser.record(k, clock() - t0)
        return res

    def _promote(self, arrays):
        """Run the NumPy kernel (the result) and the compiled one beside it; keep the latter if the bits match."""
        with self._lock:
            variants, chooser = self._active
            kernel, run = variants[chooser.chosen if chooser.chosen is not None else 0]
            if self.state != "numpy":
                return kernel(run, *arrays)
            self.state = "settled"
            want = self.kernels[0][1](run, *arrays)
            native = self.make_native()
            if native is not None and same_bits(want, native(run, *arrays)):
                self.native = native
                self.kernels = self.kernels + [("native", native)] if self.keep_numpy else [("native", native)]
                self._choose_again()
            return want


def same_bits(a, b) -> bool:
    """Equal dtypes, shapes and bits, NaN at the same places (any NaN equals any NaN: the fusion's documented
    equality; a NaN's sign may differ)."""
    a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype != y.dtype or x.shape != y.shape:
            return False
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            if not np.array_equal(nan, np.isnan(y)):
                return False
            x, y = x[~nan], y[~nan]
        if x.tobytes() != y.tobytes():
            return False
    return True
