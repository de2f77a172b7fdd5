"""Undefined markers for names not (yet) defined, and the return-value helper.

`Undefined('y')` stands for a name that a branch or loop may define.  Any use
of it raises an error naming the variable (Python would raise
UnboundLocalError at the read).  `UndefinedReturnValue` marks "no return
executed yet"; `retval` turns it into None at the end of a function.
`ldu`/`set_item`/`set_attr` read and write the composite state of staged
constructs for the get/set functions the control-flow converter generates.
"""
from __future__ import annotations

from .. import errors
from . import _tensors


class Undefined:
    """Placeholder for the variable `symbol_name`, not defined on this path."""

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str):
        object.__setattr__(self, "symbol_name", symbol_name)

    def _fail(self, *args, **kwargs):
        raise UnboundLocalError(
            f"'{self.symbol_name}' is used before assignment "
            "(it is only assigned on some paths through the code)")

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        self._fail()

    def __repr__(self) -> str:
        return f"Undefined({self.symbol_name!r})"

    __call__ = __bool__ = __iter__ = __len__ = __getitem__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __mod__ = __pow__ = __neg__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __matmul__ = __rmatmul__ = __index__ = _fail
    __int__ = __float__ = _fail


class UndefinedReturnValue:
    """No `return` has executed yet (the function would return None)."""

    def __repr__(self) -> str:
        return "UndefinedReturnValue()"


def retval(value, do_return=True):
    """The function's return value: None when no return statement ran."""
    if _tensors.is_symbolic(do_return):     # looked up per call: tests simulate staging by patching it
        raise errors.staged_return_error()
    if isinstance(value, UndefinedReturnValue) or not do_return:
        return None
    return value


def is_undefined(x) -> bool:
    return isinstance(x, (Undefined, UndefinedReturnValue))


# --- composite state (`x['b']`, `obj.attr`) of staged constructs -------------
def ldu(load, name: str):
    """`load()`, or `Undefined(name)` when the key, index or attribute is missing."""
    try:
        return load()
    except (KeyError, IndexError, AttributeError, NameError):  # NameError: base unbound
        return Undefined(name)


def set_item(target, key, value) -> None:
    """`target[key] = value`; an undefined value removes the key (if present)."""
    if is_undefined(target):
        return
    if not is_undefined(value):
        target[key] = value
    elif isinstance(target, dict) and key in target:
        del target[key]


def set_attr(target, name: str, value) -> None:
    """`setattr(target, name, value)`; an undefined value removes the attribute."""
    if is_undefined(target):
        return
    if not is_undefined(value):
        setattr(target, name, value)
    elif hasattr(target, name):
        delattr(target, name)
