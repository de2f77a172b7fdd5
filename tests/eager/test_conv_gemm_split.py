"""Convolution GEMMs split into batch parts on the cores: results, fixed bits, BLAS on one thread per part.

The split needs threadpoolctl (the `[native]` extra) to keep BLAS on one
thread inside each part; without it the kernels keep their GEMMs whole.
Each test forces the split on small problems (SPLIT_MIN_BYTES, PART_BYTES)
and checks the public ops (conv2d and its gradients under a GradientTape,
eagerly, under @function and in a Session) against loop references and
against themselves run with the pool's help refused.
"""
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import blas_threads, parallel
from eager.ops import conv_algorithms
from tests.eager.test_conv_algorithms import ref_conv_all
from tracing import function

RNG = np.random.default_rng(11)
needs_blas_control = pytest.mark.skipif(not blas_threads.known() or parallel.cores() < 2,
                                        reason="needs threadpoolctl and two cores")


@pytest.fixture
def split_small():
    """Split every convolution GEMM, two images per part, on the small problems below; BLAS on one thread
    (as with OPENBLAS_NUM_THREADS=1), where the split applies."""
    with blas_threads.single(), conv_algorithms.split_gemms(min_bytes=0, part_bytes=2 * 8 * 8 * 9 * 3 * 4):
        yield


@needs_blas_control
def test_gemms_stay_whole_where_blas_runs_on_several_threads(monkeypatch):
    with conv_algorithms.split_gemms(min_bytes=0, part_bytes=2 * 8 * 8 * 9 * 3 * 4):
        monkeypatch.setattr(blas_threads, "count", lambda: 2)
        assert conv_algorithms._split(8, 8 * 8 * 9 * 3, 4) is None
        monkeypatch.setattr(blas_threads, "count", lambda: 1)
        assert conv_algorithms._split(8, 8 * 8 * 9 * 3, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]
        monkeypatch.setattr(blas_threads, "count", lambda: 2)
        monkeypatch.setenv("GRAPHJIT_BLAS_SPLIT", "1")          # opt-in: parts even on several BLAS threads
        assert conv_algorithms._split(8, 8 * 8 * 9 * 3, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]
        monkeypatch.setattr(blas_threads, "count", lambda: None)  # unknown count: never
        assert conv_algorithms._split(8, 8 * 8 * 9 * 3, 4) is None


@needs_blas_control
def test_forced_parts_on_several_blas_threads_give_the_one_thread_parts_bits(monkeypatch):
    # GRAPHJIT_BLAS_SPLIT=1 where BLAS runs on several threads: each part's GEMM still runs on one BLAS
    # thread, so the results are those of the parts with OPENBLAS_NUM_THREADS=1; the count comes back
    x = RNG.standard_normal((8, 8, 8, 3)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    dy = RNG.standard_normal((8, 8, 8, 4)).astype(np.float32)
    part = 2 * 8 * 8 * 9 * 3 * 4
    with blas_threads.single(), conv_algorithms.split_gemms(min_bytes=0, part_bytes=part):
        want = conv_and_grads(x, f, dy)
    libs = blas_threads._libraries()
    saved = [lib.get_num_threads() for lib in libs]
    for lib in libs:
        lib.set_num_threads(2)
    try:
        monkeypatch.setenv("GRAPHJIT_BLAS_SPLIT", "1")
        with conv_algorithms.split_gemms(min_bytes=0, part_bytes=part):
            assert conv_algorithms._split(8, 8 * 8 * 9 * 3, 4) == [(0, 2), (2, 4), (4, 6), (6, 8)]
            got = conv_and_grads(x, f, dy)
        assert blas_threads.count() == 2
    finally:
        for lib, n in zip(libs, saved):
            lib.set_num_threads(n)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@needs_blas_control
def test_the_count_comes_back_even_when_the_libraries_change_inside_a_section(monkeypatch):
    before = blas_threads.count()
    with blas_threads.single():
        monkeypatch.setitem(blas_threads._state, "libs", [])
    monkeypatch.undo()
    assert blas_threads.count() == before


def conv_and_grads(x, f, dy, input_="transpose"):
    xt, ft = ek.constant(x), ek.constant(f)
    with conv_algorithms.forced(forward="im2col", input=input_, filter="gemm"):
        with ek.GradientTape() as tape:
            tape.watch([xt, ft])
            y = ek.nn.conv2d(xt, ft, 1, "SAME")
        dx, df = tape.gradient(y, [xt, ft], output_gradients=ek.constant(dy))
    return y.numpy(), dx.numpy(), df.numpy()


@needs_blas_control
@pytest.mark.parametrize("input_", ["transpose", "col2im"])
def test_split_convolutions_match_loops_and_do_not_depend_on_who_runs_the_parts(split_small, monkeypatch, input_):
    x = RNG.standard_normal((7, 8, 8, 3)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    dy = RNG.standard_normal((7, 8, 8, 4)).astype(np.float32)
    assert conv_algorithms._split(7, 8 * 8 * 9 * 3, 4) == [(0, 1), (1, 3), (3, 5), (5, 7)]
    got = conv_and_grads(x, f, dy, input_)
    for g, want in zip(got, ref_conv_all(x.astype(np.float64), f.astype(np.float64), dy.astype(np.float64),
                                         (1, 1), "SAME", (1, 1))):
        np.testing.assert_allclose(g, want, rtol=1e-4, atol=1e-4)
    serial_parts = lambda body, k, threads_=None: [body(i) for i in range(k)]    # the pool refused
    monkeypatch.setattr(parallel, "for_parts", serial_parts)
    for a, b in zip(got, conv_and_grads(x, f, dy, input_)):
        np.testing.assert_array_equal(a, b)


@needs_blas_control
def test_taps_input_gradient_in_parts_matches_loops_and_does_not_depend_on_who_runs_them(monkeypatch):
    x = RNG.standard_normal((7, 8, 8, 3)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    dy = RNG.standard_normal((7, 8, 8, 4)).astype(np.float32)
    counts = []
    real = conv_algorithms._run_parts
    monkeypatch.setattr(conv_algorithms, "_run_parts", lambda part, parts: (counts.append(len(parts)),
                                                                            real(part, parts)))
    part = 2 * 8 * 8 * 9 * 3 * 4 // conv_algorithms.TAPS_PART_SCALE        # two images per `taps` part
    with blas_threads.single(), conv_algorithms.split_gemms(min_bytes=0, part_bytes=part):
        got = conv_and_grads(x, f, dy, "taps")[1]
        assert 4 in counts
        np.testing.assert_allclose(got, ref_conv_all(x.astype(np.float64), f.astype(np.float64),
                                                     dy.astype(np.float64), (1, 1), "SAME", (1, 1))[1],
                                   rtol=1e-4, atol=1e-4)
        monkeypatch.setattr(parallel, "for_parts", lambda body, k, threads_=None: [body(i) for i in range(k)])
        np.testing.assert_array_equal(got, conv_and_grads(x, f, dy, "taps")[1])


@needs_blas_control
def test_parts_run_blas_on_one_thread_and_the_count_comes_back(split_small, monkeypatch):
    before = blas_threads.count()
    seen = []
    real = parallel.for_parts

    def spy(body, k, threads_=None):
        def part(i):
            seen.append((blas_threads.count(), threading.get_ident()))
            body(i)
        real(part, k, threads_)
    monkeypatch.setattr(parallel, "for_parts", spy)
    x = RNG.standard_normal((8, 8, 8, 3)).astype(np.float32)
    ek.nn.conv2d(x, RNG.standard_normal((3, 3, 3, 4)).astype(np.float32), 1, "SAME")
    assert len(seen) == 4 and {n for n, _ in seen} == {1}
    assert blas_threads.count() == before
    with conv_algorithms.split_gemms(enabled=False):
        ek.nn.conv2d(x, RNG.standard_normal((3, 3, 3, 4)).astype(np.float32), 1, "SAME")
    assert len(seen) == 4


def test_without_blas_control_the_gemms_stay_whole(monkeypatch, split_small):
    monkeypatch.setitem(blas_threads._state, "libs", [])
    assert not blas_threads.known() and blas_threads.count() is None
    assert conv_algorithms._split(8, 8 * 8 * 9 * 3, 4) is None
    with blas_threads.single():        # a no-op without a library to set
        pass
    x = RNG.standard_normal((4, 8, 8, 3)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    y = ek.nn.conv2d(x, f, 1, "SAME").numpy()
    np.testing.assert_allclose(y, ref_conv_all(x.astype(np.float64), f.astype(np.float64), None, (1, 1), "SAME",
                                               (1, 1))[0], rtol=1e-4, atol=1e-4)


@needs_blas_control
def test_single_nests_across_threads_and_restores_the_count():
    before = blas_threads.count()
    inner = []
    with blas_threads.single():
        t = threading.Thread(target=lambda: inner.append(_nested_count()))
        t.start()
        t.join()
        assert blas_threads.count() == 1
    assert inner == [1] and blas_threads.count() == before


def _nested_count():
    with blas_threads.single():
        return blas_threads.count()


@needs_blas_control
def test_a_split_training_step_is_the_same_eagerly_under_function_and_in_a_session(split_small):
    x = RNG.standard_normal((6, 8, 8, 3)).astype(np.float32)
    f0 = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)

    def loss_of(xx, f):
        return ek.reduce_mean(ek.square(ek.nn.relu(ek.nn.conv2d(xx, f, 1, "SAME"))))

    def grad(xx, f):
        with ek.GradientTape() as tape:
            tape.watch(f)
            loss = loss_of(xx, f)
        return tape.gradient(loss, f)

    eager_g = grad(ek.constant(x), ek.constant(f0)).numpy()
    fn_g = function(grad)(ek.constant(x), ek.constant(f0)).numpy()
    g = gr.Graph()
    with g.as_default():
        xp = gr.placeholder(ek.float32, x.shape)
        fp = gr.placeholder(ek.float32, f0.shape)
        out = gr.gradients(loss_of(xp, fp), [fp])[0]
    with gr.Session(graph=g) as sess:
        sess_g = sess.run(out, {xp: x, fp: f0})
    np.testing.assert_array_equal(eager_g, fn_g)
    np.testing.assert_array_equal(eager_g, sess_g)


@needs_blas_control
def test_a_child_forked_inside_a_section_gets_the_blas_count_back():
    import os
    before = blas_threads.count()
    if before == 1:
        pytest.skip("BLAS runs on one thread already: nothing to give back")
    read, write = os.pipe()
    with blas_threads.single():
        pid = os.fork()
        if pid == 0:           # the child: report the count it runs with, and leave at once
            os.write(write, str(blas_threads.count()).encode())
            os._exit(0)
    os.waitpid(pid, 0)
    assert int(os.read(read, 16)) == before
    os.close(read)
    os.close(write)


def test_a_blas_library_whose_count_cannot_be_read_is_left_alone(monkeypatch):
    import sys
    import types

    class Lib:
        def __init__(self, n):
            self.n = n

        def get_num_threads(self):
            return self.n

    class Controller:
        libs = [Lib(2), Lib(None)]

        def select(self, user_api):
            assert user_api == "blas"
            return types.SimpleNamespace(lib_controllers=self.libs)

    monkeypatch.setitem(sys.modules, "threadpoolctl", types.SimpleNamespace(ThreadpoolController=Controller))
    monkeypatch.delenv("GRAPHJIT_BLAS_SPLIT", raising=False)
    assert blas_threads._find() == []
    Controller.libs = [Lib(2), Lib(4)]
    assert len(blas_threads._find()) == 2
    monkeypatch.setenv("GRAPHJIT_BLAS_SPLIT", "0")
    assert blas_threads._find() == []
