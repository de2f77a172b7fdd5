"""Errors raised while a graph runs: name the op, its type and where the user created it.

`op_error(op, exc)` returns the exception to raise for `exc` raised by `op`'s
kernel: the same class for `OpError`s (InvalidArgumentError stays
InvalidArgumentError, FailedPreconditionError stays FailedPreconditionError),
`InvalidArgumentError` for the NumPy exceptions a kernel raises on bad input
(ValueError, TypeError, IndexError, ArithmeticError, LinAlgError), with the
message prefixed by "while running op `dense/MatMul` (MatMul, created at
model.py:12): ".  Other exception types are re-raised unchanged with that text
added as a note.  The new exception carries `.op` (the Operation) and
`.op_name`.

Imports `numpy` and `eager` only.
"""
from __future__ import annotations

import numpy as np

from eager.errors import InvalidArgumentError, OpError

_KERNEL_ERRORS = (ValueError, TypeError, IndexError, ArithmeticError, np.linalg.LinAlgError)


def op_error(op, exc: BaseException) -> BaseException:
    """The exception to raise for `exc` raised while running `op` (see module docstring)."""
    if getattr(exc, "_graphjit_op", None) is op:
        return exc
    prefix = f"while running op {op.describe()}: "
    if isinstance(exc, OpError):
        cls, msg = type(exc), exc.message
    elif isinstance(exc, _KERNEL_ERRORS) and not isinstance(exc, FloatingPointError):
        # (np.errstate's "raise" is not an op error: it goes up as it is, to the plan that reruns quietly)
        cls, msg = InvalidArgumentError, f"{op.type}: {exc}"
    else:
        try:
            exc.add_note(prefix.rstrip(": "))
        except AttributeError:  # pragma: no cover - exceptions always have add_note on 3.11+
            pass
        return exc
    try:
        new = cls(prefix + msg, op_name=op.name)
    except TypeError:  # a subclass with a different constructor
        new = InvalidArgumentError(prefix + msg, op_name=op.name)
    new.op = op
    new._graphjit_op = op
    return new


def feed_error(tensor, message: str) -> InvalidArgumentError:
    """A feed that does not fit its placeholder: names the tensor and where it was created."""
    loc = tensor.op.location
    where = f" (created at {loc})" if loc is not None else ""
    e = InvalidArgumentError(f"{message}{where}", op_name=tensor.op.name)
    e.op = tensor.op
    return e
