"""Metrics (`eager.keras.metrics`): stateful accumulators with Keras's names and arithmetic.

A metric holds non-trainable variables (made at construction, eagerly); `update_state`
accumulates into them with assign ops, so it works eagerly and inside `@function` (the
updates run on every call of the traced function); `result()` computes from the variables;
`reset_state()` zeroes them; `metric(y_true, y_pred)` updates and returns the result.
String names (`get("accuracy")`) map to the classes; "accuracy"/"acc" is resolved against the
loss and the shapes of the data by the model (models/compile_utils.py), as Keras does.
"""
from __future__ import annotations

import numpy as np

from ..convert import constant, convert_to_tensor
from ..module import Module, _camel_to_snake
from ..ops import array as _array
from ..ops import gather as _gather
from ..ops import math as _m
from ..ops import reduction as _red
from . import backend
from . import losses as _losses


def _safe_divide(a, b):
    """a / b, and 0 where b == 0 (TF's divide_no_nan; the division's inf/NaN there is discarded)."""
    return _gather.where(_m.equal(b, 0.0), _array.zeros_like(a), _m.divide(a, b))


def _float(x):
    t = convert_to_tensor(x)
    return t if t.dtype.name == "float32" else _m.cast(t, "float32")


class Metric(Module):
    """Base class: subclasses make their state with `add_variable` and define update_state/result."""

    def __init__(self, name=None, dtype="float32"):
        super().__init__(name or _camel_to_snake(type(self).__name__))
        self._dtype_name = dtype
        self._metric_variables = []

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value):
        self._name = value

    def add_variable(self, shape=(), initializer="zeros", dtype=None, name=None):
        dtype = dtype or self._dtype_name
        value = np.zeros(shape, dtype) if initializer == "zeros" else np.asarray(initializer, dtype)
        var = backend.KerasVariable(value, name=name, path=f"{self._name}/{name}", trainable=False, dtype=dtype)
        self._metric_variables.append(var)
        return var

    @property
    def variables(self) -> tuple:
        return tuple(self._metric_variables)

    @property
    def trainable_variables(self) -> tuple:
        return ()

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define update_state()")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must define result()")

    def reset_state(self) -> None:
        for v in self._metric_variables:
            v.assign(np.zeros(v.shape.as_list(), v.dtype.as_numpy_dtype))

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> dict:
        return {"name": self._name, "dtype": self._dtype_name}


class Mean(Metric):
    """The (weighted) mean of every value passed to update_state."""

    def __init__(self, name="mean", dtype="float32"):
        super().__init__(name, dtype)
        self.total = self.add_variable(name="total")
        self.count = self.add_variable(name="count")

    def update_state(self, values, sample_weight=None):
        values = _float(values)
        if sample_weight is None:
            self.total.assign_add(_red.reduce_sum(values))
            self.count.assign_add(_m.cast(_array.size(values), "float32"))
            return
        w = _float(sample_weight)
        if w.shape.rank is not None and values.shape.rank is not None and w.shape.rank > values.shape.rank:
            w = _array.squeeze(w, axis=[-1])
        w = _m.multiply(_array.ones_like(values), w) if w.shape != values.shape else w
        self.total.assign_add(_red.reduce_sum(_m.multiply(values, w)))
        self.count.assign_add(_red.reduce_sum(w))

    def result(self):
        return _safe_divide(self.total.value(), self.count.value())


class Sum(Metric):
    def __init__(self, name="sum", dtype="float32"):
        super().__init__(name, dtype)
        self.total = self.add_variable(name="total")

    def update_state(self, values, sample_weight=None):
        values = _float(values)
        if sample_weight is not None:
            values = _m.multiply(values, _float(sample_weight))
        self.total.assign_add(_red.reduce_sum(values))

    def result(self):
        return self.total.value()


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred)` over every sample seen."""

    def __init__(self, fn, name=None, dtype="float32", **kwargs):
        super().__init__(name or fn.__name__, dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)


# ------------------------------------------------------------------ per-sample functions
def accuracy(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = _m.cast(convert_to_tensor(y_true), y_pred.dtype)
    return _float(_m.equal(y_true, y_pred))


def _squeeze_labels(y_true, y_pred):
    y_true = convert_to_tensor(y_true)
    if y_true.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank and y_true.shape.rank > 1:
        y_true = _array.squeeze(y_true, axis=[-1])
    return y_true


def sparse_categorical_accuracy(y_true, y_pred):
    y_pred = convert_to_tensor(y_pred)
    y_true = _squeeze_labels(y_true, y_pred)
    predicted = _red.argmax(y_pred, axis=-1, output_type="int32")
    return _float(_m.equal(_m.cast(y_true, "int32"), predicted))


def categorical_accuracy(y_true, y_pred):
    return _float(_m.equal(_red.argmax(y_true, axis=-1), _red.argmax(y_pred, axis=-1)))


def binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = convert_to_tensor(y_pred)
    y_true = _m.cast(convert_to_tensor(y_true), y_pred.dtype)
    predicted = _m.cast(_m.greater(y_pred, threshold), y_pred.dtype)
    return _float(_m.equal(y_true, predicted))


class Accuracy(MeanMetricWrapper):
    def __init__(self, name="accuracy", dtype="float32"):
        super().__init__(accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="sparse_categorical_accuracy", dtype="float32"):
        super().__init__(sparse_categorical_accuracy, name, dtype)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name="categorical_accuracy", dtype="float32"):
        super().__init__(categorical_accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name="binary_accuracy", dtype="float32", threshold=0.5):
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name="mean_squared_error", dtype="float32"):
        super().__init__(_losses.mean_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name="mean_absolute_error", dtype="float32"):
        super().__init__(_losses.mean_absolute_error, name, dtype)


# ------------------------------------------------------------------ confusion-matrix metrics
def _confusion(y_true, y_pred, thresholds, sample_weight):
    """Per threshold: (tp, fp, tn, fn) sums of the weights, predictions `> threshold` positive."""
    y_pred = _array.reshape(_float(y_pred), [1, -1])
    label = _array.reshape(_float(_m.cast(_m.greater(_float(y_true), 0.5), "float32")), [1, -1])
    pos = _float(_m.greater(y_pred, _array.reshape(constant(np.asarray(thresholds, np.float32)), [-1, 1])))
    neg_label, neg = _m.subtract(1.0, label), _m.subtract(1.0, pos)
    w = _array.ones_like(label) if sample_weight is None else \
        _m.multiply(_array.ones_like(label), _array.reshape(_float(sample_weight), [1, -1]))
    total = lambda a, b: _red.reduce_sum(_m.multiply(_m.multiply(a, b), w), axis=1)   # noqa: E731
    return total(pos, label), total(pos, neg_label), total(neg, neg_label), total(neg, label)


class _Thresholded(Metric):
    _kinds = ()

    def __init__(self, thresholds=None, name=None, dtype="float32"):
        super().__init__(name, dtype)
        self._single = thresholds is None or np.ndim(thresholds) == 0
        self.thresholds = [0.5 if thresholds is None else float(thresholds)] if self._single \
            else [float(t) for t in thresholds]
        for kind in self._kinds:
            setattr(self, kind, self.add_variable((len(self.thresholds),), name=kind))

    def update_state(self, y_true, y_pred, sample_weight=None):
        tp, fp, tn, fn = _confusion(y_true, y_pred, self.thresholds, sample_weight)
        for kind, value in (("true_positives", tp), ("false_positives", fp), ("true_negatives", tn),
                            ("false_negatives", fn)):
            if kind in self._kinds:
                getattr(self, kind).assign_add(value)

    def _out(self, value):
        return value[0] if self._single else value


class Precision(_Thresholded):
    _kinds = ("true_positives", "false_positives")

    def __init__(self, thresholds=None, name="precision", dtype="float32"):
        super().__init__(thresholds, name, dtype)

    def result(self):
        tp = self.true_positives.value()
        return self._out(_safe_divide(tp, _m.add(tp, self.false_positives.value())))


class Recall(_Thresholded):
    _kinds = ("true_positives", "false_negatives")

    def __init__(self, thresholds=None, name="recall", dtype="float32"):
        super().__init__(thresholds, name, dtype)

    def result(self):
        tp = self.true_positives.value()
        return self._out(_safe_divide(tp, _m.add(tp, self.false_negatives.value())))


class AUC(_Thresholded):
    """Area under the ROC or PR curve from `num_thresholds` evenly spaced thresholds (Keras's
    thresholds: -1e-7, 1/(n-1), ..., (n-2)/(n-1), 1 + 1e-7), summed by interpolation (trapezoids;
    for PR, Davis & Goadrich's interpolation, as Keras), `minoring` or `majoring`."""

    _kinds = ("true_positives", "false_positives", "true_negatives", "false_negatives")

    def __init__(self, num_thresholds=200, curve="ROC", summation_method="interpolation", name="auc",
                 dtype="float32", from_logits=False):
        if num_thresholds <= 1:
            raise ValueError(f"AUC: num_thresholds must be > 1, got {num_thresholds}")
        if curve not in ("ROC", "PR"):
            raise ValueError(f"AUC: curve must be 'ROC' or 'PR', got {curve!r}")
        if summation_method not in ("interpolation", "minoring", "majoring"):
            raise ValueError(f"AUC: unknown summation_method {summation_method!r}")
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.num_thresholds, self.curve, self.summation_method = num_thresholds, curve, summation_method
        self.from_logits = from_logits
        super().__init__([-1e-7] + inner + [1.0 + 1e-7], name, dtype)

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.from_logits:
            y_pred = _m.sigmoid(_float(y_pred))
        super().update_state(y_true, y_pred, sample_weight)

    def result(self):
        n = self.num_thresholds
        tp, fp = self.true_positives.value(), self.false_positives.value()
        tn, fn = self.true_negatives.value(), self.false_negatives.value()
        if self.curve == "PR" and self.summation_method == "interpolation":
            return self._interpolate_pr(tp, fp, fn)
        recall = _safe_divide(tp, _m.add(tp, fn))
        if self.curve == "ROC":
            x, y = _safe_divide(fp, _m.add(fp, tn)), recall
        else:
            x, y = recall, _safe_divide(tp, _m.add(tp, fp))
        lo, hi = y[:n - 1], y[1:]
        heights = {"interpolation": lambda: _m.multiply(_m.add(lo, hi), 0.5),
                   "minoring": lambda: _m.minimum(lo, hi), "majoring": lambda: _m.maximum(lo, hi)}
        return _red.reduce_sum(_m.multiply(_m.subtract(x[:n - 1], x[1:]), heights[self.summation_method]()))

    def _interpolate_pr(self, tp, fp, fn):
        n = self.num_thresholds
        dtp = _m.subtract(tp[:n - 1], tp[1:])
        p = _m.add(tp, fp)
        dp = _m.subtract(p[:n - 1], p[1:])
        slope = _safe_divide(dtp, _m.maximum(dp, 0.0))
        intercept = _m.subtract(tp[1:], _m.multiply(slope, p[1:]))
        both = _m.logical_and(_m.greater(p[:n - 1], 0.0), _m.greater(p[1:], 0.0))
        ratio = _gather.where(both, _safe_divide(p[:n - 1], _m.maximum(p[1:], 0.0)), _array.ones_like(p[1:]))
        inc = _safe_divide(_m.multiply(slope, _m.add(dtp, _m.multiply(intercept, _m.log(ratio)))),
                           _m.maximum(_m.add(tp[1:], fn[1:]), 0.0))
        return _red.reduce_sum(inc)


_BY_NAME = {"mean": Mean, "sum": Sum, "accuracy": Accuracy, "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "categorical_accuracy": CategoricalAccuracy, "binary_accuracy": BinaryAccuracy,
            "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError, "mean_absolute_error": MeanAbsoluteError,
            "mae": MeanAbsoluteError, "auc": AUC, "precision": Precision, "recall": Recall}


def get(identifier) -> Metric:
    """A Metric from an instance, a class, a function `(y_true, y_pred) -> per-sample values`, or a name."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"unknown metric {identifier!r}; known names: {sorted(_BY_NAME)}")
        return cls()
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise ValueError(f"cannot interpret {identifier!r} as a metric")
