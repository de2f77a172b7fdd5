"""`BodyGraph`: the subgraph of one branch or loop body, and tracing Python callables into it.

A body graph is a `Graph` whose `inputs` are `Placeholder` ops (the explicit
arguments first, e.g. loop variables, then one per captured outer tensor) and
whose `outputs` are its results.  It is held in an attr of the If/While/Case op
that runs it, and the executor compiles it once into a plan of its own.

Capturing (`capture`): a tensor of an enclosing graph used inside the body
becomes a new body input; `captures` lists the outer tensors in input order,
and the builder passes them as extra explicit inputs of the op (in a nested
body the outer tensor is itself captured by the enclosing body, and so on up).
An eager tensor is first captured by the enclosing graph (a `Const` there, or
a function input when `tracing` overrides `capture`), then by the body.

Variables are used by reference.  Assignments stay inside the body (they run
each time the body runs, chained in program order by `AutoControlDependencies`).
A *read* of a variable that the body never assigns is hoisted: it becomes one
`ReadVariableOp` in the enclosing graph (recorded by active tapes there),
captured like any outer tensor.  That makes gradients with respect to
variables read inside loops and branches work through the op's ordinary input
gradients, exactly as for other captured tensors, and keeps the body free of
per-iteration reads.  If tracing finds a variable both read and assigned in the
body (or in a body nested in it, or, for a loop, one read by the cond and
assigned by the body: `trace_together`), the callable is traced again with that
variable's reads kept inside (`no_hoist`), so each read sees the previous
assignment; gradients then do not flow to that variable (as in TensorFlow,
where an assignment cuts the gradient).  The retrace calls the user's Python
function twice; ops of the abandoned first trace are never run.

Creating a `Variable` inside a body is an error (create it outside).

Devices: a body starts in the device scope active in the enclosing graph when
it is built, so the ops of a `while_loop` or `cond` built under `g.device(...)`
carry that device, like the op holding them.
Active gradient tapes are paused while a body is traced (the op as a whole is
recorded instead).

Imports `eager` and `graph_runtime` siblings.
"""
from __future__ import annotations

import contextlib
from typing import Callable

from eager import context as _context
from eager import tape_state as _tape_state
from eager.dispatch import execute
from eager.variables import READ

from ..building import foreign_tensor_error
from ..graph import Graph
from ..graph_ops import PLACEHOLDER
from ..op_traits import written_vars
from ..operation import GraphTensor
from .auto_deps import AutoControlDependencies, has_effects


class BodyGraph(AutoControlDependencies, Graph):
    """One branch / loop body / gradient body (see the module docstring)."""

    def __init__(self, name: str, outer, hoist_reads: bool = True, no_hoist: frozenset = frozenset(),
                 capture_eager_outside: bool = True):
        super().__init__(name, resources=getattr(outer, "resources", None))    # the outer graph's variables
        self.outer = outer
        self.captures: list = []              # outer tensors, in capture order
        self._capture_map: dict = {}          # id(outer tensor) -> (outer tensor, body placeholder)
        self._hoist_reads = hoist_reads
        self.no_hoist = set(no_hoist)         # id(var) of variables whose reads stay inside
        parent = outer if isinstance(outer, BodyGraph) else None
        if parent is not None:
            self.no_hoist |= parent.no_hoist
        self.hoisted: dict = {}               # id(var) -> (var, body tensor)
        self.assigned: dict = {}              # id(var) -> var assigned here or in a nested body
        self._capture_eager_outside = capture_eager_outside
        self._outer_tapes: list = []
        self._plans: dict = {}                # compiled plans, see plans.py
        if isinstance(outer, Graph):
            self._device_stack.extend(outer._device_stack)   # body ops inherit the outer device scopes

    # -- inputs ---------------------------------------------------------------
    def add_input(self, dtype, shape, name: str) -> GraphTensor:
        """A new body input (`Placeholder`), appended to `inputs`."""
        with self.control_dependencies(None):
            t = self.add_op(PLACEHOLDER, (), {"dtype": dtype, "shape": shape}, name)
        self.inputs.append(t)
        return t

    def capture(self, tensor):
        if isinstance(tensor, GraphTensor) and tensor._op._graph is self:
            return tensor
        hit = self._capture_map.get(id(tensor))
        if hit is not None and hit[0] is tensor:
            return hit[1]
        if not isinstance(tensor, GraphTensor):
            if not self._capture_eager_outside or self.outer is None:
                return super().capture(tensor)
            outer_t = self._outer_capture(tensor)
        else:
            if not self._is_ancestor(tensor._op._graph):
                raise foreign_tensor_error(tensor, f"does not enclose this {self.name or 'body'} graph; it "
                                                   f"cannot be used inside it")
            outer_t = tensor
        ph = self.add_input(outer_t.dtype, outer_t.shape, "capture")
        self.captures.append(outer_t)
        self._capture_map[id(tensor)] = (tensor, ph)
        if outer_t is not tensor:
            self._capture_map[id(outer_t)] = (outer_t, ph)
        return ph

    def _no_value_message(self, tensor) -> str:
        """A body's tensors are the enclosing graph's kind of tensor: ask it (a function or a Session graph)."""
        if isinstance(self.outer, Graph):
            return self.outer._no_value_message(tensor)
        return super()._no_value_message(tensor)

    def _out_of_scope_message(self, tensor):
        if isinstance(self.outer, Graph):
            return self.outer._out_of_scope_message(tensor)
        return None

    def _outer_capture(self, tensor):
        with _context.scope(self.outer):
            return self.outer._as_graph_input(tensor)

    def _is_ancestor(self, g) -> bool:
        cur = self.outer
        while cur is not None:
            if cur is g:
                return True
            cur = getattr(cur, "outer", None)
        return False

    # -- ops ------------------------------------------------------------------
    def add_op(self, opdef, inputs, attrs, name=None):
        if opdef is READ and self._hoist_reads:
            var = attrs["var"]
            if id(var) not in self.no_hoist:
                return self._hoisted_read(var)
        return super().add_op(opdef, inputs, attrs, name)

    def add_node(self, opdef, inputs, attrs, name=None):
        op = super().add_node(opdef, inputs, attrs, name)
        for var in written_vars(op):
            self.assigned[id(var)] = var
        for v in attrs.values():
            nested = v if isinstance(v, (list, tuple)) else (v,)
            for g in nested:
                if isinstance(g, BodyGraph):
                    self.assigned.update(g.assigned)
        return op

    def _hoisted_read(self, var):
        hit = self.hoisted.get(id(var))
        if hit is not None:
            return hit[1]
        with _tape_state.recording_with(self._outer_tapes), _context.scope(self.outer):
            outer_t = execute(READ, (), {"var": var})
        t = self.capture(outer_t)
        self.hoisted[id(var)] = (var, t)
        return t

    def create_variable(self, var, init_tensor) -> None:
        raise ValueError(f"Variable {var._name!r} is created inside a {self.name or 'control-flow'} body "
                         f"(cond/while_loop/switch_case): create variables outside the control-flow "
                         f"callables and use them inside")

    def has_effects(self) -> bool:
        """True when some op of this body has side effects (its If/Case/While op is the stateful variant)."""
        return has_effects(self)

    def conflicts(self) -> set:
        """id(var) of variables both hoisted (read outside) and assigned in this body."""
        return set(self.hoisted) & set(self.assigned)


def trace(name: str, outer, fn: Callable, make_args: Callable, no_hoist: frozenset = frozenset(),
          hoist_reads: bool = True):
    """Trace `fn(*make_args(body))` into a new `BodyGraph`; returns `(body, python_result)`.

    `make_args(body)` creates the explicit inputs (and returns the arguments to
    call `fn` with).  Retraces once with conflicting variables' reads kept
    inside (see the module docstring).
    """
    body, result = _trace_once(name, outer, fn, make_args, no_hoist, hoist_reads)
    bad = body.conflicts()
    if bad:
        body, result = _trace_once(name, outer, fn, make_args, frozenset(no_hoist) | bad, hoist_reads)
    return body, result


def trace_together(outer, parts: list) -> list:
    """Trace several bodies that run in turn, repeatedly (a loop's cond and
    body): `parts` is a list of `(name, fn, make_args)`; returns the bodies.

    A variable read in one of them and assigned in another (e.g. read by the
    cond, assigned by the body) is a conflict for all of them: their reads stay
    inside, so every evaluation of the cond sees the body's last assignment.
    """
    bodies = [trace(name, outer, fn, make_args)[0] for name, fn, make_args in parts]
    hoisted = set().union(*(b.hoisted for b in bodies))
    assigned = set().union(*(b.assigned for b in bodies))
    bad = frozenset(hoisted & assigned)
    if bad:
        bodies = [trace(name, outer, fn, make_args, no_hoist=bad)[0] for name, fn, make_args in parts]
    return bodies


def _trace_once(name, outer, fn, make_args, no_hoist, hoist_reads):
    body = BodyGraph(name, outer, hoist_reads=hoist_reads, no_hoist=no_hoist)
    body._outer_tapes = _tape_state.active_tapes()
    with _tape_state.recording_with([]), body.as_default():
        args = make_args(body)
        result = fn(*args)
    return body, result


@contextlib.contextmanager
def paused_tapes():
    """No gradient tape records inside the block."""
    with _tape_state.recording_with([]):
        yield
