"""Gradient clipping: `clip_by_norm`, `global_norm`, `clip_by_global_norm` (TensorFlow's formulas).

Written with public ops, so they run eagerly, in graphs and under
`@function`, and differentiate.  `clip_by_value` lives with its kernel in
`linalg.py`.  `keras_clip_by_norm` and `keras_clip_by_global_norm` are the
variants Keras 3's optimizers use (`clipnorm`, `global_clipnorm`): the same
arithmetic except that Keras's global norm sums squares where TensorFlow's
sums half squares and doubles, which can differ in the last bit.
"""
from __future__ import annotations

from ..convert import convert_to_tensor
from .array import ones_like, stack
from .gather import where
from .math import add, cast, divide, greater, maximum, minimum, multiply, sqrt, square, subtract
from .reduction import reduce_sum

__all__ = ["clip_by_norm", "global_norm", "clip_by_global_norm"]


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """`t * clip_norm / max(l2norm(t, axes), clip_norm)`; a zero tensor stays zero (no NaN gradient)."""
    t = convert_to_tensor(t)
    clip_norm = cast(convert_to_tensor(clip_norm), t.dtype)
    l2sum = reduce_sum(square(t), axes, keepdims=True)
    pred = greater(l2sum, 0)
    l2sum_safe = where(pred, l2sum, ones_like(l2sum))      # two-tap where: no NaN gradient at zero
    l2norm = where(pred, sqrt(l2sum_safe), l2sum)
    return divide(multiply(t, clip_norm), maximum(l2norm, clip_norm))


keras_clip_by_norm = clip_by_norm      # Keras's optimizer clipnorm is the same expression


def _global_norm(t_list, halves):
    ts = [convert_to_tensor(t) for t in t_list if t is not None]
    if not ts:
        raise ValueError("global_norm: t_list holds no tensor (every entry is None)")
    dtypes = {t.dtype for t in ts}
    if len(dtypes) > 1:
        raise ValueError(f"global_norm: every tensor must have one dtype, got {sorted(d.name for d in dtypes)}")
    if halves:   # TensorFlow: sqrt(2 * sum(l2_loss(t)))
        return sqrt(multiply(reduce_sum(stack([multiply(reduce_sum(square(t)), 0.5) for t in ts])), 2.0))
    return sqrt(reduce_sum(stack([reduce_sum(square(t)) for t in ts])))


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor); None entries are ignored."""
    return _global_norm(t_list, halves=True)


def _scale(t_list, clip_norm, use_norm):
    clip_norm = cast(convert_to_tensor(clip_norm), use_norm.dtype)
    one = cast(convert_to_tensor(1.0), use_norm.dtype)
    scale_for_finite = multiply(clip_norm, minimum(divide(one, use_norm), divide(one, clip_norm)))
    scale = add(scale_for_finite, subtract(use_norm, use_norm))    # NaN when the norm is inf or NaN
    return [None if t is None else multiply(t, scale) for t in t_list]


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(clipped list, global norm): every tensor scaled by clip_norm / max(global_norm, clip_norm)."""
    t_list = list(t_list)
    use_norm = global_norm(t_list) if use_norm is None else convert_to_tensor(use_norm)
    return _scale(t_list, clip_norm, use_norm), use_norm


def keras_clip_by_global_norm(t_list, clip_norm):
    """Keras 3's `global_clipnorm`: the clipped list only, with Keras's sum of squares."""
    t_list = list(t_list)
    return _scale(t_list, clip_norm, _global_norm(t_list, halves=False))
