"""Reverse-mode accumulation shared by `GradientTape` and graph `gradients`.

`backprop(entries, targets, target_grads, source_groups)` walks op records in
reverse creation order.  Each record offers `opdef inputs outputs attrs
get_attr`.  Tensors are keyed by `id()` (callers keep them alive).  A source
group is a list of tensor keys whose gradients are summed (a variable read
several times is one group).  Gradient rules are called with public ops, so
this builds eager values or symbolic graph nodes depending on the context.
"""
from __future__ import annotations

from .errors import InvalidArgumentError
from .ops import array as _a
from .ops import math as _m


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

    for e in reversed(relevant):
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
            out_grads = [g if g is not None else _a.zeros_like(o) for g, o in zip(out_grads, outputs)]
        inputs = e.inputs
        skip = None
        for i, x in enumerate(inputs):
            if id(x) not in needed:
                skip = (skip or ()) + (i,)
        in_grads = opdef.grad(GradView(e, frozenset(skip)) if skip else e, *out_grads)
        if len(in_grads) != len(inputs):
            raise InvalidArgumentError(
                f"gradient rule of {opdef.name} returned {len(in_grads)} gradients for {len(inputs)} inputs")
        for x, g in zip(inputs, in_grads):
            if g is not None and id(x) in needed:
                _accumulate(grads, id(x), g, _m)

    results = []
    for group in source_groups:
        acc = None
        for k in group:
            g = grads.get(k)
            if g is not None:
                acc = g if acc is None else _m.add(acc, g)
        results.append(acc)
    return results


class GradView:
    """An op as a gradient rule sees it, plus `skip_input_indices`: inputs whose gradient nobody needs.

    Rules may use it to avoid computing unneeded terms (as TensorFlow's MatMul
    gradient does); every other attribute is the op's own.
    """

    __slots__ = ("_op", "skip_input_indices", "inputs", "outputs")

    def __init__(self, op, skip):
        self._op = op
        self.skip_input_indices = skip
        self.inputs = op.inputs      # read by nearly every rule: copied, not looked up through __getattr__
        self.outputs = op.outputs

    def __getattr__(self, name):
        return getattr(self._op, name)


def _accumulate(grads, key, g, _m):
    prev = grads.get(key)
    grads[key] = g if prev is None else _m.add(prev, g)
