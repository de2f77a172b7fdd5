"""Staged `for` loops over datasets: `for x in ds:` / `for x in it:` inside a graph.

A dataset (or an `iter(ds)` made inside the graph) iterated while a graph is
being built becomes ONE `while_loop` (TensorFlow stages dataset loops too):
the loop carries the dataset's iterator state (`eager.data.lowering`), the
next element and its `valid` flag, and the user's loop variables.  The first
element is pulled before the loop and each iteration pulls the next one after
the body, so the body is traced once, nothing is unrolled, and `break` /
`continue` / `return`, loop-carried tensors, `list.append` and variable
updates work as in any staged loop (`staging.staged_while`).  After a loop
over an iterator, the iterator continues from where the loop stopped.
"""
from __future__ import annotations

import eager as ek
from eager import data
from eager.data import staged

from . import staging
from ._tensors import _PLAIN


def staged_source(x):
    """`(stream, state, iterator or None)` when `x` is a dataset or graph iterator to stage, else None."""
    if isinstance(x, _PLAIN) or not getattr(x, "_is_dataset", False) and type(x).__name__ != "GraphIterator":
        return None
    e = ek
    if e.executing_eagerly():
        return None
    if isinstance(x, data.Dataset):
        stream = staged.stream_of(x)
        return stream, stream.start(), None
    if isinstance(x, staged.GraphIterator):
        return x._stream, x._state, x
    return None


def staged_dataset_for(source, extra_test, body, init: tuple, names: tuple, opts: dict, state_fns=None):
    e = ek
    stream, state, iterator = source
    before = tuple(state)                 # the state before the element pulled ahead
    valid, element, state = stream.next(list(state))
    # Shape invariants find loop variables by identity: every initial leaf must be its own tensor.
    seen: set = set()

    def distinct(t):
        if id(t) in seen:
            t = e.identity(t)
        seen.add(id(t))
        return t
    valid = distinct(valid)
    element = e.nest.map_structure(distinct, element)
    state = tuple(distinct(t) for t in state)
    before = tuple(distinct(t) for t in before)

    def test(valid, element, state, before, *user):
        if extra_test is None:
            return valid
        more = extra_test(*user)
        if e.is_tensor(more):
            return e.logical_and(valid, more)
        return valid if more else e.constant(False)

    def loop_body(valid, element, state, before, *user):
        new = tuple(body(element, *user))
        v, el, s = stream.next(list(state))
        return (v, el, tuple(s), state) + new

    opts = dict(opts)
    spec_leaves = e.nest.flatten(stream.spec)
    shapes = stream.invariants()
    invariants = [(t, s.shape) for t, s in zip(e.nest.flatten(element), spec_leaves)]
    invariants += list(zip(state, shapes)) + list(zip(before, shapes))
    opts["shape_invariants"] = list(opts.get("shape_invariants") or ()) + invariants
    labels = ("<dataset element is valid>", "<dataset element>", "<dataset iterator state>",
              "<dataset iterator state before the element>")
    out = staging.staged_while(test, loop_body, (valid, element, state, before) + tuple(init),
                               labels + tuple(names), opts, state_fns)
    if iterator is not None:
        # A loop left by `break` pulled one element its body never saw: the iterator resumes at that
        # element (the state before it), as a TF iterator would; an exhausted one stays at the end.
        done_valid, _, end, prior = out[:4]
        resumed = e.cond(done_valid, lambda: tuple(prior), lambda: tuple(end))
        iterator._state = list(resumed) if isinstance(resumed, (list, tuple)) else [resumed]
    return tuple(out[4:])
