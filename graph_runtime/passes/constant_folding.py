"""Constant folding: ops whose value is known at compile time become `Const` ops.

An op folds when it is pure (not stateful, no subgraph bodies, not a
placeholder) and either

1. every data input is a `Const` (not a preserved/fed one): its registry kernel
   runs now, exactly as the executor would run it; or
2. shape inference already knows every output value (`Shape`, `Size`, `Rank`
   of a fully known static shape, and the small shape arithmetic inference
   folds).  Such a value rests on the *static shape* of an input, which is only
   guaranteed if the op producing that input succeeds at run time (e.g.
   `reshape(x, [3])` on an `x` of unknown length has static shape (3,) and
   raises on 2 elements).  So the new `Const` keeps a control edge to the
   producer of every non-constant input: the check still runs, at run time
   (TensorFlow's reshape bug is exactly a dropped check of this kind).  The
   dependency pass removes the edge when the producer runs anyway.

Never folded: stateful ops (random, reads, assigns, prints, asserts),
placeholders, control flow, preserved multi-output ops, and outputs bigger
than `fold_size_limit` elements (default 1e5; `SessionConfig(pass_options=
{"fold_size_limit": n})`) unless they are no bigger than the inputs (so a
`Fill`/`BroadcastTo`/`Tile` of a scalar never balloons the graph).  The size
is judged on the output's static shape BEFORE the kernel runs (a 100-byte
GraphDef may ask for `fill([20000, 20000])`): an output whose size is unknown
is left to run time too, where it obeys the same memory rules as any op.
A kernel that raises is left in place: the error surfaces at run time, where
the unoptimized graph raises it.  A folded `Const` inherits the control inputs
of the op and of the constants it consumed (TensorFlow does the same).

Imports sibling pass modules, `eager.shape` and NumPy.
"""
from __future__ import annotations

import numpy as np

from eager.shape import TensorShape

from .core import GraphPass, PassContext, make_stats, register_pass
from .op_keys import has_subgraphs, same_items
from .rewriter import Rewriter, is_stateful

DEFAULT_FOLD_SIZE_LIMIT = 100_000
_NEVER = frozenset({"Const", "Placeholder", "PlaceholderWithDefault", "NoOp"})


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _foldable(op) -> bool:
    return (op._opdef.name not in _NEVER and op._outputs and not is_stateful(op) and not has_subgraphs(op))


def _as_value(v, spec_dtype):
    """Kernel output as an ndarray of the inferred dtype, or None when it cannot be trusted as such."""
    a = np.asarray(v)
    want = spec_dtype.as_numpy_dtype
    if spec_dtype.is_string:
        return a if a.dtype == object or a.dtype.kind in "SU" else None
    if a.dtype != np.dtype(want):
        return None
    return a


def fold_constants(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    limit = int(ctx.option("fold_size_limit", DEFAULT_FOLD_SIZE_LIMIT))
    for op in graph._ops:
        if not _foldable(op) or (ctx.preserve and rw.preserved(op) and len(op._outputs) > 1):
            rw.copy(op)
            continue
        ins = rw.inputs(op)
        in_values = [rw.const_value(t) for t in ins]
        in_size = sum(int(np.size(v)) for v in in_values if v is not None)
        values = None
        guards: list = []
        if all(v is not None for v in in_values):
            # the size is checked before the kernel runs: a tiny graph may ask for a huge Fill
            too_big = _too_big(op, ins, rw, limit, in_size)
            values = None if too_big else _run_kernel(op, in_values, rw)
            reason = "kernel"
        else:
            if same_items(ins, op._inputs):
                # the inputs are the op's own (a probing Rewriter): inference would give its outputs' specs
                specs = [o.spec() for o in op._outputs]
            else:
                try:
                    specs = rw.infer(op._opdef, ins, op._attrs)
                except Exception:   # noqa: BLE001 - leave it to run time
                    specs = None
            if specs is not None and specs and all(s.value is not None for s in specs):
                values = [_as_value(s.value, s.dtype) for s in specs]
                if any(v is None for v in values):
                    values = None
                # keep the producers' run-time checks (a fed producer does not run: the executor's
                # pruning stops at fed tensors, and a fed value's shape is checked when fed)
                guards = [t._op for t, v in zip(ins, in_values) if v is None]
                reason = "static value"
        if values is None or any(v.size > limit and v.size > in_size for v in values):
            rw.copy(op)
            continue
        ctrl = list(rw.controls(op))
        for t in ins:
            if rw.const_value(t) is not None:
                ctrl.extend(t._op._control_inputs)
        ctrl = tuple(dict.fromkeys(ctrl + guards))
        keep_name = rw.preserved(op)
        outs = [rw.const(v, like=op, control_inputs=ctrl, name=op._name if keep_name else None)
                for v in values]
        if keep_name:
            new = outs[0]._op
            rw._origin[id(new)] = op
            rw._t[id(op._outputs[0])] = outs[0]
            rw._ctrl[id(op)] = (new,)
            rw._count(reason)
        else:
            rw.replace(op, outs, note=reason)
    out = rw.finish()
    return out, make_stats("constant_folding", graph, out, rw)


def _too_big(op, ins, rw, limit: int, in_size: int) -> bool:
    """Whether an output of `op` (on constant inputs `ins`) may exceed `limit` elements and its inputs' size:
    judged on the static shapes (refined by inference on the constants), an unknown size counting as too big."""
    shapes = [o._shape for o in op._outputs]
    if not all(s.is_fully_defined() for s in shapes):
        try:
            shapes = [TensorShape(s.shape) for s in rw.infer(op._opdef, ins, op._attrs)]
        except Exception:   # noqa: BLE001 - the error belongs to run time
            return True
    for s in shapes:
        n = s.num_elements()
        if n is None or (n > limit and n > in_size):
            return True
    return False


def _run_kernel(op, in_values, rw):
    try:
        with np.errstate(all="ignore"):
            res = op._opdef.kernel(*in_values, **op._attrs)
    except Exception:   # noqa: BLE001 - the error belongs to run time
        return None
    outs = [res] if len(op._outputs) == 1 else list(res)
    if len(outs) != len(op._outputs):
        return None
    values = []
    for v, o in zip(outs, op._outputs):
        a = _as_value(v, o._dtype)
        if a is None or not o._shape.is_compatible_with(a.shape):
            return None
        if any(isinstance(x, np.ndarray) and np.shares_memory(a, x) for x in in_values):
            a = a.copy()    # never alias another constant's buffer (kernels may return views)
        values.append(a)
    return values


CONSTANT_FOLDING = register_pass(GraphPass("constant_folding", fold_constants,
                                           "Evaluate pure ops whose inputs (or static values) are known."))
