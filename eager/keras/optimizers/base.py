"""`Optimizer`: the state and step protocol shared by every Keras optimizer.

State, as Keras 3 keeps it:

- `iterations`, an int64 variable, exists from construction.
- The learning rate is a variable, a `LearningRateSchedule` (called with
  `iterations` on every step, so it evaluates inside graphs) or a callable
  taking no argument.  Assigning a number assigns the variable, so a traced
  step that captured it uses the new value on its next call, without a
  retrace; assigning a number when a schedule drives the rate raises
  TypeError, as in Keras.
- The other hyperparameters (`beta_1`, `momentum`, `rho`, `weight_decay`,
  ...) are variables too (`Hyperparameter` attributes).  Hyperparameters are
  float64 and are converted to each variable's dtype inside the update, so a
  float32 model gets exactly Keras's numbers (Keras keeps them as Python floats
  and a float32 learning rate; only a float64 model could tell the learning
  rate apart).
- Slots are created per variable on first use (or by `build(var_list)`), once
  even when several threads apply gradients.  `variables` lists the counter,
  the hyperparameters and the slots; `_checkpoint_children()` names them for
  checkpoints, slots indexed in the order the optimizer first saw the
  variables.

A step (`apply_gradients`): None gradients are dropped with a warning naming
the variables (Keras's); the gradients are clipped (`clipnorm` per gradient,
else `global_clipnorm`, else `clipvalue`: Keras's order; giving more than one
at construction is a ValueError as in Keras); then each variable is updated by
one fused kernel of `eager.training_ops` that also applies the decoupled
weight decay `w -= w * wd * lr` first (when `weight_decay` is set and the
variable is not excluded).

Eagerly, a step's updates (and the counter's increment) are queued while the
step computes them and then run by one `dispatch.execute_writes` call, in
order: the same kernels, errors and results as one `execute` per update,
with NumPy's error state entered once a step instead of once per variable.
An update that is not queued (SGD's general path) first runs the queued ones,
and so does a step that fails part way, so the variables updated before a
failure are the same as without the queue.

Atomicity: eagerly, a whole `apply_gradients` holds the optimizer's step lock,
so concurrent steps give the result of some serial order.  In graphs and
traced functions a one-variable step reads and increments the counter inside
its fused kernel (also serial); a step over several variables updates each
atomically, reading the counter before and incrementing it after, so
concurrent multi-variable graph steps may share a step number (TensorFlow's
behaviour).

Imports `eager` modules only.
"""
from __future__ import annotations

import re
import threading
import warnings

import numpy as np

from ... import context as _context
from ...convert import constant, convert_to_tensor
from ...dispatch import execute, execute_writes
from ...errors import InvalidArgumentError
from ...ops import math as _m
from ...ops.clipping import keras_clip_by_global_norm, keras_clip_by_norm
from ...ops.linalg import clip_by_value
from ...tensor import Tensor
from ...variables import ASSIGN_ADD, Variable, read_kernel
from .schedules import LearningRateSchedule, deserialize, serialize


# eager constants of every step (eager tensors are immutable: one object serves every step)
_EAGER_ZERO_F64 = Tensor(np.array(0.0, np.float64))
_EAGER_ONE_I64 = Tensor(np.array(1, np.int64))

# the eager step in progress on this thread: (optimizer, its queued (opdef, inputs, attrs) updates)
_queue = threading.local()
_ctx_state = _context._state


def _is_var(x) -> bool:
    return getattr(x, "_is_variable", False)


class Hyperparameter:
    """A float64 variable attribute: reading gives the variable (None when unset); a number assigns it."""

    def __set_name__(self, owner, name):
        self._attr = name

    def __get__(self, obj, owner=None):
        return self if obj is None else obj._hyper.get(self._attr)

    def __set__(self, obj, value):
        if value is None:
            if self._attr in obj._hyper:
                raise TypeError(f"{type(obj).__name__}.{self._attr} is a variable: assign a number, not None")
            return
        if isinstance(value, Tensor) or _is_var(value):
            value = value.numpy()
        var = obj._hyper.get(self._attr)
        with _context.init_scope():
            if var is None:
                obj._hyper[self._attr] = Variable(constant(float(value), "float64"), trainable=False,
                                                  name=f"{obj.name}/{self._attr}")
            else:
                var.assign(constant(float(value), "float64"))


class Optimizer:
    """Base class of the Keras optimizers (module docstring)."""

    weight_decay = Hyperparameter()
    _slot_kinds: tuple = ()
    _fused_counter = True       # the fused kernel can carry the step counter (module docstring)

    def __init__(self, learning_rate, name=None, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unsupported argument(s) {sorted(kwargs)} (graphjit has no "
                            f"EMA, loss scaling or gradient accumulation in its optimizers)")
        given = [n for n, a in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                                ("global_clipnorm", global_clipnorm)) if a is not None]
        if len(given) > 1:
            raise ValueError(f"Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: "
                             f"clipnorm={clipnorm}, clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        self.name = name or type(self).__name__
        self._hyper: dict = {}
        self._slots: dict = {}      # (id(var), kind) -> (var, slot)
        self._tracked: list = []    # variables in the order first seen (checkpoint slot indices)
        self._tracked_ids: set = set()     # their ids (the list keeps them alive): a step's membership test
        self._exclude_ids: set = set()
        self._exclude_pattern = None
        self._create_lock = threading.Lock()    # slots are created once, by one thread
        self._step_lock = threading.RLock()     # eager: one apply_gradients at a time
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        with _context.init_scope():
            self.iterations = Variable(constant(0, "int64"), trainable=False, name=f"{self.name}/iteration")
        self._learning_rate = None
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay

    # -- hyperparameters ------------------------------------------------------
    @property
    def learning_rate(self):
        """The learning-rate variable (or the schedule or callable that replaces it)."""
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        current = self._learning_rate
        if _is_var(value) or isinstance(value, LearningRateSchedule) or \
                callable(value) and not isinstance(value, Tensor):
            self._learning_rate = value
            return
        if isinstance(current, LearningRateSchedule):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as its "
                            "`learning_rate` constructor argument, hence its learning rate is not settable. If you "
                            "need the learning rate to be settable, you should instantiate the optimizer with a "
                            "float `learning_rate` argument.")
        if isinstance(value, Tensor):
            value = value.numpy()
        with _context.init_scope():
            if _is_var(current) and current.dtype.is_floating:
                current.assign(constant(float(value), current.dtype))
            else:
                self._learning_rate = Variable(constant(float(value), "float64"), trainable=False,
                                               name=f"{self.name}/learning_rate")

    def _current_lr(self):
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            lr = lr(self.iterations.value())
        elif callable(lr) and not _is_var(lr):
            lr = lr()
        if _is_var(lr):
            return lr.value()
        return lr if isinstance(lr, Tensor) else constant(float(lr), "float64")

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Keep weight decay off `var_list` and off variables whose name contains one of `var_names`."""
        if self._tracked:
            raise ValueError("`exclude_from_weight_decay()` can only be configured before the optimizer is built.")
        self._exclude_ids = {id(v) for v in var_list or ()}
        self._exclude_pattern = re.compile("|".join(map(re.escape, var_names))) if var_names else None

    def _decays(self, var) -> bool:
        # `weight_decay` is in `_hyper` exactly when it is set (Hyperparameter never stores None)
        return "weight_decay" in self._hyper and id(var) not in self._exclude_ids and \
            (self._exclude_pattern is None or not self._exclude_pattern.search(var.name))

    # -- state ---------------------------------------------------------------
    def build(self, var_list):
        """Create the slots of `var_list` now (Keras's `build`), e.g. before restoring a checkpoint."""
        for v in var_list:
            self._track(v)

    def _track(self, var):
        if id(var) in self._tracked_ids:
            return
        with self._create_lock:
            if id(var) not in self._tracked_ids:
                self._create_state(var)
                for kind in self._slot_kinds:
                    self._slot(var, kind)
                self._tracked.append(var)
                self._tracked_ids.add(id(var))
        waiting = self.__dict__.get("_graphjit_deferred")
        if waiting:                                     # a restore waits for these slots (eager.train)
            waiting.notify(self)

    def _create_state(self, var):
        """Optimizer-wide state created with the first variable (Nadam's running product)."""

    def _slot(self, var, kind):
        key = (id(var), kind)
        s = self._slots.get(key)
        if s is None:
            with _context.init_scope():
                shape = var.shape.as_list() if not var.is_initialized() else np.shape(var.numpy())
                init = np.full(shape, self._slot_initial(kind), var.dtype.np_dtype)
                slot = Variable(constant(init), trainable=False, name=f"{self.name}/{kind}")
            s = self._slots[key] = (var, slot)
        return s[1]

    def _slot_initial(self, kind):
        return 0

    def _extra_variables(self) -> dict:
        return {}

    @property
    def variables(self) -> list:
        """The counter, the learning-rate and hyperparameter variables, then every slot."""
        kids = self._checkpoint_children()
        out = [kids.pop("iterations")]
        for k in sorted(kids):
            out += kids[k] if isinstance(kids[k], list) else [kids[k]]
        return out

    def _checkpoint_children(self) -> dict:
        """{name: variable or list of slots} for object-path checkpoints (slot lists indexed like `_tracked`)."""
        out = {"iterations": self.iterations}
        if _is_var(self._learning_rate):
            out["learning_rate"] = self._learning_rate
        out.update(self._hyper)
        out.update(self._extra_variables())
        for kind in self._slot_kinds:
            out[f"slots_{kind}"] = [self._slots[(id(v), kind)][1] for v in self._tracked]
        return out

    # -- steps ---------------------------------------------------------------
    def apply_gradients(self, grads_and_vars):
        """Apply one update per (gradient, variable) pair; returns the update ops (graphs) or variables."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("apply_gradients: no (gradient, variable) pairs were given")
        tracked = self._tracked_ids
        untracked = missing = False
        for g, v in pairs:      # a tracked id is a variable: the optimizer keeps it alive
            if id(v) not in tracked:
                if not getattr(v, "_is_variable", False):
                    raise InvalidArgumentError(f"apply_gradients expects (gradient, Variable) pairs, got "
                                               f"{type(v).__name__}")
                untracked = True
            if g is None:
                missing = True
        if missing:
            missing = [v.name for g, v in pairs if g is None]
            if len(missing) == len(pairs):
                raise ValueError(f"apply_gradients: no gradients provided for any variable: {missing}")
        if untracked:
            for _, v in pairs:
                if id(v) not in tracked:
                    self._track(v)
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss: they are "
                          f"not updated. Check that the loss depends on them (watched by the tape, not cut by "
                          f"stop_gradient or an integer cast).", UserWarning, stacklevel=2)
            pairs = [(g, v) for g, v in pairs if g is not None]
        if _ctx_state.stack[-1].is_eager:        # executing_eagerly(), inline
            with self._step_lock:
                return self._step(pairs, eager=True)
        return self._step(pairs, eager=False)

    def apply(self, grads, trainable_variables=None):
        """Keras 3's spelling: `apply_gradients(zip(grads, trainable_variables))` (default: the built list)."""
        if trainable_variables is None:
            if len(grads) != len(self._tracked):
                raise ValueError(f"apply: {len(grads)} gradients for the {len(self._tracked)} variables the "
                                 f"optimizer was built with; pass trainable_variables or build() first")
            trainable_variables = self._tracked
        return self.apply_gradients(zip(grads, trainable_variables))

    def minimize(self, loss, var_list, tape):
        """`apply_gradients(zip(tape.gradient(loss, var_list), var_list))`."""
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def _clip(self, grads):
        if self.clipnorm is not None and self.clipnorm > 0:
            return [keras_clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm is not None and self.global_clipnorm > 0:
            return keras_clip_by_global_norm(grads, self.global_clipnorm)
        if self.clipvalue is not None and self.clipvalue > 0:
            return [clip_by_value(g, -self.clipvalue, self.clipvalue) for g in grads]
        return grads

    def _step(self, pairs, eager):
        grads = self._clip([g if isinstance(g, Tensor) else convert_to_tensor(g, v.dtype) for g, v in pairs])
        fused_counter = self._fused_counter and not eager and len(pairs) == 1
        if eager:
            t = Tensor(np.array(int(read_kernel(self.iterations)) + 1, np.int64))    # numpy() would copy
        else:
            t = _m.add(self.iterations.value(), constant(1, "int64"))
        hyper = {k: var.value() for k, var in self._hyper.items()}
        hyper["lr"] = self._current_lr()
        if hyper.get("weight_decay") is None:
            hyper["weight_decay"] = _EAGER_ZERO_F64 if eager else constant(0.0, "float64")
        self._before_updates(t, hyper, [v for _, v in pairs])
        if not eager:
            updates = [self._apply(g, v, t, hyper, self.iterations if fused_counter else None)
                       for g, (_, v) in zip(grads, pairs)]
            if not fused_counter:
                updates.append(self.iterations.assign_add(constant(1, "int64")))
            return updates
        outer = getattr(_queue, "step", None)
        queued = []
        _queue.step = (self, queued)
        try:
            updates = [self._apply(g, v, t, hyper, None) for g, (_, v) in zip(grads, pairs)]
            queued.append(self._eager_count_call())
            updates.append(self.iterations)
        finally:
            _queue.step = outer
            self._run_queued(queued)
        return updates

    def _eager_count_call(self):
        """The (opdef, inputs, attrs) of the step counter's increment: what `assign_add(1)` runs eagerly
        (AssignAdd is never recorded: not differentiable)."""
        return ASSIGN_ADD, (_EAGER_ONE_I64,), {"var": self.iterations}

    def _write(self, opdef, inputs, attrs):
        """Execute one update op, or queue it when this thread runs this optimizer's eager step (docstring)."""
        step = getattr(_queue, "step", None)
        if step is not None and step[0] is self and _ctx_state.stack[-1].is_eager:
            step[1].append((opdef, inputs, attrs))
            return None
        return execute(opdef, inputs, attrs)

    def _flush_writes(self):
        """Run the updates queued so far (before an update that does not queue, to keep their order)."""
        step = getattr(_queue, "step", None)
        if step is not None and step[0] is self:
            self._run_queued(step[1])

    @staticmethod
    def _run_queued(queued):
        calls = queued[:]
        del queued[:]
        if calls:
            execute_writes(calls)

    def _before_updates(self, t, hyper, variables):
        """Hook run once per step before the variable updates."""

    def _fused(self, opdef, inputs, attrs, var, counter):
        attrs["var"] = var
        attrs["decay"] = self._decays(var)
        if counter is not None:
            attrs["iterations"] = counter
        out = self._write(opdef, inputs, attrs)
        return var if _context.executing_eagerly() else out

    # -- configuration --------------------------------------------------------
    def get_config(self) -> dict:
        lr = self._learning_rate
        if isinstance(lr, LearningRateSchedule):
            lr = serialize(lr)
        cfg = {"name": self.name, "learning_rate": float(lr.numpy()) if _is_var(lr) else lr,
               "clipnorm": self.clipnorm, "clipvalue": self.clipvalue, "global_clipnorm": self.global_clipnorm}
        cfg.update({k: float(v.numpy()) for k, v in self._hyper.items()})
        return cfg

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):      # a serialized schedule (known classes only)
            config["learning_rate"] = deserialize(config["learning_rate"])
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r} iterations={int(self.iterations.numpy())}>"
