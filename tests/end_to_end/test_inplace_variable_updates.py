"""Variable updates write into the stored array only when nothing else can see it (eager/variable_storage.py).

Each test attacks the rule from one side: something holds the old value (a
user's `numpy()`, a view, a tape's saved read, a Session fetch, an array the
user passed in) and must keep it unchanged; or an update must stay in place
when nothing holds the array (its identity stays the same across steps), eagerly, under
`@function` and in a Session, with the same bits as with in-place writes off.
Readers in other threads: test_inplace_variable_threads.py.
"""
import sys
import weakref

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager import native, variable_storage
from tracing import function


@pytest.fixture(autouse=True)
def inplace_on():
    old = variable_storage.set_inplace(True)
    yield
    variable_storage.set_inplace(old)


def buffer(v):
    """A weak reference to the variable's array: it does not count as a holder, and it dies with the array
    (an id could come back for a new array at the same address)."""
    return weakref.ref(v.stored_array())


def same(ref, v) -> bool:
    return ref() is v.stored_array()


def test_eager_updates_write_in_place_when_nothing_holds_the_array():
    v = ek.Variable(np.zeros(1000, np.float32))
    v.assign_add(np.ones(1000, np.float32))      # may copy once: the initial array came from the caller
    first = buffer(v)
    for _ in range(3):
        v.assign_add(np.ones(1000, np.float32))
        v.assign_sub(np.full(1000, 0.5, np.float32))
    assert same(first, v)
    np.testing.assert_array_equal(v.numpy(), np.full(1000, 2.5, np.float32))


def test_a_held_numpy_value_never_changes_and_forces_a_copy():
    v = ek.Variable(np.zeros(100))
    v.assign_add(np.ones(100))
    held = np.asarray(v.value())       # a read-only view of the variable's own array
    before = buffer(v)
    v.assign_add(np.ones(100))
    np.testing.assert_array_equal(held, np.ones(100))
    assert not same(before, v)
    np.testing.assert_array_equal(v.numpy(), np.full(100, 2.0))
    del held
    after = buffer(v)
    v.assign_add(np.ones(100))                    # nobody holds it any more: in place again
    assert same(after, v)


def test_a_held_view_or_value_tensor_never_changes():
    v = ek.Variable(np.arange(10.0))
    view = np.asarray(v.value())[2:5]               # the view keeps the whole array alive through `base`
    t = v.value()
    v.assign_add(np.ones(10))
    np.testing.assert_array_equal(view, [2.0, 3.0, 4.0])
    np.testing.assert_array_equal(t.numpy(), np.arange(10.0))
    v.scatter_nd_add([[1]], [5.0])
    np.testing.assert_array_equal(view, [2.0, 3.0, 4.0])
    expect = np.arange(10.0) + 1
    expect[1] += 5
    np.testing.assert_array_equal(v.numpy(), expect)


def test_an_assigned_slice_of_a_users_array_is_never_written():
    users = np.zeros(20)
    v = ek.Variable(np.zeros(5))

    @function
    def assign_slice(x):
        v.assign(x[5:10])

    source = ek.constant(users)
    assign_slice(source)                           # the variable stores a view of the tensor's memory
    assert v.stored_array().base is not None
    for _ in range(3):
        v.assign_add(np.ones(5))
        v.scatter_nd_add([[0]], [1.0])
    np.testing.assert_array_equal(users, np.zeros(20))
    np.testing.assert_array_equal(source.numpy(), np.zeros(20))
    np.testing.assert_array_equal(v.numpy(), [6.0, 3.0, 3.0, 3.0, 3.0])


def test_a_functions_captured_constant_is_never_written():
    v = ek.Variable(np.zeros(1000))
    c = ek.constant(np.full(1000, 7.0))

    @function
    def reset_and_bump():
        v.assign(c)                     # the variable now stores the plan's constant array
        v.assign_add(np.ones(1000))

    for _ in range(3):
        reset_and_bump()
        np.testing.assert_array_equal(v.numpy(), np.full(1000, 8.0))
    v.assign_add(np.ones(1000))
    reset_and_bump()
    np.testing.assert_array_equal(c.numpy(), np.full(1000, 7.0))
    np.testing.assert_array_equal(v.numpy(), np.full(1000, 8.0))


def test_a_read_only_stored_array_is_replaced_not_written():
    a = np.ones(4)
    a.flags.writeable = False
    v = ek.Variable(np.zeros(4))
    v.assign(a)
    del a
    v.assign_add(np.ones(4))
    np.testing.assert_array_equal(v.numpy(), np.full(4, 2.0))


def test_a_tapes_saved_read_is_not_overwritten():
    v = ek.Variable(np.array([1.0, 2.0, 3.0]))
    v.assign_add(np.zeros(3))
    with ek.GradientTape(persistent=True) as tape:
        y = v * v
    v.assign_add(np.full(3, 10.0))                 # the tape holds the read the product used
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(v.numpy(), [11.0, 12.0, 13.0])


def test_a_failed_update_changes_nothing():
    v = ek.Variable(np.zeros(4))
    v.assign_add(np.ones(4))
    with pytest.raises(ek.errors.InvalidArgumentError):
        v.assign_add(np.ones(3))
    with pytest.raises(ek.errors.InvalidArgumentError):
        v.scatter_nd_add([[7]], [1.0])
    np.testing.assert_array_equal(v.numpy(), np.ones(4))
    v.assign_add(np.array([1.0]))                  # broadcasts into the variable's shape: allowed, in place
    np.testing.assert_array_equal(v.numpy(), np.full(4, 2.0))


def test_the_switch_turns_in_place_writes_off():
    v = ek.Variable(np.zeros(50))
    v.assign_add(np.ones(50))
    variable_storage.set_inplace(False)
    before = buffer(v)
    v.assign_add(np.ones(50))
    assert not same(before, v)
    variable_storage.set_inplace(True)
    before = buffer(v)
    v.assign_add(np.ones(50))
    assert same(before, v)
    np.testing.assert_array_equal(v.numpy(), np.full(50, 3.0))


def _sgd_function(w, b):
    opt = ek.optimizers.SGD(0.1)

    @function
    def step(x):
        with ek.GradientTape() as tape:
            loss = ek.reduce_sum(ek.nn.relu(ek.matmul(x, w) + b) ** 2)
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss
    return step


@pytest.mark.skipif(not native.available(), reason="numba is not installed (the [native] extra)")
def test_function_step_updates_in_place_and_stops_while_the_user_holds_the_value():
    # plain SGD writes into the variable's array only through the one-pass native kernel
    rng = np.random.default_rng(0)
    w = ek.Variable(rng.standard_normal((300, 200)).astype(np.float32))
    b = ek.Variable(np.zeros(200, np.float32))
    x = ek.constant(rng.standard_normal((8, 300)).astype(np.float32))
    with native.options(enabled=True, min_bytes=0):
        step = _sgd_function(w, b)
        step(x)
        step(x)
        ids = (buffer(w), buffer(b))
        step(x)
        assert same(ids[0], w) and same(ids[1], b)
        held = np.asarray(w.value())
        kept = held.copy()
        step(x)
        np.testing.assert_array_equal(held, kept)
        assert not same(ids[0], w)
        assert not np.array_equal(w.numpy(), kept)


def test_sgd_without_the_one_pass_kernel_stores_a_fresh_array_with_the_same_bits():
    # the product and difference in two NumPy passes go into a temporary (measured faster than writing
    # the difference back into the variable's array), with the bits of in-place writes off
    rng = np.random.default_rng(1)
    init = rng.standard_normal((300, 200)).astype(np.float32)
    x = ek.constant(rng.standard_normal((8, 300)).astype(np.float32))
    results = []
    for inplace in (True, False):
        variable_storage.set_inplace(inplace)
        w, b = ek.Variable(init.copy()), ek.Variable(np.zeros(200, np.float32))
        with native.options(enabled=False):
            step = _sgd_function(w, b)
            step(x)
            before = buffer(w)
            step(x)
            assert not same(before, w)
        results.append((w.numpy().copy(), b.numpy().copy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


def test_function_releases_a_dead_read_before_the_update():
    v = ek.Variable(np.zeros(1000))
    w = ek.Variable(np.ones(1000))

    delta = ek.constant(np.ones(1000))

    @function
    def f():
        y = v + w                   # one of the two reads' registers is not reused by the sum
        v.assign_add(delta)
        return y

    f()
    f()
    before = buffer(v)
    y = f()
    assert same(before, v)
    np.testing.assert_array_equal(y.numpy(), np.full(1000, 3.0))
    np.testing.assert_array_equal(v.numpy(), np.full(1000, 3.0))


def test_session_fetch_is_a_snapshot_and_updates_stay_in_place():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(np.zeros(1000))
        read = v.read_value()
        inc = v.assign_add(np.ones(1000), read_value=False)
        init = gr.global_variables_initializer()
    sess = gr.Session(graph=g)
    sess.run(init)
    sess.run(inc)
    before = buffer(v)
    sess.run(inc)
    assert same(before, v)
    fetched = sess.run(read)
    sess.run(inc)
    np.testing.assert_array_equal(fetched, np.full(1000, 2.0))
    np.testing.assert_array_equal(sess.run(read), np.full(1000, 3.0))


def _mlp_steps(mode, inplace, steps=4):
    """Loss and variables after `steps` SGD steps of a small MLP, with in-place writes on or off."""
    variable_storage.set_inplace(inplace)
    rng = np.random.default_rng(1)
    params = [(rng.standard_normal((40, 64)) * 0.1).astype(np.float32), np.zeros(64, np.float32),
              (rng.standard_normal((64, 10)) * 0.1).astype(np.float32), np.zeros(10, np.float32)]
    xs = rng.standard_normal((16, 40)).astype(np.float32)
    ys = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 16)]

    def loss_of(vs, x, y):
        h = ek.nn.relu(ek.matmul(x, vs[0]) + vs[1])
        logits = ek.matmul(h, vs[2]) + vs[3]
        return ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))

    if mode == "session":
        g = gr.Graph()
        with g.as_default():
            vs = [ek.Variable(p) for p in params]
            loss = loss_of(vs, ek.constant(xs), ek.constant(ys))
            grads = gr.gradients(loss, vs)
            updates = [v.assign_sub(gv * np.float32(0.1)) for v, gv in zip(vs, grads)]
            init = gr.global_variables_initializer()
        sess = gr.Session(graph=g)
        sess.run(init)
        losses = [sess.run([loss] + updates)[0] for _ in range(steps)]
        return losses, sess.run(vs)
    vs = [ek.Variable(p) for p in params]
    opt = ek.optimizers.SGD(0.1)

    def step(x, y):
        with ek.GradientTape() as tape:
            loss = loss_of(vs, x, y)
        opt.apply_gradients(zip(tape.gradient(loss, vs), vs))
        return loss
    run = function(step) if mode == "function" else step
    x, y = ek.constant(xs), ek.constant(ys)
    losses = [run(x, y).numpy() for _ in range(steps)]
    return losses, [v.numpy() for v in vs]


@pytest.mark.parametrize("mode", ["eager", "function", "session"])
def test_same_bits_with_in_place_writes_on_and_off(mode):
    on_losses, on_values = _mlp_steps(mode, True)
    off_losses, off_values = _mlp_steps(mode, False)
    assert [np.asarray(a).tobytes() for a in on_losses] == [np.asarray(a).tobytes() for a in off_losses]
    for a, b in zip(on_values, off_values):
        assert a.tobytes() == b.tobytes()


def test_the_environment_switch_turns_it_off_for_the_process():
    import os
    import subprocess
    code = ("import numpy as np, eager as ek\n"
            "v = ek.Variable(np.zeros(100)); v.assign_add(np.ones(100)); a = id(v.stored_array())\n"
            "v.assign_add(np.ones(100)); print(id(v.stored_array()) == a)\n")
    env = {**os.environ, "GRAPHJIT_INPLACE_VARIABLES": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_a_bad_switch_value_is_refused(monkeypatch):
    monkeypatch.setenv("GRAPHJIT_INPLACE_VARIABLES", "yes")
    with pytest.raises(ValueError, match="GRAPHJIT_INPLACE_VARIABLES must be 0 or 1"):
        variable_storage.set_inplace(None)      # back to the environment's setting, read now
    assert variable_storage.inplace_enabled()   # the setting before stays


# ------------------------------------------------------------------ Keras optimizers' fused kernels
OPTIMIZERS = {
    "momentum": lambda: ek.optimizers.SGD(0.1, momentum=0.9),
    "nesterov": lambda: ek.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
    "sgd_decay": lambda: ek.optimizers.SGD(0.1, weight_decay=0.01),
    "adam": lambda: ek.optimizers.Adam(0.01),
    "amsgrad": lambda: ek.optimizers.Adam(0.01, amsgrad=True),
    "adamw": lambda: ek.optimizers.AdamW(0.01),
    "rmsprop": lambda: ek.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: ek.optimizers.Adagrad(0.1),
    "adadelta": lambda: ek.optimizers.Adadelta(1.0),
    "nadam": lambda: ek.optimizers.Nadam(0.01),
}


def _optimizer_steps(make, inplace, traced, steps=3):
    variable_storage.set_inplace(inplace)
    rng = np.random.default_rng(4)
    w = ek.Variable(rng.standard_normal((30, 20)).astype(np.float32))
    x = ek.constant(rng.standard_normal((5, 30)).astype(np.float32))
    opt = make()

    def step():
        with ek.GradientTape() as tape:
            loss = ek.reduce_sum(ek.tanh(ek.matmul(x, w)) ** 2)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
    run = function(step) if traced else step
    states = []
    for _ in range(steps):
        run()
        states.append([v.numpy().copy() for v in [w] + list(opt.variables)])
    return w, opt, run, states


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizer_steps_write_in_place_with_the_same_bits(name, traced):
    make = OPTIMIZERS[name]
    _, _, _, want = _optimizer_steps(make, False, traced)
    w, opt, run, got = _optimizer_steps(make, True, traced)
    for a, b in zip(got, want):
        assert [x.tobytes() for x in a] == [x.tobytes() for x in b]
    arrays = [v for v in [w] + list(opt.variables) if v.shape.rank]     # the weight and its slots
    refs = [buffer(v) for v in arrays]
    run()
    assert all(same(r, v) for r, v in zip(refs, arrays))
    held = [np.asarray(v.value()) for v in arrays]       # a user holding every value: all copied
    kept = [h.copy() for h in held]
    run()
    assert all(h.tobytes() == k.tobytes() for h, k in zip(held, kept))
    assert not any(same(r, v) for r, v in zip(refs, arrays))
