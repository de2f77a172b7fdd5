"""An eager optimizer step runs its updates as one batch (`dispatch.execute_writes`): same results, same errors.

The batch must behave like one `execute` per update: the same bits (the
per-optimizer bit-for-bit tests in test_keras_optimizers.py run eagerly, under
`@function` and in a Session), a failing update raises the op's own error with
the updates before it applied and none after it, an update outside the batch
(SGD's general path) runs after the queued ones, and NaN and inf stay values.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager as ek
from eager import dispatch
from eager.errors import InvalidArgumentError
from eager.keras import optimizers
from eager.ops.math import ADD
from eager.variables import ASSIGN_ADD
from tracing import function


def _vars():
    return [ek.Variable(np.full((3, 4), 1.0, np.float32), name="a"),
            ek.Variable(np.full((3, 4), 2.0, np.float32), name="b"),
            ek.Variable(np.full(4, 3.0, np.float32), name="c")]


def _grads(*shapes):
    return [ek.constant(np.full(s, 0.5, np.float32)) for s in shapes]


@pytest.mark.parametrize("make", [lambda: optimizers.SGD(0.1), lambda: optimizers.Adam(0.1),
                                  lambda: optimizers.SGD(0.1, momentum=0.9)])
def test_a_failing_update_raises_its_error_after_the_updates_before_it(make):
    opt = make()
    a, b, c = _vars()
    grads = _grads((3, 4), (5,), (4,))          # b's gradient has the wrong shape
    with pytest.raises(InvalidArgumentError) as err:
        opt.apply_gradients(zip(grads, [a, b, c]))
    assert "b:0" in str(err.value) or "could not be broadcast" in str(err.value)
    assert not np.array_equal(a.numpy(), np.full((3, 4), 1.0, np.float32))     # updated before the failure
    np.testing.assert_array_equal(b.numpy(), np.full((3, 4), 2.0, np.float32))
    np.testing.assert_array_equal(c.numpy(), np.full(4, 3.0, np.float32))      # never reached
    assert int(opt.iterations.numpy()) == 0


def test_the_failing_update_raises_what_one_dispatch_raises():
    a, b, c = _vars()
    grads = _grads((3, 4), (5,), (4,))
    with pytest.raises(InvalidArgumentError) as batched:
        optimizers.SGD(0.1).apply_gradients(zip(grads, [a, b, c]))
    from eager.variables import APPLY_GRADIENT_DESCENT
    with pytest.raises(InvalidArgumentError) as single:
        dispatch.execute(APPLY_GRADIENT_DESCENT, (ek.constant(np.float32(0.1)), grads[1]), {"var": b})
    assert str(batched.value) == str(single.value)


def test_an_update_outside_the_batch_runs_after_the_queued_ones():
    # a float64 gradient for a float32 variable takes SGD's general path, which raises: the first variable's
    # queued update has run by then, as it had when each update was dispatched on its own
    a, b, c = _vars()
    grads = [ek.constant(np.full((3, 4), 0.5, np.float32)), ek.constant(np.full((3, 4), 0.5, np.float64)),
             ek.constant(np.full(4, 0.5, np.float32))]
    opt = optimizers.SGD(0.1)
    with pytest.raises(InvalidArgumentError):
        opt.apply_gradients(zip(grads, [a, b, c]))
    np.testing.assert_array_equal(a.numpy(), np.subtract(np.float32(1.0), np.float32(0.5) * np.float32(0.1)))
    np.testing.assert_array_equal(b.numpy(), np.full((3, 4), 2.0, np.float32))
    np.testing.assert_array_equal(c.numpy(), np.full(4, 3.0, np.float32))
    assert int(opt.iterations.numpy()) == 0


@pytest.mark.parametrize("make", [lambda: optimizers.SGD(1e30), lambda: optimizers.Adam(1e30)])
def test_overflowing_updates_are_values_under_warnings_as_errors_and_errstate_raise(make):
    for strict in (lambda: warnings.simplefilter("error"), lambda: np.seterr(all="raise")):
        opt = make()
        vs = [ek.Variable(np.full(3, 3e38, np.float32)), ek.Variable(np.full(2, -3e38, np.float32))]
        grads = [ek.constant(np.full(3, -1e30, np.float32)), ek.constant(np.full(2, 1e30, np.float32))]
        with warnings.catch_warnings(), np.errstate():
            strict()
            opt.apply_gradients(zip(grads, vs))
        assert not np.isfinite(vs[0].numpy()).any() and not np.isfinite(vs[1].numpy()).any()   # inf or NaN
        assert int(opt.iterations.numpy()) == 1


@pytest.mark.parametrize("make", [lambda: optimizers.SGD(0.1), lambda: optimizers.Adam(0.05),
                                  lambda: optimizers.RMSprop(0.05, momentum=0.5)])
def test_a_multi_variable_step_gives_the_same_bits_eagerly_and_under_function(make):
    rng = np.random.default_rng(0)
    init = [rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (4,), (4, 2))]
    grads = [[ek.constant(rng.standard_normal(w.shape).astype(np.float32)) for w in init] for _ in range(3)]
    results = []
    for traced in (False, True):
        vs, opt = [ek.Variable(w) for w in init], make()
        step = (lambda gs: opt.apply_gradients(zip(gs, vs)))
        step = function(step) if traced else step
        for gs in grads:
            step(gs)
        results.append([v.numpy() for v in vs] + [opt.iterations.numpy()])
    for eager_value, traced_value in zip(*results):
        np.testing.assert_array_equal(eager_value, traced_value)


def test_execute_writes_refuses_an_op_that_writes_nothing_before_running_any():
    v = ek.Variable(np.int64(0))
    one = ek.constant(np.int64(1))
    with pytest.raises(ValueError, match="AddV2 does not write state"):
        dispatch.execute_writes([(ASSIGN_ADD, (one,), {"var": v}), (ADD, (one, one), {})])
    assert int(v.numpy()) == 0
    assert [int(r.numpy()) for r in dispatch.execute_writes([(ASSIGN_ADD, (one,), {"var": v})] * 2)] == [1, 2]


def test_plain_sgd_steps_give_the_general_steps_bits_results_and_counter():
    # plain SGD's eager step builds its updates without the general step's bookkeeping; clipping far beyond the
    # values (which changes no bit) sends the same step down the general path, and so does a NumPy gradient
    rng = np.random.default_rng(1)
    init = [rng.standard_normal(s).astype(dt) for s, dt in (((5, 4), np.float32), ((4,), np.float64),
                                                            ((4, 2), np.float16), ((3,), np.float32))]
    grads = [[rng.standard_normal(w.shape).astype(w.dtype) for w in init] for _ in range(3)]
    results = []
    for make, as_tensor in ((lambda: optimizers.SGD(0.1), True), (lambda: optimizers.SGD(0.1, clipvalue=1e30), True),
                            (lambda: optimizers.SGD(0.1), False)):
        vs, opt = [ek.Variable(w) for w in init], make()
        for i, gs in enumerate(grads):
            if i == 2:
                opt.learning_rate = 0.05        # a new rate is read by the next step
            out = opt.apply_gradients(zip([ek.constant(g) if as_tensor else g for g in gs], vs))
            assert all(a is b for a, b in zip(out, vs + [opt.iterations])) and len(out) == 5
        results.append([v.numpy() for v in vs] + [opt.iterations.numpy()])
    for fast, general, from_numpy in zip(*results):
        assert fast.dtype == general.dtype
        np.testing.assert_array_equal(fast, general)
        np.testing.assert_array_equal(fast, from_numpy)
    assert int(results[0][-1]) == 3


def test_a_subclass_of_sgd_keeps_its_own_update_rule():
    # plain SGD's own eager step skips `_apply`; a subclass overriding it must still have it called
    class HalfSGD(optimizers.SGD):
        def _apply(self, g, v, t, h, counter):
            self._flush_writes()
            return v.assign_sub(g * 0.5)

    v = ek.Variable(np.full(3, 1.0, np.float32))
    opt = HalfSGD(0.1)
    opt.apply_gradients([(ek.constant(np.full(3, 1.0, np.float32)), v)])
    np.testing.assert_array_equal(v.numpy(), np.full(3, 0.5, np.float32))
    assert int(opt.iterations.numpy()) == 1
