"""Cache keys for traced functions, and readable per-argument signatures.

`call_key(args, kwargs)` is on the hot path of every call: one pass over the
arguments building a hashable tuple.  Per leaf: an eager tensor or ndarray ->
(shape, numpy dtype); a symbolic tensor -> (dims, DType); a Variable -> its
identity (variables are captured by reference, so a different variable is a
different graph); a Python scalar/str/None -> (type, value), so `1`, `1.0`
and `True` are different keys (unlike TensorFlow); lists/tuples/dicts/
namedtuples -> structural (dict key order ignored, list != tuple); other
hashable objects -> the object itself (identity for plain objects); an object
whose class defines `__tf_tracing_type__` -> the trace type it returns
(trace_type.py).
Unhashable leaves raise TypeError naming the argument.

`cast_to_signature(fn_name, signature, args, names)` converts the Python
values and NumPy arrays of a call to tensors of the `input_signature` dtypes,
with the rule `Session.run` feeds use (`eager.convert.convert_to_dtype`); a
tensor of another dtype raises TypeError naming the argument.

`describe(args, kwargs, names)` gives the slow, readable form used when a trace
happens: a list of `ArgInfo(path, kind, spec_or_value)` leaves used by the
retrace explanations.
"""
from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np

import eager as ek
from eager.convert import convert_to_dtype
from eager.tensor import Tensor

from eager.tensor_spec import TensorSpec

from .trace_type import tracing_type

_SCALARS = (int, float, bool, str, bytes, type(None), complex)


def _leaf_key(x):
    t = type(x)
    if t is Tensor:
        v = x._value
        return (v.shape, v.dtype)
    if t in _SCALARS:
        return (t, x)
    if t is list:
        return ("L",) + tuple([_leaf_key(c) for c in x])
    if t is tuple:
        return ("T",) + tuple([_leaf_key(c) for c in x])
    if t is dict:
        return ("D",) + tuple(sorted(((k, _leaf_key(v)) for k, v in x.items()), key=lambda kv: repr(kv[0])))
    if isinstance(x, Tensor):  # symbolic: calling a function while tracing another
        return ("S", x.shape.dims, x.dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return (x.shape, x.dtype)
    if getattr(x, "_is_variable", False):
        return ("V", id(x))
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return ("N", t) + tuple([_leaf_key(c) for c in x])
    if isinstance(x, TensorSpec):
        return ("S", x.shape.dims, x.dtype)
    tt = tracing_type(x)
    if tt is not None:
        return ("TT", tt)
    try:
        hash(x)
    except TypeError:
        raise TypeError(f"cannot use an unhashable {t.__name__} ({x!r:.60}) as an argument of a traced function: "
                        f"its value would be part of the trace cache key. Pass a tensor, a tuple, or a "
                        f"hashable value instead") from None
    return ("O", x)


def call_key(args: tuple, kwargs: dict):
    """Hashable key for a call (fast path)."""
    if not kwargs and len(args) == 1 and type(args[0]) is Tensor:      # the commonest call: one tensor
        v = args[0]._value
        return ((v.shape, v.dtype),)
    # a tensor's key inline (what `_leaf_key` returns for it): most calls pass tensors only
    key = tuple([(a._value.shape, a._value.dtype) if type(a) is Tensor else _leaf_key(a) for a in args])
    if kwargs:
        return key, tuple(sorted((k, _leaf_key(v)) for k, v in kwargs.items()))
    return key


class _Mismatch(Exception):
    pass


def cast_to_signature(fn_name: str, signature: tuple, args: tuple, names: list[str]) -> tuple:
    """`args` with every non-tensor leaf converted to its TensorSpec's dtype (see module docstring).

    The arguments are matched against the signature's structure down to its
    TensorSpecs, so a nested list is one value for a `TensorSpec([None, 3])`.
    Arguments whose structure does not match are returned as they are: the
    caller's signature check reports the mismatch.
    """
    if len(args) != len(signature):
        return args
    for a, s in zip(args, signature):
        if type(a) is not Tensor or type(s) is not TensorSpec or a._value.dtype != s._dtype.np_dtype:
            break
    else:
        return args                                  # the common case: tensors of the declared dtypes
    try:
        return tuple(_cast_up_to(fn_name, s, a, names[i] if i < len(names) else f"args[{i}]")
                     for i, (s, a) in enumerate(zip(signature, args)))
    except _Mismatch:
        return args


def _cast_up_to(fn_name, spec, value, path):
    if isinstance(spec, TensorSpec):
        if isinstance(value, TensorSpec) or (isinstance(value, Tensor) and (
                value._is_symbolic or value.dtype is spec.dtype)):
            return value
        return Tensor(convert_to_dtype(value, spec.dtype, f"{fn_name}: argument {path} (input_signature {spec})"))
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise _Mismatch
        return type(value)({k: _cast_up_to(fn_name, spec[k], v, f"{path}[{k!r}]") for k, v in value.items()})
    if not isinstance(value, (list, tuple)) or len(value) != len(spec):
        raise _Mismatch
    fields = getattr(value, "_fields", None)
    items = [_cast_up_to(fn_name, s, v, f"{path}.{fields[i]}" if fields else f"{path}[{i}]")
             for i, (s, v) in enumerate(zip(spec, value))]
    return type(value)(*items) if fields else type(value)(items)


@dataclass(frozen=True)
class ArgInfo:
    """One leaf of a call signature: where it is, what kind, and its spec or value."""

    path: str
    kind: str          # "tensor" | "variable" | "python" | "trace type" (its __tf_tracing_type__) | "object"
    spec: Any          # TensorSpec for tensors/variables, the value for python leaves

    def describe(self) -> str:
        if self.kind == "tensor":
            return self.spec.short()
        if self.kind == "variable":
            return f"variable {self.spec.name}"
        if self.kind == "python":
            return f"Python {type(self.spec).__name__} {self.spec!r}"
        if self.kind == "trace type":
            r = repr(self.spec)
            return f"trace type {r if len(r) <= 60 else r[:57] + '...'}"
        if isinstance(self.spec, enum.Enum):
            return str(self.spec)
        if keyed_by_value(self.spec):
            r = repr(self.spec)
            return f"{type(self.spec).__name__} {r if len(r) <= 60 else r[:57] + '...'}"
        return f"{type(self.spec).__name__} object at {id(self.spec):#x}"


def describe(args: tuple, kwargs: dict, names: list[str]) -> tuple[list[ArgInfo], str]:
    """Readable leaves of a call, plus a structure string (for 'structure changed' messages)."""
    named = {}
    for i, a in enumerate(args):
        named[names[i] if i < len(names) else f"args[{i}]"] = a
    named.update(kwargs)
    leaves = []
    for top, value in named.items():
        for path, leaf in ek.nest.flatten_with_paths(value, top):
            leaves.append(_info(path, leaf))
    return leaves, ek.nest.structure_repr(list(named.values())) + " keys=" + ",".join(named)


def keyed_by_value(x) -> bool:
    """Is `x` (a non-scalar argument) keyed by its value (enum member, hashable with its own __eq__)?"""
    t = type(x)
    return isinstance(x, enum.Enum) or (t.__eq__ is not object.__eq__ and t.__hash__ is not None)


def _info(path, leaf) -> ArgInfo:
    if isinstance(leaf, (Tensor, np.ndarray, np.generic)):
        return ArgInfo(path, "tensor", TensorSpec(leaf.shape if isinstance(leaf, Tensor) else np.shape(leaf),
                                                  ek.as_dtype(leaf.dtype)))
    if isinstance(leaf, TensorSpec):
        return ArgInfo(path, "tensor", leaf)
    if getattr(leaf, "_is_variable", False):
        return ArgInfo(path, "variable", leaf)
    if isinstance(leaf, _SCALARS):
        return ArgInfo(path, "python", leaf)
    tt = tracing_type(leaf)
    if tt is not None:
        return ArgInfo(path, "trace type", tt)
    return ArgInfo(path, "object", leaf)


def parameters(python_function):
    """(positional parameter names, their defaults, the positional-only ones, keyword-only defaults)."""
    try:
        params = list(inspect.signature(python_function).parameters.values())
    except (TypeError, ValueError):
        return [], {}, frozenset(), {}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return ([p.name for p in positional],
            {p.name: p.default for p in positional if p.default is not p.empty},
            frozenset(p.name for p in positional if p.kind is p.POSITIONAL_ONLY),
            {p.name: p.default for p in params if p.kind is p.KEYWORD_ONLY and p.default is not p.empty})
