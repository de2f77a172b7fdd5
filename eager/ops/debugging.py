"""The `debugging` namespace (`eager.debugging`): runtime checks as stateful ops.

`Assert(condition, data)` and `CheckNumerics` are stateful primitives, so in a
graph they run (and raise `InvalidArgumentError`) at every run instead of once
at trace time; eagerly they check immediately.  `assert_equal` is a composite
(`Assert(reduce_all(equal(x, y)), ...)`); `check_numerics` passes its input
through and has a gradient (the gradient is checked too, like TensorFlow).
Messages render their data with `logging.format_tensor`.  Eagerly the asserts
return None; in a graph they return the Operation (see `logging.run_effect`).

Imports: numpy, the eager core, `math`, `reduction`, `logging`.
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import op
from ._define import infer_same
from .logging import build_template, render, run_effect
from .math import equal
from .reduction import reduce_all

__all__ = ["Assert", "assert_equal", "check_numerics", "assert_all_finite"]


# ------------------------------------------------------------------ Assert
def _assert_kernel(cond, *data, template, summarize):
    if not np.all(cond):
        raise InvalidArgumentError("assertion failed: " + render(template, data, summarize, quote_strings=False),
                                   op_name="Assert")
    return ()


ASSERT = op("Assert", _assert_kernel, lambda specs, attrs: [], num_outputs=0, effect="write",
            doc="Raise InvalidArgumentError with the rendered data when the bool condition is not all True.")


def _bracketed(data):
    """Template pieces `[item] [item] ...`, tensors as slots (TensorFlow's Assert message layout)."""
    out = []
    for i, d in enumerate(data):
        out.extend((" [" if i else "[", d, "]"))
    return out


def Assert(condition, data, summarize=None, name=None):  # noqa: N802 - TensorFlow's name
    """Raise InvalidArgumentError listing `data` if `condition` (bool tensor) is not all True."""
    cond = convert_to_tensor(condition)
    if not cond.dtype.is_bool:
        raise InvalidArgumentError(f"Assert: condition must be a bool tensor, got {cond.dtype.name}",
                                   op_name="Assert")
    data = list(data) if isinstance(data, (list, tuple)) else [data]
    template, tensors = build_template(_bracketed(data), sep="")
    attrs = {"template": template, "summarize": 3 if summarize is None else int(summarize)}
    return run_effect(ASSERT, (cond, *tensors), attrs, name)


def assert_equal(x, y, message=None, summarize=None, name=None):
    """Assert that x == y elementwise (with broadcasting); raises InvalidArgumentError otherwise."""
    x = convert_to_tensor(x)
    y = convert_to_tensor(y, dtype=x.dtype) if not hasattr(y, "dtype") else convert_to_tensor(y)
    data = ([message] if message else []) + ["Condition x == y did not hold element-wise:",
                                             f"x (shape={x.shape} dtype={x.dtype.name}) = ", x,
                                             f"y (shape={y.shape} dtype={y.dtype.name}) = ", y]
    return Assert(reduce_all(equal(x, y)), data, summarize=summarize, name=name)


# ------------------------------------------------------------------ CheckNumerics
def _check_numerics_kernel(x, message):
    if x.size and not np.isfinite(x).all():
        nan, inf = bool(np.isnan(x).any()), bool(np.isinf(x).any())
        status = "Inf and NaN" if nan and inf else ("NaN" if nan else "Inf")
        raise InvalidArgumentError(f"{message} : Tensor had {status} values", op_name="CheckNumerics")
    return x


def _g_check_numerics(op, dy):
    return [check_numerics(dy, "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                           + op.get_attr("message"))]


CHECK_NUMERICS = op("CheckNumerics", _check_numerics_kernel, infer_same, _g_check_numerics, effect="write",
                    doc="Pass the input through; raise InvalidArgumentError naming `message` on NaN or Inf.")


def check_numerics(tensor, message, name=None):
    """Return `tensor`, raising InvalidArgumentError (with `message`) if it holds NaN or Inf."""
    t = convert_to_tensor(tensor)
    if not t.dtype.is_floating:
        raise InvalidArgumentError(f"CheckNumerics: tensor must be floating-point, got {t.dtype.name}",
                                   op_name="CheckNumerics")
    return execute(CHECK_NUMERICS, (t,), {"message": str(message)}, name)


def assert_all_finite(t, msg, name=None):
    """Alias of check_numerics (TensorFlow's `tf.debugging.assert_all_finite`)."""
    return check_numerics(t, msg, name)


from ..namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
