"""The 2M-element chain's kernel variants side by side, and whether two threads of `tanh` use two cores.

`(tanh(2x+1)(2x+1)-x)^2+3` on 2M float32 under `@function` runs as one chunked
fused kernel with up to four variants of equal bits (graph_runtime/fusion/
autotune.py): the arithmetic as NumPy ufuncs or compiled loops (numba, after
promotion) and the chunk loop serial or split over the kernel pool.  Each
variant is pinned in turn (`TunedKernel.pin`), beside the unpinned kernel
("auto": whatever the run-time choice is), the same function traced with
`fusion.options(fast_tanh=False)` (NumPy's tanh, the unfused graph's bits;
with numba the fast tanh's kernel runs compiled variants only) and the
hand-written NumPy expression, in rounds whose order rotates.  Per variant: the median wall time,
the median over rounds of its ratio to NumPy's time in the same round
(min-max), and the median CPU time of all threads (`time.process_time`): what
the second core costs in work.

`--tanh`: `np.tanh` over 2M float32 on one thread, against two threads on the
halves (a plain thread pair, no graphjit), wall and CPU time.  On two real
cores the pair takes about half the wall time at the same CPU time; on two
hyperthreads of one core (or a core another process holds) it does not.

Run: `python -m benchmarks.bench_chain [--rounds N] [--tanh]`; say what the
load was (printed: the load average before and after).
"""
from __future__ import annotations

import os
import statistics
import sys
import threading
import time

import numpy as np

import eager as ek
from benchmarks.workloads import BIG, expr
from graph_runtime import fusion
from graph_runtime.fusion.autotune import TunedKernel
from tracing import function

WARM_CALLS = 40       # past promotion (8th call) and the sampling of four variants (5 calls each)


def timed(fn, number: int) -> tuple:
    """(wall s, CPU s of all threads) per call over `number` calls."""
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number, (time.process_time() - c0) / number


def chain_variants(rounds: int, number: int = 3) -> list:
    x_np = np.random.default_rng(0).standard_normal(BIG).astype(np.float32)
    x = ek.constant(x_np)
    f = function(lambda t: expr(ek, t))
    with fusion.options(fast_tanh=False):        # traced (and its kernel generated) with NumPy's tanh
        exact = function(lambda t: expr(ek, t))
        exact(x)
    for _ in range(WARM_CALLS):
        f(x)
        exact(x)
    kernels = [s.kernel for s in f.get_concrete_function(x)._plan.steps if isinstance(s.kernel, TunedKernel)]
    if len(kernels) != 1:
        raise RuntimeError(f"expected one tuned chunked kernel, found {len(kernels)}")
    k = kernels[0]
    chosen = k.chosen_label

    def pinned(label):
        def run():
            k.pin(label)
            try:
                return f(x)
            finally:
                k.pin(None)
        return run

    cands = {"NumPy": lambda: expr(np, x_np), "auto": lambda: f(x), "auto, fast_tanh=False": lambda: exact(x)}
    cands.update({label: pinned(label) for label in k.labels})
    wall = {c: [] for c in cands}
    cpu = {c: [] for c in cands}
    ratio = {c: [] for c in cands}
    names = list(cands)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        got = {c: timed(cands[c], number) for c in order}
        for c in names:
            wall[c].append(got[c][0])
            cpu[c].append(got[c][1])
            ratio[c].append(got[c][0] / got["NumPy"][0])
    rows = []
    for c in names:
        rows.append((c, statistics.median(wall[c]), statistics.median(ratio[c]), min(ratio[c]), max(ratio[c]),
                     statistics.median(cpu[c])))
    return rows, chosen, k.chosen_label, k.chooser.switches


def tanh_pair(rounds: int, number: int = 5) -> list:
    n = BIG
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    h = n // 2
    go, done = threading.Event(), threading.Event()

    def worker():
        while True:
            go.wait()
            go.clear()
            np.tanh(x[h:], out=out[h:])
            done.set()

    threading.Thread(target=worker, daemon=True).start()

    def pair():
        done.clear()
        go.set()
        np.tanh(x[:h], out=out[:h])
        done.wait()

    cands = {"one thread, 2M": lambda: np.tanh(x, out=out), "two threads, 1M each": pair}
    wall = {c: [] for c in cands}
    cpu = {c: [] for c in cands}
    for _ in range(rounds):
        for c, fn in cands.items():
            w, p = timed(fn, number)
            wall[c].append(w)
            cpu[c].append(p)
    return [(c, statistics.median(wall[c]), min(wall[c]), statistics.median(cpu[c])) for c in cands]


def main(argv) -> int:
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 21
    print(f"cores: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.2f}")
    if "--tanh" in argv:
        print("\n| np.tanh, 2M float32 | wall median | wall min | CPU median |\n|---|---|---|---|")
        for c, w, wmin, p in tanh_pair(rounds):
            print(f"| {c} | {w * 1e3:.2f} ms | {wmin * 1e3:.2f} ms | {p * 1e3:.2f} ms |")
    rows, first, last, switches = chain_variants(rounds)
    print(f"\n(tanh(2x+1)(2x+1)-x)^2+3, 2M float32, @function; run-time choice after warm-up: {first}, "
          f"at the end: {last} ({switches} switches)")
    print("| variant | wall median | ratio to NumPy (median, min-max) | CPU median |\n|---|---|---|---|")
    for c, w, r, lo, hi, p in rows:
        print(f"| {c} | {w * 1e3:.2f} ms | {r:.2f}x ({lo:.2f}-{hi:.2f}) | {p * 1e3:.2f} ms |")
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
