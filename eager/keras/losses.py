"""Losses (`eager.keras.losses`): classes, functions and Keras's string names.

A loss function `fn(y_true, y_pred)` returns one value per sample (the mean over the last
axis where Keras takes it); a `Loss` object reduces those: "sum_over_batch_size" (the
default: the sum of the weighted per-sample values over their count), "sum" or "none".
`y_true` is cast to `y_pred`'s dtype (class indices for the sparse loss are cast to int32).
Probabilities are clipped to [1e-7, 1 - 1e-7] before the log, as Keras does.
"""
from __future__ import annotations

from ..convert import convert_to_tensor
from ..ops import array as _array
from ..ops.linalg import clip_by_value
from ..ops import math as _m
from ..ops import nn as _nn
from ..ops import reduction as _red

EPSILON = 1e-7


def _pair(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true)
    if y_true.dtype != y_pred.dtype:
        y_true = _m.cast(y_true, y_pred.dtype)
    return y_true, y_pred


def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return _red.reduce_mean(_m.square(_m.subtract(y_pred, y_true)), axis=-1)


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _pair(y_true, y_pred)
    return _red.reduce_mean(_m.abs(_m.subtract(y_pred, y_true)), axis=-1)


def huber(y_true, y_pred, delta=1.0):
    y_true, y_pred = _pair(y_true, y_pred)
    err = _m.abs(_m.subtract(y_pred, y_true))
    quad = _m.minimum(err, delta)
    lin = _m.subtract(err, quad)
    return _red.reduce_mean(_m.add(_m.multiply(_m.square(quad), 0.5), _m.multiply(lin, delta)), axis=-1)


def _clipped_log(p):
    return _m.log(clip_by_value(p, EPSILON, 1.0 - EPSILON))


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        n = y_pred.shape.as_list()[axis]
        y_true = _m.add(_m.multiply(y_true, 1.0 - label_smoothing), label_smoothing / n)
    if from_logits:
        return _nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    y_pred = _m.divide(y_pred, _red.reduce_sum(y_pred, axis=axis, keepdims=True))
    return _m.negative(_red.reduce_sum(_m.multiply(y_true, _clipped_log(y_pred)), axis=axis))


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False):
    y_pred = convert_to_tensor(y_pred)
    labels = convert_to_tensor(y_true)
    if labels.shape.rank is not None and labels.shape.rank == y_pred.shape.rank:
        if labels.shape.as_list()[-1] != 1:
            raise ValueError(f"sparse_categorical_crossentropy: y_true should hold class indices of shape "
                             f"{y_pred.shape.as_list()[:-1]} (or with a trailing 1), got {labels.shape}; "
                             f"use categorical_crossentropy for one-hot labels")
        labels = _array.squeeze(labels, axis=[-1])
    if labels.dtype.name != "int32":
        labels = _m.cast(labels, "int32")
    # probabilities: TF's Keras takes log(clip(p)) as logits, so unnormalized rows are renormalized
    logits = y_pred if from_logits else _clipped_log(y_pred)
    return _nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0):
    y_true, y_pred = _pair(y_true, y_pred)
    if label_smoothing:
        y_true = _m.add(_m.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:
        per = _nn.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    else:
        p = clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
        per = _m.negative(_m.add(_m.multiply(y_true, _m.log(p)),
                                 _m.multiply(_m.subtract(1.0, y_true), _m.log(_m.subtract(1.0, p)))))
    return _red.reduce_mean(per, axis=-1)


_REDUCTIONS = ("sum_over_batch_size", "sum", "none", None)


class Loss:
    """A loss object: `loss(y_true, y_pred, sample_weight=None)` -> the reduced loss."""

    def __init__(self, name=None, reduction="sum_over_batch_size"):
        if reduction not in _REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
        self.name = name or _snake(type(self).__name__)
        self.reduction = reduction

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred)")

    def __call__(self, y_true, y_pred, sample_weight=None):
        values = self.call(y_true, y_pred)
        if sample_weight is None and self.reduction == "sum_over_batch_size":
            return _red.reduce_mean(values)
        if sample_weight is not None:
            w = _m.cast(convert_to_tensor(sample_weight), values.dtype)
            if w.shape.rank is not None and values.shape.rank is not None and w.shape.rank > values.shape.rank:
                w = _array.squeeze(w, axis=[-1])
            values = _m.multiply(values, w)
        if self.reduction in ("none", None):
            return values
        total = _red.reduce_sum(values)
        if self.reduction == "sum":
            return total
        return _m.divide(total, _m.cast(_array.size(values), values.dtype))

    def get_config(self) -> dict:
        return {"name": self.name, "reduction": self.reduction}


def _snake(name):
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


class LossFunctionWrapper(Loss):
    def __init__(self, fn, name=None, reduction="sum_over_batch_size", **kwargs):
        super().__init__(name or fn.__name__, reduction)
        self.fn, self._fn_kwargs = fn, kwargs

    def call(self, y_true, y_pred):
        return self.fn(y_true, y_pred, **self._fn_kwargs)


class MeanSquaredError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="mean_squared_error"):
        super().__init__(mean_squared_error, name, reduction)


class MeanAbsoluteError(LossFunctionWrapper):
    def __init__(self, reduction="sum_over_batch_size", name="mean_absolute_error"):
        super().__init__(mean_absolute_error, name, reduction)


class Huber(LossFunctionWrapper):
    def __init__(self, delta=1.0, reduction="sum_over_batch_size", name="huber_loss"):
        super().__init__(huber, name, reduction, delta=delta)


class CategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, axis=-1, reduction="sum_over_batch_size",
                 name="categorical_crossentropy"):
        super().__init__(categorical_crossentropy, name, reduction, from_logits=from_logits,
                         label_smoothing=label_smoothing, axis=axis)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, reduction="sum_over_batch_size", name="sparse_categorical_crossentropy"):
        super().__init__(sparse_categorical_crossentropy, name, reduction, from_logits=from_logits)


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits=False, label_smoothing=0.0, reduction="sum_over_batch_size",
                 name="binary_crossentropy"):
        super().__init__(binary_crossentropy, name, reduction, from_logits=from_logits,
                         label_smoothing=label_smoothing)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

_BY_NAME = {"mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
            "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError, "huber": Huber,
            "huber_loss": Huber, "categorical_crossentropy": CategoricalCrossentropy,
            "sparse_categorical_crossentropy": SparseCategoricalCrossentropy,
            "binary_crossentropy": BinaryCrossentropy}


def get(identifier) -> Loss:
    """A `Loss` from an instance, a class, a function `(y_true, y_pred) -> per-sample`, or a name."""
    if isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier) or _BY_NAME.get(_snake(identifier))
        if cls is None:
            raise ValueError(f"unknown loss {identifier!r}; known names: {sorted(_BY_NAME)}")
        return cls()
    if callable(identifier):
        return LossFunctionWrapper(identifier)
    raise ValueError(f"cannot interpret {identifier!r} as a loss")
