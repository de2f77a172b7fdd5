"""Graph builders shared by the distributed tests."""
import contextlib

import numpy as np

import eager as ek
import graph_runtime as gr

PS_WORKERS = gr.ClusterSpec({"ps": 1, "worker": 2})


def cluster_config(**kw):
    return gr.SessionConfig(cluster=PS_WORKERS, **kw)


def local_config(**kw):
    """A one-process session for the same graphs: device requests for cluster jobs are dropped."""
    return gr.SessionConfig(allow_soft_placement=True, **kw)


def mlp_graph(seed=0, workers=True):
    """A 2-layer regression MLP: variables on the ps, layers on two workers (unplaced with `workers=False`),
    one SGD step op."""
    on = gr.device if workers else (lambda _: contextlib.nullcontext())
    rng = np.random.default_rng(seed)
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (None, 5), name="x")
        t = gr.placeholder(ek.float32, (None, 3), name="t")
        with gr.device("/job:ps/task:0"):
            w1 = ek.Variable(rng.normal(size=(5, 8)).astype(np.float32), name="w1")
            w2 = ek.Variable(rng.normal(size=(8, 3)).astype(np.float32), name="w2")
        with on("/job:worker/task:0"):
            h = ek.tanh(ek.matmul(x, w1))
        with on("/job:worker/task:1"):
            y = ek.matmul(h, w2)
            loss = ek.reduce_mean(ek.square(y - t))
        g1, g2 = gr.gradients(loss, [w1, w2])
        train = gr.group(w1.assign_sub(0.1 * g1), w2.assign_sub(0.1 * g2))
        init = gr.global_variables_initializer()
    return g, dict(x=x, t=t, w1=w1, w2=w2, y=y, loss=loss, train=train, init=init)


def counter_graph(spin_until=None):
    """v = 10 on the ps; `q` = (v += 1) // d on worker 1, which fails when d == 0; `bump` adds 1 to v.

    With `spin_until`, q's step first spins on the ps until v reaches that value (another step's `bump`
    brings it there); the loop body's no-op write keeps the cond's read inside the loop, read afresh.
    """
    g = gr.Graph()
    with g.as_default():
        d = gr.placeholder(ek.int32, (), name="d")
        with gr.device("/job:ps/task:0"):
            v = ek.Variable(np.array(10, np.int32), name="v")
            bump = v.assign_add(ek.constant(1, ek.int32))
            waited = []
            if spin_until is not None:
                waited = ek.while_loop(lambda i: v.read_value() < spin_until,
                                       lambda i: (v.assign_add(ek.constant(0, ek.int32)), i + 1)[1],
                                       [ek.constant(0)])
            with gr.control_dependencies(waited):
                after = v.assign_add(ek.constant(1, ek.int32))
        with gr.device("/job:worker/task:1"):
            q = after // d
        init = gr.global_variables_initializer()
    return g, dict(d=d, v=v, bump=bump, q=q, init=init)


def one_task(g, fetch, feeds, config):
    """A `TaskServer` (the class a Ray actor wraps, here in process) with the run of `fetch` from `feeds`
    registered, for a cluster of one task; -> (task, its part of the run's plan)."""
    from graph_runtime.distributed.payloads import VariableRegistry, build_task_plan
    from graph_runtime.distributed.worker import CONFIG_FIELDS, TaskServer
    from graph_runtime.pipeline import partition_request
    from graph_runtime.runtime import make_request
    request = make_request(g, fetch, feeds)
    req = partition_request(g, request.feeds, request.returns, request.targets, config)
    plan = build_task_plan(req, request.feeds, request.returns, request.container, config.cluster,
                           VariableRegistry(), iter(range(1, 9)), {k: getattr(config, k) for k in CONFIG_FIELDS})
    [part] = plan.parts
    task = TaskServer(part.task)
    task.register(part.reg, part.payload)
    return task, part
