"""Tensor indexing: `StridedSlice` (+ `StridedSliceGrad`) and `tensor[key]`.

`getitem(tensor, key)` implements `Tensor.__getitem__` as TensorFlow does:
ints (negative ones too), slices with steps, `...`, `None` (new axis) and
scalar integer tensors become one `StridedSlice` op whose begin/end/strides are
int tensor inputs (constants unless the key holds tensors, which are stacked,
so `x[i]` with a symbolic `i` builds a graph); the five bit masks are attrs.
A list key is read as a tuple (TensorFlow's rule: `x[[0, 1]]` is `x[0, 1]`).
A bool tensor or array as the whole key is `boolean_mask`; an integer tensor or
array of rank >= 1 as the whole key is `gather` along axis 0 (TensorFlow
rejects it; we accept it, NumPy-style).  `boolean_mask` (a composite of `Where`,
`Reshape` and `GatherV2`, as in TensorFlow, so its gradient is free) is here,
above `gather.py`, because a bool key needs it.  The gradient scatters into zeros
(`StridedSliceGrad`), whose own gradient is a strided slice again.
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from ..convert import convert_to_tensor
from ..dispatch import execute
from ..errors import InvalidArgumentError
from ..registry import Spec, op
from ..tensor import Tensor
from ..dtypes import bool_
from ._args import EMPTY, fold, int_const, int_input, norm_axis, pack_ints, static_int, value_ints, vector_len
from .array import reshape, shape
from .gather import WHERE, gather
from .manipulation import concat
from .reduction import reduce_prod

__all__ = ["strided_slice", "boolean_mask"]

_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_bslice = builtins.slice
_I32_MAX = 2 ** 31 - 1
_UNKNOWN = object()  # a begin/end entry whose value is not known statically


# ------------------------------------------------------------------ the primitive
def _index_tuple(b, e, s, begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask):
    if not len(b) == len(e) == len(s):
        raise InvalidArgumentError(f"StridedSlice: begin, end and strides must have the same length, got "
                                   f"{len(b)}, {len(e)} and {len(s)}", op_name="StridedSlice")
    idx = []
    for i in range(len(b)):
        bit = 1 << i
        if ellipsis_mask & bit:
            idx.append(Ellipsis)
        elif new_axis_mask & bit:
            idx.append(None)
        elif shrink_axis_mask & bit:
            idx.append(b[i])
        else:
            if s[i] == 0:
                raise InvalidArgumentError(f"StridedSlice: strides[{i}] must be non-zero", op_name="StridedSlice")
            idx.append(_bslice(None if begin_mask & bit else b[i], None if end_mask & bit else e[i], s[i]))
    return tuple(idx)


def _check_spec(n, rank, shape, attrs):
    """Count input dims the spec consumes; raise when it does not fit `rank`."""
    em = attrs["ellipsis_mask"] & ((1 << n) - 1)
    if em & (em - 1):
        raise InvalidArgumentError("StridedSlice: multiple ellipses in slice spec are not allowed",
                                   op_name="StridedSlice")
    consumed = sum(1 for i in range(n) if not ((attrs["ellipsis_mask"] | attrs["new_axis_mask"]) >> i) & 1)
    if rank is not None and consumed > rank:
        raise InvalidArgumentError(f"StridedSlice: too many indices ({consumed}) for a tensor of rank {rank} "
                                   f"(shape {list(shape)})", op_name="StridedSlice")
    return consumed


def _ss_kernel(x, begin, end, strides, **attrs):
    if attrs == _INDEX_ATTRS and begin.shape == end.shape == strides.shape == (1,):
        return _ss_index(x, begin, end, strides)     # x[i]: the common case (loop step inputs)
    b, e, s = begin.tolist(), end.tolist(), strides.tolist()
    idx = _index_tuple(b, e, s, **attrs)
    try:
        out = x[idx]
        return out if x.dtype != object or isinstance(out, np.ndarray) else np.array(out, dtype=object)
    except IndexError as err:
        raise InvalidArgumentError(f"StridedSlice: {err} (input shape {list(np.shape(x))}, begin {b}, end {e}, "
                                   f"strides {s})", op_name="StridedSlice") from None


_INDEX_ATTRS = {"begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0, "new_axis_mask": 0, "shrink_axis_mask": 1}


def _ss_index(x, begin, end, strides):
    """StridedSlice with attrs `_INDEX_ATTRS` (`x[i]`): `x[begin[0]]`, as the general path computes it.

    The executor calls it directly for such ops (`extra["specialize"]`: no attr keywords, no key tuple).
    """
    if begin.shape != (1,) or end.shape != (1,) or strides.shape != (1,):
        return _ss_kernel(x, begin, end, strides, **_INDEX_ATTRS)
    i = int(begin[0])
    try:
        out = x[i]
    except IndexError as err:
        raise InvalidArgumentError(f"StridedSlice: {err} (input shape {list(np.shape(x))}, begin {[i]}, end "
                                   f"{end.tolist()}, strides {strides.tolist()})", op_name="StridedSlice") from None
    return out if x.dtype != object or isinstance(out, np.ndarray) else np.array(out, dtype=object)


def _slice_len(d, start, stop, step):
    return len(range(*_bslice(start, stop, step).indices(d)))


def _ss_shape(shape, bv, ev, sv, n, attrs):
    if shape is None or n is None:
        return None
    r = len(shape)
    consumed = _check_spec(n, r, shape, attrs)
    out, dim = [], 0
    for i in range(n):
        bit = 1 << i
        if attrs["ellipsis_mask"] & bit:
            k = r - consumed
            out.extend(shape[dim:dim + k])
            dim += k
        elif attrs["new_axis_mask"] & bit:
            out.append(1)
        elif attrs["shrink_axis_mask"] & bit:
            d = shape[dim]
            if d is not None and bv is not None and not -d <= bv[i] < d:
                raise InvalidArgumentError(f"StridedSlice: index {bv[i]} is out of bounds for dimension {dim} of "
                                           f"size {d} (shape {list(shape)})", op_name="StridedSlice")
            dim += 1
        else:
            d = shape[dim]
            step = None if sv is None else sv[i]
            start = None if attrs["begin_mask"] & bit else (bv[i] if bv is not None else _UNKNOWN)
            stop = None if attrs["end_mask"] & bit else (ev[i] if ev is not None else _UNKNOWN)
            if step == 0:
                raise InvalidArgumentError(f"StridedSlice: strides[{i}] must be non-zero", op_name="StridedSlice")
            if d is not None and step is not None and start is not _UNKNOWN and stop is not _UNKNOWN:
                out.append(_slice_len(d, start, stop, step))
            elif start is None and stop is None and step in (1, -1):
                out.append(d)
            else:
                out.append(None)
            dim += 1
    out.extend(shape[dim:])
    return tuple(out)


def _infer_ss(specs, attrs):
    x, b, e, s = specs
    n = vector_len(b)
    bv = value_ints(b)
    if n is None and bv is not None:
        n = len(bv)
    shape = _ss_shape(x.shape, bv, value_ints(e), value_ints(s), n, attrs)
    return [Spec(shape, x.dtype, fold(_ss_kernel, specs, attrs, shape=shape))]


def _g_ss(op, dy):
    x, b, e, s = op.inputs
    attrs = {k: op.get_attr(k) for k in _MASKS}
    return [execute(STRIDED_SLICE_GRAD, (shape(x, out_type=b.dtype), b, e, s, dy), attrs), None, None, None]


def _ss_grad_kernel(shape, begin, end, strides, dy, **attrs):
    z = np.zeros(tuple(int(d) for d in shape), dtype=dy.dtype)
    z[_index_tuple(begin.tolist(), end.tolist(), strides.tolist(), **attrs)] = dy
    return z


def _infer_ss_grad(specs, attrs):
    sh, dy = specs[0], specs[4]
    dims = value_ints(sh)
    if dims is None:
        n = vector_len(sh)
        return [Spec(None if n is None else (None,) * n, dy.dtype)]
    return [Spec(tuple(dims), dy.dtype)]


def _g_ss_grad(op, g):
    _, b, e, s, _ = op.inputs
    attrs = {k: op.get_attr(k) for k in _MASKS}
    return [None, None, None, None, execute(STRIDED_SLICE, (g, b, e, s), attrs)]


STRIDED_SLICE = op("StridedSlice", _ss_kernel, _infer_ss, _g_ss, attrs=tuple(_MASKS),
                   extra={"specialize": lambda attrs: _ss_index if attrs == _INDEX_ATTRS else None})
STRIDED_SLICE_GRAD = op("StridedSliceGrad", _ss_grad_kernel, _infer_ss_grad, _g_ss_grad, attrs=tuple(_MASKS))


def strided_slice(input_, begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0,
                  shrink_axis_mask=0, var=None, name=None):
    """TensorFlow's `strided_slice`: begin/end/strides are 1-D int tensors, masks are bit fields."""
    x = input_ if isinstance(input_, Tensor) else convert_to_tensor(input_)
    b = int_input(begin, "begin", "StridedSlice")
    e = int_input(end, "end", "StridedSlice")
    if strides is None:
        n = b.shape[0]
        if n is None:
            raise ValueError("strided_slice: strides must be given when begin has unknown length")
        strides = [1] * n
    s = int_input(strides, "strides", "StridedSlice")
    attrs = {"begin_mask": int(begin_mask), "end_mask": int(end_mask), "ellipsis_mask": int(ellipsis_mask),
             "new_axis_mask": int(new_axis_mask), "shrink_axis_mask": int(shrink_axis_mask)}
    return execute(STRIDED_SLICE, (x, b, e, s), attrs, name)


# ------------------------------------------------------------------ tensor[key]
_KEY_ERROR = ("Only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and scalar int32/int64 tensors "
              "are valid indices")


def _component(v, dynamic):
    """One begin/end/stride entry: a Python int, or a scalar int tensor (sets dynamic[0])."""
    if isinstance(v, Tensor) or hasattr(v, "_to_tensor"):
        t = convert_to_tensor(v)
        if not t.dtype.is_integer or t.shape.rank not in (0, None):
            raise TypeError(f"{_KEY_ERROR}, got a {t.dtype.name} tensor of shape {t.shape}"
                            + ("; use eager.gather for index lists" if t.dtype.is_integer else ""))
        dynamic[0] = True
        return t
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{_KEY_ERROR}, got {v!r}")
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{_KEY_ERROR}, got {v!r}") from None


def _whole_key(t, key):
    """A key that is not a strided slice: bool mask -> boolean_mask, int array -> gather (else None)."""
    if isinstance(key, Tensor) or hasattr(key, "_to_tensor"):
        k = convert_to_tensor(key)
        if k.dtype.is_bool:
            return boolean_mask(t, k)
        if k.dtype.is_integer and k.shape.rank != 0:
            return gather(t, k)
        return None
    if isinstance(key, np.ndarray):
        if key.dtype == np.bool_:
            return boolean_mask(t, convert_to_tensor(key))
        if key.dtype.kind in "iu" and key.ndim:
            return gather(t, convert_to_tensor(key))
    return None


_STATIC_KEYS: dict = {}  # signature of an all-Python key -> (begin, end, strides, masks); arrays never mutated


def _static_signature(key):
    """A hashable signature for keys made only of ints, None, `...` and int slices (else None)."""
    sig = []
    for k in key:
        tk = type(k)
        if tk is int or k is None or k is Ellipsis:
            sig.append(k)
        elif tk is _bslice and type(k.start) in _PLAIN and type(k.stop) in _PLAIN and type(k.step) in _PLAIN:
            sig.append((k.start, k.stop, k.step))
        else:
            return None
    return tuple(sig)


_PLAIN = (int, type(None))


def getitem(tensor, key):
    """`tensor[key]` with TensorFlow's semantics (see the module docstring)."""
    t = tensor if isinstance(tensor, Tensor) else convert_to_tensor(tensor)
    if not isinstance(key, (tuple, list, int, builtins.slice)) and key is not None and key is not Ellipsis:
        special = _whole_key(t, key)
        if special is not None:
            return special
    if not isinstance(key, (tuple, list)):
        key = (key,)
    sig = _static_signature(key)
    parsed = _STATIC_KEYS.get(sig) if sig is not None else None
    if parsed is None:
        parsed = _parse_key(key)
        if sig is not None and parsed[3] is None:
            if len(_STATIC_KEYS) > 1024:
                _STATIC_KEYS.clear()
            _STATIC_KEYS[sig] = parsed
    begin, end, strides, dynamic, masks = parsed[0], parsed[1], parsed[2], parsed[3], parsed[4]
    if dynamic is None:
        return execute(STRIDED_SLICE, (t, int_const(begin), int_const(end), int_const(strides)), masks)
    bt, et, stt = (pack_ints(v, "index", "StridedSlice") if any(isinstance(c, Tensor) for c in v)
                   else int_const(np.array(v, dtype=np.int64 if dynamic else np.int32)) for v in (begin, end, strides))
    return execute(STRIDED_SLICE, (t, bt, et, stt), masks)


def _parse_key(key):
    """(begin, end, strides, dynamic, masks): int arrays and dynamic=None for all-Python keys, else
    lists mixing ints and scalar tensors and dynamic=True/False (whether int64 is needed)."""
    begin, end, strides = [], [], []
    masks = dict.fromkeys(_MASKS, 0)
    dynamic = [False]
    for i, k in enumerate(key):
        bit = 1 << i
        if isinstance(k, _bslice):
            st = 1 if k.step is None else _component(k.step, dynamic)
            if isinstance(st, int) and st == 0:
                raise ValueError("slice step cannot be zero")
            if k.start is None:
                masks["begin_mask"] |= bit
                b = 0
            else:
                b = _component(k.start, dynamic)
            if k.stop is None:
                masks["end_mask"] |= bit
                e = 0
            else:
                e = _component(k.stop, dynamic)
        elif k is Ellipsis:
            if masks["ellipsis_mask"]:
                raise ValueError("multiple ellipses ('...') in one index are not allowed")
            masks["ellipsis_mask"] |= bit
            b, e, st = 0, 0, 1
        elif k is None:
            masks["new_axis_mask"] |= bit
            b, e, st = 0, 0, 1
        else:
            b = _component(k, dynamic)
            masks["shrink_axis_mask"] |= bit
            e, st = (b + 1 if isinstance(b, int) else 0), 1  # end is ignored for shrunk entries
        begin.append(b)
        end.append(e)
        strides.append(st)
    ints = [v for v in begin + end + strides if isinstance(v, int)]
    wide = any(not -_I32_MAX <= v <= _I32_MAX for v in ints)
    if not dynamic[0]:
        dt = np.int64 if wide else np.int32
        return (np.array(begin, dtype=dt), np.array(end, dtype=dt), np.array(strides, dtype=dt), None, masks)
    return begin, end, strides, wide, masks


# ------------------------------------------------------------------ boolean_mask
def boolean_mask(tensor, mask, axis=None, name=None):
    """Entries of `tensor` where `mask` is true; mask covers dims axis..axis+k-1 and they collapse into one."""
    t = tensor if isinstance(tensor, Tensor) else convert_to_tensor(tensor)
    m = mask if isinstance(mask, Tensor) else convert_to_tensor(mask)
    if m.dtype is not bool_:
        raise InvalidArgumentError(f"boolean_mask: mask must be a bool tensor, got {m.dtype.name}",
                                   op_name="boolean_mask")
    k = m.shape.rank
    if k is None:
        raise ValueError("boolean_mask: the number of mask dimensions must be known statically")
    if k == 0:
        raise ValueError("boolean_mask: mask cannot be a scalar")
    a = 0 if axis is None else static_int(axis, "axis", "boolean_mask")
    r = t.shape.rank
    if r is not None:
        a = norm_axis(a, r, "boolean_mask")
        if a + k > r:
            raise ValueError(f"boolean_mask: mask of shape {m.shape} does not fit tensor of shape {t.shape} at "
                             f"axis {a}")
        covered = t.shape[a:a + k]
        if not covered.is_compatible_with(m.shape):
            raise ValueError(f"boolean_mask: mask shape {m.shape} is incompatible with dimensions {a}..{a + k - 1} "
                             f"{covered} of the tensor (shape {t.shape})")
    if k > 1:
        dims = t.shape.dims
        if dims is not None and None not in dims:
            t = reshape(t, list(dims[:a]) + [-1] + list(dims[a + k:]))
        else:
            st = shape(t)
            t = reshape(t, concat([getitem(st, _bslice(None, a)), reduce_prod(getitem(st, _bslice(a, a + k)),
                                                                            keepdims=True),
                                   getitem(st, _bslice(a + k, None))], 0))
        m = reshape(m, [-1])
    idx = reshape(execute(WHERE, (m,), EMPTY), [-1])
    return gather(t, idx, axis=a, name=name)
