"""Dataset sources: tensor slices, single tensors, ranges, generators, zip and concatenate.

Every dataset is a graph of *nodes*.  A node has `spec` (the element spec),
`inputs` (upstream nodes), `iterate()` (a fresh Python iterator of eager
elements: one pass, or "epoch"), `cardinality()` (a count, or INFINITE -1 /
UNKNOWN -2) and `lower()` (its staged form inside a graph, see `lowering.py`).
Nodes are immutable once built, except for the pass counters that seed
reshuffling.  Imports `eager` modules only.
"""
from __future__ import annotations

import numpy as np

from .. import nest
from ..convert import convert_to_tensor
from ..dtypes import as_dtype, int64
from ..errors import InvalidArgumentError
from ..tensor import Tensor, is_symbolic
from ..tensor_spec import TensorSpec
from . import structure

INFINITE = -1
UNKNOWN = -2


def _eager_array(t):
    return None if is_symbolic(t) else t._value


class TensorSlices:
    """`from_tensor_slices`: element i is row i of every component."""

    inputs = ()

    def __init__(self, tensors):
        elem = structure.normalize(tensors, "from_tensor_slices")
        comps = nest.flatten(elem)
        if not comps:
            raise ValueError("from_tensor_slices: the structure holds no tensors")
        dims = set()
        for path, c in nest.flatten_with_paths(elem, "tensors"):
            if c.shape.rank == 0:
                raise ValueError(f"from_tensor_slices: {path} is a scalar; every component needs a first "
                                 f"dimension to slice")
            dims.add(c.shape.dims[0] if c.shape.rank is not None else None)
        known = {d for d in dims if d is not None}
        if len(known) > 1:
            raise ValueError(f"from_tensor_slices: all components must have the same first dimension, got "
                             f"{sorted(known)} ({structure.describe(structure.spec_of(elem))})")
        self.structure, self.components = elem, comps
        self.n = known.pop() if known and None not in dims else None
        self.spec = nest.map_structure(lambda c: TensorSpec(c.shape.dims[1:] if c.shape.rank is not None
                                                            else None, c.dtype), elem)

    def iterate(self):
        arrays = [_eager_array(c) for c in self.components]
        yield from slice_rows(arrays, self.structure, range(arrays[0].shape[0]))

    def cardinality(self):
        return self.n if self.n is not None else UNKNOWN

    def index_source(self):
        """(component arrays, structure, the row order as an int64 array): lets `batch` gather whole batches
        and `shuffle` reorder rows without iterating them."""
        arrays = [_eager_array(c) for c in self.components]
        return arrays, self.structure, np.arange(arrays[0].shape[0], dtype=np.int64)


def slice_rows(arrays, struct, order):
    """The elements of tensor slices (`arrays` packed as `struct`) at the row indices `order`, in order."""
    if not nest.is_nested(struct):
        a = arrays[0]
        for i in order:
            yield Tensor(np.array(a[i]))
    elif structure.is_flat_tuple(struct):
        for i in order:
            yield tuple([Tensor(np.array(a[i])) for a in arrays])
    else:
        for i in order:
            yield nest.pack_sequence_as(struct, [Tensor(np.array(a[i])) for a in arrays])


class FromTensors:
    """`from_tensors`: the whole structure, once."""

    inputs = ()

    def __init__(self, tensors):
        self.structure = structure.normalize(tensors, "from_tensors")
        self.spec = structure.spec_of(self.structure)

    def iterate(self):
        yield self.structure

    def cardinality(self):
        return 1


class Range:
    """`range(start, stop, step)`: int64 scalars (or `dtype`)."""

    inputs = ()

    def __init__(self, args, dtype=int64):
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range takes 1 to 3 positional arguments (stop, or start, stop[, step]), got "
                            f"{len(args)}")
        start, stop, step = (0, args[0], 1) if len(args) == 1 else \
            ((args[0], args[1], 1) if len(args) == 2 else args)
        self.dtype = as_dtype(dtype)
        self.symbolic = any(is_symbolic(a) for a in (start, stop, step))
        if not self.symbolic:
            start, stop, step = (int(convert_to_tensor(a)) if isinstance(a, Tensor) else int(a)
                                 for a in (start, stop, step))
            if step == 0:
                raise InvalidArgumentError("range: step must not be 0")
        self.start, self.stop, self.step = start, stop, step
        self.spec = TensorSpec([], self.dtype)

    def iterate(self):
        np_dtype = self.dtype.as_numpy_dtype
        for v in range(self.start, self.stop, self.step):
            yield Tensor(np.array(v, dtype=np_dtype))

    def cardinality(self):
        if self.symbolic:
            return UNKNOWN
        return len(range(self.start, self.stop, self.step))


def signature_from_types(output_types, output_shapes):
    """`output_types` and `output_shapes` (same structure; a shape is a list) as a signature of TensorSpecs."""
    types = nest.flatten(output_types)
    shapes = [None] * len(types) if output_shapes is None else \
        structure.flatten_up_to(output_types, output_shapes, "output_shapes")
    return nest.pack_sequence_as(output_types, [TensorSpec(s, t) for t, s in zip(types, shapes)])


class FromGenerator:
    """`from_generator`: calls `generator(*args)` again on every pass; checks each yielded value."""

    inputs = ()

    def __init__(self, generator, output_signature, args=()):
        if not callable(generator):
            raise TypeError(f"from_generator: `generator` must be callable, got {type(generator).__name__}")
        for s in nest.flatten(output_signature):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"from_generator: output_signature must be a structure of eager.TensorSpec, "
                                f"got {s!r}")
        self.generator, self.args, self.spec = generator, tuple(args), output_signature

    def iterate(self):
        for value in self.generator(*self.args):
            yield self._check(value)

    def _check(self, value):
        spec = self.spec
        if not nest.is_nested(spec) and isinstance(value, (tuple, dict)):
            value = None         # a structure where a tensor was expected
        try:
            parts = structure.flatten_up_to(spec, value, "generator")
            if value is None:
                raise TypeError
        except TypeError:
            raise TypeError(f"`generator` yielded an element that did not match the expected structure. The "
                            f"expected structure was {structure.describe(spec)}, but the yielded element was "
                            f"{value!r:.200}") from None
        return nest.pack_sequence_as(spec, [self._leaf(p, s, v) for (p, s), v in zip(
            nest.flatten_with_paths(spec, "element"), parts)])

    def _leaf(self, path, spec, v):
        try:
            t = v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=spec.dtype)
        except (TypeError, ValueError, InvalidArgumentError) as e:
            raise TypeError(f"`generator` yielded an element that could not be converted to the expected type "
                            f"{spec.dtype.name} ({path}): {e}") from None
        if t.dtype is not spec.dtype:
            raise TypeError(f"`generator` yielded an element of dtype {t.dtype.name} where {spec.dtype.name} "
                            f"was expected ({path})")
        if not spec.shape.is_compatible_with(t.shape):
            raise InvalidArgumentError(f"`generator` yielded an element of shape {t.shape} where an element of "
                                       f"shape {spec.shape} was expected ({path})")
        return t

    def cardinality(self):
        return UNKNOWN


class Zip:
    """`zip(datasets)`: tuples (or the given structure) of the inputs' elements, up to the shortest."""

    def __init__(self, structure_of_nodes):
        self.structure = structure_of_nodes
        self.inputs = tuple(nest.flatten(structure_of_nodes))
        self.spec = nest.map_structure(lambda n: n.spec, structure_of_nodes)

    def iterate(self):
        for parts in zip(*[n.iterate() for n in self.inputs]):
            yield nest.pack_sequence_as(self.structure, list(parts))

    def cardinality(self):
        cards = [n.cardinality() for n in self.inputs]
        finite = [c for c in cards if c >= 0]
        if finite:
            return min(finite) if UNKNOWN not in cards or min(finite) == 0 else UNKNOWN
        return UNKNOWN if UNKNOWN in cards else INFINITE


class Concatenate:
    """`a.concatenate(b)`: the elements of `a`, then those of `b` (specs relaxed to fit both)."""

    def __init__(self, a, b):
        spec = structure.relax(a.spec, b.spec)
        if spec is None:
            raise TypeError(f"concatenate: incompatible element specs {structure.describe(a.spec)} and "
                            f"{structure.describe(b.spec)}")
        self.inputs, self.spec = (a, b), spec

    def iterate(self):
        for n in self.inputs:
            yield from n.iterate()

    def cardinality(self):
        a, b = (n.cardinality() for n in self.inputs)
        if INFINITE in (a, b):
            return INFINITE
        if UNKNOWN in (a, b):
            return UNKNOWN
        return a + b


class Empty:
    """No elements, of a given spec (the placeholder dataset a `flat_map` function is probed with)."""

    inputs = ()

    def __init__(self, spec):
        self.spec = spec

    def iterate(self):
        return iter(())

    def cardinality(self):
        return 0
