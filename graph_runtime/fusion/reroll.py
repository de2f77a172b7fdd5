"""`reroll`: a generated kernel's statement list with each long run of a repeated block written as a loop.

Used by the NumPy and numexpr fused-kernel backends on the straight-line source of unrolled loops, so
that the source, and its compile time, stays as short as its distinct blocks.  Works on text lines we
generated; the loop counts it writes are our own integers.  Imports nothing.
"""
from __future__ import annotations


REROLL_MIN_REPEATS = 4       # a block of statements repeated this many times in a row becomes a loop
REROLL_MAX_PERIOD = 64       # longest block looked for
REROLL_MIN_BODY = 32         # statements per loop iteration at least (the block unrolled): ~20 ns of loop
                             # overhead per iteration against ~0.5 us per ufunc call on tiny arrays


def reroll(lines: list, indent: str) -> list:
    """`lines` (statements at `indent`) with each run of an identical block repeated at least
    `REROLL_MIN_REPEATS` times in a row written as a `for` loop over the block
    (the generated source, and so its compile time, stays as short as the distinct blocks).

    The straight-line kernel of an unrolled loop repeats the same text: after the first rounds, buffer
    assignment settles and every round calls the same ufuncs on the same buffers.  Executing a block k
    times in a row is exactly what the loop does (same statements, same order), and the source -- whose
    compilation cost grows with its length -- stays short.  The loop body holds the block repeated up to
    `REROLL_MIN_BODY` statements, so the loop's own overhead stays negligible; the repeat counts are our
    own integers.  Blocks are found in one pass: at each line, the distance to the next identical line
    (at most `REROLL_MAX_PERIOD`) is the candidate period, kept if the block repeats enough."""
    n = len(lines)
    if n < 2 * REROLL_MIN_REPEATS:
        return lines
    ids: dict = {}
    code = [ids.setdefault(ln, len(ids)) for ln in lines]
    nxt = [0] * n
    last: dict = {}
    for i in range(n - 1, -1, -1):
        nxt[i] = last.get(code[i], n)
        last[code[i]] = i
    out: list = []
    i = 0
    while i < n:
        p = nxt[i] - i
        if p <= REROLL_MAX_PERIOD and i + p * REROLL_MIN_REPEATS <= n:
            block = code[i:i + p]
            k = 1
            while code[i + k * p:i + (k + 1) * p] == block:
                k += 1
            if k >= REROLL_MIN_REPEATS:
                unroll = max(1, min(k, -(-REROLL_MIN_BODY // p)))
                loops, rest = divmod(k, unroll)
                body = [indent + "    " + ln[len(indent):] for ln in lines[i:i + p]] * unroll
                if loops > 1:
                    out.append(f"{indent}for _ in range({loops}):")
                    out.extend(body)
                else:
                    out.extend(lines[i:i + p] * unroll)
                out.extend(lines[i:i + p] * rest)
                i += k * p
                continue
        out.append(lines[i])
        i += 1
    return out
