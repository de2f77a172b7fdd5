"""Session is a front end over runtimes registered by target scheme (graph_runtime/runtime.py).

A third runtime is one class: here one that interprets every run step by step (no generated code), for
the scheme "interp://".  Everything the Session offers goes through the runtime interface: run,
make_callable, RunOptions/RunMetadata with FULL_TRACE, and UnimplementedError for what it lacks.
"""
import numpy as np
import pytest

import eager as ek
import graph_runtime as gr
from eager.errors import InvalidArgumentError, UnimplementedError
from graph_runtime import runtime as rt
from graph_runtime.executors import TracingExecutor
from graph_runtime.pipeline import prepare
from graph_runtime.run_config import RunMetadata


class InterpretingRuntime(rt.Runtime):
    """Compiles like the local runtime but runs every step through the tracing interpreter."""

    targets = "'interp://' (a test runtime)"

    def __init__(self, target, graph, config):
        super().__init__(target, graph, config)
        self.prepared = 0

    def prepare(self, request):
        self.prepared += 1
        plan = prepare(request.graph, request.feeds, (), request.targets, self.config, returns=request.returns,
                       container=request.container)
        return rt.Executable(self, request, plan, direct=False, report=plan.optimization_report)

    def executor(self, executable, options, run_metadata):
        interpreter = TracingExecutor(run_metadata if run_metadata is not None else RunMetadata())
        return lambda values: interpreter.run(executable.plan, list(values))


@pytest.fixture
def interp(monkeypatch):
    monkeypatch.setitem(rt._RUNTIMES, "interp://", InterpretingRuntime)


def _graph():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None,), name="x")
        y = ek.reshape(ek.exp(x) * 2.0, [2, -1])
    return g, x, y


def test_a_registered_runtime_serves_its_scheme_through_the_whole_session_api(interp):
    g, x, y = _graph()
    xv = np.arange(4, dtype=np.float32)
    with gr.Session(graph=g) as local:
        want = local.run({"y": [y]}, {x: xv})
    with gr.Session("interp://", graph=g) as sess:
        assert type(sess._runtime) is InterpretingRuntime
        got = sess.run({"y": [y]}, {x: xv})
        np.testing.assert_allclose(got["y"][0], want["y"][0])
        sess.run({"y": [y]}, {x: xv})
        assert sess.prepared == 1                       # one prepare per (fetches, feeds), then the cache
        f = sess.make_callable(y, [x])
        np.testing.assert_allclose(f(xv), want["y"][0])
        md = gr.RunMetadata()
        sess.run(y, {x: xv}, options=gr.RunOptions(trace_level=gr.RunOptions.FULL_TRACE), run_metadata=md)
        assert "Reshape" in {s.type for s in md.step_stats}
        with pytest.raises(UnimplementedError, match="partial runs are not supported by InterpretingRuntime"):
            sess.partial_run_setup([y], [x])
        with pytest.raises(UnimplementedError, match="cannot report partition graphs"):
            sess.run(y, {x: xv}, options=gr.RunOptions(output_partition_graphs=True), run_metadata=gr.RunMetadata())
        with pytest.raises(InvalidArgumentError, match="Reshape"):
            sess.run(y, {x: np.arange(3, dtype=np.float32)})
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(y, {x: xv})


def test_an_unknown_target_names_the_registered_ones(interp):
    with pytest.raises(ValueError, match=r"'' \(this process\).*'interp://' \(a test runtime\).*got 'nope://x'"):
        gr.Session("nope://x")


def test_there_is_one_session_class():
    assert gr.Session.__subclasses__() == []
    assert not hasattr(gr.distributed, "DistributedSession")
