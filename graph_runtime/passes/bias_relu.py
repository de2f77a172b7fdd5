"""A dense layer's bias add and relu as one op: `Relu(AddV2(a, b))` -> `BiasRelu(a, b)`.

`BiasRelu` (graph_runtime/bias_relu.py) gives the pair's bits and, with
numba, computes them in one pass.  Rewritten only when: `a` is rank 2 and
`b` rank 1 of `a`'s static column count (in that order: `b + a` is left
alone), both floats of one dtype; the sum is read by the Relu only and is
neither fed nor fetched; neither op is stateful, has control inputs or sits
on another device; the layer is not known to hold a million elements or more
(there the fused elementwise kernel runs in parts on the cores).  A fetched Relu keeps its name (`Rewriter.replace`).

Only where the compiled kernel can run (numba installed, native kernels
enabled): without it the fused elementwise kernel the pair otherwise becomes
is as fast as BiasRelu's NumPy kernel, which costs the step about 1% more
Python (measured: 2026-11-27-mlpk-bias-relu.md).  The bits are the same
either way.

A performance rewrite: `GRAPHJIT_BIAS_RELU=0`, `set_enabled(False)` or
`SessionConfig(disabled_passes=("bias_relu",))` turns it off.  Runs once,
before fusion (which would otherwise take both ops into a group).  Imports
sibling pass modules, `eager`, `graph_runtime.bias_relu` and `fusion.kernel`.
"""
from __future__ import annotations

from eager import native
from eager.switches import Switch

from ..bias_relu import BIAS_RELU
from ..fusion.kernel import THREAD_MIN_ELEMENTS
from .core import GraphPass, PassContext, make_stats, register_pass
from .rewriter import Rewriter, is_stateful

_switch = Switch("GRAPHJIT_BIAS_RELU", "bias_relu.set_enabled")


def enabled() -> bool:
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Turn the rewrite on or off process-wide (None: as the environment says); returns the previous setting."""
    return _switch.set(flag)


def _sum_of(relu, uses, ctx):
    """The AddV2 op whose sum only `relu` reads, if the pair may become one BiasRelu, else None."""
    if relu._opdef.name != "Relu" or len(relu._inputs) != 1 or is_stateful(relu) or relu._control_inputs:
        return None
    t = relu._inputs[0]
    add = t._op
    if (add._opdef.name != "AddV2" or len(add._inputs) != 2 or uses.get(id(t)) != 1 or add._name in ctx.preserve
            or is_stateful(add) or add._control_inputs or add._device != relu._device):
        return None
    a, b = add._inputs
    ad, bd = a._shape.dims, b._shape.dims
    if (ad is None or bd is None or len(ad) != 2 or len(bd) != 1 or bd[0] is None or ad[1] != bd[0]
            or a._dtype is not b._dtype or a._dtype.np_dtype.kind != "f"):
        return None
    if ad[0] is not None and ad[0] * ad[1] >= THREAD_MIN_ELEMENTS:     # the fused kernel splits it over the cores
        return None
    return add


def fuse_bias_relu(graph, ctx: PassContext):
    if not (enabled() and native.enabled() and native.installed()):     # module docstring: NumPy-only installs
        return graph, make_stats("bias_relu", graph, graph)
    uses: dict = {}
    for o in graph._ops:
        for t in o._inputs:
            uses[id(t)] = uses.get(id(t), 0) + 1
    outputs = {id(t) for t in graph.outputs}
    adds = {}
    for o in graph._ops:
        add = _sum_of(o, uses, ctx)
        if add is not None and id(add._outputs[0]) not in outputs:
            adds[id(o)] = add
    if not adds:
        return graph, make_stats("bias_relu", graph, graph)
    rw = Rewriter(graph, ctx)
    for o in graph._ops:
        add = adds.get(id(o))
        if add is None:
            rw.copy(o)
            continue
        new = rw.emit(BIAS_RELU, [rw.t(add._inputs[0]), rw.t(add._inputs[1])], {}, like=o)
        rw.replace(o, [new._outputs[0]], note="bias_relu")
    out = rw.finish()
    return out, make_stats("bias_relu", graph, out, rw)


BIAS_RELU_PASS = register_pass(GraphPass("bias_relu", fuse_bias_relu, "Relu(AddV2(a, b)) with b a bias of a's "
                                         "columns -> one BiasRelu.", iterative=False))
