"""The fused kernels' vectorized float32 tanh against NumPy's, over every float32 input (or a sample).

For each of the 2^32 bit patterns (in blocks of 2^24): the compiled
`tanh32_core` (graph_runtime/fusion/fast_tanh.py, as the fused kernels compile
it: numba, no fast-math), NumPy's `np.tanh` on float32 and `np.tanh` on
float64 rounded to float32 (a near-correctly-rounded reference).  Distances
are in ulp: the difference of the two values' positions on the ordered
float32 line (-0 and +0 one apart is avoided: both map to 0); two NaNs are
equal, a NaN against a number counts as a failure.  Prints the largest
distance to each reference, the input where it occurs, and the histogram.

Run: `python -m benchmarks.tanh_ulp [--every K]` (K > 1: every K-th bit
pattern only, for a quick look).  About 10 minutes for all inputs on one core (loaded).
"""
from __future__ import annotations

import sys
import time

import numpy as np

from eager import native
from graph_runtime.fusion.fast_tanh import tanh32_core

BLOCK = 1 << 24


def _kernels():
    if not native.available():
        raise SystemExit("numba is not installed ([native] extra)")
    core = native.jit(tanh32_core)

    def fill(x, out):
        for i in range(x.shape[0]):
            out[i] = core(x[i])

    def ulps(a, b, hist):
        """Largest ulp distance between a and b, its index, and bad NaN count; adds to `hist`."""
        worst, at, bad = 0, -1, 0
        for i in range(a.shape[0]):
            p, q = a[i], b[i]
            if p != p or q != q:
                if not (p != p and q != q):
                    bad += 1
                continue
            ip = np.int64(np.float32(p).view(np.int32))
            iq = np.int64(np.float32(q).view(np.int32))
            if ip < 0:
                ip = -(ip & 0x7FFFFFFF)
            if iq < 0:
                iq = -(iq & 0x7FFFFFFF)
            d = abs(ip - iq)
            hist[min(d, hist.shape[0] - 1)] += 1
            if d > worst:
                worst, at = d, i
        return worst, at, bad
    return native.jit(fill), native.jit(ulps)


def main(argv) -> int:
    every = int(argv[argv.index("--every") + 1]) if "--every" in argv else 1
    fill, ulps = _kernels()
    hist = {"numpy": np.zeros(8, np.int64), "float64 rounded": np.zeros(8, np.int64)}
    worst = {k: (0, None) for k in hist}
    bad = {k: 0 for k in hist}
    t0 = time.perf_counter()
    for start in range(0, 1 << 32, BLOCK):
        bits = np.arange(start, start + BLOCK, every, dtype=np.uint64).astype(np.uint32)
        x = bits.view(np.float32)
        mine = np.empty_like(x)
        fill(x, mine)
        with np.errstate(all="ignore"):
            refs = {"numpy": np.tanh(x), "float64 rounded": np.tanh(x.astype(np.float64)).astype(np.float32)}
        for k, ref in refs.items():
            w, at, b = ulps(mine, ref, hist[k])
            bad[k] += b
            if w > worst[k][0]:
                worst[k] = (w, (float(x[at]), float(mine[at]), float(ref[at])))
    print(f"inputs: {(1 << 32) // every} ({'all' if every == 1 else f'every {every}th'}), "
          f"{time.perf_counter() - t0:.0f} s")
    for k in hist:
        print(f"against {k}: max {worst[k][0]} ulp at (x, ours, theirs) = {worst[k][1]}; NaN mismatches {bad[k]}; "
              f"histogram (0, 1, 2, ... 7+ ulp) {hist[k].tolist()}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
