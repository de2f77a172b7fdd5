"""The single dispatch point: every op goes through `execute`.

`execute(opdef, inputs, attrs, name)` asks the context on top of the stack:
the eager context runs the NumPy kernel now and wraps the result; any other
context (graph building) receives `ctx.add_op(...)` and returns symbolic
tensors.  Afterwards, active gradient tapes record the op.  This function is the
eager hot path: keep it short.  Inputs must already be Tensors (op wrappers
convert Python values first).
"""
from __future__ import annotations

import numpy as np

from . import context as _context
from .errors import InvalidArgumentError, OpError
from .tensor import Tensor
from . import tape_state as _tape_state

_ctx_state = _context._state
_tapes = _tape_state.active_tapes


def execute(opdef, inputs, attrs, name=None):
    """Run or stage one op; returns a Tensor, or a tuple for multi-output ops."""
    ctx = _ctx_state.stack[-1]
    if ctx.is_eager:
        result = _run_eager(opdef, inputs, attrs)
    else:
        result = ctx.add_op(opdef, inputs, attrs, name)
    if _tapes() and opdef.differentiable:
        _tape_state.record(opdef, inputs, attrs, result)
    return result


def _run_eager(opdef, inputs, attrs):
    try:
        out = opdef.kernel(*[t._value for t in inputs], **attrs)
    except AttributeError as e:
        if any(t._is_symbolic for t in inputs):
            raise _symbolic_in_eager(opdef, inputs) from None
        raise
    except OpError:
        raise
    except (ValueError, TypeError, IndexError, np.linalg.LinAlgError) as e:
        raise kernel_error(opdef, inputs, attrs, e) from None
    if opdef.num_outputs == 1:
        return Tensor(out)
    return tuple(Tensor(o) for o in out)


def describe_inputs(inputs) -> str:
    parts = []
    for t in inputs:
        try:
            parts.append(f"{t.dtype.name}{list(t.shape.dims) if t.shape.dims is not None else '[?]'}")
        except Exception:  # pragma: no cover - description must never fail
            parts.append(repr(t))
    return ", ".join(parts)


def kernel_error(opdef, inputs, attrs, exc) -> InvalidArgumentError:
    """Turn a NumPy exception inside a kernel into an error naming op, shapes and dtypes."""
    return InvalidArgumentError(
        f"{opdef.name}: {exc} (inputs: {describe_inputs(inputs)})", op_name=opdef.name)


def _symbolic_in_eager(opdef, inputs):
    return InvalidArgumentError(
        f"{opdef.name}: a symbolic graph tensor was passed to an op running eagerly "
        f"(inputs: {describe_inputs(inputs)}). Graph tensors can only be used while building their graph.",
        op_name=opdef.name)
