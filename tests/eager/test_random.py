"""eager.random: shapes, dtypes, distributions, TF2 seeding rules, the RandomState attribute, errors."""
import numpy as np
import pytest

import eager as ek
from eager import registry
from eager.errors import InvalidArgumentError
from eager.ops.random import RandomState


@pytest.fixture(autouse=True)
def _no_global_seed():
    ek.random.set_seed(None)
    yield
    ek.random.set_seed(None)


def test_shapes_dtypes_and_moments():
    x = ek.random.normal([4000, 3], mean=2.0, stddev=0.5, seed=1)
    assert x.shape == (4000, 3) and x.dtype is ek.float32
    assert abs(x.numpy().mean() - 2.0) < 0.03 and abs(x.numpy().std() - 0.5) < 0.03
    u = ek.random.uniform((5000,), minval=-1.0, maxval=3.0, dtype=ek.float64, seed=2).numpy()
    assert u.dtype == np.float64 and u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1.0) < 0.1
    assert ek.random.normal([], dtype="float16").dtype is ek.float16
    assert ek.random.uniform([0, 3]).shape == (0, 3)
    assert ek.random.normal(ek.constant([2, 2])).shape == (2, 2)


def test_uniform_ints():
    r = ek.random.uniform([1000], minval=3, maxval=7, dtype=ek.int32, seed=4).numpy()
    assert r.dtype == np.int32 and set(np.unique(r)) == {3, 4, 5, 6}
    assert ek.random.uniform([2], maxval=10, dtype=ek.int64).dtype is ek.int64
    with pytest.raises(ValueError, match="maxval"):
        ek.random.uniform([2], dtype=ek.int32)
    with pytest.raises(InvalidArgumentError, match="minval < maxval"):
        ek.random.uniform([2], minval=5, maxval=5, dtype=ek.int32)


def test_errors():
    with pytest.raises(InvalidArgumentError, match="floating"):
        ek.random.normal([2], dtype=ek.int32)
    with pytest.raises(InvalidArgumentError, match="negative"):
        ek.random.normal([2, -1])
    with pytest.raises(InvalidArgumentError, match="shape"):
        ek.random.uniform(ek.constant([[2]]))


def test_global_seed_makes_the_sequence_reproducible():
    ek.random.set_seed(42)
    a1, a2 = ek.random.normal([3]).numpy(), ek.random.uniform([3]).numpy()
    ek.random.set_seed(42)
    b1, b2 = ek.random.normal([3]).numpy(), ek.random.uniform([3]).numpy()
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    ek.random.set_seed(42)
    c1 = ek.random.normal([3]).numpy()
    c2 = ek.random.normal([3]).numpy()
    assert not np.array_equal(c1, c2)            # successive ops draw different numbers
    ek.random.set_seed(43)
    assert not np.array_equal(ek.random.normal([3]).numpy(), a1)


def test_op_seed_continues_one_stream_until_set_seed():
    a = ek.random.normal([4], seed=5).numpy()
    b = ek.random.normal([4], seed=5).numpy()
    assert not np.array_equal(a, b)              # TF2 eager: same op seed, next numbers of the stream
    ek.random.set_seed(None)
    np.testing.assert_array_equal(ek.random.normal([4], seed=5).numpy(), a)
    ek.random.set_seed(1)
    x = ek.random.uniform([4], seed=5).numpy()
    ek.random.set_seed(1)
    np.testing.assert_array_equal(ek.random.uniform([4], seed=5).numpy(), x)


def test_no_seed_is_fresh_randomness():
    assert not np.array_equal(ek.random.normal([8]).numpy(), ek.random.normal([8]).numpy())


def test_ops_are_stateful_and_not_differentiable():
    for name in ("RandomStandardNormal", "RandomUniform", "RandomUniformInt"):
        opdef = registry.get(name)
        assert opdef.stateful and not opdef.differentiable


def test_random_state_attribute_draws_fresh_numbers_each_run():
    # what a graph does: the same op (same attrs) runs many times
    opdef = registry.get("RandomStandardNormal")
    state = RandomState(123)
    shape = np.array([3], np.int32)
    r1 = opdef.kernel(shape, dtype=ek.float32, state=state)
    r2 = opdef.kernel(shape, dtype=ek.float32, state=state)
    assert not np.array_equal(r1, r2)
    restored = RandomState.from_config(state.to_config())   # what a GraphDef stores: the integer seed
    np.testing.assert_array_equal(opdef.kernel(shape, dtype=ek.float32, state=restored), r1)
    state.reset()
    np.testing.assert_array_equal(opdef.kernel(shape, dtype=ek.float32, state=state), r1)
    assert isinstance(state.seed, int)


def test_random_ops_under_gradient_tape():
    x = ek.constant([1.0, 2.0])
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.reduce_sum(x * ek.random.normal([2], seed=1))
    assert tape.gradient(y, x).shape == (2,)


def test_threads_drawing_under_a_global_seed_get_distinct_reproducible_streams():
    """Ops dispatched from many threads each take their own counter value: together they draw exactly the
    values the same number of ops draws on one thread (no two threads share a seed)."""
    import sys
    import threading
    n_threads, per_thread = 8, 40
    ek.random.set_seed(1234)
    sequential = {float(ek.random.normal([1]).numpy()[0]) for _ in range(n_threads * per_thread)}
    ek.random.set_seed(1234)
    drawn, start = [], threading.Barrier(n_threads)

    def work():
        start.wait()
        mine = [float(ek.random.normal([1]).numpy()[0]) for _ in range(per_thread)]
        drawn.extend(mine)
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)             # interleave the threads as much as possible
    try:
        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
        ek.random.set_seed(None)
    assert len(drawn) == n_threads * per_thread
    assert set(drawn) == sequential
