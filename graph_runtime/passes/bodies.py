"""Bodies: optimize the graphs an op holds in its attrs (If/Case branches, While cond and body).

Each body is run through the same pipeline as the graph holding it (minus the
passes the caller disabled, plus those it enabled, with its hashable per-pass
options: `ctx.options`), with its inputs,
outputs and writes preserved and every write kept (`keep_stateful`), so a body
still runs exactly as traced.  Nested bodies are optimized by this same pass
when it runs inside the body's own pipeline: the recursion follows the attrs,
not the executor, and lowering (control_flow/ops.py) compiles the bodies it is
given as they are.

The op is copied with its bodies replaced (same name, inputs, control inputs,
outputs); a gradient built later refers to the original op and its original
bodies.  An op whose bodies a gradient reads (`Rewriter.gradient_reads_bodies`:
the gradient names tensors of those bodies) is optimized only once the plan's
`residuals` stage has written down exactly what it saves (attr `saves`, none of
them a nested op's saved values): each body is then optimized with its saved
tensors preserved too, so they keep their names and values (a preserved value
is never fused away, overwritten in place or renamed) and the gradient finds
them in the optimized body.  The forward loop of a training step is then fused
like any other.  Otherwise (the variant read with nothing saved yet, or a
nested op's values saved) the op is left alone, the rule every other pass
follows.

Optimized bodies are cached on the source body (`graph_cache`, key
`("optimized", disabled passes)` -> `(graph, report)`) so every plan and
session shares them and their compiled plans; the report is also stored on
the optimized graph (key `("report",)`; the body itself when the pipeline
changed nothing) for `plans.compiled_plans`.

Imports sibling pass modules and `graph_runtime` core.
"""
from __future__ import annotations

from ..graph import Graph
from ..graph_cache import cached, put
from ..op_traits import run_targets
from .core import GraphPass, PassContext, make_stats, register_pass
from .manager import optimize
from .rewriter import Rewriter


def optimized_body(body: Graph, disabled: tuple, enabled: tuple = (), options: tuple = (),
                   keep: tuple = ()) -> tuple:
    """`(optimized graph, OptimizationReport)` of a function-like body graph (cached on `body`).

    `options`: the caller's per-pass options as sorted `(name, value)` pairs (values must be hashable).
    `keep`: names of further tensors of `body` that must keep their names and values (the values a
    gradient reads, saved by the enclosing op).
    """
    def make():
        names = ([t.name for t in body.inputs] + [t.name for t in body.outputs] +
                 [o.name for o in run_targets(body)] + list(keep))
        opt, report = optimize(body, names, disabled=disabled, keep_stateful=True, enabled=enabled,
                               options=dict(options))
        put(opt, ("report",), report)     # `body` itself when nothing changed
        return (None, (opt, report))
    key = ("optimized", disabled) if not enabled and not options else ("optimized", disabled, enabled, options)
    return cached(body, key + (("keep", keep),) if keep else key, make)


def _body_options(ctx: PassContext) -> tuple:
    """The per-pass options that bodies inherit, as a hashable key (unhashable values are left out)."""
    out = []
    for k, v in sorted(ctx.options.items()):
        if k in ("disabled_passes", "enabled_passes"):
            continue
        try:
            hash(v)
        except TypeError:
            continue
        out.append((k, v))
    return tuple(out)


def _saved_names(op, rw: Rewriter):
    """id(body graph) -> the names of its tensors that `op` saves for a gradient (attr `saves`); None when
    the op must be left as traced: something reads its saved values but it does not say which yet, or it
    saves a nested control-flow op's values (whose own save spec names tensors deeper down)."""
    spec = op._attrs.get("saves")
    if not spec:
        return None if rw.gradient_reads_bodies(op) else {}
    hook = op._opdef.extra.get("saving_bodies")
    if hook is None:
        return None
    bodies = hook(op._attrs)
    out: dict = {}
    for b, entries in enumerate(spec):
        if any(sub for _, sub in entries) or b >= len(bodies):
            return None
        out[id(bodies[b])] = tuple(name for name, _ in entries)
    return out


def _new_attrs(op, disabled: tuple, enabled: tuple = (), options: tuple = (), keep=None):
    """The op's attrs with every body optimized, or None when nothing changes.  `keep`: `_saved_names(op)`."""
    keep = keep or {}
    attrs, changed = dict(op._attrs), False
    for k, v in op._attrs.items():
        if isinstance(v, Graph):
            new = optimized_body(v, disabled, enabled, options, keep.get(id(v), ()))[0]
            changed |= new is not v
            attrs[k] = new
        elif isinstance(v, (list, tuple)) and v and all(isinstance(g, Graph) for g in v):
            new = [optimized_body(g, disabled, enabled, options, keep.get(id(g), ()))[0] for g in v]
            changed |= any(a is not b for a, b in zip(new, v))
            attrs[k] = type(v)(new)
    if not changed:
        return None
    return attrs


def optimize_bodies(graph: Graph, ctx: PassContext):
    disabled = tuple(sorted(ctx.option("disabled_passes", ()) or ()))
    enabled = tuple(sorted(ctx.option("enabled_passes", ()) or ()))
    options = _body_options(ctx)
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        keep = _saved_names(op, rw)
        attrs = None if keep is None else _new_attrs(op, disabled, enabled, options, keep)
        if attrs is None:
            rw.copy(op)
        else:
            rw.copy(op, attrs=attrs)
            rw._count("bodies")
    out = rw.finish()
    return out, make_stats("bodies", graph, out, rw)


BODIES = register_pass(GraphPass("bodies", optimize_bodies,
                                 "Optimize the bodies of If/Case/While ops (recursively, same pipeline).",
                                 iterative=False))
