"""Variable updates are atomic per variable (TensorFlow: 8 threads x 1,000 `assign_add(1)` give 8,000).

Each test runs 8 threads x 1,000 updates with a tiny thread switch interval,
so that an unlocked read-modify-write loses updates on every run.
"""
import sys
import threading

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import function

THREADS, STEPS = 8, 1000


@pytest.fixture(autouse=True)
def fast_thread_switching():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)


def hammer(body, threads=THREADS, steps=STEPS):
    errors = []

    def work():
        try:
            for _ in range(steps):
                body()
        except BaseException as e:      # pragma: no cover - surfaced below
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_eager_assign_add_from_8_threads():
    v = ek.Variable(0)
    hammer(lambda: v.assign_add(1))
    assert int(v.numpy()) == THREADS * STEPS


def test_eager_assign_sub_float_from_8_threads():
    v = ek.Variable(np.zeros(3, np.float32))
    hammer(lambda: v.assign_sub([1.0, 2.0, 0.5]))
    np.testing.assert_array_equal(v.numpy(), -np.array([1.0, 2.0, 0.5], np.float32) * THREADS * STEPS)


def test_function_assign_add_from_8_threads():
    v = ek.Variable(0)

    @function
    def inc():
        v.assign_add(1)

    inc()                                # trace once, outside the threads
    v.assign(0)
    hammer(inc)
    assert int(v.numpy()) == THREADS * STEPS
    assert inc.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("inter_op", [1, 2])
def test_session_assign_add_from_8_threads(inter_op):
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(0)
        inc = v.assign_add(1)
        init = gr.global_variables_initializer()
    sess = gr.Session(graph=g, config=gr.SessionConfig(inter_op_parallelism_threads=inter_op))
    sess.run(init)
    hammer(lambda: sess.run(inc))
    assert int(sess.run(v)) == THREADS * STEPS


def test_sgd_updates_from_8_threads_lose_nothing():
    # eagerly plain SGD runs the fused ResourceApplyGradientDescent kernel
    v = ek.Variable(np.zeros(4, np.float32))
    opt = ek.optimizers.SGD(1.0)
    g = ek.constant(np.ones(4, np.float32))
    hammer(lambda: opt.apply_gradients([(g, v)]))
    np.testing.assert_array_equal(v.numpy(), np.full(4, -THREADS * STEPS, np.float32))
    assert int(opt.iterations.numpy()) == THREADS * STEPS


# -- fused optimizer updates: a variable and its slots change together, atomically --------------------------
def sequential_reference(make_opt, steps):
    v = ek.Variable(np.zeros(3, np.float32))
    opt = make_opt()
    g = ek.constant(np.ones(3, np.float32))
    for _ in range(steps):
        opt.apply_gradients([(g, v)])
    return v, opt


OPTIMIZERS = {
    "momentum": lambda: ek.optimizers.SGD(0.01, momentum=0.9),
    "nesterov": lambda: ek.optimizers.SGD(0.01, momentum=0.9, nesterov=True),
    "adam": lambda: ek.optimizers.Adam(0.01),
}


def slots(opt, v):
    return [s.numpy() for (var, s) in opt._slots.values() if var is v]


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("mode", ["eager", "function", "session"])
def test_optimizer_steps_from_8_threads_lose_nothing(name, mode):
    steps = 250
    make = OPTIMIZERS[name]
    v = ek.Variable(np.zeros(3, np.float32))
    opt = make()
    g = ek.constant(np.ones(3, np.float32))
    if mode == "eager":
        step = lambda: opt.apply_gradients([(g, v)])   # noqa: E731
    elif mode == "function":
        step = function(lambda: opt.apply_gradients([(g, v)]))
    else:
        graph = gr.Graph()
        with graph.as_default():
            train = opt.apply_gradients([(g, v)])
        sess = gr.Session(graph=graph)
        step = lambda: sess.run(train)                 # noqa: E731
    hammer(step, steps=steps)
    ref_v, ref_opt = sequential_reference(make, THREADS * steps)
    assert int(opt.iterations.numpy()) == THREADS * steps
    # the slots follow a recurrence that depends only on how many updates ran: lost updates show here
    for got, want in zip(slots(opt, v), slots(ref_opt, ref_v)):
        np.testing.assert_array_equal(got, want)
    # Adam's step size reads the step counter inside the fused kernel: every step has its own t
    np.testing.assert_array_equal(v.numpy(), ref_v.numpy())


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_fused_updates_match_the_unfused_formulas(name):
    v, opt = sequential_reference(OPTIMIZERS[name], 3)
    w, m, s, lr = np.zeros(3, np.float32), np.zeros(3, np.float32), np.zeros(3, np.float32), np.float32(0.01)
    g = np.ones(3, np.float32)
    for t in range(1, 4):
        if name == "adam":
            b1, b2, one = np.float32(0.9), np.float32(0.999), np.float32(1)
            m = m + (g - m) * np.float32(1 - 0.9)            # Keras 3's form of the moment updates
            s = s + (np.square(g) - s) * np.float32(1 - 0.999)
            alpha = np.sqrt(one - b2 ** np.float32(t)) * lr / (one - b1 ** np.float32(t))
            w = w - m * alpha / (np.sqrt(s) + np.float32(1e-7))
        else:
            mu = np.float32(0.9)
            m = m * mu - g * lr
            w = w + (m * mu - g * lr if name == "nesterov" else m)
    np.testing.assert_array_equal(v.numpy(), w)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_loop_inside_a_staged_while_sees_each_update(name):
    # the fused op writes the variable the loss reads: the body must not hoist that read out of the loop
    x = ek.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))

    def run(loop):
        v = ek.Variable(np.full(3, 0.5, np.float32))
        opt = OPTIMIZERS[name]()

        def step():
            with ek.GradientTape() as tape:
                loss = ek.reduce_sum(ek.square(ek.matmul(x, ek.reshape(v, (3, 1))) - 1.0))
            opt.apply_gradients([(tape.gradient(loss, v), v)])
        loop(step)
        return v.numpy()

    def eager_loop(step):
        for _ in range(5):
            step()

    def staged_loop(step):
        @function
        def train(n):
            i = ek.constant(0)
            while i < n:
                step()
                i += 1
        train(ek.constant(5))

    np.testing.assert_allclose(run(staged_loop), run(eager_loop), rtol=1e-6)


def test_fused_update_errors_name_op_and_variable():
    v = ek.Variable(np.zeros(3, np.float32), name="w")
    with pytest.raises(ek.errors.InvalidArgumentError, match=r"ResourceApplyKerasMomentum: grad of shape \[2\] "
                                                             r"does not match variable w:0 of shape \[3\]"):
        ek.optimizers.SGD(0.1, momentum=0.9).apply_gradients([(ek.ones((2,)), v)])
    with pytest.raises(ek.errors.InvalidArgumentError, match="ResourceApplyAdam: grad has dtype float64, but "
                                                             "variable w:0 has dtype float32"):
        ek.optimizers.Adam().apply_gradients([(ek.constant(np.ones(3)), v)])
    np.testing.assert_array_equal(v.numpy(), np.zeros(3, np.float32))     # a failed update changes nothing


def test_concurrent_session_runs_of_fused_kernels():
    # numexpr's virtual machine is not reentrant: two threads in compiled numexpr kernels aborted the process
    x_np = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [8, 8])
        y = x
        for _ in range(6):
            y = ek.tanh(y) * 0.5 + y * y - 0.25
    sess = gr.Session(graph=g)
    want = sess.run(y, {x: x_np})
    results = []
    hammer(lambda: results.append(sess.run(y, {x: x_np})), steps=200)
    assert len(results) == THREADS * 200
    for r in results[::97]:
        np.testing.assert_array_equal(r, want)


# -- scatter updates -------------------------------------------------------------------------------------
def scatter_updates(v):
    return [v.scatter_nd_add([[1], [1], [3]], ek.ones((3, 3))),          # duplicate rows are summed
            v.scatter_nd_update([[0, 2]], [5.0]),
            v.scatter_nd_sub([[3, 0], [3, 0]], [1.0, 0.5])]


def scatter_program(v):
    scatter_updates(v)
    return v.value()


def scatter_expected():
    w = np.zeros((4, 3), np.float32)
    np.add.at(w, ([1, 1, 3],), np.ones((3, 3), np.float32))
    w[0, 2] = 5.0
    np.subtract.at(w, ([3, 3], [0, 0]), np.array([1.0, 0.5], np.float32))
    return w


def test_scatter_updates_agree_in_every_mode():
    want = scatter_expected()
    v = ek.Variable(np.zeros((4, 3), np.float32))
    np.testing.assert_array_equal(scatter_program(v).numpy(), want)
    v2 = ek.Variable(np.zeros((4, 3), np.float32))
    np.testing.assert_array_equal(function(lambda: scatter_program(v2))().numpy(), want)
    g = gr.Graph()
    with g.as_default():
        v3 = ek.Variable(np.zeros((4, 3), np.float32))
        updates = scatter_updates(v3)
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        for u in updates:                  # a graph runs what is fetched: one update per run, in order
            sess.run(u)
        np.testing.assert_array_equal(sess.run(v3), want)


def test_scatter_nd_add_from_8_threads():
    v = ek.Variable(np.zeros((2, 2), np.int64))
    hammer(lambda: v.scatter_nd_add([[0, 1], [1, 0], [0, 1]], [1, 2, 3]))
    np.testing.assert_array_equal(v.numpy(), [[0, 4 * THREADS * STEPS], [2 * THREADS * STEPS, 0]])


def test_scatter_errors_leave_the_variable_unchanged():
    v = ek.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="table")
    with pytest.raises(ek.errors.InvalidArgumentError, match=r"ResourceScatterNdAdd: index 9 is not in \[0, 3\)"):
        v.scatter_nd_add([[9]], ek.ones((1, 2)))
    with pytest.raises(ek.errors.InvalidArgumentError, match=r"updates must have shape \[1, 2\] for indices of "
                                                             r"shape \[1, 1\] and variable table:0"):
        v.scatter_nd_update([[1]], ek.ones((2, 2)))
    with pytest.raises(ek.errors.InvalidArgumentError, match="cannot assign a int32 value to variable table:0"):
        v.scatter_nd_sub([[1]], ek.constant([[1, 2]]))
    with pytest.raises(TypeError, match="indices must be integers"):
        v.scatter_nd_sub([[1.5]], ek.ones((1, 2)))
    np.testing.assert_array_equal(v.numpy(), np.arange(6, dtype=np.float32).reshape(3, 2))
