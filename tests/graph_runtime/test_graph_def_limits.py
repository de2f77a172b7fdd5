"""What an imported GraphDef may name and how deep it may nest: node and variable names, devices and
locations are checked; bodies nest at most MAX_BODY_NESTING levels; a refused GraphDef adds nothing."""
import copy
import json

import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime import graph_import
from graph_runtime.graph_def import GraphDefError


def _good_def():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2], name="x")
        v = ek.Variable(ek.ones((2,)), name="v")
        ek.identity(x + v, name="z")
    return json.loads(json.dumps(g.as_graph_def()))


def _refused(gd, message):
    g = gr.Graph()
    with g.as_default():
        gr.placeholder(ek.float32, [1], name="keep")
        with pytest.raises(GraphDefError, match=message):
            gr.import_graph_def(gd)
    assert [o.name for o in g.get_operations()] == ["keep"] and not g.get_collection("variables")


def _node(gd, name):
    return next(n for n in gd["nodes"] if n["name"] == name)


@pytest.mark.parametrize("mutate, message", [
    (lambda gd: _node(gd, "z").update(name='z"'), "not a valid node name"),
    (lambda gd: _node(gd, "z").update(name="z\nprint(1)"), "not a valid node name"),
    (lambda gd: _node(gd, "z").update(name="z\\"), "not a valid node name"),
    (lambda gd: _node(gd, "z").update(device="/job:w'x/task:0"), "job name"),
    (lambda gd: _node(gd, "z").update(device='/job:a"b'), "job name"),
    (lambda gd: _node(gd, "z").update(device="/job:w\n/task:0"), "job name"),
    (lambda gd: _node(gd, "z").update(location=["f.py", "12", "g"]), "'location'"),
    (lambda gd: _node(gd, "z").update(location=["f.py", 1.5, "g"]), "'location'"),
    (lambda gd: _node(gd, "z").update(location=["f\n.py", 1, "g"]), "'location'"),
    (lambda gd: gd["variables"][0].update(name="v'"), "not a valid node name"),
    (lambda gd: gd["variables"][0].update(initializer="nowhere"), "initializer 'nowhere' is not a node"),
    (lambda gd: gd["variables"][0].update(shape=[2.5]), "must be an int or None, got 2.5"),
    (lambda gd: gd["variables"][0].update(shape=[10 ** 300]), "does not fit in 64 bits"),
    (lambda gd: gd["variables"][0].update(shape=[2 ** 63]), "at most 2\\*\\*63 - 1"),
    (lambda gd: gd["variables"][0].update(shape=[2 ** 40, 2 ** 40]), "more than 2\\*\\*63 - 1 elements"),
    (lambda gd: gd.update(inputs=5), "'inputs' must be a list of tensor names"),
    (lambda gd: gd.update(outputs=["z:0", 3]), "'outputs' must be a list of tensor names"),
    (lambda gd: _node(gd, "x")["attrs"].update(shape={"$shape": [2.5]}), "got 2.5"),
    (lambda gd: _node(gd, "x")["attrs"].update(shape={"$shape": [10 ** 5000]}), "does not fit in 64 bits"),
])
def test_bad_names_devices_locations_and_records_are_refused(mutate, message):
    gd = copy.deepcopy(_good_def())
    mutate(gd)
    _refused(gd, message)


def test_a_declared_variable_takes_no_memory_until_initialized():
    gd = _good_def()
    gd["variables"].append({"name": "big", "dtype": "float32", "shape": [2 ** 20, 2 ** 20], "trainable": True,
                            "initializer": None})        # 4 TiB if it were allocated
    g = gr.Graph()
    with g.as_default():
        gr.import_graph_def(gd, name="")
    big = [v for v in g._variables.values() if v._name == "big"][0]
    assert big.shape == (2 ** 20, 2 ** 20) and not big.is_initialized()


def _nested_cond_def(depth):
    """A GraphDef holding `depth` nested If ops (built two deep, then nested as data)."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [], name="x")
        ek.cond(x > 0, lambda: ek.cond(x > 1, lambda: x + 1.0, lambda: x), lambda: x - 1.0)
    gd = json.loads(json.dumps(g.as_graph_def()))

    def if_node(d):
        return next(n for n in d["nodes"] if n["op"] in ("If", "StatelessIf"))

    def then_body(d):
        n = if_node(d)
        return next(v["$graph"] for k, v in n["attrs"].items() if "then" in k)
    outer_body = then_body(gd)                       # holds the inner If
    level2 = json.dumps(outer_body)
    body = outer_body
    for _ in range(depth - 2):                       # replace the innermost If's then-body by a copy of level 2
        inner = if_node(body)
        key = next(k for k in inner["attrs"] if "then" in k)
        inner["attrs"][key] = {"$graph": json.loads(level2)}
        body = inner["attrs"][key]["$graph"]
    return gd


def test_deeply_nested_imported_cond_is_refused_clearly():
    ok = _nested_cond_def(10)
    g = gr.Graph()
    with g.as_default():
        gr.import_graph_def(ok, name="")
    outer = next(o for o in g.get_operations() if o.type in ("If", "StatelessIf"))
    with gr.Session(graph=g) as sess:
        assert sess.run(outer.outputs[0], {"x:0": 5.0}) == 6.0
    for depth in (graph_import.MAX_BODY_NESTING + 1, 120):
        _refused(_nested_cond_def(depth), "nested more than 64 levels")


def test_deep_data_is_refused_without_recursing():
    gd = _good_def()
    deep = 0
    for _ in range(5000):
        deep = [deep]
    _node(gd, "z")["attrs"]["T"] = deep
    _refused(gd, "nested more than 100 levels")


def test_names_a_graph_may_hold_export_and_import_again_and_others_are_refused_at_export():
    g = gr.Graph()
    with g.as_default():
        v = ek.Variable(ek.ones((2,)), name="my var")         # a space: TensorFlow would refuse it
        ek.identity(v.value() * 2.0, name="out")
    g2 = gr.Graph()
    gr.import_graph_def(json.loads(json.dumps(g.as_graph_def())), graph=g2, name="")
    assert "my var/read" in [o.name for o in g2.get_operations()]
    g3 = gr.Graph()
    with g3.as_default():
        w = ek.Variable(ek.ones((2,)), name="x'y")
        ek.identity(w.value())
    with pytest.raises(GraphDefError, match="cannot export .*x'y"):
        g3.as_graph_def()
