"""An RNN's backward walk (grad_loop.py) run as one compiled call: its fused kernel and carried GEMM in numba.

With the weight sums deferred (summed_products.py) and the carried product in
a scratch (scratch_products.py), an RNN's walk is, per iteration, the fused
`dz = dh * (1 - h^2)` kernel, `dh = dz @ Wh.T` and the appends keeping the
operands of the sums; the calls' dispatch costs more than their arithmetic at
16x64.  When the walk is exactly that (`find`), the generated walk runs

    tw = n
    if n > 0:
        S = _cws(hist, n, 0)                  # the saved h of each iteration, stacked in walk order
        if S is not None:
            d0, DZ = _cw(S, d0, x2)           # all the iterations in one compiled call
            L10 = [DZ.reshape(-1, 64)]; L6 = [_cwl(hist, n, 1)]; ...; tw = 0
    for t in range(tw - 1, -1, -1): ...      # the Python walk (none of it when compiled)

and the sums after the walk read each list's one array, already stacked in
walk order (`after_lines`): `DZ` itself, and the saved values stacked once.
When the forward loop ran compiled, its history (stacked_history.py) holds
the saved states already stacked in walk order: the walk's `S` and the
previous states are views of that array, the rows of the step inputs one
reversed copy.  Inside,
the fused kernel is loop_kernels.py's compile of the same program (add,
subtract, multiply, negative, square: each operation NumPy's IEEE operation
in float32, no fast-math, so the same bits as NumPy's kernel) and the product
is the `cblas_sgemm` call NumPy makes for `np.dot(dz, Wh.T)` (a transposed
C-contiguous operand: `CblasTrans`), into NumPy's own OpenBLAS
(compiled_loop.blas, which checks those bits).  Same bits as the Python walk.

Scope: one carried cotangent (`d0`), no extra stacks, one fused step reading
one saved value, `d0` and scalar constants; one carried product `dz @ W.T`
of C-contiguous float32 matrices (W captured) whose result is `d0`'s next
value, of `d0`'s shape; every capture cotangent a deferred sum whose operands
are `dz` or saved values.  The run-time checks (`_stacked`, `walk_call`):
arrays of the static shapes, float32, C-contiguous.

Imports `numpy`, `eager.native`, `generated_source` and siblings.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional

import numpy as np

from eager import native

from .. import generated_source
from . import compiled_loop, loop_kernels, summed_products
from .stacked_history import StackedHistory

_F32 = np.dtype(np.float32)
_WALKS: dict = {}                 # (roles, kernel) -> compiled walk
ENABLED = True                    # read when a walk is generated (tests and A/B runs turn it off)


class Spec(NamedTuple):
    saved: int            # the saved value's index in a history entry (`hist[t][saved]`)
    roles: tuple          # per fused input: "s", "d" or a NumPy float32 scalar (a constant)
    kern: Callable        # the compiled fused kernel
    weight: int           # the carried product's weight: its capture index
    shape: tuple          # (B, H): d0's, dz's and the saved value's shape
    k: int                # the weight's rows (the product is B x H @ H x K with K == H)
    lists: dict           # {list name: "dz" or a saved index}: the deferred sums' operand lists


def find(plan, feeds, n_dy: int, n_extra: int, deferred: dict, carried: dict, listed: dict) -> Optional[Spec]:
    """The compiled walk's description of a VJP plan (module docstring), or None.  `carried`: scratch_products'
    carried products; `deferred`: summed_products' terms; `listed`: {operand value id: list name}."""
    if not ENABLED or n_dy != 1 or n_extra or len(carried) != 1 or compiled_loop.blas() is None:
        return None
    if len(deferred) != len(plan.returns) - 1:
        return None
    (pi, (flags, fi)), = carried.items()
    live = {j for j, s in enumerate(plan.steps) if not s.noop}
    if flags != (False, True) or live != {pi, fi} | {si for si, _ in deferred.values()}:
        return None
    fused, product = plan.steps[fi], plan.steps[pi]
    dz = fused.outputs[0]
    saved = {1 + j: i for j, (kind, i) in enumerate(feeds) if kind == 1}
    caps = {1 + j: i for j, (kind, i) in enumerate(feeds) if kind == 0}
    if product.inputs[0] != dz or product.inputs[1] not in caps or plan.returns[0].vid != product.outputs[0]:
        return None
    found = loop_kernels.compile_kernel(fused, tanh=False)
    if found is None:
        return None
    kern, program, shapes, _ = found
    if program.consts or len(program.outputs) != 1:
        return None
    roles = []
    for v, slot in zip(fused.inputs, program.input_slots):
        if v == 0 or v in saved:
            roles.append("d" if v == 0 else "s")
        elif v in plan.consts and np.shape(plan.consts[v]) == () and not shapes[slot]:
            roles.append(_F32.type(plan.consts[v]))
        else:
            return None
    s_inputs = [v for v in fused.inputs if v in saved]
    lists = {}
    for v, name in listed.items():
        if v != dz and v not in saved:
            return None
        lists[name] = "dz" if v == dz else saved[v]
    full = shapes[program.outputs[0]]
    dims = product.op.inputs[1].shape.dims
    if (roles.count("d") != 1 or len(s_inputs) != 1 or len(full) != 2 or dims is None
            or any(shapes[sl] != full for sl, r in zip(program.input_slots, roles) if isinstance(r, str))
            or tuple(dims) != (full[1], full[1]) or product.op.inputs[1].dtype.name != "float32"):
        return None
    return Spec(saved[s_inputs[0]], tuple(roles), kern, caps[product.inputs[1]], tuple(full), full[1], lists)


def emit(spec: Spec, em) -> list:
    """The lines before the walk's `for t in range(tw - 1, -1, -1)` (module docstring)."""
    stack = em.bind("_cws", _stacked)
    call = em.bind("_cw", walk_call(spec))
    rows = em.bind("_cwl", walk_rows)
    fill = [f"{name} = [DZ.reshape(-1, {spec.shape[1]})]" if what == "dz" else f"{name} = [{rows}(hist, n, {what})]"
            for name, what in spec.lists.items()]
    return ["tw = n",
            "if n > 0:",
            f"    S = {stack}(hist, n, {spec.saved}, {spec.shape!r})",
            "    if S is not None:",
            f"        d0, DZ = {call}(S, d0, x{spec.weight})",
            "        if DZ is not None:",
            *(f"            {line}" for line in fill),
            "            tw = 0"]


def after_lines(spec: Spec, after: list) -> list:
    """summed_products' lines after the walk, where each list holds its operand already stacked when the walk
    ran compiled (`tw == 0`): the same rows in the same order, without stacking again."""
    out = []
    for text, si in after:
        for name in spec.lists:
            head = f"    S{name[1:]} = "
            if text.startswith(head):
                text = f"{head}{name}[0] if tw == 0 else {text[len(head):]}"
        out.append((text, si))
    return out


def walk_rows(hist, n: int, i: int) -> np.ndarray:
    """`hist[t][i]` for t = n-1 ... 0 (matrices) stacked row-wise: from the compiled loop's stacked states when
    the history holds them (stacked_history.py), else by copying the rows."""
    if hist.__class__ is StackedHistory:
        rows = hist.walk_rows(i, n)
        if rows is not None:
            return rows.reshape(-1, rows.shape[-1])
    return summed_products.stacked([hist[t][i] for t in range(n - 1, -1, -1)])


def _stacked(hist, n: int, i: int, shape: tuple):
    """`hist[t][i]` for t = n-1 ... 0 stacked, or None unless each is a float32 array of `shape`."""
    if hist.__class__ is StackedHistory:
        rows = hist.walk_rows(i, n)
        if rows is not None and rows.dtype == _F32 and rows.shape[1:] == shape and rows.flags.c_contiguous:
            return rows
    rows = [hist[t][i] for t in range(n - 1, -1, -1)]
    if not all(r.__class__ is np.ndarray and r.shape == shape and r.dtype == _F32 for r in rows):
        return None
    return np.stack(rows)


def walk_call(spec: Spec) -> Callable:
    """`call(S, d0, w)`: `(d0 after the walk, DZ)`, or `(d0, None)` when an operand is not a C-contiguous
    float32 array of the compiled shapes (the Python walk runs)."""
    run = _compiled(spec)
    scalars = [r for r in spec.roles if not isinstance(r, str)]
    b, h = spec.shape

    def call(stack, d0, w):
        if not (_ok(d0, (b, h)) and _ok(w, (spec.k, h))):
            return d0, None
        dz = np.empty(stack.shape, _F32)
        return run(stack, d0, w, dz, np.empty((b, spec.k), _F32), *scalars), dz
    # numba compiles on the first call: here, while the plan is built
    call(np.zeros((1, b, h), _F32), np.zeros((b, h), _F32), np.zeros((spec.k, h), _F32))
    return call


def _ok(a, shape) -> bool:
    return a.__class__ is np.ndarray and a.dtype == _F32 and a.shape == shape and a.flags.c_contiguous


def _compiled(spec: Spec) -> Callable:
    key = (tuple(r if isinstance(r, str) else "c" for r in spec.roles), spec.kern)
    run = _WALKS.get(key)
    if run is None:
        names = {"s": "S[j]", "d": "d"}
        args, scalars = [], []
        for j, r in enumerate(spec.roles):
            if not isinstance(r, str):
                scalars.append(f"c{j}")
            args.append(names[r] if isinstance(r, str) else f"c{j}")
        src = _SOURCE.format(scalars="".join(", " + c for c in scalars), args=", ".join(args))
        ns = {"sgemm": compiled_loop.blas(), "kern": spec.kern, "f32": np.float32}
        generated_source.load(src, "compiled-walk", ns)
        run = _WALKS.setdefault(key, native.jit(ns["walk"]))
    return run


# per iteration (walk order): the fused kernel into DZ[j], then dz @ W.T (NumPy's call for a transposed
# C-contiguous operand) into the scratch m, which is the next iteration's d
_SOURCE = '''
def walk(S, d, w, DZ, m{scalars}):
    b = m.shape[0]; k = m.shape[1]; h = w.shape[1]
    one = f32(1.0); zero = f32(0.0)
    for j in range(S.shape[0]):
        kern({args}, DZ[j])
        sgemm(101, 111, 112, b, k, h, one, DZ[j].ctypes.data, h, w.ctypes.data, h, zero, m.ctypes.data, k)
        d = m
    return d
'''
