"""Device names: DeviceSpec parsing/printing/merging, nested device scopes, device functions."""
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime import DeviceSpec


@pytest.mark.parametrize("text, canonical", [
    ("", ""),
    ("/cpu:1", "/device:CPU:1"),
    ("/gpu:0", "/device:GPU:0"),
    ("CPU:0", "/device:CPU:0"),
    ("cpu", "/device:CPU:*"),
    ("/device:CPU:1", "/device:CPU:1"),
    ("/device:cpu:1", "/device:CPU:1"),
    ("/job:ps", "/job:ps"),
    ("/job:worker/replica:0/task:1/device:GPU:2", "/job:worker/replica:0/task:1/device:GPU:2"),
    ("/task:1/job:worker", "/job:worker/task:1"),
    ("/job:localhost/cpu:1", "/job:localhost/device:CPU:1"),
])
def test_from_string_to_string(text, canonical):
    spec = DeviceSpec.from_string(text)
    assert spec.to_string() == canonical
    assert DeviceSpec.from_string(canonical) == spec          # the canonical form round-trips


def test_fields():
    s = DeviceSpec.from_string("/job:worker/replica:1/task:2/device:GPU:3")
    assert (s.job, s.replica, s.task, s.device_type, s.device_index) == ("worker", 1, 2, "GPU", 3)
    assert DeviceSpec(job="ps", device_type="cpu", device_index=0).to_string() == "/job:ps/device:CPU:0"


@pytest.mark.parametrize("bad", ["/cpu:x", "/job:w/foo:1", "/gpu:0/cpu:1", "/task:one", "/device:CPU", "banana",
                                 "/replica:-1", "/job:"])
def test_bad_strings_raise_naming_the_string_and_the_form(bad):
    with pytest.raises(ValueError) as e:
        DeviceSpec.from_string(bad)
    assert repr(bad) in str(e.value) and "/job:NAME/replica:R/task:T/device:TYPE:I" in str(e.value)


def test_merge_other_wins_field_by_field():
    outer = DeviceSpec.from_string("/job:worker/task:1/gpu:1")
    assert outer.merge("/cpu:0").to_string() == "/job:worker/task:1/device:CPU:0"
    assert outer.merge("/task:3").to_string() == "/job:worker/task:3/device:GPU:1"
    assert outer.merge("").to_string() == outer.to_string()
    assert DeviceSpec().merge(outer) == outer


def test_nested_scopes_merge_inner_wins_outer_fills():
    g = gr.Graph()
    with g.as_default():
        with g.device("/job:localhost"):
            a = ek.constant(1.0)
            with g.device("/cpu:1"):
                b = a + 1.0
                with gr.device("/task:0"):
                    c = b * 2.0
                with g.device("/cpu:0"):
                    d = b * 3.0
            with g.device(""):                  # an empty scope changes nothing
                e = a + 4.0
        f = a - 1.0
    assert a.op.device == "/job:localhost" and e.op.device == "/job:localhost"
    assert b.op.device == "/job:localhost/device:CPU:1"
    assert c.op.device == "/job:localhost/task:0/device:CPU:1"
    assert d.op.device == "/job:localhost/device:CPU:0"
    assert f.op.device == ""


def test_none_resets_the_enclosing_scopes():
    g = gr.Graph()
    with g.as_default():
        with g.device("/job:ps/cpu:1"):
            with g.device(None):
                a = ek.constant(1.0)
                with g.device("/cpu:0"):
                    b = a + 1.0
    assert a.op.device == "" and b.op.device == "/device:CPU:0"


def test_device_function_sees_the_op_and_the_inner_request():
    seen = []

    def by_type(op):
        seen.append((op.type, op.device))
        return "/cpu:1" if op.type == "MatMul" else op.device

    g = gr.Graph()
    with g.as_default():
        with g.device("/job:w"):
            with g.device(by_type):
                x = gr.placeholder(ek.float32, [2, 2], name="x")
                m = ek.matmul(x, x)
                with g.device("/cpu:0"):
                    s = m + 1.0
    # the function's result replaces the request, then outer string scopes fill the unset fields
    assert x.op.device == "/job:w" and m.op.device == "/job:w/device:CPU:1"
    assert s.op.device == "/job:w/device:CPU:0"
    assert ("Placeholder", "") in seen and ("AddV2", "/device:CPU:0") in seen


def test_device_function_returning_garbage_raises_naming_the_op():
    g = gr.Graph()
    with g.as_default():
        with g.device(lambda op: "/nowhere:zz"):
            with pytest.raises(ValueError, match="returned '/nowhere:zz' for op"):
                ek.constant(1.0)


def test_bad_scope_string_raises_at_the_scope():
    g = gr.Graph()
    with pytest.raises(ValueError, match="'/cpu:one'"):
        with g.device("/cpu:one"):
            pass


def test_device_spec_objects_as_scopes_and_in_graph_defs():
    g = gr.Graph()
    with g.as_default():
        with g.device(DeviceSpec(job="ps", device_type="CPU", device_index=0)):
            a = ek.constant(1.0, name="a")
    assert a.op.device == "/job:ps/device:CPU:0"
    gd = g.as_graph_def()
    g2 = gr.Graph()
    with g2.as_default():
        gr.import_graph_def(gd, name="")
    assert g2.get_operation_by_name("a").device == "/job:ps/device:CPU:0"


def test_graph_def_with_a_bad_or_short_device_string():
    from graph_runtime.graph_def import GraphDefError
    g = gr.Graph()
    with g.as_default():
        ek.constant(1.0, name="a")
    gd = g.as_graph_def()
    gd["nodes"][0]["device"] = "/gpu:1"
    g2 = gr.Graph()
    with g2.as_default():
        gr.import_graph_def(gd, name="")
    assert g2.get_operation_by_name("a").device == "/device:GPU:1"       # canonicalized on import
    gd["nodes"][0]["device"] = "/gpu:x"
    with pytest.raises(GraphDefError, match="node 'a'.*'/gpu:x'"):
        with gr.Graph().as_default():
            gr.import_graph_def(gd, name="")
