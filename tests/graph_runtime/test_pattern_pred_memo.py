"""Rule predicates on constants run once per distinct small value in a pass, not once per Const op
(a trace makes one Const per Python scalar, so 1,000 lines of `y * 2.0` are 1,000 equal
constants), and equal-looking values that differ (-0.0 / 0.0, dtypes) are still judged apart."""
import numpy as np

import eager as ek
import graph_runtime as gr
from graph_runtime.passes import optimize, pattern, run_pass

from pass_helpers import assert_same, run_graph


def _same_results(g, out, fetches, feeds):
    for a, b, name in zip(run_graph(g, fetches, feeds), run_graph(out, fetches, feeds), fetches):
        assert_same(a, b, what=name)


def _chain(n, scalar):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        y = x
        for _ in range(n):
            y = y * scalar + y
    return g, x, y


def _count_preds(monkeypatch):
    calls = []
    real = pattern._safe_pred
    monkeypatch.setattr(pattern, "_safe_pred", lambda pred, v: calls.append(v.tobytes()) or real(pred, v))
    return calls


def test_equal_constants_are_judged_once_per_pass(monkeypatch):
    g, x, y = _chain(40, 2.0)
    calls = _count_preds(monkeypatch)
    out, _ = run_pass("arithmetic", g, [y.name])
    assert 0 < len(calls) <= 10, len(calls)      # (40+ before) a few predicates on one value
    assert len(set(calls)) == 1
    _same_results(g, out, [y.name], {x.name: np.array([1.0, -2.0, 0.5], np.float32)})


def test_values_that_differ_only_in_sign_or_dtype_are_judged_apart():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        a = (x + ek.constant(-0.0)) * ek.constant(1.0)      # x + -0.0 -> x is exact; * 1.0 -> x
        b = (x + ek.constant(0.0)) * ek.constant(2.0)       # x + 0.0 is kept with signed zeros
        i = gr.placeholder(ek.int32, (3,), name="i")
        c = i * ek.constant(1, ek.int32) + i * ek.constant(2, ek.int32)
    out, _ = optimize(g, [a.name, b.name, c.name], passes=["arithmetic"])
    feeds = {x.name: np.array([-0.0, 1.5, -3.0], np.float32), i.name: np.array([1, -2, 3], np.int32)}
    _same_results(g, out, [a.name, b.name, c.name], feeds)
    types = [op.type for op in out.get_operations()]
    assert types.count("Mul") == 2, types       # b's * 2.0 and c's * 2 stay; a's * 1.0 and c's * 1 go
