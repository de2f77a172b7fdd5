"""Variable, Module, optimizers, and eager cond/while_loop/switch_case."""
import collections

import numpy as np
import pytest

import eager as ek
from eager.errors import InvalidArgumentError


def test_variable_assign_and_arithmetic():
    v = ek.Variable([1.0, 2.0], name="v")
    assert v.name == "v:0" and v.dtype is ek.float32 and v.shape == (2,)
    v.assign([3.0, 4.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub(ek.constant([0.5, 0.5]))
    np.testing.assert_allclose(v.numpy(), [3.5, 4.5])
    np.testing.assert_allclose((v * 2).numpy(), [7.0, 9.0])
    np.testing.assert_allclose((1 + v).numpy(), [4.5, 5.5])
    np.testing.assert_allclose(ek.matmul(ek.Variable([[1.0, 2.0]]), ek.ones((2, 1))).numpy(), [[3.0]])


def test_read_is_a_snapshot():
    v = ek.Variable(1.0)
    r = v.read_value()
    v.assign(5.0)
    assert float(r) == 1.0 and float(v) == 5.0


def test_failed_assign_leaves_variable_unchanged():
    v = ek.Variable([1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match=r"shape \[3\]"):
        v.assign([1.0, 2.0, 3.0])
    with pytest.raises(InvalidArgumentError, match="int32"):
        v.assign(ek.constant([1, 2]))
    with pytest.raises(InvalidArgumentError):
        v.assign_add([1.0, 2.0, 3.0])
    np.testing.assert_allclose(v.numpy(), [1.0, 2.0])


def test_module_tracks_variables_and_scopes_names():
    class Dense(ek.Module):
        def __init__(self, n_in, n_out, name=None):
            super().__init__(name=name)
            with self.name_scope:
                self.w = ek.Variable(ek.ones((n_in, n_out)), name="w")
                self.b = ek.Variable(ek.zeros((n_out,)), name="b", trainable=False)

        def __call__(self, x):
            return ek.matmul(x, self.w) + self.b

    class MLP(ek.Module):
        def __init__(self):
            super().__init__()
            self.layers = [Dense(2, 3, name="l1"), Dense(3, 1, name="l2")]

    m = MLP()
    assert len(m.variables) == 4 and len(m.trainable_variables) == 2
    assert len(m.submodules) == 2
    assert {v.name for v in m.variables} == {"l1/w:0", "l1/b:0", "l2/w:0", "l2/b:0"}
    assert m.name == "mlp"


def test_sgd_and_momentum_and_adam_converge():
    for opt in (ek.optimizers.SGD(0.1), ek.optimizers.SGD(0.05, momentum=0.9), ek.optimizers.Adam(0.1)):
        v = ek.Variable([3.0, -2.0])
        for _ in range(200):
            with ek.GradientTape() as tape:
                loss = ek.reduce_sum(ek.square(v - ek.constant([1.0, 1.0])))
            opt.apply_gradients(zip(tape.gradient(loss, [v]), [v]))
        np.testing.assert_allclose(v.numpy(), [1.0, 1.0], atol=1e-2)


def test_sgd_matches_hand_computation():
    v = ek.Variable([1.0])
    ek.optimizers.SGD(0.5).apply_gradients([(ek.constant([2.0]), v)])
    assert v.numpy().tolist() == [0.0]
    with pytest.raises(ValueError, match="no gradients"):
        ek.optimizers.SGD(0.5).apply_gradients([(None, v)])


def test_eager_cond_and_switch_case():
    x = ek.constant(3.0)
    assert float(ek.cond(x > 2.0, lambda: x * 2, lambda: x)) == 6.0
    assert float(ek.switch_case(ek.constant(1), [lambda: ek.constant(10), lambda: ek.constant(20)])) == 20
    assert float(ek.switch_case(7, [lambda: ek.constant(10), lambda: ek.constant(20)])) == 20
    with pytest.raises(InvalidArgumentError, match="bool scalar"):
        ek.cond(ek.constant([True, False]), lambda: 1, lambda: 2)


def test_eager_while_loop_structures_and_max_iterations():
    i, s = ek.while_loop(lambda i, s: i < 10, lambda i, s: (i + 1, s + i), [ek.constant(0), ek.constant(0)])
    assert int(i) == 10 and int(s) == 45
    P = collections.namedtuple("P", "a b")
    out = ek.while_loop(lambda p: p.a < 3, lambda p: P(p.a + 1, p.b * 2), [P(ek.constant(0), ek.constant(1.0))])
    assert int(out[0].a) == 3 and float(out[0].b) == 8.0
    r = ek.while_loop(lambda i: i < 100, lambda i: i + 1, [ek.constant(0)], maximum_iterations=5)
    assert int(r[0]) == 5


def test_eager_while_loop_errors_name_the_variable():
    with pytest.raises(TypeError, match=r"loop_vars\[1\].*int32.*float32"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, ek.cast(s, "float32")),
                      [ek.constant(0), ek.constant(0)])
    with pytest.raises(ValueError, match="same structure"):
        ek.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1,), [ek.constant(0), ek.constant(0)])


def test_gradient_through_eager_control_flow():
    x = ek.constant(2.0)
    with ek.GradientTape() as tape:
        tape.watch(x)
        y = ek.cond(x > 0.0, lambda: x * x, lambda: -x)
        (z,) = ek.while_loop(lambda v: v < 100.0, lambda v: v * x, [y])
    # y = 4, loop multiplies by x until >= 100: 4*2^5 = 128 = x^7
    assert float(z) == 128.0
    assert float(tape.gradient(z, x)) == pytest.approx(7 * 2.0 ** 6)


def test_module_scopes_do_not_double_when_nested():
    class Inner(ek.Module):
        def __init__(self, name=None):
            super().__init__(name=name)
            with self.name_scope:
                self.w = ek.Variable(1.0, name="w")

    class Outer(ek.Module):
        def __init__(self):
            super().__init__(name="outer")
            with self.name_scope:
                self.inner = Inner(name="hidden")
                self.b = ek.Variable(0.0, name="b")

    m = Outer()
    assert {v.name for v in m.variables} == {"outer/hidden/w:0", "outer/b:0"}


def test_variable_numpy_is_a_copy_as_in_tensorflow():
    # a port that edits `v.numpy()` before assigning it back must not change the variable meanwhile
    v = ek.Variable(np.arange(4.0, dtype=np.float32))
    w = v.numpy()
    w[w < 2] = 0
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0, 3.0])
    a = np.asarray(v)
    a += 10
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.0, 2.0, 3.0])
    v.assign(w)
    np.testing.assert_array_equal(v.numpy(), [0.0, 0.0, 2.0, 3.0])
    s = ek.Variable(np.float32(2.5))
    assert s.numpy() == np.float32(2.5) and np.asarray(s).dtype == np.float32
