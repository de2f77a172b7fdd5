"""Graph building: what happens when an op is dispatched while a graph is the context.

`GraphBuilder` is the base class of `Graph`; it implements eager's declared
context protocol `eager.context.Context` (`add_op`, `add_node`,
`create_variable`, `trace_body`, `trace_bodies`).  `GraphKeys` (the standard collection names,
re-exported by graph.py) lives here because variable creation files variables
under them.  `add_op`:

1. turns every input into a tensor of this graph: graph tensors of this graph
   pass through; anything else goes through `capture(tensor)`, the overridable
   hook (default: an eager tensor becomes a `Const` op, cached per tensor; a
   tensor of another graph is an error).  `tracing` overrides `capture` to turn
   outer tensors into function inputs;
2. runs the op's `infer` on `Spec(shape, dtype, value)` of the inputs (value is
   the static value, e.g. a Const's), so shape/dtype errors surface at build time;
3. names the op (`<name scope><name or default>`, made unique) and records the
   control dependencies, device and the user's file:line.

Default op names follow TensorFlow 1: the op type (`MatMul`, `Const`,
`Placeholder`), except the Python operators, named like their `tf.Tensor`
methods (`add`, `sub`, `mul`, `truediv`, ...), and variable ops, named after
their variable (`w/read`, `w/Assign`).

Control flow: `eager.cond` / `while_loop` / `switch_case` trace their
callables through `trace_body` / `trace_bodies` and dispatch one op like any
other (eager/staged_control_flow.py).  Tracing a body needs `BodyGraph`, which
builds on `Graph`: the control-flow package installs it with
`install_body_tracing` when imported.

Imports `eager`, `device_spec`, `operation` and `resources` only.
"""
from __future__ import annotations

import re
from typing import Callable

from eager import context as _context
from eager.errors import InvalidArgumentError, OpError
from eager.ops.constant import CONST
from eager.registry import Spec, check_attr_names, check_call, lookup
from eager.tensor import Tensor
from eager.variables import ASSIGN

from .device_spec import merge_scopes
from .operation import GraphTensor, capture_user_frames
from .resources import bind_variables, check_handles

_DEFAULT_NAMES = {"AddV2": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "truediv", "FloorDiv": "floordiv",
                  "FloorMod": "mod", "Pow": "pow", "StringAdd": "add"}
_VAR_SUFFIX = {"ReadVariableOp": "read", "AssignVariableOp": "Assign", "AssignAddVariableOp": "AssignAdd",
               "AssignSubVariableOp": "AssignSub"}
_VALID_NAME = re.compile(r"^[A-Za-z0-9_.][A-Za-z0-9_.\-/]*$")

_BODY_TRACING: dict[str, Callable] = {}


def install_body_tracing(trace: Callable, trace_together: Callable) -> None:
    """Install how bodies are traced (`control_flow/body_graph.py`, which builds on `Graph` and so cannot
    be imported here): `trace(name, outer, fn, make_args)` and `trace_together(outer, parts)`."""
    _BODY_TRACING["trace"], _BODY_TRACING["trace_together"] = trace, trace_together


def _body_tracing(kind: str) -> Callable:
    fn = _BODY_TRACING.get(kind)
    if fn is None:
        raise NotImplementedError("cond/while_loop/switch_case on symbolic tensors need graph_runtime's "
                                  "control-flow package (graph_runtime.control_flow), which installs body "
                                  "tracing when imported")
    return fn


def default_op_name(opdef, attrs) -> str:
    return _DEFAULT_NAMES.get(opdef.name, opdef.name)


def check_node_name(name: str) -> None:
    if not isinstance(name, str) or not _VALID_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid op name: use letters, digits and '_.-/' (no ':')")


class GraphKeys:
    """Standard collection names (TensorFlow's)."""

    GLOBAL_VARIABLES = "variables"
    LOCAL_VARIABLES = "local_variables"
    TRAINABLE_VARIABLES = "trainable_variables"
    MODEL_VARIABLES = "model_variables"
    UPDATE_OPS = "update_ops"
    LOSSES = "losses"
    SUMMARIES = "summaries"
    TRAIN_OP = "train_op"
    INIT_OP = "init_op"
    QUEUE_RUNNERS = "queue_runners"
    LOCAL_INIT_OP = "local_init_op"
    READY_OP = "ready_op"
    READY_FOR_LOCAL_INIT_OP = "ready_for_local_init_op"
    SUMMARY_OP = "summary_op"
    SAVERS = "savers"
    WEIGHTS = "weights"
    BIASES = "biases"
    ACTIVATIONS = "activations"
    GLOBAL_STEP = "global_step"
    EVAL_STEP = "eval_step"
    COND_CONTEXT = "cond_context"
    WHILE_CONTEXT = "while_context"
    RESOURCES = "resources"
    LOCAL_RESOURCES = "local_resources"
    TRAINABLE_RESOURCE_VARIABLES = "trainable_resource_variables"
    METRIC_VARIABLES = "metric_variables"
    MOVING_AVERAGE_VARIABLES = "moving_average_variables"
    REGULARIZATION_LOSSES = "regularization_losses"
    CONCATENATED_VARIABLES = "concatenated_variables"
    SAVEABLE_OBJECTS = "saveable_objects"
    TABLE_INITIALIZERS = "table_initializer"
    ASSET_FILEPATHS = "asset_filepaths"


def foreign_tensor_error(tensor, what: str) -> Exception:
    """The error for a graph tensor used in a graph it does not belong to: TypeError ("out of scope", as in
    TF) for a tensor that leaked out of a traced function, ValueError otherwise."""
    leaked = tensor.graph._out_of_scope_message(tensor)
    if leaked is not None:
        return TypeError(leaked)
    return ValueError(f"Tensor {tensor.name!r} belongs to a different graph ({tensor.graph!r}) and {what}")


class GraphBuilder(_context.Context):
    """The graph-building context half of `Graph`: implements `eager.context.Context`."""

    is_eager = False

    # -- ops --------------------------------------------------------------------
    def add_op(self, opdef, inputs, attrs, name=None):
        """Stage one op; returns its output tensor, or a tuple for multi-output ops."""
        outs = self.add_node(opdef, inputs, attrs, name)._outputs
        return outs[0] if opdef.num_outputs == 1 else outs

    def add_node(self, opdef, inputs, attrs, name=None):
        """Stage one op and return the `Operation` itself."""
        self._check_not_finalized()
        ins = []
        for t in inputs:
            if isinstance(t, GraphTensor) and t._op._graph is self:
                ins.append(t)
            else:
                ins.append(self._as_graph_input(t, opdef))
        specs = [Spec(t._shape._dims, t._dtype, t._static_value) for t in ins]
        if attrs and (opdef.effect == "read" or opdef.effect == "write"):
            check_handles(self.resources, attrs, f"{opdef.name} op")
        out_specs = opdef.infer(specs, attrs)
        n = opdef.num_outputs
        if n >= 0 and len(out_specs) != n:
            raise InvalidArgumentError(f"{opdef.name}: shape inference returned {len(out_specs)} outputs, the op "
                                       f"declares {n}", op_name=opdef.name)
        op = self._create_op(opdef, tuple(ins), dict(attrs), self._op_name(opdef, attrs, name), out_specs,
                             self._current_control_inputs(), "", capture_user_frames(2), bind=False)
        if self._device_stack:
            op._device = merge_scopes(self._device_stack, op)
        if self._colocation_stack:
            self._colocate(op)
        if attrs and (opdef.effect == "read" or opdef.effect == "write"):
            # a variable is registered under the device its first op asks for (resources.py)
            op._attrs = bind_variables(self.resources, op._attrs, op._device)     # handles checked above
        return op

    def _colocate(self, op) -> None:
        """Join the colocation groups of the `colocate_with` targets and take their device (TF's rule)."""
        groups: list = []
        for target in self._colocation_stack:
            for name in (target._colocate or (target._name,)):
                if name not in groups:
                    groups.append(name)
        device = next((t._device for t in reversed(self._colocation_stack) if t._device), None)
        if device is not None:
            op._device = device           # the innermost target with a device wins over device scopes
        op._colocate = tuple(groups)

    def create_op(self, op_type: str, inputs, dtypes=None, attrs=None, name=None):
        """Add an op by its registered type name (e.g. "AddV2"); returns the `Operation`.

        `inputs`: tensors of this graph (eager tensors are captured as constants).  `attrs` must be the
        op's declared attrs; `dtypes` (optional) the expected output dtypes, checked against what the
        op infers from its inputs.  Shape/dtype checks of the inputs are the op's own inference.
        """
        if not isinstance(op_type, str):
            raise TypeError(f"create_op: op_type must be a string naming a registered op, got {op_type!r}")
        opdef = lookup(op_type)
        if opdef is None:
            raise ValueError(f"create_op: Op type not registered {op_type!r}")
        inputs = list(inputs)
        for i, t in enumerate(inputs):
            if not isinstance(t, (GraphTensor, Tensor)):
                raise TypeError(f"create_op({op_type}): input {i} must be a Tensor, got {type(t).__name__}: {t!r}")
        attrs = dict(attrs or {})
        bad = check_attr_names(opdef, len(inputs), attrs) or check_call(opdef, len(inputs), attrs)
        if bad is not None:
            raise ValueError(f"create_op({op_type}): {bad}")
        try:
            op = self.add_node(opdef, inputs, attrs, name)
        except OpError:
            raise
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as e:
            # the op's own inference met input it was never written for: say what was given
            ins = ", ".join(f"{t.dtype.name}{'[*]' if t.shape.dims is None else list(t.shape.dims)}"
                            for t in inputs)
            raise ValueError(f"create_op({op_type}): the op cannot take inputs ({ins}) with attrs {attrs}: "
                             f"{type(e).__name__}: {e}") from None
        if dtypes is not None:
            want = list(dtypes)
            got = [t.dtype for t in op._outputs]
            if len(want) != len(got) or any(w != g for w, g in zip(want, got)):
                raise TypeError(f"create_op({op_type}): expected output dtypes {[getattr(d, 'name', d) for d in want]}"
                                f", the op produces {[d.name for d in got]} from inputs "
                                f"{[t.dtype.name for t in op._inputs]}")
        return op

    def _op_name(self, opdef, attrs, name) -> str:
        if name:
            check_node_name(name)
            base = _context.current_name_scope() + name.rstrip("/")
        else:
            var = attrs.get("var") if attrs else None
            if var is not None and getattr(var, "_is_variable", False):
                base = var._name + "/" + _VAR_SUFFIX.get(opdef.name, opdef.name)
            else:
                base = _context.current_name_scope() + default_op_name(opdef, attrs)
        return self.unique_name(base)

    def _as_graph_input(self, t, opdef=None):
        if isinstance(t, Tensor):
            return self.capture(t)
        to_tensor = getattr(t, "_to_tensor", None)
        if to_tensor is not None:
            with _context.scope(self):
                return self._as_graph_input(to_tensor(), opdef)
        what = f" of {opdef.name}" if opdef is not None else ""
        raise TypeError(f"input{what} must be a Tensor, got {type(t).__name__}: {t!r}")

    def capture(self, tensor):
        """Return a tensor of this graph standing for `tensor` (an eager tensor or another graph's tensor).

        Default: an eager tensor becomes a `Const` op (one per tensor object); a
        tensor of another graph is an error.  Subclasses (function graphs)
        override this to create captured inputs.
        """
        if isinstance(tensor, GraphTensor):
            if tensor._op._graph is self:
                return tensor
            raise foreign_tensor_error(tensor, f"cannot be used as an input of an op in {self!r}")
        hit = self._const_cache.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        out = self.make_const(tensor._value)
        self._const_cache[id(tensor)] = (tensor, out)
        return out

    # -- tensors without a value here ---------------------------------------------
    def _no_value_message(self, tensor) -> str:
        """Why `tensor.numpy()` fails for a tensor of this graph, and what to use instead."""
        leaked = self._out_of_scope_message(tensor)
        if leaked is not None:
            return leaked
        return (f"Tensor {tensor.name!r} is a symbolic graph tensor: it has no value until the graph runs, so it "
                f"has no numpy(). Use Session.run({tensor.name!r}) (or tensor.eval() under a default session).")

    def _out_of_scope_message(self, tensor):
        """None for a graph whose tensors stay usable; a finished function trace's graph overrides this
        to say its tensor leaked out of the function."""
        return None

    def make_const(self, value, name=None):
        """A `Const` op holding NumPy `value` (no control dependencies)."""
        with self.control_dependencies(None):
            return self.add_op(CONST, (), {"value": value}, name)

    # -- variables -----------------------------------------------------------------
    def create_variable(self, var, init_tensor) -> None:
        """Called by `Variable(...)` in a graph: unique name, initializer op, collections."""
        self._check_not_finalized()
        var._name = self.unique_name(var._name)
        with self.control_dependencies(None):
            out = self.add_op(ASSIGN, (init_tensor,), {"var": var})
        var.initializer = out.op
        self._variables[var._name] = var
        self.add_to_collection(GraphKeys.GLOBAL_VARIABLES, var)
        if var.trainable:
            self.add_to_collection(GraphKeys.TRAINABLE_VARIABLES, var)

    def variables(self) -> list:
        """Variables created in this graph, in creation order."""
        return list(self._variables.values())

    # -- bodies of functional control flow (traced by the control-flow package) ----------
    def trace_body(self, name: str, fn, make_args):
        return _body_tracing("trace")(name, self, fn, make_args)

    def trace_bodies(self, parts: list) -> list:
        return _body_tracing("trace_together")(self, parts)
