"""Backprop's pair rule: an eager MaxPool over a Relu is differentiated in one ReluMaxPoolGrad pass.

With no tape recording, the backward pass of `max_pool(relu(z))` runs
ReluMaxPoolGrad on relu's output instead of MaxPoolGrad and then ReluGrad
(`extra["eager_grad_pair"]`, eager/backprop.py); an outer recording tape
turns direct rules off, so the same gradient taken inside one is the two
public rules' result.  Both must agree bit for bit (NaN, signed zeros,
ties, both max-pool gradient kernels), sums into z must keep their order,
and the pair must not apply where relu's output has another reader.
"""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
from eager import native
from tests.eager.test_direct_gradient_rules import assert_same_bits, dispatched_by_gradient, taped_gradients


@pytest.fixture(autouse=True, params=["scan", "maps"])
def producer_lookup(request, monkeypatch):
    """Every test both ways backprop finds a pair's producer: a scan of a short tape, the maps of a long one."""
    from eager import backprop
    if request.param == "maps":
        monkeypatch.setattr(backprop, "SCAN_LIMIT", 0)
    return request.param


def _z(shape, seed=0):
    z = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    z.reshape(-1)[:12] = [np.nan, -0.0, 0.0, -1.0, np.inf, -np.inf, 0.0, 0.0, 2.0, 2.0, -0.0, -0.0]
    z[:, :2, :2, :] = 0.0                    # whole windows of relu's zeros: ties
    return z


def _loss(z, w, extra_use=False):
    h = ek.nn.relu(z * w)
    p = ek.nn.max_pool2d(h, 2, 2, "VALID")
    loss = ek.reduce_sum(p * p) + ek.reduce_sum(z * w * 0.5)      # a second path to w
    return loss + ek.reduce_sum(h) if extra_use else loss


@pytest.mark.parametrize("native_kernel", [False, True])
def test_pair_rule_gives_the_two_rules_bits(native_kernel):
    if native_kernel and not native.available():
        pytest.skip("numba not installed")
    z = ek.constant(_z((2, 6, 6, 3)))
    w = ek.Variable(np.float32(1.5))
    with native.options(enabled=native_kernel, min_bytes=0):
        direct, public = (taped_gradients(public, lambda: _loss(z, w), [w]) for public in (False, True))
        assert_same_bits(direct, public)
        names = dispatched_by_gradient(lambda: _loss(z, w), [w])
    assert "MaxPoolGrad" not in names and "ReluGrad" not in names, names


def test_gradient_of_z_keeps_its_sum_order_and_nan_bits():
    # z's gradient sums three terms (the pair's, z * w * 0.5's and z * 3's): the pair's is added where
    # Relu's rule would add it, so the sum keeps its order and bits
    z = ek.Variable(_z((2, 4, 4, 2), seed=1))

    def loss():
        return _loss(z, ek.constant(np.float32(1.0))) + ek.reduce_sum(z * 3.0)
    direct, public = (taped_gradients(public, loss, [z]) for public in (False, True))
    assert np.array_equal(direct[0].numpy().view(np.uint32), public[0].numpy().view(np.uint32))
    assert "MaxPoolGrad" not in dispatched_by_gradient(loss, [z])


def test_no_pair_where_relus_output_has_another_reader():
    z = ek.constant(_z((2, 6, 6, 3)))
    w = ek.Variable(np.float32(1.5))
    direct, public = (taped_gradients(public, lambda: _loss(z, w, extra_use=True), [w]) for public in (False, True))
    assert_same_bits(direct, public)
    assert "MaxPoolGrad" in dispatched_by_gradient(lambda: _loss(z, w, extra_use=True), [w])


def test_no_pair_when_relus_output_is_a_target_or_a_source():
    z = ek.constant(_z((2, 4, 4, 2)))
    with ek.GradientTape(persistent=True) as tape:
        tape.watch(z)
        h = ek.nn.relu(z)
        loss = ek.reduce_sum(ek.nn.max_pool2d(h, 2, 2, "VALID"))
    dz, dh = tape.gradient(loss, [z, h])
    np.testing.assert_array_equal(dh.numpy(), tape.gradient(loss, h).numpy())
    expected = dh.numpy() * (h.numpy() > 0)
    np.testing.assert_array_equal(dz.numpy(), expected)


@pytest.mark.parametrize("shape", [(6, 5), (256, 1100)])            # the second over 1 MiB: pooled memory
@pytest.mark.parametrize("axis,keepdims", [(None, False), ((1,), False), ((0,), True)])
def test_mean_of_squares_pair_gives_the_two_rules_bits_without_reduce_grad(shape, axis, keepdims, monkeypatch):
    # Mean over Square: Square's rule takes dy / n unbroadcast, so ReduceGrad never writes x-sized memory
    from eager.ops.reduction import REDUCE_GRAD
    zv = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    zv.reshape(-1)[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-30]
    z = ek.Variable(zv)
    w = ek.Variable(np.float32(1.25))

    def loss():
        return ek.reduce_sum(ek.reduce_mean(ek.square(ek.nn.relu(z * w)), axis=axis, keepdims=keepdims) * 3.0)
    direct, public = (taped_gradients(public, loss, [z, w]) for public in (False, True))
    for d, p in zip(direct, public):
        assert np.array_equal(d.numpy().view(np.uint32), p.numpy().view(np.uint32))
    calls = []
    kernel = REDUCE_GRAD.kernel
    monkeypatch.setattr(REDUCE_GRAD, "kernel", lambda *a, **k: calls.append(1) or kernel(*a, **k))
    taped_gradients(False, loss, [z, w])
    assert calls == [1]          # the outer reduce_sum's; the Mean's went through the pair


def _xent_case(seed=5, shape=(6, 5)):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal(shape).astype(np.float32) * 4
    logits.reshape(-1)[:3] = [-0.0, 1e30, -1e30]
    labels = np.eye(shape[-1], dtype=np.float32)[rng.integers(0, shape[-1], shape[:-1])]
    labels.reshape(-1)[:2] = [0.25, 0.75]            # labels that do not sum to one: the exact gradient
    return ek.Variable(logits), ek.constant(labels), ek.Variable(np.float32(0.75))


def _count_reduce_grad(monkeypatch):
    from eager.ops.reduction import REDUCE_GRAD
    calls = []
    kernel = REDUCE_GRAD.kernel
    monkeypatch.setattr(REDUCE_GRAD, "kernel", lambda *a, **k: calls.append(1) or kernel(*a, **k))
    return calls


@pytest.mark.parametrize("axis,keepdims", [(None, False), ((0,), False), (None, True)])
@pytest.mark.parametrize("shape", [(6, 5), (5,)])
def test_mean_of_cross_entropies_pair_gives_the_two_rules_bits(axis, keepdims, shape, monkeypatch):
    logits, labels, w = _xent_case(shape=shape)

    def loss():
        xe = ek.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits * w)
        return ek.reduce_mean(xe, axis=axis if len(shape) > 1 or axis is None else None, keepdims=keepdims)
    direct, public = (taped_gradients(public, loss, [logits, w]) for public in (False, True))
    for d, p in zip(direct, public, strict=True):
        assert d.shape == p.shape and np.array_equal(d.numpy().view(np.uint32), p.numpy().view(np.uint32))
    calls = _count_reduce_grad(monkeypatch)
    taped_gradients(False, loss, [logits, w])
    assert calls == []           # the Mean went through the pair: no loss-sized gradient


@pytest.mark.parametrize("case", ["partial_mean", "backprop_read", "labels_wanted", "loss_read"])
def test_no_cross_entropy_pair_where_the_two_rules_are_needed(case, monkeypatch):
    # a mean over some loss values only, a reader of the `backprop` output, a gradient wanted for the
    # labels, a second reader of the loss: the two rules run (ReduceGrad among them), with their bits
    logits, labels, w = _xent_case(shape=(3, 4, 5))
    soft = ek.Variable(labels.numpy())

    def loss():
        from eager.ops.nn_softmax import XENT
        lab = soft if case == "labels_wanted" else labels
        if case == "backprop_read":
            xe, bp = ek.dispatch.execute(XENT, (labels, logits.value()), {"axis": 2})
            return ek.reduce_mean(xe) + ek.reduce_sum(bp * w)
        xe = ek.nn.softmax_cross_entropy_with_logits(labels=lab, logits=logits * w)
        m = ek.reduce_mean(xe, axis=1 if case == "partial_mean" else None)
        return ek.reduce_sum(m) + (ek.reduce_sum(xe) if case == "loss_read" else 0.0)
    sources = [logits, w, soft]
    direct, public = (taped_gradients(public, loss, sources) for public in (False, True))
    for d, p in zip(direct, public, strict=True):
        assert (d is None) == (p is None)
        if d is not None:
            assert np.array_equal(d.numpy().view(np.uint32), p.numpy().view(np.uint32))
    calls = _count_reduce_grad(monkeypatch)
    taped_gradients(False, loss, sources)
    assert len(calls) >= 1
