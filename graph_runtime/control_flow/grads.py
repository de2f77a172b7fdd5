"""Reverse-mode gradients of If/Case and While, built as graph ops (symbolic `gradients` and tapes).

The gradient of a body is a *VJP graph* (`vjp.build_vjp`): the registry's
gradient rules run over the body's ops inside a new `BodyGraph`; forward values
they use are fed from the forward op's inputs or saved by the forward op: the
gradient op names them (attr `saved` / `slots`) and every plan that runs it
makes the forward op save them, returned through its `variant` output
(graph_runtime/residuals.py; the user's op is never changed).  Nothing is
recomputed, so side effects and random draws in the forward bodies are neither
repeated nor redrawn.

- `branch_grad` (If, Case; in `branch_grads.py`): a Case op over the branches'
  VJP graphs plus a `CFSavedValues` op; both differentiable, so higher
  derivatives through cond/switch_case work.
- `while_grad` (While): the forward op saves, per iteration, the requested body
  values (loop variables and intermediates); the `WhileGrad` op walks the
  iterations backwards with the VJP plan's steps inlined in one generated
  loop (`grad_loop.py`), carrying the loop variables' cotangents and summing
  the captures' cotangents.  `maximum_iterations` needs
  nothing special: the saved history has exactly the iterations that ran.
  `WhileGrad` also takes the forward loop's inputs (unused by its kernel) and
  optional per-iteration cotangents of body intermediates; its gradient
  (`while_higher.py`) rewrites it as a While op over stacked saved values, so
  higher derivatives through while_loop work too.  The optimizer's
  `unused_outputs` pass may set `vjp_outputs` (`_drop_outputs`): the VJP plan
  then computes only the capture cotangents something reads, and the others
  hold None.

Integer, bool and string values get no gradient (None).

Registers `while_grad` as the gradient of While and StatelessWhile (and,
through `branch_grads`, `branch_grad` for If/Case); WhileGrad's own rule is
registered by `while_higher.py`, which builds on `while_vjp`.  Imports
`eager` and siblings (`ops` for the ops it differentiates).
"""
from __future__ import annotations

import numpy as np

from eager.dispatch import execute
from eager.registry import GRADIENT_REGISTERED_LATER, Spec, op, register_gradient

from . import branch_grads  # noqa: F401 - registers the If/Case gradient rule
from .ops import STATELESS_WHILE, WHILE
from ..compiler import prune
from .auto_deps import stateful_ops_in_order
from .grad_loop import grad_loop
from .plans import cached
from ..save_specs import merge, requests_of
from .vjp import build_vjp, dys_for, feed_spec, finish_vjp, save_entry, saved_positions


# ------------------------------------------------------------------ While
def while_grad(op, *dys):
    """Gradient rule of While / StatelessWhile."""
    a = op.attrs
    n = a["num_vars"]
    fvars = [i for i in range(n) if a["Tout"][i].is_floating]
    if not fvars or all(dys[i] is None for i in fvars):
        return [None] * len(op.inputs)
    off = n + (1 if a["has_max"] else 0)
    gv, gc = while_vjp(a, op.outputs[-1], list(op.inputs[:n]), list(op.inputs[off:]), dys_for(op, dys, fvars),
                       [], [])
    return gv + [None] * (off - n) + gc


def while_vjp(a: dict, variant, v0: list, caps: list, dv: list, extra_targets: list, extra_cots: list):
    """Cotangents `(of the loop inputs v0, of the captures)` of a While op with attrs `a` (None where none).

    `variant`, `v0`, `caps`: the op's variant output, loop inputs and captures as seen where the
    gradient is built.  `dv`: cotangents of the float loop outputs (in order); `extra_targets`:
    tensors of the loop body whose per-iteration cotangents are given too, as stacks `extra_cots`
    (row t: iteration t).
    """
    n = a["num_vars"]
    body = a["body"]
    fvars = [i for i in range(n) if a["Tout"][i].is_floating]
    fcaps = [j for j, c in enumerate(caps) if c.dtype.is_floating]
    gv, gc = [None] * n, [None] * len(caps)
    nf = len(fvars)
    wrt = fvars + [n + j for j in fcaps]
    targets = [body.outputs[i] for i in fvars] + list(extra_targets)
    g, gr = build_vjp(body, targets, wrt, f"{body.name}_grad")
    keep = list(range(nf)) + [nf + c for c in range(len(fcaps)) if gr[nf + c] is not None]
    if not keep:
        return gv, gc
    finish_vjp(g, gr, body, wrt, keep)
    spec, wanted = feed_spec(g, body, n)
    cap_keep = [fcaps[k - nf] for k in keep[nf:]]
    attrs = {"vjp": g, "feeds": spec, "saved": tuple(save_entry(t, g) for t in wanted),
             "n_dy": nf, "n_extra": len(extra_targets), "n_caps": len(caps),
             "cap_index": tuple(cap_keep),
             "Tout": tuple(a["Tout"][i] for i in fvars) + tuple(caps[j].dtype for j in cap_keep),
             "output_shapes": tuple(a["output_shapes"][i] for i in fvars) + tuple(caps[j].shape for j in cap_keep)}
    outs = execute(WHILE_GRAD, (variant, *dv, *extra_cots, *caps, *v0), attrs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for i, o in zip(fvars, outs):
        gv[i] = o
    for j, o in zip(cap_keep, outs[nf:]):
        gc[j] = o
    return gv, gc


def _while_grad_kernel(variant, *rest, vjp, feeds, n_dy, cap_index, saved=(), n_extra=0, n_caps=None,
                       vjp_outputs=None, **_):
    if variant is None:
        raise RuntimeError("WhileGrad: the forward While op saved no values (internal error: the plan's "
                           "residuals stage did not see this gradient)")
    n_iter, history, names = variant
    read = saves_read(vjp, feeds, n_dy + n_extra, saved, vjp_outputs)
    at = dict(zip(read, saved_positions(names, [saved[i][0] for i in read], "WhileGrad")))
    feeds = [(kind, i if kind == 0 else at.get(i)) for kind, i in feeds]     # None: a value the walk never reads
    dv, ext = rest[:n_dy], rest[n_dy:n_dy + n_extra]
    caps = rest[n_dy + n_extra:] if n_caps is None else rest[n_dy + n_extra:n_dy + n_extra + n_caps]
    plan = grad_loop(vjp, feeds, n_dy, n_extra, vjp_outputs)
    # the capture cotangents computed (all, unless the `unused_outputs` pass dropped some nobody reads)
    slots = range(len(cap_index)) if vjp_outputs is None else [k - n_dy for k in vjp_outputs[n_dy:]]
    try:
        res = plan.fn(n_iter, history, *dv, *ext, *caps)
    except Exception as e:
        raise plan.map_error(e) from None
    dv = res[:n_dy]
    capg = [None] * len(cap_index)
    for c, g in zip(slots, res[n_dy:]):
        capg[c] = g
    for c in slots:
        if capg[c] is None:
            capg[c] = np.zeros_like(caps[cap_index[c]])
    outs = tuple(dv) + tuple(capg)     # a dropped output holds None: nothing reads it
    return outs[0] if len(outs) == 1 else outs    # a one-output op's kernel returns the bare value


def _infer_grad(specs, attrs):
    return [Spec(s.dims, d) for d, s in zip(attrs["Tout"], attrs["output_shapes"])]


def _requests(op, k):
    """What this WhileGrad reads from input `k` (residuals.py): the forward loop's saved values through
    its variant input; for a captured variant (a loop inside a gradient body), what its VJP reads."""
    a = op._attrs
    if k == 0:
        saved = tuple(a.get("saved", ()))
        read = saves_read(a["vjp"], a["feeds"], a["n_dy"] + a.get("n_extra", 0), saved, a.get("vjp_outputs"))
        return merge([(tuple(saved[i] for i in read),)])
    first_cap = 1 + a["n_dy"] + a.get("n_extra", 0)
    j = k - first_cap
    n_caps = a.get("n_caps")
    if j < 0 or (n_caps is not None and j >= n_caps):
        return None
    base = a["n_dy"] + a.get("n_extra", 0)
    vjp = a["vjp"]
    return merge([requests_of(vjp.inputs[base + p]) for p, (kind, i) in enumerate(a["feeds"])
                  if kind == 0 and i == j])


def saves_read(vjp, feeds: tuple, base: int, saved: tuple, outputs=None) -> tuple:
    """The indices of the `saved` entries that VJP graph `vjp` reads to compute `outputs` (indices of its
    outputs; None: all): with some capture cotangents dropped (`vjp_outputs`), what only they needed (the
    index and slice bounds of an RNN's `x[t]`, for the cotangent of `x`) is neither read nor saved.
    `feeds[p]` says how `vjp.inputs[base + p]` is fed: `(1, i)` from `saved[i]`."""
    if outputs is None:
        return tuple(range(len(saved)))

    def make():
        outs = [vjp.outputs[i] for i in outputs]
        fed = vjp.inputs[base:]
        ops = prune(fed, outs, stateful_ops_in_order(vjp))
        used = {id(t) for op in ops for t in op.inputs} | {id(t) for t in outs}
        return (None, tuple(sorted(i for (kind, i), t in zip(feeds, fed) if kind == 1 and id(t) in used)))
    return cached(vjp, ("saves_read", tuple(feeds), base, tuple(outputs)), make)


def _lower_while_grad(op, ctx):
    return lambda *args: _while_grad_kernel(*args, **op._attrs)


def _drop_outputs(op, used: frozenset):
    """`unused_outputs` pass hook: the attrs of this WhileGrad computing only the capture cotangents in
    `used` (the loop variables' cotangents are carried from iteration to iteration: always computed).
    The op keeps its outputs; the dropped ones hold no value."""
    a = op._attrs
    n_dy = a["n_dy"]
    base = a.get("vjp_outputs")
    base = tuple(range(len(a["vjp"].outputs))) if base is None else base
    kept = tuple(i for i in base if i < n_dy or i in used)
    return None if kept == base else dict(a, vjp_outputs=kept)


WHILE_GRAD = op("WhileGrad", _while_grad_kernel, _infer_grad, GRADIENT_REGISTERED_LATER, num_outputs=-1,
                extra={"lower": _lower_while_grad, "drop_outputs": _drop_outputs, "requests": _requests},
                attrs=("vjp", "feeds", "saved", "n_dy", "n_extra", "n_caps", "cap_index", "Tout", "output_shapes",
                       "vjp_outputs"),
                doc="Gradient of While: runs the VJP graph over the saved iterations in reverse "
                    "(inputs: variant, cotangents, per-iteration cotangent stacks, captures, loop inputs).")

for _op in (WHILE, STATELESS_WHILE):
    register_gradient(_op, while_grad)
