"""Op source locations: captured without reading `f_lineno` at op creation (which costs time
proportional to the position in the function), yet exact, immutable, comparable and picklable."""
from __future__ import annotations

import copy
import os
import pickle

import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.operation import SourceLocation


def _long_function(n: int, path: str):
    lines = ["import eager as ek", "def f(y):"] + ["    y = ek.tanh(y) * 0.5 + y"] * n + ["    return y"]
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    ns: dict = {}
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns["f"]


def test_every_op_of_a_long_function_has_its_exact_line(tmp_path):
    path = str(tmp_path / "long_fn.py")
    f = _long_function(300, path)
    g = gr.Graph()
    with g.as_default():
        f(gr.placeholder(ek.float32, (2,), name="x"))
    ops = [op for op in g.get_operations() if op.type in ("Tanh", "Mul", "AddV2")]
    assert len(ops) == 900
    for k, op in enumerate(ops):
        loc = op.location
        assert loc.filename == path and loc.function == "f" and loc.lineno == 3 + k // 3, op
    assert str(ops[-1].location) == "long_fn.py:302"


def test_locations_compare_hash_copy_and_pickle_by_value():
    g = gr.Graph()
    with g.as_default():
        y = gr.placeholder(ek.float32, [2], name="x") * 2.0; line = __import__("inspect").currentframe().f_lineno  # noqa: E702,E501
    loc = y.op.location
    same = SourceLocation(loc.filename, line, loc.function)
    assert loc == same and hash(loc) == hash(same) and {loc: 1}[same] == 1
    assert loc != SourceLocation(loc.filename, line + 1, loc.function)
    assert copy.deepcopy(loc) == loc and pickle.loads(pickle.dumps(loc)) == loc
    assert os.path.basename(loc.filename) == "test_source_locations.py"
    assert repr(loc) == f"SourceLocation(filename={loc.filename!r}, lineno={line}, function={loc.function!r})"
    with pytest.raises(AttributeError, match="immutable"):
        loc.lineno = 3


def test_traced_ops_keep_every_user_frame_and_share_the_callers(tmp_path, monkeypatch):
    """Inside a trace the walk stops at the tracer's frame and appends the user frames above it, captured
    once (`frames_stop_at`): the same frames as a full walk, the callers' locations shared by all ops."""
    import contextlib
    import numpy as np
    import tracing.concrete
    from graph_runtime import operation
    from tracing import function
    path = str(tmp_path / "traced_fn.py")
    f = _long_function(20, path)

    def caller_3(x):
        return function(f).get_concrete_function(x)

    def caller_2(x):
        return caller_3(x)

    x = ek.constant(np.ones(2, np.float32))
    results = []
    for stop_at in (operation.frames_stop_at, lambda frame: contextlib.nullcontext()):   # the plain walk
        monkeypatch.setattr(tracing.concrete, "frames_stop_at", stop_at)
        results.append([op for op in caller_2(x).graph.get_operations() if op.type == "Tanh"])
    ops, full = results
    assert len(ops) == len(full) == 20
    for a, b in zip(ops, full):
        assert a.traceback == b.traceback and len(a.traceback) >= 3
        assert [loc.function for loc in a.traceback[:3]] == ["f", "caller_3", "caller_2"]
    assert all(op.traceback[1] is ops[0].traceback[1] for op in ops)
