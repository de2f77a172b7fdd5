"""A pass that raises is reported by name, with the passes that ran before it and the op it was working on."""
from __future__ import annotations

import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.passes import GraphPass, PassError, Rewriter, optimize
from graph_runtime.passes.core import make_stats


def _fails_on_tanh(graph, ctx):
    rw = Rewriter(graph, ctx)
    for op in graph._ops:
        rw.inputs(op)
        if op.type == "Tanh":
            raise ValueError("this pass cannot handle Tanh")
        rw.copy(op)
    out = rw.finish()
    return out, make_stats("fails_on_tanh", graph, out, rw)


FAILS = GraphPass("fails_on_tanh", _fails_on_tanh, "test pass that raises on Tanh", iterative=False)


def test_a_failing_pass_is_named_with_its_predecessors_and_the_op():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        y = ek.tanh(x * 2.0, name="y")
    with pytest.raises(PassError, match=r"graph pass 'fails_on_tanh' failed after passes pruning, "
                                        r"constant_folding at op 'y' \(Tanh\): ValueError: this pass cannot "
                                        r"handle Tanh") as info:
        optimize(g, [y], passes=["pruning", "constant_folding", FAILS])
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.pass_name == "fails_on_tanh" and info.value.op.name == "y"
    assert info.value.previous == ("pruning", "constant_folding")


def test_the_first_pass_failing_says_so():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        y = ek.tanh(x, name="y")
    with pytest.raises(PassError, match=r"'fails_on_tanh' failed \(the first pass\) at op 'y'"):
        optimize(g, [y], passes=[FAILS])
