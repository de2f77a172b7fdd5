"""Staged (graph-building) paths of the control-flow operators.

`staged_if` builds `eager.cond`, `staged_while`/`staged_for` build
`eager.while_loop`, checking what TensorFlow checks and naming the variable
and the user's line in every error.  Variables that a staged construct must
carry but that are not tensors yet are prepared first:

* Python numbers and bools become constants (numbers take the dtype of the
  value they replace when one is known);
* a variable still `Undefined` before a staged loop, or a Python list that
  the loop appends to, is resolved by tracing the body once ("dry run",
  whose ops are unused and pruned later): the undefined variable starts as
  zeros of the traced type (with a runtime check that the loop ran at least
  once), the list becomes a TensorArray that is stacked after the loop;
* an `UndefinedReturnValue` in one branch of a staged `if` becomes zeros like
  the other branch's value (it is never read: `do_return` is False there).
"""
from __future__ import annotations

from .. import errors
from . import py_builtins
from ._tensors import describe, ek, is_symbolic, is_tensor, is_tensor_array
from .variables import Undefined, UndefinedReturnValue, is_undefined

_COUNTER = "<iteration count>"


def _to_tensor(x, like=None):
    """Python numbers/bools -> tensors (dtype of `like` if numeric); else x."""
    e = ek()
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


def _placeholder_like(x):
    e = ek()
    return e.nest.map_structure(lambda v: e.zeros_like(v) if is_tensor(v) else type(v)(), x)


def _as_tuple(result, n: int) -> tuple:
    if n == 1 and not (isinstance(result, (tuple, list)) and len(result) == 1):
        return (result,)
    return tuple(result)


# --- if -------------------------------------------------------------------
def staged_if(test, body, orelse, inputs: tuple, names: tuple) -> tuple:
    e = ek()
    seen: dict = {}
    dry: dict = {}

    def dry_run(label, fn):
        if label not in dry:
            dry[label] = tuple(fn(*inputs))
        return dry[label]

    drop: set = set()  # outputs undefined in both branches (same in both)

    def branch(fn, label, other_fn, other_label):
        def run():
            out = list(fn(*inputs))
            for i, v in enumerate(out):
                if not is_undefined(v):
                    continue
                other = dry_run(other_label, other_fn)[i]
                if is_undefined(other):
                    drop.add(i)
                elif isinstance(v, UndefinedReturnValue):
                    out[i] = _placeholder_like(_to_tensor(other))
                else:
                    raise errors.branch_undefined(names[i], label)
            out = [_to_tensor(v) for v in out]
            seen[label] = out
            if other_label in seen:
                main, alt = (out, seen[other_label]) if label == "main" else (seen[other_label], out)
                _check_branches(main, alt, names, drop)
            return tuple(v for i, v in enumerate(out) if i not in drop)
        return run

    run_main = branch(body, "main", orelse, "else")
    run_else = branch(orelse, "else", body, "main")
    result = e.cond(test, run_main, run_else)
    kept = [i for i in range(len(names)) if i not in drop]
    result = _as_tuple(result, len(kept)) if kept else ()
    values = dict(zip(kept, result))
    return tuple(values.get(i, Undefined(names[i])) for i in range(len(names)))


def _check_branches(main: list, alt: list, names: tuple, drop: set) -> None:
    for i, (a, b) in enumerate(zip(main, alt)):
        if i in drop:
            continue
        if is_tensor(a) and is_tensor(b):
            if a.dtype != b.dtype:
                raise errors.branch_dtype(names[i], describe(a), describe(b))
        elif is_tensor(a) != is_tensor(b):
            if names[i].startswith("retval_") and (a is None or b is None):
                raise errors.staged_return_error()
            raise errors.branch_structure(names[i], describe(a), describe(b))


# --- while ----------------------------------------------------------------
def _shape_fits(invariant, shape) -> bool:
    inv, got = invariant.as_list() if invariant.rank is not None else None, shape
    if inv is None:
        return True
    if got.rank is None or got.rank != len(inv):
        return False
    return all(d is None or d == g for d, g in zip(inv, got.as_list()))


def staged_while(test, body, init: tuple, names: tuple, opts: dict) -> tuple:
    e = ek()
    state = list(init)
    invariants: dict = {}
    for var, shape in opts.get("shape_invariants") or ():
        idx = [i for i, v in enumerate(init) if v is var]
        if not idx:
            raise ValueError("set_loop_options: a shape invariant names a value that is not "
                             "a variable of this loop")
        invariants[idx[0]] = e.TensorShape(shape) if hasattr(e, "TensorShape") else shape
    needs_dry = [i for i, v in enumerate(state) if is_undefined(v) or isinstance(v, list)]
    dry = tuple(body(*[list(v) if isinstance(v, list) else v for v in state])) if needs_dry else ()
    passthrough: dict = {}
    lists: set = set()
    check_once: list = []
    for i, v in enumerate(init):
        if isinstance(v, list):
            appended = dry[i][len(v):] if isinstance(dry[i], list) else []
            if not appended:
                passthrough[i] = v
                continue
            elem = _to_tensor(appended[0])
            ta = e.TensorArray(elem.dtype, size=0, dynamic_size=True, element_shape=elem.shape)
            for k, x in enumerate(v):
                ta = ta.write(k, x)
            state[i] = ta
            lists.add(i)
        elif is_undefined(v):
            d = dry[i]
            if is_undefined(d):
                passthrough[i] = v
                continue
            d = _to_tensor(d)
            state[i] = _placeholder_like(d)
            invariants.setdefault(i, d.shape)
            if isinstance(v, Undefined):
                check_once.append(names[i])
        elif v is None or not (is_tensor(v) or is_tensor_array(v) or isinstance(
                v, (bool, int, float, tuple))):
            raise errors.loop_var_type(names[i], v)
        else:
            state[i] = _to_tensor(v)
    idx = [i for i in range(len(state)) if i not in passthrough]
    counting = bool(check_once)

    def full(vals):
        s = [passthrough.get(i) for i in range(len(state))]
        for i, v in zip(idx, vals):
            s[i] = v
        return s

    def cond_fn(*vals):
        t = test(*full(vals[:len(idx)]))
        return e.constant(bool(t)) if not is_tensor(t) else t

    def body_fn(*vals):
        out = list(body(*full(vals[:len(idx)])))
        new = [_check_loop_var(names[i], state[i], v, out[i], i in lists, invariants.get(i))
               for i, v in zip(idx, vals)]
        for i in passthrough:
            if not (out[i] is passthrough[i] or (is_undefined(out[i]) and is_undefined(
                    passthrough[i]))):
                raise errors.loop_undefined(names[i])
        if counting:
            new.append(vals[-1] + 1)
        return tuple(new)

    loop_vars = [state[i] for i in idx] + ([e.constant(0)] if counting else [])
    kwargs = {}
    if invariants:
        shapes = [invariants.get(i, getattr(state[i], "shape", None)) for i in idx]
        kwargs["shape_invariants"] = shapes + ([e.TensorShape([])] if counting else [])
    if opts.get("maximum_iterations") is not None:
        kwargs["maximum_iterations"] = opts["maximum_iterations"]
    result = _as_tuple(e.while_loop(cond_fn, body_fn, tuple(loop_vars), **kwargs), len(loop_vars))
    if counting:
        for name in check_once:
            _runtime_check(e.greater(result[-1], 0), errors.iterate_at_least_once(name))
    final = full(result[:len(idx)])
    for i in lists:
        final[i] = final[i].stack()
    return tuple(final)


def _check_loop_var(name, before, loop_in, after, is_list, invariant=None):
    if is_list or is_tensor_array(loop_in):
        if not is_tensor_array(after):
            raise errors.loop_structure(name, "a tensor list", describe(after))
        return after
    if is_undefined(after):
        raise errors.loop_undefined(name)
    after = _to_tensor(after, like=loop_in)
    if not is_tensor(after):
        raise errors.loop_structure(name, describe(loop_in), describe(after))
    if after.dtype != loop_in.dtype:
        raise errors.loop_dtype(name, loop_in.dtype.name, after.dtype.name)
    expected = invariant if invariant is not None else (
        before.shape if is_tensor(before) else loop_in.shape)
    if not isinstance(expected, type(after.shape)):
        expected = ek().TensorShape(expected)
    if not _shape_fits(expected, after.shape):
        shown = before.shape if is_tensor(before) else loop_in.shape
        raise errors.loop_shape(name, _fmt_shape(shown), _fmt_shape(after.shape))
    return after


def _fmt_shape(shape) -> str:
    dims = shape.as_list() if shape.rank is not None else None
    return "<unknown>" if dims is None else str(tuple(dims))


def _runtime_check(pred, message: str) -> None:
    """A check that fails when the graph runs (eager: fails now)."""
    debugging = getattr(ek(), "debugging", None)
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


def staged_for(staged, extra_test, body, init: tuple, names: tuple, opts: dict) -> tuple:
    e = ek()
    n = staged.length

    def test(i, *state):
        c = i < n
        if extra_test is not None:
            more = extra_test(*state)
            c = e.logical_and(c, more) if is_tensor(more) else (c if more else e.constant(False))
        return c

    def loop_body(i, *state):
        return (i + 1,) + tuple(body(staged.get(i), *state))

    out = staged_while(test, loop_body, (e.constant(0),) + tuple(init), (_COUNTER,) + names, opts)
    return out[1:]
