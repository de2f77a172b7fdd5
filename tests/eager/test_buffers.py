"""eager.buffers: large kernel outputs reuse dead arrays' memory, never memory still in use."""
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import buffers
from tracing import function

BIG = (256, 1024)                       # 1 MiB of float32: pooled


@pytest.fixture(autouse=True)
def pool_on():
    old = buffers.set_enabled(True)
    yield
    buffers.set_enabled(old)


def test_a_dead_array_is_reused_and_a_live_view_keeps_its_memory():
    a = buffers.empty(BIG, np.float32)
    address = a.ctypes.data
    del a
    b = buffers.empty(BIG, np.float32)
    assert b.ctypes.data == address                 # the same memory, no fresh pages
    view = b[10:20].reshape(-1)[::3]                # a view of a view still holds the memory
    del b
    c = buffers.empty(BIG, np.float32)
    assert not np.shares_memory(c, view)
    d = buffers.empty((1024, 256), np.float64)[:, :128]     # another shape and dtype of other byte sizes
    assert not np.shares_memory(d, view) and not np.shares_memory(d, c)


def test_small_arrays_and_a_disabled_pool_use_np_empty():
    small = buffers.empty((4, 4), np.float32)
    assert small.flags.owndata
    buffers.set_enabled(False)
    before = buffers.pooled_bytes()
    for _ in range(2):
        a = buffers.empty(BIG, np.float32)
        assert a.flags.owndata
        del a
    assert buffers.pooled_bytes() == before
    buffers.set_enabled(True)
    assert not buffers.empty(BIG, np.float32).flags.owndata      # a view of the pool's buffer


def test_zeros_is_zero_even_in_reused_memory():
    a = buffers.empty(BIG, np.float32)
    a.fill(7.0)
    del a
    z = buffers.zeros(BIG, np.float32)
    assert not z.any()


def test_the_pool_stays_within_its_limit(monkeypatch):
    buffers.set_enabled(False)                      # drops the free buffers
    buffers.set_enabled(True)
    base = buffers.pooled_bytes()                   # buffers other tests' arrays still use
    monkeypatch.setattr(buffers, "MAX_BYTES", base + (3 << 20))
    held = [buffers.empty((1 << 20,), np.uint8) for _ in range(3)]
    assert buffers.pooled_bytes() == base + (3 << 20)
    extra = buffers.empty((1 << 20,), np.uint8)    # no room: a plain array, not pooled
    assert extra.flags.owndata and buffers.pooled_bytes() == base + (3 << 20)
    del held[0]
    other = buffers.empty((1 << 19,), np.uint8)     # the free 1 MiB buffer is dropped to make room
    assert not other.flags.owndata
    assert buffers.pooled_bytes() <= base + (5 << 19)
    assert all(not np.shares_memory(other, h) for h in held + [extra])


def test_threads_never_share_a_buffer():
    found, errors = [], []

    def work():
        try:
            for _ in range(200):
                a = buffers.empty(BIG, np.float32)
                a.fill(threading.get_ident() % 1000)
                if not (a == threading.get_ident() % 1000).all():
                    errors.append("overwritten")
                found.append(a.ctypes.data)
                del a
        except Exception as e:                      # pragma: no cover - reported below
            errors.append(e)
    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(found) == 800


def test_settings_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="set_enabled"):
        buffers.set_enabled(1)
    monkeypatch.setenv("GRAPHJIT_RECYCLE", "yes")
    with pytest.raises(ValueError, match="GRAPHJIT_RECYCLE must be 0 or 1"):
        buffers.set_enabled(None)
    monkeypatch.setenv("GRAPHJIT_RECYCLE", "0")
    buffers.set_enabled(None)
    assert not buffers.enabled()


# ------------------------------------------------------------------ through the public API
def _cnn_grads(x, f1, f2):
    with ek.GradientTape() as tape:
        tape.watch([f1, f2])
        h1 = ek.nn.relu(ek.nn.conv2d(x, f1, 1, "SAME"))
        h2 = ek.nn.relu(ek.nn.conv2d(ek.nn.max_pool2d(h1, 2, 2, "VALID"), f2, 1, "SAME"))
        loss = ek.reduce_mean(ek.square(h2))
    return [loss] + tape.gradient(loss, [f1, f2])


def _three_ways(x, f1, f2):
    eager = [t.numpy() for t in _cnn_grads(ek.constant(x), ek.constant(f1), ek.constant(f2))]
    fn = function(_cnn_grads)
    traced = [[t.numpy() for t in fn(ek.constant(x), ek.constant(f1), ek.constant(f2))] for _ in range(2)]
    g = gr.Graph()
    with g.as_default():
        ps = [gr.placeholder(ek.float32, a.shape) for a in (x, f1, f2)]
        fetches = _cnn_grads(*ps)
    with gr.Session(graph=g) as sess:
        session = [sess.run(fetches, dict(zip(ps, (x, f1, f2)))) for _ in range(2)]
    return [eager] + traced + session


def test_recycled_outputs_give_the_same_results_eagerly_traced_and_in_a_session():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((8, 28, 28, 1)).astype(np.float32)           # conv outputs of 392 KiB: pooled
    f1 = (rng.standard_normal((3, 3, 1, 16)) * 0.3).astype(np.float32)
    f2 = (rng.standard_normal((3, 3, 16, 32)) * 0.1).astype(np.float32)
    buffers.set_enabled(False)
    off = _three_ways(x, f1, f2)
    buffers.set_enabled(True)
    on = _three_ways(x, f1, f2)
    assert buffers.pooled_bytes() > 0
    for run_on, run_off in zip(on, off):
        for a, b in zip(run_on, run_off):
            assert np.array_equal(np.asarray(a), np.asarray(b))
    for run in on[1:]:                              # repeated steps reuse memory the earlier ones left
        for a, b in zip(run, on[0]):
            assert np.allclose(a, b, rtol=1e-5, atol=1e-7)


def test_the_eager_gradients_of_a_big_mean_of_squares_come_from_the_pool():
    # a CNN's loss: Mean's and Square's eager gradients over a big activation used to take fresh pages
    # every step (about 1,100 page faults of the eager CNN step); Mean's is now never written out (the
    # Mean-over-Square pair rule) and Square's comes from the pool
    buffers.set_enabled(False)          # drops the free buffers: what the pool holds now stays in use
    buffers.set_enabled(True)
    x = ek.constant(np.random.default_rng(2).standard_normal(BIG).astype(np.float32))
    before = buffers.pooled_bytes()
    with ek.GradientTape() as tape:
        tape.watch(x)
        loss = ek.reduce_mean(ek.square(x))
    g = tape.gradient(loss, x)
    assert buffers.pooled_bytes() >= before + x.numpy().nbytes
    assert np.array_equal(g.numpy(), x.numpy() * np.float32(2) * np.float32(1 / x.numpy().size))
