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
op must save: the gradient op declares it (`save_entry`) and each plan that
runs the gradient makes the forward op save it (graph_runtime/residuals.py).
Nothing is recomputed and the forward op is never changed.

Imports `eager` and siblings.
"""
from __future__ import annotations

from eager.backprop import backprop
from eager.errors import UnimplementedError
from eager.ops.array import zeros_like

from ..save_specs import merge, requests_of
from .body_graph import BodyGraph, paused_tapes
from .ops import VARIANT


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
    or (1, k) for the k-th of `wanted`, the body intermediates the forward op must save (`save_entry`)."""
    spec, wanted = [], []
    for t in g.captures:
        j = input_index(body, t)
        if j is not None and j >= cap_offset:
            spec.append((0, j - cap_offset))
        else:
            spec.append((1, len(wanted)))
            wanted.append(t)
    return tuple(spec), wanted


def save_entry(t, g) -> tuple:
    """The save-spec entry `(name, sub)` for body tensor `t`, which VJP graph `g` captures: when `t` is
    the variant output of a control-flow op in the body, `sub` is what `g`'s readers of it request from
    that op (graph_runtime/residuals.py), so the enclosing op's plan makes it save those values."""
    sub = None
    if t.dtype is VARIANT:
        sub = requests_of(g._capture_map[id(t)][1]) or None
    return (t.name, sub)


def spec_of(entries) -> tuple:
    """A save spec from `(body index, name, sub)` triples."""
    n = 1 + max((b for b, _, _ in entries), default=-1)
    return merge([tuple(tuple((name, sub) for bb, name, sub in entries if bb == b) for b in range(n))])


def saved_positions(variant_names, wanted_names, op_name: str) -> list:
    """Positions of `wanted_names` in the names a forward op's variant value lists."""
    pos = {n: i for i, n in enumerate(variant_names)}
    try:
        return [pos[n] for n in wanted_names]
    except KeyError as e:
        raise RuntimeError(f"{op_name}: the forward op did not save {e.args[0]!r} (internal error: the plan's "
                           f"residuals stage did not see this reader)") from None


def dys_for(op, dys, idx):
    """`dys[i]` for i in `idx`, zeros like the op's output where missing."""
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
            raise UnimplementedError(f"cannot find the control-flow op behind the saved values {variant.name!r} "
                                     f"(reached {o.type} {o.name!r}); this gradient cannot be differentiated "
                                     f"again here")
        t = outer
