"""Compiled plans of body graphs: compile once per (body, extra fetches), replay per iteration.

`body_plan(graph, extra=())` compiles `graph` with `compile_plan` (GR's
compiled executor): feeds are `graph.inputs`, fetches are `graph.outputs`
followed by `extra` (intermediates saved for gradients), targets are the
graph's stateful ops (`stateful_ops_in_order`), so side effects run even when
no output depends on them.  Feed checks are off: the values come from the
enclosing op, whose inputs and outputs are already checked.  The plan is cached
on the body graph object itself (`graph._plans`), so every executor, session
and thread shares it; plans are reentrant (all state is in locals).

`raw(plan)` is the generated function itself (no error mapping), for the hot
loop of While; callers map errors with `plan.map_error` when one escapes.

Imports sibling modules and `graph_runtime.compiler`.
"""
from __future__ import annotations

import threading

from ..compiler import Plan, compile_plan
from .auto_deps import stateful_ops_in_order

_lock = threading.RLock()   # re-entrant: compiling a While body compiles the If bodies inside it


def body_plan(graph, extra: tuple = ()) -> Plan:
    """The compiled plan of a body graph returning `outputs + extra` as a tuple."""
    plans = getattr(graph, "_plans", None)
    if plans is None:
        plans = graph._plans = {}
    key = tuple(id(t) for t in extra)
    hit = plans.get(key)
    if hit is not None:
        return hit[1]
    with _lock:
        hit = plans.get(key)
        if hit is None:
            plan = compile_plan(graph, list(graph.inputs), list(graph.outputs) + list(extra),
                                stateful_ops_in_order(graph), container="tuple", check_feeds=False)
            hit = plans[key] = (tuple(extra), plan)   # keep `extra` alive: the key holds ids
    return hit[1]


def call(plan: Plan, args):
    """Run `plan` on `args`; errors are re-raised naming the failing body op."""
    try:
        return plan.fn(*args)
    except Exception as e:
        raise plan.map_error(e) from None
