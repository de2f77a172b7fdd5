"""NumPy transcriptions of Keras 3's optimizer update rules and schedules (keras/src/optimizers/*.py).

Written from Keras's expressions, operation by operation, in the variable's
dtype, with Keras's Python-float constants (`1 - beta_1` computed in double
precision, then converted).  Used by the optimizer and schedule tests.
"""
import math

import numpy as np


class Reference:
    """One optimizer's state for one variable: `step(w, g) -> new w`."""

    def __init__(self, name, lr=0.01, **cfg):
        self.name, self.lr, self.cfg, self.t, self.s = name, lr, cfg, 0, {}

    def step(self, w, g):
        dt, c, s = w.dtype.type, self.cfg, self.s
        self.t += 1
        lr = dt(self.lr)
        wd = c.get("weight_decay", 0.004 if self.name == "adamw" else None)
        if wd is not None:
            w = w - w * dt(wd) * lr
        zeros = np.zeros_like(w)
        if self.name == "sgd":
            mu = c.get("momentum", 0.0)
            if not mu:
                return w - g * lr
            m = s.get("m", zeros)
            m = m * dt(mu) - g * lr
            s["m"] = m
            return w + (m * dt(mu) - g * lr if c.get("nesterov") else m)
        if self.name in ("adam", "adamw"):
            b1, b2, eps = c.get("beta_1", 0.9), c.get("beta_2", 0.999), c.get("epsilon", 1e-7)
            t = dt(self.t)
            alpha = lr * np.sqrt(dt(1) - np.power(dt(b2), t)) / (dt(1) - np.power(dt(b1), t))
            m = s.get("m", zeros)
            v = s.get("v", zeros)
            m = m + (g - m) * dt(1 - b1)
            v = v + (np.square(g) - v) * dt(1 - b2)
            s["m"], s["v"] = m, v
            if c.get("amsgrad"):
                v = s["vhat"] = np.maximum(s.get("vhat", zeros), v)
            return w - (m * alpha) / (np.sqrt(v) + dt(eps))
        if self.name == "rmsprop":
            rho, mu, eps = c.get("rho", 0.9), c.get("momentum", 0.0), c.get("epsilon", 1e-7)
            v = dt(rho) * s.get("v", zeros) + dt(1 - rho) * np.square(g)
            s["v"] = v
            if c.get("centered"):
                a = dt(rho) * s.get("a", zeros) + dt(1 - rho) * g
                s["a"] = a
                denominator = v - np.square(a) + dt(eps)
            else:
                denominator = v + dt(eps)
            inc = (lr * g) / np.sqrt(denominator)
            if mu > 0:
                inc = s["mom"] = dt(mu) * s.get("mom", zeros) + inc
            return w - inc
        if self.name == "adagrad":
            acc = s.get("acc", np.full_like(w, c.get("initial_accumulator_value", 0.1))) + np.square(g)
            s["acc"] = acc
            return w - (lr * g) / np.sqrt(acc + dt(c.get("epsilon", 1e-7)))
        if self.name == "adadelta":
            rho, eps = c.get("rho", 0.95), dt(c.get("epsilon", 1e-7))
            ag = dt(rho) * s.get("ag", zeros) + dt(1 - rho) * np.square(g)
            ad = s.get("ad", zeros)
            delta = -((np.sqrt(ad + eps) * g) / np.sqrt(ag + eps))
            s["ag"], s["ad"] = ag, dt(rho) * ad + dt(1 - rho) * np.square(delta)
            return w + lr * delta
        if self.name == "nadam":
            b1, b2, eps = dt(c.get("beta_1", 0.9)), dt(c.get("beta_2", 0.999)), c.get("epsilon", 1e-7)
            t, one = dt(self.t), dt(1)
            u = s.get("u", dt(1.0))
            u = u * dt(c.get("beta_1", 0.9)) * (dt(1.0) - dt(0.5) * np.power(dt(0.96), t))
            s["u"] = u
            u_t = b1 * (one - dt(0.5) * np.power(dt(0.96), t))
            u_t_1 = b1 * (one - dt(0.5) * np.power(dt(0.96), dt(self.t + 1)))
            u_t1 = u * u_t_1
            m = s.get("m", zeros)
            v = s.get("v", zeros)
            m = m + (g - m) * (one - b1)
            v = v + (np.square(g) - v) * (one - b2)
            s["m"], s["v"] = m, v
            m_hat = (u_t_1 * m) / (one - u_t1) + ((one - u_t) * g) / (one - u)
            v_hat = v / (one - np.power(b2, t))
            return w - (m_hat * lr) / (np.sqrt(v_hat) + dt(eps))
        raise ValueError(self.name)


def schedule_value(name, step, **c):
    """Keras 3's schedules in float32 (their dtype for a Python-float initial rate)."""
    f = np.float32
    step = f(step)
    if name == "ExponentialDecay":
        p = step / f(c["decay_steps"])
        p = np.floor(p) if c.get("staircase") else p
        return f(c["initial_learning_rate"]) * np.power(f(c["decay_rate"]), p)
    if name == "InverseTimeDecay":
        p = step / f(c["decay_steps"])
        p = np.floor(p) if c.get("staircase") else p
        return f(c["initial_learning_rate"]) / (f(1) + f(c["decay_rate"]) * p)
    if name == "PiecewiseConstantDecay":
        b, v = c["boundaries"], [f(x) for x in c["values"]]
        if step <= b[0]:
            return v[0]
        for low, high, value in zip(b[:-1], b[1:], v[1:-1]):
            if low < step <= high:
                return value
        return v[-1]
    if name == "PolynomialDecay":
        lr0, end, power, ds = f(c["initial_learning_rate"]), f(c.get("end_learning_rate", 1e-4)), \
            f(c.get("power", 1.0)), f(c["decay_steps"])
        if c.get("cycle"):
            ds = ds * (f(1.0) if step == 0 else np.ceil(step / ds))
        else:
            step = min(step, ds)
        return (lr0 - end) * np.power(f(1.0) - step / ds, power) + end
    if name == "CosineDecay":
        lr0, ds, alpha = f(c["initial_learning_rate"]), f(c["decay_steps"]), c.get("alpha", 0.0)

        def decay(s, frm):
            cos = f(0.5) * (f(1.0) + np.cos(f(math.pi) * (s / ds)))
            return frm * (f(1 - alpha) * cos + f(alpha))
        if c.get("warmup_target") is None:
            return decay(min(step, ds), lr0)
        target, ws = f(c["warmup_target"]), f(c["warmup_steps"])
        step = min(step, ds + ws)
        if step < ws:
            return (target - lr0) * (step / ws) + lr0
        return decay(step - ws, target)
    if name == "CosineDecayRestarts":
        lr0, first, t_mul, m_mul, alpha = f(c["initial_learning_rate"]), f(c["first_decay_steps"]), \
            f(c.get("t_mul", 2.0)), f(c.get("m_mul", 1.0)), c.get("alpha", 0.0)
        frac = step / first
        if t_mul == 1.0:
            i = np.floor(frac)
            frac = frac - i
        else:
            i = np.floor(np.log(f(1.0) - frac * (f(1.0) - t_mul)) / np.log(t_mul))
            sum_r = (f(1.0) - np.power(t_mul, i)) / (f(1.0) - t_mul)
            frac = (frac - sum_r) / np.power(t_mul, i)
        cos = f(0.5) * np.power(m_mul, i) * (f(1.0) + np.cos(f(math.pi) * frac))
        return lr0 * (f(1 - alpha) * cos + f(alpha))
    raise ValueError(name)
