"""`FuncGraph`: the graph a Python function is traced into.

It lifts variable creation out of the trace (a variable may be created on the
function's first call only; its initial value is computed right away from the
trace graph and those initializer ops are not replayed), and it says what a
symbolic tensor of a function is when one is used where it has no value:
inside the function while it is traced (`numpy()`: use eager.print there and
`.numpy()` on the result), or after tracing ended, when the tensor leaked out
of the function (out of scope: TF's TypeError).

A function traced while another graph is being built (a dataset's map
function made inside a traced function) may use that graph's tensors: each
becomes a captured input (`captures`: outer tensor and placeholder).  Such a
trace can only be copied into that graph (`inline.py`), which maps each
placeholder back to its tensor.  Also here: the placeholders a trace makes
for its arguments (`leaf_spec`, `placeholder_name`, `traced_value`).
"""
from __future__ import annotations

import numpy as np

import eager as ek
from eager import context as _context
from eager.tensor import Tensor
from eager.tensor_spec import TensorSpec
from graph_runtime import placeholder
from graph_runtime.building import GraphTensor
from graph_runtime.compiler import prune
from graph_runtime.graph import Graph
from graph_runtime.graph_ops import PLACEHOLDER

from .trace_type import component_specs, placeholder_value, tracing_type
from graph_runtime.pipeline import NO_OPTIMIZE, prepare


class FuncGraph(Graph):
    """The graph a Python function is traced into; lifts variable creation out of it."""

    def __init__(self, name: str, allow_variable_creation: bool):
        super().__init__(name)
        self.allow_variable_creation = allow_variable_creation
        self.created_variables: list = []
        self.lifted_ops: set = set()
        self.enclosing = tuple(_context.graphs_being_built())   # whose tensors may be captured
        self.captures: list = []              # (outer tensor, placeholder), in capture order

    def capture(self, tensor):
        if isinstance(tensor, GraphTensor) and tensor._op._graph is not self and \
                any(tensor._op._graph is g for g in self.enclosing):
            for outer, ph in self.captures:
                if outer is tensor:
                    return ph
            with self.control_dependencies(None):
                ph = self.add_op(PLACEHOLDER, (), {"dtype": tensor.dtype, "shape": tensor.shape}, "capture")
            self.captures.append((tensor, ph))
            return ph
        return super().capture(tensor)

    tracing_done = False      # set when the Python function has returned: its tensors are then out of scope

    def _no_value_message(self, tensor) -> str:
        leaked = self._out_of_scope_message(tensor)
        if leaked is not None:
            return f"{leaked} It has no numpy(): only eager tensors, such as the function's results, have one."
        return (f"Tensor {tensor.name!r}{_created_at(tensor)} is a symbolic tensor of function {self.name!r}, "
                f"which is being traced: it has no value until the traced graph runs, so it has no numpy(). "
                f"Inside the function use eager.print(tensor) to print its value at every call, and tensor ops "
                f"(eager.cond, or Python if/while on tensors, converted by autograph) to decide on it; outside, "
                f"call .numpy() on the function's result (return the tensor). To run the body eagerly, call "
                f"{self.name}.python_function(...).")

    def _out_of_scope_message(self, tensor):
        if not self.tracing_done:
            return None
        return (f"{tensor!r} is out of scope and cannot be used here: it was created while tracing function "
                f"{self.name!r}{_created_at(tensor)} and leaked out of it (kept in a global, an attribute or a "
                f"list). Use the function's return values instead.")

    def create_variable(self, var, init_tensor) -> None:
        if not self.allow_variable_creation:
            raise ValueError(
                f"Variable {var._name!r} was created on a call after the first: a traced function may create "
                f"variables only on its first call, and only once (graphjit, like TensorFlow, traces the "
                f"first call twice to check this). Create the variable outside the function, or guard it: "
                f"`if self.v is None: self.v = Variable(...)`.")
        ops = prune([], [init_tensor], [])
        for op in ops:
            if op.type == "Placeholder":
                raise ValueError(f"Variable {var._name!r}: its initial value depends on the function's "
                                 f"arguments; initialize it from constants or random ops instead")
        plan = prepare(self, [], [init_tensor], (), NO_OPTIMIZE, container="single", check_feeds=False)
        var.replace_stored_array(np.array(plan()), check=False)
        self.lifted_ops.update(id(o) for o in ops)
        self.created_variables.append(var)


def leaf_spec(x, spec):
    if spec is not None:
        return spec
    if isinstance(x, TensorSpec):
        return x
    if isinstance(x, Tensor):
        return TensorSpec(x.shape, x.dtype)
    return TensorSpec(np.shape(x), ek.as_dtype(np.asarray(x).dtype))


def placeholder_name(path: str, used: set) -> str:
    base = "".join(c if c.isalnum() or c == "_" else "_" for c in path).strip("_") or "arg"
    name, i = base, 1
    while name in used:
        name, i = f"{base}_{i}", i + 1
    used.add(name)
    return name


def traced_value(x, paths, used, placeholders, input_specs):
    """What the function is traced with for the non-tensor leaf `x`: for a trace type that passes tensors,
    the value rebuilt from new placeholders (added to `placeholders`/`input_specs`), else the placeholder
    value of its trace type, or `x` itself."""
    tt = tracing_type(x)
    specs = component_specs(tt) if tt is not None else []
    if not specs:
        return placeholder_value(x)
    path = next(paths, "arg")
    phs = [placeholder(s.dtype, s.shape.dims, name=placeholder_name(f"{path}_{j}", used))
           for j, s in enumerate(specs)]
    placeholders.extend(phs)
    input_specs.extend(specs)
    return tt.from_tensors(iter(phs))


def inline_only_plan(name, captures):
    """The plan of a trace that captured tensors of a graph being built: calling it is refused."""
    def refuse(*arrays):
        raise RuntimeError(f"{name} was traced while another graph was being built and uses its tensors "
                           f"({', '.join(repr(t.name) for t, _ in captures[:3])}): it can only be copied into "
                           f"that graph (ConcreteFunction.inline), not called")
    return refuse


def _created_at(tensor) -> str:
    if tensor.op.type == "Placeholder":
        return f" (the argument {tensor.op.name!r})"
    loc = tensor.op.location
    return f" (created at {loc.filename}:{loc.lineno})" if loc is not None else ""
