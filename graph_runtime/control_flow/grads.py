"""Reverse-mode gradients of If/Case and While, built as graph ops (symbolic `gradients` and tapes).

The gradient of a body is a *VJP graph* (`build_vjp`): a `BodyGraph` whose
explicit inputs are the cotangents of the body's (float) outputs and whose
outputs are the cotangents of chosen body inputs, built by running the
registry's gradient rules (`eager.backprop.backprop`, the walk the tape uses)
over the body's ops inside the new graph.  The rules use forward values: each
forward body tensor they touch is *captured* by the VJP graph, and becomes
either a direct input (a loop-invariant capture of the forward op) or a value
the forward op saves for it (`GradState.request`, returned through the
forward op's `variant` output).  Nothing is recomputed, so side effects and
random draws in the forward bodies are neither repeated nor redrawn.

- `branch_grad` (If, Case): one VJP graph per branch; the `BranchGrad` op runs
  the VJP plan of the branch that ran (the variant says which), returning
  gradients for the float captures (zeros from branches that do not use one).
- `while_grad` (While): the forward op saves, per iteration, the requested body
  values (loop variables and intermediates); the `WhileGrad` op walks the
  iterations backwards with the VJP plan, carrying the loop variables'
  cotangents and summing the captures' cotangents.  `maximum_iterations` needs
  nothing special: the saved history has exactly the iterations that ran.

Gradient ops are not themselves differentiable (no second derivatives through
control flow).  Integer, bool and string values get no gradient (None).

Imports `eager` and siblings.
"""
from __future__ import annotations

from eager.backprop import backprop
from eager.dispatch import execute
from eager.registry import Spec, op

from .body_graph import BodyGraph, paused_tapes
from .plans import body_plan


def build_vjp(body, out_idx: list, wrt_idx: list, name: str):
    """The VJP graph of `body` for cotangents of `body.outputs[out_idx]`; returns `(graph, grads)`.

    `grads[k]` is the graph's tensor for the cotangent of `body.inputs[wrt_idx[k]]`, or None when that
    input does not influence those outputs.  The caller sets `graph.outputs` (see `finish_vjp`).
    """
    g = BodyGraph(name, body, hoist_reads=False, capture_eager_outside=False)
    with paused_tapes(), g.as_default():
        dys = [g.add_input(body.outputs[i].dtype, body.outputs[i].shape, "dy") for i in out_idx]
        targets = [body.outputs[i] for i in out_idx]
        groups = [[id(body.inputs[j])] for j in wrt_idx]
        grads = backprop(list(body._ops), targets, dys, groups)
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


def feed_spec(g, body, n_explicit: int, state, body_index: int, cap_offset: int) -> tuple:
    """How to feed each captured input of VJP graph `g`: (0, capture index) or (1, saved slot)."""
    spec = []
    for t in g.captures:
        j = _input_index(body, t)
        if j is not None and j >= cap_offset:
            spec.append((0, j - cap_offset))
        else:
            spec.append((1, state.request(body_index, t)))
    state.active = True
    return tuple(spec)


def _input_index(body, t):
    for j, x in enumerate(body.inputs):
        if x is t:
            return j
    return None


def _dys_for(op, dys, idx):
    from eager.ops.array import zeros_like
    return [dys[i] if dys[i] is not None else zeros_like(op.outputs[i]) for i in idx]


# ------------------------------------------------------------------ If / Case
def branch_grad(op, *dys):
    a = op.attrs
    branches = a["branches"] if "branches" in a else (a["then_branch"], a["else_branch"])
    state = a["grad_state"]
    caps = list(op.inputs[1:])
    out_idx = [i for i, d in enumerate(a["Tout"]) if d.is_floating]
    wrt = [j for j, c in enumerate(caps) if c.dtype.is_floating]
    if not out_idx or not wrt:
        return [None] * len(op.inputs)
    built = [build_vjp(g, out_idx, wrt, f"{g.name}_grad") for g in branches]
    keep = [k for k in range(len(wrt)) if any(gr[k] is not None for _, gr in built)]
    if not keep:
        return [None] * len(op.inputs)
    vjps, specs = [], []
    for b, ((g, gr), body) in enumerate(zip(built, branches)):
        finish_vjp(g, gr, body, wrt, keep)
        specs.append(feed_spec(g, body, len(out_idx), state, b, 0))
        vjps.append(g)
    attrs = {"vjps": tuple(vjps), "feeds": tuple(specs), "n_dy": len(out_idx),
             "Tout": tuple(caps[wrt[k]].dtype for k in keep),
             "output_shapes": tuple(caps[wrt[k]].shape for k in keep)}
    outs = execute(BRANCH_GRAD, (op.outputs[-1], *_dys_for(op, dys, out_idx), *caps), attrs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    result = [None] * len(op.inputs)
    for k, o in zip(keep, outs):
        result[1 + wrt[k]] = o
    return result


def _branch_grad_kernel(variant, *rest, vjps, feeds, n_dy, **_):
    b, saved = variant
    dys, caps = rest[:n_dy], rest[n_dy:]
    args = list(dys) + [caps[i] if kind == 0 else saved[i] for kind, i in feeds[b]]
    plan = body_plan(vjps[b])
    try:
        outs = plan.fn(*args)
    except Exception as e:
        raise plan.map_error(e) from None
    return outs[0] if len(outs) == 1 else outs


# ------------------------------------------------------------------ While
def while_grad(op, *dys):
    a = op.attrs
    n, has_max = a["num_vars"], a["has_max"]
    body, state = a["body"], a["grad_state"]
    caps = list(op.inputs[n + (1 if has_max else 0):])
    fvars = [i for i in range(n) if a["Tout"][i].is_floating]
    fcaps = [j for j, c in enumerate(caps) if c.dtype.is_floating]
    result = [None] * len(op.inputs)
    if not fvars:
        return result
    wrt = fvars + [n + j for j in fcaps]
    g, gr = build_vjp(body, fvars, wrt, f"{body.name}_grad")
    keep = list(range(len(fvars))) + [len(fvars) + c for c in range(len(fcaps)) if gr[len(fvars) + c] is not None]
    finish_vjp(g, gr, body, wrt, keep)
    spec = feed_spec(g, body, len(fvars), state, 0, n)
    cap_keep = [fcaps[k - len(fvars)] for k in keep[len(fvars):]]
    attrs = {"vjp": g, "feeds": spec, "n_dy": len(fvars), "cap_index": tuple(cap_keep),
             "Tout": tuple(a["Tout"][i] for i in fvars) + tuple(caps[j].dtype for j in cap_keep),
             "output_shapes": tuple(a["output_shapes"][i] for i in fvars) + tuple(caps[j].shape for j in cap_keep)}
    outs = execute(WHILE_GRAD, (op.outputs[-1], *_dys_for(op, dys, fvars), *caps), attrs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for i, o in zip(fvars, outs):
        result[i] = o
    off = n + (1 if has_max else 0)
    for j, o in zip(cap_keep, outs[len(fvars):]):
        result[off + j] = o
    return result


def _while_grad_kernel(variant, *rest, vjp, feeds, n_dy, cap_index, **_):
    if variant is None:
        raise RuntimeError("WhileGrad: the forward While op saved no values (internal error: its gradient "
                           "state was not active when it ran)")
    n_iter, history = variant
    dv, caps = rest[:n_dy], rest[n_dy:]
    plan = body_plan(vjp)
    fn = plan.fn
    capg = [None] * len(cap_index)
    try:
        for t in range(n_iter - 1, -1, -1):
            saved = history[t]
            outs = fn(*dv, *[caps[i] if kind == 0 else saved[i] for kind, i in feeds])
            dv = outs[:n_dy]
            for c, gv in enumerate(outs[n_dy:]):
                capg[c] = gv if capg[c] is None else capg[c] + gv
    except Exception as e:
        raise plan.map_error(e) from None
    import numpy as np
    capg = [np.zeros_like(caps[j]) if g is None else g for g, j in zip(capg, cap_index)]
    outs = tuple(dv) + tuple(capg)
    return outs[0] if len(outs) == 1 else outs    # a one-output op's kernel returns the bare value


def _infer_grad(specs, attrs):
    return [Spec(s.dims, d) for d, s in zip(attrs["Tout"], attrs["output_shapes"])]


def _lower_branch_grad(op, ctx):
    return lambda *args: _branch_grad_kernel(*args, **op._attrs)


def _lower_while_grad(op, ctx):
    return lambda *args: _while_grad_kernel(*args, **op._attrs)


BRANCH_GRAD = op("BranchGrad", _branch_grad_kernel, _infer_grad, num_outputs=-1,
                 extra={"lower": _lower_branch_grad},
                 doc="Gradient of If/Case: runs the VJP graph of the branch that ran (attrs vjps, feeds).")
WHILE_GRAD = op("WhileGrad", _while_grad_kernel, _infer_grad, num_outputs=-1,
                extra={"lower": _lower_while_grad},
                doc="Gradient of While: runs the VJP graph over the saved iterations in reverse.")
