"""`Layer`: Keras's layer base class, built on `eager.Module`.

A layer is a Module (so `eager.train.Checkpoint`, `tracing.save` and `Module.variables` walk
it) with Keras's behaviour on top:

- `build(input_shape)` runs lazily, at the first call, from the input's shape (`None` for the
  batch); weights are made with `add_weight`, eagerly even while a function is being traced,
  and get Keras's names: `.name` `kernel`, `.path` `dense/kernel` (backend.py);
- weights are ordered as Keras orders them: the layer's own trainable weights, its own
  non-trainable ones, then those of its sub-layers in the order they were assigned;
  `get_weights`/`set_weights` move them as NumPy arrays in that order;
- `training` reaches the layers that take it: passed explicitly, or inherited from the
  enclosing call (`model(x, training=True)`, `fit`); left out everywhere it is None, which
  Dropout and BatchNormalization treat as inference;
- calling a layer on `KerasTensor`s (the functional API) records the call instead
  (keras_tensor.py).

Imports numpy, the eager core and its sibling keras modules.
"""
from __future__ import annotations

import contextlib
import inspect
import weakref

import numpy as np

from ... import context as _context
from ... import nest
from ...compiler_hook import function_compiler
from ...convert import constant
from ...module import Module, _camel_to_snake
from ...tensor import Tensor
from .. import backend, initializers, regularizers
from ..keras_tensor import KerasTensor, contains_keras_tensor, symbolic_call


def _to_tensor(x):
    """NumPy arrays and Python numbers become tensors; floating ones float32 (Keras's floatx)."""
    if isinstance(x, (np.ndarray, list, float, int, np.generic)) and not isinstance(x, bool):
        a = np.asarray(x)
        if a.dtype.kind == "f" and a.dtype != np.float32:
            a = a.astype(np.float32)
        return constant(a)
    return x


_CONVERTED = weakref.WeakKeyDictionary()


def _converted_call(layer):
    """`layer.call` as a `@function` made through the compiler hook: called while a graph is being
    built, it runs inline, converted by AutoGraph (eager cannot import autograph itself)."""
    fn = _CONVERTED.get(layer)
    if fn is None:
        fn = _CONVERTED[layer] = function_compiler()(layer.call)
    return fn


def _to_inputs(x):
    """A layer's inputs as tensors: nested Python numbers are one array; structures of arrays stay structures."""
    if isinstance(x, (list, tuple)) and x and all(isinstance(e, (int, float)) and not isinstance(e, bool)
                                                  for e in nest.flatten(x)):
        return _to_tensor(np.asarray(x))
    return nest.map_structure(_to_tensor, x)


def _shape_of(x):
    if isinstance(x, (Tensor, KerasTensor)) or hasattr(x, "shape"):
        s = x.shape
        return tuple(s.as_list()) if hasattr(s, "as_list") else tuple(s)
    return None


class Layer(Module):
    """Base class of every Keras layer (and of `Model`)."""

    _pushes_path = True          # Sequential and functional models do not add their name to weight paths

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None, input_dim=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {sorted(kwargs)}")
        self._layers = []
        super().__init__(name or backend.unique_name(_camel_to_snake(type(self).__name__)))
        self._trainable = bool(trainable)
        self.built = False
        self._own_trainable = []
        self._own_non_trainable = []
        self._dtype_name = dtype or "float32"
        if input_dim is not None:
            input_shape = (input_dim,)
        self._input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._build_input_shape = None
        self._output_shape = None
        self._regularized = []          # (weight, regularizer) pairs
        self._call_losses = []          # add_loss values of the latest call
        params = inspect.signature(self.call).parameters
        self._call_takes_training = "training" in params
        # a `call` written by the user (not one of ours) may hold Python control flow on tensors:
        # in a graph it runs converted by AutoGraph, as Keras converts it
        self._user_call = not type(self).call.__module__.startswith(__name__.rsplit(".", 2)[0])

    # ------------------------------------------------------------------ tracking
    def __setattr__(self, name, value):
        layers = self.__dict__.get("_layers")
        if layers is not None and not name.startswith("_"):
            for v in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(v, Layer) and v is not self and all(v is not l for l in layers):
                    layers.append(v)
        object.__setattr__(self, name, value)

    @property
    def dtype(self) -> str:
        return self._dtype_name

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        self._trainable = bool(value)
        for layer in self._layers:
            layer.trainable = value

    @property
    def path(self) -> str:
        return self.name

    # ------------------------------------------------------------------ weights
    def add_weight(self, shape=(), initializer="glorot_uniform", dtype=None, trainable=True, name=None,
                   regularizer=None):
        """Create a weight now (eagerly, even inside a trace) with Keras's name and path."""
        name = name or "variable"
        shape = tuple(int(d) for d in shape)
        if any(d is None for d in shape):
            raise ValueError(f"layer {self.name!r}: weight {name!r} needs a fully known shape, got {shape}")
        dtype = dtype or self._dtype_name
        value = np.asarray(initializers.get(initializer)(shape, dtype), dtype=dtype)
        prefix = backend.current_path() or self.name
        var = backend.KerasVariable(value, name=name, path=f"{prefix}/{name}", trainable=trainable, dtype=dtype)
        (self._own_trainable if trainable else self._own_non_trainable).append(var)
        regularizer = regularizers.get(regularizer)
        if regularizer is not None:
            self._regularized.append((var, regularizer))
        return var

    # ------------------------------------------------------------------ losses
    def add_loss(self, loss) -> None:
        """Add a scalar to this call's losses (`layer.losses`; `fit` adds them to the loss)."""
        self._call_losses.append(loss)

    @property
    def losses(self) -> list:
        """The add_loss values of the latest call and the weights' regularization penalties (now)."""
        out = list(self._call_losses) + [reg(w.value()) for w, reg in self._regularized]
        for layer in self._layers:
            out.extend(layer.losses)
        return out

    def _clear_losses(self) -> None:
        self._call_losses = []
        for layer in self._layers:
            layer._clear_losses()

    def _collect(self, own, sub):
        out, seen = [], set()
        for w in own + [w for layer in self._layers for w in sub(layer)]:
            if id(w) not in seen:
                seen.add(id(w))
                out.append(w)
        return out

    @property
    def weights(self) -> list:
        return self._collect(self._own_trainable + self._own_non_trainable, lambda l: l.weights)

    @property
    def trainable_weights(self) -> list:
        if not self._trainable:
            return []
        return self._collect(self._own_trainable, lambda l: l.trainable_weights)

    @property
    def non_trainable_weights(self) -> list:
        if not self._trainable:
            return self.weights
        return self._collect(self._own_non_trainable, lambda l: l.non_trainable_weights)

    @property
    def variables(self) -> tuple:
        return tuple(self.weights)

    @property
    def trainable_variables(self) -> tuple:
        return tuple(self.trainable_weights)

    @property
    def non_trainable_variables(self) -> tuple:
        return tuple(self.non_trainable_weights)

    def get_weights(self) -> list:
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights) -> None:
        mine = self.weights
        weights = list(weights)
        if len(weights) != len(mine):
            raise ValueError(f"layer {self.name!r}: set_weights got {len(weights)} arrays but the layer has "
                             f"{len(mine)} weights ({[w.path for w in mine]})")
        for w, value in zip(mine, weights):
            value = np.asarray(value)
            if tuple(value.shape) != tuple(w.shape.as_list()):
                raise ValueError(f"layer {self.name!r}: weight {w.path} has shape {tuple(w.shape.as_list())}, "
                                 f"set_weights got {value.shape}")
            w.assign(value.astype(w.dtype.as_numpy_dtype, copy=False))

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"count_params: layer {self.name!r} is not built yet; call it on data (or build it) "
                             f"first")
        return int(sum(int(np.prod(w.shape.as_list())) for w in self.weights))

    # ------------------------------------------------------------------ building and calling
    def build(self, input_shape):
        """Create the weights; the default has none."""

    def call(self, inputs, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define call()")

    def _maybe_build(self, shapes):
        if self.built:
            return
        self._build_input_shape = shapes
        with _context.init_scope():
            self.build(shapes)
        self.built = True

    def __call__(self, *args, **kwargs):
        if not args:
            raise TypeError(f"layer {self.name!r} was called without inputs")
        if contains_keras_tensor(args, kwargs):
            self._build_on(args[0])
            return symbolic_call(self, args, kwargs)
        args = (_to_inputs(args[0]),) + args[1:]
        training = kwargs.pop("training", None)
        if training is None:
            training = backend.call_training()
        if self._call_takes_training:
            kwargs["training"] = training
        if backend.call_depth() == 0:
            self._clear_losses()               # an outermost call starts a fresh set of add_loss values
        path = backend.path_scope(self.name) if self._pushes_path else contextlib.nullcontext()
        with backend.call_scope(), path, _context.name_scope(self.name):
            self._build_on(args[0], push=False)
            with backend.training_scope(training):
                call = self.call if self._user_call is False or _context.executing_eagerly() \
                    else _converted_call(self)
                out = call(*args, **kwargs)
        self._output_shape = nest.map_structure(lambda t: (None,) + tuple(_shape_of(t)[1:])
                                                if _shape_of(t) else None, out)
        return out

    def _build_on(self, inputs, push=True):
        if self.built:
            return
        shapes = nest.map_structure(_shape_of, inputs)
        if push and self._pushes_path:
            with backend.path_scope(self.name):
                self._maybe_build(shapes)
        else:
            self._maybe_build(shapes)

    @property
    def output_shape(self):
        if self._output_shape is None:
            raise AttributeError(f"layer {self.name!r} has not been called yet, so it has no output shape")
        return self._output_shape

    def get_config(self) -> dict:
        return {"name": self.name, "trainable": self.trainable, "dtype": self._dtype_name}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"
