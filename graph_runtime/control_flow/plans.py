"""Compiled plans of body graphs: compile once per (body, extra fetches, optimize), replay per iteration.

`body_plan(graph, saves=(), optimize=True)` compiles `graph` through the
pipeline (`pipeline.prepare`): feeds are `graph.inputs`, fetches are
`graph.outputs` followed by the tensors `saves` names (saved for gradients),
targets are the graph's writes (`stateful_ops_in_order`), so side effects run
even when no output depends on them, and writes are kept by the optimizer
(`keep_effects`).  Feed checks are off: the values come from the enclosing op,
whose inputs and outputs are already checked.  The plan is cached on the body
graph object itself (`graph_cache`), so every executor, session and thread
shares it; plans are reentrant (all state is in locals).

Who optimizes a body:
- a body reached by lowering (the op is part of a plan `prepare` compiled)
  was already optimized by the `bodies` pass of that plan's pipeline, with
  the plan's `SessionConfig`, or deliberately left as traced (optimization
  off, the pass disabled, values saved for a gradient): lowering asks for
  `optimize=False` and compiles it as it is;
- a body run by an op's kernel outside any plan (eager control flow, a
  While gradient's VJP) asks for `optimize=True`: the default pipeline.
`plan.optimization_report` holds the `OptimizationReport` (None when not
optimized).

A plan that saves values is never optimized here: the saved tensors are named
by the gradient that reads them (graph_runtime/residuals.py), in *this*
graph.  The `bodies` pass optimizes such a body beforehand with the saved
tensors preserved (names and values kept), unless a saved value is a nested
op's saved values; lowering then compiles the optimized body as it is.

Hot paths call `plan.fn` (the generated function, no error mapping) and map
an escaping error with `plan.map_error`; `call(plan, args)` does both.
While loops are generated from these plans by `loop_plan.py` and cached the
same way (`cached`); `compiled_plans(graph, kind)` lists them, including the
plans of the optimized versions of `graph` made by the `bodies` pass.

Imports sibling modules and `graph_runtime.compiler`, `.graph_cache`, `.pipeline`.
"""
from __future__ import annotations

from ..compiler import Plan
from ..graph_cache import cached, entries, get
from ..pipeline import DEFAULT_CONFIG, NO_OPTIMIZE, prepare
from .auto_deps import stateful_ops_in_order

__all__ = ["body_plan", "cached", "compiled_plans", "call"]


def body_plan(graph, saves: tuple = (), optimize: bool = True, outputs=None) -> Plan:
    """The compiled plan of a body graph returning `outputs` followed by the values `saves` lists.

    `saves`: the `(tensor name, sub)` entries of the enclosing op's save spec for this body
    (graph_runtime/residuals.py; `sub` is the spec of a nested control-flow op whose variant output
    is saved).  `outputs`: indices of the graph's outputs to return (None: all of them); what only
    the others need is not computed.
    """
    optimize = bool(optimize) and not saves
    outs = list(graph.outputs) if outputs is None else [graph.outputs[i] for i in outputs]

    def make():
        extra = [graph.get_tensor_by_name(name) for name, _ in saves]
        plan = prepare(graph, list(graph.inputs), outs + extra, stateful_ops_in_order(graph),
                       DEFAULT_CONFIG if optimize else NO_OPTIMIZE, check_feeds=False, keep_effects=True,
                       residual_specs={name: sub for name, sub in saves if sub})
        if not optimize:
            plan.optimization_report = get(graph, ("report",))   # set when the `bodies` pass made `graph`
        return (None, plan)

    # keyed by names, which survive a GraphDef round trip (a tensor's name is unique in its graph)
    key = ("plan", tuple(saves), optimize)
    return cached(graph, key if outputs is None else key + (tuple(outputs),), make)


def compiled_plans(graph, kind: str = "plan") -> list:
    """The plans compiled so far for body graph `graph` (`kind` "plan": body plans; "loop": While loops
    generated on this body, see loop_plan.py), for introspection (`plan.source`, `plan.optimization_report`).
    Plans of the optimized versions of `graph` (the `bodies` pass) are included."""
    out = list(entries(graph, kind))
    for opt, _report in entries(graph, "optimized"):
        if opt is not graph:
            out.extend(entries(opt, kind))
    return out


def call(plan: Plan, args):
    """Run `plan` on `args`; errors are re-raised naming the failing body op."""
    try:
        return plan.fn(*args)
    except Exception as e:
        raise plan.map_error(e) from None
