"""Calling a traced function under a recording GradientTape: one op, one gradient.

When a tape is recording, `Function.__call__` dispatches a `PartitionedCall`
op instead of replaying the plan directly, so the tape sees the whole call as a
single op.  Its inputs are the call's tensor arguments plus an eager read of
every trainable variable the graph reads before assigning it (so the tape can
differentiate with respect to those variables too); inside the plan those
reads are fed with the values read just before the call.  The op's gradient
runs a backward plan built once per concrete function with
`graph_runtime.gradients` on the traced graph (`CallPlan.backward`).  The
backward op `PartitionedCallGrad` is differentiable the same way (its plan's
own `backward()`), so nested tapes around a call give second and higher
derivatives; they are as differentiable as the traced graph's gradient ops
(cond/switch_case yes, while_loop only to first order: UnimplementedError).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import eager as ek
from eager.dispatch import execute
from eager.registry import Spec, op
from graph_runtime import placeholder
from graph_runtime.gradients import gradients
from graph_runtime.op_traits import run_targets, var_of, written_vars
from graph_runtime.pipeline import DEFAULT_CONFIG, prepare

_lock = threading.RLock()


@dataclass(eq=False)
class CallPlan:
    """A compiled plan of `graph` from `xs` to `ys`, and (built on demand) the plan of its gradient.

    `backward()` adds the gradient ops to `graph` once (placeholders for the
    cotangents of `ys`, then `graph_runtime.gradients`) and returns the plan
    from `xs + cotangents` to the gradients of `xs` (zeros where unconnected).
    That plan is a `CallPlan` too, so gradients of gradients go one level
    deeper each time, with no fixed limit.
    """

    graph: Any
    xs: list
    ys: list
    targets: list = field(default_factory=list)

    def __post_init__(self):
        self.fn = prepare(self.graph, list(self.xs), list(self.ys), list(self.targets), DEFAULT_CONFIG,
                          check_feeds=False)
        self._backward = None

    def backward(self) -> "CallPlan":
        with _lock:
            if self._backward is None:
                xs = list(self.xs)
                with self.graph.as_default():
                    dys = [placeholder(t.dtype, t.shape.dims, name="grad_in") for t in self.ys]
                    float_ys = [(y, d) for y, d in zip(self.ys, dys) if y.dtype.is_floating]
                    grads = gradients([y for y, _ in float_ys], xs, grad_ys=[d for _, d in float_ys]) \
                        if float_ys else [None] * len(xs)
                    grads = [g if g is not None else ek.zeros_like(x) for g, x in zip(grads, xs)]
                self._backward = CallPlan(self.graph, xs + dys, grads)
            return self._backward


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
        self.call = CallPlan(cf.graph, list(cf.inputs) + reads, list(cf.outputs), _targets(cf))
        self.forward = self.call.fn


def _targets(cf):
    return run_targets(cf.graph, cf.graph.lifted_ops)


def _call_kernel(*arrays, info):
    return info.forward(*arrays)


def _infer_call(specs, attrs):
    return [Spec(t.shape.dims, t.dtype) for t in attrs["info"].cf.outputs]


def _grad_call(entry, *dys):
    return _grad_of(entry.get_attr("info").call, entry, dys)


def _grad_of(plan: CallPlan, entry, dys) -> list:
    """Gradient rule shared by PartitionedCall and PartitionedCallGrad: one more level of CallPlan."""
    dys = [d if d is not None else ek.zeros_like(y) for d, y in zip(dys, entry.outputs)]
    grads = execute(CALL_GRAD, tuple(entry.inputs) + tuple(dys), {"plan": plan.backward()})
    grads = list(grads) if isinstance(grads, (tuple, list)) else [grads]
    return [g if x.dtype.is_floating else None for g, x in zip(grads, entry.inputs)]


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
    return list(outs)
