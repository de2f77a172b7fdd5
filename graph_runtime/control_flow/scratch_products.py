"""A While body's matrix product that only a fused kernel reads, computed into one scratch buffer per loop run.

An RNN's body computes `h @ Wh` and hands it to the fused `tanh(x + m + b)`
kernel, which allocates its own result; the product is dead afterwards.  The
generated loop (loop_plan.py) then writes

    sc0 = _empty((16, 64), _dt)                    # once per loop run, before the loop
    ...
    r2 = _dot(v1, x2, sc0)                         # the product's line: into the scratch
    r2 = k7(r1, r2, x3)                            # the fused kernel (unchanged)
    if r2.base is not None: r2 = r2.copy()         # its result never holds the scratch

`np.dot` with `out=` skips `np.matmul`'s ufunc machinery and the result's
allocation (about 0.8 us of a 4 us product at these sizes).  Same bits for 2-D
float operands with every dimension >= 2: both make the same GEMM call (or
the same SYRK call for `a.T @ a`), and since NumPy 2.3 (numpy/numpy#23752)
matmul, like dot, copies an operand BLAS cannot take instead of running its
own loop on it; with an older NumPy nothing changes.  A fused kernel's
outputs are arrays it allocates (fusion/numpy_backend.py), but a group ending
in an opaque op may return a view of an input: a result that is a view is
copied, so no value that outlives the iteration shares the scratch.

`find(plan)` returns {product step index: (transposes, consumer step index)}
for products statically known to be such matrices, read by exactly one
single-output `FusedElementwise` step and neither returned nor saved.

A While gradient's backward walk (grad_loop.py) carries `dh = dz @ Wh.T` to
the next iteration, where only the fused `dh * (1 - h^2)` kernel reads it:
`find_carried` finds such products (the next value of a carried variable that
one fused step reads, before the product), and the walk computes them into one
scratch too: the previous value in it is dead when the product overwrites it,
and the last one is returned as the start's cotangent (nothing writes the
scratch after the walk).

Imports `numpy` and `eager.ops.linalg`.
"""
from __future__ import annotations

import numpy as np

from eager.ops.linalg import TRANSPOSED_PRODUCTS

DOT_IS_MATMUL = np.lib.NumpyVersion(np.__version__) >= "2.3.0"
_FLOATS = ("float32", "float64")


def product_flags(step):
    """The transposes `(ta, tb)` of a 2-D product step whose operands and result are statically float
    matrices with every dimension >= 2 (so `np.dot` makes the GEMM call `np.matmul` makes), or None."""
    if step.noop or step.attrs or len(step.inputs) != 2 or len(step.outputs) != 1:
        return None
    flags = (False, False) if step.kernel is np.matmul else TRANSPOSED_PRODUCTS.get(step.kernel)
    if flags is None:
        return None
    tensors = (*step.op.inputs, *step.op.outputs)
    dtype = tensors[0].dtype
    for t in tensors:
        dims = t.shape.dims
        if (t.dtype is not dtype or dtype.name not in _FLOATS or dims is None or len(dims) != 2
                or any(d is None or d < 2 for d in dims)):
            return None
    return flags


def _readers(plan) -> dict:
    """{value id: [indices of the steps reading it]}."""
    readers: dict = {}
    for si, step in enumerate(plan.steps):
        if not step.noop:
            for v in step.inputs:
                readers.setdefault(v, []).append(si)
    return readers


def find(plan, skip=()) -> dict:
    """{product step index: (transposes, consumer step index)} (module docstring); steps in `skip` (computed
    another way) are neither products nor consumers here."""
    if not DOT_IS_MATMUL:
        return {}
    readers = _readers(plan)
    returned = {r.vid for r in plan.returns if r.kind == "value"}
    found = {}
    for si, step in enumerate(plan.steps):
        flags = None if si in skip else product_flags(step)
        if flags is None:
            continue
        v = step.outputs[0]
        users = readers.get(v, [])
        if v in returned or len(users) != 1:
            continue
        consumer = plan.steps[users[0]]
        if (users[0] not in skip and consumer.op.type == "FusedElementwise" and len(consumer.outputs) == 1
                and list(consumer.inputs).count(v) == 1):
            found[si] = (flags, users[0])
    return found


def rewrites(plan, em, skip=(), found=None) -> tuple:
    """`(rewrite, scratch lines)`: the `emit_steps` rewrites of the products and their consumers, and the
    lines allocating the scratch buffers before the loop; `found`: the products (default `find(plan, skip)`)."""
    rewrite: dict = {}
    scratch: list = []
    for j, (si, (flags, ci)) in enumerate((find(plan, skip) if found is None else found).items()):
        out = plan.steps[si].op.outputs[0]
        shape = tuple(int(d) for d in out.shape.dims)
        sc = f"sc{j}"
        scratch.append(f"{sc} = {em.bind('_empty', np.empty, share=True)}({shape!r}, "
                       f"{em.bind('_dt', out.dtype.as_numpy_dtype, share=True)})")

        def product(line, regs_in, targets, sc=sc, flags=flags, si=si):
            a, b = (f"{x}.T" if t else x for x, t in zip(regs_in, flags))
            return [(f"{targets[0]} = {em.bind('_dot', np.dot, share=True)}({a}, {b}, {sc})", si)]

        def consumer(line, regs_in, targets, ci=ci):
            lines = [(line, ci)]
            if targets and targets[0] != "_":
                lines.append((f"if {targets[0]}.base is not None: {targets[0]} = {targets[0]}.copy()", ci))
            return lines
        rewrite[si], rewrite[ci] = product, consumer
    return rewrite, scratch


def find_carried(plan, n_vars: int, skip=()) -> dict:
    """{product step index: (transposes, consumer step index)} for a backward walk's products that are only
    the next value of a carried variable `j < n_vars` (feed value id `j`, `plan.returns[j]`), when that
    variable is read by exactly one single-output `FusedElementwise` step, before the product: its previous
    value (the scratch) is dead by the time the product overwrites it (grad_loop.py)."""
    if not DOT_IS_MATMUL:
        return {}
    readers = _readers(plan)
    returned: dict = {}
    for r in plan.returns:
        if r.kind == "value":
            returned[r.vid] = returned.get(r.vid, 0) + 1
    producer = {v: si for si, step in enumerate(plan.steps) if not step.noop for v in step.outputs}
    found = {}
    for j, r in enumerate(plan.returns[:n_vars]):
        si = producer.get(r.vid) if r.kind == "value" else None
        if si is None or si in skip or returned[r.vid] != 1 or readers.get(r.vid) or j in returned:
            continue
        flags = product_flags(plan.steps[si])
        users = readers.get(j, [])
        if flags is None or len(users) != 1 or users[0] in skip or users[0] > si:
            continue
        consumer = plan.steps[users[0]]
        if (consumer.op.type == "FusedElementwise" and len(consumer.outputs) == 1
                and list(consumer.inputs).count(j) == 1):
            found[si] = (flags, users[0])
    return found
