"""`if_stmt`, `if_exp`, `while_stmt`, `for_stmt`: dispatch Python vs staged.

Signatures (state is an explicit tuple; `names` label it for errors):
    if_stmt(test, body, orelse, inputs, names, state_fns) -> outputs
        body(*inputs) / orelse(*inputs) return the tuple of outputs `names`.
    while_stmt(test, body, state, names, opts, state_fns) -> state
        test(*state) -> bool-like; body(*state) -> new state.
    for_stmt(iterated, extra_test, body, state, names, opts, state_fns) -> state
        body(item, *state) -> new state; extra_test(*state) (may be None) is
        False once a `break`/`return` happened.
    state_fns: None, or `(get_state, set_state, labels)` for the composite
        state (`x['b']`, `obj.attr`) the block writes; only staging uses it.

Python semantics are exact: the test is evaluated once per iteration, the
iterable is consumed lazily and never past a break.  Staging starts only when
a test (or the iterable) is a symbolic tensor.  A Python `while` whose test
becomes symbolic after some unrolled iterations raises TF's
NotImplementedError when a variable changed type, and stages the remaining
iterations when a `break`/`return` decided by a tensor did it (`opts`
carries the loop's `jump_flags`); a Python `for` whose break condition becomes symbolic runs its remaining
(unrolled) iterations under staged conditions.
"""
from __future__ import annotations

from .. import errors
from . import datasets, hidden_state, staging
from ._tensors import is_symbolic


def if_stmt(test, body, orelse, inputs: tuple, names: tuple, state_fns=None):
    if is_symbolic(test):
        return staging.staged_if(test, body, orelse, inputs, names, state_fns)
    if test:
        return body(*inputs)
    return orelse(*inputs)


def if_exp(test, true_fn, false_fn, label: str = ""):
    if is_symbolic(test):
        test = staging.verify_condition(test, "if expression")
        (value,) = staging.staged_if(test, lambda: (true_fn(),), lambda: (false_fn(),), (),
                                     (f"<value of `... if {label} else ...`>",))
        return value
    return true_fn() if test else false_fn()


def while_stmt(test, body, state: tuple, names: tuple, opts=None, state_fns=None):
    opts = opts or {}
    before, n = None, 0
    while True:
        t = test(*state)
        if is_symbolic(t):
            if n and not _jump_decided(state, names, opts):
                raise errors.while_test_became_tensor(
                    n, [k for k, a, b in zip(names, before, state)
                        if is_symbolic(b) and not is_symbolic(a)])
            snap = hidden_state.snapshot((test, body), names)
            out = staging.staged_while(test, body, state, names, opts, state_fns)
            hidden_state.check(snap)
            return out
        if not t:
            return state
        before, n = state, n + 1
        state = body(*state)


def _jump_decided(state: tuple, names: tuple, opts: dict) -> bool:
    """A `break`/`return` flag of this loop became symbolic: the remaining
    iterations are staged (beyond TF, which raises here)."""
    flags = set(opts.get("jump_flags") or ())
    return any(is_symbolic(v) for k, v in zip(names, state) if k in flags)


def for_stmt(iterated, extra_test, body, state: tuple, names: tuple, opts=None, state_fns=None):
    source = datasets.staged_source(iterated)
    staged = staging.as_staged_iterable(iterated) if source is None else None
    if source is not None or staged is not None:
        snap = hidden_state.snapshot((extra_test, body), names)
        if source is not None:
            out = datasets.staged_dataset_for(source, extra_test, body, state, names, opts or {}, state_fns)
        else:
            out = staging.staged_for(staged, extra_test, body, state, names, opts or {}, state_fns)
        hidden_state.check(snap)
        return out
    active = True
    for item in iterated:
        if active is True:
            state = body(item, *state)
        else:  # a staged break/return condition: the rest runs conditionally
            state = staging.staged_if(active, lambda *s, _i=item: body(_i, *s),
                                      lambda *s: s, state, names, state_fns)
        if extra_test is not None:
            active = extra_test(*state)
            if not is_symbolic(active):
                if not active:
                    break
                active = True
    return state
