"""`py_function(func, inp, Tout)`: run a Python function on tensor values, eagerly or as a graph op.

Eagerly, `func` is called now with the eager tensors (a recording tape sees
the ops inside, so gradients flow through it as in TF).  In a graph (a
traced function or a Session graph) it becomes the stateful op
`EagerPyFunc`, whose kernel calls `func` with eager tensors at every run, in
program order; its outputs have the dtypes `Tout` and unknown shapes, and no
gradient.  `func` is Python code held by the graph: a GraphDef or saved
function cannot carry it (export refuses it), and nothing read from a file
ever becomes one.  Imports the eager core only.
"""
from __future__ import annotations

import numpy as np

from .. import context as _context
from ..convert import convert_to_tensor
from ..dispatch import execute
from ..dtypes import as_dtype
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor

__all__ = ["py_function"]


def _results(func, out, Tout) -> list:
    """`func`'s result as one tensor per entry of Tout, checked."""
    values = list(out) if isinstance(out, (list, tuple)) else ([] if out is None else [out])
    if len(values) != len(Tout):
        raise InvalidArgumentError(f"py_function: {_name(func)} returned {len(values)} value(s) but Tout lists "
                                   f"{len(Tout)}", op_name="EagerPyFunc")
    tensors = []
    for i, (v, dt) in enumerate(zip(values, Tout)):
        t = convert_to_tensor(v, dt) if not isinstance(v, Tensor) else v
        if t.dtype is not dt:
            raise InvalidArgumentError(f"py_function: output {i} of {_name(func)} is {t.dtype.name}, but Tout says "
                                       f"{dt.name}", op_name="EagerPyFunc")
        tensors.append(t)
    return tensors


def _name(func) -> str:
    return getattr(func, "__qualname__", None) or type(func).__name__


def _kernel(*arrays, func, Tout):
    with _context.init_scope():        # the Python function always runs eagerly, whatever this thread builds
        out = func(*[Tensor(np.asarray(a)) for a in arrays])
        values = tuple(t._value for t in _results(func, out, Tout))      # the plan's own values: no copy
    # a compiled plan stores a lone output as the value itself (only graphs run this kernel: eagerly,
    # py_function calls func directly)
    return values[0] if len(values) == 1 else values


PY_FUNCTION = op("EagerPyFunc", _kernel, lambda specs, attrs: [Spec(None, dt) for dt in attrs["Tout"]],
                 num_outputs=-1, effect="write")


def py_function(func, inp, Tout, name=None):
    """Call `func(*inp)` on tensor values (see the module docstring); one tensor per `Tout` entry, or a
    single tensor when `Tout` is a single dtype."""
    if not callable(func):
        raise TypeError(f"py_function: func must be callable, got {type(func).__name__}")
    single = not isinstance(Tout, (list, tuple))
    touts = (as_dtype(Tout),) if single else tuple(as_dtype(t) for t in Tout)
    inputs = [convert_to_tensor(x) for x in inp]
    if _context.executing_eagerly():
        outs = _results(func, func(*inputs), touts)
    else:
        outs = list(execute(PY_FUNCTION, inputs, {"func": func, "Tout": touts}, name))
    return outs[0] if single else outs
