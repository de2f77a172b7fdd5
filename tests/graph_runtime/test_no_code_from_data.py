"""Nothing read from a GraphDef becomes code: direct regression tests.

Each crafted GraphDef carries Python source where a name or value is expected.
Import must refuse it with a GraphDefError naming the node and what is wrong;
should it get through, the tests run it, so a regression shows up as a marker
file written by the injected code (or `PWNED` printed).  The fuzz test over
every string field is tests/tracing/test_no_code_from_files.py.
"""
import json

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError
from graph_runtime.graph_def import GraphDefError
from graph_runtime.passes import optimize


def _write_marker(path) -> str:
    return f"__import__('pathlib').Path({str(path)!r}).write_text('x')"


def _graph_def():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        y = ek.reduce_sum(x[:, 1:], axis=0)          # StridedSlice (kernel takes **attrs) and Sum
    return json.loads(json.dumps(g.as_graph_def())), y.name


def _import_and_run(gd, fetch, feed=None):
    """Import `gd` into a fresh graph and run `fetch`; the GraphDefError, or None when it got through."""
    g = gr.Graph()
    with g.as_default():
        try:
            gr.import_graph_def(gd, name="")
        except GraphDefError as e:
            assert g.get_operations() == []           # all or nothing
            return e
    with gr.Session(graph=g) as sess:
        try:
            sess.run(fetch, feed if feed is not None else {"x:0": np.ones((2, 3), np.float32)})
        except Exception:  # noqa: BLE001 - only the side effect matters here
            pass
    return None


@pytest.mark.parametrize("op_type", ["Sum", "StridedSlice"])
def test_crafted_attr_name_is_refused_by_import(tmp_path, op_type):
    marker = tmp_path / "pwned"
    gd, out = _graph_def()
    node = next(n for n in gd["nodes"] if n["op"] == op_type)
    evil = f"z={_write_marker(marker)},y"
    node["attrs"][evil] = 1
    err = _import_and_run(gd, out)
    assert not marker.exists(), "an attr name from the GraphDef ran as code"
    assert err is not None, "import accepted an attr the op does not declare"
    msg = str(err)
    assert repr(node["name"]) in msg and "unknown attr" in msg and "z=__import__" in msg, msg
    assert op_type in msg


def test_print_pwned_attr_name(capfd):
    """The case first reported: an attr named `z=print('PWNED'),y` on a Sum node."""
    gd, out = _graph_def()
    node = next(n for n in gd["nodes"] if n["op"] == "Sum")
    node["attrs"]["z=print('PWNED'),y"] = 1
    err = _import_and_run(gd, out)
    assert "PWNED" not in capfd.readouterr().out
    assert isinstance(err, GraphDefError) and "z=print('PWNED'),y" in str(err)


def test_undeclared_attr_of_an_op_built_in_memory_is_refused_by_codegen(tmp_path):
    """Defence in depth: an attr that reached a graph without import never reaches generated source."""
    marker = tmp_path / "pwned"
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        y = ek.reduce_sum(x, axis=0)
    y.op._attrs[f"z={_write_marker(marker)},y"] = 1
    with pytest.raises(InvalidArgumentError, match="op 'Sum': unknown attr .z=__import__.*refusing to generate code"):
        gr.compile_plan(g, [x], [y])
    assert not marker.exists()


def test_declared_attrs_come_from_the_kernel_or_the_declaration():
    from eager import registry
    assert set(registry.attr_names(registry.get("Sum"), 1)) == {"axis", "keepdims"}
    assert set(registry.attr_names(registry.get("StridedSlice"), 4)) == {
        "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"}
    assert registry.attr_names(registry.get("AddV2"), 2) == {}          # a ufunc: no `out=`, `where=`
    assert registry.attr_names(registry.get("Reshape"), 2) == {}        # both parameters are inputs
    for od in registry.all_ops():                     # **kwargs kernels cannot go undeclared
        if registry._takes_var_keywords(od.kernel):
            assert od.attrs is not None, od.name
    with pytest.raises(ValueError, match="must declare its attr names"):
        registry.register(registry.OpDef("GraphjitTestKwargs", lambda x, **kw: x, lambda s, a: s,
                                         differentiable=False))


def _fused_graph_def():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3, None), name="x")
        y = ek.cast(ek.nn.relu(ek.sigmoid(x) - 0.5), ek.float64) * 2.0
    out, _ = optimize(g, ["x", y.name], passes=["fusion"])
    gd = json.loads(json.dumps(out.as_graph_def()))
    node = next(n for n in gd["nodes"] if n["op"] == "FusedElementwise")
    return gd, node, y.name


def test_fused_program_attr_name_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    gd, node, out = _fused_graph_def()
    ops = node["attrs"]["program"]["$fused_program"]["ops"]
    cast = next(o for o in ops if o[0] == "Cast")
    cast[1]["$dict"].append([f"z={_write_marker(marker)},y", 1])
    err = _import_and_run(gd, out, {"x:0": np.ones((3, 4), np.float32)})
    assert not marker.exists()
    assert err is not None and "unknown attr" in str(err) and repr(node["name"]) in str(err)


@pytest.mark.parametrize("field,value", [
    ("op", "PrintV2"), ("op", "AssignVariableOp"), ("op", "While"), ("args", ["0) or (0"]), ("args", [99]),
    ("dtype", "float32') or ('"), ("outputs", ["13"])])
def test_fused_program_fields_are_validated(field, value):
    gd, node, out = _fused_graph_def()
    prog = node["attrs"]["program"]["$fused_program"]
    if field == "outputs":
        prog["outputs"] = value
    else:
        rec = prog["ops"][1]
        rec[{"op": 0, "args": 2, "dtype": 3}[field]] = value
    err = _import_and_run(gd, out, {"x:0": np.ones((3, 4), np.float32)})
    assert isinstance(err, GraphDefError) and repr(node["name"]) in str(err)


def test_fused_program_modified_after_import_is_refused_by_the_backend(tmp_path, monkeypatch):
    """Defence in depth for the NumPy fusion backend: undeclared opaque attrs never become source."""
    from graph_runtime.fusion import numexpr_backend
    monkeypatch.setattr(numexpr_backend, "enabled", False)
    marker = tmp_path / "pwned"
    gd, node, out = _fused_graph_def()
    g = gr.Graph()
    with g.as_default():
        gr.import_graph_def(gd, name="")
    prog = g.get_operation_by_name(node["name"]).get_attr("program")
    cast = next(i for i in prog.instrs if i.op_type == "Cast")
    cast.attrs[f"z={_write_marker(marker)},y"] = 1
    with gr.Session(graph=g) as sess:
        with pytest.raises(Exception, match="unknown attr"):
            sess.run(out, {"x:0": np.ones((3, 4), np.float32)})
    assert not marker.exists()


def test_imported_print_may_not_choose_a_file(tmp_path):
    marker = tmp_path / "pwned"
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        p = ek.print(x)
    gd = json.loads(json.dumps(g.as_graph_def()))
    node = next(n for n in gd["nodes"] if n["op"] == "PrintV2")
    node["attrs"]["output_stream"] = f"file://{marker}"
    err = _import_and_run(gd, p.name)
    assert not marker.exists(), "an imported PrintV2 wrote to a file the GraphDef chose"
    assert isinstance(err, GraphDefError) and "output_stream" in str(err) and repr(node["name"]) in str(err)


def _with_inplace_node(build, attrs):
    """The GraphDef of the graph `build()` makes, its Tanh node turned into InplaceElementwise(`attrs`)."""
    g = gr.Graph()
    with g.as_default():
        y = build()
    gd = json.loads(json.dumps(g.as_graph_def()))
    node = next(n for n in gd["nodes"] if n["op"] == "Tanh")
    node["op"] = "InplaceElementwise"
    node["attrs"] = attrs
    return gd, y.name


def test_an_imported_graph_never_decides_an_in_place_write():
    """An imported InplaceElementwise wrote into the caller's fed array and into a variable's value."""
    def on_feed():
        return ek.tanh(gr.placeholder(ek.float32, [2, 3], name="x"))

    def on_variable():
        v = ek.Variable(np.ones((2, 3), np.float32), name="v")
        return ek.tanh(v.read_value())

    fed = np.ones((2, 3), np.float32)
    for build in (on_feed, on_variable):
        for attrs in ({"op_type": "Tanh", "index": 0}, {"op_type": "PrintV2", "index": 0},
                      {"op_type": "Tanh", "index": 5}):
            gd, y = _with_inplace_node(build, attrs)
            err = _import_and_run(gd, y, {"x:0": fed} if build is on_feed else {})
            assert isinstance(err, GraphDefError) and "only the memory pass may decide" in str(err), err
    np.testing.assert_array_equal(fed, 1.0)


def test_an_imported_graph_never_decides_an_in_place_variable_update():
    """An imported InplaceAssignUpdate would store `v - x` into the caller's fed array `x`."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        v = ek.Variable(np.ones((2, 3), np.float32), name="v")
        u = v.assign_sub(x)
    gd = json.loads(json.dumps(g.as_graph_def()))
    node = next(n for n in gd["nodes"] if n["op"] == "AssignSubVariableOp")
    node["op"] = "InplaceAssignUpdate"
    node["attrs"] = dict(node["attrs"], op_type="AssignSubVariableOp", index=0)
    fed = np.full((2, 3), 0.5, np.float32)
    err = _import_and_run(gd, u.name, {"x:0": fed})
    assert isinstance(err, GraphDefError) and "only the memory pass may decide" in str(err), err
    np.testing.assert_array_equal(fed, 0.5)


@pytest.mark.parametrize("body,field", [("body", "outputs"), ("cond", "outputs"), ("then_branch", "outputs")])
def test_bodies_must_match_their_op(body, field):
    """A crafted While whose body returns nothing used to loop forever; If/While bodies must match Tout."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [2, 3], name="x")
        _, acc = ek.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), [ek.constant(0), x])
        c = ek.cond(ek.reduce_sum(x) > 0, lambda: x + 1.0, lambda: x - 1.0)
    gd = json.loads(json.dumps(g.as_graph_def()))
    node = next(n for n in gd["nodes"] if body in n["attrs"])
    node["attrs"][body]["$graph"][field] = []
    err = _import_and_run(gd, [acc.name, c.name])
    assert isinstance(err, GraphDefError) and repr(node["name"]) in str(err), err
    assert "outputs" in str(err)


def test_numexpr_text_holds_only_names_the_backend_made():
    """numexpr parses expressions with Python's eval: a stage naming anything else is refused."""
    from graph_runtime.fusion import numexpr_backend
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3, 4), name="x")
        y = ek.tanh(x) * 0.5 + x
    out, _ = optimize(g, ["x", y.name], passes=["fusion"])
    prog = next(o for o in out.get_operations() if o.type == "FusedElementwise").get_attr("program")
    assert numexpr_backend.stages(prog).stages                  # the genuine program is fine
    prog.__dict__.pop("_ne_stages", None)
    prog.instrs[0].ne = "__import__('os').getcwd({0})"
    with pytest.raises(ValueError, match="did not make: \\['__import__', 'getcwd', 'os'\\]"):
        numexpr_backend.stages(prog)
