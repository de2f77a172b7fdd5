"""What `fit`, `evaluate` and `predict` accept as data, turned into batches of eager tensors.

- NumPy arrays, tensors, and lists/tuples/dicts of them (`x`, `y`, `sample_weight`): sliced
  into batches of `batch_size` (32 by default), reshuffled every epoch when `shuffle`; floating
  arrays become float32 (Keras's floatx), int64 int32, others keep their dtype;
- a dataset (`eager.data.Dataset`, or any re-iterable object whose iteration yields `(x, y)`,
  `(x, y, sample_weight)` or `x` batches): iterated once per epoch as it is; `y` and
  `batch_size` must then be left out, as in Keras.

Every batch is `(x, y, sample_weight)` with None for what is missing.
"""
from __future__ import annotations

import math

import numpy as np

from ... import nest
from ...convert import constant
from ...tensor import Tensor
from .. import backend


def is_array_like(x) -> bool:
    return isinstance(x, (np.ndarray, Tensor, list, tuple, dict)) or (
        hasattr(x, "numpy") and hasattr(x, "shape")) or np.isscalar(x)


def is_dataset(x) -> bool:
    return x is not None and not is_array_like(x) and hasattr(x, "__iter__")


def _as_array(a, what):
    a = np.asarray(a)         # a tensor's array read-only, without a copy; a variable's copied
    if a.ndim == 0:
        raise ValueError(f"{what} must have a batch dimension, got a scalar")
    if a.dtype.kind == "f" and a.dtype != np.float32:
        a = a.astype(np.float32)
    elif a.dtype == np.int64:
        a = a.astype(np.int32)
    return a


def _leaf_tensor(a):
    if a is None or isinstance(a, Tensor):
        return a
    if hasattr(a, "numpy") and not isinstance(a, np.ndarray):        # a Variable
        return constant(a.numpy())
    return constant(np.asarray(a))


class ArrayAdapter:
    def __init__(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        self.data = nest.map_structure(lambda a: None if a is None else _as_array(a, "fit/evaluate data"),
                                       (x, y, sample_weight))
        sizes = {int(a.shape[0]) for a in nest.flatten(self.data) if a is not None}
        if len(sizes) != 1:
            raise ValueError(f"the arrays passed as x, y and sample_weight must all have the same number of "
                             f"samples, got sizes {sorted(sizes)}")
        self.n = sizes.pop()
        if batch_size is not None and int(batch_size) <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
        self.batch_size = int(batch_size or 32)
        self.shuffle = shuffle
        self.num_batches = max(1, math.ceil(self.n / self.batch_size))

    def __iter__(self):
        order = backend.rng().permutation(self.n) if self.shuffle else None
        if all(a is None or isinstance(a, np.ndarray) for a in self.data):     # plain arrays: a fast loop
            for start in range(0, self.n, self.batch_size):
                idx = slice(start, start + self.batch_size) if order is None else order[start:start + self.batch_size]
                yield tuple(None if a is None else constant(a[idx]) for a in self.data)
            return
        for start in range(0, self.n, self.batch_size):
            if order is None:
                sl = slice(start, start + self.batch_size)
                yield nest.map_structure(lambda a: None if a is None else constant(a[sl]), self.data)
            else:
                idx = order[start:start + self.batch_size]
                yield nest.map_structure(lambda a: None if a is None else constant(a[idx]), self.data)

    def split(self, validation_split):
        """(train, validation) adapters: the last `validation_split` of the samples validate (before shuffling)."""
        if not 0 < validation_split < 1:
            raise ValueError(f"validation_split must be in (0, 1), got {validation_split}")
        at = int(math.ceil(self.n * (1.0 - validation_split)))
        if at == self.n:
            raise ValueError(f"validation_split={validation_split} leaves no validation sample out of {self.n}")
        train = nest.map_structure(lambda a: None if a is None else a[:at], self.data)
        val = nest.map_structure(lambda a: None if a is None else a[at:], self.data)
        return (ArrayAdapter(*train, batch_size=self.batch_size, shuffle=self.shuffle),
                ArrayAdapter(*val, batch_size=self.batch_size))


class DatasetAdapter:
    def __init__(self, dataset, steps=None):
        self.dataset, self.steps = dataset, steps
        self.num_batches = steps
        self._iterator = None
        if steps is None:
            if _cardinality(dataset) == -1:
                raise ValueError("the dataset is infinite (it repeats forever): pass steps_per_epoch (fit) or "
                                 "steps (evaluate, predict)")
            try:
                n = len(dataset)
                self.num_batches = int(n) if n >= 0 else None
            except TypeError:
                self.num_batches = None

    def __iter__(self):
        if self.steps is None:
            it = iter(self.dataset)
            if it is self.dataset:
                raise ValueError("an iterator (not a re-iterable dataset) was passed: pass steps_per_epoch / "
                                 "steps, or pass the dataset itself")
            for element in it:
                yield _unpack(element)
            return
        # with a step count, epochs continue one iterator (as Keras does with an infinite dataset);
        # a finite dataset that runs out starts over, an exhausted plain iterator ends the epoch
        if self._iterator is None:
            self._iterator = iter(self.dataset)
        for _ in range(self.steps):
            try:
                element = next(self._iterator)
            except StopIteration:
                self._iterator = iter(self.dataset)
                try:
                    element = next(self._iterator)
                except StopIteration:
                    return
            yield _unpack(element)


def _cardinality(dataset):
    """tf.data's cardinality (-1 infinite, -2 unknown), when the dataset has one."""
    fn = getattr(dataset, "cardinality", None)
    if fn is None:
        return None
    try:
        return int(fn())
    except (TypeError, ValueError):
        return None


def _unpack(element):
    if isinstance(element, tuple) and 1 <= len(element) <= 3 and not hasattr(element, "_fields"):
        parts = list(element) + [None] * (3 - len(element))
    else:
        parts = [element, None, None]
    return tuple(nest.map_structure(_leaf_tensor, p) for p in parts)


def class_sample_weights(y, class_weight, sample_weight=None):
    """Per-sample weights `class_weight[label]` (labels: class indices, or one-hot rows), times `sample_weight`."""
    if y is None:
        raise ValueError("class_weight needs targets (y)")
    labels = np.asarray(y.numpy() if hasattr(y, "numpy") else y)
    if labels.ndim >= 2 and labels.shape[-1] > 1:
        labels = labels.argmax(axis=-1)
    labels = labels.reshape(len(labels), -1)[:, 0].astype(np.int64)
    missing = sorted(set(np.unique(labels).tolist()) - set(class_weight))
    if missing:
        raise ValueError(f"class_weight has no weight for class(es) {missing} (it has {sorted(class_weight)})")
    table = np.zeros(max(max(class_weight), labels.max(initial=0)) + 1, np.float32)
    for k, w in class_weight.items():
        table[int(k)] = w
    weights = table[labels]
    if sample_weight is not None:
        weights = weights * np.asarray(sample_weight.numpy() if hasattr(sample_weight, "numpy") else sample_weight,
                                       np.float32).reshape(len(weights))
    return weights


class ClassWeighted:
    """Batches of another adapter with `class_weight` folded into their sample weights."""

    def __init__(self, inner, class_weight):
        if not isinstance(class_weight, dict) or not class_weight:
            raise ValueError(f"class_weight must be a non-empty dict class index -> weight, got {class_weight!r}")
        self.inner, self.class_weight = inner, class_weight
        self.num_batches = inner.num_batches

    def __iter__(self):
        for x, y, sw in self.inner:
            if nest.is_nested(y):
                raise ValueError("class_weight works with a single target only")
            yield x, y, constant(class_sample_weights(y, self.class_weight, sw))


def adapter(x, y=None, sample_weight=None, batch_size=None, shuffle=False, steps=None, what="fit"):
    if x is None:
        raise ValueError(f"{what}: no data was given (x is None)")
    if is_dataset(x):
        if y is not None:
            raise ValueError(f"{what}: y must be left out when x is a dataset (the dataset yields (x, y) pairs)")
        if sample_weight is not None:
            raise ValueError(f"{what}: sample_weight must be left out when x is a dataset")
        if batch_size is not None:
            raise ValueError(f"{what}: batch_size must be left out when x is a dataset (the dataset is batched)")
        return DatasetAdapter(x, steps)
    return ArrayAdapter(x, y, sample_weight, batch_size, shuffle)


def unpack_validation(data):
    """validation_data as (x, y[, sample_weight]) or a dataset."""
    if is_dataset(data):
        return data, None, None
    if isinstance(data, (tuple, list)) and len(data) in (2, 3):
        return (tuple(data) + (None,))[:3]
    raise ValueError("validation_data must be a tuple (x_val, y_val), (x_val, y_val, sample_weight) or a dataset, "
                     f"got {type(data).__name__}")
