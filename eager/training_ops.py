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
The last ufunc making each new value (the weight's, each slot's) writes into
that variable's stored array when nothing else holds it
(eager/variable_storage.py; `fused_step` checks them all before the kernel
takes references of its own), after the kernel's last read of the old value:
the same ufuncs, the same bits, and no fresh arrays for a big weight's step.

Imports `eager` modules only.
"""
from __future__ import annotations

import numpy as np

from .dtypes import as_dtype
from .errors import InvalidArgumentError
from .registry import op
from . import variable_storage as _storage
from .variables import _infer_read, locked
from .variable_storage import read_locked


def _check_like(opname, var, old, **values):
    for name, x in values.items():
        if x.dtype != old.dtype:
            raise InvalidArgumentError(f"{opname}: {name} has dtype {as_dtype(x.dtype).name}, but variable "
                                       f"{var.name} has dtype {var._dtype.name}", op_name=opname)
        if np.ndim(x) and np.shape(x) != np.shape(old):
            raise InvalidArgumentError(f"{opname}: {name} of shape {list(np.shape(x))} does not match variable "
                                       f"{var.name} of shape {list(np.shape(old))}", op_name=opname)


def fused_step(opname, var, slots, grad, t, iterations, compute, lr=None, wd=None, decay=False, also_locked=()):
    """Run `compute(dt, old, slot_values, grad, step, outs) -> (new, new_slot_values)` atomically (module
    docstring).  `outs`: for the variable and each slot, its stored array when the update may write into it
    (eager/variable_storage.py), else None; `compute` passes each as `out=` of the last ufunc making that
    value, after its last read of the old value."""
    touched = (var, *slots, *also_locked) + ((iterations,) if iterations is not None else ())

    def update():
        outs = [_storage.in_place_target(v) for v in (var, *slots)]      # before this kernel holds any of them
        old = read_locked(var)
        current = [read_locked(s) for s in slots]
        _check_like(opname, var, old, grad=grad, **{f"slot {s.name}": c for s, c in zip(slots, current)})
        count = read_locked(iterations) if iterations is not None else None
        step = int(count) + 1 if count is not None else int(t)
        dt = old.dtype.type
        if decay:
            lr_ = dt(lr)
            old = np.subtract(old, np.multiply(np.multiply(old, dt(wd)), lr_))
        new, new_slots = compute(dt, old, current, grad, step, outs)
        for s, value in zip(slots, new_slots):
            _storage.store_locked(s, value)
        _storage.store_locked(var, new)
        if count is not None:
            _storage.store_locked(iterations, np.add(count, np.ones_like(count)))
        return new
    return locked(touched, update)


def _momentum_kernel(lr, momentum, wd, t, grad, var, accum, use_nesterov=False, decay=False, iterations=None):
    """Keras SGD with momentum: m <- m*mu - g*lr; var <- var + m (Nesterov: + m*mu - g*lr)."""
    def compute(dt, old, slots, g, step, outs):
        lr_, mu = dt(lr), dt(momentum)
        scaled = np.multiply(g, lr_)
        new_m = np.subtract(np.multiply(slots[0], mu), scaled, out=outs[1])
        delta = np.subtract(np.multiply(new_m, mu), scaled) if use_nesterov else new_m
        return np.add(old, delta, out=outs[0]), [new_m]
    return fused_step("ResourceApplyKerasMomentum", var, (accum,), grad, t, iterations, compute, lr, wd, decay)


def _adam_kernel(lr, beta_1, beta_2, epsilon, wd, t, grad, var, m, v, vhat=None, decay=False, iterations=None):
    """Keras Adam: alpha = lr*sqrt(1-b2^t)/(1-b1^t); m += (g-m)(1-b1); v += (g^2-v)(1-b2);
    var -= m*alpha / (sqrt(v) + eps), with v <- max(vhat, v) first under amsgrad (attr `vhat`)."""
    def compute(dt, old, slots, g, step, outs):
        lr_, s = dt(lr), dt(step)
        one = dt(1)
        alpha = np.divide(np.multiply(lr_, np.sqrt(np.subtract(one, np.power(dt(beta_2), s)))),
                          np.subtract(one, np.power(dt(beta_1), s)))
        new_m = np.add(slots[0], np.multiply(np.subtract(g, slots[0]), dt(1 - beta_1)), out=outs[1])
        new_v = np.add(slots[1], np.multiply(np.subtract(np.square(g), slots[1]), dt(1 - beta_2)), out=outs[2])
        out = [new_m, new_v]
        use_v = new_v
        if vhat is not None:
            use_v = np.maximum(slots[2], new_v, out=outs[3])
            out.append(use_v)
        new = np.subtract(old, np.divide(np.multiply(new_m, alpha), np.add(np.sqrt(use_v), dt(epsilon))), out=outs[0])
        return new, out
    slots = (m, v) if vhat is None else (m, v, vhat)
    return fused_step("ResourceApplyAdam", var, slots, grad, t, iterations, compute, lr, wd, decay)


def _sgd_kernel(lr, wd, t, grad, var, decay=False, iterations=None):
    """Keras SGD without momentum: var <- var - g*lr (used when weight decay must share the kernel)."""
    def compute(dt, old, slots, g, step, outs):
        return np.subtract(old, np.multiply(g, dt(lr)), out=outs[0]), []
    return fused_step("ResourceApplyKerasSGD", var, (), grad, t, iterations, compute, lr, wd, decay)


def _rmsprop_kernel(lr, rho, momentum, epsilon, wd, t, grad, var, velocity, mom=None, average=None, decay=False,
                    iterations=None):
    """Keras RMSprop: v <- rho*v + (1-rho)*g^2; inc = lr*g / sqrt(v [- avg^2] + eps); var -= inc (or momentum)."""
    def compute(dt, old, slots, g, step, outs):
        r, one_minus = dt(rho), dt(1 - rho)
        new_v = np.add(np.multiply(r, slots[0]), np.multiply(one_minus, np.square(g)), out=outs[1])
        out, k = [new_v], 1
        if mom is not None:
            k += 1
        if average is not None:
            new_avg = np.add(np.multiply(r, slots[k]), np.multiply(one_minus, g), out=outs[1 + k])
            denominator = np.add(np.subtract(new_v, np.square(new_avg)), dt(epsilon))
        else:
            denominator = np.add(new_v, dt(epsilon))
        increment = np.divide(np.multiply(dt(lr), g), np.sqrt(denominator))
        if mom is not None:
            new_mom = np.add(np.multiply(dt(momentum), slots[1]), increment, out=outs[2])
            out.append(new_mom)
            increment = new_mom
        if average is not None:
            out.append(new_avg)
        return np.subtract(old, increment, out=outs[0]), out
    slots = (velocity,) + ((mom,) if mom is not None else ()) + ((average,) if average is not None else ())
    return fused_step("ResourceApplyKerasRMSprop", var, slots, grad, t, iterations, compute, lr, wd, decay)


def _adagrad_kernel(lr, epsilon, wd, t, grad, var, accum, decay=False, iterations=None):
    """Keras Adagrad: acc += g^2; var -= lr*g / sqrt(acc + eps)."""
    def compute(dt, old, slots, g, step, outs):
        acc = np.add(slots[0], np.square(g), out=outs[1])
        increment = np.divide(np.multiply(dt(lr), g), np.sqrt(np.add(acc, dt(epsilon))))
        return np.subtract(old, increment, out=outs[0]), [acc]
    return fused_step("ResourceApplyKerasAdagrad", var, (accum,), grad, t, iterations, compute, lr, wd, decay)


def _adadelta_kernel(lr, rho, epsilon, wd, t, grad, var, accum_grad, accum_delta, decay=False, iterations=None):
    """Keras Adadelta: Eg <- rho*Eg + (1-rho)g^2; d = -sqrt(Ed+eps)*g/sqrt(Eg+eps); Ed <- rho*Ed + (1-rho)d^2;
    var += lr*d."""
    def compute(dt, old, slots, g, step, outs):
        r, one_minus, eps = dt(rho), dt(1 - rho), dt(epsilon)
        acc_g = np.add(np.multiply(r, slots[0]), np.multiply(one_minus, np.square(g)), out=outs[1])
        delta = np.negative(np.divide(np.multiply(np.sqrt(np.add(slots[1], eps)), g), np.sqrt(np.add(acc_g, eps))))
        acc_d = np.add(np.multiply(r, slots[1]), np.multiply(one_minus, np.square(delta)), out=outs[2])
        return np.add(old, np.multiply(dt(lr), delta), out=outs[0]), [acc_g, acc_d]
    return fused_step("ResourceApplyKerasAdadelta", var, (accum_grad, accum_delta), grad, t, iterations, compute,
                      lr, wd, decay)


def nadam_u_product(u, beta_1, step):
    """Keras Nadam's running product after step `step`: u * beta_1 * (1 - 0.5 * 0.96^step), in u's dtype."""
    dt = u.dtype.type
    return np.multiply(np.multiply(u, dt(beta_1)), np.subtract(dt(1.0), np.multiply(dt(0.5), np.power(dt(0.96),
                                                                                                    dt(step)))))


def _nadam_kernel(lr, beta_1, beta_2, epsilon, wd, t, grad, var, m, v, u_product, first=False, decay=False,
                  iterations=None):
    """Keras Nadam (momentum schedule 0.96); the step's first variable advances the shared `u_product`."""
    def compute(dt, old, slots, g, step, outs):
        if first:
            _storage.store_locked(u_product, nadam_u_product(read_locked(u_product), beta_1, step))
        one, half, decay_rate = dt(1), dt(0.5), dt(0.96)
        b1, b2, local, following = dt(beta_1), dt(beta_2), dt(step), dt(step + 1)
        u_t = np.multiply(b1, np.subtract(one, np.multiply(half, np.power(decay_rate, local))))
        u_t_1 = np.multiply(b1, np.subtract(one, np.multiply(half, np.power(decay_rate, following))))
        u_prod_t = dt(read_locked(u_product))
        u_prod_t_1 = np.multiply(u_prod_t, u_t_1)
        b2_power = np.power(b2, local)
        new_m = np.add(slots[0], np.multiply(np.subtract(g, slots[0]), np.subtract(one, b1)), out=outs[1])
        new_v = np.add(slots[1], np.multiply(np.subtract(np.square(g), slots[1]), np.subtract(one, b2)), out=outs[2])
        m_hat = np.add(np.divide(np.multiply(u_t_1, new_m), np.subtract(one, u_prod_t_1)),
                       np.divide(np.multiply(np.subtract(one, u_t), g), np.subtract(one, u_prod_t)))
        v_hat = np.divide(new_v, np.subtract(one, b2_power))
        new = np.subtract(old, np.divide(np.multiply(m_hat, dt(lr)), np.add(np.sqrt(v_hat), dt(epsilon))), out=outs[0])
        return new, [new_m, new_v]
    return fused_step("ResourceApplyKerasNadam", var, (m, v), grad, t, iterations, compute, lr, wd, decay,
                      also_locked=(u_product,))


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
APPLY_KERAS_SGD = op(
    "ResourceApplyKerasSGD", _sgd_kernel, _infer_read, effect="write", extra={"writes": ("var", "iterations")},
    doc="Plain SGD with weight decay in one atomic op (inputs lr, wd, t, grad; attrs var, decay, iterations).")
APPLY_KERAS_RMSPROP = op(
    "ResourceApplyKerasRMSprop", _rmsprop_kernel, _infer_read, effect="write",
    extra={"writes": ("var", "velocity", "mom", "average", "iterations")},
    doc="One RMSprop step in one atomic op (inputs lr, rho, momentum, epsilon, wd, t, grad; attrs var, velocity, "
        "mom, average, decay, iterations).")
APPLY_KERAS_ADAGRAD = op(
    "ResourceApplyKerasAdagrad", _adagrad_kernel, _infer_read, effect="write",
    extra={"writes": ("var", "accum", "iterations")},
    doc="One Adagrad step in one atomic op (inputs lr, epsilon, wd, t, grad; attrs var, accum, decay, iterations).")
APPLY_KERAS_ADADELTA = op(
    "ResourceApplyKerasAdadelta", _adadelta_kernel, _infer_read, effect="write",
    extra={"writes": ("var", "accum_grad", "accum_delta", "iterations")},
    doc="One Adadelta step in one atomic op (inputs lr, rho, epsilon, wd, t, grad; attrs var, accum_grad, "
        "accum_delta, decay, iterations).")
APPLY_KERAS_NADAM = op(
    "ResourceApplyKerasNadam", _nadam_kernel, _infer_read, effect="write",
    extra={"writes": ("var", "m", "v", "u_product", "iterations")},
    doc="One Nadam step in one atomic op (inputs lr, beta_1, beta_2, epsilon, wd, t, grad; attrs var, m, v, "
        "u_product, first, decay, iterations).")
