"""Calling a traced function under a recording GradientTape: one op, one gradient.

When a tape is recording, `Function.__call__` dispatches a `PartitionedCall`
op instead of replaying the plan directly, so the tape sees the whole call as a
single op.  Its inputs are the call's tensor arguments plus an eager read of
every trainable variable the graph reads before assigning it (so the tape can
differentiate with respect to those variables too); inside the plan those
reads are fed with the values read just before the call.  The op's gradient
runs a backward plan built once per concrete function with
`graph_runtime.gradients` on the traced graph.  Not supported: gradients of
gradients through a function call (the backward op has no gradient rule).
"""
from __future__ import annotations

import threading

import eager as ek
from eager.dispatch import execute
from eager.registry import Spec, op
from graph_runtime import placeholder
from graph_runtime.compiler import compile_plan
from graph_runtime.gradients import gradients

_lock = threading.Lock()


class TapeCallInfo:
    """Per-ConcreteFunction data for tape-recorded calls: differentiable reads and plans."""

    def __init__(self, cf):
        self.cf = cf
        reads, assigned = [], set()
        for o in cf.graph.get_operations():
            var = o.attrs.get("var") if o.type != "Const" else None
            if var is None:
                continue
            if o.type == "ReadVariableOp" and id(var) not in assigned and var.trainable and var.dtype.is_floating:
                reads.append(o.outputs[0])
            elif o.type != "ReadVariableOp":
                assigned.add(id(var))
        self.reads = reads
        self.variables = [r.op.get_attr("var") for r in reads]
        self.forward = compile_plan(cf.graph, list(cf.inputs) + reads, cf.outputs,
                                    _targets(cf), container="tuple", check_feeds=False)
        self._backward = None

    def backward(self):
        with _lock:
            if self._backward is None:
                cf = self.cf
                xs = list(cf.inputs) + self.reads
                with cf.graph.as_default():
                    dys = [placeholder(t.dtype, t.shape.dims, name="grad_in") for t in cf.outputs]
                    grads = gradients(list(cf.outputs), xs, grad_ys=dys) if cf.outputs else [None] * len(xs)
                    grads = [g if g is not None else ek.zeros_like(x) for g, x in zip(grads, xs)]
                self._backward = compile_plan(cf.graph, xs + dys, grads, (), container="tuple",
                                              check_feeds=False)
            return self._backward


def _targets(cf):
    return [o for o in cf.graph.get_operations() if o.opdef.stateful and o.type not in ("ReadVariableOp",
                                                                                        "Placeholder")
            and id(o) not in cf.graph.lifted_ops]


def _call_kernel(*arrays, info):
    return info.forward(*arrays)


def _infer_call(specs, attrs):
    return [Spec(t.shape.dims, t.dtype) for t in attrs["info"].cf.outputs]


def _grad_call(entry, *dys):
    info = entry.get_attr("info")
    grads = execute(CALL_GRAD, tuple(entry.inputs) + tuple(dys), {"info": info})
    return list(grads)


def _grad_kernel(*arrays, info):
    return info.backward()(*arrays)


def _infer_grad(specs, attrs):
    info = attrs["info"]
    return [Spec(t.shape.dims, t.dtype) for t in list(info.cf.inputs) + info.reads]


CALL = op("PartitionedCall", _call_kernel, _infer_call, _grad_call, num_outputs=-1, stateful=True,
          doc="A traced function called as one op (used when a gradient tape records the call).")
CALL_GRAD = op("PartitionedCallGrad", _grad_kernel, _infer_grad, num_outputs=-1, stateful=True,
               doc="Backward pass of PartitionedCall: input gradients from output gradients.")


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
