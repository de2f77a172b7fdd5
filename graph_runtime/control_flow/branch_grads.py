"""Gradients of If/Case as Case ops over VJP graphs: differentiable again, to any order.

The gradient of an If/Case op (`branch_grad`) is built from two ordinary ops:

1. `CFSavedValues(variant, *captures)` (`SAVED_VALUES`): unpacks what the
   forward op saved for its gradient (graph_runtime/residuals.py): output 0
   is the index of the branch that ran (int32), then one tensor per requested
   intermediate of every branch (`slots`: `(branch, tensor name, sub)`; the
   plans that run this op make the forward op save them).  For a
   branch that did not run its values are placeholders (zeros, never read).
2. a `Case` (StatelessCase unless a VJP graph has effects) selected by that
   index, whose branch `b` is the VJP graph of forward branch `b`
   (`vjp.build_vjp`), fed with the output cotangents, the forward captures and
   the unpacked intermediates.

Both are differentiable, so second (and higher) derivatives work by
construction: the Case is differentiated by `branch_grad` itself, and
`CFSavedValues`'s rule sends the cotangents of the intermediates back to the
forward captures through the forward branch (`branch_vjp` with the
intermediates as targets; the intermediates are functions of the captures).
The captures are inputs of `CFSavedValues` only so that this rule has
somewhere to put those cotangents; its kernel ignores them.  Nothing is
recomputed: every order reads values saved by the op it differentiates.

Integer, bool and string values get no gradient (None).

Registers `branch_grad` as the gradient of If, StatelessIf, Case and StatelessCase.  Imports `eager`
and siblings (`ops` for the Case ops it builds).
"""
from __future__ import annotations

import numpy as np

from eager.dispatch import execute
from eager.dtypes import int32
from eager.registry import Spec, op, register_gradient

from .auto_deps import has_effects
from .ops import CASE, IF, STATELESS_CASE, STATELESS_IF
from .vjp import build_vjp, dys_for, finish_vjp, forward_op, input_index, save_entry, saved_positions, spec_of


def branches_of(attrs) -> tuple:
    """The branch bodies of an If (then, else) or Case op, in branch-index order."""
    if "branches" in attrs:
        return tuple(attrs["branches"])
    return attrs["then_branch"], attrs["else_branch"]


def branch_grad(op, *dys):
    """Gradient rule of If / StatelessIf / Case / StatelessCase."""
    a = op.attrs
    out_idx = [i for i, d in enumerate(a["Tout"]) if d.is_floating]
    if not out_idx or all(dys[i] is None for i in out_idx):
        return [None] * len(op.inputs)
    cots = dys_for(op, dys, out_idx)
    branches = branches_of(a)
    targets = [[b.outputs[i] for i in out_idx] for b in branches]
    return [None] + branch_vjp(a, op.outputs[-1], list(op.inputs[1:]), targets, [cots] * len(branches))


def branch_vjp(a: dict, variant, caps: list, targets: list, cotangents: list) -> list:
    """Cotangents of the captures `caps` of an If/Case op with attrs `a` (None where unconnected).

    `variant` and `caps` are the op's variant output and captures as seen where the gradient is built
    (the tensors themselves, or placeholders capturing them).  `targets[b]` are tensors of branch `b`
    (outputs or intermediates) and `cotangents[b]` the outer tensors of their cotangents; only the
    branch that ran contributes.
    """
    branches = branches_of(a)
    wrt = [j for j, c in enumerate(caps) if c.dtype.is_floating]
    result = [None] * len(caps)
    if not wrt:
        return result
    built = [build_vjp(body, list(t), wrt, f"{body.name}_grad") for body, t in zip(branches, targets)]
    keep = [k for k in range(len(wrt)) if any(gr[k] is not None for _, gr in built)]
    if not keep:
        return result
    slots: list = []          # (branch, body tensor name, sub, body tensor) per CFSavedValues output after the index
    feeds: list = []          # per branch: [(placeholder, ("dy", i) | ("cap", j) | ("saved", p))]
    for b, ((g, gr), body) in enumerate(zip(built, branches)):
        finish_vjp(g, gr, body, wrt, keep)
        n_t = len(targets[b])
        m = [(ph, ("dy", i)) for i, ph in enumerate(g.inputs[:n_t])]
        for t, ph in zip(g.captures, g.inputs[n_t:]):
            j = input_index(body, t)
            if j is not None:
                m.append((ph, ("cap", j)))
            else:
                m.append((ph, ("saved", len(slots))))
                slots.append((b, *save_entry(t, g), t))
        feeds.append(m)
    index, saved = saved_values(variant, caps, slots)

    def outer(b, ref):
        kind, i = ref
        return cotangents[b][i] if kind == "dy" else caps[i] if kind == "cap" else saved[i]

    graphs = [g for g, _ in built]
    union = _unify([[(ph, outer(b, ref)) for ph, ref in m] for b, m in enumerate(feeds)], graphs)
    attrs = {"branches": tuple(graphs), "has_default": False,
             "Tout": tuple(caps[wrt[k]].dtype for k in keep),
             "output_shapes": tuple(caps[wrt[k]].shape for k in keep)}
    stateful = any(has_effects(g) for g in graphs)
    outs = execute(CASE if stateful else STATELESS_CASE, (index, *union), attrs)
    for k, o in zip(keep, outs[:len(keep)]):
        result[wrt[k]] = o
    return result


def _unify(mappings: list, graphs: list) -> list:
    """Give every graph the same inputs, one per entry of the returned list of outer tensors.

    `mappings[b]` pairs each input placeholder of `graphs[b]` with the outer tensor that feeds it.
    Graphs get unused placeholders for entries only other graphs use; an outer tensor feeding two
    placeholders of one graph appears twice.
    """
    union: list = []
    positions = []
    for m in mappings:
        used, pos = set(), {}
        for ph, t in m:
            p = next((p for p, u in enumerate(union) if u is t and p not in used), None)
            if p is None:
                p = len(union)
                union.append(t)
            used.add(p)
            pos[p] = ph
        positions.append(pos)
    for g, pos in zip(graphs, positions):
        g.inputs = [pos[p] if p in pos else g.add_input(u.dtype, u.shape, "unused") for p, u in enumerate(union)]
        g.captures = list(union)
    return union


def saved_values(variant, caps: list, slots: list):
    """`(branch index, [tensor per slot])` from a forward If/Case op's variant output."""
    attrs = {"slots": tuple((b, name, sub) for b, name, sub, _ in slots),
             "Tout": tuple(t.dtype for *_, t in slots),
             "output_shapes": tuple(t.shape for *_, t in slots)}
    outs = execute(SAVED_VALUES, (variant, *caps), attrs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return outs[0], list(outs[1:])


def _saved_kernel(variant, *caps, slots, Tout, output_shapes, **_):
    b, saved, names = variant
    mine = [name for bb, name, _ in slots if bb == b]
    at = iter(saved_positions(names, mine, "CFSavedValues"))
    outs = [np.asarray(b, np.int32)]
    for (bb, _, _), d, shape in zip(slots, Tout, output_shapes):
        if bb == b:
            outs.append(saved[next(at)])
        else:
            dims = () if shape.dims is None else tuple(0 if x is None else x for x in shape.dims)
            outs.append(np.zeros(dims, d.as_numpy_dtype))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _saved_infer(specs, attrs):
    return [Spec((), int32)] + [Spec(s.dims, d) for d, s in zip(attrs["Tout"], attrs["output_shapes"])]


def _saved_grad(op, *dys):
    """Cotangents of the saved intermediates -> cotangents of the forward op's captures."""
    fwd = forward_op(op.inputs[0])
    branches = branches_of(fwd.attrs)
    targets: list = [[] for _ in branches]
    cots: list = [[] for _ in branches]
    for (b, name, _), d, t in zip(op.attrs["slots"], dys[1:], op.outputs[1:]):
        if d is not None and t.dtype.is_floating:
            targets[b].append(branches[b].get_tensor_by_name(name))
            cots[b].append(d)
    if not any(targets):
        return [None] * len(op.inputs)
    return [None] + branch_vjp(fwd.attrs, op.inputs[0], list(op.inputs[1:]), targets, cots)


SAVED_VALUES = op("CFSavedValues", _saved_kernel, _saved_infer, _saved_grad, num_outputs=-1,
                  attrs=("slots", "Tout", "output_shapes"),
                  extra={"requests": lambda op, k: spec_of(op._attrs["slots"]) if k == 0 else None},
                  doc="The branch index and the intermediates an If/Case op saved for its gradient (attr slots).")

for _op in (IF, STATELESS_IF, CASE, STATELESS_CASE):
    register_gradient(_op, branch_grad)
