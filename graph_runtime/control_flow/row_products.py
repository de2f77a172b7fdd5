"""A While body's `TensorArray.read(i) @ W` computed for a block of rows at once.

An RNN's body multiplies its step input by a weight: `matmul(ta.read(t), Wx)`,
with the TensorArray's buffer and `Wx` captured (fixed for the whole loop).
Each iteration then pays a row lookup and a matmul call for a 16x32 @ 32x64
product whose GEMM is about half of its time.  `find(plan, n, n_caps)` finds
these pairs of steps in a body plan; the generated loop (loop_plan.py) then
computes the products a block of rows at a time with one stacked
`np.matmul(buffer[i:j], W)`, and an iteration takes its row from the block:

    if not (q0 == pn0 and pq0): pq0, pn0, pz0 = _rows0(x0, x1, q0, pn0, pz0)   # the read's line
    r1 = pq0.pop(); pn0 += 1                                                   # the matmul's line

Same bits: a stacked matmul calls the same GEMM on each row as the 2-D
matmul of that row does (NumPy's matmul loops over the stacked dimension),
which the tests check bitwise against the loop computed row by row.

Blocks grow while the reads are sequential (1, 2, 4, ... up to `MAX_BLOCK`
rows, so a loop that stops early computed at most as many products again as
it used) and start over at one row when a read is not the row after the last
one; each product is handed out once (a later in-place kernel may write into
it), so reading a row twice computes it twice, as before.  An index outside
the buffer raises the read's own error, on the read's line.

Imports `numpy` and `eager.tensor_array`.
"""
from __future__ import annotations

import numpy as np

from eager.tensor_array import GET_ITEM

MAX_BLOCK = 64
_FLOATS = ("float32", "float64")


def find(plan, captured, row_reads=()) -> dict:
    """{matmul step index: (read step index, buffer value id, weight value id)} for the body plan's pairs
    `matmul(TensorListGetItem(buffer, i), w)` with `buffer` and `w` among `captured` value ids (or
    constants), both operands of rank 2 and of the same float dtype, with inner sizes known to agree.
    Steps in `row_reads` (a counted loop's `x[t]`, counter.py) count as reads of their first input."""
    found = {}
    producer = {}
    for si, step in enumerate(plan.steps):
        for v in step.outputs:
            if v >= 0:
                producer[v] = si
    for si, step in enumerate(plan.steps):
        if step.noop or step.kernel is not np.matmul or step.attrs or len(step.inputs) != 2:
            continue
        a, w = step.inputs
        gi = producer.get(a)
        if gi is None or (w not in captured and w not in plan.consts) or a == w:
            continue
        read = plan.steps[gi]
        is_row = gi in row_reads
        if read.noop or not (is_row or read.op.type == GET_ITEM.name) or read.inputs[0] not in captured:
            continue
        x, y = step.op.inputs
        if (x.shape.rank != 2 or y.shape.rank != 2 or x.dtype is not y.dtype or x.dtype.name not in _FLOATS
                or (not is_row and read.op.inputs[1].shape.rank != 0)):
            continue
        if x.shape.dims[1] is None or x.shape.dims[1] != y.shape.dims[0]:
            continue      # inner sizes known to agree: the stacked matmul cannot fail on the read's line
        found[si] = (gi, read.inputs[0], w)
    return found


def rows_times(buffer, w, t, nxt: int, size: int, row=None):
    """`(queue, t, size)`: the products `buffer[r] @ w` of a block of rows starting at row `t`, last row
    first (`queue[-1]` is row `t`'s); the block doubles `size` when `t` is `nxt`, the row after the
    previous block's last handed-out row, else it is one row long.  `row(buffer, t)`: the read's kernel
    when it is row indexing `x[t]` (which takes a negative `t` from the end, as Python does)."""
    n = buffer.shape[0]
    i = int(t)
    if i < 0 or i >= n:
        if row is None:
            GET_ITEM.kernel(buffer, t)      # raises the read's error
        row(buffer, i)                      # raises the read's error, unless -n <= i < 0
        i += n
    size = min(2 * size, MAX_BLOCK) if i == nxt else 1
    block = np.matmul(buffer[i:min(n, i + size)], w)
    return list(block[::-1]), i, size
