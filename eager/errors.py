"""Error types of graphjit, named and arranged as in TensorFlow.

`OpError` carries the op name (and, for graph runtime errors, where the user
created the op). Every subclass is also an instance of the Python built-in the
user would reach for (`InvalidArgumentError` is a `ValueError`), so plain
`except ValueError` keeps working.  Imports `eager.namespace` only.
"""
from __future__ import annotations

__all__ = ["OpError", "InvalidArgumentError", "NotFoundError", "FailedPreconditionError", "OutOfRangeError",
           "UnimplementedError", "UnavailableError", "DeadlineExceededError", "AbortedError",
           "OperatorNotAllowedInGraphError"]


class OpError(Exception):
    """Base of all errors raised by running an op."""

    def __init__(self, message: str, op_name: str | None = None):
        super().__init__(message)
        self.message = message
        self.op_name = op_name


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument of the wrong shape, dtype or value."""


class NotFoundError(OpError, LookupError):
    """A named thing (op, tensor, file) does not exist."""


class FailedPreconditionError(OpError, RuntimeError):
    """The system is not in a state to run the op (e.g. uninitialized variable)."""


class OutOfRangeError(OpError, IndexError):
    """An index or iteration went past its end."""


class UnimplementedError(OpError, NotImplementedError):
    """The operation is not supported."""


class UnavailableError(OpError, RuntimeError):
    """A task of a distributed session is gone (its process died or cannot be reached)."""


class DeadlineExceededError(OpError, TimeoutError):
    """A step did not finish before its deadline (`RunOptions.timeout_in_ms`)."""


class AbortedError(OpError, RuntimeError):
    """A step was aborted because another part of it failed."""


class OperatorNotAllowedInGraphError(TypeError):
    """A Python operation (bool, iteration) was used on a symbolic tensor."""


from .namespace import public_namespace as _public_namespace  # noqa: E402
_public_namespace(__name__)
