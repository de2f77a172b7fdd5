"""eager.random: truncated_normal, categorical, shuffle, stateless_*, Generator (eager, @function, Session)."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function


def in_session(fn):
    g = gr.Graph()
    with g.as_default():
        out = fn()
    with gr.Session(graph=g) as sess:
        return sess.run(out)


@pytest.mark.parametrize("fn", [
    lambda: ek.random.stateless_normal([4, 3], seed=[7, 1], mean=2.0, stddev=0.5),
    lambda: ek.random.stateless_uniform([5], seed=[7, 2], minval=-1.0, maxval=3.0, dtype=ek.float64),
    lambda: ek.random.stateless_truncated_normal([6], seed=[1, 1]),
    lambda: ek.random.stateless_categorical([[0.0, 1.0, 2.0]], 8, seed=[3, 4]),
])
def test_stateless_ops_are_the_same_in_every_mode(fn):
    eager = fn().numpy()
    np.testing.assert_array_equal(function(fn, autograph=False)().numpy(), eager)
    np.testing.assert_array_equal(in_session(fn), eager)
    np.testing.assert_array_equal(fn().numpy(), eager)


def test_distributions():
    n = ek.random.stateless_normal([20000], seed=[0, 1]).numpy()
    assert abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    t = ek.random.stateless_truncated_normal([20000], seed=[0, 2], mean=1.0, stddev=2.0).numpy()
    assert t.min() >= 1.0 - 4.0 and t.max() <= 1.0 + 4.0 and abs(t.mean() - 1.0) < 0.05
    u = ek.random.stateless_uniform([10000], seed=[0, 3], minval=2.0, maxval=4.0).numpy()
    assert u.min() >= 2.0 and u.max() < 4.0
    logits = np.log(np.array([[0.2, 0.5, 0.3]]))
    c = ek.random.categorical(logits, 20000, seed=5).numpy()
    assert c.shape == (1, 20000) and c.dtype == np.int64
    np.testing.assert_allclose(np.bincount(c[0], minlength=3) / 20000, [0.2, 0.5, 0.3], atol=0.02)
    assert not np.array_equal(ek.random.stateless_normal([3], seed=[0, 1]).numpy(),
                              ek.random.stateless_normal([3], seed=[0, 2]).numpy())


def test_stateful_ops_follow_the_global_seed():
    def draw():
        ek.random.set_seed(11)
        return (ek.random.truncated_normal([50]).numpy(), ek.random.shuffle(np.arange(10)).numpy())
    (t1, s1), (t2, s2) = draw(), draw()
    np.testing.assert_array_equal(t1, t2)
    np.testing.assert_array_equal(s1, s2)
    assert np.abs(t1).max() <= 2.0 and sorted(s1) == list(range(10))
    ek.random.set_seed(None)


def test_generator_eagerly_in_functions_and_checkpoints(tmp_path):
    eager = ek.random.Generator.from_seed(42)
    want = [eager.normal([3]).numpy() for _ in range(3)]
    traced_gen = ek.random.Generator.from_seed(42)
    f = function(lambda: traced_gen.normal([3]), autograph=False)
    got = [f().numpy() for _ in range(3)]
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert f.experimental_get_tracing_count() == 1
    assert int(traced_gen.state.numpy()) == 3
    ckpt = ek.train.Checkpoint(gen=eager)
    path = ckpt.write(str(tmp_path / "g"))
    nxt = eager.uniform([4]).numpy()
    again = ek.random.Generator.from_seed(42)
    ek.train.Checkpoint(gen=again).restore(path).assert_consumed()
    np.testing.assert_array_equal(again.uniform([4]).numpy(), nxt)
    other = ek.random.Generator.from_seed(43).normal([3]).numpy()
    assert not np.array_equal(other, want[0])


def test_bad_arguments():
    with pytest.raises(ek.errors.InvalidArgumentError, match="shape \\[2\\]"):
        ek.random.stateless_normal([2], seed=[1, 2, 3])
    with pytest.raises(ek.errors.InvalidArgumentError, match="2-D"):
        ek.random.categorical([0.0, 1.0], 3)
    with pytest.raises(ek.errors.InvalidArgumentError, match="floating"):
        ek.random.truncated_normal([2], dtype=ek.int32)
