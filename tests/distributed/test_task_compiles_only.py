"""A task compiles the partition it receives and runs only the passes named for tasks (`TASK_PASSES`): the
master optimized the whole graph before splitting it.

No Ray here: the master's stages and a task's `register` run in this process (a task is a plain class
that Ray wraps as an actor), and every optimizer pass that runs is counted.
"""
import graph_runtime as gr
from graph_runtime.distributed.payloads import VariableRegistry, build_task_plan
from graph_runtime.distributed.worker import CONFIG_FIELDS, TaskServer
from graph_runtime.passes.core import GraphPass
from graph_runtime.pipeline import TASK_PASSES, partition_request
from graph_runtime.runtime import make_request

from helpers import PS_WORKERS, mlp_graph


def _count_passes(monkeypatch) -> list:
    ran = []
    call = GraphPass.__call__

    def counting(self, graph, ctx):
        ran.append(self.name)
        return call(self, graph, ctx)

    monkeypatch.setattr(GraphPass, "__call__", counting)
    return ran


def test_a_task_runs_only_the_task_passes_on_a_shipped_partition(monkeypatch):
    g, n = mlp_graph()
    config = gr.SessionConfig(cluster=PS_WORKERS, device_count={"CPU": 1})
    request = make_request(g, [n["loss"], n["train"]], [n["x"], n["t"]])
    ran = _count_passes(monkeypatch)
    req = partition_request(g, request.feeds, request.returns, request.targets, config)
    assert "constant_folding" in ran and "fusion" in ran          # the master optimizes, once
    assert not set(ran) & set(TASK_PASSES)                        # ... all but the tasks' own passes
    plan = build_task_plan(req, request.feeds, request.returns, request.container, config.cluster,
                           VariableRegistry(), iter(range(1, 100)), {k: getattr(config, k) for k in CONFIG_FIELDS})
    assert {p.task for p in plan.parts} == {t.name for t in config.cluster.tasks()}
    for p in plan.parts:
        del ran[:]
        task = TaskServer(p.task)
        task.register(p.reg, p.payload)
        assert ran == list(TASK_PASSES), f"task {p.task} ran {ran} on its partition"
        [(plan, *_)] = task._plans[p.reg]             # one device per task: one plan
        assert any(s.op.type in ("_Send", "_Recv") for s in plan.schedule.steps)


def test_a_task_runs_no_pass_when_the_session_does_not_optimize(monkeypatch):
    g, n = mlp_graph()
    config = gr.SessionConfig(cluster=PS_WORKERS, device_count={"CPU": 1}, optimize=False)
    request = make_request(g, [n["loss"], n["train"]], [n["x"], n["t"]])
    ran = _count_passes(monkeypatch)
    req = partition_request(g, request.feeds, request.returns, request.targets, config)
    plan = build_task_plan(req, request.feeds, request.returns, request.container, config.cluster,
                           VariableRegistry(), iter(range(1, 100)), {k: getattr(config, k) for k in CONFIG_FIELDS})
    for p in plan.parts:
        TaskServer(p.task).register(p.reg, p.payload)
    assert ran == []
