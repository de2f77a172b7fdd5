"""`GRAPHJIT_OWN_CORES=1`: a compiled step with convolutions runs with BLAS on one thread and the kernel pool.

Checked through the public API: what a convolution kernel sees while a plan
runs (BLAS thread count, the pool's thread count), that both come back after
the run, that only plans with convolutions are wrapped, and that results keep
the same bits eagerly, under @function and in a Session.
"""
import numpy as np
import pytest

import eager as ek
from eager import blas_threads, own_cores, parallel
from eager.ops import conv_algorithms
from tests.autograph.test_fidelity_ops import every_mode
from tracing import function

RNG = np.random.default_rng(12)
needs_blas_control = pytest.mark.skipif(not blas_threads.known() or parallel.cores() < 2,
                                        reason="needs threadpoolctl and two cores")


@pytest.fixture
def owning():
    old = own_cores.set_enabled(True)
    try:
        with conv_algorithms.split_gemms(min_bytes=0, part_bytes=2 * 8 * 8 * 9 * 3 * 4):
            yield
    finally:
        own_cores.set_enabled(old)


def test_the_switch_reads_the_environment_and_is_off_by_default(monkeypatch):
    old = own_cores.set_enabled(None)
    try:
        for env, want in (("", False), ("0", False), ("1", True)):
            monkeypatch.setenv("GRAPHJIT_OWN_CORES", env)
            own_cores.set_enabled(None)
            assert own_cores.enabled() is want
        monkeypatch.setenv("GRAPHJIT_OWN_CORES", "yes")
        with pytest.raises(ValueError, match="GRAPHJIT_OWN_CORES must be 0 or 1, got 'yes'"):
            own_cores.set_enabled(None)
        with pytest.raises(ValueError, match="own_cores.set_enabled: flag must be a bool or None"):
            own_cores.set_enabled(1)
    finally:
        monkeypatch.delenv("GRAPHJIT_OWN_CORES")
        own_cores.set_enabled(None)
        own_cores.set_enabled(old)


def test_claims_nest_and_give_the_thread_count_back():
    before = parallel.threads()
    with parallel.claimed():
        with parallel.claimed():
            assert parallel.threads() == max(before, parallel.cores())
        assert parallel.threads() == max(before, parallel.cores())
    assert parallel.threads() == before


def _spy_parts(monkeypatch):
    seen = []
    real = conv_algorithms._run_parts

    def spy(part, parts):
        def watched(i):
            seen.append((blas_threads.count(), parallel.threads()))
            part(i)
        real(watched, parts)
    monkeypatch.setattr(conv_algorithms, "_run_parts", spy)
    return seen


@needs_blas_control
def test_a_plan_with_convolutions_owns_the_cores_while_it_runs(owning, monkeypatch):
    seen = _spy_parts(monkeypatch)
    x = RNG.standard_normal((8, 8, 8, 3)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)
    blas_before, threads_before = blas_threads.count(), parallel.threads()
    conv = function(lambda a, b: ek.nn.conv2d(a, b, 1, "SAME"))
    conv(x, f)
    assert seen and set(seen) == {(1, max(threads_before, parallel.cores()))}
    assert (blas_threads.count(), parallel.threads()) == (blas_before, threads_before)
    del seen[:]
    ek.nn.conv2d(x, f, 1, "SAME")          # eagerly: the GEMM parts on one BLAS thread, the pool not claimed
    assert set(seen) == {(1, threads_before)}
    own_cores.set_enabled(False)           # read at every call: the same plan, now without the claim
    del seen[:]
    conv(x, f)
    assert all(t == threads_before for _, t in seen)
    assert blas_threads.count() == blas_before


def test_only_plans_with_convolutions_are_wrapped(owning):
    x = RNG.standard_normal((2, 5, 5, 1)).astype(np.float32)
    f = RNG.standard_normal((3, 3, 1, 2)).astype(np.float32)
    plain = function(lambda a: a * 2.0).get_concrete_function(x)
    conv = function(lambda a, b: ek.nn.conv2d(a, b, 1, "SAME")).get_concrete_function(x, f)
    assert not hasattr(plain._plan.fn, "__wrapped__")
    assert conv._plan.fn.__wrapped__ is not None
    np.testing.assert_array_equal(conv(x, f).numpy(), ek.nn.conv2d(x, f, 1, "SAME").numpy())


@needs_blas_control
def test_a_training_step_gives_the_same_bits_eagerly_under_function_and_in_a_session(owning):
    x = RNG.standard_normal((6, 8, 8, 3)).astype(np.float32)
    f0 = RNG.standard_normal((3, 3, 3, 4)).astype(np.float32)

    def grad(xx, f):
        with ek.GradientTape() as tape:
            tape.watch(f)
            loss = ek.reduce_mean(ek.square(ek.nn.relu(ek.nn.conv2d(xx, f, 1, "SAME"))))
        return tape.gradient(loss, f)

    results = every_mode(grad, x, f0)      # eagerly, converted, under @function, in a Session
    with blas_threads.single():            # the bits of the parts with OPENBLAS_NUM_THREADS=1
        one_thread = grad(ek.constant(x), ek.constant(f0)).numpy()
    for r in results:
        np.testing.assert_array_equal(r, one_thread)
