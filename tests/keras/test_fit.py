"""compile/fit/evaluate/predict/train_on_batch/test_on_batch against NumPy, compiled and eagerly,
on arrays, tensors and datasets, with one trace per step kind."""
import numpy as np
import pytest

import eager as ek
import tracing  # noqa: F401 - registers the compiler fit uses (an installed graphjit finds it by entry point)
from eager import keras
from eager.keras import layers as L

RNG = np.random.default_rng(3)
X = RNG.normal(size=(100, 4)).astype(np.float32)
W_TRUE = np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)
Y = X @ W_TRUE + 0.1
LABELS = (X[:, 0] + X[:, 1] > 0).astype(np.int32)


def linear(seed=0):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((4,)), L.Dense(1)])


def classifier(seed=0, **compile_kwargs):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((4,)), L.Dense(8, activation="relu"), L.Dense(2)])
    model.compile(optimizer=ek.optimizers.Adam(0.05), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], **compile_kwargs)
    return model


def tracing_counts(model):
    return {k: s.fn.experimental_get_tracing_count() for k, s in model._steps.items()}


def test_train_on_batch_is_one_sgd_step_and_returns_the_loss_before_it():
    model = linear()
    model.compile(optimizer=ek.optimizers.SGD(0.1), loss="mse")
    k, b = model.get_weights()
    pred = X[:10] @ k + b
    loss = model.train_on_batch(X[:10], Y[:10])
    assert isinstance(loss, float)
    np.testing.assert_allclose(loss, np.mean((pred - Y[:10]) ** 2), rtol=1e-5)
    grad_pred = 2 * (pred - Y[:10]) / 10
    k2, b2 = model.get_weights()
    np.testing.assert_allclose(k2, k - 0.1 * X[:10].T @ grad_pred, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b2, b - 0.1 * grad_pred.sum(0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.test_on_batch(X[:10], Y[:10]),
                               np.mean((X[:10] @ k2 + b2 - Y[:10]) ** 2), rtol=1e-5)


def test_fit_learns_and_traces_each_step_once_with_a_partial_batch():
    model = linear()
    model.compile(optimizer=ek.optimizers.SGD(0.1), loss="mse", metrics=["mae"])
    history = model.fit(X, Y, batch_size=32, epochs=20, verbose=0)          # 100 = 3 * 32 + 4
    assert set(history.history) == {"loss", "mae"} and len(history.history["loss"]) == 20
    assert history.history["loss"][-1] < 0.01 < history.history["loss"][0]
    np.testing.assert_allclose(model.get_weights()[0], W_TRUE, atol=0.05)
    loss, mae = model.evaluate(X, Y, batch_size=32, verbose=0)
    pred = X @ model.get_weights()[0] + model.get_weights()[1]
    np.testing.assert_allclose(loss, np.mean((pred - Y) ** 2), rtol=1e-4)
    np.testing.assert_allclose(mae, np.mean(np.abs(pred - Y)), rtol=1e-4)
    np.testing.assert_allclose(model.predict(X, batch_size=32, verbose=0), pred, rtol=1e-5, atol=1e-5)
    assert tracing_counts(model) == {"train": 1, "test": 1, "predict": 1}


def test_evaluate_without_metrics_is_a_scalar_and_return_dict():
    model = linear()
    model.compile(optimizer="sgd", loss="mse")
    assert isinstance(model.evaluate(X, Y, verbose=0), float)
    assert set(model.evaluate(X, Y, verbose=0, return_dict=True)) == {"loss"}


def test_compiled_and_eager_fit_agree():
    a, b = classifier(), classifier(run_eagerly=True)
    ha = a.fit(X, LABELS, batch_size=16, epochs=3, shuffle=False, verbose=0)
    hb = b.fit(X, LABELS, batch_size=16, epochs=3, shuffle=False, verbose=0)
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-4)
    np.testing.assert_allclose(ha.history["accuracy"], hb.history["accuracy"], rtol=1e-6)
    assert b._steps["train"].eager and not a._steps["train"].eager


def test_history_loss_is_the_sample_weighted_mean_of_batch_losses():
    model = classifier()
    model.compile(optimizer=ek.optimizers.SGD(0.0), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    h = model.fit(X, LABELS, batch_size=32, epochs=1, shuffle=False, verbose=0)
    logits = model.predict(X, verbose=0)
    z = logits - logits.max(1, keepdims=True)
    nll = -(z[np.arange(100), LABELS] - np.log(np.exp(z).sum(1)))
    np.testing.assert_allclose(h.history["loss"][0], nll.mean(), rtol=1e-5)
    np.testing.assert_allclose(h.history["accuracy"][0], (logits.argmax(1) == LABELS).mean())


def test_sample_weight_and_validation():
    model = classifier()
    w = np.where(LABELS == 1, 2.0, 0.5).astype(np.float32)
    h = model.fit(X, LABELS, sample_weight=w, batch_size=25, epochs=2, validation_data=(X[:20], LABELS[:20]),
                  verbose=0)
    assert set(h.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    val = model.evaluate(X[:20], LABELS[:20], verbose=0)
    np.testing.assert_allclose([h.history["val_loss"][-1], h.history["val_accuracy"][-1]], val, rtol=1e-6)
    h2 = classifier().fit(X, LABELS, validation_split=0.2, epochs=1, verbose=0)
    assert "val_loss" in h2.history


def test_validation_split_takes_the_last_samples():
    model = classifier()
    model.fit(X, LABELS, validation_split=0.25, epochs=1, verbose=0, shuffle=False)
    manual = classifier().evaluate(X[75:], LABELS[75:], verbose=0)
    assert len(manual) == 2


class TinyDataset:
    """A re-iterable dataset: yields (x, y) batches of tensors, like eager.data.Dataset.batch."""

    def __init__(self, x, y, batch):
        self.x, self.y, self.batch = x, y, batch

    def __iter__(self):
        for i in range(0, len(self.x), self.batch):
            yield ek.constant(self.x[i:i + self.batch]), ek.constant(self.y[i:i + self.batch])

    def __len__(self):
        return -(-len(self.x) // self.batch)


def test_fit_evaluate_predict_on_datasets_and_tensors():
    a, b = classifier(), classifier()
    ha = a.fit(TinyDataset(X, LABELS, 30), epochs=2, verbose=0, validation_data=TinyDataset(X[:20], LABELS[:20], 8))
    hb = b.fit(ek.constant(X), ek.constant(LABELS), batch_size=30, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-5)
    np.testing.assert_allclose(a.evaluate(TinyDataset(X, LABELS, 7), verbose=0), a.evaluate(X, LABELS, verbose=0),
                               rtol=1e-5)
    np.testing.assert_allclose(a.predict(TinyDataset(X, LABELS, 7), verbose=0), a.predict(X, verbose=0), rtol=1e-6)
    assert tracing_counts(a) == {"train": 1, "test": 1, "predict": 1}
    with pytest.raises(ValueError, match="batch_size must be left out"):
        a.fit(TinyDataset(X, LABELS, 30), batch_size=4, verbose=0)


def test_verbose_output_is_one_line_per_epoch_when_piped(capsys):
    model = classifier()
    model.fit(X, LABELS, batch_size=10, epochs=3, verbose=1, validation_data=(X[:10], LABELS[:10]))
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 3 and "\r" not in "".join(out)
    assert out[0].startswith("Epoch 1/3 - 10/10 - ") and ("ms/step" in out[0] or "us/step" in out[0])
    assert " - loss: " in out[2] and " - accuracy: " in out[2] and " - val_loss: " in out[2]
    model.evaluate(X, LABELS, verbose=1)
    assert len(capsys.readouterr().out.strip().splitlines()) == 1


class FakeTerminal:
    encoding = "utf-8"

    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_progress_bar_on_a_terminal_redraws_in_place():
    from eager.keras.progbar import Progbar
    term = FakeTerminal()
    bar = Progbar(4, stream=term, interval=0)
    for i in range(1, 4):
        bar.update(i, [("loss", 0.5)])
    bar.update(4, [("loss", 0.25)], finalize=True)
    lines = term.text.split("\r")
    assert len(lines) == 5 and lines[1].startswith("1/4 ━━━━━╸") and "loss: 0.5000" in lines[1]
    # the last frame ends the line; spaces after it clear what a longer earlier frame left on screen
    assert lines[-1].startswith("4/4 " + "━" * 20) and lines[-1].endswith("\n")
    assert lines[-1].rstrip().endswith("loss: 0.2500")


def test_errors_are_clear():
    model = linear()
    with pytest.raises(RuntimeError, match="compile the model first"):
        model.fit(X, Y)
    model.compile(optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match="same number of samples"):
        model.fit(X, Y[:50], verbose=0)
    with pytest.raises(ValueError):
        model.compile(optimizer="adamw_typo", loss="mse")


def test_functional_and_subclassed_models_train_and_accuracy_resolves_from_shapes():
    keras.utils.set_random_seed(0)
    inp = keras.Input((4,))
    out = L.Dense(1, activation="sigmoid")(L.Dense(8, activation="relu")(inp))
    binary = keras.Model(inp, out)
    binary.compile(optimizer=ek.optimizers.Adam(0.05), loss="binary_crossentropy", metrics=["accuracy"])
    yb = LABELS.astype(np.float32)[:, None]
    h = binary.fit(X, yb, epochs=15, verbose=0)
    p = binary.predict(X, verbose=0)
    np.testing.assert_allclose(h.history["accuracy"][-1], np.mean((p > 0.5) == (yb > 0.5)), atol=0.05)
    assert binary.evaluate(X, yb, verbose=0)[1] == pytest.approx(np.mean((p > 0.5) == (yb > 0.5)))

    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = L.Dense(16, activation="relu")
            self.norm = L.BatchNormalization()
            self.drop = L.Dropout(0.2)
            self.out = L.Dense(2, activation="softmax")

        def call(self, x, training=False):
            return self.out(self.drop(self.norm(self.hidden(x)), training=training))
    net = Net()
    net.compile(optimizer=ek.optimizers.Adam(0.05), loss="categorical_crossentropy", metrics=["acc"])
    onehot = np.eye(2, dtype=np.float32)[LABELS]
    h = net.fit(X, onehot, batch_size=20, epochs=10, verbose=0)
    assert h.history["acc"][-1] > 0.85
    assert not np.allclose(net.norm.moving_mean.numpy(), 0)          # training=True reached BatchNormalization
    np.testing.assert_allclose(net.evaluate(X, onehot, verbose=0)[1],
                               np.mean(net.predict(X, verbose=0).argmax(1) == LABELS))


def test_custom_train_step_is_used_by_fit():
    calls = []

    class Custom(keras.Sequential):
        def train_step(self, data):
            calls.append("traced")
            return super().train_step(data)
    keras.utils.set_random_seed(0)
    m = Custom([keras.Input((4,)), L.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    m.fit(X, Y, epochs=3, verbose=0)
    assert calls == ["traced"]                       # Python ran once: at the single trace


def test_lstm_sequence_classifier_trains():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(5)
    seqs = rng.integers(1, 10, size=(120, 6)).astype(np.int32)
    target = (seqs[:, -1] > 5).astype(np.int32)                   # depends on the last token
    model = keras.Sequential([keras.Input((6,), dtype="int32"), L.Embedding(10, 8), L.LSTM(8), L.Dense(2)])
    model.compile(optimizer=ek.optimizers.Adam(0.05),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    h = model.fit(seqs, target, batch_size=32, epochs=15, verbose=0)
    assert h.history["accuracy"][-1] > 0.9 and h.history["loss"][-1] < h.history["loss"][0]


class Repeating:
    """An infinite dataset (cardinality -1), like eager.data's repeat()."""

    def __init__(self, x, y, batch):
        self.inner = TinyDataset(x, y, batch)
        self.epochs_started = 0

    def cardinality(self):
        return -1

    def __iter__(self):
        self.epochs_started += 1
        while True:
            yield from self.inner


def test_infinite_datasets_need_steps_and_continue_across_epochs():
    model = classifier()
    data = Repeating(X, LABELS, 30)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        model.fit(data, epochs=1, verbose=0)
    h = model.fit(data, epochs=3, steps_per_epoch=2, verbose=0)
    assert len(h.history["loss"]) == 3 and data.epochs_started == 1


def test_weight_regularizers_and_add_loss_join_the_loss():
    keras.utils.set_random_seed(0)
    dense = L.Dense(1, kernel_regularizer=keras.regularizers.L2(0.1), bias_regularizer="l1")
    model = keras.Sequential([keras.Input((4,)), dense])
    model.compile(optimizer=ek.optimizers.SGD(0.0), loss="mse")
    k, b = model.get_weights()
    penalty = 0.1 * np.sum(k ** 2) + 0.01 * np.sum(np.abs(b))
    assert len(model.losses) == 2
    np.testing.assert_allclose(float(ek.add_n(model.losses)), penalty, rtol=1e-5)
    mse = np.mean((X @ k + b - Y) ** 2)
    np.testing.assert_allclose(model.evaluate(X, Y, batch_size=100, verbose=0), mse + penalty, rtol=1e-5)

    class WithActivityLoss(keras.layers.Layer):
        def call(self, x):
            self.add_loss(ek.reduce_mean(ek.square(x)))
            return x
    act = keras.Sequential([keras.Input((4,)), WithActivityLoss(), L.Dense(1, use_bias=False)])
    act.compile(optimizer=ek.optimizers.SGD(0.0), loss="mse")
    (k2,) = act.get_weights()
    np.testing.assert_allclose(act.evaluate(X, Y, batch_size=100, verbose=0),
                               np.mean((X @ k2 - Y) ** 2) + np.mean(X ** 2), rtol=1e-5)
    act(X)
    act(X)
    assert len(act.losses) == 1                       # each outermost call starts afresh
    trained = keras.Sequential([keras.Input((4,)), L.Dense(1, kernel_regularizer=keras.regularizers.L2(10.0))])
    trained.compile(optimizer=ek.optimizers.SGD(0.01), loss="mse")
    trained.fit(X, Y, epochs=30, verbose=0)
    assert np.abs(trained.get_weights()[0]).max() < np.abs(W_TRUE).max() / 4   # the penalty shrinks the kernel


def test_fit_a_two_input_functional_model_from_a_dict():
    keras.utils.set_random_seed(0)
    a, b = keras.Input((2,), name="left"), keras.Input((2,), name="right")
    out = L.Dense(1)(L.Concatenate()([a, b]))
    model = keras.Model([a, b], out)
    model.compile(optimizer=ek.optimizers.SGD(0.1), loss="mse")
    h = model.fit({"left": X[:, :2], "right": X[:, 2:]}, Y, batch_size=32, epochs=20, verbose=0)
    assert h.history["loss"][-1] < 0.01
    np.testing.assert_allclose(model.predict([X[:, :2], X[:, 2:]], verbose=0),
                               model.predict({"right": X[:, 2:], "left": X[:, :2]}, verbose=0), rtol=1e-6)
    assert model._steps["train"].fn.experimental_get_tracing_count() == 1


def test_fit_on_eager_data_pipelines():
    a, b = classifier(), classifier()
    pipeline = ek.data.Dataset.from_tensor_slices((X, LABELS)).batch(30).prefetch(ek.data.AUTOTUNE)
    ha = a.fit(pipeline, epochs=2, verbose=0, validation_data=ek.data.Dataset.from_tensor_slices((X, LABELS)).batch(7))
    hb = b.fit(X, LABELS, batch_size=30, epochs=2, shuffle=False, verbose=0, validation_data=(X, LABELS))
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(ha.history[key], hb.history[key], rtol=1e-5)
    shuffled = ek.data.Dataset.from_tensor_slices((X, LABELS)).shuffle(100, seed=0).batch(32)
    a.fit(shuffled, epochs=2, verbose=0)
    np.testing.assert_allclose(a.predict(ek.data.Dataset.from_tensor_slices(X).batch(16), verbose=0),
                               a.predict(X, verbose=0), rtol=1e-6)
    assert tracing_counts(a) == {"train": 1, "test": 1, "predict": 1}
    with pytest.raises(ValueError, match="steps_per_epoch"):
        a.fit(ek.data.Dataset.from_tensor_slices((X, LABELS)).repeat().batch(10), verbose=0)
    h = a.fit(ek.data.Dataset.from_tensor_slices((X, LABELS)).repeat().batch(10), epochs=2, steps_per_epoch=3,
              verbose=0)
    assert len(h.history["loss"]) == 2


def test_class_weight_is_a_per_sample_weight_by_label():
    weights = {0: 0.5, 1: 3.0}
    a, b = classifier(), classifier()
    ha = a.fit(X, LABELS, class_weight=weights, batch_size=25, epochs=2, shuffle=False, verbose=0)
    hb = b.fit(X, LABELS, sample_weight=np.where(LABELS == 1, 3.0, 0.5), batch_size=25, epochs=2, shuffle=False,
               verbose=0)
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-5)
    c = classifier()
    c.fit(TinyDataset(X, LABELS, 25), class_weight=weights, epochs=2, verbose=0)
    np.testing.assert_allclose(c.get_weights()[0], a.get_weights()[0], rtol=1e-5)
    with pytest.raises(ValueError, match="no weight for class"):
        classifier().fit(X, LABELS, class_weight={0: 1.0}, verbose=0)


def test_a_user_call_with_python_control_flow_on_tensors_is_converted_in_fit():
    class Branchy(keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = L.Dense(1)

        def call(self, x, training=False):
            y = self.dense(x)
            if ek.reduce_mean(y) > 0:          # a tensor condition: AutoGraph makes it a cond in the graph
                y = y * 2.0
            else:
                y = -y
            for _ in range(2):                 # a Python loop over a Python range stays Python
                y = y + 0.0
            return y

    def run(run_eagerly):
        keras.utils.set_random_seed(0)
        m = Branchy()
        m.compile(optimizer=ek.optimizers.SGD(0.01), loss="mse", run_eagerly=run_eagerly)
        return m.fit(X, Y, batch_size=20, epochs=3, shuffle=False, verbose=0).history["loss"], m
    compiled, model = run(False)
    eager_losses, _ = run(True)
    np.testing.assert_allclose(compiled, eager_losses, rtol=1e-5)
    assert model._steps["train"].fn.experimental_get_tracing_count() == 1


def test_predict_results_are_writeable_arrays_of_their_own_as_in_keras():
    # a port edits predictions in place (p[p < 0] = 0); a read-only view of the output tensor would refuse
    model = classifier()
    for p in (model.predict(X[:8], verbose=0), model.predict_on_batch(X[:8])):
        assert isinstance(p, np.ndarray) and p.flags.writeable and p.flags.owndata
        before = model.predict_on_batch(X[:8]).copy()
        p[...] = -1.0
        np.testing.assert_array_equal(model.predict_on_batch(X[:8]), before)
