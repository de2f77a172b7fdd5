"""A While whose condition is `v < N` on an integer loop variable that the body steps by one: a counted loop.

`find(cplan, bplan, n)` recognizes it in a While's cond and body plans and
returns a `Counter`; the generated loop (loop_plan.py) then runs the body
`for t in range(start, end)` instead of evaluating the condition on NumPy
scalars each iteration:

    t0 = int(v0); end = 100                   # end = min(end, t0 + lim) with maximum_iterations
    for t in range(t0, end):
        ...                                    # body steps; reads at index v0 take `t` (substituted)
    if t0 < end: v0 = _ct(end - 1) + s3        # the counter's last step, as the body computed it

The counter `v` must be a rank-0 int32/int64 loop variable, `N` a constant of
its dtype or a rank-0 capture of its dtype (`for i in range(n)` over a
tensor `n`: fixed for the whole loop, read once, `end = int(x1)`), and the
body's result for `v` the step `v + 1` (AddV2 with a constant 1 of the same
dtype).  The iterations are the same: the condition
holds exactly for `start <= t < N`, and `maximum_iterations` caps their
number as the `i >= lim` check did (a negative limit runs none).

When the body uses `v` only as a TensorArray read's index (`TensorListGetItem`,
which takes any integer) and to step it, and nothing saves `v` or its step,
`substitute` is True: the body reads Python's `t` and the step is not computed
per iteration; the loop's output is computed once after the loop, the same
NumPy scalar of the same value and dtype as `v + 1` gave (no overflow: the
last step is `N - 1 + 1`).  Otherwise the body keeps `v` and its step as they
are and only the condition is replaced.  Either way, a read at index `v` from
a captured buffer takes `buffer[t]` directly when the loop's whole range is
inside the buffer (`rd`, checked once before the loop; else the read's kernel,
which raises the read's error), the same view as the kernel returns.

Reads are TensorArray reads `ta.read(v)` and row indexing `x[v]` of a
captured tensor (`StridedSlice(x, Pack(v), ...)` shrinking the first axis:
`x[int(v)]`, as its kernel computes it).  The `Pack` of such an index, read
by nothing else, is not computed (`index_packs`); where the row is not
taken directly, the read's kernel gets `_ix(t)`, the same one-element index
array of the counter's dtype.

Imports `numpy`, `eager.registry` and `eager.tensor_array`.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from eager.registry import get
from eager.tensor_array import GET_ITEM

_INTS = ("int32", "int64")
_STEPS = ("AddV2", "Add")
_ROW_ATTRS = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 1}
_ROW_KERNEL = get("StridedSlice").extra["specialize"](_ROW_ATTRS)       # `x[begin[0]]`
_PACK_KERNEL = get("Pack").extra["specialize"]({"axis": 0})


class Counter(NamedTuple):
    var: int              # the loop variable's index (its value id in both plans)
    stop: object          # N: an int, or the capture's position among the captures (`stop_is_capture`)
    step_index: int       # the body step computing `v + 1`
    one: object           # the step's constant 1 (a NumPy scalar of the counter's dtype)
    scalar_type: type     # the counter's NumPy scalar type
    substitute: bool      # the body reads `t` and the step is computed once after the loop
    stop_is_capture: bool = False

    def end(self) -> str:
        """The expression of the loop's end (before `maximum_iterations` caps it)."""
        return f"int(x{self.stop})" if self.stop_is_capture else str(int(self.stop))


def reads(bplan, var: int, captured) -> dict:
    """{step index: buffer value id} of the body's reads at the counter `var` (TensorArray reads and row
    indexing, module docstring) from a buffer among the `captured` value ids (fixed for the whole loop)."""
    found = {si: step.inputs[0] for si, step in _live_steps(bplan)
             if step.op.type == GET_ITEM.name and len(step.inputs) == 2 and step.inputs[1] == var
             and step.inputs[0] in captured}
    rows = _row_reads(bplan, var)
    found.update({si: bplan.steps[si].inputs[0] for si in rows if bplan.steps[si].inputs[0] in captured})
    return found


def _row_reads(bplan, var: int) -> dict:
    """{step index: Pack step index} of the body's `x[var]` steps (StridedSlice of `Pack(var)` shrinking the
    first axis, with constant end and strides)."""
    packs = {step.outputs[0]: si for si, step in _live_steps(bplan)
             if step.kernel is _PACK_KERNEL and tuple(step.inputs) == (var,) and not step.attrs}
    return {si: packs[step.inputs[1]] for si, step in _live_steps(bplan)
            if step.op.type == "StridedSlice" and step.kernel is _ROW_KERNEL and not step.attrs
            and len(step.inputs) == 4 and step.inputs[1] in packs
            and step.inputs[2] in bplan.consts and step.inputs[3] in bplan.consts
            and dict(step.op.attrs) == _ROW_ATTRS
            and np.dtype(step.op.inputs[0].dtype.as_numpy_dtype).kind != "O"}    # its kernel wraps objects


def index_packs(bplan, var: int, rewritten) -> set:
    """The steps packing the counter into an index that only reads in `rewritten` (which take `t`) use."""
    rows = _row_reads(bplan, var)
    out = set()
    for pi in set(rows.values()):
        v = bplan.steps[pi].outputs[0]
        users = [si for si, step in _live_steps(bplan) if v in step.inputs]
        if (all(si in rewritten and rows.get(si) == pi for si in users)
                and not any(r.kind == "value" and r.vid == v for r in bplan.returns)):
            out.add(pi)
    return out


def fast_read(line: str, buffer: str, step=None, regs_in=(), em=None, dtype=None) -> str:
    """A read's line taking row `t` of `buffer` directly when the loop checked that every index it will
    read is in range (`rd`), the same view as the read's kernel returns; else the kernel's line (a row
    indexing step, given as `step`, then takes `_ix(t)`, the index array `Pack` made, of `dtype`)."""
    if " = " not in line:
        return line
    target, call = line.split(" = ", 1)
    if step is not None and step.kernel is _ROW_KERNEL:
        ix = em.bind("_ix", index_array(dtype), share=True)
        call = f"{em.bind('k', step.kernel, share=True)}({regs_in[0]}, {ix}(t), {regs_in[2]}, {regs_in[3]})"
    return f"{target} = {buffer}[t] if rd else {call}"


def row_reader(plan, step, dtype):
    """`(buffer, i) -> ` the row indexing step's kernel on row `i` (its error for a row out of range)."""
    kernel, end, strides = step.kernel, plan.consts[step.inputs[2]], plan.consts[step.inputs[3]]

    def read(buffer, i):
        return kernel(buffer, np.array([i], dtype), end, strides)
    return read


def index_array(dtype):
    """`t -> np.array([t], dtype)`: the one-element index `Pack` makes of a counter of `dtype`."""
    def ix(t):
        return np.array([t], dtype)
    return ix


def _live_steps(plan):
    return [(si, s) for si, s in enumerate(plan.steps) if not s.noop]


def _int_scalar(t) -> bool:
    return t.dtype.name in _INTS and t.shape.rank == 0


def find(cplan, bplan, n: int) -> Optional[Counter]:
    """The counted-loop description of a While's cond and body plans (module docstring), or None."""
    steps = _live_steps(cplan)
    if len(steps) != 1 or len(cplan.returns) != 1:
        return None
    _, less = steps[0]
    if (less.op.type != "Less" or less.kernel is not np.less or less.attrs or len(less.inputs) != 2
            or cplan.returns[0].kind != "value" or cplan.returns[0].vid != less.outputs[0]):
        return None
    var, limit = less.inputs
    limit_captured = n <= limit < len(cplan.feeds)
    if var >= n or not (limit in cplan.consts or limit_captured) or not all(_int_scalar(t) for t in less.op.inputs):
        return None
    dtype = less.op.inputs[0].dtype
    if less.op.inputs[1].dtype is not dtype:
        return None
    found = _step_of(bplan, var, dtype)
    if found is None:
        return None
    si, one = found
    stop = limit - n if limit_captured else int(np.asarray(cplan.consts[limit]))
    substitute = _substitutable(bplan, var, si, range(n, len(bplan.feeds)))
    return Counter(var, stop, si, one, dtype.as_numpy_dtype, substitute, limit_captured)


def _step_of(bplan, var: int, dtype):
    """`(step index, constant 1)` of the body step computing the counter's next value `var + 1`, or None."""
    ret = bplan.returns[var] if var < len(bplan.returns) else None
    if ret is None or ret.kind != "value" or ret.copy:
        return None
    for si, step in _live_steps(bplan):
        if ret.vid not in step.outputs:
            continue
        if (step.op.type not in _STEPS or step.kernel is not np.add or step.attrs or len(step.inputs) != 2
                or step.inputs[0] != var or step.inputs[1] not in bplan.consts
                or not all(_int_scalar(t) and t.dtype is dtype for t in (*step.op.inputs, *step.op.outputs))):
            return None
        one = np.asarray(bplan.consts[step.inputs[1]])[()]
        return (si, one) if one == 1 else None
    return None


def _substitutable(bplan, var: int, step_index: int, captured) -> bool:
    """The body uses the counter only as read indices and for its step, and returns neither again."""
    step_out = bplan.steps[step_index].outputs[0]
    packs = index_packs(bplan, var, set(reads(bplan, var, captured)))
    for si, step in _live_steps(bplan):
        if si == step_index or si in packs:
            continue
        if step_out in step.inputs:
            return False
        if var in step.inputs and (step.op.type != GET_ITEM.name or list(step.inputs).index(var) != 1
                                   or step.inputs.count(var) != 1):
            return False
    uses = [r for r in bplan.returns if r.kind == "value" and r.vid in (var, step_out)]
    return len(uses) == 1 and uses[0] is bplan.returns[var]
