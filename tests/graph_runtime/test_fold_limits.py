"""Neither shape inference nor constant folding computes a big value at compile time: a tiny graph asking for
`Range(0, 3e6)`, a big `Tile` or `fill([2000, 2000])` costs kilobytes to import and optimize (the size is
checked on the static shape first), and the ops still give the right values at run time."""
import json
import tracemalloc

import numpy as np

import eager as ek
import graph_runtime as gr
from graph_runtime.passes import optimize

N = 3_000_000                       # 12 MB of int32: far over every folding limit


def _peak(fn):
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _expanding_graph():
    g = gr.Graph()
    with g.as_default():
        r = ek.range(ek.constant(0), ek.constant(N), name="r")
        t = ek.tile(ek.constant([1.0, 2.0]), ek.constant([N // 2]), name="t")
        f = ek.fill(ek.constant([2000, 2000]), 1.5, name="f")
        outs = [ek.reduce_sum(ek.cast(r, ek.float64)), ek.reduce_sum(t), ek.reduce_sum(f)]
    return g, outs


def test_importing_a_tiny_graph_def_never_computes_its_big_values():
    g, outs = _expanding_graph()
    gd = json.loads(json.dumps(g.as_graph_def()))
    assert len(json.dumps(gd)) < 20_000
    g2 = gr.Graph()
    with g2.as_default():
        _, peak = _peak(lambda: gr.import_graph_def(gd, name=""))
    assert peak < 4 << 20, f"import took {peak / 2**20:.1f} MiB"
    assert g2.get_tensor_by_name("r:0").shape.as_list() == [N]          # the shapes are still known
    assert g2.get_tensor_by_name("t:0").shape.as_list() == [N]


def test_constant_folding_leaves_big_outputs_to_run_time():
    g, outs = _expanding_graph()
    (out, report), peak = _peak(lambda: optimize(g, [o.name for o in outs]))
    assert peak < 4 << 20, f"optimizing took {peak / 2**20:.1f} MiB"
    assert {"r", "t", "f"} <= {o.name for o in out.get_operations()}       # not folded: they run
    with gr.Session(graph=g) as sess:
        got = sess.run(outs)
    np.testing.assert_allclose(got, [N * (N - 1) / 2, 1.5 * N, 1.5 * 4_000_000], rtol=1e-6)


def test_the_folding_limit_is_an_option():
    g = gr.Graph()
    with g.as_default():
        f = ek.fill(ek.constant([300, 400]), 2.0, name="f")          # 120,000 elements: over the default 1e5
        s = ek.reduce_sum(f)
    folded = lambda limit: "f" not in {o.name for o in optimize(       # noqa: E731
        g, [s.name], options={"fold_size_limit": limit})[0].get_operations()}
    assert not folded(100_000) and folded(200_000)
