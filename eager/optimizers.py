"""`optimizers.SGD` and `optimizers.Adam`: update variables from gradients.

Updates are written with variable ops, so an optimizer step works eagerly, in
a graph (`Session.run` of the returned updates) and inside a traced function.

State, Keras-style: `iterations` (int64) exists from construction; the learning
rate (or a callable) and the other hyperparameters (`beta_1`, `momentum`, ...)
are float64 variables, converted to each variable's dtype in the update, so a
float32 model gets exactly Keras's values (Keras holds a float32 learning rate,
which only a float64 model could tell apart).  Assigning
`opt.learning_rate = 0.0` assigns the variable, so a traced step that already
captured it uses the new value on its next call, without a retrace.  Slots
(momentum, Adam moments) are created on first use, once even when several
threads apply gradients; `opt.variables` lists the counter, the
hyperparameters and the slots.  `_checkpoint_children()` names them for
checkpoints (slots per variable, in the order the optimizer first saw the
variables), so saving `{"model": m, "optimizer": opt}` saves the whole state.

Atomicity: each variable's step (variable and slots) is one fused kernel of
`training_ops` (plain SGD: `ResourceApplyGradientDescent` eagerly,
Mul + AssignSub in graphs).  Eagerly, a whole `apply_gradients` call holds the
optimizer's step lock, so concurrent steps give the result of some serial
order.  In graphs and traced functions a one-variable step reads and
increments the step counter inside its fused kernel (also serial); a step over
several variables updates each one atomically but reads the counter before
and increments it after, so concurrent multi-variable steps may share a step
number (TensorFlow's behaviour): run them from one thread when that matters.

`apply_gradients` skips a None gradient with a warning naming the variables
(as Keras does) and raises when every gradient is None.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np

from . import context as _context
from .convert import constant, convert_to_tensor
from .dispatch import execute
from .errors import InvalidArgumentError
from .ops import math as _m
from .tensor import Tensor
from .training_ops import APPLY_ADAM, APPLY_KERAS_MOMENTUM
from .variables import APPLY_GRADIENT_DESCENT, Variable


class Hyperparameter:
    """A float64 variable attribute: reading gives the variable; assigning a number assigns it."""

    def __set_name__(self, owner, name):
        self._attr = name

    def __get__(self, obj, owner=None):
        return self if obj is None else obj._hyper[self._attr]

    def __set__(self, obj, value):
        var = obj._hyper.get(self._attr)
        with _context.init_scope():
            if var is None:
                obj._hyper[self._attr] = Variable(constant(float(value), "float64"), trainable=False,
                                                  name=f"{obj._name}/{self._attr}")
            else:
                var.assign(constant(float(value), "float64"))


class Optimizer:
    """Base class: the state and the step protocol (module docstring)."""

    _slot_kinds: tuple = ()
    _fused_counter = False          # the fused kernel can carry the step counter (module docstring)

    def __init__(self, learning_rate, name):
        self._name = name
        self._hyper: dict = {}
        self._slots: dict = {}      # (id(var), kind) -> (var, slot)
        self._tracked: list = []    # variables in the order first seen (checkpoint slot indices)
        self._create_lock = threading.Lock()    # slots are created once, by one thread
        self._step_lock = threading.RLock()     # eager: one apply_gradients at a time
        with _context.init_scope():
            self.iterations = Variable(constant(0, "int64"), trainable=False, name=f"{name}/iteration")
        self._learning_rate = None
        self.learning_rate = learning_rate

    # -- hyperparameters ------------------------------------------------------
    @property
    def learning_rate(self):
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        current = self._learning_rate
        if getattr(value, "_is_variable", False) or callable(value) and not isinstance(value, Tensor):
            self._learning_rate = value
            return
        if isinstance(value, Tensor):
            value = value.numpy()
        with _context.init_scope():
            if getattr(current, "_is_variable", False) and current.dtype.is_floating:
                current.assign(constant(float(value), current.dtype))
            else:
                self._learning_rate = Variable(constant(float(value), "float64"), trainable=False,
                                               name=f"{self._name}/learning_rate")

    def _current_lr(self):
        lr = self._learning_rate
        if callable(lr) and not getattr(lr, "_is_variable", False):
            lr = lr()
        if getattr(lr, "_is_variable", False):
            return lr.value()
        return lr if isinstance(lr, Tensor) else constant(float(lr), "float64")

    def _read(self, name):
        return self._hyper[name].value()

    # -- state ---------------------------------------------------------------
    def build(self, var_list):
        """Create the slots of `var_list` now (Keras's `build`), e.g. before restoring a checkpoint."""
        for v in var_list:
            self._track(v)

    def _track(self, var):
        if any(t is var for t in self._tracked):
            return
        with self._create_lock:
            if not any(t is var for t in self._tracked):
                for kind in self._slot_kinds:
                    self._slot(var, kind)
                self._tracked.append(var)

    def _slot(self, var, kind):
        key = (id(var), kind)
        s = self._slots.get(key)
        if s is None:
            with _context.init_scope():
                init = np.zeros(var.shape.as_list(), var.dtype.np_dtype) if not var.is_initialized() else \
                    np.zeros_like(var.numpy())
                slot = Variable(constant(init + self._slot_initial(kind)), trainable=False,
                                name=f"{self._name}/{kind}")
            s = self._slots[key] = (var, slot)
        return s[1]

    def _slot_initial(self, kind):
        return 0

    @property
    def variables(self) -> list:
        """The counter, the learning-rate and hyperparameter variables, then every slot."""
        out = [self.iterations]
        if getattr(self._learning_rate, "_is_variable", False):
            out.append(self._learning_rate)
        out += [self._hyper[k] for k in sorted(self._hyper)]
        return out + [self._slots[(id(v), kind)][1] for v in self._tracked for kind in self._slot_kinds]

    def _checkpoint_children(self) -> dict:
        """{name: variable or list of slots} for object-path checkpoints (slot lists indexed like `_tracked`)."""
        out = {"iterations": self.iterations}
        if getattr(self._learning_rate, "_is_variable", False):
            out["learning_rate"] = self._learning_rate
        out.update(self._hyper)
        for kind in self._slot_kinds:
            out[f"slots_{kind}"] = [self._slots[(id(v), kind)][1] for v in self._tracked]
        return out

    # -- steps ---------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Apply one update per (gradient, variable) pair; returns the update ops (graphs) or values."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("apply_gradients: no (gradient, variable) pairs were given")
        for g, v in pairs:
            if not getattr(v, "_is_variable", False):
                raise InvalidArgumentError(f"apply_gradients expects (gradient, Variable) pairs, got "
                                           f"{type(v).__name__}")
        missing = [v.name for g, v in pairs if g is None]
        if len(missing) == len(pairs):
            raise ValueError(f"apply_gradients: no gradients provided for any variable: {missing}")
        for _, v in pairs:
            self._track(v)
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss: they are "
                          f"not updated. Check that the loss depends on them (watched by the tape, not cut by "
                          f"stop_gradient or an integer cast).", UserWarning, stacklevel=2)
        pairs = [(g, v) for g, v in pairs if g is not None]
        if _context.executing_eagerly():
            with self._step_lock:
                return self._step(pairs, eager=True)
        return self._step(pairs, eager=False)

    def _step(self, pairs, eager):
        fused_counter = self._fused_counter and not eager and len(pairs) == 1
        if eager:
            t = constant(int(self.iterations.numpy()) + 1, "int64")
        else:
            t = _m.add(self.iterations.value(), constant(1, "int64"))
        lr = self._current_lr()
        updates = [self._apply(g, v, lr, t, self.iterations if fused_counter else None) for g, v in pairs]
        if not fused_counter:
            updates.append(self.iterations.assign_add(constant(1, "int64")))
        return updates

    def _fused(self, opdef, inputs, attrs, counter):
        if counter is not None:
            attrs["iterations"] = counter
        out = execute(opdef, inputs, attrs)
        return attrs["var"] if _context.executing_eagerly() else out

    def minimize(self, loss, var_list, tape):
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))


def _no_decay():
    return constant(0.0, "float64")


class SGD(Optimizer):
    """Gradient descent, optionally with momentum (Keras's formulation)."""

    momentum = Hyperparameter()

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        if not isinstance(momentum, (int, float)) or momentum < 0:
            raise ValueError(f"SGD: momentum must be a number >= 0, got {momentum!r}")
        super().__init__(learning_rate, name)
        self._slot_kinds = ("momentum",) if momentum else ()
        self._fused_counter = bool(momentum)
        self.momentum = momentum
        self.nesterov = bool(nesterov)

    def _apply(self, g, v, lr, t, counter):
        g = _grad(g, v)
        if not self._slot_kinds:
            lr = _m.cast(lr, v.dtype)
            if type(g) is Tensor and g._value.dtype == v._dtype.np_dtype and v._dtype.is_floating and \
                    _context.executing_eagerly():
                # eager fast path: one fused op, same arithmetic as Mul + AssignSubVariableOp below
                execute(APPLY_GRADIENT_DESCENT, (lr, g), {"var": v})
                return v
            return v.assign_sub(_m.multiply(g, lr))
        return self._fused(APPLY_KERAS_MOMENTUM, (lr, self._read("momentum"), _no_decay(), t, g),
                           {"var": v, "accum": self._slot(v, "momentum"), "use_nesterov": self.nesterov}, counter)


class Adam(Optimizer):
    """Adam (Kingma & Ba) with Keras 3's update rule and default epsilon 1e-7; `amsgrad` keeps max(v)."""

    beta_1 = Hyperparameter()
    beta_2 = Hyperparameter()
    epsilon = Hyperparameter()
    _fused_counter = True

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, name="Adam"):
        super().__init__(learning_rate, name)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.amsgrad = bool(amsgrad)
        self._slot_kinds = ("m", "v", "vhat") if amsgrad else ("m", "v")

    def _apply(self, g, v, lr, t, counter):
        attrs = {"var": v, "m": self._slot(v, "m"), "v": self._slot(v, "v")}
        if self.amsgrad:
            attrs["vhat"] = self._slot(v, "vhat")
        inputs = (lr, self._read("beta_1"), self._read("beta_2"), self._read("epsilon"), _no_decay(), t, _grad(g, v))
        return self._fused(APPLY_ADAM, inputs, attrs, counter)


def _grad(g, v):
    return g if isinstance(g, Tensor) else convert_to_tensor(g, v.dtype)
