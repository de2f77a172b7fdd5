"""Op traits: the one place that answers "may this op be folded, dropped, reordered, aliased?".

Every `OpDef` declares `effect` ("none", "input", "read", "write") and `alias`
(see eager/registry.py).  The predicates below add what only a graph knows:
an op holding bodies (If/While/Case) is as impure as the ops inside them.

- `is_pinned(op)`: never folded, merged (CSE), hoisted or moved: the op is not
  pure (an input, a read, a write) or a body holds a read or a write.
- `has_side_effects(op)`: running it changes the world (effect "write", or a
  body with such an op); such ops are kept even when unused.
- `is_ordered(opdef)`: reads and writes keep program order (automatic control
  dependencies, the executor's effect chain); inputs and pure ops do not, nor
  a write that declares `extra["unordered"]` (a `_Send`: it writes only its
  own rendezvous key, so chaining it after other writes would only make a
  value wait for unrelated work, and a partial run's fetch for unrelated feeds).
- `is_input(opdef)`, `is_alias(opdef)`.
- `run_targets(graph, exclude)`: the ops a function-like graph (body, traced
  function, saved function) must run even when no output needs them: its
  writes in creation order.  Reads and inputs are never targets.
- `has_effects(graph)`: some op of `graph` reads or writes state (a cond or
  loop over such a body is the stateful `If`/`While`, never folded or hoisted).
- `var_of(op)`: the variable a read or write acts on (attr `var`), or None;
  `variables_of(op)`: every variable its attrs name (slots included).
- `written_vars(op)`: every variable a write changes: attr `var`, or the attrs
  its OpDef lists in `extra["writes"]` (a fused optimizer update also writes
  its slot variables).

Variables are named by `resources.ResourceHandle`s in attrs; the accessors
above return the live variables through the graph's resource table.

Imports `operation` and `resources` only.
"""
from __future__ import annotations

from .operation import attr_subgraphs
from .resources import ResourceHandle


def is_input(opdef) -> bool:
    return opdef.effect == "input"


def is_alias(opdef) -> bool:
    return opdef.alias


def is_ordered(opdef) -> bool:
    return (opdef.effect == "read" or opdef.effect == "write") and not opdef.extra.get("unordered")


def is_pinned(op) -> bool:
    """True when the op must not be folded, merged or moved (not pure, or a body reads or writes state)."""
    if op._opdef.effect != "none":
        return True
    for _, g in attr_subgraphs(op._attrs):
        if any(not is_input(o._opdef) and is_pinned(o) for o in g._ops):
            return True
    return False


def has_side_effects(op) -> bool:
    """True when running the op changes the world (assign, print, random state, asserts)."""
    if op._opdef.effect == "write":
        return True
    for _, g in attr_subgraphs(op._attrs):
        if any(has_side_effects(o) for o in g._ops):
            return True
    return False


def run_targets(graph, exclude=()) -> list:
    """The writes of `graph` in creation order (ids in `exclude` left out): what must run on every call."""
    return [op for op in graph._ops if op._opdef.effect == "write" and id(op) not in exclude]


def has_effects(graph) -> bool:
    """True when running `graph` reads or writes state."""
    return any(is_ordered(op._opdef) for op in graph._ops)


def var_of(op):
    """The variable a read or write acts on (its `var` attr, through the graph's resource table), or None."""
    if not is_ordered(op._opdef):
        return None
    h = op._attrs.get("var")
    return None if h is None else op._graph.resources.lookup(h)


def variables_of(op) -> list:
    """Every variable an op's attrs refer to (read or written: `var`, and e.g. an optimizer's slots)."""
    if not op._attrs or not is_ordered(op._opdef):
        return []
    return [op._graph.resources.lookup(v) for v in op._attrs.values() if type(v) is ResourceHandle]


def written_vars(op) -> list:
    """The variables a write changes: its `var` attr, or the attrs named by `opdef.extra["writes"]`."""
    if op._opdef.effect != "write":
        return []
    names = op._opdef.extra.get("writes", ("var",))
    return [op._graph.resources.lookup(h) for h in (op._attrs.get(n) for n in names) if type(h) is ResourceHandle]
