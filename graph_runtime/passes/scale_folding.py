"""Scale folding (Grappler's FoldMultiplyIntoConv): fold a constant scale into constant weights.

    Conv2D(x, W) * c   -> Conv2D(x, W * c)      c: scalar or per output channel
    MatMul(x, W) * c   -> MatMul(x, W * c)      c: scalar or per output column
    Conv2D(x * c, W)   -> Conv2D(x, W * c)      c: scalar
    MatMul(x * c, W)   -> MatMul(x, W * c)      c: scalar
    Conv2D(Transpose(x * c), W) -> Conv2D(Transpose(x), W * c)    c: scalar

The last form is Grappler's: the multiply may sit behind a chain of
value-preserving ops (Transpose, Reshape, Identity), each used only by the
next; the scale must be a scalar constant of the weights' dtype (a scalar
commutes with any reordering of the data, a per-channel scale would not).

Only when `W` and `c` are (non-preserved) constants of the same dtype, `c`
is finite and non-zero (so `inf * 0`-style NaNs cannot appear or vanish), the
multiply does not broadcast its other operand (its static output shape is the
conv/matmul's, resp. `x`'s) and the intermediate has no other consumer (else
the rewrite would add work), and the two ops are on the same device.  The new
weights are computed now, once.  This is
not bitwise exact (rounding happens in a different place), like Grappler's.

Imports sibling pass modules and NumPy.
"""
from __future__ import annotations

import numpy as np

from .core import GraphPass, PassContext, make_stats, register_pass
from .op_keys import has_subgraphs
from .rewriter import Rewriter, is_stateful

_SCALED = frozenset({"Conv2D", "MatMul"})
_REORDERING = frozenset({"Transpose", "Reshape", "Identity"})     # Grappler's value-preserving chain


def _scale_ok(c) -> bool:
    return c is not None and c.dtype.kind == "f" and c.size > 0 and bool(np.all(np.isfinite(c))) and \
        bool(np.all(c != 0))


def _channel_scale(op, w, c):
    """c reshaped to multiply W's output channels, or None when c is not per output channel."""
    if c.ndim > len(op._outputs[0]._shape._dims or ()) or any(d != 1 for d in c.shape[:-1]):
        return None
    flat = c.reshape(-1)
    if op._opdef.name == "Conv2D":
        n_out = w.shape[-1]
        return flat if flat.size in (1, n_out) else None
    if w.ndim != 2:
        return None
    tb = bool(op._attrs.get("transpose_b"))
    n_out = w.shape[0] if tb else w.shape[1]
    if flat.size not in (1, n_out):
        return None
    return flat.reshape(-1, 1) if tb else flat


def fold_scales(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        t = op._opdef.name
        if t not in ("Mul", "Conv2D", "MatMul") or is_stateful(op) or has_subgraphs(op):
            rw.copy(op)
            continue
        ins = rw.inputs(op)
        new = _fold_after(rw, op, ins) if t == "Mul" else _fold_before(rw, op, ins)
        if new is not None:
            rw.replace(op, [new], note=("scale_after_" if t == "Mul" else "scale_before_") + new._op._opdef.name)
        else:
            rw.copy(op, inputs=ins)
    out = rw.finish()
    return out, make_stats("scale_folding", graph, out, rw)


def _fold_after(rw, op, ins):
    """Mul(Conv2D/MatMul(x, W), c) (either order)."""
    for a, b in ((ins[0], ins[1]), (ins[1], ins[0])):
        prod = a._op
        c = rw.const_value(b)
        if (prod._opdef.name not in _SCALED or a._index != 0 or rw.is_barrier(a) or prod._control_inputs
                or prod._device != op._device
                or not _scale_ok(c) or not rw.single_use(a) or c.dtype != a._dtype.as_numpy_dtype):
            continue
        if a._shape._dims is None or tuple(op._outputs[0]._shape._dims or ()) != tuple(a._shape._dims):
            continue
        w = rw.const_value(prod._inputs[1])
        if w is None:
            continue
        scale = _channel_scale(prod, w, c)
        if scale is None:
            continue
        w_new = rw.const(np.multiply(w, scale).astype(w.dtype, copy=False), like=prod)
        return rw.emit(prod._opdef, [prod._inputs[0], w_new], dict(prod._attrs), like=op)._outputs[0]
    return None


def _value_chain(rw, op, t) -> tuple:
    """Follow single-use value-preserving ops (Transpose, Reshape, Identity) up from `t`: (source, chain)."""
    chain = []
    while t._op._opdef.name in _REORDERING:
        o = t._op
        if rw.is_barrier(t) or o._control_inputs or o._device != op._device or not rw.single_use(t) or \
                len(o._outputs) != 1:
            break
        chain.append(o)
        t = o._inputs[0]
    return t, chain


def _fold_before(rw, op, ins):
    """Conv2D/MatMul(chain(Mul(x, c)), W) with scalar c; chain: Transpose/Reshape/Identity ops (maybe none)."""
    w_t = ins[1]
    w = rw.const_value(w_t)
    if w is None:
        return None
    x_c, chain = _value_chain(rw, op, ins[0])
    mul = x_c._op
    if mul._opdef.name != "Mul" or rw.is_barrier(x_c) or mul._control_inputs or \
            mul._device != op._device or not rw.single_use(x_c):
        return None
    for x, ct in ((mul._inputs[0], mul._inputs[1]), (mul._inputs[1], mul._inputs[0])):
        c = rw.const_value(ct)
        if not _scale_ok(c) or c.size != 1 or c.dtype != w.dtype:
            continue
        if x._shape._dims is None or x._shape._dims != x_c._shape._dims:
            continue
        w_new = rw.const(np.multiply(w, c.reshape(())).astype(w.dtype, copy=False), like=op)
        for o in reversed(chain):     # the reordering ops again, now on x
            x = rw.emit(o._opdef, [x] + list(o._inputs[1:]), dict(o._attrs), like=o)._outputs[0]
        return rw.emit(op._opdef, [x, w_new], dict(op._attrs), like=op)._outputs[0]
    return None


SCALE_FOLDING = register_pass(GraphPass("scale_folding", fold_scales,
                                        "Fold constant scales into constant Conv2D/MatMul weights."))
