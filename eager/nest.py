"""Nested structures (lists, tuples, namedtuples, dicts) flattened and rebuilt.

Same conventions as `tf.nest`: dicts flatten in sorted key order, `None` is a
leaf, namedtuples keep their type.  Iterative (no recursion limit on deep
nesting would matter here, but structures are shallow in practice; the
implementation recurses on structure depth only).
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["is_nested", "flatten", "pack_sequence_as", "map_structure", "structure_repr", "same_structure",
           "assert_same_structure", "flatten_with_paths", "lists_for_sequences"]


def is_nested(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _children(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted_keys(x)]
    return list(x)


def sorted_keys(d):
    """A dict's keys in the order every flattening uses (sorted; by repr when the keys do not compare)."""
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=repr)


def flatten(structure) -> list:
    """All leaves of `structure`, left to right."""
    out: list = []
    stack = [structure]
    while stack:
        x = stack.pop()
        if is_nested(x):
            stack.extend(reversed(_children(x)))
        else:
            out.append(x)
    return out


def _rebuild(template, leaves_iter):
    if isinstance(template, dict):
        keys = sorted_keys(template)
        vals = {k: _rebuild(template[k], leaves_iter) for k in keys}
        return type(template)((k, vals[k]) for k in template) if type(template) is not dict else \
            {k: vals[k] for k in template}
    if is_namedtuple(template):
        return type(template)(*[_rebuild(c, leaves_iter) for c in template])
    if isinstance(template, (list, tuple)):
        return type(template)(_rebuild(c, leaves_iter) for c in template)
    return next(leaves_iter)


def pack_sequence_as(structure, flat_sequence):
    """Rebuild `structure` with its leaves replaced by `flat_sequence` (in order)."""
    flat = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"structure has {n} leaves but {len(flat)} values were given")
    return _rebuild(structure, iter(flat))


def map_structure(fn: Callable, *structures):
    """Apply `fn` to corresponding leaves; all structures must match."""
    for s in structures[1:]:
        assert_same_structure(structures[0], s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats)])


def structure_repr(x) -> str:
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {structure_repr(x[k])}" for k in sorted_keys(x)) + "}"
    if is_namedtuple(x):
        return f"{type(x).__name__}(" + ", ".join(structure_repr(c) for c in x) + ")"
    if isinstance(x, list):
        return "[" + ", ".join(structure_repr(c) for c in x) + "]"
    if isinstance(x, tuple):
        return "(" + ", ".join(structure_repr(c) for c in x) + ("," if len(x) == 1 else "") + ")"
    return "."


def same_structure(a, b) -> bool:
    if is_nested(a) != is_nested(b):
        return False
    if not is_nested(a):
        return True
    if isinstance(a, dict) != isinstance(b, dict) or isinstance(a, list) != isinstance(b, list):
        return False
    if is_namedtuple(a) != is_namedtuple(b) or (is_namedtuple(a) and type(a) is not type(b)):
        return False
    if isinstance(a, dict) and set(a) != set(b):
        return False
    ca, cb = _children(a), _children(b)
    return len(ca) == len(cb) and all(same_structure(x, y) for x, y in zip(ca, cb))


def assert_same_structure(a, b, what: str = "structures") -> None:
    if not same_structure(a, b):
        raise ValueError(f"{what} do not have the same nested structure: {structure_repr(a)} vs "
                         f"{structure_repr(b)}")


def flatten_with_paths(structure, prefix: str = "") -> list[tuple[str, Any]]:
    """Leaves with readable paths such as `x[0]['b']`, for error messages."""
    out = []
    stack = [(prefix, structure)]
    while stack:
        path, x = stack.pop()
        if isinstance(x, dict):
            items = [(f"{path}[{k!r}]", x[k]) for k in sorted_keys(x)]
            stack.extend(reversed(items))
        elif is_namedtuple(x):
            stack.extend(reversed([(f"{path}.{f}", v) for f, v in zip(x._fields, x)]))
        elif isinstance(x, (list, tuple)):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(x)]))
        else:
            out.append((path, x))
    return out


def lists_for_sequences(s):
    """`s` with every list and plain tuple turned into a list (namedtuples and dicts kept).

    For comparing structures where a list and a tuple count as the same
    sequence (loop variables returned as a tuple for a list, call arguments).
    """
    if isinstance(s, (list, tuple)) and not hasattr(s, "_fields"):
        return [lists_for_sequences(x) for x in s]
    if isinstance(s, dict):
        return {k: lists_for_sequences(v) for k, v in s.items()}
    return s


from .namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
