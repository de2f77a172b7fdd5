"""`Dataset`: the public `tf.data.Dataset` spelling over the node graph (`sources`, `transforms`, `batching`).

A `Dataset` wraps one immutable node; every transformation returns a new
`Dataset` around a new node, so datasets are values: they can be shared,
passed to and returned from functions, and iterated any number of times
(each `iter()` is a new pass).  Eagerly, `iter(ds)` is an `Iterator` over the
nodes' Python iterators, which call the traced map/filter functions.  While a
graph is being built (inside `@function`), iteration is staged instead
(`lowering.py`): AutoGraph turns `for x in ds:` into a while loop, and
`iter(ds)` gives a `GraphIterator` whose `next()` adds graph ops.  Passed to
a traced function, a dataset is keyed by its `element_spec` and fed to the
graph (`arguments.py`).
"""
from __future__ import annotations

from .. import context as _context
from .. import nest
from ..convert import convert_to_tensor
from ..dtypes import int64
from ..errors import OutOfRangeError
from . import arguments, batching, functions, sources, staged, structure, transforms
from .sources import INFINITE, UNKNOWN


def _node_of(value, what):
    if not isinstance(value, Dataset):
        raise TypeError(f"the `{what}` function must return a Dataset, got {type(value).__name__}")
    return value._node


def _sample_of(spec):
    """A placeholder element of `spec`: zeros, or empty datasets for dataset components."""
    return nest.map_structure(lambda s: Dataset(sources.Empty(s.element_spec))
                              if isinstance(s, structure.DatasetSpec) else structure.zeros_for(s), spec)


class Dataset:
    """A sequence of elements (nested structures of tensors), transformed lazily, as `tf.data.Dataset`."""

    _is_dataset = True

    def __init__(self, node):
        self._node = node

    # -- sources ---------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors, name=None):
        return Dataset(sources.TensorSlices(tensors))

    @staticmethod
    def from_tensors(tensors, name=None):
        return Dataset(sources.FromTensors(tensors))

    @staticmethod
    def range(*args, dtype=int64, name=None):
        return Dataset(sources.Range(args, dtype))

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        if output_signature is None:
            if output_types is None:
                raise TypeError("from_generator: give output_signature (a structure of eager.TensorSpec)")
            output_signature = sources.signature_from_types(output_types, output_shapes)
        return Dataset(sources.FromGenerator(generator, output_signature, args or ()))

    @staticmethod
    def zip(*args, datasets=None, name=None):
        if datasets is None:
            datasets = args[0] if len(args) == 1 else tuple(args)
        elif args:
            raise TypeError("zip: give the datasets either positionally or as `datasets=`, not both")
        if isinstance(datasets, Dataset):
            raise TypeError("zip: expected a tuple or dict of datasets (zip(a, b) or zip((a, b))), got one "
                            "Dataset")
        for d in nest.flatten(datasets):
            if not isinstance(d, Dataset):
                raise TypeError(f"zip: every component must be a Dataset, got {type(d).__name__}")
        return Dataset(sources.Zip(nest.map_structure(lambda d: d._node, datasets)))

    # -- transformations ---------------------------------------------------------
    def concatenate(self, dataset, name=None):
        return Dataset(sources.Concatenate(self._node, dataset._node))

    def map(self, map_func, num_parallel_calls=None, deterministic=None, name=None):
        return Dataset(transforms.Map(self._node, map_func, num_parallel_calls))

    def filter(self, predicate, name=None):
        return Dataset(transforms.Filter(self._node, predicate))

    def take_while(self, predicate, name=None):
        return Dataset(transforms.TakeWhile(self._node, predicate))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        return Dataset(batching.Batch(self._node, batch_size, drop_remainder))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        return Dataset(batching.PaddedBatch(self._node, batch_size, padded_shapes, padding_values, drop_remainder))

    def unbatch(self, name=None):
        return Dataset(batching.Unbatch(self._node))

    def rebatch(self, batch_size, drop_remainder=False, name=None):
        return Dataset(batching.Rebatch(self._node, batch_size, drop_remainder))

    def window(self, size, shift=None, stride=1, drop_remainder=False, name=None):
        return Dataset(batching.Window(self._node, size, shift, stride, drop_remainder, wrap=Dataset))

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=True, name=None):
        return Dataset(transforms.Shuffle(self._node, buffer_size, seed, reshuffle_each_iteration))

    def repeat(self, count=None, name=None):
        return Dataset(transforms.Repeat(self._node, count))

    def take(self, count, name=None):
        return Dataset(transforms.Take(self._node, count))

    def skip(self, count, name=None):
        return Dataset(transforms.Skip(self._node, count))

    def enumerate(self, start=0, name=None):
        return Dataset(transforms.Enumerate(self._node, start))

    def prefetch(self, buffer_size, name=None):
        return Dataset(transforms.Prefetch(self._node, buffer_size))

    def cache(self, filename="", name=None):
        return Dataset(transforms.Cache(self._node, filename))

    def shard(self, num_shards, index, name=None):
        return Dataset(transforms.Shard(self._node, num_shards, index))

    def scan(self, initial_state, scan_func, name=None):
        return Dataset(transforms.Scan(self._node, initial_state, scan_func))

    def flat_map(self, map_func, name=None):
        return Dataset(transforms.FlatMap(self._node, map_func, _node_of, _sample_of))

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        return Dataset(transforms.Interleave(self._node, map_func, cycle_length,
                                             1 if block_length is None else block_length, _node_of, _sample_of))

    def apply(self, transformation_func):
        result = transformation_func(self)
        _node_of(result, "apply")
        return result

    # -- consumption ---------------------------------------------------------------
    def reduce(self, initial_state, reduce_func, name=None):
        """Fold the elements: `state = reduce_func(state, element)`, from `initial_state`."""
        if not _context.executing_eagerly():
            return staged.staged_reduce(self, initial_state, reduce_func)
        state = structure.normalize(initial_state, "reduce initial_state")
        fn = functions.StructuredFunction(reduce_func, (structure.spec_of(state), self.element_spec), "reduce")
        fn = _relaxed_reduce_function(fn, reduce_func, structure.spec_of(state), self.element_spec)
        for x in self._node.iterate():
            state = fn(state, x)
        return state

    def get_single_element(self, name=None):
        it = iter(self._node.iterate())
        try:
            first = next(it)
        except StopIteration:
            raise ValueError("get_single_element: the dataset is empty") from None
        for _ in it:
            raise ValueError("get_single_element: the dataset has more than one element")
        return first

    def as_numpy_iterator(self):
        if not _context.executing_eagerly():
            raise RuntimeError("as_numpy_iterator() is only supported eagerly (outside @function)")
        return (structure.to_numpy(x) for x in self._node.iterate())

    def __iter__(self):
        if _context.executing_eagerly():
            return Iterator(self)
        return staged.GraphIterator(self)

    # -- inspection ----------------------------------------------------------------
    @property
    def element_spec(self):
        return self._node.spec

    def cardinality(self):
        """An int64 scalar: the number of elements, INFINITE_CARDINALITY (-1) or UNKNOWN_CARDINALITY (-2)."""
        feds = arguments.fed_leaves(self._node)
        if feds:
            return arguments.fed_cardinality(self._node, feds)
        return convert_to_tensor(self._node.cardinality(), dtype=int64)

    def __tf_tracing_type__(self, context):
        """A traced function keys a dataset argument by its element spec (`arguments.py`)."""
        return arguments.argument_spec(self)

    def __len__(self):
        if not _context.executing_eagerly():
            raise TypeError("`eager.data.Dataset` only supports `len` in eager mode. Use "
                            "`eager.data.Dataset.cardinality()` instead.")
        n = self._node.cardinality()
        if n == INFINITE:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("The dataset length is unknown.")
        return n

    def __bool__(self):
        return True

    def __repr__(self):
        return f"<{type(self._node).__name__}Dataset element_spec={self.element_spec}>"


def _relaxed_reduce_function(fn, reduce_func, state_spec, element_spec):
    """Retrace once with a relaxed state spec when the new state's shape differs (as tf.data does)."""
    new = fn.output_spec
    if not nest.same_structure(state_spec, new) or any(
            a.dtype is not b.dtype for a, b in zip(nest.flatten(state_spec), nest.flatten(new))):
        raise TypeError(f"reduce: the new state {structure.describe(new)} does not match the initial state "
                        f"{structure.describe(state_spec)} (structure and dtypes must stay the same)")
    if all(a == b for a, b in zip(nest.flatten(state_spec), nest.flatten(new))):
        return fn
    relaxed = structure.relax(state_spec, new)
    return functions.StructuredFunction(reduce_func, (relaxed, element_spec), "reduce")


class Iterator:
    """An eager pass over a dataset: `next(it)` / `it.get_next()`."""

    def __init__(self, dataset: Dataset):
        self._spec = dataset.element_spec
        self._it = iter(dataset._node.iterate())

    @property
    def element_spec(self):
        return self._spec

    def __iter__(self):
        return self

    def __next__(self):
        if not _context.executing_eagerly():
            raise RuntimeError(
                "an eager.data iterator made outside a graph cannot be advanced while a graph is being built "
                "(@function): its next element would be frozen into the graph as a constant. Make the iterator "
                "inside the function (iter(ds) there is staged), or pass the elements as arguments")
        return next(self._it)

    def get_next(self):
        try:
            return self.__next__()
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None
