"""Copy-on-write passes (so a pipeline costs little on a graph it hardly changes): a pass that changes nothing returns its input graph itself; a pass
that changes something leaves its input untouched and builds the same graph a non-probing run builds; the
fixed-point loop does not re-run a pass on a graph it already left unchanged."""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from graph_runtime.passes import DEFAULT_PIPELINE, optimize, run_pass

from pass_helpers import assert_same, run_graph

ALL_PASSES = DEFAULT_PIPELINE   # debug_stripper included (off by default, but runs when named)


def _nothing_to_do():
    """A graph no pass can improve: one placeholder, one tanh, both preserved."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        y = ek.tanh(x, name="y")
    return g, [x.name, y.name]


def _snapshot(g):
    """Everything a pass could mutate in place: op objects, names, inputs, control edges, attrs, shapes."""
    return (g._version, len(g._ops), dict(g._by_name), dict(g._name_counts), list(g.inputs), list(g.outputs),
            [(op, op._name, op._id, op._inputs, op._control_inputs, op._attrs, dict(op._attrs), op._outputs,
              tuple(o._shape.dims for o in op._outputs)) for op in g._ops])


@pytest.mark.parametrize("name", ALL_PASSES)
def test_a_pass_that_changes_nothing_returns_the_identical_graph(name):
    g, keep = _nothing_to_do()
    before = _snapshot(g)
    out, report = optimize(g, keep, passes=[name], verify=True)
    assert out is g
    assert report.changes() == 0
    assert _snapshot(g) == before


def test_the_default_pipeline_returns_the_identical_graph_when_nothing_changes():
    g, keep = _nothing_to_do()
    out, report = optimize(g, keep, verify=True)
    assert out is g and report.iterations == 1
    # each iterative pass ran exactly once: the first round already saw the final graph
    assert all(len(report.stats_for(p)) == 1 for p in ("constant_folding", "arithmetic", "dependency"))


def _busy_graph(n_lines: int = 30):
    """Every default pass but memory finds work late in the graph (after many unchanged ops)."""
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4, 4), name="x")
        y = x
        for i in range(n_lines):
            y = ek.tanh(y) * 0.5 + y if i % 2 == 0 else y * 1.0001 - 0.1
        w = ek.constant(np.full((4, 4), 2.0, np.float32))
        folded = ek.constant(np.float32(3.0)) * ek.constant(np.float32(2.0))      # constant folding
        z = ek.matmul(y, w) * 0.5 + folded                                        # scale folding
        z = z * 1.0 + ek.identity(ek.tanh(y)) + ek.tanh(y)                      # arithmetic, dependency, CSE
        dead = ek.exp(x, name="dead")                                             # pruning
        del dead
    return g, [x.name, z.name]


@pytest.mark.parametrize("name", ["pruning", "constant_folding", "arithmetic", "common_subexpression",
                                  "scale_folding", "dependency", "fusion"])
def test_a_pass_that_changes_ops_leaves_its_input_untouched_and_matches_a_plain_run(name):
    g, keep = _busy_graph()
    before = _snapshot(g)
    out, report = optimize(g, keep, passes=[name], verify=True)
    assert report.changes(name) > 0, f"{name} found nothing to do: the test graph does not exercise it"
    assert out is not g
    assert _snapshot(g) == before
    plain, stats = run_pass(name, g, keep)        # run_pass does not probe: it always builds a new graph
    assert stats.changes == report.changes(name)
    assert out.as_graph_def() == plain.as_graph_def()
    xv = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    assert_same(run_graph(g, [keep[1]], {"x:0": xv})[0], run_graph(out, [keep[1]], {"x:0": xv})[0], exact=False)


def test_the_fixed_point_loop_skips_passes_on_graphs_they_left_unchanged():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        y = x
        for _ in range(5):
            y = y * 1.5 + 0.25              # duplicate Consts: only CSE changes anything
    out, report = optimize(g, [x.name, y.name], passes=["constant_folding", "arithmetic", "common_subexpression",
                                                         "scale_folding", "dependency"], verify=True)
    assert report.changes("common_subexpression") > 0 and report.changes() == report.changes("common_subexpression")
    assert report.iterations == 2
    # CSE merged constants only (`keeps_fixed_points`): the passes before it, which changed nothing, are not
    # re-run on its output, nor is CSE itself (`idempotent`): round 2 runs nothing
    assert report.stats_for("common_subexpression")[0].keeps_fixed_points
    assert [len(report.stats_for(p)) for p in ("constant_folding", "arithmetic", "common_subexpression",
                                               "scale_folding", "dependency")] == [1, 1, 1, 1, 1]
    xv = np.arange(4, dtype=np.float32)
    assert_same(run_graph(g, [y.name], {"x:0": xv})[0], run_graph(out, [y.name], {"x:0": xv})[0])


def test_a_cse_round_that_merges_more_than_constants_reruns_the_other_passes():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (4,), name="x")
        a, b = ek.tanh(x), ek.tanh(x)          # CSE merges these: arithmetic may then see `a - a`
        y = (a - b) + x * 1.5
    out, report = optimize(g, [x.name, y.name], passes=["constant_folding", "arithmetic", "common_subexpression"],
                           verify=True)
    first = report.stats_for("common_subexpression")[0]
    assert first.changes and not first.keeps_fixed_points
    assert len(report.stats_for("arithmetic")) == 2
    xv = np.arange(4, dtype=np.float32)
    assert_same(run_graph(g, [y.name], {"x:0": xv})[0], run_graph(out, [y.name], {"x:0": xv})[0])


def test_intermediate_graphs_are_freed_without_a_cyclic_collection():
    """The graphs passes build and later passes replace are released by the manager (their cycles broken):
    reference counting frees them at once, the caller's graph and the result are untouched."""
    import gc
    import weakref
    g, keep = _busy_graph()
    before = _snapshot(g)
    built = []
    real_release = gr.Graph._release

    def spy(self):
        built.append(weakref.ref(self))
        real_release(self)
    gc.disable()
    try:
        gr.Graph._release = spy
        out, report = optimize(g, keep, verify=True)
    finally:
        gr.Graph._release = real_release
        gc.enable()
    assert sum(1 for p in report.passes if p.changes) >= 2 and built    # several passes changed the graph
    assert all(r() is None for r in built)                            # freed by refcounting, GC off
    assert _snapshot(g) == before and out._ops
    xv = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    assert_same(run_graph(g, [keep[1]], {"x:0": xv})[0], run_graph(out, [keep[1]], {"x:0": xv})[0], exact=False)
