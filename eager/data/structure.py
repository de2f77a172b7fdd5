"""Element structures of `eager.data`: normalising values, their specs, and placeholders.

An element is a nested structure (tuples, namedtuples, dicts) whose leaves are
tensors, or datasets (the elements of `window`).  As in `tf.data`, a Python
*list* is a tensor (`from_tensor_slices([1, 2, 3])` slices one int32 tensor),
while tuples and dicts are structure; a list returned by a `map` function
becomes a tuple.  `spec_of(element)` gives the `element_spec`: the same
structure with `eager.TensorSpec` (or `DatasetSpec`) leaves.

`zeros_for(spec)` makes a value of a spec (unknown dimensions become 0): the
graph lowering carries it as the "no element" value of an exhausted stream.
Imports only `eager` modules.
"""
from __future__ import annotations

import numpy as np

from .. import nest
from ..convert import convert_to_tensor
from ..ops.array import zeros
from ..tensor import Tensor, read_only
from ..tensor_spec import TensorSpec


class DatasetSpec:
    """The spec of an element that is itself a dataset (`window`): its `element_spec`."""

    __slots__ = ("element_spec",)

    def __init__(self, element_spec):
        self.element_spec = element_spec

    def __eq__(self, other):
        return isinstance(other, DatasetSpec) and _spec_key(self.element_spec) == _spec_key(other.element_spec)

    def __hash__(self):
        return hash(_spec_key(self.element_spec))

    def __repr__(self):
        return f"DatasetSpec({self.element_spec!r})"


def _spec_key(spec):
    return tuple((type(s).__name__, getattr(s, "shape", None) and s.shape.dims, getattr(s, "dtype", None))
                 for s in nest.flatten(spec)) + (nest.structure_repr(spec),)


def _is_dataset(x) -> bool:
    return getattr(x, "_is_dataset", False)


def normalize(value, what: str = "element"):
    """`value` with tuples/namedtuples/dicts kept as structure and every other leaf a tensor."""
    if isinstance(value, Tensor) or _is_dataset(value):
        return value
    if isinstance(value, dict):
        return type(value)((k, normalize(v, what)) for k, v in value.items()) if type(value) is not dict \
            else {k: normalize(v, what) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*[normalize(v, what) for v in value])
    if isinstance(value, tuple):
        return tuple(normalize(v, what) for v in value)
    if value is None:
        raise TypeError(f"{what}: None is not a valid dataset element component (use a tensor or a "
                        f"tuple/dict of tensors)")
    if hasattr(value, "_to_tensor") or getattr(value, "_is_variable", False):
        return convert_to_tensor(value)
    return convert_to_tensor(value)


def is_flat_tuple(x) -> bool:
    """A plain tuple whose items are all tensors (the common element: no packing needed)."""
    if type(x) is not tuple:
        return False
    for v in x:             # a loop, not all(generator): this runs several times per element or batch
        if type(v) is not Tensor:
            return False
    return True


def normalize_output(value, what: str):
    """A function's result as an element: a top-level list becomes a tuple (as `tf.data` does)."""
    if type(value) is Tensor or is_flat_tuple(value):
        return value
    if isinstance(value, list):
        value = tuple(value)
    return normalize(value, what)


def spec_of(element):
    def leaf(x):
        if _is_dataset(x):
            return DatasetSpec(x.element_spec)
        return TensorSpec(x.shape, x.dtype)
    return nest.map_structure(leaf, element)


def leaves(spec) -> list:
    return nest.flatten(spec)


def relax(a, b):
    """The most specific spec both `a` and `b` fit (same structure and dtypes), or None."""
    if not nest.same_structure(a, b):
        return None
    out = []
    for x, y in zip(nest.flatten(a), nest.flatten(b)):
        if isinstance(x, TensorSpec) and isinstance(y, TensorSpec):
            m = x.most_specific_common_supertype(y)
            if m is None:
                return None
            out.append(m)
        elif x == y:
            out.append(x)
        else:
            return None
    return nest.pack_sequence_as(a, out)


def describe(spec) -> str:
    return nest.structure_repr(nest.map_structure(
        lambda s: s if isinstance(s, DatasetSpec) else f"{s.dtype.name}{list(s.shape.dims) if s.shape.dims is not None else '[*]'}", spec))


def to_numpy(element):
    """`as_numpy_iterator`'s element: each tensor's array read-only and uncopied (a NumPy scalar for rank 0),
    as TensorFlow yields it (a slice of `from_tensor_slices` data shares the source's memory)."""
    return nest.map_structure(lambda t: t if _is_dataset(t) else _element(t._value), element)


def _element(value):
    return value[()] if type(value) is np.ndarray and value.ndim == 0 else read_only(value)     # a scalar as TF


def zeros_for(spec):
    """A value of `spec` (unknown dimensions -> 0): the placeholder element of an exhausted stream."""

    def leaf(s):
        if isinstance(s, DatasetSpec):
            raise NotImplementedError("datasets of datasets (window) cannot be staged in a graph")
        dims = [0 if d is None else d for d in (s.shape.dims or [])]
        if s.dtype.name == "string":
            return convert_to_tensor(np.full(dims, b"", dtype=object))
        return zeros(dims, dtype=s.dtype)
    return nest.map_structure(leaf, spec)


def flatten_up_to(spec, value, what: str = "value") -> list:
    """The leaves of `value` at the leaf positions of `spec` (lists inside `value` stay whole)."""
    if not nest.is_nested(spec):
        return [value]
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise TypeError(f"{what}: expected a dict with keys {sorted(spec)}, got {value!r:.200}")
        return [x for k in sorted(spec) for x in flatten_up_to(spec[k], value[k], what)]
    if not isinstance(value, (tuple, list)) or len(value) != len(spec):
        raise TypeError(f"{what}: expected a sequence of {len(spec)} components, got {value!r:.200}")
    return [x for s, v in zip(spec, value) for x in flatten_up_to(s, v, what)]
