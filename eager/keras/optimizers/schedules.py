"""Learning-rate schedules (`keras.optimizers.schedules`), with Keras 3's formulas.

A schedule is called with the step (the optimizer's `iterations`) and
returns the learning rate as a tensor.  Each is written with public ops
(`eager.cond` where Keras uses `ops.cond`), so it evaluates eagerly and
inside graphs and traced functions: a traced training step reads the counter
and computes the rate on every call.  The rate's dtype is that of
`initial_learning_rate` converted to a tensor (float32 for a Python float),
as in Keras.

Imports `eager` modules only.
"""
from __future__ import annotations

import math

from ...control_flow import cond
from ...convert import convert_to_tensor
from ...ops import math as _m
from ...ops.gather import where

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay", "PolynomialDecay",
           "InverseTimeDecay", "CosineDecay", "CosineDecayRestarts", "serialize", "deserialize"]


class LearningRateSchedule:
    """Base class: subclasses define `__call__(step)` and `get_config()`."""

    def __call__(self, step):
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override "
                                  f"`__call__(self, step)`.")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must override `get_config()` "
                                  f"in order to be serializable.")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _positive(name, value):
    if value <= 0:
        raise ValueError(f"Argument `{name}` must be > 0. Received: {name}={value}")


def _start(initial_learning_rate, step):
    lr = convert_to_tensor(initial_learning_rate)
    return lr, lr.dtype, _m.cast(convert_to_tensor(step), lr.dtype)


class _RateDecay(LearningRateSchedule):
    """Shared by the two decays of (initial_learning_rate, decay_steps, decay_rate, staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name=None):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps, self.decay_rate = initial_learning_rate, decay_steps, decay_rate
        self.staircase, self.name = staircase, name or type(self).__name__

    def _progress(self, step):
        """(lr0, decay_rate, step / decay_steps floored when staircase), in lr0's dtype."""
        lr, dtype, step = _start(self.initial_learning_rate, step)
        p = _m.divide(step, _m.cast(convert_to_tensor(self.decay_steps), dtype))
        return lr, _m.cast(convert_to_tensor(self.decay_rate), dtype), _m.floor(p) if self.staircase else p

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "decay_rate": self.decay_rate, "staircase": self.staircase, "name": self.name}


class ExponentialDecay(_RateDecay):
    """`initial_learning_rate * decay_rate ^ (step / decay_steps)` (floored exponent when `staircase`)."""

    def __call__(self, step):
        lr, rate, p = self._progress(step)
        return _m.multiply(lr, _m.pow(rate, p))


class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[i]` for steps in `(boundaries[i-1], boundaries[i]]`; `values[0]` up to and at `boundaries[0]`."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"The length of boundaries should be 1 less than the length of values. Received: "
                             f"boundaries={boundaries} of length {len(boundaries)}, and values={values} of length "
                             f"{len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        step = convert_to_tensor(step)
        bounds = [_m.cast(convert_to_tensor(b), step.dtype) for b in self.boundaries]
        values = [convert_to_tensor(v) for v in self.values]
        dtype = values[0].dtype
        result = _m.multiply(_m.cast(_m.less_equal(step, bounds[0]), dtype), values[0])
        result = _m.add(result, _m.multiply(_m.cast(_m.greater(step, bounds[-1]), dtype), values[-1]))
        for low, high, value in zip(bounds[:-1], bounds[1:], values[1:-1]):
            inside = _m.logical_and(_m.greater(step, low), _m.less_equal(step, high))
            result = _m.add(result, _m.multiply(_m.cast(inside, dtype), value))
        return result

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """`(lr0 - end) * (1 - step/decay_steps)^power + end`; `cycle` stretches decay_steps by ceil(step/decay_steps)."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001, power=1.0, cycle=False,
                 name="PolynomialDecay"):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power, self.cycle, self.name = end_learning_rate, power, cycle, name

    def __call__(self, step):
        lr, dtype, step = _start(self.initial_learning_rate, step)
        end = _m.cast(convert_to_tensor(self.end_learning_rate), dtype)
        power = _m.cast(convert_to_tensor(self.power), dtype)
        decay_steps = _m.cast(convert_to_tensor(self.decay_steps), dtype)
        if self.cycle:
            multiplier = where(_m.equal(step, 0), _m.cast(convert_to_tensor(1.0), dtype),
                               _m.ceil(_m.divide(step, decay_steps)))
            decay_steps = _m.multiply(decay_steps, multiplier)
        else:
            step = _m.minimum(step, decay_steps)
        p = _m.divide(step, decay_steps)
        return _m.add(_m.multiply(_m.subtract(lr, end), _m.pow(_m.subtract(1.0, p), power)), end)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "end_learning_rate": self.end_learning_rate, "power": self.power, "cycle": self.cycle,
                "name": self.name}


class InverseTimeDecay(_RateDecay):
    """`initial_learning_rate / (1 + decay_rate * step / decay_steps)` (floored ratio when `staircase`)."""

    def __call__(self, step):
        lr, rate, p = self._progress(step)
        return _m.divide(lr, _m.add(_m.cast(convert_to_tensor(1), lr.dtype), _m.multiply(rate, p)))


def _cosine(fraction, decay_from, alpha, dtype, m_fac=None):
    """decay_from * ((1 - alpha) * 0.5 [* m_fac] * (1 + cos(pi * fraction)) + alpha), Keras's order of operations."""
    pi = _m.cast(convert_to_tensor(math.pi), dtype)
    half = 0.5 if m_fac is None else _m.multiply(0.5, m_fac)
    cosine = _m.multiply(half, _m.add(1.0, _m.cos(_m.multiply(pi, fraction))))
    decayed = _m.add(_m.multiply(1 - alpha, cosine), alpha)
    return _m.multiply(decay_from, decayed)


class CosineDecay(LearningRateSchedule):
    """Cosine decay from `initial_learning_rate` (or, after a linear warmup, from `warmup_target`) to alpha*lr."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay", warmup_target=None,
                 warmup_steps=0):
        _positive("decay_steps", decay_steps)
        self.initial_learning_rate, self.decay_steps, self.alpha = initial_learning_rate, decay_steps, alpha
        self.name, self.warmup_target, self.warmup_steps = name, warmup_target, warmup_steps

    def __call__(self, step):
        lr, dtype, step = _start(self.initial_learning_rate, step)
        decay_steps = _m.cast(convert_to_tensor(self.decay_steps), dtype)
        if self.warmup_target is None:
            return _cosine(_m.divide(_m.minimum(step, decay_steps), decay_steps), lr, self.alpha, dtype)
        target = _m.cast(convert_to_tensor(self.warmup_target), dtype)
        warmup = _m.cast(convert_to_tensor(self.warmup_steps), dtype)
        step = _m.minimum(step, _m.add(decay_steps, warmup))
        return cond(_m.less(step, warmup),
                    lambda: _m.add(_m.multiply(_m.subtract(target, lr), _m.divide(step, warmup)), lr),
                    lambda: _cosine(_m.divide(_m.subtract(step, warmup), decay_steps), target, self.alpha, dtype))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "decay_steps": self.decay_steps,
                "alpha": self.alpha, "name": self.name, "warmup_target": self.warmup_target,
                "warmup_steps": self.warmup_steps}


class CosineDecayRestarts(LearningRateSchedule):
    """SGDR: cosine decay restarted after first_decay_steps, periods growing by t_mul, peaks scaled by m_mul."""

    def __init__(self, initial_learning_rate, first_decay_steps, t_mul=2.0, m_mul=1.0, alpha=0.0, name="SGDRDecay"):
        _positive("first_decay_steps", first_decay_steps)
        self.initial_learning_rate, self.first_decay_steps = initial_learning_rate, first_decay_steps
        self._t_mul, self._m_mul, self.alpha, self.name = t_mul, m_mul, alpha, name

    def __call__(self, step):
        lr, dtype, step = _start(self.initial_learning_rate, step)
        first = _m.cast(convert_to_tensor(self.first_decay_steps), dtype)
        t_mul = _m.cast(convert_to_tensor(self._t_mul), dtype)
        m_mul = _m.cast(convert_to_tensor(self._m_mul), dtype)
        fraction = _m.divide(step, first)
        if self._t_mul == 1.0:        # Keras decides this with a cond on a constant: decided here in Python
            i_restart = _m.floor(fraction)
            fraction = _m.subtract(fraction, i_restart)
        else:
            i_restart = _m.floor(_m.divide(_m.log(_m.subtract(1.0, _m.multiply(fraction, _m.subtract(1.0, t_mul)))),
                                           _m.log(t_mul)))
            sum_r = _m.divide(_m.subtract(1.0, _m.pow(t_mul, i_restart)), _m.subtract(1.0, t_mul))
            fraction = _m.divide(_m.subtract(fraction, sum_r), _m.pow(t_mul, i_restart))
        return _cosine(fraction, lr, self.alpha, dtype, m_fac=_m.pow(m_mul, i_restart))

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate, "first_decay_steps": self.first_decay_steps,
                "t_mul": self._t_mul, "m_mul": self._m_mul, "alpha": self.alpha, "name": self.name}


_ALL = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay, PolynomialDecay, InverseTimeDecay,
                                CosineDecay, CosineDecayRestarts)}


def serialize(schedule) -> dict:
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict) -> LearningRateSchedule:
    """A schedule from `serialize`'s dict: only the classes above (nothing from a config becomes code)."""
    cls = _ALL.get(config.get("class_name")) if isinstance(config, dict) else None
    if cls is None:
        raise ValueError(f"Unknown learning rate schedule: {config!r}; known: {sorted(_ALL)}")
    return cls(**config.get("config", {}))
