"""Nested structures of branch outputs and loop variables: flattening, conversion and checks.

Leaves of a structure (tf.nest conventions, `eager.nest`) may be tensors,
variables (read), Python/NumPy constants (converted to tensors in the body
graph), or *composites*: objects with a method
`_cf_flatten() -> (list_of_tensors, rebuild)` where `rebuild(tensors)` makes
a new object of the same kind from tensors of the same dtypes (e.g. a
TensorArray as a loop variable).  `None` is rejected with a message naming the
leaf.

Every check names the value by its path in the structure (`output[1]['h']`,
`loop_vars[0]`), what it was on each side and how to fix it:

- branches: different structure -> ValueError; different dtype -> TypeError;
  shapes merge to the most specific compatible shape (dims that differ become
  unknown); different ranks -> ValueError.
- loops: structure -> ValueError, dtype -> TypeError, a shape that does not fit
  the loop variable's shape invariant (by default its shape before the loop)
  -> ValueError naming `shape_invariants` / `set_loop_options`.

Used by `staged_control_flow` (graph mode of cond/while_loop/switch_case).  Imports `eager` siblings only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from . import nest
from .convert import convert_to_tensor
from .shape import TensorShape
from .tensor import Tensor


@dataclass
class Flat:
    """A structure flattened to tensors: `tensors` (one per component), `paths`, and how to rebuild it."""

    structure: Any                # the structure with composite leaves kept whole
    tensors: list
    paths: list                   # path of the leaf each tensor comes from
    rebuilders: list              # per structure leaf: (n_components, rebuild or None)

    def pack(self, tensors):
        """The structure with its leaves replaced by (groups of) `tensors`."""
        it = iter(tensors)
        leaves = []
        for n, rebuild in self.rebuilders:
            comps = [next(it) for _ in range(n)]
            leaves.append(rebuild(comps) if rebuild is not None else comps[0])
        return nest.pack_sequence_as(self.structure, leaves)


def flatten(structure, prefix: str, convert: bool = True, like: Optional[list] = None) -> Flat:
    """Flatten `structure` to tensors (converting constants and variables when `convert`).

    `like` (optional, one tensor per leaf): Python numbers take that tensor's dtype.
    """
    tensors, paths, rebuilders = [], [], []
    leaves = nest.flatten_with_paths(structure, prefix)
    if like is not None and len(like) != len(leaves):
        like = None
    for k, (path, leaf) in enumerate(leaves):
        comp = getattr(leaf, "_cf_flatten", None)
        if comp is not None and not isinstance(leaf, Tensor):
            parts, rebuild = comp()
            tensors.extend(parts)
            paths.extend(f"{path}<{i}>" for i in range(len(parts)))
            rebuilders.append((len(parts), rebuild))
            continue
        if leaf is None:
            raise ValueError(f"'{path}' is None: control-flow values must be tensors (or Python numbers, "
                             f"NumPy arrays, variables, nested lists/tuples/dicts of them)")
        if convert and not isinstance(leaf, Tensor):
            try:
                hint = like[k].dtype if like is not None and isinstance(like[k], Tensor) else None
                leaf = convert_to_tensor(leaf, dtype_hint=hint)
            except (TypeError, ValueError) as e:
                raise TypeError(f"'{path}' is a {type(leaf).__name__} ({leaf!r}), which cannot be converted "
                                f"to a tensor: {e}") from None
        tensors.append(leaf)
        paths.append(path)
        rebuilders.append((1, None))
    return Flat(structure, tensors, paths, rebuilders)


def same_structure(a, b, loose_sequences: bool = False) -> bool:
    """`nest.same_structure`, optionally treating lists and tuples alike (loop bodies may switch)."""
    if loose_sequences:
        a, b = nest.lists_for_sequences(a), nest.lists_for_sequences(b)
    return nest.same_structure(a, b)




def describe(x) -> str:
    """`float32 tensor of shape (2,)`, `a Python int`, ... for messages."""
    if isinstance(x, Tensor):
        return f"a {x.dtype.name} tensor of shape {x.shape}"
    if getattr(x, "_is_variable", False):
        return f"a {x.dtype.name} variable of shape {x.shape}"
    return f"a {type(x).__name__}"


def fmt_shape(shape: TensorShape) -> str:
    return "<unknown>" if shape.dims is None else str(tuple(shape.dims))


# ------------------------------------------------------------------ branches
def merge_branch_outputs(flats: list, labels: list) -> list:
    """Check the branches agree and return the merged `(dtype, TensorShape)` of each output tensor."""
    first = flats[0]
    for f, label in zip(flats[1:], labels[1:]):
        if not same_structure(first.structure, f.structure) or len(f.tensors) != len(first.tensors):
            raise ValueError(f"branch outputs must have the same nested structure: {labels[0]} returns "
                             f"{nest.structure_repr(first.structure)} but {label} returns "
                             f"{nest.structure_repr(f.structure)}. Return the same structure (same "
                             f"containers, same keys, same number of values) from every branch")
    specs = []
    for i, path in enumerate(first.paths):
        t0 = first.tensors[i]
        dtype, shape = t0.dtype, t0.shape
        for f, label in zip(flats[1:], labels[1:]):
            t = f.tensors[i]
            if t.dtype is not dtype:
                raise TypeError(f"'{path}' has dtype {dtype.name} in {labels[0]}, but dtype {t.dtype.name} "
                                f"in {label}: every branch must return the same dtype (use cast)")
            if shape.rank is not None and t.shape.rank is not None and shape.rank != t.shape.rank:
                raise ValueError(f"'{path}' has shape {fmt_shape(t0.shape)} in {labels[0]}, but shape "
                                 f"{fmt_shape(t.shape)} in {label}: the ranks differ, so no single "
                                 f"shape describes both; reshape one branch's value to the other's rank")
            shape = shape.most_specific_compatible_shape(t.shape)
        specs.append((dtype, shape))
    return specs


# ------------------------------------------------------------------ loops
def flatten_up_to(structure, shallow, what: str) -> list:
    """One entry of `shallow` per leaf of `structure` (leaves of `structure` take a whole subtree)."""
    out = []
    stack = [(structure, shallow, what)]
    while stack:
        s, o, path = stack.pop()
        if nest.is_nested(s) and getattr(s, "_cf_flatten", None) is None:
            if isinstance(s, dict):
                if not isinstance(o, dict) or set(o) != set(s):
                    raise ValueError(f"shape_invariants: {path} must be a dict with keys {sorted(s)} like "
                                     f"loop_vars, got {o!r}")
                keys = nest.sorted_keys(s)
                stack.extend(reversed([(s[k], o[k], f"{path}[{k!r}]") for k in keys]))
            else:
                if not isinstance(o, (list, tuple)) or len(o) != len(s):
                    raise ValueError(f"shape_invariants: {path} must have the structure of loop_vars "
                                     f"({nest.structure_repr(s)}), got {o!r}")
                stack.extend(reversed([(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(s, o))]))
        else:
            out.append(o)
    return out


def as_invariant(x, path: str) -> Optional[TensorShape]:
    if x is None:
        return None
    if isinstance(x, TensorShape):
        return x
    try:
        return TensorShape(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"shape_invariants: the entry for '{path}' must be a TensorShape, a list/tuple of ints "
                        f"and None, or None; got {x!r} ({e})") from None


def shape_fits(invariant: TensorShape, shape: TensorShape) -> bool:
    """True when `shape` is at least as specific as `invariant` (TensorFlow's rule for loop outputs)."""
    if invariant.dims is None:
        return True
    if shape.dims is None or len(shape.dims) != len(invariant.dims):
        return False
    return all(a is None or a == b for a, b in zip(invariant.dims, shape.dims))


def check_invariant_fits_initial(path: str, invariant: TensorShape, initial: TensorShape) -> None:
    if not invariant.is_compatible_with(initial) or not shape_fits(invariant, initial):
        raise ValueError(f"'{path}' has shape {fmt_shape(initial)} before the loop, which does not fit its shape "
                         f"invariant {fmt_shape(invariant)}; the invariant must be compatible with the initial "
                         f"value (use None for dimensions that change)")


def check_loop_outputs(before: Flat, after: Flat, inputs: list, invariants: list) -> None:
    """The body's results against the loop variables: structure, dtype, shape (see the module docstring)."""
    if not same_structure(before.structure, after.structure, loose_sequences=True) or \
            len(before.tensors) != len(after.tensors):
        raise ValueError(f"the loop body must return the same structure as loop_vars: "
                         f"{nest.structure_repr(before.structure)} before the loop, but "
                         f"{nest.structure_repr(after.structure)} after one iteration")
    for path, b, inp, a, inv in zip(before.paths, before.tensors, inputs, after.tensors, invariants):
        if a.dtype is not b.dtype:
            raise TypeError(f"'{path}' has dtype {b.dtype.name} before the loop, but dtype {a.dtype.name} after "
                            f"one iteration (cast it back to {b.dtype.name} in the body)")
        if not shape_fits(inp.shape, a.shape):
            if inv is None:
                raise ValueError(f"'{path}' has shape {fmt_shape(b.shape)} before the loop, but shape "
                                 f"{fmt_shape(a.shape)} after one iteration. Use shape_invariants / "
                                 f"set_loop_options to set shape invariants.")
            raise ValueError(f"'{path}' has shape invariant {fmt_shape(inv)}, but shape {fmt_shape(a.shape)} "
                             f"after one iteration. Relax the entry in shape_invariants / set_loop_options "
                             f"(None for dimensions that change).")


def normalize_body_result(vars_, new, single):
    """A body of a single loop variable may return the bare value instead of a 1-list (as in TF)."""
    if single or len(vars_) != 1:
        return new
    if isinstance(new, (list, tuple)) and not hasattr(new, "_fields") and len(new) == 1:
        return new
    return type(vars_)([new]) if isinstance(vars_, list) else (new,)
