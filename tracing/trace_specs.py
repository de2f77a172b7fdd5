"""The specs a new trace is built for, when they are not the call's own exact shapes.

`specs_from_signature`: with an `input_signature`, the call must fit it (same structure, every tensor
compatible with its spec) and the trace uses the signature's specs.  `relaxed_specs`: with
`reduce_retracing`, every dimension that differs from the closest earlier trace becomes None (and a
changed rank gives an unknown shape), as TF's `reduce_retracing` relaxes shapes.  Imports eager and
`explain`.
"""
from __future__ import annotations

import eager as ek
from eager.tensor_spec import TensorSpec

from . import explain


def as_spec(a) -> TensorSpec:
    """`a` if it is a TensorSpec, else the spec of the array or tensor `a`."""
    if isinstance(a, TensorSpec):
        return a
    return TensorSpec(tuple(a.shape), ek.as_dtype(a.dtype))


def specs_from_signature(name, sig, args, kwargs, mismatch):
    """The flat specs of `sig` for this call of function `name`; TypeError(`mismatch(args, kwargs)`) unless
    the call fits."""
    if kwargs or len(args) != len(sig):
        raise TypeError(f"{name}: called with {len(args)} positional and {len(kwargs)} keyword "
                        f"arguments, but input_signature has {len(sig)} entries")
    flat_specs = ek.nest.flatten(list(sig))
    flat_args = ek.nest.flatten(list(args))
    if len(flat_specs) != len(flat_args) or not ek.nest.same_structure(
            [ek.nest.lists_for_sequences(a) for a in args], [ek.nest.lists_for_sequences(s) for s in sig]):
        raise TypeError(mismatch(args, kwargs))
    for spec, a in zip(flat_specs, flat_args):
        if not (isinstance(a, ek.Tensor) or hasattr(a, "shape")) or \
                not spec.is_compatible_with(as_spec(a)):
            raise TypeError(mismatch(args, kwargs))
    return flat_specs


def relaxed_specs(signatures, infos):
    """reduce_retracing: generalize differing dims to None against the closest trace."""
    idx, _ = explain.closest(signatures, infos)
    old = {a.path: a for a in signatures[idx]}
    specs = []
    for a in infos:
        if a.kind != "tensor":
            continue
        b = old.get(a.path)
        spec = a.spec
        if b is not None and b.kind == "tensor":
            spec = a.spec.most_specific_common_supertype(b.spec) or a.spec
            if spec.shape.rank is None and a.spec.shape.rank != b.spec.shape.rank:
                spec = TensorSpec(None, a.spec.dtype)
        specs.append(spec)
    return specs
