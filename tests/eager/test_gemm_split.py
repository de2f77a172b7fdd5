"""Large 2-D GEMMs (MatMul) in row parts on the cores, each part on one BLAS thread (ops/linalg.py).

The parts depend on the shape and the core count only, so a split product has the same bits on every
run, whoever runs the parts, eagerly, under @function and in a Session.  The split needs threadpoolctl
(the `[native]` extra) to hold BLAS on one thread; without it a product is one BLAS call.
"""
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import blas_threads, parallel
from eager.ops import linalg
from eager.registry import get
from tracing import function

RNG = np.random.default_rng(3)
needs_blas_control = pytest.mark.skipif(not blas_threads.known() or parallel.cores() < 2,
                                        reason="needs threadpoolctl and two cores")


@pytest.fixture
def counted_parts(monkeypatch):
    calls = []
    real = parallel.for_parts

    def spy(body, k, threads_=None):
        calls.append(k)
        return real(body, k, threads_)
    monkeypatch.setattr(parallel, "for_parts", spy)
    return calls


def test_gemms_split_only_above_the_size_with_blas_control_and_two_cores(monkeypatch):
    monkeypatch.setattr(parallel, "cores", lambda: 2)
    monkeypatch.setattr(blas_threads, "known", lambda: True)
    assert linalg._gemm_parts(64, 256, 784) == 2                # the MLP's forward product
    assert linalg._gemm_parts(784, 256, 64) == 2                # its first layer's weight gradient
    assert linalg._gemm_parts(64, 10, 256) == 1                 # below SPLIT_MIN_MACS
    assert linalg._gemm_parts(16, 4096, 4096) == 1              # parts would be thinner than SPLIT_MIN_ROWS
    monkeypatch.setattr(parallel, "cores", lambda: 8)
    assert linalg._gemm_parts(64, 256, 784) == 4                # at most one part per 16 rows
    monkeypatch.setattr(blas_threads, "known", lambda: False)   # no threadpoolctl: BLAS keeps its threads
    assert linalg._gemm_parts(64, 256, 784) == 1
    monkeypatch.setattr(blas_threads, "known", lambda: True)
    monkeypatch.setattr(parallel, "cores", lambda: 1)
    assert linalg._gemm_parts(64, 256, 784) == 1


@needs_blas_control
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_a_split_product_has_the_same_bits_eagerly_traced_and_in_a_session(counted_parts, monkeypatch, ta, tb):
    a = RNG.standard_normal((784, 64) if ta else (64, 784)).astype(np.float32)
    b = RNG.standard_normal((256, 784) if tb else (784, 256)).astype(np.float32)
    expect = np.matmul(a.T if ta else a, b.T if tb else b)
    eager = ek.matmul(ek.constant(a), ek.constant(b), transpose_a=ta, transpose_b=tb).numpy()
    assert counted_parts == [2]
    np.testing.assert_allclose(eager, expect, rtol=1e-4, atol=1e-4)

    @function
    def traced(x, y):
        return ek.matmul(x, y, transpose_a=ta, transpose_b=tb)
    g = gr.Graph()
    with g.as_default():
        pa, pb = gr.placeholder(ek.float32, a.shape), gr.placeholder(ek.float32, b.shape)
        out = ek.matmul(pa, pb, transpose_a=ta, transpose_b=tb)
    with gr.Session(graph=g) as sess:
        in_session = sess.run(out, {pa: a, pb: b})
    for other in (traced(ek.constant(a), ek.constant(b)).numpy(), in_session):
        assert np.array_equal(other, eager)
    assert counted_parts == [2, 2, 2]
    names = set()
    monkeypatch.setattr(parallel, "for_parts",      # the pool refused: the caller runs both parts
                        lambda body, k, threads_=None: [names.add(threading.current_thread().name) or body(i)
                                                        for i in range(k)])
    assert np.array_equal(ek.matmul(ek.constant(a), ek.constant(b), transpose_a=ta, transpose_b=tb).numpy(),
                          eager)
    assert names == {threading.current_thread().name}


@needs_blas_control
def test_each_part_runs_on_one_blas_thread(monkeypatch):
    seen = []
    real = np.matmul

    def spying_matmul(*args, **kwargs):
        seen.append(blas_threads.count())
        return real(*args, **kwargs)
    a = RNG.standard_normal((64, 784)).astype(np.float32)
    b = RNG.standard_normal((784, 256)).astype(np.float32)
    monkeypatch.setattr(linalg.np, "matmul", spying_matmul)
    ek.matmul(ek.constant(a), ek.constant(b))
    assert seen == [1, 1]


def test_small_and_non_float_products_stay_one_blas_call(counted_parts):
    a = RNG.standard_normal((64, 256)).astype(np.float32)
    assert np.array_equal(ek.matmul(ek.constant(a), ek.constant(a[:10].T.copy())).numpy(), a @ a[:10].T)
    big = RNG.integers(-3, 3, (64, 784)).astype(np.int32)
    w = RNG.integers(-3, 3, (784, 256)).astype(np.int32)
    assert np.array_equal(ek.matmul(ek.constant(big), ek.constant(w)).numpy(), big @ w)
    assert counted_parts == []


def test_a_shape_mismatch_in_a_session_is_still_the_matmul_error():
    g = gr.Graph()
    with g.as_default():
        pa, pb = gr.placeholder(ek.float32, (None, None)), gr.placeholder(ek.float32, (None, None))
        out = ek.matmul(pa, pb)
    with gr.Session(graph=g) as sess, pytest.raises(Exception, match="MatMul"):
        sess.run(out, {pa: np.ones((64, 784), np.float32), pb: np.ones((783, 256), np.float32)})


def test_plans_call_numpy_directly_for_products_known_to_be_small():
    by_shapes = get("MatMul").extra["specialize_shapes"]
    small = by_shapes({"transpose_a": False, "transpose_b": False}, [(16, 64), (64, 64)], [(16, 64)])
    assert small is np.matmul                                   # an RNN step's product: no size check per call
    assert by_shapes({"transpose_a": True, "transpose_b": False}, [(784, 64), (64, 256)],
                     [(784, 256)]) is linalg._matmul_ta         # big enough to split: the checked kernel
    assert by_shapes({"transpose_a": False, "transpose_b": False}, [(None, 784), (784, 256)],
                     [(None, 256)]) is linalg._gemm             # unknown size: checked at run time
    a, b = (RNG.standard_normal((32, 32)).astype(np.float32) for _ in range(2))
    for ta, tb in [(True, False), (False, True), (True, True)]:
        kernel = by_shapes({"transpose_a": ta, "transpose_b": tb}, [a.shape, b.shape], [(32, 32)])
        assert kernel not in (linalg._matmul_ta, linalg._matmul_tb, linalg._matmul_tab)
        assert np.array_equal(kernel(a, b), linalg._matmul_kernel(a, b, transpose_a=ta, transpose_b=tb))
