"""Sequential, subclassed Model and the functional API: structure, weight paths, summary, saving."""
import json

import numpy as np
import pytest

import eager as ek
import tracing
from eager import keras
from eager.keras import layers as L

RNG = np.random.default_rng(2)


def rand(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def mlp_ref(model, x):
    (k1, b1, k2, b2) = model.get_weights()
    return np.maximum(x @ k1 + b1, 0) @ k2 + b2


def test_sequential_layers_exclude_the_input_and_build_at_once():
    model = keras.Sequential([keras.Input((5,)), L.Dense(4, activation="relu"), L.Dense(2)])
    assert len(model.layers) == 2 and model.built
    assert [w.path for w in model.weights] == [f"{model.layers[0].name}/kernel", f"{model.layers[0].name}/bias",
                                              f"{model.layers[1].name}/kernel", f"{model.layers[1].name}/bias"]
    x = rand(3, 5)
    np.testing.assert_allclose(model(x), mlp_ref(model, x), rtol=1e-5, atol=1e-5)
    assert model.count_params() == 5 * 4 + 4 + 4 * 2 + 2


def test_sequential_input_shape_argument_and_lazy_build():
    a = keras.Sequential([L.Dense(3, input_shape=(4,))])
    assert a.built and a.count_params() == 15
    b = keras.Sequential()
    b.add(L.Dense(3))
    assert b.weights == []
    b(rand(2, 6))
    assert b.count_params() == 21
    c = keras.Sequential([L.Dense(2)])
    c.build((None, 3))
    assert c.count_params() == 8


def test_subclassed_model_paths_include_its_name():
    class MLP(keras.Model):
        def __init__(self):
            super().__init__(name="m")
            self.hidden = L.Dense(4, activation="relu")
            self.out = L.Dense(2)

        def call(self, x, training=False):
            return self.out(self.hidden(x))
    model = MLP()
    x = rand(3, 5)
    y = model(x)
    np.testing.assert_allclose(y, mlp_ref(model, x), rtol=1e-5, atol=1e-5)
    assert [w.path for w in model.trainable_variables][0] == f"m/{model.hidden.name}/kernel"
    assert model.layers == [model.hidden, model.out] and model.count_params() == 5 * 4 + 4 + 10
    assert len(model.variables) == 4


def test_training_flag_reaches_nested_layers():
    class Net(keras.Model):
        def __init__(self):
            super().__init__()
            self.drop = L.Dropout(0.5)

        def call(self, x):
            return self.drop(x)
    net = Net()
    x = np.ones((50, 40), np.float32)
    np.testing.assert_array_equal(net(x), x)
    assert (net(x, training=True).numpy() == 0).any()


def test_functional_model_with_two_inputs():
    a, b = keras.Input((3,), name="a"), keras.Input((2,), name="b")
    h = L.Concatenate()([L.Dense(4, activation="relu")(a), b])
    out = L.Dense(1)(h)
    model = keras.Model(inputs=[a, b], outputs=out)
    assert isinstance(model, keras.Functional) and out.shape == (None, 1)
    assert [type(l).__name__ for l in model.layers] == ["InputLayer", "InputLayer", "Dense", "Concatenate", "Dense"]
    xa, xb = rand(4, 3), rand(4, 2)
    d1, d2 = model.layers[2], model.layers[4]
    ref = np.concatenate([np.maximum(xa @ d1.kernel.numpy() + d1.bias.numpy(), 0), xb], -1) @ d2.kernel.numpy() \
        + d2.bias.numpy()
    np.testing.assert_allclose(model([xa, xb]), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model({"b": xb, "a": xa}), ref, rtol=1e-5, atol=1e-5)     # a dict goes by name
    assert d1.kernel.path == f"{d1.name}/kernel"
    with pytest.raises(ValueError, match="no entry for input"):
        model({"a": xa})


def test_functional_shapes_unknown_time_and_errors():
    seq = keras.Input((None,), dtype="int32")
    emb = L.Embedding(20, 4)(seq)
    h, state = L.GRU(3, return_state=True)(emb)
    assert emb.shape == (None, None, 4) and h.shape == (None, 3) and state.shape == (None, 3)
    model = keras.Model(seq, h)
    assert model(np.array([[1, 2, 3]], np.int32)).shape == (1, 3)
    other = keras.Input((3,))
    with pytest.raises(ValueError, match="disconnected"):
        keras.Model(other, L.Dense(1)(keras.Input((3,))))
    with pytest.raises(TypeError, match="KerasTensor"):
        other + 1


def test_summary_lists_layers_and_totals():
    model = keras.Sequential([keras.Input((5,)), L.Dense(4), L.BatchNormalization(), L.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    text = lines[0]
    assert "(None, 4)" in text and "Total params: 50" in text and "Non-trainable params: 8" in text


def test_save_and_load_weights_round_trip(tmp_path):
    def make():
        return keras.Sequential([keras.Input((5,)), L.Dense(4), L.BatchNormalization(), L.Dense(2)])
    a, b = make(), make()
    path = tmp_path / "model.weights.h5"
    a.save_weights(path)
    b.load_weights(path)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    raw = path.read_bytes()                          # the documented layout: safetensors, JSON header
    header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
    meta = header["__metadata__"]
    assert meta.pop("graphjit.sha256") and meta == {"format": "graphjit.keras.weights", "version": "3"}
    assert header[f"0000/{a.layers[0].name}/kernel"]["shape"] == [5, 4]
    wrong = keras.Sequential([keras.Input((6,)), L.Dense(4), L.BatchNormalization(), L.Dense(2)])
    before = wrong.get_weights()
    with pytest.raises(ValueError, match="does not fit"):
        wrong.load_weights(path)
    np.testing.assert_array_equal(wrong.get_weights()[0], before[0])        # nothing changed
    bad = tmp_path / "bad.weights.h5"
    bad.write_bytes(b"not a weights file")
    with pytest.raises(ValueError, match="not a graphjit weights file"):
        b.load_weights(bad)


def test_keras_models_checkpoint_through_eager_train(tmp_path):
    def make():
        keras.utils.set_random_seed(1)
        m = keras.Sequential([keras.Input((4,)), L.Dense(3), L.BatchNormalization(), L.Dense(1)])
        m.compile(optimizer="adam", loss="mse")
        return m
    x = rand(32, 4)
    y = x.sum(1, keepdims=True)
    a = make()
    a.fit(x, y, epochs=2, batch_size=16, verbose=0)
    saved = ek.train.Checkpoint(model=a, optimizer=a.optimizer).save(str(tmp_path / "ckpt"))
    b = make()
    ek.train.Checkpoint(model=b, optimizer=b.optimizer).restore(saved)
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)
    b.fit(x, y, epochs=1, batch_size=16, verbose=0)
    assert int(b.optimizer.iterations.numpy()) == 6          # 4 restored steps + 2


def test_whole_model_export_through_tracing_save(tmp_path):
    model = keras.Sequential([keras.Input((5,)), L.Dense(4, activation="relu"), L.Dense(2)])
    x = rand(3, 5)
    tracing.save({"serve": model.serving_function()}, str(tmp_path / "exported"))
    loaded = tracing.load(str(tmp_path / "exported"))
    np.testing.assert_allclose(loaded.serve(ek.constant(x)), model(x), rtol=1e-6)
    np.testing.assert_allclose(loaded.serve(ek.constant(x[:1])), model(x[:1]), rtol=1e-6)
