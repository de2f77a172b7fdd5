"""What `compile` turns its arguments into: the optimizer, the loss and the metrics.

- Optimizers by object or name (`"adam"`, `"sgd"`): `eager.keras.optimizers.get`.  Their
  learning rate is a variable, so a callback that changes it (LearningRateScheduler,
  ReduceLROnPlateau) changes what the compiled train step uses without a retrace.
- The loss: one loss (object, name or function) for a single output, or a list for a list of
  outputs (summed).
- Metrics are resolved when the first batch is seen (Keras resolves "accuracy" from the
  shapes: binary when the prediction has one unit, sparse categorical when the labels are
  indices, categorical otherwise).  A metric given by name keeps that name in the logs.
"""
from __future__ import annotations

from ... import nest
from .. import losses as _losses
from .. import metrics as _metrics
from .. import optimizers as _optimizers


def get_optimizer(identifier):
    return _optimizers.get(identifier)


class CompileLoss:
    def __init__(self, loss):
        self.structure = loss
        self.losses = [_losses.get(l) for l in nest.flatten(loss)]

    def __call__(self, y_true, y_pred, sample_weight=None):
        if len(self.losses) == 1:
            return self.losses[0](y_true, y_pred, sample_weight)
        trues, preds = nest.flatten(y_true), nest.flatten(y_pred)
        if not len(trues) == len(preds) == len(self.losses):
            raise ValueError(f"compile got {len(self.losses)} losses for {len(preds)} model outputs and "
                             f"{len(trues)} targets")
        total = None
        for loss, t, p in zip(self.losses, trues, preds):
            value = loss(t, p, sample_weight)
            total = value if total is None else total + value
        return total


def _accuracy_for(y_true, y_pred):
    pred_shape, true_shape = y_pred.shape.as_list(), y_true.shape.as_list()
    if pred_shape and pred_shape[-1] == 1:
        return _metrics.binary_accuracy
    if len(true_shape) == len(pred_shape) - 1 or (len(true_shape) == len(pred_shape) and true_shape[-1] == 1):
        return _metrics.sparse_categorical_accuracy
    return _metrics.categorical_accuracy


def resolve_metric(identifier, y_true, y_pred):
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
        return _metrics.MeanMetricWrapper(_accuracy_for(y_true, y_pred), name=identifier)
    metric = _metrics.get(identifier)
    if isinstance(identifier, str):
        metric.name = identifier
    return metric


def resolve_metrics(identifiers, y_true, y_pred) -> list:
    if y_true is None and identifiers:
        raise ValueError("compile(metrics=...) needs targets: the data has no y")
    if identifiers and (len(nest.flatten(y_true)) > 1 or len(nest.flatten(y_pred)) > 1):
        raise ValueError("compile(metrics=...) with several model outputs is not supported yet: compute them in "
                         "a custom train_step, or use a single output")
    out = [resolve_metric(m, y_true, y_pred) for m in identifiers]
    names = [m.name for m in out]
    if len(set(names)) != len(names) or "loss" in names:
        raise ValueError(f"metric names must be distinct and not 'loss', got {names}")
    return out
