"""Rearranging ops: transpose, concat, split, reverse (TensorFlow op types
`Transpose InvertPermutation ConcatV2 ConcatOffset Split SplitV ReverseV2`).

As in TensorFlow, `perm`, `axis` and `size_splits` are integer *tensor inputs*
(Python values become constants), so a graph can compute them; inference reads
their `Spec.value` when known.  The number of outputs of a split is static
(`num_split` attr), as TensorFlow requires.  Kernels check what NumPy would
silently accept (dtype promotion in concat, uneven splits).
"""
from __future__ import annotations

import numpy as np

from ..convert import convert_to_tensor, operand
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import (EMPTY, check_same_dtypes, fold, int_input, merge_dim, norm_axis, static_int, value_ints,
                    vector_len)
from .array import rank, shape
from .constant import identity
from .creation import range as range_
from .padding import slice as slice_

__all__ = ["transpose", "invert_permutation", "concat", "split", "reverse"]


# ------------------------------------------------------------------ transpose
def _transpose_kernel(x, perm):
    perm = perm.tolist() if isinstance(perm, np.ndarray) else list(perm)
    if len(perm) != np.ndim(x) or sorted(p % max(np.ndim(x), 1) for p in perm) != list(range(np.ndim(x))):
        raise InvalidArgumentError(f"Transpose: perm {perm} is not a permutation of the {np.ndim(x)} dimensions "
                                   f"of a tensor of shape {list(np.shape(x))}", op_name="Transpose")
    return np.transpose(x, perm)


def _infer_transpose(specs, attrs):
    x, p = specs
    perm = value_ints(p)
    if perm is None:
        n = vector_len(p) if x.shape is None else len(x.shape)
        return [Spec(None if n is None else (None,) * n, x.dtype)]
    if x.shape is None:
        return [Spec((None,) * len(perm), x.dtype)]
    r = len(x.shape)
    if len(perm) != r or sorted(q % max(r, 1) for q in perm) != list(range(r)):
        raise InvalidArgumentError(f"Transpose: perm {perm} is not a permutation of the {r} dimensions of a "
                                   f"tensor of shape {list(x.shape)}", op_name="Transpose")
    out = tuple(x.shape[q] for q in perm)
    return [Spec(out, x.dtype, fold(_transpose_kernel, specs, shape=out))]


TRANSPOSE = op("Transpose", _transpose_kernel, _infer_transpose,
               lambda op, dy: [transpose(dy, invert_permutation(op.inputs[1])), None])


def _invert_perm_kernel(p):
    p = np.asarray(p)
    n = p.shape[0] if p.ndim == 1 else -1
    if n < 0 or sorted(p.tolist()) != list(range(n)):
        raise InvalidArgumentError(f"InvertPermutation: {p.tolist()} is not a permutation of 0..{max(n, 0) - 1}",
                                   op_name="InvertPermutation")
    inv = np.empty_like(p)
    inv[p] = np.arange(n, dtype=p.dtype)
    return inv


INVERT_PERMUTATION = op("InvertPermutation", _invert_perm_kernel,
                        lambda s, a: [Spec(s[0].shape, s[0].dtype, fold(_invert_perm_kernel, s, shape=s[0].shape))])


def invert_permutation(x, name=None):
    """The inverse of the permutation `x` (a 1-D int tensor holding 0..n-1)."""
    return execute(INVERT_PERMUTATION, (int_input(x, "x", "InvertPermutation"),), EMPTY, name)


def transpose(a, perm=None, conjugate=False, name=None):
    """Permute the dimensions of `a` (`perm=None` reverses them, like TensorFlow)."""
    a = a if isinstance(a, Tensor) else convert_to_tensor(a)
    if perm is None:
        r = a.shape.rank
        if r is None:
            perm_t = range_(rank(a) - 1, -1, -1)
        else:
            perm_t = int_input(list(range(r - 1, -1, -1)))
    else:
        perm_t = int_input(perm, "perm", "Transpose")
    return execute(TRANSPOSE, (a, perm_t), EMPTY, name)


# ------------------------------------------------------------------ concat
def _concat_kernel(*args):
    xs, axis = args[:-1], int(args[-1])
    check_same_dtypes("ConcatV2", xs, "values")
    r = np.ndim(xs[0])
    if r == 0:
        raise InvalidArgumentError("ConcatV2: cannot concatenate scalars (use stack instead)", op_name="ConcatV2")
    a = norm_axis(axis, r, "ConcatV2")
    for x in xs[1:]:
        if np.ndim(x) != r or any(d != e for i, (d, e) in enumerate(zip(np.shape(x), np.shape(xs[0]))) if i != a):
            raise InvalidArgumentError(
                f"ConcatV2: dimensions of all inputs must match except along axis {axis}, got shapes "
                f"{[list(np.shape(v)) for v in xs]}", op_name="ConcatV2")
    return np.concatenate(xs, axis=a)


def _infer_concat(specs, attrs):
    xs, ax = specs[:-1], specs[-1]
    dt = xs[0].dtype
    for s in xs[1:]:
        if s.dtype is not dt:
            raise InvalidArgumentError(f"ConcatV2: all values must have the same dtype, got "
                                       f"{[v.dtype.name for v in xs]}", op_name="ConcatV2")
    ranks = {len(s.shape) for s in xs if s.shape is not None}
    if len(ranks) > 1:
        raise InvalidArgumentError(f"ConcatV2: all values must have the same rank, got shapes "
                                   f"{[s.shape for s in xs]}", op_name="ConcatV2")
    if not ranks:
        return [Spec(None, dt)]
    r = ranks.pop()
    if r == 0:
        raise InvalidArgumentError("ConcatV2: cannot concatenate scalars (use stack instead)", op_name="ConcatV2")
    axv = value_ints(ax)
    if axv is None:
        return [Spec((None,) * r, dt)]
    a = norm_axis(axv[0], r, "ConcatV2")
    out = [None] * r
    total = 0
    for s in xs:
        if s.shape is None:
            total = None
            continue
        d = s.shape[a]
        total = None if total is None or d is None else total + d
        for i in range(r):
            if i != a:
                out[i] = merge_dim(out[i], s.shape[i], "ConcatV2",
                                   f"dimensions of all inputs must match except along axis {axv[0]}, got shapes "
                                   f"{[list(v.shape) if v.shape is not None else None for v in xs]}")
    out[a] = total
    return [Spec(tuple(out), dt, fold(_concat_kernel, specs, shape=tuple(out)))]


def _g_concat(op, dy):
    xs = op.inputs[:-1]
    if len(xs) == 1:
        return [dy, None]
    shapes = [shape(x) for x in xs]
    offsets = execute(CONCAT_OFFSET, (op.inputs[-1], *shapes), EMPTY)
    return [slice_(dy, off, s) for off, s in zip(offsets, shapes)] + [None]


CONCAT = op("ConcatV2", _concat_kernel, _infer_concat, _g_concat)


def _concat_offset_kernel(axis, *shapes):
    a = int(axis) % max(len(shapes[0]), 1)
    offs, acc = [], 0
    for s in shapes:
        o = np.zeros_like(s)
        o[a] = acc
        acc += int(s[a])
        offs.append(o)
    return tuple(offs)


CONCAT_OFFSET = op("ConcatOffset", _concat_offset_kernel,
                   lambda s, a: [Spec(x.shape, x.dtype) for x in s[1:]], num_outputs=-1,
                   doc="Offsets of each concat input along the axis (for the ConcatV2 gradient).")


def concat(values, axis, name=None):
    """Join tensors of equal rank along `axis` (other dims must match)."""
    if isinstance(values, Tensor):
        values = [values]
    vals = list(values)
    if not vals:
        raise InvalidArgumentError("concat: needs at least one tensor", op_name="ConcatV2")
    like = next((v for v in vals if isinstance(v, Tensor) or hasattr(v, "_to_tensor")), None)
    if like is None:
        ts = [convert_to_tensor(v) for v in vals]
    else:
        like = convert_to_tensor(like)
        ts = [operand(v, like) for v in vals]
    ax = int_input(axis, "axis", "ConcatV2")
    if len(ts) == 1:
        return identity(ts[0], name=name)
    return execute(CONCAT, (*ts, ax), EMPTY, name)


# ------------------------------------------------------------------ split
def _split_kernel(axis, x, num_split):
    a = norm_axis(int(axis), np.ndim(x), "Split")
    n = x.shape[a]
    if num_split <= 0 or n % num_split:
        raise InvalidArgumentError(
            f"Split: number of splits {num_split} must evenly divide dimension {a} of size {n} "
            f"(shape {list(x.shape)})", op_name="Split")
    return tuple(np.split(x, num_split, axis=a))


def _infer_split(specs, attrs):
    ax, x = specs
    k = attrs["num_split"]
    if x.shape is None:
        return [Spec(None, x.dtype) for _ in range(k)]
    axv = value_ints(ax)
    if axv is None:
        return [Spec((None,) * len(x.shape), x.dtype) for _ in range(k)]
    a = norm_axis(axv[0], len(x.shape), "Split")
    d = x.shape[a]
    if d is not None and d % k:
        raise InvalidArgumentError(f"Split: number of splits {k} must evenly divide dimension {a} of size {d} "
                                   f"(shape {list(x.shape)})", op_name="Split")
    piece = x.shape[:a] + (None if d is None else d // k,) + x.shape[a + 1:]
    return [Spec(piece, x.dtype) for _ in range(k)]


def _splitv_sizes(sizes, n, where):
    sizes = [int(s) for s in sizes]
    if sizes.count(-1) > 1:
        raise InvalidArgumentError(f"SplitV: at most one size may be -1, got {sizes}", op_name="SplitV")
    if n is None:
        return [None if s == -1 else s for s in sizes]
    known = sum(s for s in sizes if s != -1)
    if -1 in sizes:
        sizes = [n - known if s == -1 else s for s in sizes]
    if any(s < 0 for s in sizes) or sum(sizes) != n:
        raise InvalidArgumentError(f"SplitV: sizes {sizes} must be non-negative and sum to the size {n} of the "
                                   f"split dimension ({where})", op_name="SplitV")
    return sizes


def _splitv_kernel(x, sizes, axis, num_split):
    a = norm_axis(int(axis), np.ndim(x), "SplitV")
    sizes = _splitv_sizes(np.asarray(sizes).reshape(-1), x.shape[a], f"shape {list(x.shape)}")
    return tuple(np.split(x, np.cumsum(sizes)[:-1].tolist(), axis=a))


def _infer_splitv(specs, attrs):
    x, sz, ax = specs
    k = attrs["num_split"]
    sizes, axv = value_ints(sz), value_ints(ax)
    if x.shape is None:
        return [Spec(None, x.dtype) for _ in range(k)]
    if axv is None:
        return [Spec((None,) * len(x.shape), x.dtype) for _ in range(k)]
    a = norm_axis(axv[0], len(x.shape), "SplitV")
    dims = [None] * k if sizes is None else _splitv_sizes(sizes, x.shape[a], f"shape {list(x.shape)}")
    return [Spec(x.shape[:a] + (d,) + x.shape[a + 1:], x.dtype) for d in dims]


def _g_split(op, *dys):
    return [None, concat(list(dys), op.inputs[0])]


def _g_splitv(op, *dys):
    return [concat(list(dys), op.inputs[2]), None, None]


SPLIT = op("Split", _split_kernel, _infer_split, _g_split, num_outputs=-1)
SPLITV = op("SplitV", _splitv_kernel, _infer_splitv, _g_splitv, num_outputs=-1)


def split(value, num_or_size_splits, axis=0, num=None, name=None):
    """Split into `num_or_size_splits` equal pieces (an int) or pieces of the given sizes (a list/1-D tensor)."""
    x = value if isinstance(value, Tensor) else convert_to_tensor(value)
    ax = int_input(axis, "axis", "Split")
    n = num_or_size_splits
    if (isinstance(n, (int, np.integer)) and not isinstance(n, bool)) or (isinstance(n, Tensor) and n.shape.rank == 0):
        k = static_int(n, "num_or_size_splits", "Split")  # the number of outputs must be static
        if k <= 0:
            raise InvalidArgumentError(f"Split: number of splits must be positive, got {k}", op_name="Split")
        return list(execute(SPLIT, (ax, x), {"num_split": k}, name))
    sizes = int_input(num_or_size_splits, "num_or_size_splits", "SplitV")
    if sizes.shape.rank != 1:
        raise InvalidArgumentError(f"SplitV: size_splits must be 1-D, got shape {sizes.shape}", op_name="SplitV")
    k = sizes.shape[0] if num is None else static_int(num, "num", "SplitV")
    if k is None:
        raise ValueError("split: cannot infer the number of pieces from a size tensor of unknown length; pass num")
    return list(execute(SPLITV, (x, sizes, ax), {"num_split": int(k)}, name))


# ------------------------------------------------------------------ reverse
def _reverse_kernel(x, axis):
    axes = [int(a) for a in np.asarray(axis).reshape(-1)]
    r = np.ndim(x)
    norm = [norm_axis(a, r, "ReverseV2") for a in axes]
    if len(set(norm)) != len(norm):
        raise InvalidArgumentError(f"ReverseV2: axis {axes} has duplicates (rank {r})", op_name="ReverseV2")
    return np.flip(x, axis=tuple(norm)) if norm else x


def _infer_reverse(specs, attrs):
    x, ax = specs
    axes = value_ints(ax)
    if axes is not None and x.shape is not None:
        norm = [norm_axis(a, len(x.shape), "ReverseV2") for a in axes]
        if len(set(norm)) != len(norm):
            raise InvalidArgumentError(f"ReverseV2: axis {axes} has duplicates", op_name="ReverseV2")
    return [Spec(x.shape, x.dtype, fold(_reverse_kernel, specs, shape=x.shape))]


REVERSE = op("ReverseV2", _reverse_kernel, _infer_reverse,
             lambda op, dy: [reverse(dy, op.inputs[1]), None])


def reverse(tensor, axis, name=None):
    """Reverse `tensor` along each dimension listed in `axis` (a 1-D list or int tensor)."""
    t = tensor if isinstance(tensor, Tensor) else convert_to_tensor(tensor)
    if isinstance(axis, (int, np.integer)):
        axis = [axis]
    return execute(REVERSE, (t, int_input(axis, "axis", "ReverseV2")), EMPTY, name)
