"""conv_columns: the forward's im2col columns serve the filter gradient, only while the input's bits are unchanged."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.ops import conv_algorithms, conv_columns
from tracing import function

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def keeping_on():
    old = conv_columns.set_enabled(True)
    yield
    conv_columns.set_enabled(old)


def _grads(x, f):
    with ek.GradientTape() as tape:
        tape.watch(f)
        loss = ek.reduce_sum(ek.square(ek.nn.relu(ek.nn.conv2d(x, f, 1, "SAME"))))
    return [loss, tape.gradient(loss, f)]


def _three_ways(x, f):
    eager = [t.numpy() for t in _grads(ek.constant(x), ek.constant(f))]
    traced = [t.numpy() for t in function(_grads)(ek.constant(x), ek.constant(f))]
    g = gr.Graph()
    with g.as_default():
        xp, fp = gr.placeholder(ek.float32, x.shape), gr.placeholder(ek.float32, f.shape)
        fetches = _grads(xp, fp)
    with gr.Session(graph=g) as sess:
        session = sess.run(fetches, {xp: x, fp: f})
    return eager, traced, session


@pytest.mark.parametrize("channels", [1, 3])
def test_kept_columns_give_the_same_bits_eagerly_traced_and_in_a_session(channels, monkeypatch):
    x = RNG.standard_normal((2, 7, 6, channels)).astype(np.float32)
    f = RNG.standard_normal((3, 3, channels, 4)).astype(np.float32)
    built = []
    cols = conv_algorithms._cols
    monkeypatch.setattr(conv_algorithms, "_cols", lambda *a, **k: built.append(1) or cols(*a, **k))
    on = _three_ways(x, f)
    built_on = len(built)
    conv_columns.set_enabled(False)
    del built[:]
    off = _three_ways(x, f)
    assert built_on * 2 == len(built) == 6          # once per forward instead of once more per filter gradient
    for run_on, run_off in zip(on, off):
        for a, b in zip(run_on, run_off):
            assert np.array_equal(np.asarray(a).view(np.uint32), np.asarray(b).view(np.uint32))


def test_columns_are_found_only_for_the_same_array_with_the_same_bits():
    x = RNG.standard_normal((2, 5, 5, 2)).astype(np.float32)
    cols = np.ones((50, 18), np.float32)
    conv_columns.keep(x, ("k",), cols)
    assert conv_columns.find(x, ("k",)) is cols
    assert conv_columns.find(x, ("other geometry",)) is None
    assert conv_columns.find(x.copy(), ("k",)) is None                  # equal bits, another array
    x[1, 2, 3, 1] = np.float32(-0.0) if x[1, 2, 3, 1] == 0 else -x[1, 2, 3, 1]
    assert conv_columns.find(x, ("k",)) is None                         # written since: built again


def test_a_fed_array_written_between_runs_gets_the_gradient_of_its_new_values():
    x = RNG.standard_normal((2, 6, 6, 2)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 2, 3)).astype(np.float32)
    dy = RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
    g = gr.Graph()
    with g.as_default():
        xp, fp, dyp = (gr.placeholder(ek.float32, a.shape) for a in (x, f, dy))
        y = ek.nn.conv2d(xp, fp, 1, "SAME")
        df = gr.gradients(y, fp, grad_ys=dyp)[0]
    with gr.Session(graph=g) as sess:
        sess.run(y, {xp: x, fp: f})                 # the forward keeps the columns of the fed array
        x *= 2                                      # the caller writes its array in place
        got = sess.run(df, {xp: x, fp: f, dyp: dy})
    with conv_columns_off():
        with gr.Session(graph=g) as sess:
            want = sess.run(df, {xp: x, fp: f, dyp: dy})
    np.testing.assert_array_equal(got, want)


def conv_columns_off():
    class _Off:
        def __enter__(self):
            self.old = conv_columns.set_enabled(False)

        def __exit__(self, *exc):
            conv_columns.set_enabled(self.old)
    return _Off()


def test_settings_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="conv_columns.set_enabled"):
        conv_columns.set_enabled("yes")
    monkeypatch.setenv("GRAPHJIT_CONV_COLUMNS", "0")
    conv_columns.set_enabled(None)
    assert not conv_columns.enabled()


def test_entries_of_dead_inputs_are_dropped_when_the_next_forward_keeps():
    f = RNG.standard_normal((3, 3, 2, 2)).astype(np.float32)
    for _ in range(3):                              # each step's input dies with the step
        ek.nn.conv2d(ek.constant(RNG.standard_normal((1, 5, 5, 2)).astype(np.float32)), f, 1, "SAME")
    held = ek.constant(RNG.standard_normal((1, 5, 5, 2)).astype(np.float32))
    ek.nn.conv2d(held, f, 1, "SAME")
    assert len(conv_columns._entries) == 1         # only the input still alive
