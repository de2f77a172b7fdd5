"""A GraphDef with variables, control flow and gradients runs the same in a fresh process."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import eager as ek
import graph_runtime as gr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import graph_runtime as gr
    gd = gr.read_graph(sys.argv[1])
    g = gr.Graph()
    with g.as_default():
        gr.import_graph_def(gd, name="")
    names = json.loads(sys.argv[2])
    with gr.Session(graph=g) as sess:
        sess.run(g.get_operation_by_name(names["init"]))
        out = []
        for _ in range(2):                                  # state carries over between runs
            vals = sess.run([g.get_tensor_by_name(n) for n in names["fetches"]],
                            {g.get_tensor_by_name(names["x"]): np.array(names["x_value"], np.float32)})
            out.append([np.asarray(v).tolist() for v in vals])
    print(json.dumps(out))
""")


def _build():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3], name="x")
        w = ek.Variable(np.array([0.5, -1.0, 2.0], np.float32), name="w")
        counter = ek.Variable(0, name="counter")

        def body(i, v):
            v = ek.cond(ek.reduce_sum(v) > 0, lambda: ek.tanh(v * w), lambda: v * v + w)
            return i + 1, v
        y = ek.while_loop(lambda i, v: i < 3, body, [ek.constant(0), x])[1]
        loss = ek.reduce_sum(y * y)
        (gw,) = gr.gradients(loss, [w])
        with g.control_dependencies([loss, gw]):
            step = counter.assign_add(1)
        init = gr.global_variables_initializer()
    return g, x, [loss, gw, step], init


def test_graph_def_round_trip_with_variables_and_control_flow_in_a_fresh_process(tmp_path):
    g, x, fetches, init = _build()
    xv = [0.3, -0.2, 0.9]
    with gr.Session(graph=g) as sess:
        sess.run(init)
        want = [[np.asarray(v).tolist() for v in sess.run(fetches, {x: np.array(xv, np.float32)})] for _ in range(2)]
    path = gr.write_graph(g, str(tmp_path), "graph.json")
    names = {"init": init.name, "fetches": [t.name for t in fetches], "x": x.name, "x_value": xv}
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", CHILD, path, json.dumps(names)], capture_output=True, text=True,
                          env=env, cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout)
    assert got[0][2] == 1 and got[1][2] == 2 and want[1][2] == 2
    for run_got, run_want in zip(got, want):
        for a, b in zip(run_got, run_want):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
