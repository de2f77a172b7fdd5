"""The HTML page's own drawing: inline SVG laid out in Python, with no Graphviz on PATH."""
import json
import re
import shutil

import pytest

import eager as ek
from graph_runtime import Graph, placeholder, visualize, visualize_svg
from graph_runtime.visualize_html import to_html


@pytest.fixture
def no_dot(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(visualize.shutil, "which", lambda name: None)
    assert shutil.which("dot") is None


def _small_graph():
    g = Graph()
    with g.as_default():
        x = placeholder(ek.float32, (2,), name="x")
        with ek.name_scope("layer"):
            y = ek.exp(x, name="e") * 2.0
        ek.add(y, x, name="out")
    return g


def _nodes_and_edges(page):
    nodes = set(re.findall(r'<g class="gj-node[^"]*"[^>]*data-op="([^"]*)"', page))
    edges = set(re.findall(r'<path class="gj-edge" data-src="([^"]*)" data-dst="([^"]*)"', page))
    return nodes, edges


@pytest.mark.parametrize("grandalf", [True, False])
def test_page_draws_every_op_and_edge_without_dot(no_dot, monkeypatch, grandalf):
    if grandalf:
        pytest.importorskip("grandalf")
    else:
        monkeypatch.setattr(visualize_svg, "GRANDALF_MAX_ITEMS", -1)    # the fallback layering
    g = _small_graph()
    page = to_html(g, optimizer=False)
    assert "<svg" in page and "not found" not in page
    nodes, edges = _nodes_and_edges(page)
    assert nodes == {op.name for op in g.get_operations()}
    # root panel: x -> layer/ (scope box), layer/ -> out, x -> out; layer panel: x (outside) -> e, e -> mul, ...
    assert {("x", "layer/"), ("layer/", "out"), ("x", "out")} <= edges
    assert {("x", "layer/e"), ("layer/e", "layer/mul"), ("layer/Const", "layer/mul")} <= edges
    assert ("Simple layered layout" in page) is (not grandalf)


def test_details_json_has_attrs_shapes_and_source_line():
    g = _small_graph()
    page = to_html(g, optimizer=False)
    data = json.loads(re.search(r'<script type="application/json" id="gj1-data">(.*?)</script>', page).group(1))
    e = [v for v in data.values() if v.startswith("layer/e ")][0]
    assert "outputs: layer/e:0 f32[2]" in e and "inputs: x:0" in e
    assert "test_visualize_svg.py:" in e and 'ek.exp(x, name="e")' in e       # file, line and its text


def test_large_graph_starts_with_scopes_closed_and_bodies_openable():
    g = Graph()
    with g.as_default():
        x = placeholder(ek.float32, (4,), name="x")
        for i in range(60):
            with ek.name_scope(f"block{i}"):
                x = ek.tanh(x * 1.5 + 1.0)
        ek.cond(ek.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    page = to_html(g, optimizer=False)
    root = re.search(r'<div class="gj-panel" id="gj1-p0">.*?</svg>', page, re.S).group(0)
    assert root.count('class="gj-node gj-scope"') == 60 and "block0/Tanh" not in root   # scopes collapsed
    assert re.search(r'<div class="gj-panel" id="gj1-p\d+" hidden>', page)
    nodes, _ = _nodes_and_edges(page)
    assert "block59/Tanh" in nodes                          # still in the page, in a closed panel
    m = re.search(r'class="gj-node gj-control"[^>]*data-gj-open="([^"]+)"', page)
    assert m and all(f'id="{pid}" hidden' in page for pid in m.group(1).split())


def test_text_from_graphs_is_escaped(no_dot):
    g = Graph()
    with g.as_default():
        with ek.name_scope('<img src=x onerror="alert(1)">&'):
            placeholder(ek.float32, (2,), name="p")
    page = to_html(g, optimizer=False)
    assert "<img" not in page and 'onerror="' not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;" in page
    blob = re.search(r'<script type="application/json" id="gj1-data">(.*?)</script>', page, re.S).group(1)
    assert "<" not in blob and "</script" not in blob.lower()


def test_ops_with_devices_are_outlined_by_device_with_a_legend():
    from graph_runtime import device
    g = Graph()
    with g.as_default():
        x = placeholder(ek.float32, (2,), name="x")
        with device("/gpu:0"):
            ek.exp(x, name="on_gpu")
        ek.exp(x, name="on_host")
    page = to_html(g, optimizer=False)
    gpu = re.search(r'data-op="on_gpu"><rect[^>]*stroke="([^"]+)" stroke-width="2"', page)
    host = re.search(r'data-op="on_host"><rect[^>]*stroke="([^"]+)" stroke-width="1"', page)
    assert gpu and host and gpu.group(1) != host.group(1)
    assert f'border:2px solid {gpu.group(1)}">/device:GPU:0</span>' in page


@pytest.mark.parametrize("grandalf", [True, False])
def test_collapsed_scope_that_feeds_and_reads_an_op_outside_is_drawn(monkeypatch, grandalf):
    # a/Exp -> y -> a/z: the collapsed box a/ and y form a cycle at the top level; both layouts must cope
    if grandalf:
        pytest.importorskip("grandalf")
    else:
        monkeypatch.setattr(visualize_svg, "GRANDALF_MAX_ITEMS", -1)
    g = Graph()
    with g.as_default():
        x = placeholder(ek.float32, (2,), name="x")
        with ek.name_scope("a"):
            u = ek.exp(x)
        y = ek.tanh(u, name="y")
        with ek.name_scope("a/"):
            ek.exp(y, name="z")
    page = to_html(g, optimizer=False)
    nodes, edges = _nodes_and_edges(page)
    assert nodes == {"x", "a/Exp", "y", "a/z"}
    assert {("a/", "y"), ("y", "a/"), ("y", "a/z")} <= edges


def test_imported_locations_never_embed_local_file_lines(tmp_path):
    """A GraphDef's node locations are data: one naming a local file must not put that file's lines in
    the page (only locations this process recorded show their source text)."""
    from graph_runtime import import_graph_def
    secret = tmp_path / "secret.txt"
    secret.write_text("first line\nTOP-SECRET-TOKEN\n")
    gd = _small_graph().as_graph_def()
    for n in gd["nodes"]:
        n["location"] = [str(secret), 2, "f"]
    g = Graph()
    with g.as_default():
        import_graph_def(gd, name="")
    page = to_html(g, optimizer=False)
    assert "TOP-SECRET-TOKEN" not in page
    assert f"{secret}:2 in f" in page                   # the location itself is still shown, as data
    assert "ek.exp(x, name=" in to_html(_small_graph(), optimizer=False)        # recorded here: shown
