"""An MLP training step (ReLU layer, mean softmax cross-entropy, tape gradients, plain SGD) gives the same
bits eagerly, under @function and in a Session, and the plans' in-place work (the gradient rewrites, the
SGD update stored into the gradient's buffer) never writes into an array the user can still see."""
import numpy as np

import eager as ek
import graph_runtime as gr
from tracing import function

# w1 (300 x 128 float32, 150 KiB) is big enough for the memory pass's in-place update
BATCH, IN, HIDDEN, OUT = 32, 300, 128, 10
STEPS = 3


def _data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    y = np.eye(OUT, dtype=np.float32)[rng.integers(0, OUT, BATCH)]
    params = [(rng.standard_normal((IN, HIDDEN)) * 0.05).astype(np.float32),
              (rng.standard_normal(HIDDEN) * 0.1).astype(np.float32),
              (rng.standard_normal((HIDDEN, OUT)) * 0.05).astype(np.float32),
              (rng.standard_normal(OUT) * 0.1).astype(np.float32)]
    return x, y, params


def _loss_and_grads(variables, x, y):
    w1, b1, w2, b2 = variables
    with ek.GradientTape() as tape:
        h = ek.nn.relu(ek.matmul(x, w1) + b1)
        logits = ek.matmul(h, w2) + b2
        loss = ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
    return loss, tape.gradient(loss, variables)


def _step_fn(variables, opt):
    def step(x, y):
        loss, grads = _loss_and_grads(variables, x, y)
        opt.apply_gradients(zip(grads, variables))
        return loss
    return step


def _eager_and_function():
    x, y, params = _data()
    out = {}
    for mode in ("eager", "function"):
        variables = [ek.Variable(p) for p in params]
        step = _step_fn(variables, ek.optimizers.SGD(0.1))
        if mode == "function":
            step = function(step)
        losses = [step(ek.constant(x), ek.constant(y)).numpy() for _ in range(STEPS)]
        out[mode] = losses + [v.numpy() for v in variables]
    return out


def _session():
    x, y, params = _data()
    g = gr.Graph()
    with g.as_default():
        xp = gr.placeholder(ek.float32, x.shape)
        yp = gr.placeholder(ek.float32, y.shape)
        variables = [ek.Variable(p) for p in params]
        loss, grads = _loss_and_grads(variables, xp, yp)
        train = ek.optimizers.SGD(0.1).apply_gradients(zip(grads, variables))
        init = gr.global_variables_initializer()
    with gr.Session(graph=g) as sess:
        sess.run(init)
        losses = [sess.run([loss, train], {xp: x, yp: y})[0] for _ in range(STEPS)]
        return losses + sess.run(variables)


def test_the_step_gives_the_same_bits_in_every_mode():
    results = _eager_and_function()
    results["session"] = _session()
    ref = results["eager"]
    for mode, values in results.items():
        for i, (a, b) in enumerate(zip(ref, values)):
            assert np.asarray(b).tobytes() == np.asarray(a).tobytes(), (mode, i)


def test_in_place_work_never_touches_what_the_user_holds():
    x, y, params = _data(1)
    variables = [ek.Variable(p) for p in params]
    opt = ek.optimizers.SGD(0.1)

    @function
    def step(x, y):
        loss, grads = _loss_and_grads(variables, x, y)
        opt.apply_gradients(zip(grads, variables))
        return loss, grads[0]

    xt, yt = ek.constant(x), ek.constant(y)
    held = []           # (tensor the user holds, a copy of its bits when it was handed out)
    for _ in range(STEPS):
        before = variables[0].read_value()          # the variable's value the step will replace
        held.append((before, before.numpy().copy()))
        loss, dw1 = step(xt, yt)
        held += [(loss, loss.numpy().copy()), (dw1, dw1.numpy().copy())]
        assert before.numpy().tobytes() == held[-3][1].tobytes(), "the update wrote into the value read before"
        assert not np.array_equal(variables[0].numpy(), before.numpy())     # the step did update w1
    step(xt, yt)
    for t, bits in held:
        assert t.numpy().tobytes() == bits.tobytes()
    assert xt.numpy().tobytes() == x.tobytes() and yt.numpy().tobytes() == y.tobytes()
    # the returned gradient is a graph output, so the update may not have been stored into it
    memory = [s.op.type for s in step.get_concrete_function(xt, yt)._plan.schedule.steps]
    assert "InplaceAssignUpdate" in memory or "InplaceElementwise" in memory, memory
