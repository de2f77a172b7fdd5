"""Backprop's direct eager rules (`extra["eager_grad"]`) give the public rules' results, bit for bit.

With no tape recording, an eager backward pass differentiates MatMul, AddV2,
Sub, Mul, Relu, Sum, Mean and SoftmaxCrossEntropyWithLogits with their NumPy
kernels instead of the public ops.  An outer recording tape turns the direct
rules off (its gradients must be differentiable), so the same gradient taken
inside one is the public rules' result: both must agree exactly.  Cases the
direct rules do not handle (labels' gradient, a second-order term, integer
values, bad output gradients) must take the public rule: same results, same
errors.
"""
from __future__ import annotations

import contextlib
import sys
import warnings

import numpy as np
import pytest

import eager as ek
from eager import dispatch
from eager.errors import InvalidArgumentError
from eager.registry import lookup


def _mlp_loss(x, y, w1, b1, w2, b2):
    h = ek.nn.relu(ek.matmul(x, w1) + b1)
    logits = ek.matmul(h, w2) - b2 * 2.0
    return ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits)) + \
        ek.reduce_sum(b1 * b1)


def _params(dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((6, 5)).astype(dtype)
    y = np.eye(3, dtype=dtype)[rng.integers(0, 3, 6)]
    ps = [rng.standard_normal((5, 4)).astype(dtype), rng.standard_normal(4).astype(dtype),
          rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)]
    return ek.constant(x), ek.constant(y), [ek.Variable(p) for p in ps]


def taped_gradients(public: bool, loss_fn, sources):
    """d loss_fn() / d sources: with an outer recording tape, which makes the public rules run (`public`),
    or without one, when the direct rules run."""
    with ek.GradientTape() if public else contextlib.nullcontext():
        with ek.GradientTape() as tape:
            loss = loss_fn()
        return tape.gradient(loss, sources)


def assert_same_bits(direct, public):
    for d, p in zip(direct, public, strict=True):
        assert d.dtype == p.dtype and d.shape == p.shape
        np.testing.assert_array_equal(d.numpy(), p.numpy())


def _gradients(public: bool, dtype):
    x, y, vs = _params(dtype)
    return taped_gradients(public, lambda: _mlp_loss(x, y, *vs), vs)


class _Dispatched:
    """Count the ops dispatched through `execute` and `execute_writes` by the eager modules while the block
    runs (`batches`: the number of ops of each `execute_writes` call)."""

    def __enter__(self):
        self.names, self.batches = [], []
        self._patched = []
        orig, orig_writes = dispatch.execute, dispatch.execute_writes

        def counting(opdef, *args, **kwargs):
            self.names.append(opdef.name)
            return orig(opdef, *args, **kwargs)

        def counting_writes(calls):
            self.batches.append(len(calls))
            self.names.extend(opdef.name for opdef, _, _ in calls)
            return orig_writes(calls)
        for m in list(sys.modules.values()):
            if not getattr(m, "__name__", "").startswith("eager"):
                continue
            for attr, old, new in (("execute", orig, counting), ("execute_writes", orig_writes, counting_writes)):
                if getattr(m, attr, None) is old:
                    setattr(m, attr, new)
                    self._patched.append((m, attr, old))
        return self

    def __exit__(self, *exc):
        for m, attr, old in self._patched:
            setattr(m, attr, old)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_direct_rules_equal_the_public_rules_bitwise(dtype):
    assert_same_bits(_gradients(False, dtype), _gradients(True, dtype))


def dispatched_by_gradient(loss_fn, sources):
    """The ops that the eager gradient of a recorded `loss_fn()` dispatches."""
    with ek.GradientTape() as tape:
        loss = loss_fn()
    with _Dispatched() as seen:
        tape.gradient(loss, sources)
    return seen.names


def test_the_direct_rules_run_without_dispatching_ops():
    x, y, vs = _params(np.float32)
    # no op is dispatched: the seed and every rule ran on NumPy values
    assert dispatched_by_gradient(lambda: _mlp_loss(x, y, *vs), vs) == []
    for name in ("MatMul", "AddV2", "Sub", "Mul", "Relu", "Sum", "Mean", "SoftmaxCrossEntropyWithLogits"):
        assert callable(lookup(name).extra.get("eager_grad")), name


def test_an_outer_tape_gets_differentiable_gradients():
    # y = sum(X @ X): dy/dX[a, b] = rowsum(X)[b] + colsum(X)[a], whose sum is 2n sum(X): d/dX = 2n
    x = ek.Variable([[1.0, -2.0], [0.5, 3.0]])
    with ek.GradientTape() as outer:
        with ek.GradientTape() as inner:
            y = ek.reduce_sum(ek.matmul(x, x))
        g = inner.gradient(y, x)
        s = ek.reduce_sum(g)
    xv = x.numpy()
    np.testing.assert_array_equal(g.numpy(), xv.sum(axis=1)[None, :] + xv.sum(axis=0)[:, None])
    np.testing.assert_array_equal(outer.gradient(s, x).numpy(), np.full((2, 2), 4.0, np.float32))


def test_labels_gradient_takes_the_public_rule():
    logits = ek.constant([[1.0, 2.0, 0.5], [0.1, -1.0, 2.0]])
    labels = ek.constant([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])
    with ek.GradientTape() as tape:
        tape.watch(labels)
        tape.watch(logits)
        loss = ek.reduce_sum(ek.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    dlabels, dlogits = tape.gradient(loss, [labels, logits])
    lv, gv = labels.numpy(), logits.numpy()
    logsm = gv - np.log(np.exp(gv).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(dlabels.numpy(), -logsm, rtol=1e-6)
    sm = np.exp(logsm)
    np.testing.assert_allclose(dlogits.numpy(), sm * lv.sum(axis=1, keepdims=True) - lv, rtol=1e-6, atol=1e-7)


def test_a_badly_shaped_output_gradient_raises_the_public_rules_error():
    x = ek.Variable(np.ones((2, 3), np.float32))
    w = ek.constant(np.ones((3, 4), np.float32))
    with ek.GradientTape(persistent=True) as tape:
        y = ek.matmul(x, w)
    with pytest.raises(InvalidArgumentError, match="MatMul"):
        tape.gradient(y, x, output_gradients=ek.constant(np.ones((2, 5), np.float32)))


def test_an_overflowing_direct_rule_stays_quiet_under_warnings_as_errors():
    # NumPy warns "overflow encountered in multiply" in the Mul rule: a value (inf), as in TensorFlow
    x = ek.Variable(np.array([1e30, 2.0], np.float32))
    y = ek.constant(np.array([1e30, 3.0], np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with ek.GradientTape() as tape:
            out = x * y
        g = tape.gradient(out, x, output_gradients=ek.constant([1e30, 1.0]))
    np.testing.assert_array_equal(g.numpy(), [np.inf, 3.0])


def test_an_eager_sgd_step_runs_one_update_per_variable_and_one_increment_in_one_batch():
    x, y, vs = _params(np.float32)
    opt = ek.optimizers.SGD(0.1)
    with ek.GradientTape() as tape:
        loss = _mlp_loss(x, y, *vs)
    grads = tape.gradient(loss, vs)
    before = [v.numpy().copy() for v in vs]
    with _Dispatched() as seen:
        updated = opt.apply_gradients(zip(grads, vs))
    assert seen.names.count("ResourceApplyGradientDescent") == 4
    assert seen.names.count("AssignAddVariableOp") == 1 and seen.names.count("Cast") == 1
    assert seen.batches == [5]          # the updates and the increment under one np.errstate entry
    assert updated[-1] is opt.iterations and int(opt.iterations.numpy()) == 1
    for b, v, g in zip(before, vs, grads):
        np.testing.assert_array_equal(v.numpy(), np.subtract(b, np.multiply(g.numpy(), np.float32(0.1))))
    opt.apply_gradients(zip(grads, vs))
    assert int(opt.iterations.numpy()) == 2
