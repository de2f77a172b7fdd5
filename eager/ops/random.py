"""The `random` namespace (`eager.random`): seeded, stateful random ops.

Each random op carries a `RandomState` attribute, created when the op is
dispatched: an integer `seed` (what a GraphDef stores) and, lazily, the NumPy
`Generator` it draws from.  Eagerly the op runs once; in a graph the same
`RandomState` is used by every run, so each run draws fresh numbers (the ops
are `stateful`: never folded, merged or cached).

Seeding follows TensorFlow 2 (`tf.random.set_seed`):
- no global seed, no op seed: fresh entropy every time;
- global seed only: ops get seeds from (global seed, a counter reset by
  `set_seed`), so the sequence of draws after `set_seed(s)` is reproducible;
- op seed (with or without a global seed; default global 87654321): eagerly,
  repeated calls with the same seeds continue one stream (as TF's cached
  kernels do) until `set_seed` resets it; in a graph each op owns its stream.
The global seed state is one module-level `_SeedState` record (TF's global seed
is global too).  It and each op's lazily made stream are guarded by one lock, so
ops dispatched from several threads never share a counter value, and threads
running one op share one stream (NumPy's generators lock each draw).

The seeding state, `RandomState` and the primitives are in `random_core.py`;
more samplers in `random_sampling.py`.  Imports sibling op modules.
"""
from __future__ import annotations

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype, float32
from ..errors import InvalidArgumentError
from ..tensor import Tensor
from .math import subtract
from .random_core import (DEFAULT_GRAPH_SEED, RANDOM_NORMAL, RANDOM_UNIFORM, RANDOM_UNIFORM_INT,  # noqa: F401
                          RandomState, _affine, _check_size, _float_dtype, _is_const, _new_state, _shape_arg,
                          get_global_seed, set_seed)
from .random_sampling import (Generator, categorical, shuffle, stateless_categorical,  # noqa: F401
                              stateless_normal, stateless_truncated_normal, stateless_uniform, truncated_normal)

__all__ = ["set_seed", "get_global_seed", "normal", "uniform", "RandomState", "truncated_normal", "categorical",
           "shuffle", "stateless_normal", "stateless_uniform", "stateless_truncated_normal", "stateless_categorical",
           "Generator"]


def normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    """Samples from N(mean, stddev**2) of the given shape."""
    dt = _float_dtype(dtype, "RandomStandardNormal")
    s = _shape_arg(shape, "RandomStandardNormal")
    x = execute(RANDOM_NORMAL, (s,), {"dtype": dt, "state": _new_state(seed)}, name)
    return _affine(x, stddev, mean, dt, _is_const(stddev, 1), _is_const(mean, 0))


def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None):
    """Samples uniform in [minval, maxval) (maxval defaults to 1 for floats; required for ints)."""
    dt = as_dtype(dtype)
    s = _shape_arg(shape, "RandomUniform")
    if dt.is_integer:
        if maxval is None:
            raise ValueError(f"uniform: maxval must be specified for integer dtype {dt.name}")
        if dt.name not in ("int32", "int64"):
            raise InvalidArgumentError(f"RandomUniformInt: dtype must be int32 or int64, got {dt.name}",
                                       op_name="RandomUniformInt")
        lo, hi = convert_to_tensor(minval, dtype=dt), convert_to_tensor(maxval, dtype=dt)
        if lo.shape.rank not in (0, None) or hi.shape.rank not in (0, None):
            raise InvalidArgumentError(f"RandomUniformInt: minval and maxval must be scalars, got shapes {lo.shape} "
                                       f"and {hi.shape}", op_name="RandomUniformInt")
        return execute(RANDOM_UNIFORM_INT, (s, lo, hi), {"state": _new_state(seed)}, name)
    dt = _float_dtype(dt, "RandomUniform")
    maxval = 1 if maxval is None else maxval
    x = execute(RANDOM_UNIFORM, (s,), {"dtype": dt, "state": _new_state(seed)}, name)
    if _is_const(minval, 0) and _is_const(maxval, 1):
        return x
    lo = minval if isinstance(minval, Tensor) else convert_to_tensor(minval, dtype=dt)
    hi = maxval if isinstance(maxval, Tensor) else convert_to_tensor(maxval, dtype=dt)
    return _affine(x, subtract(hi, lo), lo, dt, False, _is_const(minval, 0))

from ..namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
