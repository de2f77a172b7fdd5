"""VJP graphs of body graphs: the shared building block of the If/Case and While gradients.

`build_vjp(body, targets, wrt_idx, name)` builds a `BodyGraph` whose explicit
inputs are cotangents of `targets` (tensors of `body`: its outputs, or any
intermediate a gradient needs) and whose results are the cotangents of the
chosen body inputs.  It runs the registry's gradient rules
(`eager.backprop.backprop`, the walk the tape uses) over the body's ops inside
the new graph.  The rules use forward values: each forward body tensor they
touch is *captured* by the VJP graph (`BodyGraph.capture`), so afterwards
`vjp.captures` lists forward body tensors, each either an input of the body
(fed with the matching input of the forward op) or an intermediate the forward
op must save (`request_saves`: through `GradState.request`, or through a
copy of the forward op when a compiled plan froze its state).  Nothing is
recomputed, except by such a copy.

Imports `eager` and siblings.
"""
from __future__ import annotations

from eager.backprop import backprop
from eager.registry import Spec

from .body_graph import BodyGraph, paused_tapes


def build_vjp(body, targets: list, wrt_idx: list, name: str):
    """The VJP graph of `body` for cotangents of `targets`; returns `(graph, grads)`.

    `grads[k]` is the graph's tensor for the cotangent of `body.inputs[wrt_idx[k]]`, or None when that
    input does not influence the targets.  The caller sets `graph.outputs` (see `finish_vjp`).
    """
    g = BodyGraph(name, body, hoist_reads=False, capture_eager_outside=False)
    with paused_tapes(), g.as_default():
        dys = [g.add_input(t.dtype, t.shape, "dy") for t in targets]
        groups = [[id(body.inputs[j])] for j in wrt_idx]
        grads = backprop(list(body._ops), list(targets), dys, groups)
        grads = [None if x is None else g.capture(x) for x in grads]
    return g, grads


def finish_vjp(g, grads: list, body, wrt_idx: list, keep: list) -> None:
    """Set `g.outputs`: for each k in `keep`, grads[k] or zeros like the forward input."""
    from eager.ops.array import zeros_like
    outs = []
    with paused_tapes(), g.as_default():
        for k in keep:
            outs.append(grads[k] if grads[k] is not None else zeros_like(g.capture(body.inputs[wrt_idx[k]])))
    g.outputs = outs


def input_index(body, t):
    """The position of `t` in `body.inputs`, or None."""
    for j, x in enumerate(body.inputs):
        if x is t:
            return j
    return None


def feed_spec(g, body, cap_offset: int) -> tuple:
    """How to feed each captured input of VJP graph `g`: `(spec, wanted)`, spec entries (0, capture index)
    or (1, k) for the k-th of `wanted`, the body intermediates the forward op must save (`request_saves`)."""
    spec, wanted = [], []
    for t in g.captures:
        j = input_index(body, t)
        if j is not None and j >= cap_offset:
            spec.append((0, j - cap_offset))
        else:
            spec.append((1, len(wanted)))
            wanted.append(t)
    return tuple(spec), wanted


def request_saves(a: dict, variant, wanted: list):
    """Slots of `wanted` ((body index, body tensor) pairs) in the saved values of the forward op with attrs
    `a`, and the variant tensor to read them from; activates the op's gradient state.

    When a compiled plan has frozen that state and it does not save all of `wanted`, the op is not
    changed: the first of its copies that can serve them (`serving_forward`) takes the requests, and the
    variant of that copy (captured where `variant` lives) is returned instead.
    """
    state = a["grad_state"]
    if not state.serves(wanted):
        fwd = forward_op(variant)
        new = serving_forward(fwd, wanted)
        state = new._attrs["grad_state"]
        out = new._outputs[-1]
        variant = out if variant is fwd._outputs[-1] else variant.graph.capture(out)
    slots = [state.request(b, t) for b, t in wanted]
    state.activate()
    return slots, variant


def serving_forward(fwd, wanted: list):
    """The first copy of control-flow op `fwd` (same graph, inputs, bodies; `GradState.successor` chain)
    whose gradient state can take `wanted`; a new copy with a thawed state when none can.  Refused for
    ops whose bodies read or write state: running them twice would repeat or reorder their effects."""
    from eager.errors import UnimplementedError
    last = fwd
    while True:
        state = last._attrs["grad_state"]
        if state.serves(wanted):
            return last
        if state.successor is None:
            break
        last = state.successor
    if not fwd.type.startswith("Stateless"):
        loc = fwd.location
        where = f" (created at {loc.filename}:{loc.lineno})" if loc is not None else ""
        raise UnimplementedError(
            f"gradient of {fwd.type} op {fwd.name!r}{where} built after a compiled plan ran it: its body reads or "
            f"writes state, so it cannot be run again to save the values the gradient needs. Build the gradient "
            f"(gradients() / tape.gradient / minimize) before the first Session.run or call that runs the op",
            op_name=fwd.type)
    g = fwd._graph
    attrs = dict(fwd._attrs)
    attrs["grad_state"] = type(state)([list(s) for s in state.saves], state.active)
    new = g._create_op(fwd._opdef, fwd._inputs, attrs, g.unique_name(fwd._name + "_for_grad"),
                       [Spec(o._shape._dims, o._dtype, o._static_value) for o in fwd._outputs],
                       fwd._control_inputs, fwd._device, fwd._frames)
    new._colocate = fwd._colocate
    state.successor = new
    return new


def dys_for(op, dys, idx):
    """`dys[i]` for i in `idx`, zeros like the op's output where missing."""
    from eager.ops.array import zeros_like
    return [dys[i] if dys[i] is not None else zeros_like(op.outputs[i]) for i in idx]


_CF_OPS = frozenset({"If", "StatelessIf", "Case", "StatelessCase", "While", "StatelessWhile"})


def forward_op(variant):
    """The If/Case/While op whose `variant` output `variant` stands for.

    A gradient op's variant input is that output itself, or a placeholder of a
    VJP graph capturing it (a gradient built inside another gradient), maybe
    several levels deep; placeholders are followed to the tensors they capture.
    """
    t = variant
    while True:
        o = t.op
        if o.type in _CF_OPS:
            return o
        outer = None
        for src, ph in getattr(o.graph, "_capture_map", {}).values():
            if ph is t:
                outer = src
                break
        if outer is None or outer is t:
            from eager.errors import UnimplementedError
            raise UnimplementedError(f"cannot find the control-flow op behind the saved values {variant.name!r} "
                                     f"(reached {o.type} {o.name!r}); this gradient cannot be differentiated "
                                     f"again here")
        t = outer
