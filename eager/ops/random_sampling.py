"""More of `eager.random`: truncated_normal, categorical, shuffle, the `stateless_*` functions, `Generator`.

Stateful ops (`TruncatedNormal`, `Multinomial`, `RandomShuffle`) follow the
seeding rules of `random.py` (a `RandomState` attr per op).  Stateless ops
(`StatelessRandomNormalV2`-style: a `seed` input of two integers) are pure:
the same seed and shape always give the same numbers, in every mode, so they
may be folded like any pure op.  Their numbers come from NumPy's PCG64 seeded
with the two integers, not TensorFlow's Philox: the same seed gives
different numbers than in TensorFlow (the distribution is the same).

`Generator.from_seed(seed)` holds its position in an int64 variable; each
draw reads and advances it and calls a stateless op with (seed, position),
so a generator works eagerly and inside `@function` (each call of the traced
function draws new numbers), and a checkpoint of the variable resumes the
stream.

Truncated normal values are redrawn until they lie within two standard
deviations, as in TensorFlow.

Imports numpy and `eager` modules.
"""
from __future__ import annotations

import secrets
import threading

import numpy as np

from .. import context as _context
from ..convert import constant, convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype, float32, int64
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..variables import Variable
from .array import stack
from .math import subtract
from .random_core import (_affine, _check_size, _float_dtype, _infer_random, _is_const, _new_state, _shape_arg,
                          _size)

__all__ = ["truncated_normal", "categorical", "shuffle", "stateless_normal", "stateless_uniform",
           "stateless_truncated_normal", "stateless_categorical", "Generator"]


def _truncated(gen, size, npd):
    out = gen.standard_normal(size)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = gen.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2
    return out.astype(npd)


def _categorical(gen, logits, num_samples, dtype):
    logits = np.asarray(logits, np.float64)
    if logits.ndim != 2:
        raise InvalidArgumentError(f"Multinomial: logits must be 2-D [batch, classes], got shape {list(logits.shape)}",
                                   op_name="Multinomial")
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = gen.random((logits.shape[0], int(num_samples)))
    idx = np.minimum((u[:, :, None] > cdf[:, None, :]).sum(axis=2), logits.shape[1] - 1)
    return idx.astype(dtype.as_numpy_dtype)


# ------------------------------------------------------------------ stateful ops
TRUNCATED_NORMAL = op("TruncatedNormal", lambda shape, dtype, state: _truncated(
    state.generator, _check_size(_size(shape), "TruncatedNormal"), dtype.as_numpy_dtype), _infer_random,
    effect="write", doc="Normal samples within two standard deviations; attrs dtype, state.")
MULTINOMIAL = op("Multinomial", lambda logits, n, dtype, state: _categorical(state.generator, logits, n, dtype),
                 lambda s, a: [Spec(None if s[0].shape is None else (s[0].shape[0], None), a["dtype"])],
                 effect="write", doc="Class indices drawn from softmax(logits) per row; attrs dtype, state.")
SHUFFLE = op("RandomShuffle", lambda x, state: state.generator.permutation(x),
             lambda s, a: [Spec(s[0].shape, s[0].dtype)], effect="write",
             doc="The input with its first dimension randomly permuted; attr state.")


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    dt = _float_dtype(dtype, "TruncatedNormal")
    x = execute(TRUNCATED_NORMAL, (_shape_arg(shape, "TruncatedNormal"),), {"dtype": dt, "state": _new_state(seed)},
                name)
    return _affine(x, stddev, mean, dt, _is_const(stddev, 1), _is_const(mean, 0))


def categorical(logits, num_samples, dtype=None, seed=None, name=None):
    """[batch, num_samples] class indices drawn from softmax(logits) (int64 by default)."""
    dt = as_dtype(dtype or int64)
    return execute(MULTINOMIAL, (convert_to_tensor(logits), convert_to_tensor(num_samples, dtype="int32")),
                   {"dtype": dt, "state": _new_state(seed)}, name)


def shuffle(value, seed=None, name=None):
    """`value` with its first dimension randomly permuted."""
    return execute(SHUFFLE, (convert_to_tensor(value),), {"state": _new_state(seed)}, name)


# ------------------------------------------------------------------ stateless ops
def _rng(seed):
    s = np.asarray(seed).reshape(-1)
    if s.shape != (2,) or s.dtype.kind not in "iu":
        raise InvalidArgumentError(f"stateless random ops take a seed of two integers, got {seed!r}",
                                   op_name="StatelessRandom")
    return np.random.default_rng([int(v) & 0xFFFFFFFFFFFFFFFF for v in s])


def _infer_stateless(specs, attrs):
    return _infer_random(specs[:1], attrs)


S_NORMAL = op("StatelessRandomNormal", lambda shape, seed, dtype: _rng(seed).standard_normal(
    _check_size(_size(shape), "StatelessRandomNormal")).astype(dtype.as_numpy_dtype), _infer_stateless)
S_UNIFORM = op("StatelessRandomUniform", lambda shape, seed, dtype: _rng(seed).random(
    _check_size(_size(shape), "StatelessRandomUniform")).astype(dtype.as_numpy_dtype), _infer_stateless)
S_TRUNCATED = op("StatelessTruncatedNormal", lambda shape, seed, dtype: _truncated(
    _rng(seed), _check_size(_size(shape), "StatelessTruncatedNormal"), dtype.as_numpy_dtype), _infer_stateless)
S_MULTINOMIAL = op("StatelessMultinomial", lambda logits, n, seed, dtype: _categorical(_rng(seed), logits, n, dtype),
                   lambda s, a: [Spec(None if s[0].shape is None else (s[0].shape[0], None), a["dtype"])])


def _seed(seed):
    t = convert_to_tensor(seed)
    if not t.dtype.is_integer or t.shape.as_list() != [2]:
        raise InvalidArgumentError(f"stateless random ops take a seed of shape [2] and an integer dtype, got "
                                   f"{t.dtype.name}{t.shape}", op_name="StatelessRandom")
    return t


def stateless_normal(shape, seed, mean=0.0, stddev=1.0, dtype=float32, name=None):
    dt = _float_dtype(dtype, "StatelessRandomNormal")
    x = execute(S_NORMAL, (_shape_arg(shape, "StatelessRandomNormal"), _seed(seed)), {"dtype": dt}, name)
    return _affine(x, stddev, mean, dt, _is_const(stddev, 1), _is_const(mean, 0))


def stateless_uniform(shape, seed, minval=0, maxval=None, dtype=float32, name=None):
    dt = _float_dtype(dtype, "StatelessRandomUniform")
    maxval = 1 if maxval is None else maxval
    x = execute(S_UNIFORM, (_shape_arg(shape, "StatelessRandomUniform"), _seed(seed)), {"dtype": dt}, name)
    if _is_const(minval, 0) and _is_const(maxval, 1):
        return x
    lo, hi = convert_to_tensor(minval, dtype=dt), convert_to_tensor(maxval, dtype=dt)
    return _affine(x, subtract(hi, lo), lo, dt, False, _is_const(minval, 0))


def stateless_truncated_normal(shape, seed, mean=0.0, stddev=1.0, dtype=float32, name=None):
    dt = _float_dtype(dtype, "StatelessTruncatedNormal")
    x = execute(S_TRUNCATED, (_shape_arg(shape, "StatelessTruncatedNormal"), _seed(seed)), {"dtype": dt}, name)
    return _affine(x, stddev, mean, dt, _is_const(stddev, 1), _is_const(mean, 0))


def stateless_categorical(logits, num_samples, seed, dtype=None, name=None):
    return execute(S_MULTINOMIAL, (convert_to_tensor(logits), convert_to_tensor(num_samples, dtype="int32"),
                                   _seed(seed)), {"dtype": as_dtype(dtype or int64)}, name)


# ------------------------------------------------------------------ Generator
class Generator:
    """A seeded random stream whose position is a variable (see the module docstring)."""

    def __init__(self, seed, name="generator"):
        self._seed = int(seed) & 0x7FFFFFFFFFFFFFFF
        self._lock = threading.Lock()
        with _context.init_scope():
            self.state = Variable(constant(0, "int64"), trainable=False, name=f"{name}/state")

    @classmethod
    def from_seed(cls, seed, alg=None):
        return cls(seed)

    @classmethod
    def from_non_deterministic_state(cls, alg=None):
        return cls(secrets.randbits(63))

    @property
    def seed(self) -> int:
        return self._seed

    def _next_seed(self):
        if _context.executing_eagerly():
            with self._lock:
                position = int(self.state.numpy())
                self.state.assign(constant(position + 1, "int64"))
            return constant([self._seed, position], "int64")
        after = self.state.assign_add(constant(1, "int64"))
        return stack([constant(self._seed, "int64"), subtract(after, constant(1, "int64"))])

    def normal(self, shape, mean=0.0, stddev=1.0, dtype=float32, name=None):
        return stateless_normal(shape, self._next_seed(), mean, stddev, dtype, name)

    def uniform(self, shape, minval=0, maxval=None, dtype=float32, name=None):
        return stateless_uniform(shape, self._next_seed(), minval, maxval, dtype, name)

    def truncated_normal(self, shape, mean=0.0, stddev=1.0, dtype=float32, name=None):
        return stateless_truncated_normal(shape, self._next_seed(), mean, stddev, dtype, name)

    def _checkpoint_children(self) -> dict:
        return {"state": self.state}
