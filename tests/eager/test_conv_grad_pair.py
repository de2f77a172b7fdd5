"""Conv2DBackpropPair (`GRAPHJIT_CONV_GRAD_PAIR=1`): a convolution's two gradients at once, the same bits
eagerly, under @function and in a Session, the values of the separate gradient ops, second derivatives."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.ops import conv_grad_pair
from tracing import function

RNG = np.random.default_rng(3)


@pytest.fixture
def pair_on():
    old = conv_grad_pair.set_enabled(True)
    yield
    conv_grad_pair.set_enabled(old)


def _grads(x, f1, f2):
    """d(loss)/d(x, f1, f2) of a two-layer conv net: the second layer's gradients are both wanted."""
    with ek.GradientTape() as tape:
        tape.watch([x, f1, f2])
        h = ek.nn.max_pool2d(ek.nn.relu(ek.nn.conv2d(x, f1, 1, "SAME")), 2, 2, "VALID")
        loss = ek.reduce_sum(ek.square(ek.nn.relu(ek.nn.conv2d(h, f2, 1, "SAME"))))
    return tape.gradient(loss, [x, f1, f2])


def _data():
    return (RNG.standard_normal((4, 12, 12, 3)).astype(np.float32),
            RNG.standard_normal((3, 3, 3, 8)).astype(np.float32),
            RNG.standard_normal((3, 3, 8, 16)).astype(np.float32))


def _three_ways(arrays):
    eager = [t.numpy() for t in _grads(*[ek.constant(a) for a in arrays])]
    traced = function(_grads)
    fn = [t.numpy() for t in traced(*[ek.constant(a) for a in arrays])]
    g = gr.Graph()
    with g.as_default():
        ps = [gr.placeholder(ek.float32, a.shape) for a in arrays]
        fetches = _grads(*ps)
    with gr.Session(graph=g) as sess:
        session = sess.run(fetches, dict(zip(ps, arrays)))
    types = {o.type for o in g.get_operations()}
    return eager, fn, session, types


def _same_bits(a, b):
    for u, v in zip(a, b):
        assert u.dtype == v.dtype and u.shape == v.shape
        assert np.array_equal(u.view(np.uint32), v.view(np.uint32))


def test_pair_gives_the_same_bits_in_every_mode_and_the_separate_ops_values(pair_on):
    arrays = _data()
    eager, fn, session, types = _three_ways(arrays)
    assert "Conv2DBackpropPair" in types and "Conv2DBackpropInput" not in types
    _same_bits(eager, fn)
    _same_bits(eager, session)
    conv_grad_pair.set_enabled(False)
    separate, _, _, types = _three_ways(arrays)
    assert "Conv2DBackpropPair" not in types and "Conv2DBackpropInput" in types
    for a, b in zip(eager, separate):                  # BLAS on one thread may round the last place otherwise
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_pair_is_off_by_default_and_its_switch_is_checked(monkeypatch):
    monkeypatch.delenv("GRAPHJIT_CONV_GRAD_PAIR", raising=False)
    old = conv_grad_pair.set_enabled(None)
    try:
        assert not conv_grad_pair.enabled()
        with pytest.raises(ValueError, match="flag must be a bool or None"):
            conv_grad_pair.set_enabled("yes")
        monkeypatch.setenv("GRAPHJIT_CONV_GRAD_PAIR", "2")
        with pytest.raises(ValueError, match="GRAPHJIT_CONV_GRAD_PAIR must be 0 or 1"):
            conv_grad_pair.set_enabled(None)
    finally:
        monkeypatch.delenv("GRAPHJIT_CONV_GRAD_PAIR", raising=False)
        conv_grad_pair.set_enabled(old)


def _second_order(x, f):
    with ek.GradientTape() as outer:
        outer.watch([x, f])
        with ek.GradientTape() as inner:
            inner.watch([x, f])
            y = ek.reduce_sum(ek.square(ek.nn.conv2d(x, f, 1, "SAME")))
        dx, df = inner.gradient(y, [x, f])
        z = ek.reduce_sum(ek.square(dx)) + ek.reduce_sum(df * df * 0.5)
    return outer.gradient(z, [x, f])


def test_second_derivatives_through_the_pair_match_the_separate_ops(pair_on):
    x = ek.constant(RNG.standard_normal((2, 6, 6, 3)).astype(np.float64))
    f = ek.constant(RNG.standard_normal((3, 3, 3, 4)).astype(np.float64))
    with_pair = [t.numpy() for t in _second_order(x, f)]
    conv_grad_pair.set_enabled(False)
    separate = [t.numpy() for t in _second_order(x, f)]
    for a, b in zip(with_pair, separate):
        np.testing.assert_allclose(a, b, rtol=1e-10)
