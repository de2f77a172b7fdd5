"""A dataset passed to a traced function: keyed by its `element_spec`, fed to the graph as a handle.

As in TF, a dataset argument's trace type is its `DatasetSpec`: datasets with
equal element specs share one trace, another spec traces again (the retrace
reason names both specs).  The graph must then not bake the first dataset in,
so the spec passes one int64 *handle* into the graph (the tracing protocol's
`flatten`/`to_tensors`/`from_tensors`, see tracing/trace_type.py), and the
function is traced with a `Dataset` over a `Fed` node holding that handle's
placeholder.  TF passes a variant tensor the same way.

Inside the graph a fed dataset is a `FedStream`: `DatasetFedOpen` opens an
iterator over the dataset passed at this call, `DatasetFedNext` gives its
next element.  Their kernels iterate that dataset eagerly (its map and filter
functions are its own traced ones), one element per `next`, as TF's
`IteratorGetNext` runs the tf.data runtime outside the graph.  A fed stream
is sequential: transformations over it inside the function stage as usual,
except those that need random access (shuffle).

Handles are kept in a weak table (a dataset that is gone cannot be reached
from a handle); the iterators a graph opens are kept by id, the oldest
dropped past `MAX_OPEN`.  A `next` names its position, so a loop left by
`break` can resume an `iter(ds)` at the element it pulled ahead.
Imports `eager` modules.
"""
from __future__ import annotations

import collections
import itertools
import threading
import weakref

import numpy as np

from .. import context as _context
from .. import nest
from ..convert import constant
from ..dispatch import execute
from ..dtypes import bool_, int64
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ..tensor_spec import TensorSpec
from . import structure
from .lowering import SCALAR, Stream
from .sources import UNKNOWN

MAX_OPEN = 256         # iterators a graph opened and still keeps (each call of a loop opens one)
HANDLE_SPEC = TensorSpec([], int64)

_datasets: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()
_handles = itertools.count(1)
_open: "collections.OrderedDict[int, _OpenIterator]" = collections.OrderedDict()
_iterator_ids = itertools.count(1)
_lock = threading.Lock()


def handle_of(dataset) -> Tensor:
    """The int64 handle a traced function receives for `dataset` (one per dataset object)."""
    with _lock:
        h = dataset.__dict__.get("_fed_handle")
        if h is None:
            h = dataset.__dict__["_fed_handle"] = next(_handles)
        _datasets[h] = dataset
    return Tensor(np.array(h, dtype=np.int64))


def _dataset(handle):
    ds = _datasets.get(int(handle))
    if ds is None:
        raise InvalidArgumentError(f"no live dataset has handle {int(handle)}: a dataset reaches a traced "
                                   f"function only as the argument of the current call")
    return ds


class Fed:
    """The node of a dataset argument inside the traced function: its spec, and the handle placeholder."""

    inputs = ()

    def __init__(self, spec, handle):
        self.spec, self.handle = spec, handle

    def iterate(self):
        raise RuntimeError("a dataset argument can only be iterated inside the traced function")

    def cardinality(self):
        # known only when the graph runs: `Dataset.cardinality()` asks an op, whose kernel binds it
        return _bound.counts.get(id(self), UNKNOWN)


class _OpenIterator:
    """One iterator a graph opened: the elements are pulled in order; the last one can be asked again."""

    def __init__(self, iterator):
        self.iterator, self.count, self.last = iterator, 0, None

    def at(self, position: int):
        if position == self.count - 1:
            return self.last
        if position != self.count:
            raise InvalidArgumentError(f"a dataset iterator was asked for element {position} after element "
                                       f"{self.count - 1}: its state was copied and advanced twice")
        self.last = next(self.iterator, None) if self.iterator is not None else None
        if self.last is None:
            self.iterator = None           # exhausted: let its threads (prefetch) go
        self.count += 1
        return self.last


def _open_kernel(handle):
    ds = _dataset(handle)
    with _context.init_scope():            # the pipeline's own functions run eagerly
        it = _OpenIterator(iter(ds._node.iterate()))
    with _lock:
        key = next(_iterator_ids)
        _open[key] = it
        while len(_open) > MAX_OPEN:
            _open.popitem(last=False)
    return np.array(key, dtype=np.int64)


def _next_kernel(iterator_id, position, dtypes, shapes):
    with _lock:
        it = _open.get(int(iterator_id))
    if it is None:
        raise InvalidArgumentError(f"dataset iterator {int(iterator_id)} was closed: more than {MAX_OPEN} "
                                   f"iterators over dataset arguments were opened since")
    with _context.init_scope():
        element = it.at(int(position))
    if element is None:
        zeros = [np.zeros([0 if d is None else d for d in (s or ())], dtype=dt.as_numpy_dtype)
                 for dt, s in zip(dtypes, shapes)]
        return (np.array(False),) + tuple(zeros)
    return (np.array(True),) + tuple(t._value for t in nest.flatten(element))


class _Bound(threading.local):
    counts: dict = {}          # id(Fed node) -> the cardinality of the dataset passed at this call


_bound = _Bound()


def _cardinality_kernel(*handles, node, feds):
    """The cardinality of `node` (a pipeline over dataset arguments) with each argument's `Fed` node standing
    for the dataset this call passed: every node's own rule, applied to the real inputs' cardinalities."""
    counts = {id(fed): _dataset(h)._node.cardinality() for fed, h in zip(feds, handles)}
    before, _bound.counts = _bound.counts, counts
    try:
        return np.array(node.cardinality(), dtype=np.int64)
    finally:
        _bound.counts = before


def _infer_next(specs, attrs):
    return [Spec((), bool_)] + [Spec(None if s is None else tuple(s), dt)
                               for dt, s in zip(attrs["dtypes"], attrs["shapes"])]


OPEN = op("DatasetFedOpen", _open_kernel, lambda specs, attrs: [Spec((), int64)], effect="write",
          doc="Opens an iterator over the dataset whose handle a traced function received; its id.")
NEXT = op("DatasetFedNext", _next_kernel, _infer_next, num_outputs=-1, effect="write",
          doc="Element `position` of an iterator DatasetFedOpen opened: (valid, *components); zeros when "
              "the dataset is exhausted.")
CARDINALITY = op("DatasetFedCardinality", _cardinality_kernel, lambda specs, attrs: [Spec((), int64)],
                 effect="read",
                 doc="The cardinality of a pipeline (attr `node`) over the datasets whose handles a traced "
                     "function received (its `Fed` nodes: attr `feds`, one handle input each).")


class FedStream(Stream):
    """State: the iterator id and the position of the next element."""

    def __init__(self, node):
        super().__init__(node.spec)
        self.node = node
        leaves = nest.flatten(node.spec)
        self.attrs = {"dtypes": tuple(s.dtype for s in leaves),
                      "shapes": tuple(None if s.shape.dims is None else tuple(s.shape.dims) for s in leaves)}

    def init(self, key):
        return [execute(OPEN, (self.node.handle,), {}, None), constant(0, int64)]

    def invariants(self):
        return [SCALAR, SCALAR]

    def next(self, state):
        iterator_id, position = state
        outs = list(execute(NEXT, (iterator_id, position), self.attrs, None))
        return outs[0], nest.pack_sequence_as(self.spec, outs[1:]), [iterator_id, position + 1]


def fed_leaves(node) -> list:
    """The `Fed` nodes (dataset arguments) a pipeline reads, each once, in the order first reached."""
    out, seen, stack = [], set(), [node]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        if isinstance(n, Fed):
            out.append(n)
        stack.extend(reversed(n.inputs))
    return out


def fed_cardinality(node, feds: list):
    """`cardinality()` inside the graph of a pipeline over dataset arguments `feds`: an op applying the
    pipeline's rules to the datasets of this call."""
    return execute(CARDINALITY, tuple(f.handle for f in feds), {"node": node, "feds": tuple(feds)}, None)


class ArgumentSpec(structure.DatasetSpec):
    """A dataset argument's trace type: its `DatasetSpec`, which passes the dataset's handle to the graph."""

    __slots__ = ("dataset_type",)

    def __init__(self, element_spec, dataset_type):
        super().__init__(element_spec)
        self.dataset_type = dataset_type        # what `from_tensors` makes (eager.data.Dataset)

    def is_subtype_of(self, other) -> bool:
        """May a trace made for `other` serve this? Same structure, each tensor spec a subtype (TF's rule)."""
        if not isinstance(other, structure.DatasetSpec):
            return False
        mine, theirs = self.element_spec, other.element_spec
        return nest.same_structure(mine, theirs) and all(
            a.dtype is b.dtype and a.is_subtype_of(b) for a, b in zip(nest.flatten(mine), nest.flatten(theirs)))

    def most_specific_common_supertype(self, others):
        spec = self.element_spec
        for o in others:
            spec = structure.relax(spec, o.element_spec) if isinstance(o, structure.DatasetSpec) else None
            if spec is None:
                return None
        return ArgumentSpec(spec, self.dataset_type)

    def placeholder_value(self, placeholder_context=None):
        return None

    def flatten(self) -> list:
        return [HANDLE_SPEC]

    def to_tensors(self, value) -> list:
        return [handle_of(value)]

    def from_tensors(self, tensors):
        return self.dataset_type(Fed(self.element_spec, next(tensors)))


def argument_spec(dataset):
    """`dataset`'s trace type, or None (keyed by identity) when its elements hold datasets (window)."""
    spec = dataset.element_spec
    if any(isinstance(s, structure.DatasetSpec) for s in nest.flatten(spec)):
        return None
    return ArgumentSpec(spec, type(dataset))
