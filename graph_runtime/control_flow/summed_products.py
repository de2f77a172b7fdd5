"""A While gradient's weight sums over the iterations as one GEMM after the backward walk.

The backward walk of an RNN (grad_loop.py) sums, for each weight, one product
per iteration, `dWx = sum_t x_t.T @ dz_t` (and `dWh` likewise), and for the
bias `db = sum_t sum_rows dz_t`: per iteration a small GEMM call or a
reduction, plus an add into the sum.  That sum is one product over the
iterations stacked row-wise,

    sum_t x_t.T @ dz_t  ==  X.T @ DZ,    X = [x_{n-1}; ...; x_0],  DZ = [dz_{n-1}; ...; dz_0]

so when a capture's cotangent is such a term (`a.T @ b` of static 2-D float
matrices, or `SumToLike` of a static `(r, c)` matrix to `(c,)`) and nothing
else reads it, the generated walk only keeps the operands (one `append` per
operand and iteration; `dz_t`, shared by several terms, is kept once) and
after the walk computes

    if L6:
        S6 = _stk(L6); S10 = _stk(L10); S4 = _stk(L4)   # the kept operands stacked row-wise
        acc0 = _mm(S6.T, S10)                            # one GEMM, K = iterations x rows
        acc2 = _red(S10, 0)                              # one reduction

A 64x64 weight of a 100-step, batch-16 RNN then costs one stacked matmul and
one reduction instead of 100 64x16x64 GEMM calls and 100 adds.  The product
runs in parts of at most `PART_MACS` multiply-adds (`gram`: a stacked
matmul over row blocks, then their sum), because OpenBLAS runs a GEMM that
small on the calling thread: a whole 64x1600x64 GEMM would start its own
threads, which on a busy machine made the step 12x slower in wall time
waiting for them, and would tie the bits to the BLAS thread count.

The sums are the same mathematically, not bitwise: the GEMM adds the terms in
its own order instead of one iteration after the other (the result is as
accurate or more; nothing documents the walk's order, and the eager tape's
sums differ from both anyway).  They are the same for every run, thread
count and mode (Session, `@function`, a tape around a traced call all run
this WhileGrad kernel), whatever the BLAS thread count.  `GRAPHJIT_LOOP_GRAD_GEMM=0` or `set_enabled(False)`
keeps the per-iteration sums (read when a gradient's walk is generated).

Only terms in the regime where a call costs more than its work are deferred:
a product whose per-iteration GEMM has at most `PART_MACS` multiply-adds (one
OpenBLAS keeps on the calling thread), a row sum of at most `PART_MACS`
elements; a bigger one runs efficiently as it is, and keeping its operands
would hold every iteration's memory until the walk ends.  And only terms
whose operands nothing overwrites are deferred: the walk's
operands are saved forward values, captures and arrays its kernels allocate,
and a plan with an in-place step (the `memory` pass's `InplaceElementwise`,
which may reuse a dead operand's buffer) defers nothing.  The kept operands
live until the walk ends.

Imports `numpy`, `eager` (`buffers`, `switches`, `ops.linalg`).
"""
from __future__ import annotations

import numpy as np

from eager import buffers
from eager.ops.linalg import TRANSPOSED_PRODUCTS
from eager.switches import Switch

PART_MACS = 1 << 18      # OpenBLAS runs a GEMM of at most 65536 * 4 multiply-adds on one thread
_WRITES_INPUTS = frozenset({"InplaceElementwise", "InplaceAssignUpdate", "InplaceApplyGradientDescent"})
_FLOATS = ("float32", "float64")
_switch = Switch("GRAPHJIT_LOOP_GRAD_GEMM", "summed_products.set_enabled")


def enabled() -> bool:
    """Whether While gradients sum their weight terms as one GEMM after the walk."""
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """On, off, or None (the environment's default); returns the previous setting.  Gradient walks
    generated afterwards follow it."""
    return _switch.set(flag)


def _static_matrix(t, dtype=None) -> bool:
    dims = t.shape.dims
    return (dims is not None and len(dims) == 2 and None not in dims and t.dtype.name in _FLOATS
            and (dtype is None or t.dtype is dtype))


def _term(step):
    """'product' for `a.T @ b` of static float matrices, 'rows' for `SumToLike` of a static `(r, c)`
    matrix to `(c,)`, else None."""
    if step.attrs or len(step.outputs) != 1:
        return None
    if step.op.type == "MatMul" and len(step.inputs) == 2 and step.inputs[0] != step.inputs[1]:
        a, b = step.op.inputs
        if (TRANSPOSED_PRODUCTS.get(step.kernel) == (True, False) and _static_matrix(a) and _static_matrix(b, a.dtype)
                and a.shape.dims[0] * a.shape.dims[1] * b.shape.dims[1] <= PART_MACS):
            return "product"
    if step.op.type == "SumToLike" and len(step.inputs) == 2:
        g, like = step.op.inputs
        if (_static_matrix(g) and like.shape.dims is not None and list(like.shape.dims) == list(g.shape.dims[1:])
                and g.shape.dims[0] * g.shape.dims[1] <= PART_MACS):
            return "rows"
    return None


def find(plan, n_dy: int) -> dict:
    """{capture index c: (term step index, 'product' | 'rows')} for the plan's capture cotangents
    (`plan.returns[n_dy + c]`) that are such terms read by nothing else (module docstring)."""
    if not enabled() or any(not s.noop and s.op.type in _WRITES_INPUTS for s in plan.steps):
        return {}
    producer, readers = {}, {}
    for si, step in enumerate(plan.steps):
        if step.noop:
            continue
        for v in step.outputs:
            producer[v] = si
        for v in step.inputs:
            readers[v] = readers.get(v, 0) + 1
    returned: dict = {}
    for r in plan.returns:
        if r.kind == "value":
            returned[r.vid] = returned.get(r.vid, 0) + 1
    found = {}
    for c, r in enumerate(plan.returns[n_dy:]):
        if r.kind != "value" or returned[r.vid] != 1 or readers.get(r.vid) or r.vid not in producer:
            continue
        si = producer[r.vid]
        kind = _term(plan.steps[si])
        if kind is not None:
            found[c] = (si, kind)
    return found


def rewrites(plan, em, found: dict) -> tuple:
    """`(rewrite, before, after, listed)`: the `emit_steps` rewrites keeping the deferred terms' operands, the
    lines making their lists before the walk, the lines computing the sums after it, and {operand value id:
    its list's name}."""
    listed: dict = {}             # operand value id -> list name
    rewrite: dict = {}
    sums: list = []
    for c, (si, kind) in sorted(found.items(), key=lambda kv: kv[1][0]):
        step = plan.steps[si]
        used = step.inputs if kind == "product" else step.inputs[:1]
        fresh = [v for v in dict.fromkeys(used) if v not in listed]
        for v in fresh:
            listed[v] = f"L{v}"

        def keep(line, regs_in, targets, step=step, fresh=fresh, si=si):
            return [(f"{listed[v]}.append({regs_in[list(step.inputs).index(v)]})", si) for v in fresh]
        rewrite[si] = keep
        sums.append((c, si, kind, [f"S{v}" for v in used]))
    before = [(f"{name} = []", None) for name in listed.values()]
    after: list = []
    if sums:
        stack = em.bind("_stk", stacked, share=True)
        after.append((f"if {next(iter(listed.values()))}:", None))
        after.extend((f"    S{v} = {stack}({name})", None) for v, name in listed.items())
        for c, si, kind, ops in sums:
            if kind == "product":
                call = f"{em.bind('_gram', gram, share=True)}({ops[0]}, {ops[1]})"
            else:
                call = f"{em.bind('_red', np.add.reduce, share=True)}({ops[0]}, 0)"
            after.append((f"    acc{c} = {call}", si))
    return rewrite, before, after, listed


def stacked(arrays: list) -> np.ndarray:
    """The matrices `arrays` (all of one shape) stacked row-wise, in a recycled buffer when large."""
    first = arrays[0]
    out = buffers.empty((len(arrays) * first.shape[0], first.shape[1]), first.dtype)
    return np.concatenate(arrays, out=out)


def gram(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`a.T @ b` for matrices of as many rows, as the sum of the products of row blocks whose GEMMs have at
    most `PART_MACS` multiply-adds each (one stacked matmul, one reduction over the blocks, and the rows
    left over), so that BLAS runs every GEMM on the calling thread.  The blocks depend on the shapes only."""
    rows, k = a.shape
    c = b.shape[1]
    q = max(1, PART_MACS // max(1, k * c))
    m = rows // q
    if m <= 1:
        return np.matmul(a.T, b) if rows <= q else np.add(np.matmul(a[:q].T, b[:q]), gram(a[q:], b[q:]))
    parts = np.matmul(a[:m * q].reshape(m, q, k).swapaxes(1, 2), b[:m * q].reshape(m, q, c),
                      out=buffers.empty((m, k, c), a.dtype))
    acc = np.add.reduce(parts, 0)
    if m * q < rows:
        acc += np.matmul(a[m * q:].T, b[m * q:])
    return acc
