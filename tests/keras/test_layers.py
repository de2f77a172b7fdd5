"""Each eager.keras layer's forward pass against a NumPy reference computed from the same weights,
eagerly and under @function; weight names, paths, order and shapes as Keras 3 has them."""
import numpy as np
import pytest

import eager as ek
from eager.keras import layers as L
from tracing import function

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def both_modes(layer, *args, **kwargs):
    """The layer's output eagerly and under @function (the same weights)."""
    eager_out = layer(*args, **kwargs)
    traced = function(lambda *a: layer(*a, **kwargs))(*[ek.constant(a) if isinstance(a, np.ndarray) else a
                                                        for a in args])
    return eager_out, traced


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def test_dense_matches_numpy_and_names_weights_like_keras():
    d = L.Dense(3, activation="relu")
    x = rand(4, 5)
    for out in both_modes(d, x):
        close(out, np.maximum(x @ d.kernel.numpy() + d.bias.numpy(), 0))
    assert d.kernel.name == "kernel" and d.kernel.path == f"{d.name}/kernel"
    assert [w.name for w in d.weights] == ["kernel", "bias"] and d.kernel.shape == (5, 3)
    assert d.count_params() == 5 * 3 + 3


def test_nested_python_numbers_are_one_input():
    d = L.Dense(2)
    x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    close(d(x), np.asarray(x, np.float32) @ d.kernel.numpy() + d.bias.numpy())


def test_dense_on_rank3_inputs_works_on_the_last_axis():
    d = L.Dense(2, use_bias=False)
    x = rand(2, 3, 4)
    for out in both_modes(d, x):
        close(out, x @ d.kernel.numpy())
    assert len(d.weights) == 1


def test_layer_names_are_unique_and_build_is_lazy():
    a, b = L.Dense(1), L.Dense(1)
    assert a.name != b.name and b.name.startswith("dense_")
    assert not a.built and a.weights == []
    with pytest.raises(ValueError, match="not built"):
        a.count_params()
    a(rand(2, 7))
    assert a.built and a.kernel.shape == (7, 1)


def test_get_set_weights_round_trip_and_errors():
    d = L.Dense(2)
    d(rand(1, 3))
    new = [np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, -1], np.float32)]
    d.set_weights(new)
    close(d.get_weights()[0], new[0])
    x = rand(2, 3)
    close(d(x), x @ new[0] + new[1])
    with pytest.raises(ValueError, match="shape"):
        d.set_weights([np.zeros((2, 2), np.float32), new[1]])
    with pytest.raises(ValueError, match="2 weights"):
        d.set_weights([new[0]])


def test_flatten_reshape_activation():
    x = rand(2, 3, 4)
    for out in both_modes(L.Flatten(), x):
        close(out, x.reshape(2, 12))
    for out in both_modes(L.Reshape((4, -1)), x):
        close(out, x.reshape(2, 4, 3))
    for out in both_modes(L.Activation("tanh"), x):
        close(out, np.tanh(x))
    for out in both_modes(L.Activation("softmax"), x):
        e = np.exp(x - x.max(-1, keepdims=True))
        close(out, e / e.sum(-1, keepdims=True))
    with pytest.raises(ValueError, match="cannot reshape"):
        L.Reshape((5,))(x)


def test_dropout_honours_training():
    x = np.ones((200, 50), np.float32)
    drop = L.Dropout(0.5, seed=1)
    close(drop(x), x)                                  # training left out: identity
    close(drop(x, training=False), x)
    y = drop(x, training=True).numpy()
    assert set(np.unique(y)) <= {0.0, 2.0}             # kept units scaled by 1/(1-rate)
    assert 0.4 < (y == 0).mean() < 0.6
    f = function(lambda t: drop(t, training=True))
    assert (f(ek.constant(x)).numpy() == 0).any()


def test_merging_layers():
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 4)
    close(L.Add()([a, b]), a + b)
    close(L.Subtract()([a, b]), a - b)
    close(L.Multiply()([a, b]), a * b)
    close(L.Average()([a, b]), (a + b) / 2)
    close(L.Maximum()([a, b]), np.maximum(a, b))
    close(L.Concatenate()([a, c]), np.concatenate([a, c], axis=-1))
    close(L.Concatenate(axis=0)([a, b]), np.concatenate([a, b], axis=0))
    with pytest.raises(ValueError, match="list of at least 2"):
        L.Add()(a)


def conv_ref(x, k, stride=1, same=True):
    kh, kw, cin, cout = k.shape
    if same:
        ph, pw = (kh - 1) // 2, (kw - 1) // 2
        x = np.pad(x, ((0, 0), (ph, kh - 1 - ph), (pw, kw - 1 - pw), (0, 0)))
    n, h, w, _ = x.shape
    oh, ow = (h - kh) // stride + 1, (w - kw) // stride + 1
    out = np.zeros((n, oh, ow, cout), np.float64)
    for i in range(oh):
        for j in range(ow):
            patch = x[:, i * stride:i * stride + kh, j * stride:j * stride + kw, :]
            out[:, i, j, :] = np.tensordot(patch, k, axes=([1, 2, 3], [0, 1, 2]))
    return out


def test_conv2d_kernel_is_hwio_and_matches_numpy():
    conv = L.Conv2D(4, 3, padding="same", activation="relu")
    x = rand(2, 6, 6, 2)
    for out in both_modes(conv, x):
        close(out, np.maximum(conv_ref(x, conv.kernel.numpy()) + conv.bias.numpy(), 0), 1e-4)
    assert conv.kernel.shape == (3, 3, 2, 4) and conv.bias.shape == (4,)
    valid = L.Conv2D(3, (2, 2), strides=2)
    for out in both_modes(valid, x):
        close(out, conv_ref(x, valid.kernel.numpy(), stride=2, same=False) + valid.bias.numpy(), 1e-4)


def test_pooling_layers():
    x = rand(2, 4, 6, 3)
    blocks = x.reshape(2, 2, 2, 3, 2, 3)
    for out in both_modes(L.MaxPooling2D(), x):
        close(out, blocks.max(axis=(2, 4)))
    for out in both_modes(L.AveragePooling2D(pool_size=2), x):
        close(out, blocks.mean(axis=(2, 4)))
    for out in both_modes(L.GlobalAveragePooling2D(), x):
        close(out, x.mean(axis=(1, 2)))
    close(L.GlobalAveragePooling2D(keepdims=True)(x), x.mean(axis=(1, 2), keepdims=True))
    close(L.GlobalMaxPooling2D()(x), x.max(axis=(1, 2)))


def test_batch_normalization_training_and_inference():
    bn = L.BatchNormalization()
    x = rand(8, 3) * 3 + 1
    out = bn(x, training=True)
    mean, var = x.mean(0), x.var(0)                     # biased variance, as Keras
    close(out, (x - mean) / np.sqrt(var + 1e-3), 1e-4)
    close(bn.moving_mean, 0.01 * mean, 1e-5)            # moved by (1 - momentum)
    close(bn.moving_variance, 0.99 + 0.01 * var, 1e-5)
    assert [w.name for w in bn.weights] == ["gamma", "beta", "moving_mean", "moving_variance"]
    assert [w.name for w in bn.trainable_weights] == ["gamma", "beta"]
    bn.set_weights([np.full(3, 2, np.float32), np.ones(3, np.float32), np.ones(3, np.float32),
                    np.full(3, 4, np.float32)])
    for inference in both_modes(bn, x):
        close(inference, 2 * (x - 1) / np.sqrt(4 + 1e-3) + 1, 1e-4)
    traced = function(lambda t: bn(t, training=True))
    traced(ek.constant(x))
    close(bn.moving_mean, 0.99 + 0.01 * mean, 1e-5)      # the update runs inside @function too


def test_batch_normalization_on_images_normalizes_per_channel():
    bn = L.BatchNormalization()
    x = rand(4, 3, 3, 2)
    close(bn(x, training=True), (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-3), 1e-4)


def test_layer_normalization():
    ln = L.LayerNormalization()
    x = rand(4, 5)
    ln(x)
    ln.set_weights([np.arange(5, dtype=np.float32), np.ones(5, np.float32)])
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3) * np.arange(5) + 1
    for out in both_modes(ln, x):
        close(out, ref, 1e-4)


def test_embedding():
    emb = L.Embedding(10, 4)
    idx = np.array([[1, 2, 9], [0, 0, 3]], np.int32)
    for out in both_modes(emb, idx):
        close(out, emb.embeddings.numpy()[idx])
    assert emb.embeddings.name == "embeddings" and emb.embeddings.shape == (10, 4)


def rnn_ref(x, step, states):
    outs = []
    for t in range(x.shape[1]):
        out, states = step(x[:, t], states)
        outs.append(out)
    return np.stack(outs, 1), states


def test_simple_rnn():
    rnn = L.SimpleRNN(3, return_sequences=True, return_state=True)
    x = rand(2, 5, 4)
    seq, h = rnn(x)
    k, r, b = rnn.get_weights()
    def step(xt, s):
        h = np.tanh(xt @ k + s[0] @ r + b)
        return h, [h]
    ref, (href,) = rnn_ref(x, step, [np.zeros((2, 3))])
    close(seq, ref, 1e-5)
    close(h, href, 1e-5)
    last = L.SimpleRNN(3)
    last(x)
    last.set_weights([k, r, b])
    for out in both_modes(last, x):
        close(out, ref[:, -1], 1e-5)


def lstm_step(k, r, b, u):
    def step(xt, s):
        h, c = s
        z = xt @ k + h @ r + b
        i, f, g, o = sigmoid(z[:, :u]), sigmoid(z[:, u:2 * u]), np.tanh(z[:, 2 * u:3 * u]), sigmoid(z[:, 3 * u:])
        c = f * c + i * g
        h = o * np.tanh(c)
        return h, [h, c]
    return step


def test_lstm_gates_are_i_f_c_o():
    lstm = L.LSTM(3, return_sequences=True, return_state=True)
    x = rand(2, 4, 5)
    lstm(x)
    k, r, b = lstm.get_weights()
    assert k.shape == (5, 12) and r.shape == (3, 12) and b.shape == (12,)
    np.testing.assert_array_equal(b, np.r_[np.zeros(3), np.ones(3), np.zeros(6)])     # unit_forget_bias
    b = rand(12)
    lstm.set_weights([k, r, b])
    ref, (h, c) = rnn_ref(x, lstm_step(k, r, b, 3), [np.zeros((2, 3)), np.zeros((2, 3))])
    for seq, h_out, c_out in both_modes(lstm, x):
        close(seq, ref, 1e-5)
        close(h_out, h, 1e-5)
        close(c_out, c, 1e-5)


def test_gru_reset_after_bias_has_two_rows():
    gru = L.GRU(3, return_state=True)
    x = rand(2, 4, 5)
    gru(x)
    k, r, _ = gru.get_weights()
    b = rand(2, 9)
    gru.set_weights([k, r, b])
    u = 3

    def step(xt, s):
        h = s[0]
        xz, rz = xt @ k + b[0], h @ r + b[1]
        z = sigmoid(xz[:, :u] + rz[:, :u])
        rr = sigmoid(xz[:, u:2 * u] + rz[:, u:2 * u])
        hh = np.tanh(xz[:, 2 * u:] + rr * rz[:, 2 * u:])
        h = z * h + (1 - z) * hh
        return h, [h]
    ref, (h,) = rnn_ref(x, step, [np.zeros((2, 3))])
    for out, state in both_modes(gru, x):
        close(out, ref[:, -1], 1e-5)
        close(state, h, 1e-5)


def test_rnn_with_unknown_time_length_is_one_trace():
    from tracing import TensorSpec
    lstm = L.LSTM(2, return_sequences=True)
    x = rand(2, 6, 3)
    eager_out = lstm(x)
    f = function(lambda t: lstm(t), input_signature=[TensorSpec([None, None, 3])])
    close(f(ek.constant(x)), eager_out, 1e-5)
    close(f(ek.constant(x[:, :4])), lstm(x[:, :4]), 1e-5)
    assert f.experimental_get_tracing_count() == 1


def test_trainable_false_freezes_weights_and_sublayers():
    d = L.Dense(2)
    d(rand(1, 2))
    d.trainable = False
    assert d.trainable_weights == [] and len(d.non_trainable_weights) == 2
