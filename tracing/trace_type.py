"""The `__tf_tracing_type__` protocol: a user's class defines its own retrace key.

An argument whose class defines `__tf_tracing_type__(self, context)` is keyed
by the object that method returns (a `TraceType`: hashable, with `__eq__`),
instead of by identity: two instances with equal trace types share one trace,
as in TensorFlow's tracing protocol.  A cached trace also serves an argument
whose trace type `is_subtype_of` the traced one.  The function is traced with
the argument itself (or the trace type's `placeholder_value()` when it defines
one and returns something), so what the graph bakes in is the first such
argument's state: the trace type must capture every part of the object that
changes the graph.  `context` is None here (TF passes a tracing context that
graphjit has no use for).

A trace type may also pass tensors into the graph, as TF's does: `flatten()`
lists their TensorSpecs, `to_tensors(value)` gives them for an argument at
every call, and `from_tensors(iterator)` rebuilds the traced value from the
placeholders made for them.  Then the graph reads the argument's current
tensors, not the first one's state (how `eager.data` passes a dataset: its
`DatasetSpec` flattens to one handle).
"""
from __future__ import annotations


class TraceType:
    """Base class for a user-defined trace type (`tf.types.experimental.TraceType`).

    Subclasses define `__eq__` and `__hash__` (the cache key), and may refine
    `is_subtype_of(other)` (may a trace made for `other` serve this?) and
    `most_specific_common_supertype(others)`; `placeholder_value(context)`
    returns the value the function is traced with (default: the argument).
    """

    def is_subtype_of(self, other) -> bool:
        return self == other

    def most_specific_common_supertype(self, others):
        return self if all(self == o for o in others) else None

    def placeholder_value(self, placeholder_context=None):
        return None

    def flatten(self) -> list:
        """The TensorSpecs of the tensors `to_tensors` gives (none by default)."""
        return []

    def to_tensors(self, value) -> list:
        return []

    def from_tensors(self, tensors):
        return self.placeholder_value()

    def __eq__(self, other):
        raise NotImplementedError(f"{type(self).__name__} must define __eq__ (it is part of a trace cache key)")

    def __hash__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __hash__ (it is part of a trace cache key)")


def tracing_type(x):
    """`x`'s own trace type (the `__tf_tracing_type__` protocol), or None when its class has none."""
    method = getattr(type(x), "__tf_tracing_type__", None)
    if method is None:
        return None
    tt = method(x, None)
    try:
        hash(tt)
    except TypeError:
        raise TypeError(f"{type(x).__name__}.__tf_tracing_type__ returned an unhashable "
                        f"{type(tt).__name__}: a trace type is part of the trace cache key and must define "
                        f"__hash__ and __eq__") from None
    return tt


def serves(traced_type, x) -> bool:
    """May a trace made for an argument of trace type `traced_type` be used for argument `x`?"""
    tt = tracing_type(x)
    if tt is None:
        return False
    subtype = getattr(tt, "is_subtype_of", None)
    return bool(subtype(traced_type)) if subtype is not None else tt == traced_type


def placeholder_value(x):
    """What the function is traced with for argument `x`: its trace type's `placeholder_value()` when that
    returns something, else `x` itself."""
    tt = tracing_type(x)
    make = getattr(tt, "placeholder_value", None)
    value = make(None) if make is not None else None
    return x if value is None else value


def component_specs(tt) -> list:
    """The TensorSpecs of the tensors an argument of trace type `tt` passes into the graph (its `flatten()`)."""
    flatten = getattr(tt, "flatten", None)
    if flatten is None or getattr(tt, "to_tensors", None) is None or getattr(tt, "from_tensors", None) is None:
        return []
    return list(flatten())


def component_tensors(x) -> list:
    """The tensors argument `x` feeds the graph at a call (its trace type's `to_tensors`), checked."""
    tt = tracing_type(x)
    specs = component_specs(tt)
    tensors = list(tt.to_tensors(x))
    if len(tensors) != len(specs):
        raise TypeError(f"{type(tt).__name__}.to_tensors gave {len(tensors)} tensors for {len(specs)} specs "
                        f"of its flatten()")
    return tensors


def component_arrays(x) -> list:
    """The arrays of `component_tensors(x)`."""
    return [t._value for t in component_tensors(x)]
