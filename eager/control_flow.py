"""`cond`, `while_loop`, `switch_case`: Python when eager, functional ops in graphs.

Eagerly the predicate is read and the chosen Python callable runs, so results
(and gradients through the tape) are exactly those of plain Python.  While a
graph is being built, `staged_control_flow` traces the callables into bodies
of the current graph (the context protocol's `trace_body` / `trace_bodies`)
and dispatches one If/While/Case op like any other op.  Structure checks
shared by both modes live here.
"""
from __future__ import annotations

from . import context as _context
from . import nest
from .convert import convert_to_tensor
from .errors import InvalidArgumentError
from .tensor import Tensor
from .control_flow_structure import normalize_body_result
from .staged_control_flow import stage_case, stage_cond, stage_while


def _as_python_bool(pred, what):
    if isinstance(pred, Tensor) or hasattr(pred, "_to_tensor"):
        t = convert_to_tensor(pred)
        if t.dtype.name != "bool" or t.shape.rank not in (0, None) and t.shape.num_elements() != 1:
            raise InvalidArgumentError(f"{what}: the predicate must be a bool scalar, got {t.dtype.name} "
                                       f"tensor of shape {t.shape}")
        return bool(t)
    return bool(pred)


def cond(pred, true_fn=None, false_fn=None, name=None):
    """Return `true_fn()` if `pred` else `false_fn()` (a `If` op in graphs)."""
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("cond: true_fn and false_fn must be callables taking no arguments")
    ctx = _context.current()
    if ctx.is_eager:
        return true_fn() if _as_python_bool(pred, "cond") else false_fn()
    return stage_cond(ctx, pred, true_fn, false_fn, name)


def switch_case(branch_index, branch_fns, default=None, name=None):
    """Run `branch_fns[branch_index]()` (out-of-range -> `default`, or the last branch)."""
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
        if [k for k, _ in items] != list(range(len(items))):
            raise ValueError(f"switch_case: dict keys must be 0..n-1, got {[k for k, _ in items]}")
        branch_fns = [f for _, f in items]
    branch_fns = list(branch_fns)
    if not branch_fns or not all(callable(f) for f in branch_fns):
        raise TypeError("switch_case: branch_fns must be a non-empty list of callables")
    ctx = _context.current()
    if ctx.is_eager:
        idx = int(convert_to_tensor(branch_index))
        if 0 <= idx < len(branch_fns):
            return branch_fns[idx]()
        return (default or branch_fns[-1])()
    return stage_case(ctx, branch_index, branch_fns, default, name)


def while_loop(cond, body, loop_vars, shape_invariants=None, maximum_iterations=None, name=None,
               parallel_iterations=None, back_prop=True, swap_memory=False):
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)` (a `While` op in graphs)."""
    if not callable(cond) or not callable(body):
        raise TypeError("while_loop: cond and body must be callables")
    single = not isinstance(loop_vars, (list, tuple)) or (isinstance(loop_vars, tuple) and hasattr(loop_vars, "_fields"))
    ctx = _context.current()
    if not ctx.is_eager:
        return stage_while(ctx, cond, body, loop_vars, shape_invariants, maximum_iterations, name)
    vars_ = loop_vars
    limit = None if maximum_iterations is None else int(convert_to_tensor(maximum_iterations))
    i = 0
    while (limit is None or i < limit) and _as_python_bool(_call(cond, vars_, single), "while_loop cond"):
        new = _call(body, vars_, single)
        new = normalize_body_result(vars_, new, single)
        check_loop_structure(vars_, new)
        vars_ = type(vars_)(new) if isinstance(vars_, list) and isinstance(new, tuple) else new
        i += 1
    return vars_


def _call(fn, vars_, single):
    return fn(vars_) if single else fn(*vars_)


def check_loop_structure(before, after):
    """Loop variables must keep their nested structure and dtypes across an iteration."""
    if not nest.same_structure(nest.lists_for_sequences(before), nest.lists_for_sequences(after)):
        raise ValueError(f"while_loop: the body must return the same structure as loop_vars: "
                         f"{nest.structure_repr(before)} before the loop, {nest.structure_repr(after)} after one "
                         f"iteration")
    for (path, b), (_, a) in zip(nest.flatten_with_paths(before, "loop_vars"),
                                 nest.flatten_with_paths(after, "loop_vars")):
        db, da = _dtype(b), _dtype(a)
        if db is not None and da is not None and db is not da:
            raise TypeError(f"while_loop: {path} has dtype {db.name} before the loop, but dtype {da.name} after "
                            f"one iteration")




def _dtype(x):
    if isinstance(x, Tensor) or getattr(x, "_is_variable", False):
        return x.dtype
    return None
