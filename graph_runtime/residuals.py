"""Residuals: the body values a control-flow op saves for its gradient, decided per plan, never stored.

A gradient of an If/Case/While op needs values computed inside the op's bodies
(its *residuals*).  The op the user built never changes: the ops that read its
last (`variant`) output declare what they read (`OpDef.extra["requests"]`:
the gradient ops `WhileGrad`, `CFSavedValues`, `CFSavedStacks`), and when a
plan is compiled the pipeline's `residuals` stage (`with_residuals`) rewrites
the graph: every control-flow op whose variant output something the plan runs
reads becomes a *new* op, the same but with an attr `saves` listing exactly
the values those readers request (JAX's partial evaluation; TensorFlow 2's
forward function with extra outputs).  The user's graph is not touched (the
rewrite builds a new graph, copy-on-write like the optimizer's passes), so a
plan is a pure function of the graph and its fetches: a gradient built after
any number of runs gets the values it needs, and a plan that does not run
the gradient saves nothing.

A *save spec* (the value of `saves`, and of what `requests` hooks return) is
a tuple with one entry per body that can save (If: then, else; Case: the
branches; While: the body), each a tuple of `(tensor name, sub)` pairs sorted
by name.  Names are those of tensors of that body (they survive a GraphDef
round trip).  `sub` is None, or, when the saved tensor is itself the variant
output of a control-flow op inside the body, that op's own save spec: the
rewrite applies it when the body is compiled (`prepare(..., residuals=...)`).

Ops taking part declare hooks in `OpDef.extra`:
- `"saves"`: True for ops that accept a `saves` attr (If/Case/While);
- `"requests"(op, k)`: the save spec op reads through its input `k`, or None;
- `"input_bodies"(op, k)`: the body placeholders fed by input `k` (an op that
  passes a variant into a body: the readers inside the body count).

Imports `compiler` (pruning), `passes` (the Rewriter) and `save_specs` (the spec helpers, which the
`unused_outputs` pass uses too).
"""
from __future__ import annotations

from .compiler import prune
from .passes import GraphPass, Rewriter
from .passes.core import make_stats
from .save_specs import consumers, merge, requests_of


def _rewrite(specs: dict):
    def fn(graph, ctx):
        rw = Rewriter(graph, ctx)
        for op in graph._ops:
            spec = specs.get(id(op))
            if spec is None or spec == op._attrs.get("saves", ()):
                rw.copy(op)
            else:
                rw.copy(op, attrs=dict(op._attrs, saves=spec))
                rw._count("saves")
        out = rw.finish()
        return out, make_stats("residuals", graph, out, rw)
    return fn


def with_residuals(graph, feeds, fetches, targets, fetched_specs=None, ctx=None):
    """`graph` with every control-flow op whose saved values the plan reads replaced by one that saves
    them (see the module docstring); `graph` itself when nothing needs saving.

    `fetched_specs`: fetched variant tensor name -> the save spec its reader (an enclosing op's
    gradient) needs.  `ctx`: the PassContext naming what must survive (the fetches, feeds and targets).
    """
    fetched_specs = fetched_specs or {}
    savers = [op for op in graph._ops if op._opdef.extra.get("saves")]
    if not savers:
        return graph
    needed = {id(op) for op in prune(feeds, fetches, targets)}
    uses = None
    specs = {}
    for op in savers:
        if id(op) not in needed:
            continue
        variant = op._outputs[-1]
        extra = fetched_specs.get(variant.name)
        if uses is None:
            uses = consumers(graph)
        spec = merge((op._attrs.get("saves"), extra, requests_of(variant, uses, needed)))
        if spec:
            specs[id(op)] = spec
    if not specs:
        return graph
    out, _ = GraphPass("residuals", _rewrite(specs), iterative=False)(graph, ctx)
    return out
