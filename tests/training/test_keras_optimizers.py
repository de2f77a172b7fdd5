"""Keras 3 optimizers and schedules against a NumPy transcription of Keras's formulas (keras_reference.py)."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.keras import optimizers
from tests.training.keras_reference import Reference, schedule_value
from tracing import function

CASES = {
    "sgd": (optimizers.SGD, {}),
    "sgd-momentum": (optimizers.SGD, {"momentum": 0.9}),
    "sgd-nesterov": (optimizers.SGD, {"momentum": 0.8, "nesterov": True}),
    "sgd-decay": (optimizers.SGD, {"weight_decay": 0.1}),
    "adam": (optimizers.Adam, {}),
    "adam-amsgrad": (optimizers.Adam, {"amsgrad": True, "beta_1": 0.8}),
    "adamw": (optimizers.AdamW, {}),
    "adamw-amsgrad": (optimizers.AdamW, {"weight_decay": 0.05, "amsgrad": True}),
    "rmsprop": (optimizers.RMSprop, {}),
    "rmsprop-centered-momentum": (optimizers.RMSprop, {"centered": True, "momentum": 0.5, "rho": 0.8}),
    "adagrad": (optimizers.Adagrad, {}),
    "adadelta": (optimizers.Adadelta, {"rho": 0.9}),
    "nadam": (optimizers.Nadam, {}),
    "nadam-decay": (optimizers.Nadam, {"weight_decay": 0.01}),
}
STEPS = 6


def data(dtype):
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((3, 4)).astype(dtype)
    grads = [rng.standard_normal((3, 4)).astype(dtype) for _ in range(STEPS)]
    return w0, grads


def reference(case, dtype):
    cls, cfg = CASES[case]
    ref = Reference(cls.__name__.lower(), lr=0.05, **cfg)
    w0, grads = data(dtype)
    w = w0
    for g in grads:
        w = ref.step(w, g)
    return w


def run(case, mode, dtype):
    cls, cfg = CASES[case]
    w0, grads = data(dtype)
    v = ek.Variable(w0)
    opt = cls(learning_rate=0.05, **cfg)
    if mode == "eager":
        for g in grads:
            opt.apply_gradients([(ek.constant(g), v)])
    elif mode == "function":
        step = function(lambda g: opt.apply_gradients([(g, v)]))
        for g in grads:
            step(ek.constant(g))
    else:
        graph = gr.Graph()
        with graph.as_default():
            x = gr.placeholder(ek.as_dtype(dtype), (3, 4))
            train = opt.apply_gradients([(x, v)])
        with gr.Session(graph=graph) as sess:
            for g in grads:
                sess.run(train, {x: g})
    assert int(opt.iterations.numpy()) == STEPS
    return v.numpy()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("mode", ["eager", "function", "session"])
def test_each_step_is_keras_rule_bit_for_bit(case, mode):
    np.testing.assert_array_equal(run(case, mode, np.float32), reference(case, np.float32))


@pytest.mark.parametrize("case", ["adam", "rmsprop-centered-momentum", "nadam", "adadelta"])
def test_float64_variables(case):
    np.testing.assert_array_equal(run(case, "eager", np.float64), reference(case, np.float64))


def test_a_step_over_several_variables_advances_shared_state_once():
    # Nadam's running product and the step counter advance once per step, not once per variable
    a, b = ek.Variable(np.ones(3, np.float32)), ek.Variable(np.full(2, 2.0, np.float32))
    opt = optimizers.Nadam(0.1)
    ref_a, ref_b = Reference("nadam", 0.1), Reference("nadam", 0.1)
    wa, wb = a.numpy(), b.numpy()
    for k in range(3):
        ga, gb = np.full(3, k + 1.0, np.float32), np.full(2, -1.0, np.float32)
        opt.apply_gradients([(ek.constant(ga), a), (ek.constant(gb), b)])
        wa, wb = ref_a.step(wa, ga), ref_b.step(wb, gb)
    np.testing.assert_array_equal(a.numpy(), wa)
    np.testing.assert_array_equal(b.numpy(), wb)
    assert int(opt.iterations.numpy()) == 3


def test_variables_lists_iterations_hyperparameters_and_slots():
    opt = optimizers.Adam(0.01, amsgrad=True)
    assert opt.iterations.dtype == ek.int64 and int(opt.iterations.numpy()) == 0
    assert [v.name for v in opt.variables] == ["Adam/iteration:0", "Adam/beta_1:0", "Adam/beta_2:0",
                                               "Adam/epsilon:0", "Adam/learning_rate:0"]
    w = ek.Variable(np.zeros(3, np.float32))
    opt.build([w])
    names = [v.name for v in opt.variables]
    assert names[-3:] == ["Adam/m:0", "Adam/v:0", "Adam/vhat:0"]


def test_hyperparameters_assigned_between_traced_steps_need_no_retrace():
    for cls, attr, value in [(optimizers.RMSprop, "rho", 0.5), (optimizers.SGD, "learning_rate", 0.0),
                             (optimizers.Adagrad, "epsilon", 1.0), (optimizers.AdamW, "weight_decay", 0.5)]:
        def go(assign):
            v = ek.Variable(np.ones(3, np.float32))
            opt = cls(learning_rate=0.1)
            step = function(lambda: opt.apply_gradients([(ek.constant([1.0, 2.0, 3.0]), v)]))
            step()
            if assign:
                setattr(opt, attr, value)
            step()
            assert step.experimental_get_tracing_count() == 1
            return v.numpy()
        assert not np.array_equal(go(False), go(True)), (cls, attr)


def test_a_schedule_drives_the_learning_rate_and_cannot_be_assigned_a_float():
    sched = optimizers.schedules.ExponentialDecay(0.1, decay_steps=2, decay_rate=0.5)
    opt = optimizers.SGD(sched)
    v = ek.Variable(np.zeros(2, np.float32))
    step = function(lambda: opt.apply_gradients([(ek.constant([1.0, 1.0]), v)]))
    w = np.zeros(2, np.float32)
    for k in range(4):
        step()
        w = w - np.float32(1.0) * schedule_value("ExponentialDecay", k, initial_learning_rate=0.1, decay_steps=2,
                                                 decay_rate=0.5)
    np.testing.assert_array_equal(v.numpy(), w)
    assert step.experimental_get_tracing_count() == 1
    with pytest.raises(TypeError, match="not settable"):
        opt.learning_rate = 0.01


def test_clipping_options_match_keras():
    g = np.array([3.0, 4.0], np.float32)                      # norm 5
    for kwargs, want in [({"clipnorm": 1.0}, g / np.float32(5)), ({"clipvalue": 3.5}, np.minimum(g, 3.5)),
                         ({"global_clipnorm": 2.5}, g * np.float32(2.5) * np.float32(1 / 5.0))]:
        v = ek.Variable(np.zeros(2, np.float32))
        optimizers.SGD(1.0, **kwargs).apply_gradients([(ek.constant(g), v)])
        np.testing.assert_allclose(-v.numpy(), want, rtol=1e-6)
    with pytest.raises(ValueError, match="Only one of"):
        optimizers.SGD(clipnorm=1.0, global_clipnorm=1.0)
    opt = optimizers.SGD(1.0, global_clipnorm=1.0)
    opt.clipnorm = 4.9                                         # set afterwards: clipnorm takes precedence
    v = ek.Variable(np.zeros(2, np.float32))
    opt.apply_gradients([(ek.constant(g), v)])
    np.testing.assert_allclose(-v.numpy(), g * np.float32(4.9 / 5), rtol=1e-6)


def test_apply_uses_the_built_variables():
    a, b = ek.Variable([1.0]), ek.Variable([2.0])
    opt = optimizers.SGD(0.5)
    opt.build([a, b])
    opt.apply([ek.constant([2.0]), ek.constant([2.0])])
    assert a.numpy().tolist() == [0.0] and b.numpy().tolist() == [1.0]
    with pytest.raises(ValueError, match="2 variables"):
        opt.apply([ek.constant([1.0])])


def test_exclude_from_weight_decay():
    keep, decayed = ek.Variable(np.ones(2, np.float32), name="bias"), ek.Variable(np.ones(2, np.float32), name="k")
    opt = optimizers.AdamW(0.1, weight_decay=0.5)
    opt.exclude_from_weight_decay(var_names=["bias"])
    zero = ek.constant(np.zeros(2, np.float32))
    opt.apply_gradients([(zero, keep), (zero, decayed)])
    np.testing.assert_array_equal(keep.numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(decayed.numpy(), np.float32(1) - np.float32(1) * np.float32(0.5) * np.float32(0.1))


def test_get_by_name_config_and_instance():
    assert isinstance(optimizers.get("adam"), optimizers.Adam)
    assert isinstance(optimizers.get("RMSprop"), optimizers.RMSprop)
    opt = optimizers.SGD(0.3, momentum=0.5)
    assert optimizers.get(opt) is opt
    again = optimizers.get(optimizers.serialize(opt))
    assert isinstance(again, optimizers.SGD) and float(again.momentum.numpy()) == 0.5
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        optimizers.get("os.system")
    assert ek.optimizers.Adam is optimizers.Adam      # the old name is the same module
    scheduled = optimizers.Adam(optimizers.schedules.CosineDecay(0.1, 10))
    back = optimizers.get(optimizers.serialize(scheduled))
    assert isinstance(back.learning_rate, optimizers.schedules.CosineDecay)
    assert back.learning_rate.get_config() == scheduled.learning_rate.get_config()


SCHEDULES = [
    ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=3, decay_rate=0.7)),
    ("ExponentialDecay", dict(initial_learning_rate=0.1, decay_steps=3, decay_rate=0.7, staircase=True)),
    ("PiecewiseConstantDecay", dict(boundaries=[2, 5], values=[1.0, 0.5, 0.1])),
    ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=4, power=2.0)),
    ("PolynomialDecay", dict(initial_learning_rate=0.1, decay_steps=4, cycle=True)),
    ("InverseTimeDecay", dict(initial_learning_rate=0.1, decay_steps=2, decay_rate=0.5, staircase=True)),
    ("CosineDecay", dict(initial_learning_rate=0.1, decay_steps=5, alpha=0.1)),
    ("CosineDecay", dict(initial_learning_rate=0.0, decay_steps=5, warmup_target=0.2, warmup_steps=3)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=3)),
    ("CosineDecayRestarts", dict(initial_learning_rate=0.1, first_decay_steps=2, t_mul=1.0, m_mul=0.5, alpha=0.1)),
]


@pytest.mark.parametrize("name, cfg", SCHEDULES)
def test_schedules_match_keras_eagerly_and_in_graphs(name, cfg):
    sched = getattr(optimizers.schedules, name)(**cfg)
    traced = function(lambda s: sched(s))
    for step in range(12):
        want = schedule_value(name, step, **cfg)
        eager_value = sched(ek.constant(step, "int64")).numpy()
        assert eager_value.dtype == np.float32
        np.testing.assert_allclose(eager_value, want, rtol=2e-6, atol=1e-9)
        np.testing.assert_array_equal(traced(ek.constant(step, "int64")).numpy(), eager_value)
    assert traced.experimental_get_tracing_count() == 1
    again = optimizers.schedules.deserialize(optimizers.schedules.serialize(sched))
    np.testing.assert_array_equal(again(ek.constant(7, "int64")).numpy(), sched(ek.constant(7, "int64")).numpy())
