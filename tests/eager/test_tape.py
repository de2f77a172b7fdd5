"""GradientTape: watching, variables, persistence, nesting, jacobians, unconnected sources."""
import numpy as np
import pytest

import eager as ek


def test_watch_constant_and_variable_access():
    x = ek.constant(3.0)
    v = ek.Variable(2.0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = x * x * v
    gx, gv = tape.gradient(y, [x, v])
    assert float(gx) == pytest.approx(12.0) and float(gv) == pytest.approx(9.0)


def test_unwatched_constant_has_no_gradient_and_zero_option():
    x = ek.constant(3.0)
    with ek.GradientTape(persistent=True) as tape:
        y = x * 2.0
    assert tape.gradient(y, x) is None
    assert float(tape.gradient(y, x, unconnected_gradients="zero")) == 0.0


def test_watch_accessed_variables_false_and_untrainable():
    v = ek.Variable(1.0)
    u = ek.Variable(1.0, trainable=False)
    with ek.GradientTape(watch_accessed_variables=False) as tape:
        y = v * 3.0
    assert tape.gradient(y, v) is None
    with ek.GradientTape() as tape:
        y = u * 3.0 + v
    assert tape.watched_variables() == (v,)
    assert tape.gradient(y, u) is None


def test_non_persistent_tape_single_use():
    x = ek.constant(1.0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.exp(x)
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="persistent"):
        tape.gradient(y, x)


def test_persistent_tape_reuse():
    x = ek.constant(2.0)
    with ek.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert float(tape.gradient(z, x)) == pytest.approx(32.0)
    assert float(tape.gradient(y, x)) == pytest.approx(4.0)


def test_nested_tapes_second_derivative():
    x = ek.constant(1.5)
    with ek.GradientTape() as outer:
        outer.watch(x)
        with ek.GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert float(dy) == pytest.approx(3 * 1.5 ** 2)
    assert float(d2y) == pytest.approx(6 * 1.5)


def test_nested_structure_of_sources_and_output_gradients():
    a, b = ek.constant([1.0, 2.0]), ek.constant(3.0)
    with ek.GradientTape() as tape:
        tape.watch([a, b])
        y = a * b
    g = tape.gradient(y, {"a": a, "b": [b]}, output_gradients=ek.constant([1.0, 10.0]))
    np.testing.assert_allclose(g["a"].numpy(), [3.0, 30.0])
    np.testing.assert_allclose(g["b"][0].numpy(), 21.0)


def test_jacobian():
    x = ek.constant([1.0, 2.0, 3.0])
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    np.testing.assert_allclose(j.numpy(), np.diag([2.0, 4.0, 6.0]))


def test_stop_gradient_and_stop_recording():
    x = ek.constant(2.0)
    with ek.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * ek.stop_gradient(x)
        with tape.stop_recording():
            z = x * x
    assert float(tape.gradient(y, x)) == pytest.approx(2.0)
    assert tape.gradient(z, x) is None


def test_integer_tensors_are_not_watched():
    x = ek.constant(2)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.warns(UserWarning, match="must be floating"):
        assert tape.gradient(y, x) is None


def test_custom_gradient():
    @ek.custom_gradient
    def log1pexp(x):
        e = ek.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return ek.log(1 + e), grad

    x = ek.constant(100.0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert float(tape.gradient(y, x)) == pytest.approx(1.0)


def test_mlp_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((5, 4))
    labels = rng.integers(0, 3, 5)
    w1 = rng.standard_normal((4, 6)) * 0.5
    w2 = rng.standard_normal((6, 3)) * 0.5

    def loss_np(w1, w2):
        h = np.tanh(xs @ w1)
        logits = h @ w2
        m = logits.max(1, keepdims=True)
        lse = np.log(np.exp(logits - m).sum(1, keepdims=True)) + m
        return float(np.mean(lse[:, 0] - logits[np.arange(5), labels]))

    v1, v2 = ek.Variable(w1), ek.Variable(w2)
    with ek.GradientTape() as tape:
        h = ek.tanh(ek.matmul(ek.constant(xs), v1))
        logits = ek.matmul(h, v2)
        onehot = ek.constant(np.eye(3)[labels])
        lse = ek.reduce_logsumexp(logits, axis=1)
        loss = ek.reduce_mean(lse - ek.reduce_sum(logits * onehot, axis=1))
    g1, g2 = tape.gradient(loss, [v1, v2])
    assert float(loss) == pytest.approx(loss_np(w1, w2))
    eps = 1e-6
    for w, g, which in ((w1, g1, 0), (w2, g2, 1)):
        num = np.zeros_like(w)
        for idx in np.ndindex(w.shape):
            wp, wm = w.copy(), w.copy()
            wp[idx] += eps
            wm[idx] -= eps
            args_p = (wp, w2) if which == 0 else (w1, wp)
            args_m = (wm, w2) if which == 0 else (w1, wm)
            num[idx] = (loss_np(*args_p) - loss_np(*args_m)) / (2 * eps)
        np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-7)
