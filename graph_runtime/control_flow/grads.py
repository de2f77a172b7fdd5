"""Reverse-mode gradients of If/Case and While, built as graph ops (symbolic `gradients` and tapes).

The gradient of a body is a *VJP graph* (`vjp.build_vjp`): the registry's
gradient rules run over the body's ops inside a new `BodyGraph`; forward values
they use are fed from the forward op's inputs or saved by the forward op
(`GradState.request`, returned through its `variant` output).  Nothing is
recomputed, so side effects and random draws in the forward bodies are neither
repeated nor redrawn.

- `branch_grad` (If, Case; in `branch_grads.py`): a Case op over the branches'
  VJP graphs plus a `CFSavedValues` op; both differentiable, so higher
  derivatives through cond/switch_case work.
- `while_grad` (While): the forward op saves, per iteration, the requested body
  values (loop variables and intermediates); the `WhileGrad` op walks the
  iterations backwards with the VJP plan, carrying the loop variables'
  cotangents and summing the captures' cotangents.  `maximum_iterations` needs
  nothing special: the saved history has exactly the iterations that ran.
  `WhileGrad` itself is not differentiable yet: its gradient rule raises
  `UnimplementedError` naming the loop (never a silent None).

Integer, bool and string values get no gradient (None).

Imports `eager` and siblings.
"""
from __future__ import annotations

from eager.dispatch import execute
from eager.errors import UnimplementedError
from eager.registry import Spec, op

from .branch_grads import branch_grad  # noqa: F401 - the If/Case gradient rule, registered by ops.py
from .plans import body_plan
from .vjp import build_vjp, dys_for, feed_spec, finish_vjp


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
    g, gr = build_vjp(body, [body.outputs[i] for i in fvars], wrt, f"{body.name}_grad")
    keep = list(range(len(fvars))) + [len(fvars) + c for c in range(len(fcaps)) if gr[len(fvars) + c] is not None]
    finish_vjp(g, gr, body, wrt, keep)
    spec = feed_spec(g, body, state, 0, n)
    cap_keep = [fcaps[k - len(fvars)] for k in keep[len(fvars):]]
    attrs = {"vjp": g, "feeds": spec, "n_dy": len(fvars), "cap_index": tuple(cap_keep),
             "Tout": tuple(a["Tout"][i] for i in fvars) + tuple(caps[j].dtype for j in cap_keep),
             "output_shapes": tuple(a["output_shapes"][i] for i in fvars) + tuple(caps[j].shape for j in cap_keep)}
    outs = execute(WHILE_GRAD, (op.outputs[-1], *dys_for(op, dys, fvars), *caps), attrs)
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


def _while_grad_grad(op, *dys):
    fwd = op.inputs[0].op
    raise UnimplementedError(
        f"second-order gradient through while_loop '{fwd.name}' ({fwd.type}) is not supported: its gradient "
        f"op WhileGrad is not differentiable. Workarounds: unroll the loop (a Python loop over a fixed "
        f"range), or differentiate the inner gradient with respect to values the loop does not use",
        op_name="WhileGrad")


def _lower_while_grad(op, ctx):
    return lambda *args: _while_grad_kernel(*args, **op._attrs)


WHILE_GRAD = op("WhileGrad", _while_grad_kernel, _infer_grad, _while_grad_grad, num_outputs=-1,
                extra={"lower": _lower_while_grad},
                doc="Gradient of While: runs the VJP graph over the saved iterations in reverse.")
