"""`FunctionType`: the parameters a concrete function was traced for, and binding a call to them.

A concrete function is one trace: each tensor leaf of the traced call became a
placeholder (a `TensorSpec` parameter), every other leaf was baked into the
graph (a `Literal[value]` parameter; a variable is captured by identity).
Calling it with a different Python value would silently return the traced
value's answer, so `bind` refuses it with TensorFlow's `TypeError` ("Can not
cast 3 to Literal[2]"), whether the value is passed by keyword or by position.
Omitted parameters take their traced value, as in TensorFlow.
"""
from __future__ import annotations

import inspect

import numpy as np

import eager as ek
from eager.tensor import Tensor

from eager.tensor_spec import TensorSpec

from .trace_type import component_specs, component_tensors, serves, tracing_type


class _Slot:
    """The k-th tensor input of the trace (in the concrete function's flat input order)."""

    __slots__ = ("index", "spec")

    def __init__(self, index, spec):
        self.index, self.spec = index, spec

    def __repr__(self):
        return repr(self.spec)


class _Fed:
    """An argument whose trace type passes tensors: inputs `index`..`index + n` of the trace."""

    __slots__ = ("index", "n", "value")

    def __init__(self, index, n, value):
        self.index, self.n, self.value = index, n, value


class Literal:
    """The type of a parameter fixed to one Python value at trace time (`Literal[2]`)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"Literal[{self.value!r}]"

    def accepts(self, x) -> bool:
        if getattr(self.value, "_is_variable", False):
            return x is self.value
        traced_type = tracing_type(self.value)
        if traced_type is not None:
            return serves(traced_type, x)
        try:
            return type(x) is type(self.value) and bool(x == self.value)
        except Exception:
            return False


def _annotation(value):
    """TensorSpec for a tensor leaf, Literal for a Python leaf, the same structure for nests."""
    if ek.nest.is_nested(value):
        return ek.nest.map_structure(_annotation, value)
    if isinstance(value, _Fed):
        return tracing_type(value.value)
    return value.spec if isinstance(value, _Slot) else Literal(value)


class FunctionType:
    """`ConcreteFunction.function_type`: one `inspect.Parameter` per parameter, annotated with its
    TensorSpec or `Literal[value]` (nested structures keep their shape)."""

    def __init__(self, name: str, signature: inspect.Signature, traced: dict):
        self._name = name
        self._signature = signature
        self._traced = traced            # parameter name -> traced value, tensor leaves as _Slot
        self.parameters = {
            n: p.replace(annotation=_annotation(traced[n]), default=inspect.Parameter.empty)
            for n, p in signature.parameters.items() if n in traced}

    @classmethod
    def from_trace(cls, name, python_function, traced_call):
        """From the traced call (`[args, kwargs]`, TensorSpecs in flat input order); None when the
        Python function has no signature to bind against."""
        marked = ek.nest.pack_sequence_as(traced_call, _mark_inputs(ek.nest.flatten(traced_call)))
        try:
            signature = inspect.signature(python_function)
            bound = signature.bind(*marked[0], **marked[1])
        except (TypeError, ValueError):
            return None
        bound.apply_defaults()
        return cls(name, signature, dict(bound.arguments))

    def bind(self, args, kwargs, n_inputs: int) -> list:
        """The concrete function's flat input tensors for this call; TypeError when a Python value differs
        from the traced one, a tensor does not fit its spec, or the structure differs."""
        try:
            given = self._signature.bind_partial(*args, **kwargs).arguments
        except TypeError as e:
            raise TypeError(f"{self._name}: {e}; signature: {self}") from None
        extra = [n for n in given if n not in self._traced]
        if extra:
            raise TypeError(f"{self._name}: unexpected argument {extra[0]!r}; signature: {self}")
        tensors = [None] * n_inputs
        for n, traced in self._traced.items():
            value = given.get(n, traced)
            t_flat = ek.nest.flatten(traced)
            if not ek.nest.same_structure(ek.nest.lists_for_sequences(traced),
                                          ek.nest.lists_for_sequences(value)) and ek.nest.is_nested(traced):
                raise TypeError(self._failure(n, f"the structure of {value!r:.80} differs from the traced "
                                                 f"{_annotation(traced)!r:.120}", args, kwargs))
            v_flat = ek.nest.flatten(value) if ek.nest.is_nested(traced) else [value]
            for t, v in zip(t_flat, v_flat):
                if isinstance(t, _Slot):
                    if isinstance(v, _Slot):
                        raise TypeError(self._failure(n, f"missing tensor for {t.spec!r}", args, kwargs))
                    tensors[t.index] = self._tensor_for(n, t.spec, v, args, kwargs)
                elif isinstance(t, _Fed):
                    if not Literal(t.value).accepts(v):
                        raise TypeError(self._failure(n, f"{v!r:.60} does not fit {_annotation(t)!r:.80}", args,
                                                      kwargs))
                    tensors[t.index:t.index + t.n] = component_tensors(v)
                elif not isinstance(v, _Slot) and not Literal(t).accepts(v):
                    raise TypeError(self._failure(n, f"Can not cast {v!r:.60} to {Literal(t)!r:.80}", args, kwargs))
        return tensors

    def _tensor_for(self, name, spec, v, args, kwargs):
        if isinstance(v, TensorSpec) or not isinstance(v, (Tensor, np.ndarray, np.generic, int, float, bool,
                                                           list, tuple)):
            raise TypeError(self._failure(name, f"expected a tensor for {spec!r}, got {type(v).__name__}",
                                          args, kwargs))
        python_value = isinstance(v, (int, float, bool, list, tuple))      # takes the spec's dtype
        t = ek.convert_to_tensor(v, spec.dtype) if python_value else ek.convert_to_tensor(v)
        if not spec.is_compatible_with(t):
            raise TypeError(self._failure(name, f"argument {t.dtype.name}{t.shape} is not compatible with "
                                                f"{spec!r}", args, kwargs))
        return t

    def _failure(self, name, why, args, kwargs) -> str:
        got = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
        return (f"{self._name}: binding inputs to the concrete function failed at parameter {name!r}: {why}. "
                f"Received ({got}) for signature {self}. A concrete function runs only the call it was "
                f"traced for; call the Function itself (it traces a new graph for a new Python value), or "
                f"get a concrete function for this value.")

    def __str__(self):
        return "(" + ", ".join(f"{n}: {p.annotation!r}" for n, p in self.parameters.items()) + ")"

    __repr__ = __str__


def _mark_inputs(flat) -> list:
    """The traced call's leaves with each input's place: `_Slot` for a tensor, `_Fed` for an argument whose
    trace type passes tensors (in the concrete function's input order)."""
    marked, k = [], 0
    for x in flat:
        if isinstance(x, TensorSpec):
            marked.append(_Slot(k, x))
            k += 1
            continue
        tt = tracing_type(x)
        n = len(component_specs(tt)) if tt is not None else 0
        marked.append(_Fed(k, n, x) if n else x)
        k += n
    return marked


def _short(x) -> str:
    if isinstance(x, Tensor):
        return f"<tensor {x.dtype.name}{x.shape}>"
    return f"{x!r:.40}"
