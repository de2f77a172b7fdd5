"""Size-changing copies: tile, pad, slice (TensorFlow op types `Tile PadV2 MirrorPad
Slice`, plus the gradient helpers `TileGrad` and `MirrorPadGrad`).

`multiples`, `paddings`, `begin` and `size` are integer tensor inputs, as in
TensorFlow.  Kernels check what NumPy would silently accept: `np.tile` with
fewer multiples than dims, `np.pad` broadcasting a single padding row, slices
running past the end (TensorFlow raises; NumPy clamps).  This module defines
the public `slice` (TensorFlow's `tf.slice`), so it never uses the builtin.
"""
from __future__ import annotations

import builtins

import numpy as np

from ..convert import convert_to_tensor, operand
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ._args import EMPTY, fold, int_const, int_input, value_ints
from .array import shape, stack, unstack
from .math import subtract

__all__ = ["tile", "pad", "slice"]

_bslice = builtins.slice


# ------------------------------------------------------------------ tile
def _tile_kernel(x, multiples):
    m = [int(k) for k in np.asarray(multiples).reshape(-1)]
    if len(m) != np.ndim(x) or any(k < 0 for k in m):
        raise InvalidArgumentError(f"Tile: multiples {m} must be {np.ndim(x)} non-negative ints, one per dimension "
                                   f"of the input of shape {list(np.shape(x))}", op_name="Tile")
    return np.tile(x, m)


def _infer_tile(specs, attrs):
    x, m = specs
    mv = value_ints(m)
    if x.shape is None:
        return [Spec(None if mv is None else (None,) * len(mv), x.dtype)]
    if mv is None:
        return [Spec((None,) * len(x.shape), x.dtype)]
    if len(mv) != len(x.shape) or any(k < 0 for k in mv):
        raise InvalidArgumentError(f"Tile: multiples {mv} must be {len(x.shape)} non-negative ints, one per "
                                   f"dimension of the input of shape {list(x.shape)}", op_name="Tile")
    out = tuple(None if d is None else d * k for d, k in zip(x.shape, mv))
    return [Spec(out, x.dtype, fold(_tile_kernel, specs, shape=out))]


def _tile_grad_kernel(dy, x, multiples):
    m = [int(k) for k in np.asarray(multiples).reshape(-1)]
    inter = []
    for d, k in zip(np.shape(x), m):
        inter += [k, d]
    g = np.reshape(dy, inter)
    return np.add.reduce(g, axis=tuple(range(0, 2 * len(m), 2)), dtype=dy.dtype).reshape(np.shape(x))


TILE = op("Tile", _tile_kernel, _infer_tile,
          lambda op, dy: [execute(TILE_GRAD, (dy, op.inputs[0], op.inputs[1]), EMPTY), None])
TILE_GRAD = op("TileGrad", _tile_grad_kernel, lambda s, a: [Spec(s[1].shape, s[0].dtype)],
               lambda op, g: [tile(g, op.inputs[2]), None, None],
               doc="Sum a tiled gradient (input 0) back to the shape of input 1.")


def tile(input, multiples, name=None):
    """Repeat `input` `multiples[i]` times along dimension i."""
    x = input if isinstance(input, Tensor) else convert_to_tensor(input)
    return execute(TILE, (x, int_input(multiples, "multiples", "Tile")), EMPTY, name)


# ------------------------------------------------------------------ pad
def _paddings(p, x, opname):
    r = np.ndim(x)
    if np.shape(p) != (r, 2):
        raise InvalidArgumentError(f"{opname}: paddings must have shape [{r}, 2] for an input of shape "
                                   f"{list(np.shape(x))}, got shape {list(np.shape(p))}", op_name=opname)
    pairs = p.tolist()
    if any(a < 0 or b < 0 for a, b in pairs):
        raise InvalidArgumentError(f"{opname}: paddings must be non-negative, got {pairs}", op_name=opname)
    return pairs


def _pad_kernel(x, paddings, constant_values):
    p = _paddings(paddings, x, "PadV2")
    x = np.asarray(x)
    out = np.full(tuple(d + a + b for d, (a, b) in zip(x.shape, p)), constant_values, dtype=x.dtype)
    out[tuple(_bslice(a, a + d) for d, (a, _) in zip(x.shape, p))] = x
    return out


def _check_mirror(p, shape, mode, opname):
    limit_off = 1 if mode == "REFLECT" else 0
    for (a, b), d in zip(p, shape):
        if d is not None and (a > d - limit_off or b > d - limit_off):
            raise InvalidArgumentError(
                f"{opname}: paddings {[list(q) for q in p]} must be at most the dimension size "
                f"{'minus 1 ' if limit_off else ''}in {mode} mode (input shape {list(shape)})", op_name=opname)


def _mirror_pad_kernel(x, paddings, mode):
    p = _paddings(paddings, x, "MirrorPad")
    _check_mirror(p, np.shape(x), mode, "MirrorPad")
    return np.pad(x, p, mode=mode.lower())


def _mirror_pad_grad_kernel(dy, paddings, mode):
    p = _paddings(paddings, dy, "MirrorPadGrad")
    g = np.array(dy)
    for ax, (b, a) in enumerate(p):
        n = g.shape[ax]
        idx = [_bslice(None)] * g.ndim

        def part(lo, hi, step=1):
            idx[ax] = _bslice(lo, hi, step)
            return tuple(idx)
        core = np.array(g[part(b, n - a)])
        length = core.shape[ax]
        if b:
            flipped = np.flip(g[part(0, b)], ax)
            core[part(1, b + 1) if mode == "REFLECT" else part(0, b)] += flipped
        if a:
            flipped = np.flip(g[part(n - a, n)], ax)
            core[part(length - 1 - a, length - 1) if mode == "REFLECT" else part(length - a, length)] += flipped
        g = core
    return g


def _infer_pad(specs, attrs):
    x, p = specs[0], specs[1]
    pv = value_ints(p)
    if x.shape is None:
        n = p.shape[0] if p.shape else None
        return [Spec(None if n is None else (None,) * n, x.dtype)]
    r = len(x.shape)
    if p.shape is not None and tuple(p.shape) != (r, 2) and None not in p.shape:
        raise InvalidArgumentError(f"Pad: paddings must have shape [{r}, 2] for an input of shape "
                                   f"{list(x.shape)}, got shape {list(p.shape)}", op_name="Pad")
    if pv is None:
        return [Spec((None,) * r, x.dtype)]
    pairs = list(zip(pv[0::2], pv[1::2]))
    if "mode" in attrs:
        _check_mirror(pairs, x.shape, attrs["mode"], "MirrorPad")
    return [Spec(tuple(None if d is None else d + a + b for d, (a, b) in zip(x.shape, pairs)), x.dtype)]


def _infer_mirror_pad_grad(specs, attrs):
    dy, p = specs
    pv = value_ints(p)
    if dy.shape is None or pv is None:
        return [Spec(None if dy.shape is None else (None,) * len(dy.shape), dy.dtype)]
    pairs = list(zip(pv[0::2], pv[1::2]))
    return [Spec(tuple(None if d is None else d - a - b for d, (a, b) in zip(dy.shape, pairs)), dy.dtype)]


def _g_pad(op, dy):
    begin = unstack(op.inputs[1], num=2, axis=1)[0]     # the paddings' first column: where `dy` starts
    return [slice(dy, begin, shape(op.inputs[0], out_type=begin.dtype))] + [None] * (len(op.inputs) - 1)


PAD = op("PadV2", _pad_kernel, _infer_pad, _g_pad)
MIRROR_PAD = op("MirrorPad", _mirror_pad_kernel, _infer_pad,
                lambda op, dy: [execute(MIRROR_PAD_GRAD, (dy, op.inputs[1]), {"mode": op.get_attr("mode")}), None])
MIRROR_PAD_GRAD = op("MirrorPadGrad", _mirror_pad_grad_kernel, _infer_mirror_pad_grad,
                     lambda op, g: [execute(MIRROR_PAD, (g, op.inputs[1]), {"mode": op.get_attr("mode")}), None])


def pad(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pad `tensor` by `paddings` ([rank, 2]: before/after per dim); modes CONSTANT, REFLECT, SYMMETRIC."""
    x = tensor if isinstance(tensor, Tensor) else convert_to_tensor(tensor)
    p = int_input(paddings, "paddings", "Pad")
    m = str(mode).upper()
    if m == "CONSTANT":
        if type(constant_values) is int and constant_values == 0 and x.dtype.is_numeric:
            return execute(PAD, (x, p, int_const(np.zeros((), x.dtype.as_numpy_dtype))), EMPTY, name)
        c = operand(constant_values, x)
        if c.dtype is not x.dtype:
            raise InvalidArgumentError(f"PadV2: constant_values has dtype {c.dtype.name} but the tensor has dtype "
                                       f"{x.dtype.name}", op_name="PadV2")
        if c.shape.rank not in (None, 0):
            raise InvalidArgumentError(f"PadV2: constant_values must be a scalar, got shape {c.shape}",
                                       op_name="PadV2")
        return execute(PAD, (x, p, c), EMPTY, name)
    if m not in ("REFLECT", "SYMMETRIC"):
        raise ValueError(f"pad: mode must be 'CONSTANT', 'REFLECT' or 'SYMMETRIC', got {mode!r}")
    return execute(MIRROR_PAD, (x, p), {"mode": m}, name)


# ------------------------------------------------------------------ slice
def _slice_bounds(shape, begin, size):
    r = len(shape)
    if len(begin) != r or len(size) != r:
        raise InvalidArgumentError(f"Slice: begin {begin} and size {size} must both have {r} entries for an input "
                                   f"of shape {list(shape)}", op_name="Slice")
    out = []
    for d, b, s in zip(shape, begin, size):
        if d is None:
            out.append(None if s == -1 else s)
            continue
        e = d if s == -1 else b + s
        if b < 0 or s < -1 or e > d:
            raise InvalidArgumentError(f"Slice: begin {begin} and size {size} are out of bounds for an input of "
                                       f"shape {list(shape)}", op_name="Slice")
        out.append(e - b)
    return out


def _slice_kernel(x, begin, size):
    b = [int(v) for v in np.asarray(begin).reshape(-1)]
    s = [int(v) for v in np.asarray(size).reshape(-1)]
    sizes = _slice_bounds(np.shape(x), b, s)
    return x[tuple(_bslice(lo, lo + n) for lo, n in zip(b, sizes))]


def _infer_slice(specs, attrs):
    x, b, s = specs
    bv, sv = value_ints(b), value_ints(s)
    if x.shape is None:
        n = b.shape[0] if b.shape else None
        return [Spec(None if n is None else (None,) * n, x.dtype)]
    if sv is None:
        return [Spec((None,) * len(x.shape), x.dtype)]
    if bv is None:
        return [Spec(tuple(None if v == -1 else v for v in sv), x.dtype)]
    out = tuple(_slice_bounds(x.shape, bv, sv))
    return [Spec(out, x.dtype, fold(_slice_kernel, specs, shape=out))]


def _g_slice(op, dy):
    x, begin = op.inputs[0], op.inputs[1]
    sx = shape(x, out_type=begin.dtype)
    after = subtract(subtract(sx, begin), shape(dy, out_type=begin.dtype))
    return [pad(dy, stack([begin, after], axis=1)), None, None]


SLICE = op("Slice", _slice_kernel, _infer_slice, _g_slice)


def slice(input_, begin, size, name=None):  # noqa: A001 - TensorFlow's name
    """The block of `input_` starting at `begin` with extent `size` (-1: to the end of that dim)."""
    x = input_ if isinstance(input_, Tensor) else convert_to_tensor(input_)
    return execute(SLICE, (x, int_input(begin, "begin", "Slice"), int_input(size, "size", "Slice")), EMPTY, name)
