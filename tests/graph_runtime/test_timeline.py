"""Timeline: a FULL_TRACE run as Chrome trace JSON (one row per device, every op once); `graphjit trace`."""
import json
import textwrap

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from tracing import cli

HOST = "/job:localhost/replica:0/task:0/device:CPU:0"


def _traced_run():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [3, 3], name="x")
        y = ek.tanh(ek.matmul(x, x, name="mm"), name="act")
        z = ek.reduce_sum(ek.exp(x) * 2.0, name="total")
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(optimize=False)) as sess:
        sess.run([y, z], {x: np.ones((3, 3), np.float32)},
                 options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
    return md


def check_chrome_trace(text: str) -> dict:
    """The Trace Event Format rules Perfetto's JSON importer and chrome://tracing rely on."""
    doc = json.loads(text)
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in ("ms", "ns")
    names = {}
    for e in doc["traceEvents"]:
        assert e["ph"] in ("X", "M")
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index")
            if e["name"] == "process_name":
                names[e["pid"]] = e["args"]["name"]
        else:
            assert isinstance(e["name"], str) and e["name"]
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
            assert e["pid"] in names, "every event's process row is named"
    return doc


def test_chrome_trace_holds_every_op_once_on_one_device_row():
    md = _traced_run()
    doc = check_chrome_trace(gr.Timeline(md).generate_chrome_trace_format())
    ops = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert sorted(e["args"]["name"] for e in ops) == sorted(s.name for s in md.step_stats)
    assert len({e["args"]["name"] for e in ops}) == len(ops)            # each op once
    assert {"mm", "act", "total"} <= {e["args"]["name"] for e in ops}
    rows = [e for e in doc["traceEvents"] if e["name"] == "process_name"]
    assert [r["args"]["name"] for r in rows] == [HOST]
    mm = next(e for e in ops if e["args"]["name"] == "mm")
    assert mm["name"] == "MatMul" and mm["args"]["output_shapes"] == [[3, 3]]
    starts = [e["ts"] for e in ops]
    assert starts == sorted(starts)


def test_one_row_per_device_key():
    md = _traced_run()
    md.step_stats[0].device = "/job:localhost/replica:0/task:0/device:CPU:1"      # as placement will record
    doc = check_chrome_trace(gr.Timeline(md).generate_chrome_trace_format())
    rows = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert sorted(rows.values()) == sorted({HOST, "/job:localhost/replica:0/task:0/device:CPU:1"})
    first = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["args"]["name"] == md.step_stats[0].name)
    assert rows[first["pid"]].endswith("CPU:1")


def test_timeline_errors():
    with pytest.raises(TypeError, match="RunMetadata"):
        gr.Timeline({"step_stats": []})
    with pytest.raises(ValueError, match="FULL_TRACE"):
        gr.Timeline(gr.RunMetadata())


def test_while_body_ops_appear_once_per_iteration():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, [], name="x")
        _, r = ek.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), [ek.constant(0), x])
    md = gr.RunMetadata()
    with gr.Session(graph=g) as sess:
        assert sess.run(r, {x: 1.0}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                        run_metadata=md) == 8.0
    doc = check_chrome_trace(gr.Timeline(md).generate_chrome_trace_format())
    ops = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(ops) == len(md.step_stats)
    muls = [e for e in ops if e["name"] == "Mul" and e["args"]["name"].startswith("while")]
    assert len(muls) == 3


USER = textwrap.dedent('''
    import eager as ek

    def predict(x, w):
        h = ek.tanh(ek.matmul(x, w))
        return ek.reduce_sum(h * h)
''')


def test_cli_trace_writes_chrome_json(tmp_path, capsys):
    f = tmp_path / "model.py"
    f.write_text(USER)
    out = tmp_path / "t.json"
    assert cli.main(["trace", f"{f}:predict", "--shape", "x=8,4", "--shape", "w=4,3", "--out", str(out)]) == 0
    assert "ops" in capsys.readouterr().out
    doc = check_chrome_trace(out.read_text())
    types = {e["name"] for e in doc["traceEvents"] if e["ph"] == "X"}
    assert "MatMul" in types
    # every dimension is needed for the random inputs
    assert cli.main(["trace", f"{f}:predict", "--shape", "x=?,4", "--shape", "w=4,3"]) == 1
    assert "give every dimension" in capsys.readouterr().err


def test_send_recv_pairs_are_drawn_as_flows_between_device_rows():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        with g.device("/cpu:1"):
            a = ek.sin(x) * 2.0
        with g.device("/cpu:0"):
            b = ek.cos(a)
        with g.device("/cpu:1"):
            c = ek.exp(b)                  # back to cpu:1: a second transfer, the other way
        with g.device("/cpu:0"):
            y = ek.reduce_sum(c)
    md = gr.RunMetadata()
    with gr.Session(graph=g, config=gr.SessionConfig(device_count={"CPU": 2})) as sess:
        sess.run(y, {x: np.ones(4, np.float32)}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE),
                 run_metadata=md)
    trace = json.loads(gr.Timeline(md).generate_chrome_trace_format())
    events = trace["traceEvents"]
    pid_of = {e["args"]["name"]: e["pid"] for e in events if e["name"] == "process_name"}
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    sends = [s for s in md.step_stats if s.type == "_Send"]
    assert len(starts) == len(finishes) == len(sends) == 3      # a, b and c cross devices
    for i, s in starts.items():
        f = finishes[i]
        assert s["cat"] == f["cat"] == "DataFlow" and f["bp"] == "e" and f["ts"] >= s["ts"]
        assert s["args"]["key"] == f["args"]["key"]
        src, dst = s["args"]["key"].split(";")[-2:]
        assert s["pid"] == pid_of[src] and f["pid"] == pid_of[dst] and s["pid"] != f["pid"]
    ops = [e for e in events if e["ph"] == "X"]
    assert len(ops) == len(md.step_stats)            # every op once
