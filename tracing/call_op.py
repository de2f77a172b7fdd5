"""Calling a traced function under a recording GradientTape: one op, one gradient.

When a tape is recording, `Function.__call__` dispatches a `PartitionedCall`
op instead of replaying the plan directly, so the tape sees the whole call as a
single op.  Its inputs are the call's tensor arguments plus an eager read of
every trainable variable the graph reads before assigning it (so the tape can
differentiate with respect to those variables too); inside the plan those
reads are fed with the values read just before the call.

First order (`SavingCall`, TensorFlow's forward/backward function pair): the
gradient ops are built once per set of inputs the recording tapes track (the
*watched* inputs: a call whose data input no tape watches differentiates only
the variables), at the first recorded call with that set, in a copy of the
traced graph (the traced graph never changes); the forward plan (of the traced
graph) also returns the forward values they read (one opaque last output of
the op; a control-flow op among them saves what its gradient reads, see
graph_runtime/residuals.py), and `PartitionedCallSavedGrad` runs only the
gradient ops from those values.  Built for every input, a loop's gradient
with respect to its data input would make the forward loop save what only
that gradient reads (so an RNN's loop could not run compiled,
graph_runtime/control_flow/compiled_loop.py).  A gradient asked later for an
input outside the set (watched after the call) recomputes (below).  The
function runs once per call: an assign inside a differentiated `while_loop`
happens once, and the backward does no forward work.  When the backward would still have to run a forward op with effects
(a control edge to it), the call falls back to recomputing.

Recomputing (`backward`, and every order above the first): a
backward executable from the call's inputs and the outputs' cotangents, built once
per concrete function with `graph_runtime.gradients` on a copy of the traced
graph.  Every plan here is a `graph_runtime.runtime.Executable` (`call_executable`).
The backward op `PartitionedCallGrad` is differentiable the same way (the
`backward` of its executable), so nested tapes around a call give second and
higher derivatives, as differentiable as the traced graph's gradient ops.

Imports `eager` (ops, dispatch, `tape_state.tracked`) and `graph_runtime` (gradients, the pipeline, the
`unused_outputs` pass, `compiler.prune`, the control-flow VARIANT dtype, `runtime.Executable`).
"""
from __future__ import annotations

import threading
import numpy as np

import eager as ek
from eager import tape_state
from eager.dispatch import execute
from eager.registry import Spec, op
from graph_runtime import placeholder
from graph_runtime.compiler import prune
from graph_runtime.control_flow.ops import VARIANT
from graph_runtime.gradients import gradients
from graph_runtime.op_traits import run_targets, var_of, written_vars
from graph_runtime.passes import copy_graph, get_pass, run_pass
from graph_runtime.pipeline import DEFAULT_CONFIG, prepare
from graph_runtime.save_specs import requests_of
from graph_runtime.runtime import Executable, request_for

_lock = threading.RLock()
UNUSED_OUTPUTS = get_pass("unused_outputs")


def call_executable(graph, xs: list, ys: list, targets=(), residual_specs=None) -> Executable:
    """The executable of `graph` from `xs` to `ys` (running `targets` too), compiled on first use (a call
    that only needs its `backward` never compiles it).  `residual_specs`: fetched variant name -> save
    spec (graph_runtime/residuals.py)."""
    return Executable(None, request_for(graph, xs, ys, targets),
                      make=lambda: prepare(graph, list(xs), list(ys), list(targets), DEFAULT_CONFIG,
                                           check_feeds=False, residual_specs=residual_specs or {}))


def backward(executable: Executable) -> Executable:
    """The executable of `executable`'s gradient, made once: the gradient ops are added to a copy of its
    graph (placeholders for the cotangents of its fetches, then `graph_runtime.gradients`; the graph
    itself never changes), and it runs from `xs + cotangents` to the gradients of `xs` (zeros where
    unconnected), recomputing the forward.  Its own `backward` goes one level deeper, with no fixed
    limit, so gradients of gradients work."""
    with _lock:
        grad = executable.derived.get("backward")
        if grad is None:
            req = executable.request
            g = copy_graph(req.graph)          # the traced graph itself is never changed
            xs, ys = _same_in(g, req.feeds), _same_in(g, req.fetches)
            dys, grads = gradient_graph(g, xs, ys)
            grad = executable.derived["backward"] = call_executable(g, xs + dys, grads)
        return grad


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
    finds the *boundary*: the forward tensors they read.  `forward` is an executable of the traced graph
    computing the outputs and the boundary values (TensorFlow's forward function that outputs the
    intermediates its backward needs; a boundary value that is a control-flow op's saved values makes
    that op save what the gradient ops read: `residual_specs`); `backward`, an executable of the copy,
    takes the inputs, the saved boundary values and the outputs' cotangents, so none of the forward ops
    runs again: side effects in the function (e.g. an assign inside a `while_loop` whose gradient needs the loop's saved
    values) happen once per call, and the backward does no forward work.  None when the backward
    would still run a forward op with effects (a control edge to it): the call falls back to
    recomputing (`backward`).
    """

    def __init__(self, forward: Executable, backward: Executable, n_outputs: int, watched: tuple):
        self.forward, self.backward, self.n_outputs = forward, backward, n_outputs
        self.watched = watched          # the indices of the inputs `backward` gives gradients for, in order

    @classmethod
    def build(cls, graph, xs: list, ys: list, targets: list, watched: tuple):
        g = copy_graph(graph)
        gxs = _same_in(g, xs)
        start = len(g._ops)
        dys, grads = gradient_graph(g, [gxs[i] for i in watched], _same_in(g, ys))
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
        # gradient ops that can compute fewer outputs compute only what `grads` needs (a WhileGrad drops the
        # cotangent of a loop's data input when only the weights are watched) and then read fewer saved values;
        # the backward runs this graph, so the forward saves exactly what it reads whatever its own passes
        g, _ = run_pass(UNUSED_OUTPUTS, g, feeds + grads, verify=False)
        feeds, grads = _same_in(g, feeds), _same_in(g, grads)
        specs = {t.name: requests_of(t) for t in feeds if t.dtype is VARIANT}
        forward = call_executable(graph, xs, ys + _same_in(graph, boundary), targets,
                                  {n: s for n, s in specs.items() if s})
        return cls(forward, call_executable(g, feeds, grads), len(ys), watched)


class TapeCallInfo:
    """Per-ConcreteFunction data for tape-recorded calls: differentiable reads, the recomputing call and one
    `SavingCall` per set of watched inputs (`saving_for`)."""

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
        self._xs, self._ys, self._targets = list(cf.inputs) + reads, list(cf.outputs), _targets(cf)
        self.call = call_executable(cf.graph, self._xs, self._ys, self._targets)
        self._savings: dict = {}        # watched input indices -> SavingCall, or None (recomputes)

    def saving_for(self, watched: tuple):
        """The `SavingCall` giving the gradients of the inputs at indices `watched` (floating ones), made on
        first need and its forward compiled then, not inside the call op's kernel; None when nothing is
        watched (nothing to save) or the backward would run a forward op with effects."""
        if not watched:
            _ = self.call.plan
            return None
        saving = self._savings.get(watched, False)
        if saving is False:
            with _lock:
                saving = self._savings.get(watched, False)
                if saving is False:
                    saving = SavingCall.build(self.cf.graph, self._xs, self._ys, self._targets, watched)
                    _ = (self.call if saving is None else saving.forward).plan
                    self._savings[watched] = saving
        return saving


def _targets(cf):
    return run_targets(cf.graph, cf.graph.lifted_ops)


def _call_kernel(*arrays, info, saving):
    if saving is None:
        return info.call.call(*arrays)
    values = saving.forward.call(*arrays)
    n = saving.n_outputs
    token = np.empty((), object)          # the saved boundary values, one opaque value for the backward
    token[()] = tuple(values[n:])
    return tuple(values[:n]) + (token,)


def _infer_call(specs, attrs):
    info = attrs["info"]
    outs = [Spec(t.shape.dims, t.dtype) for t in info.cf.outputs]
    return outs + ([Spec((), VARIANT)] if attrs["saving"] is not None else [])


def _grad_call(entry, *dys):
    info, saving = entry.get_attr("info"), entry.get_attr("saving")
    n = len(info.cf.outputs)            # a saving call's last output, its saved values, gets no cotangent
    if saving is None or not _needs_only(entry, saving.watched):       # recomputing: every input's gradient
        return _recomputed(info.call, entry.inputs, entry.outputs[:n], dys[:n])
    grads = _backward(CALL_SAVED_GRAD, list(entry.inputs) + [entry.outputs[n]], entry.outputs[:n], dys[:n],
                      {"info": info, "saving": saving})
    full = [None] * len(entry.inputs)
    for i, g in zip(saving.watched, grads):
        full[i] = g
    return _floats_only(full, entry.inputs)


def _needs_only(entry, watched: tuple) -> bool:
    """Whether the walk asks for no gradient of a floating input outside `watched` (one watched after the
    call was recorded, or a graph's `gradients` with respect to any input, needs the recomputing backward)."""
    skip = getattr(entry, "skip_input_indices", ())
    return all(i in watched or i in skip or not x.dtype.is_floating for i, x in enumerate(entry.inputs))


def _saved_grad_kernel(*arrays, info, saving):
    k = len(info.call.request.feeds)
    return saving.backward.call(*arrays[:k], *arrays[k][()], *arrays[k + 1:])


def _infer_saved_grad(specs, attrs):
    return [Spec(t.shape.dims, t.dtype) for t in attrs["saving"].backward.request.fetches]


def _grad_saved_grad(entry, *ddys):
    """Second order: the same math as the recomputing backward (`backward`), differentiated; the cotangents
    of the gradients it did not compute (inputs outside `watched`) are zeros of their inputs' shapes."""
    info, watched = entry.get_attr("info"), entry.get_attr("saving").watched
    k = len(info.call.request.feeds)
    inputs = list(entry.inputs[:k]) + list(entry.inputs[k + 1:])          # without the saved values
    full = [None] * k
    for i, d in zip(watched, ddys):
        full[i] = d
    g2 = _backward(CALL_GRAD, inputs, entry.inputs[:k], full, {"plan": backward(backward(info.call))})
    return _floats_only(g2[:k] + [None] + g2[k:], entry.inputs)


def _recomputed(executable: Executable, inputs, outputs, dys) -> list:
    """Gradient rule shared by PartitionedCall and PartitionedCallGrad: one more level of `backward`."""
    return _floats_only(_backward(CALL_GRAD, inputs, outputs, dys, {"plan": backward(executable)}), inputs)


def _backward(opdef, inputs, outputs, dys, attrs) -> list:
    """Run backward op `opdef` on `inputs` and the cotangents `dys` of `outputs` (zeros where None);
    its results as a list."""
    dys = [d if d is not None else ek.zeros_like(y) for d, y in zip(dys, outputs)]
    grads = execute(opdef, tuple(inputs) + tuple(dys), attrs)
    return list(grads) if isinstance(grads, (tuple, list)) else [grads]


def _floats_only(grads, inputs) -> list:
    return [g if x.dtype.is_floating else None for g, x in zip(grads, inputs)]


def _grad_kernel(*arrays, plan):
    return plan.call(*arrays)


def _infer_grad(specs, attrs):
    return [Spec(t.shape.dims, t.dtype) for t in attrs["plan"].request.fetches]


def _grad_grad(entry, *dys):
    return _recomputed(entry.get_attr("plan"), entry.inputs, entry.outputs, dys)


CALL = op("PartitionedCall", _call_kernel, _infer_call, _grad_call, num_outputs=-1, effect="write",
          doc="A traced function called as one op (used when a gradient tape records the call).")
CALL_GRAD = op("PartitionedCallGrad", _grad_kernel, _infer_grad, _grad_grad, num_outputs=-1, effect="write",
               doc="Backward pass of PartitionedCall (or of another PartitionedCallGrad): input gradients "
                   "from output gradients; differentiable again (attr plan: its `Executable`).")
CALL_SAVED_GRAD = op("PartitionedCallSavedGrad", _saved_grad_kernel, _infer_saved_grad, _grad_saved_grad,
                     num_outputs=-1, effect="write",
                     doc="Backward pass of PartitionedCall from the values its forward saved (inputs: the call's "
                         "inputs, the saved-values token, the outputs' cotangents; outputs: the gradients of the "
                         "watched inputs); attrs info: the call's TapeCallInfo, saving: its SavingCall.")


def call_recorded(cf, arrays_inputs: list):
    """Run `cf` as one tape-visible op; returns the flat list of output tensors."""
    info = cf._tape_info
    if info is None:
        with _lock:
            if cf._tape_info is None:
                cf._tape_info = TapeCallInfo(cf)
        info = cf._tape_info
    inputs = tuple(arrays_inputs) + tuple(v.value() for v in info.variables)    # reads the tapes record
    watched = tuple(i for i, t in enumerate(inputs) if t.dtype.is_floating and tape_state.tracked(t))
    outs = execute(CALL, inputs, {"info": info, "saving": info.saving_for(watched)})
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    return outs[:len(info.cf.outputs)]         # (a saving call's last output is its saved values)
