"""Relu's gradient and the bias gradient of one dense layer as one op: `ReluGradBiasGrad`.

The gradient of `h = relu(x @ w + b)` holds `g = ReluGrad(dy, h)` and
`db = SumToLike(g, b)`: two passes over `g` (NumPy's multiply by a bool mask
is slow, and the sum reads `g` again).  Each such pair becomes one
`ReluGradBiasGrad(dy, h)` (graph_runtime/relu_bias_grad.py) with outputs
`(g, db)`, which gives the pair's bits and, with numba, computes both in one
pass.  `g` keeps all its other readers (the weight and input gradients).

Rewritten only when: `g` is output 0 of a `ReluGrad` of floats; the
`SumToLike` reduces a rank-2 `g` to a rank-1 `b` of `g`'s static column count
(the sum over rows); neither op is stateful, has control inputs or sits on
another device than the other.  One `SumToLike` per `ReluGrad`.  A fetched
op keeps its name (`Rewriter.replace`).

Only where the compiled kernel can run (numba installed, native kernels
enabled): without it the op's NumPy kernel gains nothing measurable on the
MLP step (2026-11-27-mlpk-bias-relu.md).  The bits are the same either way.

A performance rewrite: `GRAPHJIT_RELU_BIAS_GRAD=0`, `set_enabled(False)` or
`SessionConfig(disabled_passes=("relu_bias_grad",))` turns it off.  Runs once,
before fusion (which would otherwise take ReluGrad into a group).  Imports
sibling pass modules, `eager` and `graph_runtime.relu_bias_grad`.
"""
from __future__ import annotations

from eager import native
from eager.switches import Switch

from ..relu_bias_grad import RELU_GRAD_BIAS_GRAD
from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter, is_stateful

_switch = Switch("GRAPHJIT_RELU_BIAS_GRAD", "relu_bias_grad.set_enabled")


def enabled() -> bool:
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Turn the rewrite on or off process-wide (None: as the environment says); returns the previous setting.
    Plans already compiled keep what they were compiled with."""
    return _switch.set(flag)


def _plain(o) -> bool:
    return not is_stateful(o) and not o._control_inputs


def _pair(o):
    """The ReluGrad whose output 0 the SumToLike `o` sums over its rows, or None."""
    if o._opdef.name != "SumToLike" or len(o._inputs) != 2:
        return None
    g, like = o._inputs
    r = g._op
    if r._opdef.name != "ReluGrad" or g._index != 0 or len(r._inputs) != 2 or g._dtype.np_dtype.kind != "f":
        return None
    gd, bd = g._shape.dims, like._shape.dims
    if gd is None or bd is None or len(gd) != 2 or len(bd) != 1 or bd[0] is None or gd[1] != bd[0]:
        return None
    if not (_plain(o) and _plain(r)) or o._device != r._device:
        return None
    return r


def fuse_relu_bias_grads(graph, ctx: PassContext):
    if not (enabled() and native.enabled() and native.installed()):     # module docstring: NumPy-only installs
        return graph, make_stats("relu_bias_grad", graph, graph)
    sums: dict = {}           # id(ReluGrad) -> its SumToLike
    for o in graph._ops:
        r = _pair(o)
        if r is not None and id(r) not in sums:
            sums[id(r)] = o
    if not sums:
        return graph, make_stats("relu_bias_grad", graph, graph)
    paired = {id(s) for s in sums.values()}
    rw = Rewriter(graph, ctx)
    made: dict = {}           # id(SumToLike) -> the fused op standing for it
    for o in graph._ops:
        if id(o) in sums:
            new = rw.emit(RELU_GRAD_BIAS_GRAD, [rw.t(o._inputs[0]), rw.t(o._inputs[1])], {}, like=o)
            made[id(sums[id(o)])] = new
            rw.replace(o, [new._outputs[0]], note="relu_bias_grad")
        elif id(o) in paired:
            rw.replace(o, [made[id(o)]._outputs[1]], note="relu_bias_grad")
        else:
            rw.copy(o)
    out = rw.finish()
    return out, make_stats("relu_bias_grad", graph, out, rw)


RELU_BIAS_GRAD = register_pass(GraphPass("relu_bias_grad", fuse_relu_bias_grads,
                                         "ReluGrad(dy, h) and its SumToLike over rows -> one ReluGradBiasGrad.",
                                         iterative=False))
