"""Compiled plans of body graphs: optimize and compile once per (body, extra fetches, config), replay per iteration.

`body_plan(graph, extra=(), config=None)` compiles `graph` with `compile_plan`
(GR's compiled executor): feeds are `graph.inputs`, fetches are
`graph.outputs` followed by `extra` (intermediates saved for gradients),
targets are the graph's stateful ops (`stateful_ops_in_order`), so side
effects run even when no output depends on them.  Feed checks are off: the
values come from the enclosing op, whose inputs and outputs are already
checked.  The plan is cached on the body graph object itself
(`graph._plans`), so every executor, session and thread shares it; plans are
reentrant (all state is in locals).

Optimization: without `extra`, the body is first run through the optimizer
pipeline (`graph_runtime.passes.optimize`: constant folding, CSE, arithmetic,
fusion, ...) with every input, output and effect op preserved by name and
side-effecting ops kept (`keep_stateful`), then looked up by name in the
optimized graph (the passes' preserve-names contract).  `config` is the
`SessionConfig` of the plan being compiled (None: the default pipeline):
`optimize=False` compiles the body as traced, `disabled_passes` are skipped.
Bodies nested in the body are optimized the same way when the body's plan
lowers their ops (the config travels in `LoweringContext.config`).
`plan.optimization_report` holds the `OptimizationReport` (None when not
optimized).

A plan with `extra` fetches is never optimized: the extra tensors are save
requests of an active `GradState` (grad_state.py), i.e. tensors of *this*
graph object by identity, and a gradient's VJP graph reads them by position.
So an op whose gradient exists runs its bodies as traced (the "left alone"
rule every pass follows for ops with active grad state).

Hot paths call `plan.fn` (the generated function, no error mapping) and map
an escaping error with `plan.map_error`; `call(plan, args)` does both.
While loops are generated from these plans by `loop_plan.py` and cached in the
same dict (`cached`); `compiled_plans(graph, kind)` lists them.

Imports sibling modules, `graph_runtime.compiler` and (lazily) `graph_runtime.passes`.
"""
from __future__ import annotations

import threading

from ..compiler import Plan, compile_plan
from .auto_deps import stateful_ops_in_order

_lock = threading.RLock()   # re-entrant: compiling a While body compiles the If bodies inside it


def config_key(config) -> tuple:
    """What of a `SessionConfig` (or None) changes how bodies compile: (optimize, disabled passes)."""
    if config is None:
        return (True, ())
    return (bool(getattr(config, "optimize", True)), tuple(sorted(getattr(config, "disabled_passes", ()) or ())))


def cached(graph, key, make):
    """`graph._plans[key]`, made by `make()` under the lock on first use (shared by plans and loops)."""
    plans = getattr(graph, "_plans", None)
    if plans is None:
        plans = graph._plans = {}
    hit = plans.get(key)
    if hit is not None:
        return hit[1]
    with _lock:
        hit = plans.get(key)
        if hit is None:
            hit = plans[key] = make()
    return hit[1]


def body_plan(graph, extra: tuple = (), config=None) -> Plan:
    """The compiled plan of a body graph returning `outputs + extra` as a tuple."""
    ckey = config_key(config)

    def make():
        if extra or not ckey[0]:
            plan = compile_plan(graph, list(graph.inputs), list(graph.outputs) + list(extra),
                                stateful_ops_in_order(graph), container="tuple", check_feeds=False, config=config)
        else:
            plan = _optimized_plan(graph, config, ckey[1])
        return (tuple(extra), plan)   # keep `extra` alive: the key holds ids

    return cached(graph, ("plan", tuple(id(t) for t in extra), ckey), make)


def _optimized_plan(graph, config, disabled: tuple) -> Plan:
    from ..passes import optimize
    effects = stateful_ops_in_order(graph)
    names = [t.name for t in graph.inputs] + [t.name for t in graph.outputs] + [o.name for o in effects]
    opt, report = optimize(graph, names, disabled=disabled, keep_stateful=True)
    if opt is graph:
        inputs, outputs, targets = list(graph.inputs), list(graph.outputs), effects
    else:
        inputs = [opt.get_tensor_by_name(t.name) for t in graph.inputs]
        outputs = [opt.get_tensor_by_name(t.name) for t in graph.outputs]
        targets = [opt.get_operation_by_name(o.name) for o in effects]
    plan = compile_plan(opt, inputs, outputs, targets, container="tuple", check_feeds=False, config=config)
    plan.optimization_report = report
    return plan


def compiled_plans(graph, kind: str = "plan") -> list:
    """The plans compiled so far for body graph `graph` (`kind` "plan": body plans; "loop": While loops
    generated on this body, see loop_plan.py), for introspection (`plan.source`, `plan.optimization_report`)."""
    return [entry[1] for key, entry in list(getattr(graph, "_plans", {}).items()) if key[0] == kind]


def call(plan: Plan, args):
    """Run `plan` on `args`; errors are re-raised naming the failing body op."""
    try:
        return plan.fn(*args)
    except Exception as e:
        raise plan.map_error(e) from None
