"""Loop-invariant code motion: compute once, before the loop, what a While body recomputes every iteration.

In a `While`/`StatelessWhile` body (inputs: loop variables, then captured
outer tensors), a value is invariant when it is a captured input, a `Const`,
or a pure op (not stateful, no bodies, no control inputs) of invariant values.
Invariant ops that do real work and feed the variant part of the body (or its
outputs) are hoisted: rebuilt in the enclosing graph from the captured outer
tensors and passed to the loop as new captures (new trailing inputs of the op,
of the body and of the cond).  The loop op keeps its name and outputs.

Results never change:
- a loop may run zero times, so an op is only hoisted when it cannot fail at
  run time (`_speculatable`: elementwise and a few shape-safe ops, with fully
  known static shapes, so broadcasting and sizes were checked at build time);
  anything whose validity depends on run-time values or shapes stays inside;
- stateful ops (variable reads, random draws, prints) are never hoisted, nor is
  anything downstream of them;
- loops whose gradient reads body values (`Rewriter.gradient_reads_bodies`)
  are left alone (the gradient names tensors of the original body).
Nested loops are handled one level at a time (the manager re-runs the pass).

Imports sibling pass modules and `eager`.
"""
from __future__ import annotations

from eager.shape import TensorShape

from .core import GraphPass, PassContext, make_stats, register_pass
from .op_keys import has_subgraphs
from .rewriter import Rewriter

_WHILE = frozenset({"While", "StatelessWhile"})
_TRIVIAL = frozenset({"Const", "Placeholder", "Identity", "NoOp"})
_SHAPE_SAFE = frozenset({"MatMul", "Transpose", "Reshape", "Sum", "Mean", "Prod", "Any", "All", "ExpandDims",
                         "Squeeze", "ConcatV2", "Pack", "Softmax", "LogSoftmax", "BiasAdd", "Shape", "Size",
                         "Rank", "AddN", "L2Loss", "Tile", "BroadcastTo", "Fill"})
_NONEMPTY = frozenset({"Max", "Min", "ArgMax", "ArgMin"})


def _known(t) -> bool:
    return t._shape.is_fully_defined()


def _speculatable(op) -> bool:
    """True when `op` cannot raise at run time given its (fully known) static input/output shapes."""
    if not all(_known(t) for t in op._inputs) or not all(_known(t) for t in op._outputs):
        return False
    t = op._opdef.name
    if op._opdef.elementwise or t in _SHAPE_SAFE:
        return True
    if t in _NONEMPTY:
        return all(t_in._shape.num_elements() for t_in in op._inputs[:1])
    return False


def _invariant_ops(body, n_vars: int) -> tuple:
    """(invariant tensor ids, hoistable ops in order) of a body whose first `n_vars` inputs vary."""
    inv: set = set()
    for ph in body.inputs[n_vars:]:
        inv.add(id(ph))
    hoist = []
    for op in body._ops:
        t = op._opdef.name
        if t == "Const" and not op._control_inputs:
            inv.update(id(o) for o in op._outputs)
            continue
        if t == "Placeholder" or op._control_inputs or op._opdef.stateful or has_subgraphs(op):
            continue
        if op._inputs and len(op._outputs) == 1 and all(id(x) in inv for x in op._inputs) and _speculatable(op):
            inv.update(id(o) for o in op._outputs)
            hoist.append(op)
    return inv, hoist


def hoist_loop_invariants(graph, ctx: PassContext):
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        if op._opdef.name in _WHILE and _hoist_one(rw, op):
            continue
        rw.copy(op)
    out = rw.finish()
    return out, make_stats("loop_invariant", graph, out, rw)


def _hoist_one(rw, op) -> bool:
    a = op._attrs
    body, cond, n = a.get("body"), a.get("cond"), a.get("num_vars")
    if body is None or cond is None or n is None or rw.gradient_reads_bodies(op):
        return False
    first_cap = n + (1 if a.get("has_max") else 0)
    if len(body.inputs) != n + len(op._inputs) - first_cap or len(cond.inputs) != len(body.inputs):
        return False
    inv, hoist = _invariant_ops(body, n)
    if not hoist:
        return False
    # frontier: hoisted values used by the non-hoisted part of the body or returned by it
    hoisted = {id(o) for h in hoist for o in h._outputs}
    used_outside = set()
    hoist_ids = {id(h) for h in hoist}
    for b_op in body._ops:
        if id(b_op) in hoist_ids:
            continue
        for x in b_op._inputs:
            if id(x) in hoisted:
                used_outside.add(id(x))
    for x in body.outputs:
        if id(x) in hoisted:
            used_outside.add(id(x))
    if not used_outside:
        return False
    # 1. rebuild the hoisted ops in the enclosing graph
    outer: dict = {}
    for ph, src_in in zip(body.inputs[n:], op._inputs[first_cap:]):
        outer[id(ph)] = rw.t(src_in)
    for h in hoist:
        for x in h._inputs:
            if id(x) not in outer:      # a body Const (invariant inputs are captures, Consts or hoisted)
                outer[id(x)] = rw.const(x._op._attrs["value"], like=op)
        new = rw.emit(h._opdef, [outer[id(x)] for x in h._inputs], h._attrs, like=op,
                      name=rw.dst.unique_name(op._name + "/licm/" + h._name.rsplit("/", 1)[-1]))
        for o, no in zip(h._outputs, new._outputs):
            outer[id(o)] = no
    frontier = [o for h in hoist for o in h._outputs if id(o) in used_outside]
    # 2. the new body: frontier values become new trailing inputs
    new_body = _rebuild(body, frontier, replace=True)
    new_cond = _rebuild(cond, frontier, replace=False)
    attrs = dict(a)
    attrs["body"], attrs["cond"] = new_body, new_cond
    inputs = rw.inputs(op) + [outer[id(o)] for o in frontier]
    new = rw.emit(op._opdef, inputs, attrs, like=op, name=op._name, control_inputs=rw.controls(op))
    rw._origin[id(new)] = op
    for o, no in zip(op._outputs, new._outputs):
        rw._t[id(o)] = no
    rw._ctrl[id(op)] = (new,)
    rw._count("hoisted_ops")
    rw.notes["hoisted_ops"] = rw.notes.get("hoisted_ops", 0) - 1 + len(hoist)
    return True


def _rebuild(body, frontier, replace: bool):
    """A copy of `body` with one new trailing Placeholder input per frontier tensor (used when `replace`)."""
    brw = Rewriter(body, PassContext())
    new_inputs = []
    by_id = {id(t): t for t in frontier}
    for b_op in body._ops:
        outs = [o for o in b_op._outputs if id(o) in by_id]
        if replace and outs and len(b_op._outputs) == 1:
            ph = _placeholder(brw, b_op._outputs[0])
            new_inputs.append((id(b_op._outputs[0]), ph))
            brw.replace(b_op, [ph])
        else:
            brw.copy(b_op)
    if not replace:
        for t in frontier:
            new_inputs.append((id(t), _placeholder(brw, t)))
    g = brw.finish()
    order = {id(t): i for i, t in enumerate(frontier)}
    g.inputs = list(g.inputs) + [ph for _, ph in sorted(new_inputs, key=lambda p: order[p[0]])]
    return g


def _placeholder(brw, like_tensor):
    return brw.emit("Placeholder", [], {"dtype": like_tensor._dtype, "shape": TensorShape(like_tensor._shape)},
                    name=brw.dst.unique_name("licm_input"))._outputs[0]


LOOP_INVARIANT = register_pass(GraphPass("loop_invariant", hoist_loop_invariants,
                                         "Hoist loop-invariant pure ops out of While bodies."))
