"""Automatic control dependencies: stateful ops run in program order, even when unused.

TensorFlow 2 semantics for function-like graphs (branch and loop bodies here,
traced functions in `tracing`): every stateful op (print, assign, random,
asserts, variable reads) created in the graph runs whenever the graph runs,
and they run in the order the program created them.  Two reusable pieces:

- `AutoControlDependencies`: a mixin for a `Graph` subclass.  Its `add_node`
  gives each new stateful op a control input on the previous stateful op of the
  same graph, so the order survives any scheduler (the thread-pool executor
  included) and any pass that respects control edges.
- `stateful_ops_in_order(graph)`: the stateful ops of `graph` in creation
  order, excluding graph inputs (`Placeholder*`).  Pass them as the `targets`
  of `compile_plan` so that they run even when no output depends on them.

Both are needed: the chain orders the effects; the targets make them run.
Imports `graph_runtime.building` only.
"""
from __future__ import annotations

_INPUT_OPS = frozenset({"Placeholder", "PlaceholderWithDefault"})


def is_effect(op) -> bool:
    """True for ops that must run for their side effects (stateful, not a graph input)."""
    return op._opdef.stateful and op._opdef.name not in _INPUT_OPS


def stateful_ops_in_order(graph) -> list:
    """The stateful ops of `graph` (not its placeholders) in creation order: the run targets of a body.

    A `ReadVariableOp` whose value nobody uses is left out: reading has no effect.
    """
    used = {id(t) for op in graph._ops for t in op._inputs}
    used.update(id(c) for op in graph._ops for c in op._control_inputs)
    used.update(id(t) for t in graph.outputs)
    return [op for op in graph._ops if is_effect(op) and not (
        op._opdef.name == "ReadVariableOp" and id(op) not in used and id(op._outputs[0]) not in used)]


def has_effects(graph) -> bool:
    """True when running `graph` has side effects (some op is stateful and not an input)."""
    return any(is_effect(op) for op in graph._ops)


class AutoControlDependencies:
    """Mixin for `Graph` subclasses: chain stateful ops in creation order (see module docstring)."""

    _last_effect = None

    def add_node(self, opdef, inputs, attrs, name=None):
        if opdef.stateful and opdef.name not in _INPUT_OPS:
            prev = self._last_effect
            if prev is not None:
                with self.control_dependencies([prev]):
                    op = super().add_node(opdef, inputs, attrs, name)
            else:
                op = super().add_node(opdef, inputs, attrs, name)
            self._last_effect = op
            return op
        return super().add_node(opdef, inputs, attrs, name)
