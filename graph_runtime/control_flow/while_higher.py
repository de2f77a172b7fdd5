"""Higher-order gradients through While: `WhileGrad` rewritten as differentiable ops.

`WhileGrad` (grads.py) walks the forward loop's saved iterations backwards in
a Python loop; fast, but opaque.  Its gradient rule (`while_grad_grad`)
rebuilds the same computation from differentiable ops in the current graph
and back-propagates through them:

1. `CFSavedStacks(variant, *loop inputs, *captures)` (`SAVED_STACKS`): the
   number of iterations (int32) and, per saved body value the VJP graph reads,
   its per-iteration values stacked along a new leading axis (an object array
   for `variant` values, e.g. an If's inside the loop);
2. a While op counting `t` down from that number, carrying the cotangents of
   the loop variables and the captures' summed cotangents; its body gathers
   row `t - 1` of each stack and runs the WhileGrad's own VJP graph through a
   one-branch Case op (a differentiable subgraph call).

The While is differentiated by `grads.while_grad` and the Case by
`branch_grad`; `CFSavedStacks`'s rule sends the stacks' cotangents back to the
forward loop's inputs and captures with another `WhileGrad`
(`grads.while_vjp` with per-iteration cotangents of those body values).  So
every order is built from the same pieces and is differentiable again.
Nothing in the forward loop is recomputed.

Limits: stacking needs every iteration's value of a saved tensor to have the
same shape (`InvalidArgumentError` naming the loop otherwise); each order
sums dense gradients of the gathered stacks per iteration (time and memory
O(iterations^2) for the stacks' gradients at third order).

Registers `while_grad_grad` as the gradient of `grads.WHILE_GRAD`.  Imports
`eager` and siblings (`grads` for `while_vjp`, `ops` for the Case op).
"""
from __future__ import annotations

import numpy as np

from eager import context as _context
from eager.backprop import backprop
from eager.control_flow import while_loop
from eager.convert import constant
from eager.dispatch import execute
from eager.dtypes import int32
from eager.errors import InvalidArgumentError, UnimplementedError
from eager.ops.array import zeros_like
from eager.ops.gather import gather
from eager.registry import Spec, op, register_gradient
from eager.shape import TensorShape

from ..save_specs import merge
from .auto_deps import has_effects
from .grads import WHILE_GRAD, while_vjp
from .ops import CASE, STATELESS_CASE
from .vjp import forward_op, saved_positions


def while_grad_grad(op, *dys):
    """Gradient rule of WhileGrad (see the module docstring)."""
    a = op.attrs
    variant = op.inputs[0]
    fwd = forward_op(variant)
    if a.get("vjp_outputs") is not None:
        raise UnimplementedError(f"gradient of a WhileGrad op of while_loop '{fwd.name}' that the optimizer "
                                 f"pruned (it computes only some capture cotangents): differentiate the graph "
                                 f"before optimizing it", op_name="WhileGrad")
    if a.get("n_caps") is None:
        raise UnimplementedError(f"second-order gradient through while_loop '{fwd.name}': this WhileGrad op "
                                 f"comes from an older GraphDef without the loop inputs; rebuild the gradient",
                                 op_name="WhileGrad")
    n_dy, n_extra, n_caps = a["n_dy"], a["n_extra"], a["n_caps"]
    ins = list(op.inputs)
    dv = ins[1:1 + n_dy]
    ext = ins[1 + n_dy:1 + n_dy + n_extra]
    caps = ins[1 + n_dy + n_extra:1 + n_dy + n_extra + n_caps]
    v0 = ins[1 + n_dy + n_extra + n_caps:]
    g, feeds, cap_index = a["vjp"], a["feeds"], a["cap_index"]
    slots = sorted({i for kind, i in feeds if kind == 1})
    graph = _context.current()
    start = len(graph._ops)
    n_iter, stacks = saved_stacks(fwd, variant, v0, caps, [a["saved"][i] for i in slots])
    stack_of = dict(zip(slots, stacks))
    out_specs = [(o.dtype, o.shape) for o in op.outputs]

    def cond(t, *_):
        return t > 0

    def body(t, *vals):
        t1 = t - 1
        args = list(vals[:n_dy]) + [gather(e, t1) for e in ext] + \
            [caps[i] if kind == 0 else gather(stack_of[i], t1) for kind, i in feeds]
        outs = call_graph(g, args, out_specs)
        return (t1, *outs[:n_dy], *[x + y for x, y in zip(vals[n_dy:], outs[n_dy:])])

    init = [n_iter, *dv, *[zeros_like(caps[j]) for j in cap_index]]
    invariants = [TensorShape([])] + [s for _, s in out_specs]
    res = while_loop(cond, body, init, shape_invariants=invariants, name=f"{fwd.name}_grad_grad")
    targets, cots = [], []
    for o, d in zip(res[1:], dys):
        if d is not None and o.dtype.is_floating:
            targets.append(o)
            cots.append(d)
    groups, seen = [], set()
    for x in ins:                    # a tensor passed twice (a loop input also captured) is one source
        k = id(_here(graph, x))      # the expression's ops use captured copies inside a body graph
        groups.append([] if k in seen else [k])
        seen.add(k)
    grads = backprop(list(graph._ops[start:]), targets, cots, groups)
    return [None] + grads[1:]


def _here(graph, t):
    """`t` as the ops built in `graph` see it (captured when it belongs to an enclosing graph)."""
    return t if t.graph is graph else graph.capture(t)


def call_graph(g, args: list, out_specs: list):
    """Run body graph `g` on `args` as a one-branch Case op (a differentiable call); returns its outputs."""
    attrs = {"branches": (g,), "has_default": False, "Tout": tuple(d for d, _ in out_specs),
             "output_shapes": tuple(s for _, s in out_specs)}
    outs = execute(CASE if has_effects(g) else STATELESS_CASE, (constant(0, dtype=int32), *args), attrs)
    return list(outs[:len(out_specs)])


def saved_stacks(fwd, variant, v0: list, caps: list, entries: list):
    """`(iterations, [stack per entry])` of While op `fwd`'s saved body values `entries` ((name, sub)
    save-spec entries, graph_runtime/residuals.py).

    `variant`, `v0`, `caps`: `fwd`'s variant output, loop inputs and captures as seen here.
    """
    body = fwd.attrs["body"]
    ts = [body.get_tensor_by_name(name) for name, _ in entries]
    attrs = {"slots": tuple(entries), "Tout": tuple(t.dtype for t in ts),
             "output_shapes": tuple(TensorShape(None) if t.shape.dims is None else TensorShape([None] + list(t.shape.dims))
                                    for t in ts),
             "loop": fwd.name}
    outs = execute(SAVED_STACKS, (variant, *v0, *caps), attrs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    return outs[0], list(outs[1:])


def _stacks_kernel(variant, *rest, slots, Tout, output_shapes, loop="while", **_):
    n_iter, history, names = variant
    at = saved_positions(names, [name for name, _ in slots], "CFSavedStacks")
    outs = [np.asarray(n_iter, np.int32)]
    for s, d, shape in zip(at, Tout, output_shapes):
        rows = [h[s] for h in history]
        if d.as_numpy_dtype is object:
            arr = np.empty(len(rows), object)
            for i, r in enumerate(rows):
                arr[i] = r
        elif not rows:
            dims = () if shape.dims is None else tuple(0 if x is None else x for x in shape.dims[1:])
            arr = np.zeros((0,) + dims, d.as_numpy_dtype)
        else:
            rows = [np.asarray(r) for r in rows]
            if any(r.shape != rows[0].shape for r in rows):
                shapes = sorted({r.shape for r in rows})
                raise InvalidArgumentError(
                    f"CFSavedStacks: a higher-order gradient through while_loop '{loop}' needs a value of its body "
                    f"to have the same shape in every iteration, but it has shapes {shapes}; loops whose "
                    f"values change shape (shape_invariants) support first-order gradients only",
                    op_name="CFSavedStacks")
            arr = np.stack(rows)
        outs.append(arr)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _stacks_infer(specs, attrs):
    return [Spec((), int32)] + [Spec(s.dims, d) for d, s in zip(attrs["Tout"], attrs["output_shapes"])]


def _stacks_grad(op, *dys):
    """Cotangents of the stacked body values -> cotangents of the loop inputs and captures."""
    fwd = forward_op(op.inputs[0])
    a = fwd.attrs
    targets, cots = [], []
    for (name, _), d, t in zip(op.attrs["slots"], dys[1:], op.outputs[1:]):
        if d is not None and t.dtype.is_floating:
            targets.append(a["body"].get_tensor_by_name(name))
            cots.append(d)
    if not targets:
        return [None] * len(op.inputs)
    n = a["num_vars"]
    v0, caps = list(op.inputs[1:1 + n]), list(op.inputs[1 + n:])
    dv = [zeros_like(v0[i]) for i in range(n) if a["Tout"][i].is_floating]
    gv, gc = while_vjp(a, op.inputs[0], v0, caps, dv, targets, cots)
    return [None] + gv + gc


SAVED_STACKS = op("CFSavedStacks", _stacks_kernel, _stacks_infer, _stacks_grad, num_outputs=-1,
                  attrs=("slots", "Tout", "output_shapes", "loop"),
                  extra={"requests": lambda op, k: merge([(tuple(op._attrs["slots"]),)]) if k == 0 else None},
                  doc="The iteration count and per-iteration values a While op saved for its gradient, "
                      "stacked (attr slots); for higher-order gradients.")

register_gradient(WHILE_GRAD, while_grad_grad)
