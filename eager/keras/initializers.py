"""Weight initializers (`eager.keras.initializers`), by object or by Keras's string names.

An initializer is called as `init(shape, dtype)` and returns a NumPy array; layers turn it into a
variable.  Fan-in/fan-out follow Keras: for a kernel of shape (..., fan_in, fan_out) the leading
dimensions are the receptive field (conv kernels are HWIO).  Draws come from
`backend.rng(seed)`, so `eager.keras.utils.set_random_seed` makes models reproducible.
"""
from __future__ import annotations

import numpy as np

from . import backend


def _fans(shape):
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    def __call__(self, shape, dtype="float32"):
        raise NotImplementedError(f"{type(self).__name__} must define __call__(shape, dtype)")

    def get_config(self) -> dict:
        return {}


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype="float32"):
        return np.full(shape, self.value, dtype=dtype)


class Zeros(Constant):
    def __init__(self):
        super().__init__(0.0)


class Ones(Constant):
    def __init__(self):
        super().__init__(1.0)


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape, dtype="float32"):
        return backend.rng(self.seed).uniform(self.minval, self.maxval, size=shape).astype(dtype)


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape, dtype="float32"):
        return backend.rng(self.seed).normal(self.mean, self.stddev, size=shape).astype(dtype)


class VarianceScaling(Initializer):
    """Keras's VarianceScaling: scale / fan, uniform or truncated normal."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScaling: mode must be fan_in, fan_out or fan_avg, got {mode!r}")
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"VarianceScaling: unknown distribution {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape, dtype="float32"):
        fan_in, fan_out = _fans(tuple(shape))
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        var = self.scale / max(1.0, fan)
        g = backend.rng(self.seed)
        if self.distribution == "uniform":
            limit = np.sqrt(3.0 * var)
            return g.uniform(-limit, limit, size=shape).astype(dtype)
        if self.distribution == "untruncated_normal":
            return g.normal(0.0, np.sqrt(var), size=shape).astype(dtype)
        std = np.sqrt(var) / 0.87962566103423978       # stddev of a unit normal truncated to [-2, 2]
        out = g.normal(0.0, 1.0, size=shape)
        bad = np.abs(out) > 2
        while bad.any():
            out[bad] = g.normal(0.0, 1.0, size=int(bad.sum()))
            bad = np.abs(out) > 2
        return (out * std).astype(dtype)


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "uniform", seed)


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)


class HeNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)


class HeUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "uniform", seed)


class Orthogonal(Initializer):
    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = gain, seed

    def __call__(self, shape, dtype="float32"):
        rows = int(np.prod(shape[:-1]))
        cols = shape[-1]
        a = backend.rng(self.seed).normal(size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q = q * np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q[:rows, :cols]).reshape(shape).astype(dtype)


_BY_NAME = {"zeros": Zeros, "ones": Ones, "constant": Constant, "random_uniform": RandomUniform,
            "random_normal": RandomNormal, "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
            "he_normal": HeNormal, "he_uniform": HeUniform, "orthogonal": Orthogonal,
            "variance_scaling": VarianceScaling}


def get(identifier) -> Initializer:
    """An initializer from an instance, a callable `(shape, dtype) -> array`, or a Keras name."""
    if isinstance(identifier, Initializer) or (callable(identifier) and not isinstance(identifier, type)):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, str):
        key = "".join("_" + c.lower() if c.isupper() else c for c in identifier).lstrip("_")
        cls = _BY_NAME.get(identifier) or _BY_NAME.get(key)
        if cls is not None:
            return cls()
    raise ValueError(f"unknown initializer {identifier!r}; known names: {sorted(_BY_NAME)}")
