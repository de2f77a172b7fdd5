"""compile / fit / evaluate / predict / train_on_batch / test_on_batch (mixed into `Model`).

The train, test and predict steps (`train_step(data)`, `test_step(data)`, `predict_step(data)`,
which a subclass may override, as in Keras) each run as one compiled function, made through
`eager.compiler_hook.function_compiler()` with `reduce_retracing=True`: eager code may not
import `tracing`, which registers itself as that compiler.  Before the first call of a step
with a new batch structure, the function is traced from TensorSpecs whose batch dimension is
None, so one trace serves every batch size, the final partial batch included.  With
`run_eagerly=True` the steps run as plain Python.

Metric state lives in variables that the compiled steps update; `fit` reads the logs (loss
tracker and metric results) as scalar tensors and turns them into floats at the end of each
epoch (and whenever a per-batch callback or the progress bar reads them).
"""
from __future__ import annotations

import numpy as np

from ... import nest
from ...compiler_hook import function_compiler
from ...ops import array as _array
from ...ops import math as _m
from ...ops.linalg import add_n
from ...tape import GradientTape
from ...tensor import Tensor
from ...tensor_spec import TensorSpec
from .. import metrics as _metrics
from ..callbacks import CallbackList, History, ProgbarLogger
from . import compile_utils
from .data_adapter import (ArrayAdapter, ClassWeighted, adapter, class_sample_weights, is_dataset,
                           unpack_validation)

_KINDS = ("train", "test", "predict")


class _Step:
    """One kind of step compiled once: batches with the same structure share one trace."""

    def __init__(self, model, kind):
        self.model, self.kind = model, kind
        self.structures: list = []          # (template, number of leaves, positions of the tensors)
        self.specs: dict = {}
        self._flat_index: dict = {}
        step = getattr(model, f"{kind}_step")

        def run(structure_index, *tensors):
            template, n, positions = self.structures[structure_index]
            leaves = [None] * n
            for p, t in zip(positions, tensors):
                leaves[p] = t
            return step(nest.pack_sequence_as(template, leaves))
        self.eager = model.run_eagerly
        self.fn = run if self.eager else function_compiler()(run, reduce_retracing=True)

    def __call__(self, data):
        if type(data) is tuple and all(d is None or type(d) is Tensor for d in data):
            # the common batch (x, y, sample_weight) of plain tensors: no structure walk per step
            key = tuple(d is not None for d in data)
            index = self._flat_index.get(key)
            if index is not None:
                return self.fn(index, *[d for d in data if d is not None])
        leaves = nest.flatten(data)
        positions = tuple(i for i, leaf in enumerate(leaves) if leaf is not None)
        key = (nest.map_structure(lambda _: 0, data), len(leaves), positions)
        try:
            index = self.structures.index(key)
        except ValueError:
            index = len(self.structures)
            self.structures.append(key)
        tensors = [leaves[p] for p in positions]
        if type(data) is tuple and all(d is None or type(d) is Tensor for d in data):
            self._flat_index[tuple(d is not None for d in data)] = index
        if not self.eager and index not in self.specs:
            self.specs[index] = [TensorSpec([None] + t.shape.as_list()[1:], t.dtype) for t in tensors]
            self.fn.get_concrete_function(index, *self.specs[index])
        return self.fn(index, *tensors)

    def concrete(self):
        """The traced function of the first batch structure (None when running eagerly)."""
        if self.eager or not self.specs:
            return None
        return self.fn.get_concrete_function(0, *self.specs[0])


class Trainer:
    def _init_trainer(self):
        self.optimizer = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self.run_eagerly = False
        self._steps = {}
        self._compile_loss = None
        self._compile_metrics = None
        self._metric_identifiers = []
        self._loss_tracker = None

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, run_eagerly=False, jit_compile="auto",
                steps_per_execution=1, **kwargs):
        if kwargs:
            raise TypeError(f"compile: unsupported argument(s) {sorted(kwargs)}")
        self.optimizer = compile_utils.get_optimizer(optimizer)
        self._compile_loss = compile_utils.CompileLoss(loss) if loss is not None else None
        self._metric_identifiers = list(nest.flatten(metrics)) if metrics else []
        self._compile_metrics = None
        self._loss_tracker = _metrics.Mean(name="loss")
        self.run_eagerly = bool(run_eagerly)
        self._steps = {}
        self.compiled = True

    # ------------------------------------------------------------------ what the steps compute
    @property
    def metrics(self) -> list:
        out = [self._loss_tracker] if self._loss_tracker is not None else []
        return out + list(self._compile_metrics or [])

    @property
    def metrics_names(self) -> list:
        return [m.name for m in self.metrics]

    def reset_metrics(self) -> None:
        for m in self.metrics:
            m.reset_state()

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
        if self._compile_loss is None:
            raise ValueError(f"model {self.name!r} has no loss: pass loss= to compile(), or override train_step")
        if y is None:
            raise ValueError("the data has no targets (y) to compute the loss against")
        loss = self._compile_loss(y, y_pred, sample_weight)
        extra = self.losses                    # add_loss values and weight regularization, as Keras adds them
        if extra:
            loss = add_n([loss] + [_m.cast(v, loss.dtype) for v in extra])
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None, loss=None):
        if self._compile_metrics is None:
            self._compile_metrics = compile_utils.resolve_metrics(self._metric_identifiers, y, y_pred)
        logs = {}
        if loss is not None:
            # the loss tracker's update, written out: the mean over samples of the batch losses, and
            # its result from the updated values (2 fewer reads and no zero-count guard per step)
            batch = _m.cast(_array.shape(nest.flatten(x)[0])[0], "float32")
            tracker = self._loss_tracker
            total = tracker.total.assign_add(_m.multiply(_m.cast(loss, "float32"), batch))
            count = tracker.count.assign_add(batch)
            logs["loss"] = _m.divide(total, count)
        for m in self._compile_metrics:
            m.update_state(y, y_pred, sample_weight)
            logs[m.name] = m.result()
        return logs

    def train_step(self, data):
        x, y, sample_weight = data
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x, y, y_pred, sample_weight)
        variables = list(self.trainable_variables)
        grads = tape.gradient(loss, variables)
        self.optimizer.apply_gradients(zip(grads, variables))
        return self.compute_metrics(x, y, y_pred, sample_weight, loss)

    def test_step(self, data):
        x, y, sample_weight = data
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight)
        return self.compute_metrics(x, y, y_pred, sample_weight, loss)

    def predict_step(self, data):
        return self(data[0], training=False)

    def _step(self, kind):
        step = self._steps.get(kind)
        if step is None:
            step = self._steps[kind] = _Step(self, kind)
        return step

    def _traced_train_step(self):
        step = self._steps.get("train")
        return step.concrete() if step is not None else None

    def _check_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"{what}: compile the model first (model.compile(optimizer, loss, metrics))")

    # ------------------------------------------------------------------ loops
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0,
            steps_per_epoch=None, validation_steps=None, validation_batch_size=None, validation_freq=1):
        self._check_compiled("fit")
        data = adapter(x, y, sample_weight, batch_size, shuffle, steps_per_epoch, "fit")
        val = None
        if validation_split:
            if not isinstance(data, ArrayAdapter):
                raise ValueError("fit: validation_split works on arrays and tensors only; pass validation_data "
                                 "with a dataset")
            data, val = data.split(validation_split)
        if class_weight is not None:
            data = ClassWeighted(data, class_weight)
        if validation_data is not None:
            vx, vy, vw = unpack_validation(validation_data)
            val_batch = None if is_dataset(vx) else (validation_batch_size or batch_size)
            val = adapter(vx, vy, vw, val_batch, False, validation_steps, "fit(validation_data)")
        verbose = _verbosity(verbose)
        history = History()
        extra = [ProgbarLogger(verbose)] if verbose else []
        cbs = CallbackList(list(callbacks or []) + extra + [history], self,
                           {"epochs": epochs, "steps": data.num_batches, "verbose": verbose})
        train = self._step("train")
        self.stop_training = False
        cbs.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            epoch_logs = self._run_batches(train, data, cbs, "train", "fit")
            if val is not None and (epoch + 1 - initial_epoch) % validation_freq == 0:
                val_logs = self._run_test(val, cbs)
                epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end()
        self.history = history
        return history

    def _run_test(self, data, cbs):
        test = self._step("test")
        self.reset_metrics()
        cbs.on_test_begin()
        logs = self._run_batches(test, data, cbs, "test", "evaluate")
        cbs.on_test_end(logs)
        return logs

    def _run_batches(self, step, data, cbs, kind, what):
        """Run `step` on every batch (calling the batch hooks that exist); the last logs, as floats."""
        begin, end = getattr(cbs, f"on_{kind}_batch_begin"), getattr(cbs, f"on_{kind}_batch_end")
        hooks = cbs.has_batch_hooks(kind)
        logs = None
        for i, batch in enumerate(data):
            if hooks:
                begin(i)
            logs = step(batch)
            if hooks:
                end(i, logs)
            if self.stop_training and kind == "train":
                break
        if logs is None:
            raise ValueError(f"{what}: the data yielded no batch")
        return {k: float(v) for k, v in logs.items()}

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, steps=None,
                 callbacks=None, return_dict=False):
        self._check_compiled("evaluate")
        data = adapter(x, y, sample_weight, batch_size, False, steps, "evaluate")
        verbose = _verbosity(verbose)
        cbs = CallbackList(list(callbacks or []) + ([ProgbarLogger(verbose)] if verbose else []), self,
                           {"steps": data.num_batches, "verbose": verbose})
        logs = self._run_test(data, cbs)
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        data = adapter(x, None, None, batch_size, False, steps, "predict")
        verbose = _verbosity(verbose)
        cbs = CallbackList(list(callbacks or []) + ([ProgbarLogger(verbose)] if verbose else []), self,
                           {"steps": data.num_batches, "verbose": verbose})
        predict = self._step("predict")
        cbs.on_predict_begin()
        outputs = []
        for i, batch in enumerate(data):
            out = predict((batch[0], None, None))
            outputs.append(nest.map_structure(lambda t: np.asarray(t), out))
            cbs.on_predict_batch_end(i, {"outputs": out})
        if not outputs:
            raise ValueError("predict: the data yielded no batch")
        cbs.on_predict_end()
        return nest.map_structure(lambda *parts: np.concatenate(parts, axis=0), *outputs)

    def _on_batch(self, kind, x, y, sample_weight, return_dict):
        self._check_compiled(f"{kind}_on_batch")
        self.reset_metrics()
        batch = _single_batch(x, y, sample_weight)
        logs = {k: float(v) for k, v in self._step(kind)(batch).items()}
        if return_dict:
            return logs
        values = [logs[name] for name in self.metrics_names]
        return values[0] if len(values) == 1 else values

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One update on this batch; returns the loss computed before the update (with metrics, a list)."""
        if class_weight is not None:
            sample_weight = class_sample_weights(y, class_weight, sample_weight)
        return self._on_batch("train", x, y, sample_weight, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        return self._on_batch("test", x, y, sample_weight, return_dict)

    def predict_on_batch(self, x):
        batch = _single_batch(x)
        # NumPy arrays of their own, as Keras returns them (a tensor's `np.asarray` is a read-only view)
        return nest.map_structure(lambda t: t.numpy(), self._step("predict")((batch[0], None, None)))


def _single_batch(x, y=None, sample_weight=None):
    data = ArrayAdapter(x, y, sample_weight)
    data.batch_size = data.n
    return next(iter(data))


def _verbosity(verbose):
    if verbose == "auto":
        return 1
    if verbose not in (0, 1, 2):
        raise ValueError(f"verbose must be 'auto', 0, 1 or 2, got {verbose!r}")
    return verbose
