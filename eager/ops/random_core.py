"""Seeds, `RandomState` and the primitive random ops of `eager.random` (the public names are in `random.py`).

Below both `random.py` (normal, uniform) and `random_sampling.py`
(truncated_normal, categorical, shuffle, stateless ops, Generator), which
share the seeding rules and helpers here; `random.py` re-exports the public
names of both.  Seeding rules: `random.py`'s docstring.

Imports: numpy and the eager core (`math` for mean/stddev scaling).
"""
from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .. import context as _context
from ..convert import constant, convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype, float32, int32
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import int_input
from ._define import as_attr_tuple
from .array import stack
from .math import add, multiply, subtract


DEFAULT_GRAPH_SEED = 87654321


@dataclass(eq=False)
class RandomState:
    """The attribute of a random op: an integer seed and the stream drawn from it."""

    seed: int
    _generator: Optional[np.random.Generator] = field(default=None, repr=False)

    @property
    def generator(self) -> np.random.Generator:
        gen = self._generator
        if gen is None:
            with _LOCK:
                gen = self._generator
                if gen is None:
                    gen = self._generator = np.random.default_rng(self.seed)
        return gen

    def reset(self) -> None:
        """Restart the stream from `seed`."""
        with _LOCK:
            self._generator = None

    def to_config(self) -> dict:
        return {"seed": self.seed}

    @classmethod
    def from_config(cls, config: dict) -> "RandomState":
        return cls(int(config["seed"]))


@dataclass
class _SeedState:
    global_seed: Optional[int] = None
    counter: int = 0
    eager_streams: dict = field(default_factory=dict)   # (global, op) seed -> RandomState, eager only


_SEEDS = _SeedState()
_LOCK = threading.Lock()          # guards _SEEDS and the lazy creation of each RandomState's generator


def set_seed(seed) -> None:
    """Set the global seed (None clears it); resets the op counter and eager streams."""
    with _LOCK:
        _SEEDS.global_seed = None if seed is None else int(seed)
        _SEEDS.counter = 0
        _SEEDS.eager_streams.clear()


def get_global_seed() -> Optional[int]:
    return _SEEDS.global_seed


def derived_seed(op_seed) -> Optional[int]:
    """The seed of an op with its own stream (a dataset shuffle) under TF's rules, or None when neither
    seed is set (the caller picks a random one): with only the global seed, each such op takes the next
    op counter (its own stream, the same in every run after `set_seed`); with both, they are combined;
    an op seed alone is used as it is."""
    with _LOCK:
        g = _SEEDS.global_seed
        if g is None:
            return None if op_seed is None else int(op_seed)
        if op_seed is None:
            op_seed = _SEEDS.counter
            _SEEDS.counter += 1
        return _combine(g, int(op_seed)) & 0x7FFFFFFF


def _combine(global_seed: int, op_seed: int) -> int:
    return int(np.random.SeedSequence([global_seed & 0xFFFFFFFFFFFF, op_seed & 0xFFFFFFFFFFFF])
               .generate_state(1, np.uint64)[0] >> 1)


def _new_state(seed) -> RandomState:
    """The RandomState for one dispatched op under the current seeding rules."""
    eager = _context.executing_eagerly()
    with _LOCK:
        g = _SEEDS.global_seed
        if seed is None and g is None:
            return RandomState(secrets.randbits(63))
        if seed is None:
            op_seed = _SEEDS.counter
            _SEEDS.counter += 1
        else:
            op_seed = int(seed)
            g = DEFAULT_GRAPH_SEED if g is None else g
        if not eager:
            return RandomState(_combine(g, op_seed))
        key = (g, op_seed)
        state = _SEEDS.eager_streams.get(key)
        if state is None:
            state = _SEEDS.eager_streams[key] = RandomState(_combine(g, op_seed))
        return state


# ------------------------------------------------------------------ primitives
def _size(shape):
    return tuple(int(d) for d in np.asarray(shape).reshape(-1))


def _check_size(size, opname):
    if any(d < 0 for d in size):
        raise InvalidArgumentError(f"{opname}: shape must not have negative dimensions, got {list(size)}",
                                   op_name=opname)
    return size


def _normal_kernel(shape, dtype, state):
    size = _check_size(_size(shape), "RandomStandardNormal")
    npd = dtype.as_numpy_dtype
    if npd in (np.float32, np.float64):
        return state.generator.standard_normal(size, dtype=npd)
    return state.generator.standard_normal(size, dtype=np.float32).astype(npd)


def _uniform_kernel(shape, dtype, state):
    size = _check_size(_size(shape), "RandomUniform")
    npd = dtype.as_numpy_dtype
    if npd in (np.float32, np.float64):
        return state.generator.random(size, dtype=npd)
    return state.generator.random(size, dtype=np.float32).astype(npd)


def _uniform_int_kernel(shape, minval, maxval, state):
    size = _check_size(_size(shape), "RandomUniformInt")
    if not minval < maxval:
        raise InvalidArgumentError(f"RandomUniformInt: need minval < maxval, got {minval} >= {maxval}",
                                   op_name="RandomUniformInt")
    return state.generator.integers(minval, maxval, size=size, dtype=np.asarray(minval).dtype)


def _shape_from_spec(spec):
    if spec.value is not None:
        return _size(spec.value)
    n = spec.shape[0] if spec.shape else None
    return None if n is None else (None,) * n


def _infer_random(specs, attrs):
    return [Spec(_shape_from_spec(specs[0]), attrs["dtype"])]


RANDOM_NORMAL = op("RandomStandardNormal", _normal_kernel, _infer_random, effect="write",
                   doc="Standard normal samples of the given shape; attrs dtype, state (RandomState).")
RANDOM_UNIFORM = op("RandomUniform", _uniform_kernel, _infer_random, effect="write",
                    doc="Uniform samples in [0, 1); attrs dtype, state (RandomState).")
RANDOM_UNIFORM_INT = op("RandomUniformInt", _uniform_int_kernel,
                        lambda specs, attrs: [Spec(_shape_from_spec(specs[0]), specs[1].dtype)], effect="write",
                        doc="Uniform integers in [minval, maxval); attr state (RandomState).")


# ------------------------------------------------------------------ public functions
def _shape_arg(shape, opname):
    if isinstance(shape, Tensor) or hasattr(shape, "_to_tensor"):
        t = convert_to_tensor(shape)
        if not t.dtype.is_integer or t.shape.rank not in (None, 1):
            raise InvalidArgumentError(f"{opname}: shape must be a 1-D integer tensor, got {t.dtype.name} of shape "
                                       f"{t.shape}", op_name=opname)
        return t
    if isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) for d in shape):
        return stack([convert_to_tensor(d, dtype=int32) if not isinstance(d, Tensor) else d for d in shape])
    dims = _check_size(as_attr_tuple(() if shape is None else shape, "shape", opname), opname)
    return int_input(list(dims), "shape", opname)         # int32, or int64 when a dim needs it


def _float_dtype(dtype, opname):
    dt = as_dtype(dtype)
    if not dt.is_floating:
        raise InvalidArgumentError(f"{opname}: dtype must be floating-point, got {dt.name}", op_name=opname)
    return dt


def _affine(x, scale, shift, dt, scale_is_one, shift_is_zero):
    if not scale_is_one:
        x = multiply(x, scale if isinstance(scale, Tensor) else convert_to_tensor(scale, dtype=dt))
    if not shift_is_zero:
        x = add(x, shift if isinstance(shift, Tensor) else convert_to_tensor(shift, dtype=dt))
    return x


def _is_const(v, c):
    return not isinstance(v, Tensor) and not hasattr(v, "_to_tensor") and np.ndim(v) == 0 and v == c
