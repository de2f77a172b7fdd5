"""eager.nn against hand-written NumPy, and conv2d / pools against naive loop references."""
import math

import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError

RNG = np.random.default_rng(0)


def np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def np_log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ------------------------------------------------------------------ activations
@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (0, 4)])
def test_activations_match_numpy(shape):
    x = RNG.standard_normal(shape).astype(np.float32) * 3
    cases = {
        ek.nn.relu: np.maximum(x, 0),
        ek.nn.relu6: np.minimum(np.maximum(x, 0), 6),
        (lambda t: ek.nn.leaky_relu(t, alpha=0.1)): np.where(x > 0, x, 0.1 * x),
        ek.nn.leaky_relu: np.where(x > 0, x, 0.2 * x),
        ek.nn.elu: np.where(x > 0, x, np.expm1(x)),
        ek.nn.sigmoid: 1 / (1 + np.exp(-x)),
        ek.nn.tanh: np.tanh(x),
        ek.nn.softplus: np.log1p(np.exp(x)),
        ek.nn.silu: x / (1 + np.exp(-x)),
    }
    for fn, want in cases.items():
        got = fn(ek.constant(x))
        assert got.dtype is ek.float32 and got.shape == shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_relu_on_ints_and_large_values():
    np.testing.assert_array_equal(ek.nn.relu(ek.constant([-2, 0, 3])).numpy(), [0, 0, 3])
    assert ek.nn.relu(ek.constant([-2, 3])).dtype is ek.int32
    big = ek.constant(np.array([-1000.0, 1000.0]))
    np.testing.assert_allclose(ek.nn.softplus(big).numpy(), [0.0, 1000.0])
    np.testing.assert_allclose(ek.nn.elu(big).numpy(), [-1.0, 1000.0])


def test_activation_gradients():
    x = ek.constant(np.array([-2.0, -0.5, 0.5, 7.0]))
    for fn, want in [(ek.nn.relu, [0, 0, 1, 1]), (ek.nn.relu6, [0, 0, 1, 0]),
                     (lambda t: ek.nn.leaky_relu(t, 0.5), [0.5, 0.5, 1, 1]),
                     (ek.nn.elu, [np.exp(-2.0), np.exp(-0.5), 1, 1])]:
        with ek.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        np.testing.assert_allclose(tape.gradient(y, x).numpy(), want)


def test_float_only_activations_reject_ints():
    with pytest.raises(InvalidArgumentError, match="Elu.*int32"):
        ek.nn.elu(ek.constant([1, 2]))
    with pytest.raises(InvalidArgumentError, match="Softmax.*int32"):
        ek.nn.softmax(ek.constant([1, 2]))


# ------------------------------------------------------------------ softmax
@pytest.mark.parametrize("shape,axis", [((4,), -1), ((3, 5), -1), ((3, 5), 0), ((2, 3, 4), 1), ((0, 3), -1)])
def test_softmax_and_log_softmax(shape, axis):
    x = RNG.standard_normal(shape) * 5
    np.testing.assert_allclose(ek.nn.softmax(ek.constant(x), axis=axis).numpy(), np_softmax(x, axis), rtol=1e-12)
    np.testing.assert_allclose(ek.nn.log_softmax(ek.constant(x), axis=axis).numpy(), np_log_softmax(x, axis),
                               rtol=1e-12, atol=1e-12)


def test_softmax_is_stable():
    x = ek.constant([[1000.0, 1000.0, -1000.0]])
    np.testing.assert_allclose(ek.nn.softmax(x).numpy(), [[0.5, 0.5, 0.0]])
    np.testing.assert_allclose(ek.nn.log_softmax(x).numpy(), [[-math.log(2), -math.log(2), -2000 - math.log(2)]],
                               rtol=1e-6)


def test_softmax_errors():
    with pytest.raises(InvalidArgumentError, match="axis 2"):
        ek.nn.softmax(ek.constant([[1.0, 2.0]]), axis=2)
    with pytest.raises(InvalidArgumentError, match="scalar"):
        ek.nn.softmax(ek.constant(1.0))


# ------------------------------------------------------------------ losses
def test_softmax_cross_entropy_matches_numpy():
    logits = RNG.standard_normal((4, 5))
    labels = np_softmax(RNG.standard_normal((4, 5)))
    got = ek.nn.softmax_cross_entropy_with_logits(ek.constant(labels), ek.constant(logits))
    np.testing.assert_allclose(got.numpy(), -(labels * np_log_softmax(logits)).sum(-1), rtol=1e-12)
    got0 = ek.nn.softmax_cross_entropy_with_logits(ek.constant(labels.T), ek.constant(logits.T), axis=0)
    np.testing.assert_allclose(got0.numpy(), got.numpy(), rtol=1e-12)
    assert got.shape == (4,)


def test_softmax_cross_entropy_gradient_is_softmax_minus_labels():
    logits = ek.constant(RNG.standard_normal((3, 4)))
    labels = ek.constant(np_softmax(RNG.standard_normal((3, 4))))
    with ek.GradientTape() as tape:
        tape.watch(logits)
        loss = ek.reduce_sum(ek.nn.softmax_cross_entropy_with_logits(labels, logits))
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), np_softmax(logits.numpy()) - labels.numpy(),
                               rtol=1e-10)


def _xent_reference(labels, logits, axis):
    """The cross entropy's arithmetic, one fresh array per step: the kernel's bits (it works in place)."""
    shifted = logits - logits.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    total = e.sum(axis=axis, keepdims=True)
    log_sm = shifted - np.log(total)
    return -(labels * log_sm).sum(axis=axis), e / total * labels.sum(axis=axis, keepdims=True) - labels


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_softmax_cross_entropy_loss_and_gradient_keep_their_bits(dtype):
    from tracing import function
    logits = (RNG.standard_normal((6, 5)) * 20).astype(dtype)
    logits[0, :3] = [np.inf, -np.inf, np.nan]           # rows of NaN stay NaN, with their sign bits
    labels = RNG.random((6, 5)).astype(dtype)           # rows that do not sum to 1: the exact gradient
    with np.errstate(all="ignore"):
        want_loss, want_grad = _xent_reference(labels, logits, 1)

    def loss_and_grad(y, x):
        with ek.GradientTape() as tape:
            tape.watch(x)
            loss = ek.nn.softmax_cross_entropy_with_logits(y, x)
        return loss, tape.gradient(loss, x)
    for run in (loss_and_grad, function(loss_and_grad)):
        loss, grad = run(ek.constant(labels), ek.constant(logits))
        for got, want in ((loss.numpy(), want_loss), (grad.numpy(), want_grad)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


def test_softmax_cross_entropy_errors():
    with pytest.raises(InvalidArgumentError, match=r"same shape.*\[2, 3\].*\[2, 4\]"):
        ek.nn.softmax_cross_entropy_with_logits(ek.ones([2, 3]), ek.ones([2, 4]))
    with pytest.raises(InvalidArgumentError, match="dtype"):
        ek.nn.softmax_cross_entropy_with_logits(ek.ones([2, 3], ek.float64), ek.ones([2, 3]))


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_sparse_softmax_cross_entropy(label_dtype):
    logits = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    labels = np.array([[0, 3, 1], [2, 2, 0]], dtype=label_dtype)
    got = ek.nn.sparse_softmax_cross_entropy_with_logits(ek.constant(labels), ek.constant(logits))
    want = -np.take_along_axis(np_log_softmax(logits.astype(np.float64)), labels[..., None], -1)[..., 0]
    assert got.dtype is ek.float32 and got.shape == (2, 3)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)
    empty = ek.nn.sparse_softmax_cross_entropy_with_logits(ek.constant(np.zeros((0,), np.int32)), ek.ones([0, 3]))
    assert empty.shape == (0,)


def test_sparse_softmax_cross_entropy_errors():
    with pytest.raises(InvalidArgumentError, match=r"label value of 3 .*\[0, 3\)"):
        ek.nn.sparse_softmax_cross_entropy_with_logits(ek.constant([0, 3]), ek.ones([2, 3]))
    with pytest.raises(InvalidArgumentError, match="labels must have the shape of logits"):
        ek.nn.sparse_softmax_cross_entropy_with_logits(ek.constant([[0, 1]]), ek.ones([2, 3]))
    with pytest.raises(InvalidArgumentError, match="integer"):
        ek.nn.sparse_softmax_cross_entropy_with_logits(ek.constant([0.0, 1.0]), ek.ones([2, 3]))


def test_sigmoid_cross_entropy():
    x = np.array([-1000.0, -2.0, 0.0, 3.0, 1000.0])
    z = np.array([0.0, 1.0, 0.5, 0.0, 1.0])
    got = ek.nn.sigmoid_cross_entropy_with_logits(labels=ek.constant(z), logits=ek.constant(x)).numpy()
    want = np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))
    np.testing.assert_allclose(got, want)
    assert np.all(np.isfinite(got))
    with pytest.raises(InvalidArgumentError, match="same shape"):
        ek.nn.sigmoid_cross_entropy_with_logits(labels=ek.ones([2]), logits=ek.ones([3]))


def test_bias_add_and_l2_loss():
    v = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    b = RNG.standard_normal(4).astype(np.float32)
    np.testing.assert_allclose(ek.nn.bias_add(ek.constant(v), ek.constant(b)).numpy(), v + b)
    with pytest.raises(InvalidArgumentError, match=r"bias of shape \[3\].*\[2, 3, 4\]"):
        ek.nn.bias_add(ek.constant(v), ek.ones([3]))
    with pytest.raises(InvalidArgumentError, match="rank >= 2"):
        ek.nn.bias_add(ek.ones([4]), ek.ones([4]))
    loss = ek.nn.l2_loss(ek.constant(v))
    assert loss.shape == () and loss.dtype is ek.float32
    np.testing.assert_allclose(loss.numpy(), (v.astype(np.float64) ** 2).sum() / 2, rtol=1e-5)


# ------------------------------------------------------------------ dropout
def test_dropout():
    x = ek.ones([200, 50])
    assert ek.nn.dropout(x, 0.0) is x
    y = ek.nn.dropout(x, 0.25, seed=3).numpy()
    assert set(np.unique(y)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((y == 0).mean() - 0.25) < 0.03
    ek.random.set_seed(7)
    a = ek.nn.dropout(x, 0.5).numpy()
    ek.random.set_seed(7)
    np.testing.assert_array_equal(ek.nn.dropout(x, 0.5).numpy(), a)
    ek.random.set_seed(None)
    with pytest.raises(ValueError, match="rate"):
        ek.nn.dropout(x, 1.0)


# ------------------------------------------------------------------ conv2d and pools vs loops
def _geometry(size, k, s, padding, d=1):
    eff = (k - 1) * d + 1
    if padding == "SAME":
        out = -(-size // s)
        return out, max((out - 1) * s + eff - size, 0) // 2
    return -(-(size - eff + 1) // s), 0


def ref_conv(x, f, s, padding, d=1):
    n, h, w, c = x.shape
    kh, kw, _, o = f.shape
    oh, pt = _geometry(h, kh, s, padding, d)
    ow, pl = _geometry(w, kw, s, padding, d)
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            for a in range(kh):
                for b in range(kw):
                    r, q = i * s + a * d - pt, j * s + b * d - pl
                    if 0 <= r < h and 0 <= q < w:
                        out[:, i, j, :] += x[:, r, q, :] @ f[a, b]
    return out


def ref_pool(x, k, s, padding, kind):
    n, h, w, c = x.shape
    oh, pt = _geometry(h, k, s, padding)
    ow, pl = _geometry(w, k, s, padding)
    out = np.zeros((n, oh, ow, c), x.dtype)
    for i in range(oh):
        for j in range(ow):
            r0, q0 = i * s - pt, j * s - pl
            win = x[:, max(r0, 0):r0 + k, max(q0, 0):q0 + k, :]
            out[:, i, j, :] = win.max(axis=(1, 2)) if kind == "max" else win.mean(axis=(1, 2))
    return out


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("hw,k", [((5, 5), 3), ((6, 7), 2), ((4, 3), 1), ((7, 6), 4)])
def test_conv2d_matches_loops(padding, stride, hw, k):
    x = RNG.standard_normal((2,) + hw + (3,))
    f = RNG.standard_normal((k, k, 3, 4))
    got = ek.nn.conv2d(ek.constant(x), ek.constant(f), stride, padding)
    want = ref_conv(x, f, stride, padding)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-10)


def test_conv2d_dilations_strides_as_lists_and_float32():
    x = RNG.standard_normal((1, 7, 7, 2)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 2, 1)).astype(np.float32)
    got = ek.nn.conv2d(x, f, strides=[1, 1, 1, 1], padding="SAME", dilations=[2, 2])
    assert got.dtype is ek.float32
    np.testing.assert_allclose(got.numpy(), ref_conv(x, f, 1, "SAME", 2), rtol=1e-4, atol=1e-5)


def test_conv2d_transpose_is_the_adjoint_of_conv2d():
    x = RNG.standard_normal((2, 6, 5, 3))
    f = RNG.standard_normal((3, 3, 3, 4))
    for padding, stride in [("SAME", 2), ("VALID", 1), ("VALID", 2)]:
        y = ek.nn.conv2d(x, f, stride, padding)
        g = RNG.standard_normal(y.shape.as_list())
        xt = ek.nn.conv2d_transpose(ek.constant(g), ek.constant(f), x.shape, stride, padding)
        assert xt.shape == x.shape
        np.testing.assert_allclose(np.sum(y.numpy() * g), np.sum(x * xt.numpy()), rtol=1e-10)


def test_conv2d_errors():
    with pytest.raises(InvalidArgumentError, match=r"input depth 3 does not match filter in_channels 2"):
        ek.nn.conv2d(ek.ones([1, 4, 4, 3]), ek.ones([2, 2, 2, 1]), 1, "SAME")
    with pytest.raises(InvalidArgumentError, match="4-D"):
        ek.nn.conv2d(ek.ones([4, 4, 3]), ek.ones([2, 2, 3, 1]), 1, "SAME")
    with pytest.raises(InvalidArgumentError, match="padding"):
        ek.nn.conv2d(ek.ones([1, 4, 4, 3]), ek.ones([2, 2, 3, 1]), 1, "FULL")
    with pytest.raises(InvalidArgumentError, match="negative"):
        ek.nn.conv2d(ek.ones([1, 2, 2, 1]), ek.ones([4, 4, 1, 1]), 1, "VALID")
    with pytest.raises(InvalidArgumentError, match="dtype"):
        ek.nn.conv2d(ek.ones([1, 4, 4, 1]), ek.ones([2, 2, 1, 1], ek.float64), 1, "SAME")


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("hw,k", [((5, 5), 3), ((6, 7), 2), ((4, 4), 1)])
def test_pools_match_loops(kind, padding, stride, hw, k):
    x = RNG.standard_normal((2,) + hw + (3,))
    fn = ek.nn.max_pool2d if kind == "max" else ek.nn.avg_pool2d
    got = fn(ek.constant(x), k, stride, padding)
    np.testing.assert_allclose(got.numpy(), ref_pool(x, k, stride, padding, kind), rtol=1e-12)


def test_max_pool_ints_and_gradient_routes_to_first_max():
    x = np.array([[1, 5], [5, 2]], dtype=np.int32).reshape(1, 2, 2, 1)
    assert ek.nn.max_pool2d(x, 2, 2, "VALID").numpy().reshape(-1).tolist() == [5]
    xf = ek.constant(x.astype(np.float64))
    with ek.GradientTape() as tape:
        tape.watch(xf)
        y = ek.nn.max_pool2d(xf, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, xf).numpy().reshape(2, 2), [[0, 1], [0, 0]])


def test_pool_errors():
    with pytest.raises(InvalidArgumentError, match="4-D"):
        ek.nn.max_pool2d(ek.ones([4, 4]), 2, 2, "SAME")
    with pytest.raises(InvalidArgumentError, match="AvgPool.*int32"):
        ek.nn.avg_pool2d(ek.constant(np.ones((1, 2, 2, 1), np.int32)), 2, 2, "SAME")
    with pytest.raises(InvalidArgumentError, match="ksize"):
        ek.nn.max_pool2d(ek.ones([1, 4, 4, 1]), [2, 2, 2], 2, "SAME")
