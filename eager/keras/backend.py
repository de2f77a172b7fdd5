"""Keras-level bookkeeping shared by layers, metrics and models.

- Layer names are unique per base name in a process (`dense`, `dense_1`, ...), as Keras names them.
- The *path stack*: a layer pushes its name while it runs, so a weight created during `build`
  gets Keras's `.path` (`dense/kernel`, or `m/dense/kernel` inside a subclassed model `m`).
- The *call context*: the `training` flag an outer call (`model(x, training=True)`, `fit`)
  passes down to the layers it calls without naming it, as Keras propagates it.
- `KerasVariable`: a `Variable` whose `.name` is the short Keras name (`kernel`) and whose
  `.path` is the layer path; its internal name stays the full path, so graphs and saved
  functions keep distinct names.
- The random generator that weight initializers draw from (`set_random_seed`).

Imports numpy and the eager core only.
"""
from __future__ import annotations

import collections
import contextlib
import threading

import numpy as np

from .. import context as _context
from ..ops import random as _random
from ..variables import Variable

_state = threading.local()
_names_lock = threading.Lock()
_name_counts: collections.Counter = collections.Counter()


def unique_name(base: str) -> str:
    """`base` the first time, then `base_1`, `base_2`, ... (Keras's automatic layer names)."""
    with _names_lock:
        n = _name_counts[base]
        _name_counts[base] += 1
    return base if n == 0 else f"{base}_{n}"


def _paths() -> list:
    st = getattr(_state, "paths", None)
    if st is None:
        st = _state.paths = []
    return st


@contextlib.contextmanager
def path_scope(name: str):
    st = _paths()
    st.append(name)
    try:
        yield
    finally:
        st.pop()


def current_path() -> str:
    return "/".join(_paths())


def call_depth() -> int:
    """How many layer calls enclose this point (0 outside any)."""
    return getattr(_state, "depth", 0)


@contextlib.contextmanager
def call_scope():
    _state.depth = call_depth() + 1
    try:
        yield
    finally:
        _state.depth -= 1


def call_training():
    """The `training` value of the innermost enclosing layer call that set one (None outside)."""
    return getattr(_state, "training", None)


@contextlib.contextmanager
def training_scope(training):
    saved = getattr(_state, "training", None)
    _state.training = training
    try:
        yield
    finally:
        _state.training = saved


class KerasVariable(Variable):
    """A layer or metric weight: `.name` is short (`kernel`), `.path` is `dense/kernel`."""

    def __init__(self, initial_value, name: str, path: str, trainable=True, dtype=None):
        with _context.init_scope(), _context.absolute_name_scope(""):
            super().__init__(initial_value, trainable=trainable, name=path, dtype=dtype)
        self._short_name = name
        self._path = path

    @property
    def name(self) -> str:
        return self._short_name

    @property
    def path(self) -> str:
        return self._path

    def __repr__(self):
        value = "" if not self.is_initialized() else f", numpy={np.asarray(self.stored_array())!r}"
        return f"<KerasVariable path={self._path!r}, shape={tuple(self.shape.as_list())}, dtype={self.dtype.name}{value}>"


_rng_lock = threading.Lock()
_rng = np.random.default_rng()


def set_random_seed(seed: int) -> None:
    """Seed the weight initializers and `eager.random` (Keras's `keras.utils.set_random_seed`)."""
    global _rng
    with _rng_lock:
        _rng = np.random.default_rng(seed)
    _random.set_seed(seed)
    np.random.seed(seed)


def rng(seed=None) -> np.random.Generator:
    """A generator for one initializer call: its own when `seed` is given, else the shared one."""
    if seed is not None:
        return np.random.default_rng(seed)
    return _rng
