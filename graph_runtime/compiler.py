"""Compile once, replay many: (graph, feeds, fetches, targets) -> `Plan`.

Pipeline (all iterative, no recursion, linear in the number of ops):

1. prune: walk back from the fetched tensors' ops and the target ops over data
   and control inputs; a fed tensor cuts the walk (its producer runs only if
   needed for another reason).  Needed placeholders that are not fed raise
   InvalidArgumentError naming them.
2. schedule: the needed ops in the order of `config.schedule` (scheduling.py:
   "creation", "alap" or "memory"; all honour data, control and effect order).
3. lower each op to a `Step`: `Const` values and alias ops (`OpDef.alias`:
   `Identity`, `StopGradient`; without control inputs) cost nothing at run time; `NoOp` emits
   nothing; every other op calls its registry kernel with its attrs bound.  An
   op whose OpDef has `extra["lower"]` (ops holding subgraphs: If/While/Case,
   function calls) is lowered by that factory instead:
   `lower(op, ctx) -> callable(*input_arrays) -> array | tuple` (`ctx` is a
   `LoweringContext`; the bodies arrive already optimized by the pipeline, see
   pipeline.py); its `extra["interpret"]`, if any, becomes `Step.interpret`
   (bodies run through an interpreting executor, plan.py).  An OpDef with
   `extra["specialize"]` may replace its kernel for given attrs:
   `specialize(attrs) -> callable(*input_arrays) | None` (a kernel with the
   attrs already applied, e.g. `MatMul` without transposes is `np.matmul`;
   None keeps the kernel); it must compute exactly what the kernel computes.
   `extra["specialize_shapes"](attrs, input dims, output dims)` does the same
   from the static shapes too (`SumToLike` with known shapes reduces over
   axes computed once); the callable must check what it assumes about the
   run-time shapes and fall back to the kernel otherwise.
4. last use of every value, then code generation (`codegen.py`): a Python
   function calling each kernel directly, reusing registers after a value's
   last use so memory is released as early as possible.

A `Plan` (plan.py: an immutable `Schedule` plus the generated function) is
called with the feed values (raw user values are converted and checked) and
returns the fetch values in the requested container.  Errors are re-raised
naming the op that failed (`runtime_errors.op_error`).  The other executors
(executors.py: per-op tracing, a thread pool) interpret the same schedule.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from eager.convert import convert_to_dtype
from eager.errors import InvalidArgumentError
from eager.registry import kernel_for
from eager.tensor import Tensor

from .codegen import generate
from .op_traits import is_ordered
from .operation import GraphTensor, Operation
from .plan import Plan, ReturnItem, Schedule, Step
from .resources import resolve_attrs
from .runtime_errors import feed_error
from .scheduling import order_ops

__all__ = ["compile_plan", "prune", "LoweringContext", "make_feed_converter", "Plan", "ReturnItem", "Step"]


class LoweringContext:
    """Handed to `OpDef.extra["lower"]` factories: `config`, the `SessionConfig` of the plan being compiled.

    Bodies reach lowering already optimized (the pipeline's `bodies` pass), so factories compile them as
    they are; `config` is there for what lowering itself may depend on (devices, later).
    """

    def __init__(self, config):
        self.config = config


# ------------------------------------------------------------------ prune and schedule
def prune(feeds, fetch_tensors, targets) -> list:
    """The ops needed to compute `fetch_tensors` and run `targets` given `feeds`, in creation order."""
    fed = {id(t) for t in feeds}
    needed: dict = {}
    stack = [t._op for t in fetch_tensors if id(t) not in fed]
    stack.extend(targets)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed[id(op)] = op
        if op._outputs and all(id(o) in fed for o in op._outputs) and op._opdef.effect != "write":
            continue    # every output is fed: the op does not run (see compile_plan), nor do its inputs
        for t in op._inputs:
            if id(t) not in fed and id(t._op) not in needed:
                stack.append(t._op)
        for c in op._control_inputs:
            if id(c) not in needed:
                stack.append(c)
    return sorted(needed.values(), key=lambda o: o._id)


def _sole_output(kernel):
    """A variadic-output kernel's result as the plan stores one output: the value itself. Such kernels
    return a sequence of outputs (a 1-tuple for `split(x, 1)` or a one-entry `py_function`), which the plan
    would otherwise store whole, as one wrong value."""
    def run(*args, **kwargs):
        out = kernel(*args, **kwargs)
        return out[0] if isinstance(out, (tuple, list)) and len(out) == 1 else out
    return run


def _unfed_placeholder_error(op) -> InvalidArgumentError:
    t = op._outputs[0]
    loc = op.location
    where = f" (created at {loc})" if loc is not None else ""
    dims = t.shape.dims
    shape = "unknown rank" if dims is None else "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"
    return InvalidArgumentError(f"You must feed a value for placeholder tensor {op.name!r} with dtype "
                                f"{t.dtype.name} and shape {shape}{where}", op_name=op.name)


# ------------------------------------------------------------------ compile
def compile_plan(graph, feeds, fetches, targets=(), container="tuple", returns=None,
                 check_feeds: bool = True, config=None) -> Plan:
    """Compile a replayable plan.

    `feeds`: graph tensors given positionally at call time.  `fetches`: graph
    tensors whose values are returned (duplicates allowed).  `targets`: ops
    run for their effects.  `returns` (optional) overrides the result list with
    `ReturnItem`s (Session uses it for op targets -> None and variable reads);
    `container` is "single", "list" or "tuple".  `config` (a `SessionConfig` or None) is handed to
    the lowering of ops holding bodies (`LoweringContext.config`).  Callers go through
    `pipeline.prepare`, which runs the stages before this one.
    """
    feeds, fetches, targets = list(feeds), list(fetches), list(targets)
    _check_membership(graph, feeds, fetches, targets)
    order = prune(feeds, fetches, targets)
    if config is not None and config.schedule != "creation":
        order = order_ops(order, {id(t) for t in feeds}, fetches, config.schedule)

    lowering = _Lowering(feeds, LoweringContext(config))
    for op in order:
        lowering.add(op)
    steps, consts = lowering.steps, lowering.consts

    if returns is None:
        returns = [ReturnItem("value", t) for t in fetches]
    returns = [ReturnItem(r.kind, r.tensor, r.var, lowering.vid[id(r.tensor)] if r.kind == "value" else -1)
               for r in returns]
    _mark_copies(returns, steps, consts)
    converters = [make_feed_converter(t) for t in feeds] if check_feeds else [(lambda v: v) for _ in feeds]
    plan = Plan(Schedule.build(feeds, steps, consts, returns, container, lowering.n_values,
                               _last_use(steps, returns), converters))
    generate(plan, check_feeds)
    return plan


def _check_membership(graph, feeds, fetches, targets) -> None:
    for t in feeds + fetches:
        if not isinstance(t, GraphTensor) or t._op._graph is not graph:
            raise ValueError(f"{t!r} is not a tensor of graph {graph!r}")
    for o in targets:
        if not isinstance(o, Operation) or o._graph is not graph:
            raise ValueError(f"{o!r} is not an operation of graph {graph!r}")


class _Lowering:
    """The steps of a plan, built one scheduled op at a time, and the value ids they read and write.

    Value ids: the feeds first (in order), then each constant and each computed output as it appears;
    an alias op's output shares its input's id.
    """

    def __init__(self, feeds, lctx: LoweringContext):
        self.vid: dict = {}              # id(graph tensor) -> value id
        for i, t in enumerate(feeds):
            if id(t) in self.vid:
                raise ValueError(f"tensor {t.name!r} is fed more than once")
            self.vid[id(t)] = i
        self.n_values = len(feeds)
        self.consts: dict = {}           # value id -> constant value
        self.steps: list = []
        self.lctx = lctx
        self._step_of_vid: dict = {}
        self._step_of_op: dict = {}
        self._last_ordered = -1          # the last step of an op whose effects keep program order

    def add(self, op) -> None:
        """Lower `op`: a step, or (a constant, an alias, an op whose outputs are all fed) no step at all."""
        vid = self.vid
        outs = op._outputs
        if op._opdef.name == "Placeholder" and not all(id(o) in vid for o in outs):
            raise _unfed_placeholder_error(op)
        if outs and all(id(o) in vid for o in outs) and op._opdef.effect != "write":
            return  # every output is fed: nothing to compute
        ins = tuple(vid[id(t)] for t in op._inputs)
        plain = not op._control_inputs
        if op._opdef.name == "Const" and plain and id(outs[0]) not in vid:
            vid[id(outs[0])] = self.n_values
            self.consts[self.n_values] = op._attrs["value"]
            self.n_values += 1
            return
        if op._opdef.alias and plain and id(outs[0]) not in vid:
            vid[id(outs[0])] = ins[0]
            return
        self._add_step(op, ins)

    def _add_step(self, op, ins: tuple) -> None:
        out_ids = []
        for o in op._outputs:
            if id(o) in self.vid:
                out_ids.append(-1)
            else:
                self.vid[id(o)] = self.n_values
                out_ids.append(self.n_values)
                self.n_values += 1
        kernel, attrs = self._kernel(op)
        ordered = is_ordered(op._opdef)
        deps = {self._step_of_vid[v] for v in ins if v in self._step_of_vid}
        deps.update(self._step_of_op[id(c)] for c in op._control_inputs if id(c) in self._step_of_op)
        if ordered and self._last_ordered >= 0:
            deps.add(self._last_ordered)
        idx = len(self.steps)
        interpret = op._opdef.extra.get("interpret")
        self.steps.append(Step(op, kernel, attrs, ins, tuple(out_ids),
                               functools.partial(kernel, **attrs) if attrs else kernel, op._opdef.name == "NoOp",
                               tuple(sorted(deps)),
                               functools.partial(interpret, op) if interpret is not None else None))
        self._step_of_op[id(op)] = idx
        if ordered:
            self._last_ordered = idx
        for v in out_ids:
            if v >= 0:
                self._step_of_vid[v] = idx

    def _kernel(self, op) -> tuple:
        """`(kernel, attrs)` for `op`: its lowering factory's callable, a specialization, or the registry kernel."""
        lower = op._opdef.extra.get("lower")
        if lower is not None:
            return lower(op, self.lctx), {}
        kernel, attrs = kernel_for(op._opdef, op._device), resolve_attrs(op)   # variables bound by handle
        extra = op._opdef.extra if kernel is op._opdef.kernel else {}
        special = extra.get("specialize")
        fn = special(attrs) if special is not None else None
        by_shapes = extra.get("specialize_shapes") if fn is None else None
        if by_shapes is not None:
            fn = by_shapes(attrs, [t._shape.dims for t in op._inputs], [t._shape.dims for t in op._outputs])
        if fn is not None:
            kernel, attrs = fn, {}
        if op._opdef.num_outputs == -1 and len(op._outputs) == 1:
            kernel = _sole_output(kernel)
        return kernel, attrs


def _last_use(steps, returns) -> dict:
    """Value id -> index of the last step reading it (fetched values live to the end: `len(steps)`)."""
    last_use: dict = {}
    for i, s in enumerate(steps):
        for v in s.inputs:
            last_use[v] = i
    for r in returns:
        if r.kind == "value":
            last_use[r.vid] = len(steps)
    return last_use


def _mark_copies(returns, steps, consts) -> None:
    """Fetched values that alias long-lived storage (constants, variables) are returned as copies, so a
    caller mutating a result cannot corrupt the graph or a variable."""
    persistent = set(consts)
    for s in steps:
        if "var" in s.op._attrs:
            persistent.update(v for v in s.outputs if v >= 0)
    for r in returns:
        r.copy = r.kind == "var" or (r.kind == "value" and r.vid in persistent)


def make_feed_converter(tensor) -> Callable:
    """value -> NumPy array of `tensor`'s dtype and a compatible shape, else InvalidArgumentError."""
    dtype, shape = tensor.dtype, tensor.shape

    np_dtype = dtype.np_dtype

    def convert(value):
        if type(value) is np.ndarray and value.dtype == np_dtype and not dtype.is_string and \
                shape.is_compatible_with(value.shape):
            return value
        if isinstance(value, Tensor) and value._is_symbolic:
            raise TypeError(f"The value of a feed cannot be a symbolic tensor ({value.name!r}); feed NumPy "
                            f"arrays, Python values or eager tensors (tensor {tensor.name!r})")
        try:
            arr = convert_to_dtype(value, dtype, f"Cannot feed the value for tensor {tensor.name!r}")
        except TypeError as e:            # the same rule as input_signature arguments
            raise feed_error(tensor, str(e)) from None
        if not shape.is_compatible_with(arr.shape):
            raise feed_error(tensor, f"Cannot feed value of shape {tuple(arr.shape)} for Tensor {tensor.name!r}, "
                                     f"which has shape {shape}")
        return arr
    return convert
