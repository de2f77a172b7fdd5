"""Overloads of builtins for symbolic tensors: range len abs int float
enumerate zip, and print with the BUILTIN_FUNCTIONS feature (by default print
stays Python: it runs while tracing, as in TF).

Each overload calls the Python builtin unless an argument is a symbolic
tensor.  `range_`, `enumerate_` and `zip_` over symbolic tensors return a
`StagedIterable` that `for_stmt` turns into a counting `while_loop`.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Callable

import numpy as np

import eager as ek

from ._tensors import is_symbolic, is_tensor, is_tensor_array


@dataclass
class StagedIterable:
    """A sequence whose length is a (symbolic) scalar; `get(i)` is item i."""

    length: object
    get: Callable
    description: str


def _tensor_rows(x) -> StagedIterable:
    counted = _integer_range(x)
    if counted is not None:
        return counted
    dim = x.shape.as_list()[0] if x.shape.rank else None
    length = dim if dim is not None else ek.shape(x)[0]
    return StagedIterable(length, lambda i: x[i], "a tensor")


def _integer_range(x):
    """The items of an integer `ek.range(...)` tensor (a constant arange, or a Range op of tensor bounds) as
    `start + i * delta` of the loop's counter `i`, not row `i` of the range: the same values and dtype
    (integers, exactly), and the loop's reads `xs[t]` then index by its counter (TensorFlow's autograph
    iterates `tf.range` this way too); None for any other tensor."""
    op = getattr(x, "op", None)
    kind = getattr(op, "type", None)
    if kind not in ("Const", "Range") or x.shape.rank != 1 or x.dtype not in (ek.int32, ek.int64):
        return None
    if kind == "Range":
        start, _, delta = op.inputs
        dim = x.shape.as_list()[0]
        length = dim if dim is not None else ek.shape(x)[0]     # the Range op's own length (and checks)
        return StagedIterable(length, lambda i: _step(i, x.dtype, start, delta), "a range")
    values = np.asarray(op.get_attr("value"))
    n = values.shape[0]
    if n == 0:
        return None
    start, delta = int(values[0]), int(values[1] - values[0]) if n > 1 else 1
    if delta == 0 or not np.array_equal(values, np.arange(n, dtype=values.dtype) * delta + start):
        return None
    return StagedIterable(n, lambda i: _step(i, x.dtype, start, delta), "a range")


def _step(i, dtype, start, delta):
    """`start + i * delta` in `dtype`, without the product or the sum where `delta` is 1 or `start` 0."""
    t = i if dtype is ek.int32 else ek.cast(i, dtype)
    t = t if _known(delta, 1) else t * delta
    return t if _known(start, 0) else t + start


def _known(v, k) -> bool:
    """`v` (a Python int or a tensor) is `k` as far as the graph knows before it runs."""
    if isinstance(v, int):
        return v == k
    op = getattr(v, "op", None)
    return getattr(op, "type", None) == "Const" and np.asarray(op.get_attr("value")).tolist() == k


def range_(*args):
    if not any(is_symbolic(a) for a in args):
        return builtins.range(*args)
    start, limit, delta = (0, args[0], 1) if len(args) == 1 else (
        (args[0], args[1], 1) if len(args) == 2 else args)
    e = ek
    sign = e.sign(delta) if is_symbolic(delta) else (1 if delta > 0 else -1)
    n = e.maximum((limit - start + delta - sign) // delta, 0)
    return StagedIterable(n, lambda i: start + i * delta, "range()")


def len_(x):
    if isinstance(x, StagedIterable):
        return x.length
    if is_tensor_array(x):
        return x.size()
    if is_symbolic(x):
        shape = x.shape
        if shape.rank == 0:
            raise TypeError("len() of a scalar tensor is not defined")
        if shape.rank is not None and shape.as_list()[0] is not None:
            return shape.as_list()[0]
        return ek.shape(x)[0]
    return builtins.len(x)


def abs_(x):
    return ek.abs(x) if is_symbolic(x) else builtins.abs(x)


def int_(x=0, *args):
    if is_symbolic(x) and not args:
        return ek.cast(x, ek.int32)
    return builtins.int(x, *args)


def float_(x=0.0):
    return ek.cast(x, ek.float32) if is_symbolic(x) else builtins.float(x)


def enumerate_(iterable, start=0):
    if isinstance(iterable, StagedIterable) or is_symbolic(iterable):
        inner = iterable if isinstance(iterable, StagedIterable) else _tensor_rows(iterable)
        return StagedIterable(inner.length, lambda i: (i + start, inner.get(i)),
                              f"enumerate({inner.description})")
    return builtins.enumerate(iterable, start)


def zip_(*iterables):
    if not any(isinstance(it, StagedIterable) or is_symbolic(it) for it in iterables):
        return builtins.zip(*iterables)
    parts = []
    for it in iterables:
        if isinstance(it, StagedIterable):
            parts.append(it)
        elif is_symbolic(it):
            parts.append(_tensor_rows(it))
        else:
            raise TypeError("zip() of a symbolic tensor with a Python iterable cannot be "
                            "staged; convert the Python iterable to a tensor")
    length = parts[0].length
    for p in parts[1:]:
        length = ek.minimum(length, p.length)
    return StagedIterable(length, lambda i: tuple(p.get(i) for p in parts), "zip()")


def print_(*objects, sep=" ", end="\n", file=None, flush=False):
    """`print` with the BUILTIN_FUNCTIONS feature: with a symbolic tensor among `objects`, a stateful
    `py_function` prints every call, tensors as their NumPy values (TF prints through a py_func too);
    otherwise Python's print, now."""
    if not any(is_symbolic(o) for o in objects):
        return builtins.print(*objects, sep=sep, end=end, file=file, flush=flush)
    slots = [is_tensor(o) for o in objects]

    def print_values(*values):
        it = iter(values)
        builtins.print(*[next(it).numpy() if slot else o for o, slot in zip(objects, slots)],
                       sep=sep, end=end, file=file, flush=flush)
        return []
    ek.py_function(print_values, [o for o, slot in zip(objects, slots) if slot], [])


BUILTINS: dict = {
    builtins.range: range_, builtins.len: len_, builtins.abs: abs_, builtins.int: int_,
    builtins.float: float_, builtins.enumerate: enumerate_, builtins.zip: zip_,
}
