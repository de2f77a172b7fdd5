"""Fused optimizer updates that read and write a variable and its slots atomically.

Each op is one step of one variable under Keras 3's update rule.  Its kernel
holds the locks of every variable it touches (`variables.locked`) from the
first read to the last write, so optimizer steps running in several threads
never lose an update of the variable or of its slots.  The ops declare the
variables they write (`extra["writes"]`, read by
`graph_runtime.op_traits.written_vars`), so control-flow bodies and traced
calls know what they assign.

Inputs are the learning rate, the hyperparameters (float64 scalars: Keras
keeps them as Python floats, so `1 - beta_1` is computed in double precision
and only then converted to the variable's dtype, exactly as Keras does), the
step number `t` (`iterations + 1`, int64) and the gradient.  Attrs are the
variable and its slots; `decay=True` applies Keras's decoupled weight decay
`var <- var - var * wd * lr` first, inside the same lock.  With the optional
attr `iterations` (a variable) the kernel reads the step from that counter and
increments it inside the lock, ignoring the `t` input: a one-variable step is
then atomic together with its step count (see `eager.optimizers`).

The arithmetic follows Keras's expressions operation by operation in the
variable's dtype; tests compare it bit for bit with a NumPy transcription.

Imports `eager` modules only.
"""
from __future__ import annotations

import numpy as np

from .dtypes import as_dtype
from .errors import InvalidArgumentError
from .registry import op
from .variables import _infer_read, _read_kernel, locked


def _check_like(opname, var, old, **values):
    for name, x in values.items():
        if x.dtype != old.dtype:
            raise InvalidArgumentError(f"{opname}: {name} has dtype {as_dtype(x.dtype).name}, but variable "
                                       f"{var.name} has dtype {var._dtype.name}", op_name=opname)
        if np.ndim(x) and np.shape(x) != np.shape(old):
            raise InvalidArgumentError(f"{opname}: {name} of shape {list(np.shape(x))} does not match variable "
                                       f"{var.name} of shape {list(np.shape(old))}", op_name=opname)


def fused_step(opname, var, slots, grad, t, iterations, compute, lr=None, wd=None, decay=False):
    """Run `compute(dt, old, slot_values, grad, step) -> (new, new_slot_values)` atomically (module docstring)."""
    touched = (var, *slots) + ((iterations,) if iterations is not None else ())

    def update():
        old = _read_kernel(var)
        current = [_read_kernel(s) for s in slots]
        _check_like(opname, var, old, grad=grad, **{f"slot {s.name}": c for s, c in zip(slots, current)})
        count = _read_kernel(iterations) if iterations is not None else None
        step = int(count) + 1 if count is not None else int(t)
        dt = old.dtype.type
        if decay:
            lr_ = dt(lr)
            old = np.subtract(old, np.multiply(np.multiply(old, dt(wd)), lr_))
        new, new_slots = compute(dt, old, current, grad, step)
        for s, value in zip(slots, new_slots):
            s._value = value
        var._value = new
        if count is not None:
            iterations._value = np.add(count, np.ones_like(count))
        return new
    return locked(touched, update)


def _momentum_kernel(lr, momentum, wd, t, grad, var, accum, use_nesterov=False, decay=False, iterations=None):
    """Keras SGD with momentum: m <- m*mu - g*lr; var <- var + m (Nesterov: + m*mu - g*lr)."""
    def compute(dt, old, slots, g, step):
        lr_, mu = dt(lr), dt(momentum)
        scaled = np.multiply(g, lr_)
        new_m = np.subtract(np.multiply(slots[0], mu), scaled)
        delta = np.subtract(np.multiply(new_m, mu), scaled) if use_nesterov else new_m
        return np.add(old, delta), [new_m]
    return fused_step("ResourceApplyKerasMomentum", var, (accum,), grad, t, iterations, compute, lr, wd, decay)


def _adam_kernel(lr, beta_1, beta_2, epsilon, wd, t, grad, var, m, v, vhat=None, decay=False, iterations=None):
    """Keras Adam: alpha = lr*sqrt(1-b2^t)/(1-b1^t); m += (g-m)(1-b1); v += (g^2-v)(1-b2);
    var -= m*alpha / (sqrt(v) + eps), with v <- max(vhat, v) first under amsgrad (attr `vhat`)."""
    def compute(dt, old, slots, g, step):
        lr_, s = dt(lr), dt(step)
        one = dt(1)
        alpha = np.divide(np.multiply(lr_, np.sqrt(np.subtract(one, np.power(dt(beta_2), s)))),
                          np.subtract(one, np.power(dt(beta_1), s)))
        new_m = np.add(slots[0], np.multiply(np.subtract(g, slots[0]), dt(1 - beta_1)))
        new_v = np.add(slots[1], np.multiply(np.subtract(np.square(g), slots[1]), dt(1 - beta_2)))
        out = [new_m, new_v]
        use_v = new_v
        if vhat is not None:
            use_v = np.maximum(slots[2], new_v)
            out.append(use_v)
        new = np.subtract(old, np.divide(np.multiply(new_m, alpha), np.add(np.sqrt(use_v), dt(epsilon))))
        return new, out
    slots = (m, v) if vhat is None else (m, v, vhat)
    return fused_step("ResourceApplyAdam", var, slots, grad, t, iterations, compute, lr, wd, decay)


APPLY_KERAS_MOMENTUM = op(
    "ResourceApplyKerasMomentum", _momentum_kernel, _infer_read, effect="write",
    extra={"writes": ("var", "accum", "iterations")},
    doc="SGD with momentum in one atomic op (inputs lr, momentum, wd, t, grad; attrs var, accum, "
        "use_nesterov, decay, iterations).")
APPLY_ADAM = op(
    "ResourceApplyAdam", _adam_kernel, _infer_read, effect="write",
    extra={"writes": ("var", "m", "v", "vhat", "iterations")},
    doc="One Adam step in one atomic op (inputs lr, beta_1, beta_2, epsilon, wd, t, grad; attrs var, m, v, "
        "vhat, decay, iterations).")
