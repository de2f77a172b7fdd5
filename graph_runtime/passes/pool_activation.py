"""Pool before relu: `MaxPool(Relu(z))` becomes `Relu(MaxPool(z))`, and its gradient one `ReluMaxPoolGrad`.

Relu is monotone, so it commutes with a window maximum: `relu(max_pool(z))`
has exactly the bits of `max_pool(relu(z))` for every window geometry and
dtype (NaN: both keep the window's first NaN, which relu passes through;
zeros: relu gives +0 for -0 and negatives either way).  Pooling first runs
relu on the pooled tensor (4x fewer elements for 2x2 windows), and the
relu'd tensor h is never made.

A training graph also reads h in the gradient: `ReluGrad(MaxPoolGrad(h, y,
dy), h)`.  Each such pair becomes `ReluMaxPoolGrad(z, y, dy)`
(eager/ops/nn_pool_relu.py), defined as that composition and computed from
z with the relu gradient applied to the pooled gradient; its kernel gives
the composition's bits (NaN and signed zeros included).

Rewritten only when h is read by nothing else: its consumers are MaxPool
ops, MaxPoolGrad ops taking h and one of those pools' output with the same
window attrs, and ReluGrad ops taking h and such a gradient (each gradient
read by exactly one ReluGrad and nothing else).  None of them may be fed or
fetched or carry control inputs (the MaxPool and the ReluGrad, which keep
their names, may be fetched and others may depend on them), or sit on another device.  Otherwise h is needed anyway and
the graph is left alone.

A performance rewrite: `GRAPHJIT_POOL_ACTIVATION=0`, `set_enabled(False)` or
`SessionConfig(disabled_passes=("pool_activation",))` turns it off.  Runs
once, before fusion (which would otherwise take Relu and ReluGrad into its
groups).  Imports sibling pass modules and `eager`.
"""
from __future__ import annotations

from eager.ops.nn_pool_relu import RELU_MAX_POOL_GRAD
from eager.switches import Switch

from .core import GraphPass, PassContext, make_stats, register_pass
from .op_keys import freeze_attrs
from .rewriter import Rewriter, is_stateful

_switch = Switch("GRAPHJIT_POOL_ACTIVATION", "pool_activation.set_enabled")


def enabled() -> bool:
    return _switch.get()


def set_enabled(flag: bool | None) -> bool:
    """Turn the rewrite on or off process-wide (None: as the environment says); returns the previous setting.
    Plans already compiled keep what they were compiled with."""
    return _switch.set(flag)


def _uses(graph):
    """id(tensor) -> [(consumer op, input index)], and the ids of ops some op control-depends on."""
    consumers: dict = {}
    controlled: set = set()
    for o in graph._ops:
        for i, t in enumerate(o._inputs):
            consumers.setdefault(id(t), []).append((o, i))
        for c in o._control_inputs:
            controlled.add(id(c))
    return consumers, controlled


def _plain(o, relu, ctx, controlled, outputs, replaced=False) -> bool:
    """`o` may be rewritten: pure, without control inputs, on relu's device, its outputs not the graph's.
    An op left to die (the Relu, the MaxPoolGrad) must also be neither fed, fetched nor a control input of
    anything (it would stay); a `replaced` one (the MaxPool, the ReluGrad) keeps its name and passes its
    control edges on (`Rewriter.replace`): constant folding leaves `Shape(pool)` as a Const with a control
    edge on the pool."""
    return (not is_stateful(o) and not o._control_inputs and o._device == relu._device
            and (replaced or (o._name not in ctx.preserve and id(o) not in controlled))
            and not any(id(t) in outputs for t in o._outputs))


def _match(relu, consumers, controlled, outputs, ctx):
    """For a Relu whose output only the pattern reads: ([MaxPool ops], {id(ReluGrad): MaxPoolGrad}), else None."""
    h = relu._outputs[0]
    if not _plain(relu, relu, ctx, controlled, outputs):
        return None
    pools, grads, relu_grads = {}, [], []
    for o, i in consumers.get(id(h), ()):
        kind = o._opdef.name
        if kind == "MaxPool" and i == 0 and _plain(o, relu, ctx, controlled, outputs, replaced=True):
            pools[id(o._outputs[0])] = o
        elif kind == "MaxPoolGrad" and i == 0 and _plain(o, relu, ctx, controlled, outputs):
            grads.append(o)
        elif kind == "ReluGrad" and i == 1 and _plain(o, relu, ctx, controlled, outputs, replaced=True):
            relu_grads.append(o)
        else:
            return None
    if not pools:
        return None
    pairs = {}
    for g in grads:
        pool = pools.get(id(g._inputs[1]))
        readers = consumers.get(id(g._outputs[0]), ())
        if (pool is None or freeze_attrs(pool._attrs) != freeze_attrs(g._attrs) or len(readers) != 1
                or readers[0][0]._opdef.name != "ReluGrad" or readers[0][1] != 0 or readers[0][0]._inputs[1] is not h):
            return None
        pairs[id(readers[0][0])] = g
    if len(pairs) != len(relu_grads):
        return None
    return list(pools.values()), pairs


def pool_before_activation(graph, ctx: PassContext):
    if not enabled():
        return graph, make_stats("pool_activation", graph, graph)
    consumers, controlled = _uses(graph)
    outputs = {id(t) for t in graph.outputs}
    pools, grads, relu_of = {}, {}, {}
    for o in graph._ops:
        if o._opdef.name == "Relu" and len(o._inputs) == 1:
            found = _match(o, consumers, controlled, outputs, ctx)
            if found is not None:
                for p in found[0]:
                    pools[id(p)] = o
                grads.update(found[1])
                relu_of.update({k: o for k in found[1]})
    rw = Rewriter(graph, ctx)
    for o in graph._ops:
        if id(o) in pools:
            z = rw.t(pools[id(o)]._inputs[0])
            pooled = rw.emit(o._opdef, [z], dict(o._attrs), like=o)._outputs[0]
            rw.replace(o, [rw.emit("Relu", [pooled], {}, like=pools[id(o)])._outputs[0]], note="relu_after_pool")
        elif id(o) in grads:
            g = grads[id(o)]
            z = rw.t(relu_of[id(o)]._inputs[0])
            new = rw.emit(RELU_MAX_POOL_GRAD, [z, rw.t(g._inputs[1]), rw.t(g._inputs[2])], dict(g._attrs), like=o)
            rw.replace(o, [new._outputs[0]], note="relu_max_pool_grad")
        else:
            rw.copy(o)
    out = rw.finish()
    return out, make_stats("pool_activation", graph, out, rw)


POOL_ACTIVATION = register_pass(GraphPass("pool_activation", pool_before_activation,
                                          "MaxPool(Relu(z)) -> Relu(MaxPool(z)); ReluGrad(MaxPoolGrad(..)) -> "
                                          "ReluMaxPoolGrad.", iterative=False))
