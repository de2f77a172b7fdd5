"""Reverse-mode accumulation shared by `GradientTape` and graph `gradients`.

`backprop(entries, targets, target_grads, source_groups)` walks op records in
reverse creation order.  Each record offers `opdef inputs outputs attrs
get_attr`.  Tensors are keyed by `id()` (callers keep them alive).  A source
group is a list of tensor keys whose gradients are summed (a variable read
several times is one group).  Gradient rules are called with public ops, so
this builds eager values or symbolic graph nodes depending on the context.

Direct eager rules: when the backward pass runs eagerly and no tape records
on this thread (so nothing will differentiate the gradient computation), an op
whose `extra["eager_grad"]` is set is differentiated by that function instead
(`ops/direct_grads.py`): the same rule written with the ops' NumPy kernels on
the tensors' values, the same calls in the same order (so the same bits),
without the public ops' conversion, checks and dispatch.  It returns None when its case is not one it
handles (a second-order term, an unusual dtype), and the public rule runs
instead; so does the public rule when the direct one raises (the public ops
then raise their precise error, or NaN-producing NumPy warnings are handled as
in every eager op).

Pair rules, in the same direct mode: an op whose `extra["eager_grad_pair"]`
maps `producer_opdef` to `(rule, i)`, and whose first input is the first output
of a recorded `producer_opdef` op that nothing else reads (no other recorded
op, no target, no source) while the producer's other outputs have no reader
and no gradient, is differentiated together with that producer when only the
producer's input `i` needs a gradient: `rule(op, producer, dy)` returns that
gradient, added in when the walk reaches the producer (so sums keep their
order), and the producer's own rule never runs.  It must give the bits the two
rules give one after the other; None (or an exception) falls back to them.
The pairs (`direct_grads`): MaxPool over a Relu (one ReluMaxPoolGrad pass
instead of MaxPoolGrad, then ReluGrad over its result), Mean over a Square
(Square's rule takes dy / n unbroadcast: the Mean's input-sized gradient is
never written) and Mean over a softmax cross entropy averaging every loss
value (the logits' gradient is `backprop * (dy / n)`: no ReduceGrad, no
ExpandDims, no zero gradient for the unused `backprop` output).
"""
from __future__ import annotations

import warnings as _warnings

import numpy as np

from . import context as _context
from . import fp_semantics as _fp
from . import tape_state as _tape_state
from .errors import InvalidArgumentError
from .ops import array as _a
from .ops import direct_grads as _direct_grads  # noqa: F401 - installs the direct rules of the hot ops
from .ops import math as _m
from .tensor import Tensor

_TapeEntry = _tape_state.TapeEntry


def backprop(entries, targets, target_grads, source_groups, stop_keys=frozenset()):
    """Return one accumulated gradient (or None) per source group."""

    source_keys = set()
    for group in source_groups:
        source_keys.update(group)
    # forward pass: which tensors depend on a source
    reach = set(source_keys)
    relevant = []
    for e in entries:
        for t in e.inputs:
            if id(t) in reach:
                relevant.append(e)
                for o in e.outputs:
                    reach.add(id(o))
                break
    needed = reach - stop_keys if stop_keys else reach   # tensors whose gradient somebody wants

    grads: dict[int, object] = {}
    for t, g in zip(targets, target_grads):
        _accumulate(grads, id(t), g, _m)
    direct = _direct_rules_apply()
    pending: dict = {}      # id(producer entry) -> its input's gradient from a pair rule
    links = []              # a long tape's (producer by output, readers by input), made on first need

    for e in reversed(relevant):
        if pending and id(e) in pending:      # a pair rule's producer: its gradient, where its rule would add it
            i, g = pending.pop(id(e))
            k = id(e.inputs[i])
            prev = grads.get(k)
            grads[k] = g if prev is None else _sum(prev, g, _m, direct)
            continue
        outputs = e.outputs
        if len(outputs) == 1:
            g = grads.get(id(outputs[0]))
            if g is None:
                continue
            out_grads = (g,)
        else:
            out_grads = [grads.get(id(o)) for o in outputs]
            if all(g is None for g in out_grads):
                continue
        opdef = e.opdef
        if not opdef.differentiable:
            continue
        if len(out_grads) > 1:
            out_grads = [g if g is not None else _zeros_like(o, direct) for g, o in zip(out_grads, outputs)]
        if direct:
            pairs = opdef.extra.get("eager_grad_pair")
            if pairs is not None and len(out_grads) == 1 and type(out_grads[0]) is Tensor and \
                    _pair_gradient(pairs, e, out_grads[0], relevant, links, grads, needed, source_keys, pending):
                continue
        inputs = e.inputs
        skip = None
        for i, x in enumerate(inputs):
            if id(x) not in needed:
                skip = (skip or ()) + (i,)
        view = GradView(e, frozenset(skip)) if skip else e
        in_grads = None
        if direct:
            fast = opdef.extra.get("eager_grad")
            if fast is not None:
                for g in out_grads:
                    if type(g) is not Tensor:
                        break
                else:
                    try:
                        in_grads = fast(view, *out_grads)
                    except Exception:       # the public rule runs, and raises its own error if any
                        in_grads = None
        if in_grads is None:
            in_grads = opdef.grad(view, *out_grads)
        if len(in_grads) != len(inputs):
            raise InvalidArgumentError(
                f"gradient rule of {opdef.name} returned {len(in_grads)} gradients for {len(inputs)} inputs")
        for x, g in zip(inputs, in_grads):
            if g is not None:
                k = id(x)
                if k in needed:         # _accumulate, inline
                    prev = grads.get(k)
                    grads[k] = g if prev is None else _sum(prev, g, _m, direct)

    results = []
    for group in source_groups:
        acc = None
        for k in group:
            g = grads.get(k)
            if g is not None:
                acc = g if acc is None else _sum(acc, g, _m, direct)
        results.append(acc)
    return results


# up to this many recorded ops, a pair's producer is found by a scan from the tape's end; a longer tape
# maps every output to its producer and counts every input's readers once instead (a scan per pair would
# make a tape of many pairs quadratic)
SCAN_LIMIT = 64


def _pair_gradient(pairs, e, dy, relevant, links, grads, needed, source_keys, pending) -> bool:
    """Differentiate `e` with its input's producer in one rule (module docstring); False: not applied."""
    k = id(e.inputs[0])
    if k in grads or k in source_keys or k not in needed:
        return False
    if len(relevant) <= SCAN_LIMIT:
        p = _sole_read_producer(relevant, k)
    else:
        if not links:
            links.extend(_links(relevant))
        p = _sole_read_producer_mapped(links, k)
    if p is None or p.opdef not in pairs:
        return False
    rule, i = pairs[p.opdef]
    if id(p.inputs[i]) not in needed:
        return False
    for j, x in enumerate(p.inputs):        # the rule gives input i's gradient only: nobody may want another
        if j != i and id(x) in needed:
            return False
    for o in p.outputs[1:]:                 # nor may another output carry a gradient into the producer
        if id(o) in grads:
            return False
    try:
        g = rule(e, p, dy)
    except Exception:           # the two rules run, and raise their own errors if any
        return False
    if g is None:
        return False
    pending[id(p)] = (i, g)
    return True


def _sole_read_producer(relevant, k):
    """The recorded op whose first output has key `k`, if exactly one op recorded after it reads that output
    and none reads its other outputs; else None.  Recorded order is topological: a scan from the end."""
    later = []
    for p in reversed(relevant):
        if id(p.outputs[0]) == k:
            break
        later.append(p)
    else:
        return None
    others = {id(o) for o in p.outputs[1:]} if len(p.outputs) > 1 else ()
    uses = 0
    for e in later:
        for t in e.inputs:
            if id(t) == k:
                uses += 1
            elif others and id(t) in others:
                return None
    return p if uses == 1 else None


def _links(relevant):
    producers = {id(o): e for e in relevant for o in e.outputs}
    readers: dict = {}
    for e in relevant:
        for t in e.inputs:
            readers[id(t)] = readers.get(id(t), 0) + 1
    return producers, readers


def _sole_read_producer_mapped(links, k):
    """`_sole_read_producer` from the maps `_links` made."""
    producers, readers = links
    p = producers.get(k)
    if p is None or id(p.outputs[0]) != k or readers.get(k) != 1:
        return None
    for o in p.outputs[1:]:
        if id(o) in readers:
            return None
    return p


def _direct_rules_apply() -> bool:
    """May direct eager rules run (module docstring): eager on top, no tape recording on this thread."""
    if _tape_state._state.tapes or not _context._state.stack[-1].is_eager:
        return False
    try:
        if _warnings.filters[0] is not _fp.FILTER:     # the kernel filter comes first, as in eager dispatch
            _fp.keep_kernels_quiet()
    except IndexError:
        _fp.keep_kernels_quiet()
    return True


def _zeros_like(t, direct):
    """The zero gradient of an output nobody sent one to (ZerosLike is never recorded: not differentiable)."""
    if direct and type(t) is Tensor:
        v = t._value
        if type(v) is np.ndarray and v.flags.c_contiguous:     # np.zeros_like's array, without its Python calls
            return Tensor(np.zeros(v.shape, v.dtype))
        return Tensor(_a.ZEROS_LIKE.kernel(v))
    return _a.zeros_like(t)


class GradView:
    """An op as a gradient rule sees it, plus `skip_input_indices`: inputs whose gradient nobody needs.

    Rules may use it to avoid computing unneeded terms (as TensorFlow's MatMul
    gradient does); every other attribute is the op's own.
    """

    __slots__ = ("_op", "skip_input_indices", "inputs", "outputs", "attrs")

    def __init__(self, op, skip):
        self._op = op
        self.skip_input_indices = skip
        self.inputs = op.inputs      # read by nearly every rule: copied, not looked up through __getattr__
        self.outputs = op.outputs
        if type(op) is _TapeEntry:   # a plain field there (a graph op's `attrs` is computed: left to __getattr__)
            self.attrs = op.attrs

    def __getattr__(self, name):
        return getattr(self._op, name)


def _accumulate(grads, key, g, _m, direct=False):
    prev = grads.get(key)
    grads[key] = g if prev is None else _sum(prev, g, _m, direct)


def _sum(a, b, _m, direct):
    """a + b: in direct mode, on two eager float values of one dtype and shape, AddV2's kernel itself."""
    if direct and type(a) is Tensor and type(b) is Tensor:
        av, bv = a._value, b._value
        if av.dtype == bv.dtype and av.dtype.kind == "f" and av.shape == bv.shape:
            return Tensor(_m.ADD.kernel(av, bv))
    return _m.add(a, b)
