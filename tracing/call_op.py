"""Calling a traced function under a recording GradientTape: one op, one gradient.

When a tape is recording, `Function.__call__` dispatches a `PartitionedCall`
op instead of replaying the plan directly, so the tape sees the whole call as a
single op.  Its inputs are the call's tensor arguments plus an eager read of
every trainable variable the graph reads before assigning it (so the tape can
differentiate with respect to those variables too); inside the plan those
reads are fed with the values read just before the call.

First order (`SavingCall`, TensorFlow's forward/backward function pair): the
gradient ops are built once, at the first recorded call, in a copy of the
traced graph (the traced graph never changes); the forward plan (of the traced
graph) also returns the forward values they read (one opaque last output of
the op; a control-flow op among them saves what its gradient reads, see
graph_runtime/residuals.py), and `PartitionedCallSavedGrad` runs only the
gradient ops from those values.  The function runs once per call: an assign inside a
differentiated `while_loop` happens once, and the backward does no forward
work.  When the backward would still have to run a forward op with effects
(a control edge to it), the call falls back to recomputing.

Recomputing (`CallPlan.backward`, and every order above the first): a
backward plan from the call's inputs and the outputs' cotangents, built once
per concrete function with `graph_runtime.gradients` on a copy of the traced
graph.
The backward op `PartitionedCallGrad` is differentiable the same way (its
plan's own `backward()`), so nested tapes around a call give second and
higher derivatives, as differentiable as the traced graph's gradient ops.

Imports `eager` and `graph_runtime` (gradients, the pipeline, `compiler.prune`,
the control-flow VARIANT dtype).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import eager as ek
from eager.dispatch import execute
from eager.registry import Spec, op
from graph_runtime import placeholder
from graph_runtime.compiler import prune
from graph_runtime.control_flow.ops import VARIANT
from graph_runtime.gradients import gradients
from graph_runtime.op_traits import run_targets, var_of, written_vars
from graph_runtime.passes import copy_graph
from graph_runtime.pipeline import DEFAULT_CONFIG, prepare
from graph_runtime.residuals import requests_of

_lock = threading.RLock()


@dataclass(eq=False)
class CallPlan:
    """A plan of `graph` from `xs` to `ys` (`fn`, compiled on first use), and (built on demand) the plan
    of its gradient.

    `backward()` adds the gradient ops to a copy of `graph` once (placeholders
    for the cotangents of `ys`, then `graph_runtime.gradients`; `graph` itself
    never changes) and returns the plan from `xs + cotangents` to the
    gradients of `xs` (zeros where unconnected), which recomputes the forward.
    That plan is a `CallPlan` too, so gradients of gradients go one level
    deeper each time, with no fixed limit.
    """

    graph: Any
    xs: list
    ys: list
    targets: list = field(default_factory=list)
    residual_specs: dict = field(default_factory=dict)     # fetched variant name -> save spec (residuals.py)

    def __post_init__(self):
        self._fn = None
        self._backward = None

    @property
    def fn(self):
        """The compiled plan (a call that only needs `backward()` never compiles the forward)."""
        if self._fn is None:
            with _lock:
                if self._fn is None:
                    self._fn = prepare(self.graph, list(self.xs), list(self.ys), list(self.targets),
                                       DEFAULT_CONFIG, check_feeds=False, residual_specs=self.residual_specs)
        return self._fn

    def backward(self) -> "CallPlan":
        with _lock:
            if self._backward is None:
                g = copy_graph(self.graph)          # the traced graph itself is never changed
                xs, ys = _same_in(g, self.xs), _same_in(g, self.ys)
                dys, grads = gradient_graph(g, xs, ys)
                self._backward = CallPlan(g, xs + dys, grads)
            return self._backward


def _same_in(graph, tensors) -> list:
    """The tensors of the same names in `graph` (a copy of theirs)."""
    return [graph.get_tensor_by_name(t.name) for t in tensors]


def gradient_graph(graph, xs: list, ys: list) -> tuple:
    """Add to `graph` placeholders for the cotangents of `ys` and the gradient ops; `(dys, grads of xs)`
    (zeros where a gradient is unconnected)."""
    with graph.as_default():
        dys = [placeholder(t.dtype, t.shape.dims, name="grad_in") for t in ys]
        float_ys = [(y, d) for y, d in zip(ys, dys) if y.dtype.is_floating]
        grads = gradients([y for y, _ in float_ys], xs, grad_ys=[d for _, d in float_ys]) \
            if float_ys else [None] * len(xs)
        grads = [g if g is not None else ek.zeros_like(x) for g, x in zip(grads, xs)]
    return dys, grads


class SavingCall:
    """The first-order gradient of a traced call without running the function twice.

    `build` adds the gradient ops to a copy of the traced graph (the graph itself never changes) and
    finds the *boundary*: the forward tensors they read.  `forward` is a plan of the traced graph
    computing the outputs and the boundary values (TensorFlow's forward function that outputs the
    intermediates its backward needs; a boundary value that is a control-flow op's saved values makes
    that op save what the gradient ops read: `residual_specs`); `backward`, a plan of the copy, takes
    the inputs, the saved boundary values and the outputs' cotangents, so none of the forward ops runs
    again: side effects
    in the function (e.g. an assign inside a `while_loop` whose gradient needs the loop's saved
    values) happen once per call, and the backward does no forward work.  None when the backward
    would still run a forward op with effects (a control edge to it): the call falls back to
    recomputing (`CallPlan.backward`).
    """

    def __init__(self, forward: CallPlan, backward: CallPlan, n_outputs: int):
        self.forward, self.backward, self.n_outputs = forward, backward, n_outputs

    @classmethod
    def build(cls, graph, xs: list, ys: list, targets: list):
        g = copy_graph(graph)
        gxs = _same_in(g, xs)
        start = len(g._ops)
        dys, grads = gradient_graph(g, gxs, _same_in(g, ys))
        fed = {id(t) for t in gxs}
        boundary, seen = [], set()
        for o in g._ops[start:]:
            for t in o._inputs:
                if t._op._id < start and id(t) not in fed and id(t) not in seen:
                    seen.add(id(t))
                    boundary.append(t)
        feeds = gxs + boundary + dys
        if any(o._id < start and o._opdef.effect != "none" for o in prune(feeds, grads, ())):
            return None
        specs = {t.name: requests_of(t) for t in boundary if t.dtype is VARIANT}
        forward = CallPlan(graph, xs, ys + _same_in(graph, boundary), targets, {n: s for n, s in specs.items() if s})
        return cls(forward, CallPlan(g, feeds, grads), len(ys))


class TapeCallInfo:
    """Per-ConcreteFunction data for tape-recorded calls: differentiable reads and the forward plan."""

    def __init__(self, cf):
        self.cf = cf
        reads, assigned = [], set()
        for o in cf.graph.get_operations():
            if o.opdef.effect == "read":
                var = var_of(o)
                if var is not None and id(var) not in assigned and var.trainable and var.dtype.is_floating:
                    reads.append(o.outputs[0])
            else:
                assigned.update(id(v) for v in written_vars(o))
        self.reads = reads
        self.variables = [var_of(r.op) for r in reads]
        xs, ys, targets = list(cf.inputs) + reads, list(cf.outputs), _targets(cf)
        self.call = CallPlan(cf.graph, xs, ys, targets)
        self.saving = SavingCall.build(cf.graph, xs, ys, targets)
        self.forward = self.call.fn if self.saving is None else self.saving.forward.fn


def _targets(cf):
    return run_targets(cf.graph, cf.graph.lifted_ops)


def _call_kernel(*arrays, info):
    values = info.forward(*arrays)
    saving = info.saving
    if saving is None:
        return values
    n = saving.n_outputs
    token = np.empty((), object)          # the saved boundary values, one opaque value for the backward
    token[()] = tuple(values[n:])
    return tuple(values[:n]) + (token,)


def _infer_call(specs, attrs):
    info = attrs["info"]
    outs = [Spec(t.shape.dims, t.dtype) for t in info.cf.outputs]
    return outs + ([Spec((), VARIANT)] if info.saving is not None else [])


def _grad_call(entry, *dys):
    info = entry.get_attr("info")
    saving = info.saving
    if saving is None:
        return _grad_of(info.call, entry, dys)
    n = saving.n_outputs
    grads = _backward(CALL_SAVED_GRAD, list(entry.inputs) + [entry.outputs[n]], entry.outputs[:n], dys[:n],
                      {"info": info})
    return _floats_only(grads, entry.inputs)


def _saved_grad_kernel(*arrays, info):
    k = len(info.call.xs)
    return info.saving.backward.fn(*arrays[:k], *arrays[k][()], *arrays[k + 1:])


def _infer_saved_grad(specs, attrs):
    return [Spec(t.shape.dims, t.dtype) for t in attrs["info"].saving.backward.ys]


def _grad_saved_grad(entry, *ddys):
    """Second order: the same math as the recomputing backward (`CallPlan.backward`), differentiated."""
    info = entry.get_attr("info")
    k = len(info.call.xs)
    inputs = list(entry.inputs[:k]) + list(entry.inputs[k + 1:])          # without the saved values
    g2 = _backward(CALL_GRAD, inputs, entry.outputs, ddys, {"plan": info.call.backward().backward()})
    return _floats_only(g2[:k] + [None] + g2[k:], entry.inputs)


def _grad_of(plan: CallPlan, entry, dys) -> list:
    """Gradient rule shared by PartitionedCall and PartitionedCallGrad: one more level of CallPlan."""
    return _floats_only(_backward(CALL_GRAD, entry.inputs, entry.outputs, dys, {"plan": plan.backward()}),
                        entry.inputs)


def _backward(opdef, inputs, outputs, dys, attrs) -> list:
    """Run backward op `opdef` on `inputs` and the cotangents `dys` of `outputs` (zeros where None);
    its results as a list."""
    dys = [d if d is not None else ek.zeros_like(y) for d, y in zip(dys, outputs)]
    grads = execute(opdef, tuple(inputs) + tuple(dys), attrs)
    return list(grads) if isinstance(grads, (tuple, list)) else [grads]


def _floats_only(grads, inputs) -> list:
    return [g if x.dtype.is_floating else None for g, x in zip(grads, inputs)]


def _grad_kernel(*arrays, plan):
    return plan.fn(*arrays)


def _infer_grad(specs, attrs):
    return [Spec(t.shape.dims, t.dtype) for t in attrs["plan"].ys]


def _grad_grad(entry, *dys):
    return _grad_of(entry.get_attr("plan"), entry, dys)


CALL = op("PartitionedCall", _call_kernel, _infer_call, _grad_call, num_outputs=-1, effect="write",
          doc="A traced function called as one op (used when a gradient tape records the call).")
CALL_GRAD = op("PartitionedCallGrad", _grad_kernel, _infer_grad, _grad_grad, num_outputs=-1, effect="write",
               doc="Backward pass of PartitionedCall (or of another PartitionedCallGrad): input gradients "
                   "from output gradients; differentiable again (attr plan: a CallPlan).")
CALL_SAVED_GRAD = op("PartitionedCallSavedGrad", _saved_grad_kernel, _infer_saved_grad, _grad_saved_grad,
                     num_outputs=-1, effect="write",
                     doc="Backward pass of PartitionedCall from the values its forward saved (inputs: the call's "
                         "inputs, the saved-values token, the outputs' cotangents); attr info: the call's "
                         "TapeCallInfo.")


def call_recorded(cf, arrays_inputs: list):
    """Run `cf` as one tape-visible op; returns the flat list of output tensors."""
    info = cf._tape_info
    if info is None:
        with _lock:
            if cf._tape_info is None:
                cf._tape_info = TapeCallInfo(cf)
        info = cf._tape_info
    reads = [v.value() for v in info.variables]
    outs = execute(CALL, tuple(arrays_inputs) + tuple(reads), {"info": info})
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    return outs[:len(info.cf.outputs)]         # (a saving call's last output is its saved values)
