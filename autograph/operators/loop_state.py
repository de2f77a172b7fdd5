"""Loop variables of a staged loop: preparing them, and checking each iteration.

A loop variable may be any nested structure (list, tuple, namedtuple, dict)
whose leaves are tensors, Python numbers/bools/strings (made constants) or
TensorArrays, as in TensorFlow.  `prepare` turns the values the variables
hold before the loop into the initial `while_loop` state:

* a variable still `Undefined` (or an `UndefinedReturnValue`) is resolved by
  *probing* the body: one iteration is traced into a throw-away graph whose
  inputs are placeholders shaped like the loop variables (so nothing it
  creates, side effects included, reaches the user's graph, and shapes are
  those of an unknown iteration, not of the first one).  The variable then
  starts as zeros of the probed type; dimensions the probe does not know
  start at 0 and are left free by a shape invariant, and a runtime check
  requires the loop to run at least once (TF's `_try_handling_undefineds`
  and `_placeholder_value`).  If the body never defines it, it stays
  undefined after the loop.  If probing fails, the error is TF's "'x' must be
  defined before the loop", with the probe's error as a note;
* a Python list that the probed body appends to (the `lists` converter wrote
  `l = ag__.list_append(l, x)`) becomes a TensorArray holding its elements,
  stacked after the loop (**we** accept this where TensorFlow raises);
* a list the body does not append to is an ordinary structure.

`check_iteration` verifies one variable after the traced body against its
value at the loop head, as TF's `_verify_tf_loop_vars` does: same nested
structure (TypeError), no None (ValueError), same dtypes (TypeError), shapes
within the shape invariant or, without one, at least as specific as at the
loop head (ValueError).  Messages name the user's variable, with a path into
structures (`'s[1]'`, `"d['a']"`), and the user's line.

Imports: the sibling operators and `eager`/`graph_runtime` lazily.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import eager as ek

from graph_runtime.control_flow.body_graph import trace

from .. import errors
from ._tensors import is_tensor, is_tensor_array
from .variables import Undefined, is_undefined

_PY_LEAVES = (bool, int, float, str, np.ndarray, np.generic)   # made constants
_PROBE_ERRORS = (UnboundLocalError, TypeError, ValueError, KeyError, AttributeError, IndexError)


@dataclass
class Prepared:
    values: list                                   # initial state, one entry per variable
    passthrough: dict = field(default_factory=dict)  # i -> value the loop leaves alone
    lists: set = field(default_factory=set)         # i: lists accumulated as TensorArrays
    invariants: dict = field(default_factory=dict)  # i -> invariant structure (TensorShape/None leaves)
    check_once: list = field(default_factory=list)  # names the loop must define (>= 1 iteration)


# --- leaves ------------------------------------------------------------------
def leaf_tensor(x, like=None):
    """A Python bool/number/string as a constant (other values unchanged); a
    number takes `like`'s dtype when that loses nothing (an int into any
    number type, a float into a float type), as TF's loop-variable autocast."""
    e = ek
    if not isinstance(x, _PY_LEAVES):
        return x
    dt = like.dtype if is_tensor(like) else None
    if (dt is not None and isinstance(x, (int, float)) and not isinstance(x, bool) and not dt.is_bool
            and (dt.is_floating or (dt.is_integer and isinstance(x, int)))):
        return e.constant(x, dtype=dt)
    return e.constant(x)


def is_leaf_value(v) -> bool:
    """A value a staged construct can carry as one leaf of its state."""
    return is_tensor(v) or is_tensor_array(v) or isinstance(v, _PY_LEAVES)


def _as_state(name: str, value):
    """Structure leaves made tensors; anything else a loop cannot carry is an error."""
    e = ek

    def leaf(path, v):
        if v is None:
            raise errors.loop_none_before(path)
        if is_tensor(v) or is_tensor_array(v):
            return v
        if isinstance(v, _PY_LEAVES):
            return leaf_tensor(v)
        raise errors.loop_var_type(path, v)
    paths = e.nest.flatten_with_paths(value, name)
    return e.nest.pack_sequence_as(value, [leaf(p, v) for p, v in paths])


# --- probing -----------------------------------------------------------------
def probe(fn, args: list):
    """`(fn(probe_args), probe_args)`, traced into a throw-away graph: the
    probe arguments are placeholders shaped like the tensors (and Python
    numbers) in `args`, inside new containers; other values are passed as
    they are.  Nothing the trace creates reaches the user's graph.  Under an
    eager context (simulated staging in tests) `fn` runs directly, on copies
    of the lists."""
    e = ek
    ctx = e.context.current()
    if ctx.is_eager:
        probe_args = [list(a) if isinstance(a, list) else a for a in args]
        return fn(probe_args), probe_args
    made: list = []

    def make_args(graph):
        def leaf(v):
            if isinstance(v, _PY_LEAVES):
                v = e.constant(v)
            return graph.add_input(v.dtype, v.shape, "probe") if is_tensor(v) else v
        made[:] = [e.nest.map_structure(leaf, a) if e.nest.is_nested(a) else leaf(a) for a in args]
        return (made,)
    return trace("loop_probe", ctx, fn, make_args)[1], made


def _zeros_like_probed(path: str, like):
    """TF's `_placeholder_value`: (initial value, shape invariant or None)."""
    e = ek
    if is_tensor(like):
        shape = like.shape
        if shape.rank is None:
            return e.zeros([], like.dtype), e.TensorShape(None)
        dims = shape.as_list()
        value = e.zeros([0 if d is None else d for d in dims], like.dtype)
        return value, (shape if None in dims else None)
    if isinstance(like, bool):
        return e.constant(False), None
    if isinstance(like, (int, float)):
        return e.constant(type(like)(0)), None
    if is_undefined(like):
        return like, None
    raise errors.loop_var_type(path, like)


def placeholder_value(name: str, like):
    e = ek
    pairs = [_zeros_like_probed(p, v) for p, v in e.nest.flatten_with_paths(like, name)]
    return (e.nest.pack_sequence_as(like, [v for v, _ in pairs]),
            e.nest.pack_sequence_as(like, [i for _, i in pairs]))


# --- prepare -----------------------------------------------------------------
def user_invariants(init: list, names: tuple, opts: dict) -> dict:
    """`set_loop_options(shape_invariants=[(var, shape), ...])` per variable:
    a variable's invariant structure (leaves TensorShape or None).  `var` may
    be a loop variable or a tensor inside one (a partial invariant)."""
    e = ek
    out: dict = {}
    for var, shape in opts.get("shape_invariants") or ():
        hit = False
        for i, v in enumerate(init):
            if v is var:
                out[i] = _invariant_structure(names[i], v, shape)
                hit = True
                break
            if e.nest.is_nested(v) and any(leaf is var for leaf in e.nest.flatten(v)):
                current = out.get(i, e.nest.map_structure(lambda _: None, v))
                flat = e.nest.flatten(current)
                for k, leaf in enumerate(e.nest.flatten(v)):
                    if leaf is var:
                        flat[k] = _as_shape(shape)
                out[i] = e.nest.pack_sequence_as(v, flat)
                hit = True
                break
        if not hit:
            raise ValueError("set_loop_options: a shape invariant names a value that is not "
                             "a variable of this loop (nor a tensor inside one)")
    return out


def _as_shape(s):
    return None if s is None else ek.TensorShape(s)


def _invariant_structure(name: str, var, shape):
    """The invariant for a whole loop variable: a shape for a tensor, else a
    structure like `var` whose leaves are shapes or None (None: no invariant)."""
    e = ek
    if not e.nest.is_nested(var):
        return _as_shape(shape)
    if shape is None:
        return e.nest.map_structure(lambda _: None, var)
    flat_var = e.nest.flatten(var)
    try:
        flat = _flatten_up_to(var, shape)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise errors.invariant_structure(name, exc) from None
    if len(flat) != len(flat_var):
        raise errors.invariant_structure(name, "different number of entries")
    return e.nest.pack_sequence_as(var, [_as_shape(x) for x in flat])


def _flatten_up_to(template, value) -> list:
    """Leaves of `value` where `template` has leaves (a shape there stays whole)."""
    nest = ek.nest
    if not nest.is_nested(template):
        return [value]
    if isinstance(template, dict):
        if not isinstance(value, dict) or set(value) != set(template):
            raise ValueError(f"expected keys {sorted(template)}")
        return [x for k in nest.sorted_keys(template)
                for x in _flatten_up_to(template[k], value[k])]
    if not isinstance(value, (list, tuple)) or len(value) != len(template):
        raise ValueError(f"expected a sequence of {len(template)} entries, got {value!r}")
    return [x for t, v in zip(template, value) for x in _flatten_up_to(t, v)]


def prepare(body_call, init: list, names: tuple, opts: dict) -> Prepared:
    """The initial state of a staged loop (see the module docstring).

    `body_call(values) -> new values` runs one iteration on a full state."""
    prep = Prepared(values=list(init), invariants=user_invariants(init, names, opts))
    nulls = [i for i, v in enumerate(init) if is_undefined(v)]
    lists = [i for i, v in enumerate(init) if isinstance(v, list) and i not in prep.invariants]
    probed = probed_args = None
    if nulls or lists:
        try:
            probed, probed_args = probe(lambda vals: body_call(list(vals)), init)
            probed = list(probed)
        except _PROBE_ERRORS as exc:
            named = [i for i in nulls if isinstance(init[i], Undefined)]
            if not named:
                raise
            raise errors.loop_must_be_defined(names[named[0]], exc) from exc
    for i, v in enumerate(init):
        if i in nulls:
            d = probed[i]
            if is_undefined(d):
                prep.passthrough[i] = v
                continue
            prep.values[i], inv = placeholder_value(names[i], d)
            if i not in prep.invariants and any(x is not None for x in ek.nest.flatten(inv)):
                prep.invariants[i] = inv
            if isinstance(v, Undefined):   # a return value is only read if `do_return`
                prep.check_once.append(names[i])
        elif i in lists and probed[i] is probed_args[i] and len(probed[i]) > len(v):
            prep.values[i] = _tensor_list(names[i], v, probed[i][len(v)])
            prep.lists.add(i)
        elif i in lists and probed[i] is probed_args[i]:
            prep.passthrough[i] = v       # never appended to when traced
        else:
            prep.values[i] = _as_state(names[i], v)
    for i, inv in prep.invariants.items():
        if i not in prep.passthrough and i not in prep.lists:
            _check_initial(names[i], prep.values[i], inv)
    return prep


def _check_initial(path: str, value, invariant) -> None:
    """The initial value fits the user's shape invariant (before tracing)."""
    if invariant is None:
        return
    if isinstance(value, (list, tuple, dict)) and not is_tensor_array(value):
        keys = ek.nest.sorted_keys(value) if isinstance(value, dict) else range(len(value))
        for key in keys:
            _check_initial(f"{path}[{key!r}]" if isinstance(value, dict) else f"{path}[{key}]",
                           value[key], invariant[key])
    elif is_tensor(value) and not _shape_fits(invariant, value.shape):
        raise errors.loop_shape_invariant(path, fmt_shape(value.shape), fmt_shape(invariant),
                                          "before the loop")


def _tensor_list(name: str, items: list, appended):
    e = ek
    elem = leaf_tensor(appended)
    if not is_tensor(elem):
        raise errors.loop_var_type(f"{name}[...]", appended)
    ta = e.TensorArray(elem.dtype, size=0, dynamic_size=True, element_shape=elem.shape)
    for k, x in enumerate(items):
        x = leaf_tensor(x, like=elem)
        if not is_tensor(x) or x.dtype != elem.dtype:
            raise errors.list_dtype(name, describe_value(x), elem.dtype.name)
        ta = ta.write(k, x)
    return ta


# --- per-iteration check -----------------------------------------------------
def check_iteration(name: str, init, entry, exit_, invariant):
    """`exit_` made a valid next state for the variable `name` (see module doc)."""
    if is_undefined(exit_):
        raise errors.loop_undefined(name)
    if not _same_structure(entry, exit_):
        nest = ek.nest
        raise errors.loop_structure(name, nest.structure_repr(entry), nest.structure_repr(exit_))
    if not _same_structure(entry, init):
        init = None
    return _check(name, init, entry, exit_, invariant)


def _check(path, init, entry, exit_, invariant):
    """Walks the structure (TensorArrays are leaves) checking each leaf."""
    if is_tensor_array(entry) or not isinstance(entry, (list, tuple, dict)):
        return _check_leaf(path, init, entry, exit_, invariant)
    nest = ek.nest
    if isinstance(entry, dict):
        keys = nest.sorted_keys(entry)
        parts = [(f"{path}[{k!r}]", k) for k in keys]
    elif nest.is_namedtuple(entry):
        parts = [(f"{path}.{f}", i) for i, f in enumerate(entry._fields)]
    else:
        parts = [(f"{path}[{i}]", i) for i in range(len(entry))]

    def sub(x, key):
        return None if x is None else x[key]
    vals = {key: _check(p, sub(init, key), entry[key], exit_[key], sub(invariant, key))
            for p, key in parts}
    if isinstance(entry, dict):
        return {k: vals[k] for k in exit_}
    if nest.is_namedtuple(entry):
        return type(exit_)(*[vals[i] for i in range(len(entry))])
    return type(exit_)(vals[i] for i in range(len(entry)))


def _same_structure(a, b) -> bool:
    nest = ek.nest
    return nest.same_structure(nest.lists_for_sequences(a), nest.lists_for_sequences(b))


def describe_value(x) -> str:
    return f"a {type(x).__name__}" if not is_tensor(x) else f"a {x.dtype.name} tensor"


def _check_leaf(path, init, entry, exit_, invariant):
    if exit_ is None:
        raise errors.loop_none_after(path)
    if is_undefined(exit_):
        raise errors.loop_undefined(path)
    if is_tensor_array(entry):
        if not is_tensor_array(exit_) or exit_.dtype != entry.dtype:
            raise errors.loop_structure(path, f"a {entry.dtype.name} tensor list",
                                        describe_value(exit_))
        return exit_
    exit_ = leaf_tensor(exit_, like=entry)
    if not is_tensor(exit_):
        raise errors.loop_structure(path, describe_value(entry), describe_value(exit_))
    if exit_.dtype != entry.dtype:
        raise errors.loop_dtype(path, entry.dtype.name, exit_.dtype.name)
    if invariant is not None:
        if is_tensor(init) and not _shape_fits(invariant, init.shape):
            raise errors.loop_shape_invariant(path, fmt_shape(init.shape), fmt_shape(invariant),
                                              "before the loop")
        if not _shape_fits(invariant, exit_.shape):
            raise errors.loop_shape_invariant(path, fmt_shape(exit_.shape), fmt_shape(invariant),
                                              "after one iteration")
    elif not _shape_fits(entry.shape, exit_.shape):
        raise errors.loop_shape(path, fmt_shape(entry.shape), fmt_shape(exit_.shape))
    return exit_


def _shape_fits(invariant, shape) -> bool:
    """`shape` is at least as specific as `invariant` (TF's `_is_subshape`)."""
    if invariant.rank is None:
        return True
    if shape.rank is None or shape.rank != invariant.rank:
        return False
    return all(d is None or d == g for d, g in zip(invariant.as_list(), shape.as_list()))


def fmt_shape(shape) -> str:
    dims = shape.as_list() if shape.rank is not None else None
    return "<unknown>" if dims is None else str(tuple(dims))


__all__ = ["Prepared", "prepare", "check_iteration", "leaf_tensor", "probe", "fmt_shape",
           "placeholder_value"]
