"""Staged (graph-building) paths of the control-flow operators.

`staged_if` builds `eager.cond`, `staged_while`/`staged_for` build
`eager.while_loop`, checking what TensorFlow checks and naming the variable
and the user's line in every error.  State is the explicit tuple the
converter passes, followed by the *composite* state (`x['b']`, `obj.attr`)
read and written through the converter's get/set functions (`_Composites`).

* Branch outputs and loop variables may be nested structures; Python
  numbers and bools in them become constants;
* loop variables are prepared and checked per iteration by `loop_state`
  (undefined variables and appended-to lists are resolved by tracing one
  iteration into a throw-away graph);
* an `UndefinedReturnValue` in one branch of a staged `if` becomes zeros like
  the other branch's value (it is never read: `do_return` is False there);
  that value is found by tracing the other branch aside as well.
"""
from __future__ import annotations

import eager as ek

from .. import errors
from . import loop_state, py_builtins
from ._tensors import describe, is_symbolic, is_tensor
from .variables import Undefined, UndefinedReturnValue, is_undefined

_COUNTER = "<iteration count>"


def _to_tensor(x, like=None):
    """Python numbers/bools -> tensors (dtype of `like` if numeric); else x."""
    e = ek
    if isinstance(x, bool):
        return e.constant(x)
    if isinstance(x, (int, float)):
        if like is not None and is_tensor(like) and not like.dtype.is_bool:
            return e.constant(x, dtype=like.dtype)
        return e.constant(x)
    if isinstance(x, (tuple, list)) and not is_tensor(x):
        return type(x)(_to_tensor(v) for v in x) if not hasattr(x, "_fields") else \
            type(x)(*(_to_tensor(v) for v in x))
    return x


def _as_tuple(result, n: int) -> tuple:
    if n == 1 and not (isinstance(result, (tuple, list)) and len(result) == 1):
        return (result,)
    return tuple(result)


class _Composites:
    """Composite state (`x['b']`, `y[0]`, `obj.attr`) of a staged construct.

    The converter generates `get()` (their current values, `Undefined` for a
    missing key or attribute) and `set_(values)` (write them back; an
    undefined value deletes).  They are carried after the explicit state, and
    reset to their values before the construct before each traced branch or
    iteration, as TF's get_state/set_state do."""

    def __init__(self, state_fns):
        self.get, self.set_, self.names = state_fns or (None, None, ())
        self.names = tuple(self.names)
        self.initial = tuple(self.get()) if self.names else ()

    def run(self, fn, args, values=None) -> tuple:
        """`fn(*args)` with the composites set to `values` (default: their
        values before the construct), then their new values appended."""
        if not self.names:
            return tuple(fn(*args))
        self.set_(self.initial if values is None else tuple(values))
        return tuple(fn(*args)) + tuple(self.get())

    def restore(self, values=None) -> None:
        if self.names:
            self.set_(self.initial if values is None else tuple(values))


# --- if -------------------------------------------------------------------
def staged_if(test, body, orelse, inputs: tuple, names: tuple, state_fns=None) -> tuple:
    e = ek
    comp = _Composites(state_fns)
    n_explicit = len(names)
    names = tuple(names) + comp.names
    fns = {"main": body, "else": orelse}
    seen: dict = {}
    probed: dict = {}
    drop: set = set()  # outputs undefined in both branches (same in both)

    def probe(label):
        """The outputs of branch `label`, traced aside (nothing reaches the graph)."""
        if label not in probed:
            try:
                probed[label] = loop_state.probe(lambda args: comp.run(fns[label], args),
                                                 list(inputs))[0]
            finally:
                comp.restore()
        return probed[label]

    def branch(label, other_label):
        def run():
            # Each branch gets its own copy of list/dict inputs: a mutation
            # (`out.append(x)`) must not leak into the other branch's trace.
            args = [type(v)(v) if type(v) in (list, dict) else v for v in inputs]
            out = list(comp.run(fns[label], args))
            for i, v in enumerate(out):
                if not is_undefined(v):
                    continue
                other = probe(other_label)[i]
                if is_undefined(other):
                    drop.add(i)
                elif isinstance(v, UndefinedReturnValue):
                    out[i] = loop_state.placeholder_value(names[i], _to_tensor(other))[0]
                else:
                    raise errors.branch_undefined(names[i], label)
            out = [v if i in drop else _branch_value(names[i], v, label) for i, v in enumerate(out)]
            seen[label] = out
            if other_label in seen:
                main, alt = (out, seen[other_label]) if label == "main" else (seen[other_label], out)
                _check_branches(main, alt, names, drop)
            return tuple(v for i, v in enumerate(out) if i not in drop)
        return run

    test = verify_condition(test, "if statement")
    result = e.cond(test, branch("main", "else"), branch("else", "main"))
    kept = [i for i in range(len(names)) if i not in drop]
    result = _as_tuple(result, len(kept)) if kept else ()
    values = dict(zip(kept, result))
    final = tuple(values.get(i, Undefined(names[i])) for i in range(len(names)))
    comp.restore(final[n_explicit:])
    return final[:n_explicit]


def verify_condition(cond, tag: str):
    """A staged condition must be a bool scalar (TF's `_verify_tf_condition`):
    ValueError otherwise; a bool tensor with one element becomes a scalar."""
    e = ek
    hint = "; to check for None, use `is not None`"
    if cond.dtype != e.bool:
        raise errors.bad_condition(tag, describe_tensor(cond),
                                   "; to use it as a boolean, compare it or use eager.cast" + hint)
    shape = cond.shape
    if shape.rank is None:
        return e.reshape(cond, [])
    if shape.rank > 0:
        known = [d for d in shape.as_list() if d is not None]
        size = 1
        for d in known:
            size *= d
        if size > 1:
            raise errors.bad_condition(tag, describe_tensor(cond),
                                       "; reduce it with eager.reduce_all or reduce_any" + hint)
        return e.reshape(cond, [])
    return cond


def describe_tensor(t) -> str:
    return f"a {t.dtype.name} tensor of shape {loop_state.fmt_shape(t.shape)}"


def _branch_value(name: str, value, label: str):
    """Leaves made tensors; a None leaf is an error (TF's message)."""
    if value is None and name.startswith("retval_"):
        return value      # checked against the other branch (return statements)
    nest = ek.nest

    def leaf(path, v):
        if v is None:
            raise errors.branch_none(path, label)
        if not loop_state.is_leaf_value(v):
            raise errors.branch_type(path, v, label)
        return loop_state.leaf_tensor(v)
    return nest.pack_sequence_as(value, [leaf(p, v) for p, v in nest.flatten_with_paths(value, name)])


def _check_branches(main: list, alt: list, names: tuple, drop: set) -> None:
    """Both branches traced: same nested structure and dtypes for every
    output (TF's `_verify_tf_cond_vars`)."""
    nest = ek.nest
    for i, (a, b) in enumerate(zip(main, alt)):
        if i in drop:
            continue
        if names[i].startswith("retval_") and (a is None) != (b is None):
            raise errors.staged_return_error()
        if not nest.same_structure(nest.lists_for_sequences(a), nest.lists_for_sequences(b)):
            raise errors.branch_structure(names[i], nest.structure_repr(a), nest.structure_repr(b))
        for (path, x), y in zip(nest.flatten_with_paths(a, names[i]), nest.flatten(b)):
            if is_tensor(x) and is_tensor(y) and x.dtype != y.dtype:
                raise errors.branch_dtype(path, describe(x), describe(y))


# --- while ----------------------------------------------------------------
def staged_while(test, body, init: tuple, names: tuple, opts: dict, state_fns=None) -> tuple:
    e = ek
    comp = _Composites(state_fns)
    k = len(init)
    init, names = tuple(init) + comp.initial, tuple(names) + comp.names

    def run_body(vals):
        return comp.run(body, vals[:k], vals[k:])
    try:
        prep = loop_state.prepare(run_body, list(init), names, opts)
    finally:
        comp.restore()
    idx = [i for i in range(len(init)) if i not in prep.passthrough]
    nest = e.nest
    leaves = [nest.flatten(prep.values[i]) for i in idx]
    counting = bool(prep.check_once)

    def full(flat):
        out = [prep.passthrough.get(i) for i in range(len(init))]
        pos = 0
        for i, ls in zip(idx, leaves):
            out[i] = nest.pack_sequence_as(prep.values[i], list(flat[pos:pos + len(ls)]))
            pos += len(ls)
        return out

    def cond_fn(*flat):
        vals = full(flat)
        comp.restore(vals[k:])
        t = test(*vals[:k])
        return e.constant(bool(t)) if not is_tensor(t) else verify_condition(t, "while loop")

    def body_fn(*flat):
        entry = full(flat)
        out = run_body(entry)
        new = []
        for i in idx:
            new += nest.flatten(loop_state.check_iteration(
                names[i], init[i], entry[i], out[i], prep.invariants.get(i)))
        for i in prep.passthrough:
            if not (out[i] is prep.passthrough[i] or (is_undefined(out[i]) and is_undefined(
                    prep.passthrough[i]))):
                raise errors.loop_undefined(names[i])
        if counting:
            new.append(flat[-1] + 1)
        return tuple(new)

    loop_vars = [x for ls in leaves for x in ls]
    # An iteration counter: for the "must iterate once" check, and so that a
    # loop without state still has a loop variable.
    counting = counting or not loop_vars
    loop_vars += [e.constant(0)] if counting else []
    kwargs = {}
    if prep.invariants:
        shapes = []
        for i, ls in zip(idx, leaves):
            inv = prep.invariants.get(i)
            inv_leaves = nest.flatten(inv) if nest.is_nested(prep.values[i]) and inv is not None \
                else [inv] * len(ls)
            shapes += [v if v is not None else getattr(x, "shape", None)
                       for v, x in zip(inv_leaves, ls)]
        kwargs["shape_invariants"] = shapes + ([e.TensorShape([])] if counting else [])
    if opts.get("maximum_iterations") is not None:
        kwargs["maximum_iterations"] = opts["maximum_iterations"]
    result = _as_tuple(e.while_loop(cond_fn, body_fn, tuple(loop_vars), **kwargs), len(loop_vars))
    if prep.check_once:
        _runtime_check(e.greater(result[-1], 0),
                       errors.iterate_at_least_once(", ".join(prep.check_once)))
    final = full(result[:len(result) - (1 if counting else 0)])
    for i in prep.lists:
        final[i] = final[i].stack()
    comp.restore(final[k:])
    return tuple(final[:k])


def _runtime_check(pred, message: str) -> None:
    """A check that fails when the graph runs (eager: fails now)."""
    debugging = getattr(ek, "debugging", None)
    if debugging is not None and hasattr(debugging, "Assert"):
        debugging.Assert(pred, [message])
    elif debugging is not None and hasattr(debugging, "assert_equal"):
        debugging.assert_equal(pred, True, message=message)
    elif not is_symbolic(pred) or not getattr(pred, "_is_symbolic", True):
        # Local fallback until eager.debugging exists (works on eager values).
        if not bool(pred):
            raise ValueError(message)


# --- for ------------------------------------------------------------------
def as_staged_iterable(x):
    if isinstance(x, py_builtins.StagedIterable):
        return x
    if is_symbolic(x):
        return py_builtins._tensor_rows(x)
    return None


def staged_for(staged, extra_test, body, init: tuple, names: tuple, opts: dict,
               state_fns=None) -> tuple:
    e = ek
    n = staged.length
    if isinstance(n, int) and n <= 0:
        # Statically empty (e.g. a tensor of shape (0, ...)): the body never
        # runs, as in Python; tracing it would index an empty tensor.  Numbers
        # become tensors, as the outputs of a staged loop would be.
        return tuple(_to_tensor(v) if isinstance(v, (bool, int, float)) else v for v in init)
    k = len(init)

    def test(i, *state):
        c = i < n
        if extra_test is not None:
            more = extra_test(*state[:k])
            c = e.logical_and(c, more) if is_tensor(more) else (c if more else e.constant(False))
        return c

    def loop_body(i, *state):
        return (i + 1,) + tuple(body(staged.get(i), *state))

    out = staged_while(test, loop_body, (e.constant(0),) + tuple(init), (_COUNTER,) + names, opts,
                       state_fns)
    return out[1:]
