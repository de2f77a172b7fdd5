"""Callback, CallbackList, History, ProgbarLogger and LambdaCallback.

Hooks and their order follow Keras 3: on_train_begin, then per epoch on_epoch_begin,
on_train_batch_begin/end per step, the validation run (on_test_*), on_epoch_end with the
epoch's logs (`loss`, metrics, `val_*`), and on_train_end.  `logs` values during an epoch are
scalar tensors (converted to floats only when something reads them); epoch logs are floats.
A callback sets `model.stop_training = True` to end `fit` after the current epoch.
"""
from __future__ import annotations

from ..progbar import Progbar

_BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_test_batch_begin", "on_test_batch_end",
                "on_predict_batch_begin", "on_predict_batch_end")


class Callback:
    def __init__(self):
        self.model = None
        self.params = {}

    def set_model(self, model):
        self.model = model

    def set_params(self, params):
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


class CallbackList:
    """Calls every callback's hook in order; batch hooks only on the callbacks that define them."""

    def __init__(self, callbacks, model, params):
        self.callbacks = list(callbacks)
        for cb in self.callbacks:
            cb.set_model(model)
            cb.set_params(params)
        self._batch = {hook: [getattr(cb, hook) for cb in self.callbacks if _overrides(cb, hook)]
                       for hook in _BATCH_HOOKS}

    def __getattr__(self, hook):
        if hook.startswith("on_") and hook in _BATCH_HOOKS:
            fns = self._batch[hook]

            def call_batch(batch, logs=None):
                logs = {} if logs is None else logs
                for fn in fns:
                    fn(batch, logs)
            return call_batch
        if hook.startswith("on_"):
            arity = 2 if hook.startswith("on_epoch_") else 1      # (epoch, logs) or (logs): logs always given

            def call(*args):
                args = args + ({},) * (arity - len(args))
                for cb in self.callbacks:
                    getattr(cb, hook)(*args)
            return call
        raise AttributeError(hook)

    def has_batch_hooks(self, kind: str) -> bool:
        return bool(self._batch[f"on_{kind}_batch_begin"] or self._batch[f"on_{kind}_batch_end"])


def _overrides(cb, hook) -> bool:
    fn = getattr(cb, hook)
    return getattr(fn, "__func__", None) is not getattr(Callback, hook)


class History(Callback):
    """Records the epoch logs: `history.history["loss"]` is the list of epoch losses."""

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


class ProgbarLogger(Callback):
    """Draws the progress bar (progbar.py) of fit/evaluate/predict for verbose 1 and 2."""

    def __init__(self, verbose=1, stream=None):
        super().__init__()
        self.verbose, self.stream = verbose, stream
        self._bar = None
        self._seen = 0
        self._in_fit = False

    def _start(self, target, prefix=""):
        self._bar = Progbar(target, self.verbose, self.stream, prefix=prefix)
        self._seen = 0

    def on_train_begin(self, logs=None):
        self._in_fit = True

    def on_train_end(self, logs=None):
        self._in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        epochs = self.params.get("epochs", 1)
        if self._bar_is_dynamic():
            print(f"Epoch {epoch + 1}/{epochs}", file=self.stream, flush=True)
            self._start(self.params.get("steps"))
        else:
            self._start(self.params.get("steps"), prefix=f"Epoch {epoch + 1}/{epochs} - ")

    def _bar_is_dynamic(self) -> bool:
        return Progbar(1, self.verbose, self.stream).dynamic

    def on_train_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self._bar.dynamic:
            self._bar.update(self._seen, _items(logs))

    def on_epoch_end(self, epoch, logs=None):
        if self._bar.target is None:
            self._bar.target = self._seen
        self._bar.update(self._seen, _items(logs), finalize=True)

    def on_test_begin(self, logs=None):
        if not self._in_fit:
            self._start(self.params.get("steps"))

    def on_test_batch_end(self, batch, logs=None):
        if not self._in_fit:
            self._seen = batch + 1
            if self._bar.dynamic:
                self._bar.update(self._seen, _items(logs))

    def on_test_end(self, logs=None):
        if not self._in_fit:
            if self._bar.target is None:
                self._bar.target = self._seen
            self._bar.update(self._seen, _items(logs), finalize=True)

    on_predict_begin = on_test_begin

    def on_predict_batch_end(self, batch, logs=None):
        self._seen = batch + 1
        if self._bar.dynamic:
            self._bar.update(self._seen)

    def on_predict_end(self, logs=None):
        if self._bar.target is None:
            self._bar.target = self._seen
        self._bar.update(self._seen, finalize=True)


def _items(logs):
    return [(k, v) for k, v in (logs or {}).items()]


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_begin/end(epoch, logs), on_train_batch_begin/end(batch, logs),
    on_train_begin/end(logs) (Keras's names; on_batch_begin/end are the train batch hooks)."""

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None, on_train_end=None,
                 on_train_batch_begin=None, on_train_batch_end=None, on_batch_begin=None, on_batch_end=None,
                 **kwargs):
        super().__init__()
        hooks = {"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end, "on_train_begin": on_train_begin,
                 "on_train_end": on_train_end, "on_train_batch_begin": on_train_batch_begin or on_batch_begin,
                 "on_train_batch_end": on_train_batch_end or on_batch_end, **kwargs}
        for name, fn in hooks.items():
            if not hasattr(Callback, name):
                raise TypeError(f"LambdaCallback: unknown hook {name!r}")
            if fn is not None:
                setattr(self, name, fn)
