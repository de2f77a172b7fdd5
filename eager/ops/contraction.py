"""Tensor contractions: `einsum` (TensorFlow op type `Einsum`) and `tensordot` (a
composite over einsum).

The `equation` attr is normalized when the op is built: spaces removed, the
implicit output made explicit (NumPy's rule: letters used once, sorted), and
`...` expanded into unused letters whenever the operand ranks are known, so
inference and gradients only deal with explicit letters.  Dims of size 1
broadcast as in NumPy.  The gradient of each operand is another einsum of the
output gradient with the other operands; letters only that operand uses are
broadcast back, and a letter repeated within one operand (a diagonal, like
`ii->`) is handled by contracting with identity matrices.
"""
from __future__ import annotations

import string
from collections import Counter

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError, UnimplementedError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import check_same_dtypes, static_int
from .array import expand_dims, ones_like, shape, sum_to_like
from .indexing import getitem
from .linalg import eye
from .math import multiply

__all__ = ["einsum", "tensordot"]

_LETTERS = string.ascii_letters


# ------------------------------------------------------------------ equation handling
def _bad(equation, why):
    return InvalidArgumentError(f"Einsum: invalid equation {equation!r}: {why}", op_name="Einsum")


def normalize_equation(equation: str, ranks) -> str:
    """Explicit-output form of `equation`, with `...` expanded when every rank is known."""
    eq = equation.replace(" ", "")
    if eq.count("->") > 1:
        raise _bad(equation, "more than one '->'")
    lhs, out = eq.split("->") if "->" in eq else (eq, None)
    ins = lhs.split(",")
    if len(ins) != len(ranks):
        raise _bad(equation, f"it names {len(ins)} operands but {len(ranks)} were given")
    for term in ins + ([out] if out is not None else []):
        if term.replace("...", "", 1).strip(_LETTERS):
            raise _bad(equation, f"term {term!r} may only hold letters and at most one '...'")
    if out is None:
        counts = Counter(c for s in ins for c in s if c != ".")
        out = ("..." if any("..." in s for s in ins) else "") + "".join(sorted(c for c, n in counts.items() if n == 1))
    letters_in = set("".join(ins))
    for c in out.replace("...", ""):
        if c not in letters_in:
            raise _bad(equation, f"output letter {c!r} does not appear in any operand")
    if len(set(out.replace("...", ""))) != len(out.replace("...", "")):
        raise _bad(equation, "an output letter is repeated")
    for s, r in zip(ins, ranks):
        if r is not None and "..." not in s and len(s) != r:
            raise _bad(equation, f"term {s!r} has {len(s)} letters but its operand has rank {r}")
    if "..." in eq and all(r is not None for r in ranks):
        free = [c for c in _LETTERS if c not in eq]
        ell = [r - (len(s) - 3) if "..." in s else 0 for s, r in zip(ins, ranks)]
        if min(ell) < 0:
            raise _bad(equation, f"a term has more letters than its operand's rank ({list(ranks)})")
        e = max(ell)
        if e > len(free):
            raise _bad(equation, "too many dimensions under '...'")
        lett = free[:e]
        ins = [s.replace("...", "".join(lett[e - n:])) for s, n in zip(ins, ell)]
        out = out.replace("...", "".join(lett))
    return ",".join(ins) + "->" + out


def _einsum_kernel(*xs, equation):
    check_same_dtypes("Einsum", xs)
    big = len(xs) > 1 and sum(x.size for x in xs) > 4096
    return np.asarray(np.einsum(equation, *xs, optimize=big))


def _merge_size(a, b, letter, eq, specs):
    """Static size of one letter seen with sizes a and b (1 broadcasts, None is unknown)."""
    if a == 1:
        return b
    if b == 1 or b is None:
        return a
    if a is None or a == b:
        return b
    raise InvalidArgumentError(f"Einsum: dimension {letter!r} has sizes {a} and {b} in {eq!r} "
                               f"(shapes {[s.shape for s in specs]})", op_name="Einsum")


def _infer_einsum(specs, attrs):
    eq = attrs["equation"]
    dt = specs[0].dtype
    for s in specs[1:]:
        if s.dtype is not dt:
            raise InvalidArgumentError(f"Einsum: all operands must have the same dtype, got "
                                       f"{[x.dtype.name for x in specs]}", op_name="Einsum")
    lhs, out = eq.split("->")
    if "..." in eq:
        return [Spec(None, dt)]
    sizes: dict = {}
    for term, sp in zip(lhs.split(","), specs):
        if sp.shape is None:
            for c in term:
                sizes.setdefault(c, None)
            continue
        if len(term) != len(sp.shape):
            raise _bad(eq, f"term {term!r} does not match operand shape {list(sp.shape)}")
        for c, d in zip(term, sp.shape):
            sizes[c] = _merge_size(sizes[c], d, c, eq, specs) if c in sizes else d
    return [Spec(tuple(sizes.get(c) for c in out), dt)]


def _operand_grad(eq, i, inputs, dy):
    lhs, out = eq.split("->")
    ins = lhs.split(",")
    s, x = ins[i], inputs[i]
    others = [(ins[j], inputs[j]) for j in range(len(ins)) if j != i]
    free = iter(c for c in _LETTERS if c not in eq)
    renamed, pairs = [], []
    for p, c in enumerate(s):
        if c in s[:p]:
            f = next(free)
            renamed.append(f)
            pairs.append((c, f, s.index(c)))
        else:
            renamed.append(c)
    avail = set(out).union(*[set(o) for o, _ in others])
    keep = "".join(c for c in renamed if c in avail)
    terms = [out] + [o for o, _ in others]
    g = dy if not others and keep == out else einsum(",".join(terms) + "->" + keep, dy, *[t for _, t in others])
    present = set(keep)
    if pairs:
        eyes = []
        for c, f, p in pairs:
            n = x.shape[p]
            eyes.append(eye(n if n is not None else getitem(shape(x), p), dtype=dy.dtype))
            present |= {c, f}
        target = "".join(c for c in renamed if c in present)
        g = einsum(",".join([keep] + [c + f for c, f, _ in pairs]) + "->" + target, g, *eyes)
    if len(present) != len(renamed):
        for p, c in enumerate(renamed):
            if c not in present:
                g = expand_dims(g, p)
        g = multiply(g, ones_like(x))
    return sum_to_like(g, x)


def _g_einsum(op, dy):
    eq = op.get_attr("equation")
    if "..." in eq:
        raise UnimplementedError(f"Einsum gradient of {eq!r}: operand ranks must be known to differentiate '...'",
                                 op_name="Einsum")
    return [_operand_grad(eq, i, op.inputs, dy) for i in range(len(op.inputs))]


EINSUM = op("Einsum", _einsum_kernel, _infer_einsum, _g_einsum)


def einsum(equation, *inputs, name=None, **kwargs):
    """Einstein summation over `inputs` (NumPy/TensorFlow equation syntax, with `...` and implicit output)."""
    if len(inputs) == 1 and isinstance(inputs[0], (list, tuple)):
        inputs = tuple(inputs[0])
    if not inputs:
        raise InvalidArgumentError("einsum: needs at least one operand", op_name="Einsum")
    ts = tuple(t if isinstance(t, Tensor) else convert_to_tensor(t) for t in inputs)
    dt = ts[0].dtype
    for t in ts[1:]:
        if t.dtype is not dt:
            raise InvalidArgumentError(f"Einsum: all operands must have the same dtype, got "
                                       f"{[x.dtype.name for x in ts]} (shapes {[x.shape for x in ts]})",
                                       op_name="Einsum")
    eq = normalize_equation(str(equation), [t.shape.rank for t in ts])
    return execute(EINSUM, ts, {"equation": eq}, name)


# ------------------------------------------------------------------ tensordot
def _axes_list(v, what):
    if isinstance(v, Tensor):
        v = v._python_value(what)  # tensordot needs static axes (symbolic tensors raise a clear error)
    arr = np.asarray(v)
    return [int(a) for a in arr.reshape(-1)]


def tensordot(a, b, axes, name=None):
    """Sum over the given axes of `a` and `b` (axes: int N = last N of a with first N of b, or two lists)."""
    a = a if isinstance(a, Tensor) else convert_to_tensor(a)
    b = b if isinstance(b, Tensor) else convert_to_tensor(b)
    ra, rb = a.shape.rank, b.shape.rank
    if ra is None or rb is None:
        raise ValueError(f"tensordot: operand ranks must be known statically, got shapes {a.shape} and {b.shape}")
    if isinstance(axes, (int, np.integer)) or (isinstance(axes, Tensor) and axes.shape.rank == 0):
        n = static_int(axes, "axes", "tensordot")
        if n < 0 or n > min(ra, rb):
            raise InvalidArgumentError(f"tensordot: axes={n} must be in [0, {min(ra, rb)}] for shapes {a.shape} "
                                       f"and {b.shape}", op_name="tensordot")
        a_axes, b_axes = list(range(ra - n, ra)), list(range(n))
    else:
        if len(axes) != 2:
            raise ValueError(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}")
        a_axes, b_axes = _axes_list(axes[0], "axes"), _axes_list(axes[1], "axes")
        if len(a_axes) != len(b_axes):
            raise InvalidArgumentError(f"tensordot: axes {a_axes} and {b_axes} must have the same length",
                                       op_name="tensordot")
        for ax, r, sh in ((a_axes, ra, a.shape), (b_axes, rb, b.shape)):
            for v in ax:
                if not -r <= v < r:
                    raise InvalidArgumentError(f"tensordot: axis {v} is out of range for shape {sh}",
                                               op_name="tensordot")
        a_axes, b_axes = [v % ra for v in a_axes], [v % rb for v in b_axes]
    la = list(_LETTERS[:ra])
    lb = list(_LETTERS[ra:ra + rb])
    for i, j in zip(a_axes, b_axes):
        da, db = a.shape[i], b.shape[j]
        if da is not None and db is not None and da != db:
            raise InvalidArgumentError(f"tensordot: dimension {i} of a (shape {a.shape}) and dimension {j} of b "
                                       f"(shape {b.shape}) must agree, got {da} and {db}", op_name="tensordot")
        lb[j] = la[i]
    out = [c for k, c in enumerate(la) if k not in a_axes] + [c for k, c in enumerate(lb) if k not in b_axes]
    return einsum("".join(la) + "," + "".join(lb) + "->" + "".join(out), a, b, name=name)
