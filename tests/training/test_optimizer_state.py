"""Optimizer state is real state: saved with the model, read atomically, assignable, and loud about gaps."""
import threading
import warnings

import numpy as np
import pytest

import eager as ek
from tracing import function
from tracing.save import restore_checkpoint, save_checkpoint
from tracing.save.format import SavedModelError


class Net(ek.Module):
    def __init__(self, seed):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.w = ek.Variable(rng.standard_normal((3, 2)).astype(np.float32), name="w")
        self.b = ek.Variable(np.zeros(2, np.float32), name="b")


X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def train(net, opt, steps):
    for _ in range(steps):
        with ek.GradientTape() as tape:
            loss = ek.reduce_sum(ek.square(ek.matmul(ek.constant(X), net.w) + net.b - 1.0))
        opt.apply_gradients(zip(tape.gradient(loss, [net.w, net.b]), [net.w, net.b]))


@pytest.mark.parametrize("make", [lambda: ek.optimizers.Adam(0.05), lambda: ek.optimizers.SGD(0.05, momentum=0.9)])
def test_checkpoint_of_model_and_optimizer_continues_the_run_bit_for_bit(tmp_path, make):
    net, opt = Net(0), make()
    train(net, opt, 3)
    save_checkpoint({"model": net, "optimizer": opt}, str(tmp_path / "ckpt"))
    train(net, opt, 4)

    net2, opt2 = Net(1), make()
    opt2.build([net2.w, net2.b])
    restore_checkpoint({"model": net2, "optimizer": opt2}, str(tmp_path / "ckpt"))
    assert int(opt2.iterations.numpy()) == 3
    train(net2, opt2, 4)
    np.testing.assert_array_equal(net2.w.numpy(), net.w.numpy())
    np.testing.assert_array_equal(net2.b.numpy(), net.b.numpy())
    for a, b in zip(opt.variables, opt2.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_restoring_slots_into_an_unbuilt_optimizer_says_how(tmp_path):
    net, opt = Net(0), ek.optimizers.Adam(0.05)
    train(net, opt, 1)
    save_checkpoint({"model": net, "optimizer": opt}, str(tmp_path / "ckpt"))
    with pytest.raises(SavedModelError, match=r"optimizer.build\(model.trainable_variables\)"):
        restore_checkpoint({"model": Net(1), "optimizer": ek.optimizers.Adam(0.05)}, str(tmp_path / "ckpt"))


def serial_reference(make, steps, nvars):
    vs = [ek.Variable(np.zeros(3, np.float32)) for _ in range(nvars)]
    opt, g = make(), ek.constant(np.ones(3, np.float32))
    for _ in range(steps):
        opt.apply_gradients([(g, v) for v in vs])
    return vs


@pytest.mark.parametrize("nvars", [1, 3])
def test_concurrent_eager_adam_steps_equal_a_serial_run(nvars):
    # the bias correction reads the step counter inside the step's lock: every step gets its own t
    make = lambda: ek.optimizers.Adam(0.01, amsgrad=nvars == 3)   # noqa: E731
    vs = [ek.Variable(np.zeros(3, np.float32)) for _ in range(nvars)]
    opt, g = make(), ek.constant(np.ones(3, np.float32))
    threads, steps = 8, 60
    barrier = threading.Barrier(threads)

    def work():
        barrier.wait()
        for _ in range(steps):
            opt.apply_gradients([(g, v) for v in vs])
    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert int(opt.iterations.numpy()) == threads * steps
    for got, want in zip(vs, serial_reference(make, threads * steps, nvars)):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name, make, attr", [
    ("sgd", lambda: ek.optimizers.SGD(0.1), "learning_rate"),
    ("momentum", lambda: ek.optimizers.SGD(0.1, momentum=0.5), "learning_rate"),
    ("adam", lambda: ek.optimizers.Adam(0.1), "learning_rate"),
])
def test_assigning_the_learning_rate_after_a_traced_step_takes_effect_without_retrace(name, make, attr):
    v = ek.Variable([1.0, 2.0])
    opt = make()

    @function
    def step():
        opt.apply_gradients([(ek.constant([1.0, 1.0]), v)])

    step()
    moved = v.numpy().copy()
    assert not np.array_equal(moved, [1.0, 2.0])
    setattr(opt, attr, 0.0)
    step()
    if name == "momentum":      # the momentum slot still carries the first step: v moves by mu * m
        np.testing.assert_allclose(v.numpy(), moved - 0.05, rtol=1e-6)
    else:
        np.testing.assert_array_equal(v.numpy(), moved)
    assert step.experimental_get_tracing_count() == 1
    assert float(opt.learning_rate.numpy()) == 0.0


def test_assigning_beta_1_after_a_traced_step_takes_effect():
    def run(assign_between):
        v, opt = ek.Variable([1.0, 2.0]), ek.optimizers.Adam(0.1)
        step = function(lambda: opt.apply_gradients([(ek.constant([1.0, -1.0]), v)]))
        step()
        if assign_between:
            opt.beta_1 = 0.5
        step()
        return v.numpy(), step.experimental_get_tracing_count()
    (a, na), (b, nb) = run(False), run(True)
    assert na == nb == 1 and not np.array_equal(a, b)


def test_none_gradient_warns_naming_the_variable():
    a, b = ek.Variable([1.0], name="used"), ek.Variable([1.0], name="unused_bias")
    with pytest.warns(UserWarning, match=r"Gradients do not exist for variables \['unused_bias:0'\]"):
        ek.optimizers.SGD(0.5).apply_gradients([(ek.constant([2.0]), a), (None, b)])
    assert a.numpy().tolist() == [0.0] and b.numpy().tolist() == [1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no warning when every gradient is there
        ek.optimizers.SGD(0.5).apply_gradients([(ek.constant([2.0]), a)])
