"""Device strings survive the passes that merge ops, and bodies inherit the device scope."""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.tensor import HOST_DEVICE
from graph_runtime.passes import optimize
from graph_runtime.pipeline import prepare


def test_fusion_never_merges_ops_of_two_devices():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [8], name="x")
        with g.device("/gpu:0"):
            a = ek.exp(ek.sin(x) * 2.0)
        with g.device("/gpu:1"):
            b = ek.cos(ek.tanh(a) + 1.0)
    out, report = optimize(g, [x, b])
    fused = [o for o in out.get_operations() if o.type == "FusedElementwise"]
    assert sorted(o.device for o in fused) == ["/device:GPU:0", "/device:GPU:1"]
    for o in out.get_operations():
        if o.type not in ("Placeholder", "Const"):
            assert o.device in ("/device:GPU:0", "/device:GPU:1"), o
    xv = np.linspace(-1, 1, 8).astype(np.float32)
    want = np.cos(np.tanh(np.exp(np.sin(xv) * np.float32(2))) + np.float32(1))
    # no GPU exists: soft placement puts every op on the CPU (placement.py)
    with gr.Session(graph=g, config=gr.SessionConfig(allow_soft_placement=True)) as sess:
        np.testing.assert_allclose(sess.run(b, {x: xv}), want, rtol=1e-6)


def test_arithmetic_rewrites_never_merge_ops_of_two_devices():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [4], name="x")
        with g.device("/cpu:0"):
            n = ek.negative(x)
        with g.device("/cpu:1"):
            y = ek.negative(n)              # --x on one device would fold to x
    out, _ = optimize(g, [x, y], passes=["arithmetic"])
    assert [o.device for o in out.get_operations() if o.type == "Neg"] == ["/device:CPU:0", "/device:CPU:1"]


def test_a_while_loop_under_a_device_scope_has_its_body_ops_on_that_device():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3], name="x")
        with g.device("/cpu:1"):
            def body(i, v):
                v = ek.cond(ek.reduce_sum(v) > 0, lambda: v * 0.5, lambda: v + 1.0)
                return i + 1, v
            y = ek.while_loop(lambda i, v: i < 3, body, [ek.constant(0), x])[1]
    loop = y.op
    assert loop.device == "/device:CPU:1"
    bodies = [loop.get_attr("cond"), loop.get_attr("body")]
    inner_if = next(o for o in bodies[1].get_operations() if o.type in ("If", "StatelessIf"))
    bodies += [inner_if.get_attr("then_branch"), inner_if.get_attr("else_branch")]
    for body in bodies:
        ops = body.get_operations()
        assert ops and all(o.device == "/device:CPU:1" for o in ops), [(o.name, o.device) for o in ops]
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        np.testing.assert_allclose(sess.run(y, {x: np.array([1.0, 2.0, -0.5], np.float32)}),
                                   np.array([1.0, 2.0, -0.5], np.float32) * 0.125)


def test_an_eager_tensor_reports_the_host_device():
    assert ek.constant([1.0, 2.0]).device == HOST_DEVICE == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert (ek.constant(2.0) * 3.0).device == HOST_DEVICE


def test_kernel_table_by_device_type_is_selected_by_the_compiler():
    from eager.dispatch import execute
    from eager.ops._define import infer_same
    from eager.registry import device_type, kernel_for, op, register_kernel
    calls = []
    tagged = op("DevicesTestTagged", lambda x: np.add(x, 1), infer_same)
    register_kernel(tagged, "gpu", lambda x: (calls.append("GPU"), np.add(x, 1))[1])
    assert [device_type(d) for d in ("", "/cpu:1", "/gpu:0", "/device:GPU:1", "/job:w/replica:0/task:1/device:CPU:0")] \
        == ["CPU", "CPU", "GPU", "GPU", "CPU"]
    assert kernel_for(tagged, "/gpu:3") is tagged.kernels["GPU"] and kernel_for(tagged, "/cpu:0") is tagged.kernel
    assert kernel_for(tagged, "/tpu:0") is tagged.kernel      # no TPU kernel: the host runs it (until placement)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        with g.device("/gpu:0"):
            on_gpu = execute(tagged, (x,), {})
        on_cpu = execute(tagged, (x,), {})
    with gr.Session(graph=g) as sess:
        np.testing.assert_array_equal(sess.run(on_cpu, {x: np.zeros(2, np.float32)}), [1, 1])
        assert calls == []
        with pytest.raises(ek.errors.InvalidArgumentError, match="'/device:GPU:0'"):
            sess.run(on_gpu, {x: np.zeros(2, np.float32)})       # a Session has no GPU (placement.py)
    with gr.Session(graph=g, config=gr.SessionConfig(allow_soft_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(on_gpu, {x: np.zeros(2, np.float32)}), [1, 1])
        assert calls == []                                         # soft-placed on the CPU: its kernel
    # an unplaced graph (a body or traced function) keeps the request: the compiler picks the GPU kernel
    plan = prepare(g, [x], [on_gpu], container="single")
    np.testing.assert_array_equal(plan.fn(np.zeros(2, np.float32)), [1, 1])
    assert calls == ["GPU"]
    assert float(execute(tagged, (ek.constant(1.0),), {})) == 2.0 and calls == ["GPU"]    # eager: host CPU
