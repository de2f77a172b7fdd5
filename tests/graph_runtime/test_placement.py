"""Devices and placement: virtual CPUs, explicit requests, colocation, soft placement,
the cost model's defaults, log_device_placement, and the errors."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError

CPU = "/job:localhost/replica:0/task:0/device:CPU:{}".format


def _placement(capsys) -> dict:
    out = capsys.readouterr().out
    rows = [line.split(": ") for line in out.splitlines() if ": (" in line]
    return {r[0]: r[2] for r in rows}


def test_list_devices():
    with gr.Session(graph=gr.Graph(), config=gr.SessionConfig(device_count={"CPU": 3})) as sess:
        devs = sess.list_devices()
    assert [d.name for d in devs] == [CPU(0), CPU(1), CPU(2)] and {d.device_type for d in devs} == {"CPU"}
    with gr.Session(graph=gr.Graph()) as sess:
        assert [d.name for d in sess.list_devices()] == [CPU(0)]


@pytest.mark.parametrize("bad", [{"CPU": 0}, {"CPU": -1}, {"GPU": 1}, {"CPU": 1.5}, [("CPU", 2)]])
def test_bad_device_count(bad):
    with pytest.raises(ValueError, match="device_count"):
        gr.SessionConfig(device_count=bad)


def _two_device_graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [4, 4], name="x")
        with g.device("/cpu:1"):
            m = ek.matmul(x, x, name="m")
        follow = ek.tanh(m, name="follow")          # unconstrained: its input lives on CPU:1
        own = ek.exp(x, name="own")                 # unconstrained: its input lives on CPU:0
        out = ek.add(follow, own, name="out")       # inputs of equal size on both: the lower index wins
    return g, x, out


def test_explicit_requests_honoured_and_unconstrained_ops_follow_their_inputs(capsys):
    g, x, out = _two_device_graph()
    xv = np.arange(16, dtype=np.float32).reshape(4, 4) / 16
    want = np.tanh(xv @ xv) + np.exp(xv)
    cfg = gr.SessionConfig(device_count={"CPU": 2}, log_device_placement=True)
    with gr.Session(graph=g, config=cfg) as sess:
        np.testing.assert_allclose(sess.run(out, {x: xv}), want, rtol=1e-6)
    placed = _placement(capsys)                     # x is fed: not placed (nothing computes it)
    assert placed == {"m": CPU(1), "follow": CPU(1), "own": CPU(0), "out": CPU(0)}
    assert g.get_operation_by_name("m").device == "/device:CPU:1"     # the user's graph keeps the request


def test_unknown_device_raises_naming_op_request_and_devices():
    g, x, out = _two_device_graph()
    with gr.Session(graph=g) as sess:                   # one CPU: /cpu:1 does not exist
        with pytest.raises(InvalidArgumentError) as e:
            sess.run(out, {x: np.ones((4, 4), np.float32)})
    msg = str(e.value)
    assert "'m'" in msg and "'/device:CPU:1'" in msg and CPU(0) in msg and "allow_soft_placement" in msg


@pytest.mark.parametrize("request_", ["/cpu:7", "/gpu:0", "/job:ps", "/job:localhost/task:3"])
def test_soft_placement_moves_impossible_requests(request_, capsys):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3], name="x")
        with g.device(request_):
            y = ek.sin(x, name="y") * 2.0
    xv = np.array([0.1, 0.2, 0.3], np.float32)
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        with pytest.raises(InvalidArgumentError, match="'y'"):
            sess.run(y, {x: xv})
    cfg = gr.SessionConfig(device_count={"CPU": 2}, allow_soft_placement=True, log_device_placement=True)
    capsys.readouterr()
    with gr.Session(graph=g, config=cfg) as sess:
        np.testing.assert_allclose(sess.run(y, {x: xv}), np.sin(xv) * 2, rtol=1e-6)
    assert _placement(capsys)["y"] == CPU(0)


def test_ops_the_fetches_do_not_need_are_not_placed():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        with g.device("/cpu:9"):
            ek.exp(x, name="unused")
        y = x + 1.0
    with gr.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(y, {x: np.zeros(2, np.float32)}), [1, 1])


def test_a_variables_ops_go_with_the_variable(capsys):
    g = gr.Graph()
    with g.as_default():
        with g.device("/cpu:1"):
            v = ek.Variable(np.ones(3, np.float32), name="v")
        r = v.read_value() * 2.0
        up = v.assign_add(np.ones(3, np.float32))
        init = gr.global_variables_initializer()
    cfg = gr.SessionConfig(device_count={"CPU": 2}, log_device_placement=True)
    with gr.Session(graph=g, config=cfg) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(r), [2, 2, 2])
        sess.run(up)
        np.testing.assert_array_equal(sess.run(r), [4, 4, 4])
    placed = _placement(capsys)
    assert placed["v/Assign"] == placed["v/read"] == placed["v/AssignAdd"] == CPU(1)


def test_a_variables_users_follow_the_variable_whatever_their_scope(capsys):
    # TF places the users of a resource with the resource: an update made under another device scope runs
    # where the variable was created (the request of the op's own scope is not a conflict)
    g = gr.Graph()
    with g.as_default():
        with g.device("/cpu:1"):
            v = ek.Variable(np.ones(3, np.float32), name="v")
        with g.device("/cpu:0"):
            up = v.assign_add(np.ones(3, np.float32))
    cfg = gr.SessionConfig(device_count={"CPU": 2}, log_device_placement=True)
    with gr.Session(graph=g, config=cfg) as sess:
        sess.run(v.initializer)
        sess.run(up)
        np.testing.assert_array_equal(sess.run(v), [2, 2, 2])
    placed = _placement(capsys)
    assert placed["v/Assign"] == placed["v/AssignAdd"] == CPU(1)


def test_an_update_touching_a_variable_and_its_slot_runs_with_the_variable(capsys):
    # momentum SGD's update op writes the variable and its slot (an eager variable): one group, on the
    # variable's device, although the update was built under another device scope
    g = gr.Graph()
    with g.as_default():
        with g.device("/cpu:1"):
            w = ek.Variable(np.ones(3, np.float32), name="w")
        with g.device("/cpu:0"):
            step = ek.optimizers.SGD(0.5, momentum=0.9).apply_gradients([(ek.ones((3,)), w)])
    cfg = gr.SessionConfig(device_count={"CPU": 2}, log_device_placement=True)
    with gr.Session(graph=g, config=cfg) as sess:
        sess.run(w.initializer)
        sess.run(step)
        np.testing.assert_allclose(sess.run(w), [0.5, 0.5, 0.5])
    placed = _placement(capsys)
    assert placed["w/ResourceApplyKerasMomentum"] == CPU(1)


def test_split_mlp_with_gradients_matches_one_device():
    rng = np.random.default_rng(0)
    w1v, w2v = rng.normal(size=(5, 8)).astype(np.float32), rng.normal(size=(8, 3)).astype(np.float32)
    xv = rng.normal(size=(4, 5)).astype(np.float32)

    def build(split: bool):
        g = gr.Graph()
        with g.as_default():
            x = gr.placeholder(ek.float32, [4, 5], name="x")
            w1, w2 = ek.constant(w1v), ek.constant(w2v)
            with g.device("/cpu:1" if split else None):
                h = ek.tanh(ek.matmul(x, w1))
            with g.device("/cpu:0" if split else None):
                loss = ek.reduce_sum(ek.matmul(h, w2) ** 2)
            grads = gr.gradients(loss, [w1, w2])
        return g, x, [loss] + list(grads)

    results = []
    for split in (False, True):
        g, x, fetches = build(split)
        with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
            results.append(sess.run(fetches, {x: xv}))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_an_op_with_no_kernel_for_any_device_type_raises_even_with_soft_placement():
    from eager.dispatch import execute
    from eager.ops._define import infer_same
    from eager.registry import op
    gpu_only = op("PlacementTestGpuOnly", lambda x: np.add(x, 1), infer_same, differentiable=False)
    gpu_only.kernels = {"GPU": gpu_only.kernel}         # no CPU kernel: no device of this session can run it
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        y = execute(gpu_only, (x,), {})
    for soft in (False, True):
        cfg = gr.SessionConfig(device_count={"CPU": 2}, allow_soft_placement=soft)
        with gr.Session(graph=g, config=cfg) as sess:
            with pytest.raises(InvalidArgumentError, match="PlacementTestGpuOnly.*no kernel for it"):
                sess.run(y, {x: np.zeros(2, np.float32)})
