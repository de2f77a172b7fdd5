"""An RNN-shaped counted While run as one compiled call: its GEMMs and its compiled cell in a numba loop.

After the other rewrites (row_products.py, scratch_products.py,
loop_kernels.py), an RNN's forward loop is, per iteration, four calls from
Python: the step input's product from its block, `h @ Wh` into the scratch,
the compiled `tanh(x + m + b)` cell and the loop's bookkeeping.  Each pays
NumPy's or numba's dispatch (about 1.7 us of `np.dot`'s 4 us at 16x64x64),
more than the arithmetic of the cell.  When the body is exactly that
(`find`), the generated loop (loop_plan.py) runs the iterations in one
compiled function instead:

    tb = t0
    if dl is None and rd and t0 < end:        # no deadline to check per iteration, rows in range
        h = _cl(x0, x1, x2, v1, t0, end, x3)  # None when an operand is not as compiled for: Python loop
        if h is not None: v1 = h; tb = end
    for t in range(tb, end): ...              # the Python loop (none of it when compiled)

Inside, each product is the `cblas_sgemm` call NumPy itself makes for it
(row-major, no transposes, alpha 1, beta 0, the same leading dimensions: the
2-D product of C-contiguous float32 matrices, every dimension >= 2), into
NumPy's own OpenBLAS, found among the process's loaded libraries; the cell is
loop_kernels.py's compiled kernel, called on the same operands.  So the loop
gives the same bits as the Python loop it replaces: `blas()` checks, when it
first finds the library, that its calls match `np.dot`'s and `np.matmul`'s
bits on a few shapes, and is off otherwise (another BLAS, or no library
found: the Python loop runs).  The search runs once per process, when the first
loop that could run compiled is generated, and counts as compile time
(`native.compile_clock`: a step's deadline does not count it, deadline.py).

A loop that saves its iterations for a gradient (loop_plan.py's `hist`) gets
every iteration's state in one stacked array, in the backward walk's order
(row `n - 1 - j` the state after iteration `j`, row `n` a copy of the first
state), and builds the history in Python as the Python loop saves it: per
iteration the next state (a row of the stacked array: a view, which only the
gradient's walk reads), row `t` of the buffer (the view the read returns),
the counter (stepped by the same NumPy add) and the previous state; the
loop's result `h` is a copy of row 0.  The history is a `StackedHistory`
(stacked_history.py) holding the array, from which the compiled walk takes
the saved states without stacking them again.

Scope: a counted loop (counter.py), two loop variables (the counter and the
state `h`), saving nothing or only those four kinds of values, and a body of
exactly: a read of row `t` of a captured buffer, its product with a
captured weight, `h @ W` with a captured `W` (the scratch product), and one
compiled fused kernel reading those products, `h` and captures, whose result
is the next `h`.  The per-run checks (`loop_call`): every operand a C-contiguous,
aligned float32 array of the shapes compiled for.  The compiled loop has no
deadline check, so it runs only when the step has no deadline (deadline.py).

The source holds only names made here; shapes come from the arrays.

Imports `numpy`, `ctypes`, `eager.native`, `generated_source` and siblings.
"""
from __future__ import annotations

import ctypes
from typing import Callable, NamedTuple, Optional

import numpy as np

from eager import native

from .. import generated_source
from . import row_products
from .stacked_history import StackedHistory

_F32 = np.dtype(np.float32)
_SYMBOLS = (("scipy_cblas_sgemm64_", ctypes.c_int64), ("cblas_sgemm64_", ctypes.c_int64),
            ("cblas_sgemm", ctypes.c_int))
_BLAS: list = []                 # [the sgemm ctypes function or None], found once per process
_LOOPS: dict = {}                # (roles, kernel) -> compiled loop
ENABLED = True                   # read when a loop is generated (tests and A/B runs turn it off)


class Spec(NamedTuple):
    state: int            # the state loop variable's index (its value id)
    buffer: int           # capture positions (0-based among the captures): the row buffer,
    w_row: int            # the step input's weight,
    w_state: int          # the state's weight
    roles: tuple          # per fused input: "row", "mm", "h" or a capture position
    fused: Callable       # loop_kernels' wrapper (its `kern`, `want`)
    shapes: tuple         # static (B, I, N, K, H): rows, step input width, its product's, state's, product's
    saves: tuple          # per saved value: "new" (the next h), "read" (row t), "count" (the counter), "h"
    counter: int          # the counter's loop variable
    stepped: bool         # the counter is a loop variable stepped each iteration (not substituted)


def find(bplan, count, n: int, counted: dict, rows: dict, scratch: dict, compiled: dict,
         skipped=()) -> Optional[Spec]:
    """The compiled loop's description of a body (module docstring), or None.  `counted`: the counter's reads;
    `rows`: row_products.find's pairs; `scratch`: scratch_products.find's products; `compiled`: {step index:
    loop_kernels wrapper}; `skipped`: steps the loop does not compute (the counter's index packs)."""
    if count is None or n != 2 or len(rows) != 1 or len(scratch) != 1:
        return None
    if not ENABLED or len(compiled) != 1 or blas() is None:
        return None
    state = 1 - count.var
    (ri, (gi, buf, w_row)), = rows.items()
    (si, (flags, ci)), = scratch.items()
    (ki, fused), = compiled.items()
    live = {j for j, s in enumerate(bplan.steps) if not s.noop} - {count.step_index} - set(skipped)
    if live != {gi, ri, si, ki} or ci != ki or gi not in counted or flags != (False, False):
        return None
    ret = bplan.returns[state]
    step, mm = bplan.steps[ki], bplan.steps[si]
    if ret.kind != "value" or ret.copy or ret.vid != step.outputs[0] or mm.inputs[0] != state:
        return None
    caps = range(n, len(bplan.feeds))
    if mm.inputs[1] not in caps or w_row not in caps or buf not in caps or getattr(fused, "kern", None) is None:
        return None
    row_out, mm_out = bplan.steps[ri].outputs[0], mm.outputs[0]
    roles = []
    for v in step.inputs:
        role = {row_out: "row", mm_out: "mm", state: "h"}.get(v, v - n if v in caps else None)
        if role is None:
            return None
        roles.append(role)
    if roles.count("row") != 1 or roles.count("mm") != 1:
        return None
    shapes = _shapes(bplan.steps[ri], mm)
    kinds = {step.outputs[0]: "new", bplan.steps[gi].outputs[0]: "read", count.var: "count", state: "h"}
    saves = tuple(kinds.get(r.vid) if r.kind == "value" else None for r in bplan.returns[n:])
    if shapes is None or None in saves or not _fits(fused, roles, shapes):
        return None
    return Spec(state, buf - n, w_row - n, mm.inputs[1] - n, tuple(roles), fused, shapes, saves, count.var,
                not count.substitute)


def _fits(fused, roles, shapes) -> bool:
    """Whether the kernel was compiled for the shapes the loop hands it (numba checks no index): the products
    and `h` as they are, its result the next `h` (so `h @ Wh` keeps its shape)."""
    b, i, n, k, h = shapes
    wanted = {"row": (b, n), "mm": (b, h), "h": (b, k)}
    return (h == k and fused.full == (b, k)
            and all(fused.want[j] == wanted[r] for j, r in enumerate(roles) if isinstance(r, str)))


def _shapes(row_step, mm_step) -> Optional[tuple]:
    """(B, I, N, K, H) of `x[t] @ Wx` (B x I @ I x N) and `h @ Wh` (B x K @ K x H), float32, every
    dimension >= 2 (NumPy's GEMM call, not GEMV), or None."""
    dims = []
    for t in (*row_step.op.inputs, *mm_step.op.inputs):
        d = t.shape.dims
        if t.dtype.name != "float32" or d is None or len(d) != 2 or any(x is None or x < 2 for x in d):
            return None
        dims.append(tuple(int(x) for x in d))
    (b, i), (i2, n), (b2, k), (k2, h) = dims
    return (b, i, n, k, h) if (i, b, k) == (i2, b2, k2) else None


def emit(spec: Spec, em, cap_regs: list, one) -> list:
    """The lines before a counted loop's `for t in range(tb, end)` (module docstring); `one`: the counter's
    step constant."""
    saving = bool(spec.saves)
    call = em.bind("_cl", loop_call(spec, saving))
    caps = ", ".join(cap_regs[j] for j in _cap_args(spec))
    h, c = f"v{spec.state}", f"v{spec.counter}"
    args = f"{cap_regs[spec.buffer]}, {cap_regs[spec.w_row]}, {cap_regs[spec.w_state]}, {h}, t0, end"
    lines = ["tb = t0",
             "if dl is None and rd and t0 < end:",
             f"    hc = {call}({args}{', ' + caps if caps else ''})"]
    if not saving:
        return lines + [f"    if hc is not None: {h} = hc; tb = end"]
    # the history as the Python loop saves it: row t of the states (hc, stacked), the row read, the counter
    buf = cap_regs[spec.buffer]
    items = {"new": "hc[end - 1 - t]", "read": f"{buf}[t]", "count": c, "h": h}
    saved = ", ".join(items[k] for k in spec.saves)
    step = f"; {c} = {c} + {em.bind('s', one)}" if spec.stepped else ""
    return lines + ["    if hc is not None:",
                    f"        hist = {em.bind('_sh', StackedHistory)}(hc, {buf}, t0, {spec.saves!r})",
                    "        for t in range(t0, end):",
                    f"            hist.append(({saved},)); {h} = hc[end - 1 - t]{step}",
                    f"        {h} = hc[0].copy(); i = end - t0; tb = end"]


def _cap_args(spec: Spec) -> list:
    return [r for r in spec.roles if not isinstance(r, str)]


def loop_call(spec: Spec, saving: bool = False) -> Callable:
    """`call(buffer, w_row, w_state, h, t0, end, *captures)`: the compiled loop's result `h` (with `saving`,
    every iteration's stacked in reverse and the first state after them: module docstring), or None when
    an operand is not a C-contiguous aligned float32 array of the compiled shapes."""
    run = _compiled(spec.roles, spec.fused.kern)
    b, i, n, k, h = spec.shapes
    want = spec.fused.want
    cap_want = tuple(want[j] for j, r in enumerate(spec.roles) if not isinstance(r, str))
    fixed = ((i, n), (k, h), (b, k))

    def call(buffer, w_row, w_state, state, t0, end, *caps):
        if not (_ok(buffer) and buffer.shape[1:] == (b, i)
                and all(_ok(a) and a.shape == s for a, s in zip((w_row, w_state, state), fixed))
                and all(_ok(a) and a.shape == s for a, s in zip(caps, cap_want))):
            return None
        block = np.empty((min(row_products.MAX_BLOCK, end - t0), b, n), _F32)
        if saving:
            states = np.empty((end - t0 + 1, b, h), _F32)
            states[end - t0] = state
        else:
            states = np.empty((2, b, h), _F32)
        last = run(buffer, w_row, w_state, state, t0, end, block, np.empty((b, h), _F32), states, saving, *caps)
        return states if saving else last.copy()
    # numba compiles on the first call: here, while the plan is built, not in the loop's first run
    call(np.zeros((1, b, i), _F32), *(np.zeros(s, _F32) for s in fixed), 0, 1,
         *(np.zeros(s, _F32) for s in cap_want))
    return call


def _ok(a) -> bool:
    return type(a) is np.ndarray and a.dtype == _F32 and a.flags.c_contiguous and a.flags.aligned


def _compiled(roles: tuple, kern) -> Callable:
    key = (roles, kern)
    run = _LOOPS.get(key)
    if run is None:
        caps = [f"c{j}" for j, r in enumerate(roles) if not isinstance(r, str)]
        names = {"row": "blk[t - base]", "mm": "m", "h": "h"}
        args = [names.get(r, f"c{j}") if isinstance(r, str) else f"c{j}" for j, r in enumerate(roles)]
        src = _SOURCE.format(caps="".join(", " + c for c in caps), args=", ".join(args))
        ns = {"sgemm": blas(), "kern": kern, "f32": np.float32}
        generated_source.load(src, "compiled-loop", ns)
        run = _LOOPS.setdefault(key, native.jit(ns["run"]))
    return run


# the step input's products a block of rows at a time, then per iteration `h @ Wh` into `m` and the cell
# into a row of `hs`: all of them in reverse (`rev`: a history), or two in turn (the cell may read `h`)
_SOURCE = '''
def run(buf, wx, wh, h, t0, end, blk, m, hs, rev{caps}):
    b = buf.shape[1]; i = buf.shape[2]; n = wx.shape[1]; k = wh.shape[0]; hh = wh.shape[1]
    one = f32(1.0); zero = f32(0.0)
    nb = blk.shape[0]
    base = t0 - nb
    for t in range(t0, end):
        if t - base >= nb:
            base = t
            for r in range(min(nb, end - t)):
                sgemm(101, 111, 111, b, n, i, one, buf[t + r].ctypes.data, i, wx.ctypes.data, n, zero,
                      blk[r].ctypes.data, n)
        sgemm(101, 111, 111, b, hh, k, one, h.ctypes.data, k, wh.ctypes.data, hh, zero, m.ctypes.data, hh)
        o = hs[hs.shape[0] - 2 - (t - t0)] if rev else hs[(t - t0) % 2]
        kern({args}, o)
        h = o
    return h
'''


def blas():
    """NumPy's own `cblas_sgemm` as a ctypes function numba can call, or None (module docstring)."""
    if not _BLAS:
        if native.available():
            with native.compile_clock():      # once per process, like a first compile: no step deadline counts it
                _BLAS.append(_find_blas())
        else:
            _BLAS.append(None)
    return _BLAS[0]


def _find_blas():
    for path in _loaded_blas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name, integer in _SYMBOLS:
            fn = getattr(lib, name, None)
            if fn is None:
                continue
            fn.restype = None
            fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, integer, integer, integer, ctypes.c_float,
                           ctypes.c_void_p, integer, ctypes.c_void_p, integer, ctypes.c_float, ctypes.c_void_p,
                           integer]
            return fn if _same_bits(fn) else None
    return None


def _loaded_blas_paths() -> list:
    """The shared libraries with 'blas' in their names that this process has loaded (Linux), NumPy's first."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1].lower()}
    except OSError:
        return []
    return sorted((p for p in paths if p.startswith("/")), key=lambda p: ("numpy" not in p, p))


def _same_bits(fn) -> bool:
    """Whether `fn` called as the compiled loops call it gives `np.dot`'s and `np.matmul`'s bits: `a @ b`
    and (compiled_walk.py) `a @ w.T` of C-contiguous matrices."""
    rng = np.random.default_rng(0)
    for m, k, n in ((16, 64, 64), (16, 32, 64), (7, 33, 5), (64, 128, 96), (2, 2, 2)):
        a = rng.standard_normal((m, k)).astype(_F32)
        b = rng.standard_normal((k, n)).astype(_F32)
        w = np.ascontiguousarray(b.T)
        got, got_t = np.empty((m, n), _F32), np.empty((m, n), _F32)
        fn(101, 111, 111, m, n, k, 1.0, a.ctypes.data, k, b.ctypes.data, n, 0.0, got.ctypes.data, n)
        fn(101, 111, 112, m, n, k, 1.0, a.ctypes.data, k, w.ctypes.data, k, 0.0, got_t.ctypes.data, n)
        if not (np.array_equal(got, np.dot(a, b)) and np.array_equal(got, np.matmul(a, b))
                and np.array_equal(got_t, np.dot(a, w.T)) and np.array_equal(got_t, np.matmul(a, w.T))):
            return False
    return True
