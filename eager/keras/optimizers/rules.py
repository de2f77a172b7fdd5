"""The Keras 3 optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta, Nadam.

Each class declares its hyperparameters (`Hyperparameter` variables), its
slots, and how one variable's step maps onto its fused kernel of
`eager.training_ops` (the update rules themselves, Keras 3's expressions, are
in those kernels).  Defaults and argument checks are Keras 3's.

Imports `eager` modules only.
"""
from __future__ import annotations

from ... import context as _context
from ...dispatch import execute, execute_writes
from ...convert import constant
from ...ops import math as _m
from ...ops.casting import CAST
from ...tensor import Tensor
from ...training_ops import (APPLY_ADAM, APPLY_KERAS_ADADELTA, APPLY_KERAS_ADAGRAD, APPLY_KERAS_MOMENTUM,
                             APPLY_KERAS_NADAM, APPLY_KERAS_RMSPROP, APPLY_KERAS_SGD)
from ...variables import APPLY_GRADIENT_DESCENT, Variable
from .base import Hyperparameter, Optimizer, _is_var

_ctx_state = _context._state

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Nadam"]


def _lr_as(lr, dt):
    """`cast(lr, dt)`: for an eager float rate, the Cast op it dispatches without its argument checks."""
    if type(lr) is Tensor and lr._value.dtype.kind == "f" and dt._np.kind == "f":
        return lr if lr._value.dtype == dt._np else execute(CAST, (lr,), {"dtype": dt})
    return _m.cast(lr, dt)


class SGD(Optimizer):
    """Gradient descent with optional momentum and Nesterov momentum (Keras's formulation)."""

    momentum = Hyperparameter()

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD", **kwargs):
        if not isinstance(momentum, (int, float)) or momentum < 0 or momentum > 1:
            raise ValueError("`momentum` must be a float between [0, 1].")
        super().__init__(learning_rate, name=name, **kwargs)
        self._slot_kinds = ("momentum",) if momentum else ()
        self._fused_counter = bool(momentum)     # plain SGD does not read the step number
        self.momentum = momentum
        self.nesterov = bool(nesterov)

    def _step(self, pairs, eager):
        # a subclass may override a step's parts (`_apply`, `_clip`, ...): it takes the general step
        if eager and type(self) is SGD and not self._slot_kinds and "weight_decay" not in self._hyper:
            calls = self._plain_eager_updates(pairs)
            if calls is not None:
                execute_writes(calls)
                return [v for _, v in pairs] + [self.iterations]
        return super()._step(pairs, eager)

    def _plain_eager_updates(self, pairs):
        """Plain SGD's eager step as the calls the general step queues (one ResourceApplyGradientDescent per
        variable, then the counter's increment), built without its per-step bookkeeping (the counter's next
        value, the hyperparameter reads, the queue): plain SGD reads neither.  None where the general step must
        run: clipping, a schedule or callable rate, a gradient that is not an eager float tensor of its
        variable's dtype."""
        if self.clipnorm or self.global_clipnorm or self.clipvalue or not _is_var(self._learning_rate):
            return None
        for g, v in pairs:
            dt = v._dtype._np
            if type(g) is not Tensor or g._value.dtype != dt or dt.kind != "f":
                return None
        rate, rates, calls = self._learning_rate.value(), {}, []
        for g, v in pairs:
            dt = v._dtype
            lr = rates.get(dt)          # one cast per dtype and step, as the general step
            if lr is None:
                lr = rates[dt] = _lr_as(rate, dt)
            calls.append((APPLY_GRADIENT_DESCENT, (lr, g), {"var": v}))
        calls.append(self._eager_count_call())
        return calls

    def _apply(self, g, v, t, h, counter):
        if self._slot_kinds:
            return self._fused(APPLY_KERAS_MOMENTUM, (h["lr"], h["momentum"], h["weight_decay"], t, g),
                               {"accum": self._slot(v, "momentum"), "use_nesterov": self.nesterov}, v, counter)
        if "weight_decay" in self._hyper and self._decays(v):     # the first test: `_decays`'s, without a call
            return self._fused(APPLY_KERAS_SGD, (h["lr"], h["weight_decay"], t, g), {}, v, counter)
        dt = v._dtype
        lr = h.get(dt)         # one cast per dtype and step, not one per variable
        if lr is None:
            lr = h[dt] = _lr_as(h["lr"], dt)
        gv = g._value if type(g) is Tensor else None
        if gv is not None and gv.dtype == dt._np and dt._np.kind == "f" and _ctx_state.stack[-1].is_eager:
            # eager fast path: one fused op, same arithmetic as Mul + AssignSubVariableOp below
            self._write(APPLY_GRADIENT_DESCENT, (lr, g), {"var": v})
            return v
        self._flush_writes()
        return v.assign_sub(_m.multiply(g, lr))

    def get_config(self):
        return {**super().get_config(), "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam with Keras 3's rule (epsilon outside the square root, default 1e-7); `amsgrad` keeps max(v)."""

    beta_1 = Hyperparameter()
    beta_2 = Hyperparameter()
    epsilon = Hyperparameter()

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False, name="Adam",
                 **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self.amsgrad = bool(amsgrad)
        self._slot_kinds = ("m", "v", "vhat") if amsgrad else ("m", "v")

    def _apply(self, g, v, t, h, counter):
        attrs = {"m": self._slot(v, "m"), "v": self._slot(v, "v")}
        if self.amsgrad:
            attrs["vhat"] = self._slot(v, "vhat")
        inputs = (h["lr"], h["beta_1"], h["beta_2"], h["epsilon"], h["weight_decay"], t, g)
        return self._fused(APPLY_ADAM, inputs, attrs, v, counter)

    def get_config(self):
        return {**super().get_config(), "amsgrad": self.amsgrad}


class AdamW(Adam):
    """Adam with decoupled weight decay `w -= w * weight_decay * lr` before each step (default 0.004)."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, name="AdamW", **kwargs):
        if weight_decay is None:
            raise ValueError("Argument `weight_decay` must be a float. Received: weight_decay=None")
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name=name, weight_decay=weight_decay,
                         **kwargs)


class RMSprop(Optimizer):
    """RMSprop (epsilon inside the square root), optionally with momentum and `centered`."""

    rho = Hyperparameter()
    momentum = Hyperparameter()
    epsilon = Hyperparameter()

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False, name="RMSprop",
                 **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.rho, self.momentum, self.epsilon = rho, momentum, epsilon
        self.centered = bool(centered)
        self._slot_kinds = ("velocity",) + (("momentum",) if momentum > 0 else ()) + \
            (("average_gradient",) if centered else ())

    def _apply(self, g, v, t, h, counter):
        attrs = {"velocity": self._slot(v, "velocity")}
        if "momentum" in self._slot_kinds:
            attrs["mom"] = self._slot(v, "momentum")
        if self.centered:
            attrs["average"] = self._slot(v, "average_gradient")
        inputs = (h["lr"], h["rho"], h["momentum"], h["epsilon"], h["weight_decay"], t, g)
        return self._fused(APPLY_KERAS_RMSPROP, inputs, attrs, v, counter)

    def get_config(self):
        return {**super().get_config(), "centered": self.centered}


class Adagrad(Optimizer):
    """Adagrad: accumulators start at `initial_accumulator_value` (0.1); epsilon inside the square root."""

    epsilon = Hyperparameter()
    _slot_kinds = ("accumulator",)

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7, name="Adagrad", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = epsilon

    def _slot_initial(self, kind):
        return self.initial_accumulator_value

    def _apply(self, g, v, t, h, counter):
        return self._fused(APPLY_KERAS_ADAGRAD, (h["lr"], h["epsilon"], h["weight_decay"], t, g),
                           {"accum": self._slot(v, "accumulator")}, v, counter)

    def get_config(self):
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value}


class Adadelta(Optimizer):
    """Adadelta (Keras's default learning rate 0.001, rho 0.95)."""

    rho = Hyperparameter()
    epsilon = Hyperparameter()
    _slot_kinds = ("accumulated_grad", "accumulated_delta_var")

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, name="Adadelta", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.rho, self.epsilon = rho, epsilon

    def _apply(self, g, v, t, h, counter):
        attrs = {"accum_grad": self._slot(v, "accumulated_grad"),
                 "accum_delta": self._slot(v, "accumulated_delta_var")}
        return self._fused(APPLY_KERAS_ADADELTA, (h["lr"], h["rho"], h["epsilon"], h["weight_decay"], t, g),
                           attrs, v, counter)


class Nadam(Optimizer):
    """Nadam with Keras's momentum schedule (u_t = beta_1 * (1 - 0.5 * 0.96^t)) and running product."""

    beta_1 = Hyperparameter()
    beta_2 = Hyperparameter()
    epsilon = Hyperparameter()
    _slot_kinds = ("m", "v")

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Nadam", **kwargs):
        super().__init__(learning_rate, name=name, **kwargs)
        self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
        self._u_product = None

    def _create_state(self, var):
        if self._u_product is None:        # Keras: a variable of the first variable's dtype, starting at 1
            with _context.init_scope():
                self._u_product = Variable(constant(1.0, var.dtype), trainable=False, name=f"{self.name}/u_product")

    def _extra_variables(self):
        return {"u_product": self._u_product} if self._u_product is not None else {}

    def _apply(self, g, v, t, h, counter):
        first = h.pop("_first", False)
        inputs = (h["lr"], h["beta_1"], h["beta_2"], h["epsilon"], h["weight_decay"], t, g)
        return self._fused(APPLY_KERAS_NADAM, inputs, {"m": self._slot(v, "m"), "v": self._slot(v, "v"),
                                                       "u_product": self._u_product, "first": first}, v, counter)

    def _before_updates(self, t, hyper, variables):
        hyper["_first"] = True      # the step's first kernel advances the running product
