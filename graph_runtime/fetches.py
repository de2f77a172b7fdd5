"""Session fetch and feed handling: resolve, key, and shape results like the request.

`fetch_key(fetches)` is computed on every `Session.run`, so it is cheap for the
common shapes (one tensor/op, a flat list or tuple of them) and falls back to a
structural key for nested lists/tuples/dicts/namedtuples.  Keys hold the fetch
objects themselves (graph tensors and ops hash by identity), so a cached entry
keeps them alive and an id can never be reused by another object.

`resolve_fetches(graph, fetches)` flattens the structure (tf.nest order) and
turns each leaf into a `ReturnItem`: a graph tensor or 'op:0' name -> its
value; an Operation or 'op' name -> None (run for its effect); a Variable -> its
value read after the run.  It returns the items, the ops to run as targets and
a packer rebuilding the user's structure (None when the generated plan already
returns the right container).  `pack_result` gives collected values that
structure.

Imports `eager` and sibling modules.
"""
from __future__ import annotations

from typing import Callable, Optional

from eager import nest
from eager.tensor import Tensor, TensorRef

from .compiler import ReturnItem
from .operation import GraphTensor, Operation

def fetch_key(fetches):
    """A hashable key identifying `fetches` (identity of leaves + structure)."""
    t = type(fetches)
    if t is GraphTensor or t is Operation or t is str:
        return fetches
    if t is list or t is tuple:
        for x in fetches:
            tx = type(x)
            if tx is not GraphTensor and tx is not Operation and tx is not str:
                break
        else:
            return (t,) + tuple(fetches)
    return ("nested", _structure_key(fetches))


def _structure_key(x):
    tokens = []
    stack = [x]
    while stack:
        y = stack.pop()
        if isinstance(y, dict):
            keys = sorted(y, key=repr)
            tokens.append(("dict", type(y), tuple(keys)))
            stack.extend(y[k] for k in reversed(keys))
        elif isinstance(y, (list, tuple)):
            tokens.append((type(y), len(y)))
            stack.extend(reversed(y))
        else:
            try:
                hash(y)
                tokens.append(y)
            except TypeError:
                tokens.append(("id", id(y), y.__class__))
    return tuple(tokens)


def _resolve_leaf(graph, x):
    if isinstance(x, str):
        x = graph.as_graph_element(x)
    if isinstance(x, GraphTensor):
        if x._op._graph is not graph:
            raise ValueError(f"Fetch argument {x!r} is not an element of this session's graph")
        return ReturnItem("value", tensor=x), None
    if isinstance(x, Operation):
        if x._graph is not graph:
            raise ValueError(f"Fetch argument {x!r} (an operation) is not an element of this session's graph")
        return ReturnItem("none"), x
    if getattr(x, "_is_variable", False):
        return ReturnItem("var", var=x), None
    if isinstance(x, Tensor):
        raise TypeError(f"Fetch argument {x!r} is an eager tensor: it already has a value (use .numpy()); "
                        f"fetches must be graph tensors, operations, their names, or variables")
    raise TypeError(f"Fetch argument {x!r} has invalid type {type(x).__name__}: must be a graph Tensor, an "
                    f"Operation, a tensor/op name string, a Variable, or a list/tuple/dict of them")


def resolve_fetches(graph, fetches):
    """-> (return items, target ops, container, packer or None)."""
    if fetches is None:
        raise TypeError("Fetch argument None has invalid type NoneType")
    leaves = nest.flatten(fetches)
    items, targets = [], []
    for leaf in leaves:
        item, target = _resolve_leaf(graph, leaf)
        items.append(item)
        if target is not None and target not in targets:
            targets.append(target)
    t = type(fetches)
    if not nest.is_nested(fetches):
        return items, targets, "single", None
    flat = all(not nest.is_nested(x) for x in fetches) if t in (list, tuple) else False
    if t is list and flat:
        return items, targets, "list", None
    if t is tuple and flat:
        return items, targets, "tuple", None
    template = fetches
    packer: Optional[Callable] = lambda out: nest.pack_sequence_as(template, out)
    return items, targets, "tuple", packer


def pack_result(values: list, container: str, packer: Optional[Callable] = None):
    """Fetched values (flat, in `resolve_fetches` order) in the structure the user fetched, for runners that
    collect values themselves (partial runs, a cluster's tasks); a compiled plan returns its container."""
    out = values[0] if container == "single" else tuple(values) if container == "tuple" else values
    return out if packer is None else packer(out)


def resolve_feeds(graph, feed_keys) -> list:
    """Feed dict keys (graph tensors, 'x:0' names, TensorRefs) -> graph tensors, checked."""
    out = []
    seen = set()
    for k in feed_keys:
        t = k.deref() if isinstance(k, TensorRef) else k
        if isinstance(t, str):
            try:
                t = graph.get_tensor_by_name(t)
            except ValueError:
                raise TypeError(f"Cannot interpret feed_dict key {k!r} as a Tensor: the name refers to an "
                                f"Operation, not a Tensor (tensor names look like {k + ':0'!r})") from None
            except KeyError as e:
                raise TypeError(f"Cannot interpret feed_dict key {k!r} as a Tensor: {e.args[0]}") from None
        if getattr(t, "_is_variable", False):
            raise TypeError(f"Cannot feed variable {t.name!r}: feed placeholders (or other graph tensors), or "
                            f"assign the variable")
        if not isinstance(t, GraphTensor):
            raise TypeError(f"Cannot interpret feed_dict key {k!r} as a graph Tensor (got {type(t).__name__})")
        if t._op._graph is not graph:
            raise ValueError(f"feed_dict key {t.name!r} is not an element of this session's graph")
        if id(t) in seen:
            raise ValueError(f"tensor {t.name!r} is fed more than once in feed_dict")
        seen.add(id(t))
        out.append(t)
    return out
